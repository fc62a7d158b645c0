"""Group-protocol vocabulary shared by the coordinator, the consumers and the spec.

Field names are the spec's message fields without the leading ``m`` (``mmember`` -> ``member``).
``source``/``dest`` name a consumer (the connection's client); ``conn`` is the connection
incarnation: a response is only delivered on the connection its request came on
(spec ``Respond``/``Open``).
"""

from __future__ import annotations

import enum

import attrs

from kraft.groups.assignors import TopicPartition


class GroupState(str, enum.Enum):
    """Coordinator group states (Kafka ``ClassicGroupState``); values are the spec's strings."""

    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"


# Kafka GroupMetadata.validPreviousStates, as (from, to) pairs (spec ValidTransition).
VALID_TRANSITIONS: frozenset[tuple[GroupState, GroupState]] = frozenset(
    {(s, GroupState.DEAD) for s in GroupState}
    | {
        (GroupState.PREPARING_REBALANCE, GroupState.COMPLETING_REBALANCE),
        (GroupState.COMPLETING_REBALANCE, GroupState.STABLE),
        (GroupState.STABLE, GroupState.PREPARING_REBALANCE),
        (GroupState.COMPLETING_REBALANCE, GroupState.PREPARING_REBALANCE),
        (GroupState.EMPTY, GroupState.PREPARING_REBALANCE),
        (GroupState.PREPARING_REBALANCE, GroupState.EMPTY),
    }
)


class Errors(str, enum.Enum):
    """The Kafka error codes the classic protocol answers with."""

    NONE = "NONE"
    UNKNOWN_MEMBER_ID = "UNKNOWN_MEMBER_ID"
    ILLEGAL_GENERATION = "ILLEGAL_GENERATION"
    REBALANCE_IN_PROGRESS = "REBALANCE_IN_PROGRESS"
    MEMBER_ID_REQUIRED = "MEMBER_ID_REQUIRED"
    FENCED_INSTANCE_ID = "FENCED_INSTANCE_ID"
    COORDINATOR_NOT_AVAILABLE = "COORDINATOR_NOT_AVAILABLE"


class RebalanceProtocol(str, enum.Enum):
    """``ConsumerPartitionAssignor.RebalanceProtocol``."""

    EAGER = "eager"
    COOPERATIVE = "cooperative"


class ConsumerPhase(str, enum.Enum):
    """The client's membership phase (spec ``phase``)."""

    DOWN = "Down"
    IDLE = "Idle"  # needs to (re)join
    JOINING = "Joining"
    SYNCING = "Syncing"
    STABLE = "Stable"


Partitions = frozenset[TopicPartition]


@attrs.frozen
class JoinGroup:
    source: str
    conn: int
    member: str | None
    instance: str | None
    owned: Partitions  # ownedPartitions of the subscription (cooperative; empty for eager)
    sent_at: int = 0
    corr: int = 0  # correlation id: a client matches a response to its request


@attrs.frozen
class JoinGroupResponse:
    dest: str
    conn: int
    error: Errors
    member: str | None
    generation: int
    leader: str | None
    members: tuple[tuple[str, Partitions], ...]  # leader only: (member id, reported owned)
    corr: int = 0  # correlation id: a client matches a response to its request


@attrs.frozen
class SyncGroup:
    source: str
    conn: int
    member: str
    instance: str | None
    generation: int
    assignment: tuple[tuple[str, Partitions], ...]  # leader only
    sent_at: int = 0
    corr: int = 0  # correlation id: a client matches a response to its request


@attrs.frozen
class SyncGroupResponse:
    dest: str
    conn: int
    error: Errors
    member: str
    generation: int
    assigned: Partitions
    corr: int = 0  # correlation id: a client matches a response to its request


@attrs.frozen
class Heartbeat:
    source: str
    conn: int
    member: str
    instance: str | None
    generation: int
    sent_at: int = 0
    corr: int = 0  # correlation id: a client matches a response to its request


@attrs.frozen
class HeartbeatResponse:
    dest: str
    conn: int
    error: Errors
    member: str
    generation: int
    corr: int = 0  # correlation id: a client matches a response to its request


@attrs.frozen
class LeaveGroup:
    source: str
    conn: int
    member: str
    instance: str | None = None
    corr: int = 0  # correlation id: a client matches a response to its request


@attrs.frozen
class OffsetCommit:
    source: str
    conn: int
    member: str
    instance: str | None
    generation: int
    offsets: tuple[tuple[TopicPartition, int], ...]
    corr: int = 0  # correlation id: a client matches a response to its request


@attrs.frozen
class OffsetCommitResponse:
    dest: str
    conn: int
    error: Errors
    offsets: tuple[tuple[TopicPartition, int], ...]
    corr: int = 0  # correlation id: a client matches a response to its request


Request = JoinGroup | SyncGroup | Heartbeat | LeaveGroup | OffsetCommit
Response = JoinGroupResponse | SyncGroupResponse | HeartbeatResponse | OffsetCommitResponse
Message = Request | Response


def is_request(msg: object) -> bool:
    return isinstance(msg, (JoinGroup, SyncGroup, Heartbeat, LeaveGroup, OffsetCommit))
