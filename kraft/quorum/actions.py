"""The one table mapping spec actions of ``spec/KRaft.tla`` to ``QuorumNode`` methods.

Used by the simulator's recorder (to name trace steps) and by the trace conformance checker.
``args`` are the spec's parameter names after the acting node ``n``; the trace's ``args`` object
uses these names (a message argument is the spec's message record under ``"m"``).
"""

from __future__ import annotations

import attrs


@attrs.frozen
class Action:
    spec: str           # TLA+ action name
    method: str | None  # QuorumNode method (None: a network action)
    args: tuple[str, ...]


ACTIONS: tuple[Action, ...] = (
    Action("Timeout", "timeout", ()),
    Action("BecomeCandidate", "become_candidate", ()),
    Action("HandleVoteRequest", "handle_vote_request", ("m",)),
    Action("HandleVoteResponse", "handle_vote_response", ("m",)),
    Action("BecomeLeader", "become_leader", ()),
    Action("SendBeginQuorumEpoch", "send_begin_quorum_epoch", ("d",)),
    Action("HandleBeginQuorumEpochRequest", "handle_begin_quorum_epoch_request", ("m",)),
    Action("SendFetchRequest", "send_fetch_request", ()),
    Action("HandleFetchRequest", "handle_fetch_request", ("m",)),
    Action("HandleFetchResponse", "handle_fetch_response", ("m",)),
    Action("ClientAppend", "client_append", ("v",)),
    Action("Flush", "flush", ()),
    Action("CheckQuorumResign", "check_quorum_resign", ()),
    Action("Resign", "resign", ()),
    Action("HandleEndQuorumEpochRequest", "handle_end_quorum_epoch_request", ("m",)),
    Action("Restart", "restart", ()),
    # restart(disk_lost=True): the simulator names the step itself (same method, other action)
    Action("RestartWithDiskLoss", "restart", ()),
    Action("DropMessage", None, ("m",)),
)

BY_SPEC: dict[str, Action] = {a.spec: a for a in ACTIONS}
BY_METHOD: dict[str, Action] = {}
for _a in ACTIONS:
    if _a.method is not None:
        BY_METHOD.setdefault(_a.method, _a)  # restart -> Restart (the first entry wins)


def spec_name(method: str) -> str:
    """TLA+ action name of a ``QuorumNode`` method (``handle_fetch_request`` -> ``HandleFetchRequest``)."""
    return BY_METHOD[method].spec
