"""KRaft RPC messages.

Field names are the spec's message-record fields without the leading ``m`` (contract section 2):
``mlastEpoch`` <-> ``lastEpoch``.  ``to_spec()`` gives the record exactly as ``spec/KRaft.tla`` writes it.
Entries travel as decoded ``Entry`` values; the receiving node writes them as real record batches.
"""

from __future__ import annotations

from typing import Any, Sequence, Union

import attrs

from kraft.quorum.voters import VoterNode, default_voter_node

LEADER_CHANGE = "LeaderChange"
VOTERS = "Voters"  # a VotersRecord (KIP-853): the entry's ``voters`` is the new voter set


def default_voter_nodes(voters: Sequence[int]) -> tuple[VoterNode, ...]:
    """The voter set ``voters`` with each voter as ``default_voter_node`` lists it, by id."""
    return tuple(default_voter_node(v) for v in sorted(voters))


@attrs.frozen
class Entry:
    """One log entry, one offset: ``[epoch |-> e, value |-> v, voters |-> vs]``.  ``value`` is an
    int client value, ``"LeaderChange"``, ``"Voters"`` (a VotersRecord, whose ``voters`` are the
    voter ids it sets; empty for every other entry) or, in the metadata quorum, the bytes of one
    metadata record.

    ``last_in_batch``: this record ends its record batch.  A client value and a LeaderChange are
    batches of one record; a controller operation of N records is one batch at N consecutive
    offsets (Kafka's ``RaftClient.scheduleAtomicAppend``), whose first N-1 entries have it False.
    Batches move and are truncated whole (``whole_batches``); the spec has no batches, so
    ``to_spec`` leaves the flag out."""

    epoch: int
    value: int | str | bytes
    last_in_batch: bool = True
    voters: tuple[int, ...] = ()
    # a VotersRecord's voters in full (keys, endpoints, kraft.version ranges), as its bytes hold
    # them (given none: each voter's ``default_voter_node``); the spec's voter set is membership
    # only, so ``to_spec`` and ``as_tuple`` leave them out
    nodes: tuple[VoterNode, ...] = ()
    # (epoch, value, voters): the form the invariants read, built once per entry
    as_tuple: tuple[int, Any, tuple[int, ...]] = attrs.field(init=False, eq=False, repr=False)

    @as_tuple.default
    def _as_tuple(self) -> tuple[int, Any, tuple[int, ...]]:
        return (self.epoch, self.value, self.voters)

    def __attrs_post_init__(self) -> None:
        if self.value == VOTERS and not self.nodes:
            object.__setattr__(self, "nodes", default_voter_nodes(self.voters))

    def to_spec(self) -> dict[str, Any]:
        return {"epoch": self.epoch, "value": self.value, "voters": list(self.voters)}


@attrs.frozen
class SnapshotRecord:
    """One data record of a snapshot: its value and the log offset it was committed at.  The
    spec's snapshot holds the values only (``to_spec``); the offset is what the append-log
    application keeps of each record (its consumers read by offset), stored as the record's key."""

    offset: int
    value: int | bytes

    def to_spec(self) -> int | bytes:
        return self.value


@attrs.frozen
class QuorumSnapshot:
    """A snapshot of the committed prefix below ``end`` (exclusive), whose last entry is of
    ``epoch``: the spec's ``[end |-> e, epoch |-> p, values |-> <<...>>, voters |-> vs]``;
    ``records`` are the data records below ``end`` in offset order (control entries leave no
    record); ``voters`` the voter set in effect at ``end``."""

    end: int
    epoch: int
    records: tuple[SnapshotRecord, ...]
    voters: tuple[int, ...]
    nodes: tuple[VoterNode, ...] = ()  # ``voters`` in full, as its VotersRecord holds them (as Entry's)

    def __attrs_post_init__(self) -> None:
        if not self.nodes:
            object.__setattr__(self, "nodes", default_voter_nodes(self.voters))

    @property
    def values(self) -> tuple[int | bytes, ...]:
        return tuple(r.value for r in self.records)

    def to_spec(self) -> dict[str, Any]:
        return {"end": self.end, "epoch": self.epoch, "values": list(self.values), "voters": list(self.voters)}


def batch_boundary(entries: Sequence[Entry], offset: int) -> int:
    """The largest batch boundary at or below ``offset`` in ``entries`` (a log from offset 0):
    where a truncation to ``offset`` really ends, since a batch that straddles it goes entirely
    (Kafka's ``LogSegment.truncateTo``)."""
    offset = min(offset, len(entries))
    while offset > 0 and not entries[offset - 1].last_in_batch:
        offset -= 1
    return offset


def whole_batches(entries: Sequence[Entry]) -> tuple[Entry, ...]:
    """``entries`` without a partial batch at the end (a fetch response may end inside a batch;
    Kafka's readers skip that incomplete batch and fetch it again whole)."""
    return tuple(entries[:batch_boundary(entries, len(entries))])


@attrs.frozen
class VoteRequest:
    source: int
    dest: int
    epoch: int
    lastEpoch: int
    lastOffset: int
    preVote: bool
    mtype = "VoteRequest"


