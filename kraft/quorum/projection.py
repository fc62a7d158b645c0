"""Projections: the value of each ``spec/KRaft.tla`` variable computed from implementation state.

One function per spec variable (same name), each taking a voter (``Voter``: the part of a
``kraft.quorum.node.QuorumNode`` the spec sees); ``project_cluster`` puts
them together in the spec's shape: functions as dicts keyed by node id, logs as lists of
``{"epoch", "value", "voters"}`` dicts, ``Nil`` as ``None``, sets as sorted lists, ``messages`` as a list of
message records.
"""

from __future__ import annotations

from operator import attrgetter
from typing import Any, Iterable, Mapping, Protocol

from kraft.quorum.config import Role
from kraft.quorum.messages import in_spec, to_spec

_AS_TUPLE = attrgetter("as_tuple")


class Voter(Protocol):
    """What the projections read of a replica (a ``QuorumNode``)."""

    id: int
    replicas: tuple[int, ...]
    bootstrap_voters: tuple[int, ...]
    role: Role
    current_epoch: int
    voted_for: int | None
    leader_id: int | None
    high_watermark: int
    end_offsets: dict[int, int]
    epoch_start_offset: int
    votes_granted: set[int]
    awaiting_leader: bool
    storage: Any

def currentEpoch(node: Voter) -> int:
    return node.current_epoch


def votedFor(node: Voter) -> int | None:
    return node.voted_for


def leader(node: Voter) -> int | None:
    return node.leader_id


def role(node: Voter) -> str:
    return node.role.value


def log(node: Voter) -> list[dict[str, Any]]:
    """The entries from the log start offset on (``log[n][1]`` is the entry at ``logStartOffset[n]``)."""
    return [e.to_spec() for e in node.storage.entries]


def logStartOffset(node: Voter) -> int:
    return node.storage.log_start_offset


def snapshots(node: Voter) -> list[dict[str, Any]]:
    """The set of the node's snapshots, as records sorted by end offset."""
    return [node.storage.snapshots[end].to_spec() for end in sorted(node.storage.snapshots)]


def flushedOffset(node: Voter) -> int:
    return node.storage.flushed_offset


def highWatermark(node: Voter) -> int:
    return node.high_watermark


def endOffsets(node: Voter) -> dict[int, int]:
    """Leader: the last fetch offset each other replica reported (the leader's own entry stays 0:
    its flushed offset is counted directly, as in the spec); ``[v |-> 0]`` otherwise."""
    if node.role is Role.LEADER:
        return {v: (0 if v == node.id else node.end_offsets[v]) for v in node.replicas}
    return {v: 0 for v in node.replicas}


def epochStartOffset(node: Voter) -> int:
    return node.epoch_start_offset if node.role is Role.LEADER else 0


def votesGranted(node: Voter) -> list[int]:
    return sorted(node.votes_granted)


def awaitingLeader(node: Voter) -> bool:
    """Came back from a disk loss and has not yet followed a leader (persisted)."""
    return node.awaiting_leader


def messages(in_flight: Iterable[Any]) -> list[dict[str, Any]]:
    """The network variable: every message sent and not yet delivered or dropped."""
    return [to_spec(m) for m in in_flight if in_spec(m)]


PER_NODE = {
    "currentEpoch": currentEpoch, "votedFor": votedFor, "leader": leader, "role": role, "log": log,
    "flushedOffset": flushedOffset, "highWatermark": highWatermark, "endOffsets": endOffsets,
    "epochStartOffset": epochStartOffset, "votesGranted": votesGranted,
    "awaitingLeader": awaitingLeader, "logStartOffset": logStartOffset, "snapshots": snapshots,
}


def project_cluster(nodes: Mapping[int, Voter], network: Any = None, *, tuple_logs: bool = False
                    ) -> dict[str, Any]:
    """All spec variables; ``network`` is anything with ``in_flight()`` (omitted: no ``messages``).

    ``tuple_logs=True`` gives logs as (epoch, value, voters) tuples and adds the bootstrap voter set
    as ``_voters``: the invariants accept both forms, and the
    simulator's per-event checks use it because it is cheaper."""
    state: dict[str, Any] = {name: {i: fn(nodes[i]) for i in sorted(nodes)} for name, fn in PER_NODE.items()
                             if not (tuple_logs and name == "log")}
    if tuple_logs:
        state["log"] = {i: list(map(_AS_TUPLE, nodes[i].storage.entries)) for i in sorted(nodes)}
        # the spec's constant Voters, for the invariants (not a spec variable)
        state["_voters"] = next((nodes[i].bootstrap_voters for i in sorted(nodes)), ())
    if network is not None:
        state["messages"] = messages(network.in_flight())
    return state
