"""Conformance glue for the consumer group protocol (KIP-848): traces of ``kraft simulate
--protocol consumer-protocol`` checked against ``spec/ConsumerGroupProtocol.tla`` (actions,
variables, variants: the declaration ``kraft/groups/consumer_protocol/protocol.py``, from which
the templates, the translation and the guards are built; recorder:
``kraft/groups/consumer_protocol/sim.py``).

Translation choices (docs/conformance.md, "The consumer protocol"):

* The recorder speaks the spec's vocabulary (``projection.SpecVocabulary``): consumers are the
  strings ``"c1"``...; a member id is its consumer and the incarnation of the process that chose
  it (``c1#2``: ``"c1"`` with ``inc`` 2 in a message, ``memberIncarnation``/``incarnation`` in the
  state), and a timeout's member id is its consumer (the consumer's member);
  ``StaticClients`` comes from the header (the static-restart nemesis makes c1 static); a
  partition is the JSON pair ``[t, p]`` and becomes the tuple ``<<t, p>>`` of
  ``(1..NumTopics) \\X (0..PartitionsPerTopic - 1)``; ``partitionEpoch`` is logged as
  ``[t, p, epoch]`` triples; member records, reconciliations and messages are the spec's records
  with exactly the spec's fields; JSON ``null`` is ``Nil``.
* A message handler is the spec's ``<Name>Msg`` operator (``Next`` quantifies over the network:
  ``HandleHeartbeat == \\E m \\in msgs : HandleHeartbeatMsg(m)``), called with the consumer first
  for a consumer's handler. None of them tests ``m \\in msgs``, ``DropMessageMsg`` included
  (removing a message that is not there would leave ``msgs`` unchanged), so the trace spec adds
  that conjunct to every one.
* ``SendNoOpHeartbeats`` is TRUE (the implementation heartbeats on its interval whether or not
  the round trip can change anything), ``AnyAssignment`` is TRUE (the implementation runs Kafka's
  server-side assignors; the spec accepts any valid target), ``FaultKinds`` holds all six kinds,
  ``MaxFaults`` and ``MaxGroupEpoch`` are far above anything a trace reaches, and the bug switches
  are FALSE: traces are always checked against the correct protocol.
* A topic is its number (``csub``, a member's ``sub``, a heartbeat's ``sub``); ``MaxSubscriptionChanges``
  is far above anything a trace reaches and ``subChanges`` is not logged (TLC computes it).
* ``faults`` (the spec's fault budget) is not logged: it counts what the spec calls a fault, which
  the implementation does not track; TLC computes it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kraft.core.declaration import Action
from kraft.groups.consumer_protocol.consumer import Consumer as C
from kraft.groups.consumer_protocol.coordinator import GroupCoordinator as G
from kraft.groups.consumer_protocol.protocol import CONSUMER, PROTOCOL
from traces.protocols import Glue, GlueError, SpecStep, Tagged, composed, declared_step
from traces.schema import Event
from traces.tla import BOOL, INT, STR, Fun, Named, Nullable, Rec, RenderError, Set, T

SPEC_DIR = Path(__file__).resolve().parents[2] / "spec"
VARIANTS = PROTOCOL.variant_names
# every bug switch of the spec is FALSE in a trace's model: the declared variants and the one switch
# the declaration keeps as a constant (docs/consumer-protocol.md, "What the checks see")
BUG_SWITCHES = (*VARIANTS, "AcceptAnyOlderEpoch")
BIG = 1_000_000
FAULT_KINDS = ("loss", "zombie", "session", "leave", "expire", "restart")

CLIENT = STR


class _Partition(T):
    """``[t, p]`` -> ``<<t, p>>``."""

    def render(self, v: Any, where: str) -> str:
        if not isinstance(v, list) or len(v) != 2:
            raise RenderError(f"{where}: a partition must be a [topic, partition] pair of integers, got {v!r}")
        return f"<<{INT.render(v[0], f'{where}[0]')}, {INT.render(v[1], f'{where}[1]')}>>"


class _PartitionEpochs(T):
    """``[[t, p, epoch], ...]`` -> the function ``<<t, p>> :> epoch @@ ...``."""

    def render(self, v: Any, where: str) -> str:
        if not isinstance(v, list) or not all(isinstance(x, list) and len(x) == 3 for x in v):
            raise RenderError(f"{where}: expected a list of [topic, partition, epoch] triples, got {v!r}")
        return Fun(PART, INT).render([[x[:2], x[2]] for x in v], where)


PART = _Partition()
PARTS = Set(PART)
PARTS_OR_NIL = Nullable(PARTS, "Nil")
TOPICS = Set(INT)
MEMBER = Nullable(Rec({"epoch": INT, "prev": INT, "state": STR, "assigned": PARTS, "pending": PARTS,
                       "tepoch": INT, "sub": TOPICS}), "Nil")
RECON = Nullable(Rec({"target": PARTS, "step": STR, "stale": BOOL}), "Nil")

# the fields of each message type (spec/ConsumerGroupProtocol.tla: HbResponse, SendHeartbeat,
# SendLeaveHeartbeat, ReconcileCommit, Leave)
MESSAGE = Named(Tagged("type", {
    "Heartbeat": {"src": CLIENT, "inc": INT, "conn": INT, "epoch": INT, "owned": PARTS_OR_NIL,
                  "sub": Nullable(TOPICS, "Nil")},
    "HeartbeatResponse": {"dst": CLIENT, "conn": INT, "err": STR, "epoch": INT, "assignment": PARTS_OR_NIL},
    "OffsetCommit": {"src": CLIENT, "inc": INT, "epoch": INT, "parts": PARTS},
}))  # stated once per module: traces.tla.Named


def _per_client(t: T) -> Fun:
    return Fun(CLIENT, t)


VARIABLES: dict[str, T] = {
    "groupEpoch": INT,
    "assignmentEpoch": INT,
    "targetAssignment": _per_client(PARTS),
    "member": _per_client(MEMBER),
    "partitionEpoch": _PartitionEpochs(),
    "memberIncarnation": _per_client(INT),
    "cstate": _per_client(STR),
    "cepoch": _per_client(INT),
    "owned": _per_client(PARTS),
    "ctarget": _per_client(PARTS_OR_NIL),
    "recon": _per_client(RECON),
    "sendOwned": _per_client(BOOL),
    "inflight": _per_client(BOOL),
    "conn": _per_client(INT),
    "incarnation": _per_client(INT),
    "csub": _per_client(TOPICS),
    "subSent": _per_client(STR),
    "msgs": Set(MESSAGE),
    "badCommits": Set(Rec({"partition": PART, "committer": CLIENT, "epoch": INT})),
}

# the TLA+ type of each action argument, by the spec's parameter name
ARG_TYPES: dict[str, T] = {"m": MESSAGE, "x": CLIENT}


def _template(a: Action) -> str:
    """The spec's operator over ``p[1..k]`` (the consumer first for a consumer's action); a
    message must be in flight (module docstring)."""
    params = [f"p[{i}]" for i in range(1, len(a.args) + (a.actor == CONSUMER) + 1)]
    if "m" not in a.args:
        return f"{a.spec}({', '.join(params)})"
    return f"{params[-1]} \\in msgs /\\ {a.spec}Msg({', '.join(params)})"


TEMPLATES: dict[str, str] = {a.spec: _template(a) for a in PROTOCOL.actions}

# diagnostics only: named conditions evaluated at a rejected step, keyed by handler
_GUARDS_BY_HANDLER: dict[Any, dict[str, str]] = {
    C.join: {"consumer UNSUBSCRIBED": 'cstate[p[1]] = "UNSUBSCRIBED"'},
    C.send_heartbeat: {"consumer in the group": "cstate[p[1]] \\in InGroup",
                       "no heartbeat outstanding": "~inflight[p[1]]"},
    C.handle_heartbeat_response: {"message in network": "p[2] \\in msgs",
                                  "addressed to this consumer's open connection":
                                      "p[2].dst = p[1] /\\ p[2].conn = conn[p[1]]",
                                  "heartbeat outstanding": "inflight[p[1]]"},
    C.rejoin_after_fence: {"consumer FENCED": 'cstate[p[1]] = "FENCED"'},
    C.reconcile_commit: {"consumer RECONCILING": 'cstate[p[1]] = "RECONCILING"',
                         "no reconciliation running": "recon[p[1]] = Nil",
                         "an assignment received": "ctarget[p[1]] # Nil"},
    C.reconcile_revoke: {"a reconciliation at its revoke step":
                             'recon[p[1]] # Nil /\\ recon[p[1]].step = "revoke"'},
    C.reconcile_assign: {"a reconciliation at its assign step":
                             'recon[p[1]] # Nil /\\ recon[p[1]].step = "assign"'},
    C.request_timeout: {"heartbeat outstanding": "inflight[p[1]]",
                        "neither its heartbeat nor a response on this connection in flight":
                            '~\\E m \\in msgs : (m.type = "Heartbeat" /\\ m.src = p[1] /\\ m.conn = conn[p[1]])'
                            ' \\/ (m.type = "HeartbeatResponse" /\\ m.dst = p[1] /\\ m.conn = conn[p[1]])'},
    C.request_timeout_early: {"heartbeat outstanding": "inflight[p[1]]",
                              "its heartbeat still in flight":
                                  '\\E m \\in msgs : m.type = "Heartbeat" /\\ m.src = p[1] /\\ m.conn = conn[p[1]]'},
    C.client_session_timeout: {"consumer in the group or FENCED": 'cstate[p[1]] \\in InGroup \\cup {"FENCED"}'},
    C.leave: {"consumer in the group": "cstate[p[1]] \\in InGroup"},
    C.leave_revoke: {"consumer PREPARE_LEAVING": 'cstate[p[1]] = "PREPARE_LEAVING"'},
    C.send_leave_heartbeat: {"consumer LEAVING": 'cstate[p[1]] = "LEAVING"'},
    C.change_subscription: {"consumer in the group": "cstate[p[1]] \\in InGroup"},
    C.new_process: {"consumer static": "p[1] \\in StaticClients",
                    "consumer UNSUBSCRIBED or FATAL": 'cstate[p[1]] \\in {"UNSUBSCRIBED", "FATAL"}'},
    G.handle_heartbeat: {"message in network": "p[1] \\in msgs",
                         "no heartbeat of an older connection of its consumer in flight": "FirstOf(p[1])"},
    G.handle_offset_commit: {"message in network": "p[1] \\in msgs"},
    G.session_timeout: {"member": "member[p[1]] # Nil", "lease expired": "LeaseExpired(p[1])"},
    G.rebalance_timeout: {"member revoking": 'member[p[1]] # Nil /\\ member[p[1]].state = "UNREVOKED_PARTITIONS"',
                          "lease expired": "LeaseExpired(p[1])"},
}
GUARDS: dict[str, dict[str, str]] = {PROTOCOL.spec_name(h): g for h, g in _GUARDS_BY_HANDLER.items()}
GUARDS[PROTOCOL.drop_message] = {"message in network": "p[1] \\in msgs"}

_ONE = declared_step(PROTOCOL, CONSUMER, CLIENT, ARG_TYPES)


def translate(ev: Event) -> list[SpecStep]:
    return composed(ev, _ONE)


def _count(c: dict[str, Any], name: str) -> int:
    v = c.get(name)
    if isinstance(v, bool) or not isinstance(v, int) or v < 1:
        raise GlueError(f"constants.{name} must be a positive integer, got {v!r}")
    return v


def constants(header: dict[str, Any]) -> dict[str, str]:
    c = header.get("constants") or {}
    clients = c.get("Clients")
    if not isinstance(clients, list) or not clients or not all(isinstance(x, str) for x in clients):
        raise GlueError(f"constants.Clients must be a non-empty list of strings, got {clients!r}")
    static = c.get("StaticClients", [])
    if not isinstance(static, list) or not all(isinstance(x, str) and x in clients for x in static):
        raise GlueError(f"constants.StaticClients must be a list of some of the Clients, got {static!r}")
    return {"Clients": "{" + ", ".join(sorted(CLIENT.render(x, "constants.Clients") for x in clients)) + "}",
            "StaticClients": "{" + ", ".join(sorted(CLIENT.render(x, "constants.StaticClients") for x in static)) + "}",
            "NumTopics": str(_count(c, "NumTopics")), "PartitionsPerTopic": str(_count(c, "PartitionsPerTopic")),
            "Nil": "Nil", "MaxGroupEpoch": str(BIG), "MaxFaults": str(BIG), "MaxSubscriptionChanges": str(BIG),
            "FaultKinds": "{" + ", ".join(f'"{k}"' for k in FAULT_KINDS) + "}",
            "AnyAssignment": "TRUE", "SendNoOpHeartbeats": "TRUE", **{v: "FALSE" for v in BUG_SWITCHES}}


GLUE = Glue(protocol=PROTOCOL.name, module=PROTOCOL.spec_module, spec_dir=SPEC_DIR, variables=VARIABLES,
            templates=TEMPLATES, translate=translate, constants=constants, guards=GUARDS, variants=VARIANTS)