@attrs.frozen
class VoteResponse:
    source: int
    dest: int
    epoch: int
    granted: bool
    preVote: bool
    mtype = "VoteResponse"


@attrs.frozen
class BeginQuorumEpochRequest:
    source: int
    dest: int
    epoch: int
    mtype = "BeginQuorumEpochRequest"


@attrs.frozen
class EndQuorumEpochRequest:
    source: int
    dest: int
    epoch: int
    mtype = "EndQuorumEpochRequest"


@attrs.frozen
class FetchRequest:
    source: int
    dest: int
    epoch: int
    fetchOffset: int
    lastFetchedEpoch: int
    mtype = "FetchRequest"


FETCH_OK = "Ok"
FETCH_DIVERGING = "Diverging"
FETCH_FENCED = "FencedEpoch"
FETCH_SNAPSHOT = "Snapshot"
SNAPSHOT_NOT_FOUND = "SnapshotNotFound"


@attrs.frozen
class FetchResponse:
    """``fetchOffset`` and ``lastFetchedEpoch`` echo the request: the follower handles a response only
    if it answers a fetch from the log position it holds now (offset and the epoch of the record
    before it), and discards a stale or duplicated one.  Kafka matches a response to its one
    in-flight request by correlation id (KafkaRaftClient.handleResponse through
    RequestManager.isResponseExpected); the offset alone is not enough: after a truncation and a
    re-fetch the log can end at the same offset again, in another epoch, and a duplicated Diverging
    answer of the old position would truncate committed records (docs/quorum.md).

    ``snapshotEnd``/``snapshotEpoch``: with result ``Snapshot``, the id of the leader's latest
    snapshot (FetchResponse's ``SnapshotId``, KafkaRaftClient.tryCompleteFetchRequest); 0 otherwise.

    ``leader``: the leader the responder knows (itself when it leads; None if none), Kafka's
    ``CurrentLeader`` of the FetchResponse, from which an observer learns whom to follow."""

    source: int
    dest: int
    epoch: int
    result: str
    entries: tuple[Entry, ...]
    highWatermark: int
    divergingEpoch: int
    divergingEndOffset: int
    fetchOffset: int
    lastFetchedEpoch: int
    snapshotEnd: int = 0
    snapshotEpoch: int = 0
    leader: int | None = None
    mtype = "FetchResponse"


@attrs.frozen
class FetchSnapshotRequest:
    """KIP-630 FetchSnapshot for the snapshot ``(snapshotEnd, snapshotEpoch)`` the leader named;
    Kafka fetches it in chunks by byte position, here one request fetches it whole."""

    source: int
    dest: int
    epoch: int
    snapshotEnd: int
    snapshotEpoch: int
    mtype = "FetchSnapshotRequest"


@attrs.frozen
class FetchSnapshotResponse:
    """``result``: ``Ok`` with the snapshot's ``values`` (``SnapshotRecord``s) and ``voters``,
    ``SnapshotNotFound`` or ``FencedEpoch`` (then ``epoch`` is the responder's, ``voters`` empty)."""

    source: int
    dest: int
    epoch: int
    result: str
    snapshotEnd: int
    snapshotEpoch: int
    values: tuple[SnapshotRecord, ...]
    voters: tuple[int, ...] = ()
    nodes: tuple[VoterNode, ...] = attrs.field(default=(), metadata={"spec": False})  # ``voters`` in full
    mtype = "FetchSnapshotResponse"


@attrs.frozen
class UpdateRaftVoterRequest:
    """UpdateRaftVoter (KIP-853, API key 82) from a voter to the leader: ``payload`` is the
    request v0 as Kafka encodes it (``kraft.quorum.update_voter.update_voter_request``).  The spec
    abstracts this RPC (its ``UpdateVoter`` is a leader action), so it has no spec form."""

    source: int
    dest: int
    payload: bytes
    mtype = "UpdateRaftVoterRequest"


@attrs.frozen
class UpdateRaftVoterResponse:
    """The leader's answer, the response v0 as Kafka encodes it."""

    source: int
    dest: int
    payload: bytes
    mtype = "UpdateRaftVoterResponse"


Message = Union[
    VoteRequest, VoteResponse, BeginQuorumEpochRequest, EndQuorumEpochRequest, FetchRequest, FetchResponse,
    FetchSnapshotRequest, FetchSnapshotResponse,
]


# the RPCs the spec abstracts (its ``UpdateVoter`` is a leader action): not in its ``messages``
NOT_IN_SPEC = (UpdateRaftVoterRequest, UpdateRaftVoterResponse)


def in_spec(msg: Any) -> bool:
    """Does the spec's ``messages`` variable hold ``msg``?"""
    return not isinstance(msg, NOT_IN_SPEC)


def to_spec(msg: Message) -> dict[str, Any]:
    """The spec's message record: ``{"mtype": ..., "msource": ..., ...}``."""
    out: dict[str, Any] = {"mtype": msg.mtype}
    for field in attrs.fields(type(msg)):
        if field.metadata.get("spec") is False:
            continue
        value = getattr(msg, field.name)
        if field.name in ("entries", "values"):
            value = [e.to_spec() for e in value]
        elif field.name == "voters":
            value = list(value)
        out["m" + field.name] = value
    return out
