"""The consumer protocol's messages and states (KIP-848), as attrs values.

Field names follow Kafka's message schemas (``ConsumerGroupHeartbeatRequest.json``,
``ConsumerGroupHeartbeatResponse.json``, ``OffsetCommitRequest.json``); ``conn`` is the client's
connection incarnation (the spec's ``conn``: a response goes back on the connection its request
came on).  A heartbeat's ``topic_partitions`` is Kafka's ``TopicPartitions``: None when the
client leaves it out (nothing changed since the last heartbeat), else what it owns.  A response's
``assignment`` is None when the coordinator leaves it out (unchanged).
"""

from __future__ import annotations

import enum

import attrs

from kraft.groups.assignors import TopicPartition

Partitions = frozenset[TopicPartition]

# ConsumerGroupHeartbeatRequest's MemberEpoch: 0 joins, -1 leaves (LEAVE_GROUP_MEMBER_EPOCH)
JOIN_EPOCH = 0
LEAVE_EPOCH = -1
NO_PARTITION_EPOCH = -1


class Errors(str, enum.Enum):
    """The error codes of ConsumerGroupHeartbeat and OffsetCommit under the consumer protocol."""

    NONE = "NONE"
    UNKNOWN_MEMBER_ID = "UNKNOWN_MEMBER_ID"
    FENCED_MEMBER_EPOCH = "FENCED_MEMBER_EPOCH"
    STALE_MEMBER_EPOCH = "STALE_MEMBER_EPOCH"


class ClientState(str, enum.Enum):
    """The consumer's ``MemberState`` (clients, ``consumer.internals.MemberState``)."""

    UNSUBSCRIBED = "UNSUBSCRIBED"
    JOINING = "JOINING"
    RECONCILING = "RECONCILING"
    ACKNOWLEDGING = "ACKNOWLEDGING"
    STABLE = "STABLE"
    FENCED = "FENCED"
    PREPARE_LEAVING = "PREPARE_LEAVING"
    LEAVING = "LEAVING"


IN_GROUP = frozenset({ClientState.JOINING, ClientState.RECONCILING, ClientState.ACKNOWLEDGING, ClientState.STABLE})


class ServerState(str, enum.Enum):
    """The coordinator's ``MemberState`` of a member (group-coordinator, ``modern.MemberState``)."""

    STABLE = "STABLE"
    UNREVOKED_PARTITIONS = "UNREVOKED_PARTITIONS"
    UNRELEASED_PARTITIONS = "UNRELEASED_PARTITIONS"


@attrs.frozen
class Heartbeat:
    """ConsumerGroupHeartbeatRequest: ``member_id`` is the client (KIP-1082: the client chooses
    its member id and keeps it across rejoins)."""

    member_id: str
    conn: int
    member_epoch: int
    topic_partitions: Partitions | None
    subscribed_topic_names: tuple[str, ...] = ()

    @property
    def source(self) -> str:
        return self.member_id


@attrs.frozen
class HeartbeatResponse:
    """ConsumerGroupHeartbeatResponse, to ``member_id`` on connection ``conn``."""

    member_id: str
    conn: int
    error: Errors
    member_epoch: int
    assignment: Partitions | None
    heartbeat_interval_ms: int = 0

    @property
    def dest(self) -> str:
        return self.member_id


@attrs.frozen
class OffsetCommit:
    """OffsetCommitRequest (v9+: ``GenerationIdOrMemberEpoch`` carries the member epoch)."""

    member_id: str
    member_epoch: int
    offsets: tuple[tuple[TopicPartition, int], ...]

    @property
    def source(self) -> str:
        return self.member_id

    @property
    def partitions(self) -> Partitions:
        return frozenset(p for p, _ in self.offsets)


Message = Heartbeat | HeartbeatResponse | OffsetCommit


def is_request(m: object) -> bool:
    return isinstance(m, (Heartbeat, OffsetCommit))


def client_of(m: Message) -> str:
    """The consumer end of a message (sender of a request, receiver of a response)."""
    return m.member_id
