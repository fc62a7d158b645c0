"""Conformance glue for partition replication: traces of ``kraft simulate --protocol replication``
checked against ``spec/PartitionReplication.tla`` (vocabulary: docs/contracts.md section 9; the
action table, the variables and the variants: the declaration ``kraft/replication/protocol.py``,
from which the templates, the translation and the guards are built; projections:
``kraft/replication/projection.py``).

Translation choices (docs/contracts.md, "Replication conformance"):

* Brokers are the implementation's integer ids; the controller's steps (node 0) take the broker
  they act on (``b``) or the message as their spec parameters, a broker's steps the broker first.
* Client values: the spec's n-th ``Produce`` appends the value n (``nextValue``); the simulator
  gives every send a fresh value and a rejected send (no spec step) never reuses its value, so the
  appended values have gaps.  Values are opaque to the protocol, so the glue renames them: the
  value appended by the trace's n-th ``Produce`` step is n, wherever it appears (logs, fetched
  entries, ``pendingProduce``, ``acked``, ``exposed``, ``CompleteProduce``'s ``v``).  A value no
  ``Produce`` step appended is a bad step.  The logged ghost ``nextValue`` is not checked: the
  spec's is the number of ``Produce`` steps plus one by construction, and the simulator moves its
  own after the step is recorded.
* The message handlers of the spec do not test ``m \\in messages`` (``Next`` quantifies over the
  network), so the trace spec adds that conjunct; a handler's node must be the message's
  destination (``Next`` takes ``m.mdest``), which the handlers test themselves.
* ``NoOpFetches`` is TRUE: Kafka's followers fetch whether or not the round trip changes
  anything (model checking leaves such fetches out to save states).
* ``ReplayEqualEpoch`` is FALSE, as in model checking: the implementation, like the spec, does not
  re-apply a replayed partition registration it already learnt from an AlterPartition answer (a
  deliberate difference from Kafka's makeLeader: docs/replication-spec.md, "Equal partition epoch
  on replay", and kraft/replication/broker.py, ``Broker._replay``).
* Metadata replay: a broker of the simulator replays the committed metadata it has fetched from
  the metadata quorum, which may be a prefix of the committed log (seed 7 of ``--faults all
  --steps 500``: line 126, broker 1 replays to offset 6 of 8).  The spec's ``ReplayMetadata``
  replays to the end of any committed batch beyond what the broker applied (a (re)started broker
  at least to its own registration), always, not behind a CONSTANT: it is what Kafka's brokers
  do, and it left the model-checked state spaces unchanged when it came (docs/replication-spec.md,
  "Metadata replay to a committed prefix").  The ghost ``metadataBatchEnds`` (where each batch ends) is spec only: the trace does
  not log it and TLC computes it; the logged ``replayedOffset`` decides where the step stopped.
* ``NetworkFaults`` is TRUE: the simulator's network loses messages (``DropMessage``) and may
  deliver a copy and keep another (the spec's delivery may keep a copy).
* The bounds (``MaxProduce``, ``MaxLeaderEpoch``, ``MaxRestarts``, ...) are set far above anything
  a trace reaches (``traces.protocols.complete_constants`` gives every ``Max*`` bound a big value),
  ``ClientAcks`` is every acks setting, and the bug switches are FALSE: traces are always checked
  against the correct protocol.
* Not logged (spec only): the bound counters ``restarts``, ``controlledShutdowns``, ... (the
  implementation has no such counters) and the ghost ``metadataBatchEnds``; the trace spec leaves
  them to TLC.
* Cuts (``traces.segment``): the counters start a segment at 0; the glue derives the two ghosts
  at a cut from the logged steps before it, and TLC checks both at the step before the cut:
  ``nextValue`` is one more than the number of ``Produce`` steps (the only action that moves it,
  by one), and ``metadataBatchEnds`` holds ``N + 1`` (the bootstrap records of ``N`` brokers)
  and where each batch appended since ends (a controller action appends its records as one
  batch, ``AppendMetadata``; a composed step's batches are told apart by their shapes).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

from kraft.core.declaration import Action
from kraft.replication.broker import Broker as B
from kraft.controller.controller import Controller as C
from kraft.controller.protocol import (
    CONTROLLED_SHUTDOWN,
    CONTROLLED_SHUTDOWN_RECORD,
    FENCE_BROKER,
    FENCED,
    PARTITION_CHANGE,
    REGISTER_BROKER,
    UNFENCE_BROKER,
    UNFENCED,
)
from kraft.replication.protocol import PROTOCOL, REGISTER_STOPPED
from traces.protocols import Glue, GlueError, SpecStep, UnknownAction
from traces.schema import Event
from traces.tla import BOOL, INT, STR, Fun, Named, Rec, RenderError, Seq, Set, T

SPEC_DIR = Path(__file__).resolve().parents[2] / "spec"
VARIANTS = PROTOCOL.variant_names
CONTROLLER, BROKER, NETWORK = "controller", "broker", "network"
PRODUCE = PROTOCOL.spec_name(B.produce)
COMPLETE_PRODUCE = PROTOCOL.spec_name(B.complete_produce)
NOT_CHECKED = ("nextValue",)  # logged, not checked (see the module doc)


class _Values:
    """The renaming of client values of the trace being read (reset by ``constants``, which
    ``traces.check.prepare`` calls first for every trace; translation then runs in line order)."""

    def __init__(self) -> None:
        self.rank: dict[int, int] = {}

    def reset(self) -> None:
        self.rank = {}

    def add(self, v: Any, where: str) -> None:
        if isinstance(v, bool) or not isinstance(v, int):
            raise GlueError(f"{where}: a client value must be an integer, got {v!r}")
        if v in self.rank:
            raise GlueError(f"{where}: value {v} appended twice (by two {PRODUCE} steps)")
        self.rank[v] = len(self.rank) + 1

    def get(self, v: Any, where: str) -> int:
        if isinstance(v, bool) or not isinstance(v, int):
            raise RenderError(f"{where}: a client value must be an integer, got {v!r}")
        r = self.rank.get(v)
        if r is None:
            raise RenderError(f"{where}: value {v} was never appended by a {PRODUCE} step")
        return r


VALUES = _Values()


class _Value(T):
    def render(self, v: Any, where: str) -> str:
        return str(VALUES.get(v, where))


VALUE = _Value()
BROKER_ID = INT
BROKERS = Set(BROKER_ID)
ENTRY = Rec({"epoch": INT, "value": VALUE})
ISR_MEMBER = Rec({"broker": BROKER_ID, "brokerEpoch": INT})

# the fields of each message type (spec/PartitionReplication.tla): a record with a field missing
# or extra would silently be another value, so the glue insists on exactly these
_MSG_TYPES: dict[str, dict[str, T]] = {
    "FetchRequest": {"msource": BROKER_ID, "mdest": BROKER_ID, "mcurrentLeaderEpoch": INT,
                     "mfetchOffset": INT, "mlastFetchedEpoch": INT, "mbrokerEpoch": INT},
    "FetchResponse": {"msource": BROKER_ID, "mdest": BROKER_ID, "merror": STR, "mcurrentLeaderEpoch": INT,
                      "mfetchOffset": INT, "mentries": Seq(ENTRY), "mhighWatermark": INT,
                      "mdivergingEpoch": INT, "mdivergingEndOffset": INT},
    "AlterPartitionRequest": {"msource": BROKER_ID, "mbrokerEpoch": INT, "mleaderEpoch": INT,
                              "mpartitionEpoch": INT, "mnewIsrWithEpochs": Set(ISR_MEMBER),
                              "mleaderRecoveryState": STR},
    "AlterPartitionResponse": {"mdest": BROKER_ID, "merror": STR, "mleader": BROKER_ID, "mleaderEpoch": INT,
                               "mpartitionEpoch": INT, "misr": BROKERS, "mleaderRecoveryState": STR,
                               "mrequestIsr": BROKERS, "mrequestPartitionEpoch": INT},
}


class _Message(T):
    def render(self, v: Any, where: str) -> str:
        if not isinstance(v, dict) or v.get("mtype") not in _MSG_TYPES:
            raise RenderError(f"{where}: a message must be an object whose 'mtype' is one of "
                              f"{', '.join(_MSG_TYPES)}")
        fields = _MSG_TYPES[v["mtype"]]
        want = set(fields) | {"mtype"}
        if set(v) != want:
            raise RenderError(f"{where}: a {v['mtype']} has fields {sorted(want)}, got {sorted(v)}")
        parts = [f"mtype |-> {STR.render(v['mtype'], where)}"]
        parts += [f"{k} |-> {fields[k].render(v[k], f'{where}.{k}')}" for k in sorted(fields)]
        return "[" + ", ".join(sorted(parts)) + "]"


MESSAGE = Named(_Message())  # stated once per module: traces.tla.Named

# the metadata records of spec/PartitionReplication.tla (contract 9): by type, exactly these fields
_RECORD_TYPES: dict[str, dict[str, T]] = {
    REGISTER_BROKER: {"broker": BROKER_ID, "fenced": BOOL},
    FENCE_BROKER: {"broker": BROKER_ID},
    UNFENCE_BROKER: {"broker": BROKER_ID},
    CONTROLLED_SHUTDOWN_RECORD: {"broker": BROKER_ID},
    PARTITION_CHANGE: {"leader": INT, "leaderEpoch": INT, "partitionEpoch": INT, "isr": BROKERS,
                        "elr": BROKERS, "lastKnownElr": BROKERS, "leaderRecoveryState": STR},
}


class _MetadataRecord(T):
    def render(self, v: Any, where: str) -> str:
        if not isinstance(v, dict) or v.get("type") not in _RECORD_TYPES:
            raise RenderError(f"{where}: a metadata record must be an object whose 'type' is one of "
                              f"{', '.join(_RECORD_TYPES)}")
        fields = _RECORD_TYPES[v["type"]]
        if set(v) != set(fields) | {"type"}:
            raise RenderError(f"{where}: a {v['type']} record has fields {sorted(set(fields) | {'type'})}, "
                              f"got {sorted(v)}")
        return Rec({"type": STR, **fields}).render(v, where)


def _per_broker(t: T) -> Fun:
    return Fun(BROKER_ID, t)


VARIABLES: dict[str, T] = {
    "metadataLog": Seq(_MetadataRecord()),
    "leader": INT,
    "leaderEpoch": INT,
    "partitionEpoch": INT,
    "isr": BROKERS,
    "elr": BROKERS,
    "lastKnownElr": BROKERS,
    "leaderRecoveryState": STR,
    "brokerEpoch": _per_broker(INT),
    "brokerState": _per_broker(STR),
    "running": _per_broker(BOOL),
    "cleanShutdown": _per_broker(BOOL),
    "replayedOffset": _per_broker(INT),
    "log": _per_broker(Seq(ENTRY)),
    "highWatermark": _per_broker(INT),
    "localLeader": _per_broker(INT),
    "localLeaderEpoch": _per_broker(INT),
    "localPartitionEpoch": _per_broker(INT),
    "localIsr": _per_broker(BROKERS),
    "alterPartitionInFlight": _per_broker(BOOL),
    "pendingIsr": _per_broker(BROKERS),
    "leaderEpochStartOffset": _per_broker(INT),
    "followerEndOffset": _per_broker(_per_broker(INT)),
    "followerBrokerEpoch": _per_broker(_per_broker(INT)),
    "messages": Set(MESSAGE),
    "pendingProduce": Set(Rec({"value": VALUE, "offset": INT, "leader": BROKER_ID, "leaderEpoch": INT})),
    "acked": Set(Rec({"offset": INT, "epoch": INT, "value": VALUE})),
    "exposed": Set(Rec({"offset": INT, "epoch": INT, "value": VALUE})),
    "uncleanBrokers": BROKERS,
}

# the TLA+ type of each action argument, by the spec's parameter name (kraft.replication.protocol)
ARG_TYPES: dict[str, T] = {"m": MESSAGE, "b": BROKER_ID, "f": BROKER_ID, "k": INT, "acks": INT, "v": VALUE}


def _params(action: Action) -> int:
    """How many parameters the spec operator takes: the broker (for a broker action), then the
    declared args."""
    return len(action.args) + (1 if action.actor == BROKER else 0)


def _template(action: Action) -> str:
    k = _params(action)
    call = f"{action.spec}({', '.join(f'p[{i}]' for i in range(1, k + 1))})"
    if "m" in action.args and action.actor != NETWORK:
        return f"p[{k}] \\in messages /\\ {call}"
    return call


TEMPLATES: dict[str, str] = {a.spec: _template(a) for a in PROTOCOL.actions}

# diagnostics only: named conditions evaluated at a rejected step, keyed by handler
_GUARDS_BY_HANDLER: dict[Any, dict[str, str]] = {}
for _a in PROTOCOL.actions:
    if _a.consumes is not None and _a.actor == BROKER:
        _GUARDS_BY_HANDLER[PROTOCOL.handler(_a)] = {"message in network": "p[2] \\in messages",
                                                    "addressed to this broker": "p[2].mdest = p[1]",
                                                    "broker running": "running[p[1]]"}
    elif _a.consumes is not None and _a.actor == CONTROLLER:
        _GUARDS_BY_HANDLER[PROTOCOL.handler(_a)] = {"message in network": "p[1] \\in messages"}
_GUARDS_BY_HANDLER.update({
    C.fence_broker: {"not fenced": "brokerState[p[1]] \\notin FencedStates"},
    # with NetworkFaults (always on here) these two also take a stopped broker: running is no guard
    C.unfence_broker: {"fenced": f'brokerState[p[1]] = "{FENCED}"',
                       "replayed its registration": "replayedOffset[p[1]] >= brokerEpoch[p[1]]"},
    C.controlled_shutdown: {"unfenced": f'brokerState[p[1]] = "{UNFENCED}"'},
    B.clean_shutdown: {"running": "running[p[1]]",
                       "fenced, or in controlled shutdown and not the leader":
                           f'brokerState[p[1]] \\in FencedStates \\/ (brokerState[p[1]] = "{CONTROLLED_SHUTDOWN}" /\\ leader # p[1])'},
    B.unclean_shutdown: {"running": "running[p[1]]", "k within the log": "p[2] \\in 0..Len(log[p[1]])"},
    B.restart_broker: {"stopped": "~running[p[1]]"},
    B.restart_broker_with_disk_loss: {"stopped": "~running[p[1]]"},
    B.replay_metadata: {"running": "running[p[1]]", "metadata to replay": "replayedOffset[p[1]] < Len(metadataLog)"},
    B.send_fetch_request: {"running": "running[p[1]]", "follows another broker": "localLeader[p[1]] \\in Brokers \\ {p[1]}",
                           },
    B.shrink_isr: {"leader": "IsLeader(p[1])", "no ISR change in flight": "~alterPartitionInFlight[p[1]]",
                   "follower in the ISR": "p[2] \\in localIsr[p[1]] \\ {p[1]}",
                   "follower behind the LEO": "followerEndOffset[p[1]][p[2]] < Len(log[p[1]])"},
    B.produce: {"leader": "IsLeader(p[1])",
                "acks=-1 needs ISR >= MinIsr": "p[2] = -1 => Cardinality(localIsr[p[1]]) >= MinIsr"},
    B.complete_produce: {"leader": "IsLeader(p[1])",
                         "a pending produce of this value, epoch and leader below the HW":
                             "\\E x \\in pendingProduce : x.value = p[2] /\\ x.leader = p[1] /\\ "
                             "x.leaderEpoch = localLeaderEpoch[p[1]] /\\ highWatermark[p[1]] > x.offset"},
})
GUARDS: dict[str, dict[str, str]] = {PROTOCOL.spec_name(h): g for h, g in _GUARDS_BY_HANDLER.items()}
for _a in PROTOCOL.actions:
    if _a.actor == NETWORK:
        GUARDS[_a.spec] = {"message in network": "p[1] \\in messages"}


def _where(ev: Event, part: int) -> str:
    return f"line {ev.line}" + (f" then[{part - 1}]" if part else "")


def _one(ev: Event, action: str, node: Any, args: dict[str, Any], where: str) -> SpecStep:
    if not PROTOCOL.has_action(action):
        raise UnknownAction(action)
    a = PROTOCOL.action(action)
    params: list[str] = []
    if a.actor == BROKER:
        if isinstance(node, bool) or not isinstance(node, int):
            raise GlueError(f"{where}: action {action} needs a broker id as node, got {node!r}")
        params.append(BROKER_ID.render(node, f"{where} node"))
        if action == PRODUCE:  # the value it appended: the last entry of the broker's log
            log = (ev.state.get("log") or {}).get(str(node))
            if not isinstance(log, list) or not log or not isinstance(log[-1], dict):
                raise GlueError(f"{where}: {action} needs the broker's log with the appended entry in state.log")
            VALUES.add(log[-1].get("value"), f"{where} state.log[{node}]")
    for name in a.args:
        if name not in args:
            raise GlueError(f"{where}: action {action} needs args.{name}")
        params.append(ARG_TYPES[name].render(args[name], f"{where} args.{name}"))
    return SpecStep(action, tuple(params))


def translate(ev: Event) -> list[SpecStep]:
    for name in NOT_CHECKED:
        ev.state.pop(name, None)
    steps = [_one(ev, ev.action, ev.node, ev.args, _where(ev, 0))]
    then = ev.args.get("then", [])
    if not isinstance(then, list):
        raise GlueError(f"line {ev.line}: args.then must be a list of {{action, node, ...}}")
    for k, part in enumerate(then, 1):
        if not isinstance(part, dict) or not isinstance(part.get("action"), str):
            raise GlueError(f"line {ev.line}: args.then[{k - 1}] must be an object with an 'action'")
        steps.append(_one(ev, part["action"], part.get("node"), part, _where(ev, k)))
    return steps


def next_value(events: Sequence[Event], ops: Sequence[Sequence[str]], ends: Sequence[int]) -> list[Any]:
    """The spec's ``nextValue`` after the first ``k`` logged steps, for each ``k`` of ``ends``."""
    return [1 + sum(o.count(PRODUCE) for o in ops[:k]) for k in ends]


