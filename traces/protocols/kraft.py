"""Conformance glue for the KRaft quorum: traces of ``kraft simulate --protocol kraft`` checked
against ``spec/KRaft.tla`` (vocabulary: docs/contracts.md section 2; action table:
the declaration ``kraft/quorum/protocol.py``, from which the templates below are built).

Translation choices (each is a fact about the spec, not a change to it):

* Voters are the implementation's integer ids; ``Nil`` is a model value; JSON ``null`` is ``Nil``.
* Client values are integers in the implementation and opaque in the spec (``Values`` holds model
  values, and log entries mix them with the string ``"LeaderChange"``, which TLC cannot compare
  with an integer), so value ``7`` becomes the model value ``TrMV_v7`` (declared by the generated
  module); ``"LeaderChange"`` stays a string.
* The message handlers of the spec do not test ``m \\in messages`` (``Next`` quantifies over the
  network), so the trace spec adds that conjunct: a delivered message must be in flight.
* The bounds that keep TLC's state space finite (``MaxEpoch``, ``MaxLogLen``, ``MaxRestarts``,
  ``MaxInFlight``, ``MaxFaults``) are set far above anything a trace reaches, and
  ``Duplication`` is on (the simulator's network may deliver a copy and keep another).  The bug
  switches are FALSE: traces are always checked against the correct protocol.
* Snapshots: ``snapshots[n]`` is a set of ``[end, epoch, values]`` records (values as the log's
  client values); ``MaxSnapshots`` is a ``Max*`` bound, set far above any trace.
* Dynamic voters (KIP-853): a log entry is ``[epoch, value, voters]`` (``voters`` the set a
  ``"Voters"`` entry sets, ``{}`` otherwise), a snapshot ``[end, epoch, values, voters]``; fetch
  answers carry ``mleader`` (``Nil`` for null) and snapshot answers ``mvoters``.  ``Voters`` is the
  bootstrap voter set of the header, ``Observers`` its ``Observers`` (default none),
  ``KRaftVersion`` is 1, ``UpdateVoters`` TRUE and ``MaxVoterChanges`` a ``Max*`` bound.
* The ghost ``committed`` is not logged; for a cut (``traces.segment``) the glue derives it from
  the logged states as ``CommitGhost`` grows it: a leader's high watermark rises only in the
  steps that call ``CommitGhost`` (Flush, HandleFetchRequest), and is reset to 0 whenever a node
  becomes leader, so after every step the prefix is extended with the records of any leader whose
  high watermark passed it.  TLC checks the derived value at the step before each cut.
  ``elected`` and ``coverage`` are write-only ghosts and the other unlogged variables bound
  counters: a cut starts them at their ``Init`` values, which is why ``MaxFaults`` is a bound
  (set far above any trace) rather than ``Unbounded``.
* ``RestartWithDiskLoss`` is the spec action of that name (a disk loss under the simulator's
  precondition, ``KRaftPlugin.can_lose_disk``); ``MaxDiskLosses`` is a ``Max*`` bound and so is
  set far above any trace.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

from kraft.core.declaration import Action
from kraft.quorum.node import QuorumNode as N
from kraft.quorum.protocol import PROTOCOL
from traces.protocols import Glue, GlueError, SpecStep, UnknownAction
from traces.schema import Event
from traces.tla import BOOL, INT, STR, Fun, Named, Nullable, RenderError, Rec, Seq, Set, T, tla_string

SPEC_DIR = Path(__file__).resolve().parents[2] / "spec"
BIG = 1_000_000


class _ClientValue(T):
    def render(self, v: Any, where: str) -> str:
        if v in ("LeaderChange", "Voters"):
            return tla_string(v)
        if isinstance(v, bool) or not isinstance(v, (int, str)):
            raise RenderError(f"{where}: a log value must be an integer client value, \"LeaderChange\" or \"Voters\"")
        text = str(v)
        if not text.replace("-", "m").replace("_", "").isalnum():
            raise RenderError(f"{where}: client value {v!r} cannot be a TLA+ model value name")
        return "TrMV_v" + text.replace("-", "m")


VALUE = _ClientValue()
NODE = INT
NODE_OR_NIL = Nullable(INT, "Nil")
ENTRY = Rec({"epoch": INT, "value": VALUE, "voters": Set(NODE)})

_MSG_FIELDS: dict[str, T] = {
    "mtype": STR, "msource": NODE, "mdest": NODE, "mepoch": INT,
    "mlastEpoch": INT, "mlastOffset": INT, "mpreVote": BOOL, "mgranted": BOOL,
    "mfetchOffset": INT, "mlastFetchedEpoch": INT, "mresult": STR, "mentries": Seq(ENTRY),
    "mhighWatermark": INT, "mdivergingEpoch": INT, "mdivergingEndOffset": INT,
    "msnapshotEnd": INT, "msnapshotEpoch": INT, "mvalues": Seq(VALUE),
    "mleader": NODE_OR_NIL, "mvoters": Set(NODE),
}


class _Message(T):
    """A message record: the fields its ``mtype`` has (contract 2), each with its type."""

    def render(self, v: Any, where: str) -> str:
        if not isinstance(v, dict) or not isinstance(v.get("mtype"), str):
            raise RenderError(f"{where}: a message must be an object with an 'mtype'")
        parts = []
        for k in sorted(v):
            t = _MSG_FIELDS.get(k)
            if t is None:
                raise RenderError(f"{where}: unknown message field {k!r}")
            parts.append(f"{k} |-> {t.render(v[k], f'{where}.{k}')}")
        return "[" + ", ".join(parts) + "]"


MESSAGE = Named(_Message())  # stated once per module: traces.tla.Named
# a snapshot stays in its node's set (and is copied to the others) for many steps: stated once too
SNAPSHOT = Named(Rec({"end": INT, "epoch": INT, "values": Seq(VALUE), "voters": Set(NODE)}))

VARIABLES: dict[str, T] = {
    "currentEpoch": Fun(NODE, INT),
    "votedFor": Fun(NODE, NODE_OR_NIL),
    "leader": Fun(NODE, NODE_OR_NIL),
    "role": Fun(NODE, STR),
    "log": Fun(NODE, Seq(ENTRY)),
    "flushedOffset": Fun(NODE, INT),
    "highWatermark": Fun(NODE, INT),
    "endOffsets": Fun(NODE, Fun(NODE, INT)),
    "epochStartOffset": Fun(NODE, INT),
    "votesGranted": Fun(NODE, Set(NODE)),
    "messages": Set(MESSAGE),
    "awaitingLeader": Fun(NODE, BOOL),
    "logStartOffset": Fun(NODE, INT),
    "snapshots": Fun(NODE, Set(SNAPSHOT)),
}

# the TLA+ type of each action argument, by the spec's parameter name (kraft.quorum.protocol)
ARG_TYPES: dict[str, T] = {"m": MESSAGE, "d": NODE, "v": VALUE, "k": INT, "o": INT, "x": NODE}


def _template(action: Action) -> str:
    """``Name(p[1], ..., p[k])`` over the node (unless a network action) and the declared args; a
    delivered message must be in flight (the spec's handlers do not test it: Next quantifies)."""
    k = len(action.args) + (0 if action.actor == "network" else 1)
    call = f"{action.spec}({', '.join(f'p[{i}]' for i in range(1, k + 1))})"
    if "m" in action.args and action.actor != "network":
        return f"p[{k}] \\in messages /\\ {call}"
    return call


TEMPLATES: dict[str, str] = {a.spec: _template(a) for a in PROTOCOL.actions}

# diagnostics only: named conditions evaluated at a rejected step, keyed by handler
_IN_NET = {"message in network": "p[2] \\in messages", "message addressed to node": "p[2].mdest = p[1]"}
_GUARDS_BY_HANDLER: dict[Any, dict[str, str]] = {PROTOCOL.handler(a): dict(_IN_NET) for a in PROTOCOL.actions
                                                 if a.consumes is not None}
_GUARDS_BY_HANDLER.update({
    N.become_candidate: {"role is Prospective": 'role[p[1]] = "Prospective"',
                         "majority of pre-votes": "IsQuorumOf(votesGranted[p[1]], VoterSet(p[1]))"},
    N.become_leader: {"role is Candidate": 'role[p[1]] = "Candidate"',
                      "majority of votes": "IsQuorumOf(votesGranted[p[1]], VoterSet(p[1]))"},
    N.client_append: {"role is Leader": 'role[p[1]] = "Leader"'},
    N.resign: {"role is Leader": 'role[p[1]] = "Leader"'},
    N.check_quorum_resign: {"role is Leader": 'role[p[1]] = "Leader"'},
    N.send_begin_quorum_epoch: {"role is Leader": 'role[p[1]] = "Leader"',
                                "free send (destination does not follow the leader and is not in a later epoch)":
                                    "BQEFree(p[1], p[2])",
                                "a fault is allowed": "FaultAllowed"},
    N.send_fetch_request: {"role is Follower": 'role[p[1]] = "Follower"',
                           "no fetch outstanding (else a counted re-send)": "~FetchOutstanding(p[1])",
                           "a fault is allowed": "FaultAllowed"},
    N.flush: {"unflushed records exist": "flushedOffset[p[1]] < logStartOffset[p[1]] + Len(log[p[1]])"},
    N.take_snapshot: {"past the log start": "logStartOffset[p[1]] < p[2]",
                      "within the high watermark": "p[2] <= highWatermark[p[1]]",
                      "past every snapshot": "\\A s \\in snapshots[p[1]] : s.end < p[2]"},
    N.delete_before_snapshot: {"past the log start": "logStartOffset[p[1]] < p[2]",
                               "within the high watermark": "p[2] <= highWatermark[p[1]]",
                               "a snapshot ends there": "\\E s \\in snapshots[p[1]] : s.end = p[2]"},
    N.restart_with_disk_loss: {"disk loss allowed (not leader, committed prefix on a majority of the others, ...)":
                                   "DiskLossAllowed(p[1])"},
    N.timeout: {"role has an election timer": 'role[p[1]] \\in {"Unattached", "Follower", "Resigned", '
                                              '"Candidate", "Prospective"}',
                "not awaiting a leader after a disk loss": "~awaitingLeader[p[1]]",
                "a voter, or Resigned": 'IsVoter(p[1]) \\/ role[p[1]] = "Resigned"'},
    N.send_any_voter_fetch: {"not a voter": "~IsVoter(p[1])", "fetches from another voter": "p[2] \\in Others(p[1])"},
    N.add_voter: {"voter change allowed (leader, HW in its epoch, last change committed)": "VoterChangeAllowed(p[1])",
                  "not a voter yet": "p[2] \\notin VoterSet(p[1])",
                  "caught up to the leader's end": "endOffsets[p[1]][p[2]] >= EndOffset(p[1])"},
    N.remove_voter: {"voter change allowed (leader, HW in its epoch, last change committed)": "VoterChangeAllowed(p[1])",
                     "a voter": "p[2] \\in VoterSet(p[1])"},
    N.update_voter: {"voter change allowed (leader, HW in its epoch, last change committed)": "VoterChangeAllowed(p[1])",
                     "another voter": "p[2] \\in Others(p[1])"},
    N.resign_after_removal: {"role is Leader": 'role[p[1]] = "Leader"', "not a voter": "~IsVoter(p[1])",
                             "voter changes committed": "VotersCommitted(p[1])"},
})
GUARDS: dict[str, dict[str, str]] = {PROTOCOL.spec_name(h): g for h, g in _GUARDS_BY_HANDLER.items()}
GUARDS[next(a.spec for a in PROTOCOL.actions if a.actor == "network")] = {"message in network": "p[1] \\in messages"}


def translate(ev: Event) -> list[SpecStep]:
    if not PROTOCOL.has_action(ev.action):
        raise UnknownAction(ev.action)
    action = PROTOCOL.action(ev.action)
    params = [] if action.actor == "network" else [NODE.render(ev.node, f"line {ev.line} node")]
    for name in action.args:
        if name not in ev.args:
            raise GlueError(f"line {ev.line}: action {ev.action} needs args.{name}")
        params.append(ARG_TYPES[name].render(ev.args[name], f"line {ev.line} args.{name}"))
    return [SpecStep(action.spec, tuple(params))]


def committed(events: Sequence[Event], ops: Sequence[Sequence[str]], ends: Sequence[int]) -> list[Any]:
    """The spec's ``committed`` after the first ``k`` logged steps, for each ``k`` of ``ends``
    (increasing): ``CommitGhost`` applied after every step to a leader whose high watermark
    passed the prefix (its record at offset ``o`` is ``log[n][o - logStartOffset[n]]``)."""
    prefix: list[Any] = []
    state: dict[str, Any] = {}
    out: list[Any] = []
    todo = iter(ends)
    end = next(todo, None)
    for i, ev in enumerate(events):
        if end is None:
            break
        state.update(ev.state)
        for n, r in state.get("role", {}).items():
            hw = state["highWatermark"][n]
            if r == "Leader" and hw > len(prefix):
                start = state["logStartOffset"][n]
                if start > len(prefix):
                    raise GlueError(f"line {ev.line}: leader {n}'s log starts past the committed prefix")
                prefix += state["log"][n][len(prefix) - start:hw - start]
        while end is not None and end == i + 1:
            out.append(list(prefix))
            end = next(todo, None)
    return out


def constants(header: dict[str, Any]) -> dict[str, str]:
    c = header.get("constants") or {}
    voters = c.get("Voters", [1, 2, 3])
    if not isinstance(voters, list) or not voters or not all(isinstance(v, int) and not isinstance(v, bool) for v in voters):
        raise GlueError(f"constants.Voters must be a non-empty list of integer ids, got {voters!r}")
    observers = c.get("Observers", [])
    if not isinstance(observers, list) or not all(isinstance(v, int) and not isinstance(v, bool) for v in observers):
        raise GlueError(f"constants.Observers must be a list of integer ids, got {observers!r}")
    pre = c.get("PreVote", True)
    if not isinstance(pre, bool):
        raise GlueError(f"constants.PreVote must be true/false, got {pre!r}")
    out = {
        "Voters": "{" + ", ".join(str(v) for v in sorted(voters)) + "}",
        "Observers": "{" + ", ".join(str(v) for v in sorted(observers)) + "}",
        "MaxVoterChanges": str(BIG),
        "UpdateVoters": "TRUE",
        "KRaftVersion": "1",
        "Values": "{}",
        "Nil": "Nil",
        "MaxEpoch": str(BIG),
        "MaxLogLen": str(BIG),
        "MaxRestarts": str(BIG),
        "MaxDiskLosses": str(BIG),
        "MaxSnapshots": str(BIG),
        "MaxInFlight": str(BIG),
        "MaxFaults": str(BIG),
        "CalmTimeouts": "FALSE",
        "PreVote": "TRUE" if pre else "FALSE",
        "Duplication": "TRUE",
    }
    out.update({v: "FALSE" for v in PROTOCOL.variant_names})
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
    variants=PROTOCOL.variant_names,
    ghosts={"committed": (Seq(ENTRY), committed)},
)
