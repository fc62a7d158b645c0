"""Conformance glue for the classic consumer-group protocol: traces of ``kraft simulate
--protocol groups`` checked against ``spec/ConsumerGroup.tla`` (vocabulary: docs/groups.md;
actions, variants: the declaration ``kraft/groups/protocol.py``, from which the templates, the
translation and the guards are built; recorder: ``kraft/groups/sim.py``).

Translation choices (docs/conformance.md, "Consumer groups"):

* The recorder already speaks the spec's vocabulary (``kraft.groups.projection.spec_state`` and
  ``spec_message``): consumers are the strings ``"c1"``...; member ids are the spec's naturals
  (the implementation's ``"c2-5"`` is member 5: both count with one counter, ``nextMemberId``);
  partitions are integers; JSON ``null`` is the model value ``Nil``; a message is the spec's
  record (fields with the leading ``m``; correlation ids and send times are not in the spec).
* One trace line is what the implementation did in one simulator event. Its first spec action is
  the line's ``action``/``node``/``args``; the rest, in order, are ``args.then`` and become
  further micro-steps of a composition (TLC chooses the intermediate states): a JoinGroup that
  completes the join phase is ``HandleJoinGroup`` then ``CompleteJoin``; the leader's SyncGroup
  also answers the parked followers' SyncGroups (``HandleSyncGroup`` of each); a response that
  sends the client back to ``Idle`` is followed by ``SendJoinGroup``; a rebalance that starts in
  CompletingRebalance answers the parked SyncGroups with REBALANCE_IN_PROGRESS.
* A response the client discards (stale correlation id, wrong phase) is logged as
  ``DropMessage``: for the spec it is a message that never arrived (the spec's handlers match a
  response by connection and phase, not by correlation id). A parked SyncGroup that nobody will
  answer (its member was removed or replaced) is a ``DropMessage`` too: Kafka drops the
  callback, the spec leaves the request in the network.
* The spec's message handlers do not test ``m \\in msgs`` (``Next`` quantifies over the
  network), so the trace spec adds that conjunct.
* ``Modes`` holds both protocols (the first logged state pins ``protocol``); ``AnyAssignment`` is
  TRUE (the implementation uses Kafka's assignors, the spec accepts any valid assignment and
  then applies the cooperative withholding rule); the bounds ``MaxGeneration``,
  ``MaxMemberId`` and ``MaxFaults`` are far above anything a trace reaches (the generated cfg has
  no ``CONSTRAINT`` anyway); the bug switches are FALSE: traces are always checked against the
  correct protocol.
* ``faults`` (the spec's fault budget) is not projected: it counts what the spec calls a fault
  (a drop, a crash, a slow consumer's expiry), which the implementation does not track.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kraft.core.declaration import Action
from kraft.groups.consumer import GroupConsumer as C
from kraft.groups.coordinator import GroupCoordinator as G
from kraft.groups.protocol import CONSUMER, NETWORK, PROTOCOL
from traces.protocols import Glue, GlueError, SpecStep, composed, declared_step
from traces.schema import Event
from traces.tla import BOOL, INT, STR, Fun, Named, Nullable, Rec, RenderError, Set, T

SPEC_DIR = Path(__file__).resolve().parents[2] / "spec"
VARIANTS = PROTOCOL.variant_names
BIG = 1_000_000

CONSUMER_T = STR
MEMBER = INT
MEMBER_OR_NIL = Nullable(INT, "Nil")
PART = INT
PARTS = Set(PART)
MEMBER_PARTS = Fun(MEMBER, PARTS)

_MSG_FIELDS: dict[str, T] = {
    "mtype": STR, "msource": CONSUMER_T, "mdest": CONSUMER_T, "mconn": INT,
    "mmember": MEMBER_OR_NIL, "minstance": Nullable(STR, "Nil"), "mowned": PARTS,
    "mgeneration": INT, "massignment": MEMBER_PARTS, "merror": STR, "mleader": MEMBER_OR_NIL,
    "mmembers": MEMBER_PARTS, "massigned": PARTS, "mparts": PARTS,
}
# the fields of each message type (spec/ConsumerGroup.tla): a record with a field missing or extra
# would silently be another value, so the glue insists on exactly these
_MSG_TYPES: dict[str, tuple[str, ...]] = {
    "JoinGroup": ("msource", "mconn", "mmember", "minstance", "mowned"),
    "JoinGroupResponse": ("mdest", "mconn", "merror", "mmember", "mgeneration", "mleader", "mmembers"),
    "SyncGroup": ("msource", "mconn", "mmember", "minstance", "mgeneration", "massignment"),
    "SyncGroupResponse": ("mdest", "mconn", "merror", "mmember", "mgeneration", "massigned"),
    "Heartbeat": ("msource", "mconn", "mmember", "minstance", "mgeneration"),
    "HeartbeatResponse": ("mdest", "mconn", "merror", "mmember", "mgeneration"),
    "LeaveGroup": ("msource", "mconn", "mmember", "minstance"),
    "OffsetCommit": ("msource", "mconn", "mmember", "minstance", "mgeneration", "mparts"),
}


class _Message(T):
    def render(self, v: Any, where: str) -> str:
        if not isinstance(v, dict) or v.get("mtype") not in _MSG_TYPES:
            raise RenderError(f"{where}: a message must be an object whose 'mtype' is one of "
                              f"{', '.join(_MSG_TYPES)}")
        want = set(_MSG_TYPES[v["mtype"]]) | {"mtype"}
        if set(v) != want:
            raise RenderError(f"{where}: a {v['mtype']} has fields {sorted(want)}, got {sorted(v)}")
        parts = [f"{k} |-> {_MSG_FIELDS[k].render(v[k], f'{where}.{k}')}" for k in sorted(v)]
        return "[" + ", ".join(parts) + "]"


MESSAGE = Named(_Message())  # stated once per module: traces.tla.Named

VARIABLES: dict[str, T] = {
    "groupState": STR,
    "generation": INT,
    "leader": MEMBER_OR_NIL,
    "members": Set(MEMBER),
    "staticMembers": Fun(CONSUMER_T, MEMBER_OR_NIL),
    "pending": Set(MEMBER),
    "awaitingJoin": Fun(MEMBER, Rec({"client": CONSUMER_T, "conn": INT})),
    "reportedOwned": MEMBER_PARTS,
    "assignment": MEMBER_PARTS,
    "nextMemberId": INT,
    "up": Fun(CONSUMER_T, BOOL),
    "phase": Fun(CONSUMER_T, STR),
    "memberId": Fun(CONSUMER_T, MEMBER_OR_NIL),
    "consumerGeneration": Fun(CONSUMER_T, INT),
    "owned": Fun(CONSUMER_T, PARTS),
    "conn": Fun(CONSUMER_T, INT),
    "protocol": STR,
    "msgs": Set(MESSAGE),
    "fencingBreaches": Set(Rec({"partition": PART, "committer": CONSUMER_T, "owner": CONSUMER_T})),
}

# the TLA+ type of each action argument, by the spec's parameter name (kraft.groups.protocol)
ARG_TYPES: dict[str, T] = {"m": MESSAGE, "x": MEMBER}


def _params(action: Action) -> int:
    """How many parameters the spec operator takes: the consumer (for a consumer action), then
    the declared args."""
    return len(action.args) + (1 if action.actor == CONSUMER else 0)


def _template(action: Action) -> str:
    r"""The spec's operator over ``p[1..k]``.  A message handler is the spec's ``<Name>Msg``
    operator (``Next`` quantifies over the network: ``<Name> == \E m \in msgs : <Name>Msg(m)``),
    and a delivered message must be in flight, which the handlers do not test; the network's
    ``DropMessageMsg`` tests it itself."""
    k = _params(action)
    name = action.spec + ("Msg" if "m" in action.args else "")
    call = f"{name}({', '.join(f'p[{i}]' for i in range(1, k + 1))})" if k else name
    if "m" in action.args and action.actor != NETWORK:
        return f"p[{k}] \\in msgs /\\ {call}"
    return call


TEMPLATES: dict[str, str] = {a.spec: _template(a) for a in PROTOCOL.actions}

# diagnostics only: named conditions evaluated at a rejected step, keyed by handler
_IN_NET_C = {"message in network": "p[2] \\in msgs", "addressed to this consumer's open connection":
             "p[2].mdest = p[1] /\\ p[2].mconn = conn[p[1]] /\\ up[p[1]]"}
_GUARDS_BY_HANDLER: dict[Any, dict[str, str]] = {
    PROTOCOL.handler(a): dict(_IN_NET_C) if a.actor == CONSUMER else {"message in network": "p[1] \\in msgs"}
    for a in PROTOCOL.actions if a.consumes is not None}
_GUARDS_BY_HANDLER[C.handle_join_group_response]["consumer is Joining"] = 'phase[p[1]] = "Joining"'
_GUARDS_BY_HANDLER[C.handle_sync_group_response]["consumer is Syncing"] = 'phase[p[1]] = "Syncing"'
_GUARDS_BY_HANDLER[G.handle_sync_group]["not a follower parked in CompletingRebalance"] = \
    '~(groupState = "CompletingRebalance" /\\ p[1].mmember # leader)'
_GUARDS_BY_HANDLER.update({
    C.send_join_group: {"consumer up": "up[p[1]]", "consumer Idle": 'phase[p[1]] = "Idle"'},
    C.send_heartbeat: {"consumer Stable": 'up[p[1]] /\\ phase[p[1]] = "Stable"',
                       "no heartbeat of it in flight":
                           '~\\E m \\in msgs : (m.mtype = "Heartbeat" /\\ m.msource = p[1]) '
                           '\\/ (m.mtype = "HeartbeatResponse" /\\ m.mdest = p[1])'},
    C.send_offset_commit: {"consumer Stable": 'up[p[1]] /\\ phase[p[1]] = "Stable"',
                           "owns partitions": "owned[p[1]] # {}",
                           "no commit of it in flight":
                               '~\\E m \\in msgs : m.mtype = "OffsetCommit" /\\ m.msource = p[1]'},
    C.request_timeout: {"consumer Joining or Syncing": 'up[p[1]] /\\ phase[p[1]] \\in {"Joining", "Syncing"}',
                        "nothing of its join/sync in flight":
                            '~\\E m \\in msgs : m.mtype \\in {"JoinGroup", "SyncGroup", "JoinGroupResponse", '
                            '"SyncGroupResponse"} /\\ ("msource" \\in DOMAIN m => m.msource = p[1]) '
                            '/\\ ("mdest" \\in DOMAIN m => m.mdest = p[1])',
                        "not parked at the coordinator":
                            "~\\E x \\in DOMAIN awaitingJoin : awaitingJoin[x] = [client |-> p[1], conn |-> conn[p[1]]]"},
    C.client_session_timeout: {"consumer up with a member id": "up[p[1]] /\\ memberId[p[1]] # Nil"},
    C.restart: {"consumer down": "~up[p[1]]"},
    C.crash: {"consumer up": "up[p[1]]"},
    G.complete_join: {"group PreparingRebalance": 'groupState = "PreparingRebalance"',
                      "every dropped member's lease expired":
                          "\\A x \\in members \\ DOMAIN awaitingJoin : LeaseExpired(x)"},
    G.expire_member: {"member": "p[1] \\in members", "lease expired": "LeaseExpired(p[1])"},
    G.expire_pending: {"pending": "p[1] \\in pending"},
})
GUARDS: dict[str, dict[str, str]] = {PROTOCOL.spec_name(h): g for h, g in _GUARDS_BY_HANDLER.items()}
GUARDS[PROTOCOL.drop_message] = {"message in network": "p[1] \\in msgs"}


_ONE = declared_step(PROTOCOL, CONSUMER, CONSUMER_T, ARG_TYPES)


def translate(ev: Event) -> list[SpecStep]:
    return composed(ev, _ONE)


def constants(header: dict[str, Any]) -> dict[str, str]:
    c = header.get("constants") or {}

    def strings(name: str, default: list[str]) -> list[str]:
        v = c.get(name, default)
        if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
            raise GlueError(f"constants.{name} must be a list of strings, got {v!r}")
        return v

    consumers = strings("Consumers", ["c1", "c2", "c3"])
    static = strings("Static", [])
    modes = strings("Modes", ["eager", "cooperative"])
    parts = c.get("Partitions", [0, 1])
    if not isinstance(parts, list) or not all(isinstance(p, int) and not isinstance(p, bool) for p in parts):
        raise GlueError(f"constants.Partitions must be a list of integers, got {parts!r}")
    if not set(static) <= set(consumers):
        raise GlueError(f"constants.Static {static!r} must be a subset of Consumers {consumers!r}")
    if not modes or not set(modes) <= {"eager", "cooperative"}:
        raise GlueError(f"constants.Modes must be a non-empty subset of eager, cooperative, got {modes!r}")

    def tset(xs: list[Any], t: T) -> str:
        return "{" + ", ".join(sorted(t.render(x, "constants") for x in xs)) + "}"

    out = {
        "Consumers": tset(consumers, STR),
        "Static": tset(static, STR),
        "Partitions": tset(parts, INT),
        "Modes": tset(modes, STR),
        "Nil": "Nil",
        "MaxGeneration": str(BIG),
        "MaxMemberId": str(BIG),
        "MaxFaults": str(BIG),
        "AnyAssignment": "TRUE",
    }
    out.update({v: "FALSE" for v in VARIANTS})
    return out


GLUE = Glue(
    protocol=PROTOCOL.name,
    module=PROTOCOL.spec_module,
    spec_dir=SPEC_DIR,
    variables=VARIABLES,
    templates=TEMPLATES,
    translate=translate,
    constants=constants,
    guards=GUARDS,
    variants=VARIANTS,
)