# what each controller action appends (spec/PartitionReplication.tla): a fencing, its partition
# change then the FenceBroker record; these, their own record then at most one partition change;
# HandleAlterPartitionRequest, at most one partition change
_FENCING = (PROTOCOL.spec_name(C.fence_broker), PROTOCOL.spec_name(B.clean_shutdown))
_LEAD = {PROTOCOL.spec_name(C.unfence_broker): UNFENCE_BROKER,
         PROTOCOL.spec_name(C.controlled_shutdown): CONTROLLED_SHUTDOWN_RECORD,
         PROTOCOL.spec_name(B.restart_broker): REGISTER_BROKER,
         PROTOCOL.spec_name(B.restart_broker_with_disk_loss): REGISTER_BROKER,
         REGISTER_STOPPED: REGISTER_BROKER}
_ALTER = PROTOCOL.spec_name(C.handle_alter_partition_request)


def _batches(records: Sequence[Any], ops: Sequence[str]) -> list[int]:
    """Where the batches end in the records one composed step appended (offsets into
    ``records``), the step's actions taking theirs in order by the shapes above; a change that
    may be either of two actions' goes to the later one when it is a HandleAlterPartitionRequest.
    GlueError when the records do not fit."""
    kinds = [r.get("type") if isinstance(r, dict) else None for r in records]
    ends: list[int] = []
    j = 0
    for k, op in enumerate(ops):
        start = j
        if op in _FENCING:
            j += 1 if kinds[j:j + 1] == [PARTITION_CHANGE] else 0
            if kinds[j:j + 1] != [FENCE_BROKER]:
                raise GlueError(f"{op} appended no {FENCE_BROKER} record")
            j += 1
        elif op in _LEAD:
            if kinds[j:j + 1] != [_LEAD[op]]:
                raise GlueError(f"{op} appended no {_LEAD[op]} record")
            j += 1
            if kinds[j:j + 1] == [PARTITION_CHANGE] and _ALTER not in ops[k + 1:]:
                j += 1
        elif op == _ALTER and kinds[j:j + 1] == [PARTITION_CHANGE]:
            j += 1
        if j > start:
            ends.append(j)
    if j != len(records):
        raise GlueError("the records a composed step appended do not fit its actions")
    return ends


