"""The coordinator's ``__consumer_offsets`` partition: Kafka's offset and group records, on disk.

The group coordinator is the leader of the ``__consumer_offsets`` partition its group id hashes to
(:func:`kraft.groups.coordinator_lookup.coordinator_partition`) and writes its state there as
records (docs/groups.md, "The __consumer_offsets log").  What it writes, and at which versions,
follows Kafka's ``GroupCoordinatorRecordHelpers`` (group-coordinator module):

- ``newOffsetCommitRecord``: key ``OffsetCommitKey`` (record type 1: group, topic, partition), value
  ``OffsetCommitValue`` at ``MetadataVersion.offsetCommitValueVersion(false)`` = 3 (no expire
  timestamp): the offset, ``leaderEpoch`` -1 (the commit names none), ``metadata`` ""
  (``OffsetAndMetadata.NO_METADATA``), ``commitTimestamp`` the time the coordinator took it
  (``OffsetAndMetadata.fromRequest`` when the request gives none);
- ``newGroupMetadataRecord`` / ``newEmptyGroupMetadataRecord``: key ``GroupMetadataKey`` (record
  type 2), value ``GroupMetadataValue`` at ``MetadataVersion.groupMetadataValueVersion()`` = 3:
  protocol type, generation, protocol name, leader, ``currentStateTimestamp`` and per member its
  ids, timeouts, and the subscription and assignment bytes as the consumer protocol encodes them
  (``ConsumerProtocol.serializeSubscription``/``serializeAssignment`` at the highest version, 3,
  version-prefixed);
- ``newOffsetCommitTombstoneRecord`` / ``newGroupMetadataTombstoneRecord``: the keys with no value.

Each write is one record batch, as Kafka's coordinator hands each write to the log
(``CoordinatorRuntime``'s ``MemoryRecordsBuilder``, and before it ``GroupMetadataManager.scala``
``storeGroup``/``storeOffsets``): magic 2, CreateTime, every record stamped with the append time,
no producer id, base sequence 0, uncompressed (``offsets.topic.compression.codec`` defaults to
none).  Kafka's runtime may also gather the writes of several requests that arrive within
``group.coordinator.append.linger.ms`` into one batch; kraft writes one batch per write.  The
leader epoch of the partition is 0 until the coordinator moves: the next leader opens the same
partition (:meth:`OffsetsLog.next_leader`, the replica it holds) one leader epoch later.

Where the simulator has no Kafka counterpart for a field it writes a stand-in: ``clientHost`` is
:data:`CLIENT_HOST` (there are no sockets) and a subscription's ``generationId`` is -1 (kraft's
JoinGroup does not carry the consumer's generation); a subscription carries no user data.
"""

from __future__ import annotations

import struct
from typing import Any, Iterable, Sequence

import attrs

from kraft.groups.assignors import TopicPartition
from kraft.groups.coordinator_lookup import coordinator_partition
from kraft.log import FileSystem, Log, Record, RecordBatch
from kraft.log.codec import encode
from kraft.log.offsets import encode_offsets_record

OFFSETS_TOPIC = "__consumer_offsets"
OFFSET_COMMIT = 1            # the record type (= key version) of an OffsetCommitKey Kafka writes
GROUP_METADATA = 2           # the record type (= key version) of a GroupMetadataKey
OFFSET_COMMIT_VALUE_VERSION = 3
GROUP_METADATA_VALUE_VERSION = 3
CONSUMER_PROTOCOL_VERSION = 3
CONSUMER_PROTOCOL_TYPE = "consumer"
NO_PARTITION_LEADER_EPOCH = -1
CLIENT_HOST = "/127.0.0.1"
LEADER_EPOCH = 0             # the leader epoch of the partition's first leader, stamped on its batches
EMPTY_ASSIGNMENT = b""       # ClassicGroupMember.EMPTY_ASSIGNMENT: a member the leader left out

KeyValue = tuple[bytes, "bytes | None"]
_VERSION = struct.Struct(">h")


def _by_topic(partitions: Iterable[TopicPartition]) -> list[dict[str, Any]]:
    """Partitions grouped by topic, topics and partitions ascending (the consumer protocol's
    ``TopicPartition`` entries)."""
    out: dict[str, list[int]] = {}
    for tp in sorted(partitions, key=lambda p: (p.topic, p.partition)):
        out.setdefault(tp.topic, []).append(tp.partition)
    return [{"topic": t, "partitions": ps} for t, ps in out.items()]


