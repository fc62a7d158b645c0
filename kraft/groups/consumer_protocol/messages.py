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

# ConsumerGroupHeartbeatRequest's MemberEpoch: 0 joins, -1 leaves (LEAVE_GROUP_MEMBER_EPOCH), -2
# leaves for a while a static member comes back from (LEAVE_GROUP_STATIC_MEMBER_EPOCH)
JOIN_EPOCH = 0
LEAVE_EPOCH = -1
STATIC_LEAVE_EPOCH = -2
NO_PARTITION_EPOCH = -1
# a member id: the client id, then this separator and the process incarnation for every process
# of a static consumer after its first (a new process of a static consumer joins under a new id)
INCARNATION_SEP = "#"


def member_id_of(client_id: str, incarnation: int) -> str:
    return client_id if incarnation == 0 else f"{client_id}{INCARNATION_SEP}{incarnation}"


def incarnation_of(member_id: str) -> int:
    """The incarnation of the process that chose ``member_id`` (0: the client's first)."""
    _, sep, inc = member_id.partition(INCARNATION_SEP)
    return int(inc) if sep else 0


def client_of_member(member_id: str) -> str:
    """The client whose process chose ``member_id``."""
    return member_id.partition(INCARNATION_SEP)[0]


class Errors(str, enum.Enum):
    """The error codes of ConsumerGroupHeartbeat and OffsetCommit under the consumer protocol."""

    NONE = "NONE"
    UNKNOWN_MEMBER_ID = "UNKNOWN_MEMBER_ID"
    FENCED_MEMBER_EPOCH = "FENCED_MEMBER_EPOCH"
    STALE_MEMBER_EPOCH = "STALE_MEMBER_EPOCH"
    UNRELEASED_INSTANCE_ID = "UNRELEASED_INSTANCE_ID"
    FENCED_INSTANCE_ID = "FENCED_INSTANCE_ID"


# the errors a consumer cannot recover from (ConsumerHeartbeatRequestManager.handleSpecificFailure)
FATAL_ERRORS = frozenset({Errors.UNRELEASED_INSTANCE_ID, Errors.FENCED_INSTANCE_ID})


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
    FATAL = "FATAL"


IN_GROUP = frozenset({ClientState.JOINING, ClientState.RECONCILING, ClientState.ACKNOWLEDGING, ClientState.STABLE})


class ServerState(str, enum.Enum):
    """The coordinator's ``MemberState`` of a member (group-coordinator, ``modern.MemberState``)."""

    STABLE = "STABLE"
    UNREVOKED_PARTITIONS = "UNREVOKED_PARTITIONS"
    UNRELEASED_PARTITIONS = "UNRELEASED_PARTITIONS"


@attrs.frozen
class Heartbeat:
    """ConsumerGroupHeartbeatRequest: ``member_id`` is the process's (KIP-1082: the client chooses
    its member id and keeps it across rejoins); ``instance_id`` is the consumer's
    ``group.instance.id`` (None: a dynamic member), sent on every heartbeat;
    ``subscribed_topic_names`` is None when the request does not carry the subscription."""

    member_id: str
    conn: int
    member_epoch: int
    topic_partitions: Partitions | None
    subscribed_topic_names: tuple[str, ...] | None = None
    instance_id: str | None = None

    @property
    def source(self) -> str:
        return client_of_member(self.member_id)


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
        return client_of_member(self.member_id)


@attrs.frozen
class OffsetCommit:
    """OffsetCommitRequest (v9+: ``GenerationIdOrMemberEpoch`` carries the member epoch)."""

    member_id: str
    member_epoch: int
    offsets: tuple[tuple[TopicPartition, int], ...]

    @property
    def source(self) -> str:
        return client_of_member(self.member_id)

    @property
    def partitions(self) -> Partitions:
        return frozenset(p for p, _ in self.offsets)


Message = Heartbeat | HeartbeatResponse | OffsetCommit


def is_request(m: object) -> bool:
    return isinstance(m, (Heartbeat, OffsetCommit))


def client_of(m: Message) -> str:
    """The consumer end of a message (sender of a request, receiver of a response)."""
    return client_of_member(m.member_id)