def batch_ends(events: Sequence[Event], ops: Sequence[Sequence[str]], ends: Sequence[int]) -> list[Any]:
    """The spec's ``metadataBatchEnds`` after the first ``k`` logged steps, for each ``k`` of
    ``ends``: where the bootstrap batch ends (after ``N`` registrations and the partition), then
    where each step's batches end (a step of one spec action appends one batch; a composed step's
    are told apart by ``_batches``).  Only a claim: TLC checks it at the step before each cut."""
    if not events or "running" not in events[0].state:
        raise GlueError("the first step does not log running: the brokers are unknown")
    seen = len(events[0].state["running"]) + 1
    found = {seen}
    out: list[Any] = []
    todo = list(ends)
    for i, ev in enumerate(events[:max(ends, default=0)]):
        log = ev.state.get("metadataLog", ())
        if len(log) > seen:
            tail = log[seen:]
            found |= {seen + e for e in (_batches(tail, ops[i]) if len(ops[i]) > 1 else [len(tail)])}
            seen = len(log)
        while todo and todo[0] == i + 1:
            out.append(sorted(found))
            todo.pop(0)
    return out


def constants(header: dict[str, Any]) -> dict[str, str]:
    VALUES.reset()  # a new trace (see _Values)
    c = header.get("constants") or {}
    brokers = c.get("Brokers", [1, 2, 3])
    if not isinstance(brokers, list) or not brokers or \
            sorted(brokers) != list(range(1, len(brokers) + 1)) or any(isinstance(b, bool) for b in brokers):
        raise GlueError(f"constants.Brokers must be the list 1..N, got {brokers!r}")
    min_isr = c.get("MinIsr", 2)
    if isinstance(min_isr, bool) or not isinstance(min_isr, int) or not 1 <= min_isr <= len(brokers):
        raise GlueError(f"constants.MinIsr must be an integer in 1..{len(brokers)}, got {min_isr!r}")
    out = {
        "Brokers": "{" + ", ".join(str(b) for b in sorted(brokers)) + "}",
        "MinIsr": str(min_isr),
        "ClientAcks": "<- AnyAcks",
        "NetworkFaults": "TRUE",
        "NoOpFetches": "TRUE",
        "ReplayEqualEpoch": "FALSE",
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
    ghosts={"nextValue": (INT, next_value), "metadataBatchEnds": (Set(INT), batch_ends)},
)