def subscription_bytes(topics: Iterable[str], owned: Iterable[TopicPartition]) -> bytes:
    """``ConsumerProtocol.serializeSubscription``: version-prefixed ConsumerProtocolSubscription
    (topics sorted, owned partitions sorted by topic then partition)."""
    fields = {"topics": sorted(topics), "ownedPartitions": _by_topic(owned), "generationId": -1}
    return _VERSION.pack(CONSUMER_PROTOCOL_VERSION) + encode(
        "ConsumerProtocolSubscription", fields, CONSUMER_PROTOCOL_VERSION)


def assignment_bytes(partitions: Iterable[TopicPartition]) -> bytes:
    """``ConsumerProtocol.serializeAssignment``: version-prefixed ConsumerProtocolAssignment."""
    return _VERSION.pack(CONSUMER_PROTOCOL_VERSION) + encode(
        "ConsumerProtocolAssignment", {"assignedPartitions": _by_topic(partitions)}, CONSUMER_PROTOCOL_VERSION)


def offset_commit_record(group: str, tp: TopicPartition, offset: int, now: int) -> KeyValue:
    """``GroupCoordinatorRecordHelpers.newOffsetCommitRecord`` of one partition."""
    key = {"group": group, "topic": tp.topic, "partition": tp.partition}
    value = {"offset": offset, "leaderEpoch": NO_PARTITION_LEADER_EPOCH, "metadata": "", "commitTimestamp": now}
    return encode_offsets_record(OFFSET_COMMIT, key, value, OFFSET_COMMIT_VALUE_VERSION)


def offset_tombstone(group: str, tp: TopicPartition) -> KeyValue:
    """``newOffsetCommitTombstoneRecord``."""
    return encode_offsets_record(OFFSET_COMMIT, {"group": group, "topic": tp.topic, "partition": tp.partition}, None)


@attrs.frozen
class MemberRecord:
    """One member as ``GroupMetadataValue.MemberMetadata`` holds it."""

    member_id: str
    instance: str | None
    client_id: str
    rebalance_timeout: int
    session_timeout: int
    subscription: bytes
    assignment: bytes

    def fields(self) -> dict[str, Any]:
        return {"memberId": self.member_id, "groupInstanceId": self.instance, "clientId": self.client_id,
                "clientHost": CLIENT_HOST, "rebalanceTimeout": self.rebalance_timeout,
                "sessionTimeout": self.session_timeout, "subscription": self.subscription,
                "assignment": self.assignment}


@attrs.frozen
class GroupRecord:
    """What ``newGroupMetadataRecord`` reads from a classic group."""

    group: str
    protocol_type: str
    generation: int
    protocol: str | None
    leader: str | None
    state_timestamp: int
    members: Sequence[MemberRecord] = ()

    def encode(self) -> KeyValue:
        value = {"protocolType": self.protocol_type, "generation": self.generation, "protocol": self.protocol,
                 "leader": self.leader, "currentStateTimestamp": self.state_timestamp,
                 "members": [m.fields() for m in self.members]}
        return encode_offsets_record(GROUP_METADATA, {"group": self.group}, value, GROUP_METADATA_VALUE_VERSION)


def group_tombstone(group: str) -> KeyValue:
    """``newGroupMetadataTombstoneRecord``."""
    return encode_offsets_record(GROUP_METADATA, {"group": group}, None)


class OffsetsLog:
    """``__consumer_offsets-<partition>`` of one coordinator, a :class:`kraft.log.Log` in ``fs``."""

    def __init__(self, fs: FileSystem, partition: int, leader_epoch: int = LEADER_EPOCH,
                 log: Log | None = None) -> None:
        self.fs = fs
        self.partition = partition
        self.leader_epoch = leader_epoch
        self.directory = f"{OFFSETS_TOPIC}-{partition}"
        self.log = Log(fs, self.directory) if log is None else log

    @classmethod
    def for_group(cls, fs: FileSystem, group_id: str) -> "OffsetsLog":
        """The partition ``group_id`` hashes to (50 partitions, Kafka's default)."""
        return cls(fs, coordinator_partition(group_id))

    def next_leader(self) -> "OffsetsLog":
        """The partition as its next leader opens it: the same records (every write of this
        leader was acknowledged once replicated), batches stamped one leader epoch later."""
        log, _ = Log.open(self.fs, self.directory)
        return OffsetsLog(self.fs, self.partition, self.leader_epoch + 1, log)

    def append(self, records: Sequence[KeyValue], now: int) -> int:
        """One batch of ``records`` stamped ``now``; its base offset."""
        base = self.log.end_offset
        batch = RecordBatch(base, self.leader_epoch, tuple(Record(i, 0, k, v) for i, (k, v) in enumerate(records)),
                            base_sequence=0, first_timestamp=now, max_timestamp=now)
        self.log.append(batch)
        return base

    def batches(self) -> list[RecordBatch]:
        return self.log.read(0)
