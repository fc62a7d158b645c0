"""The consumer-protocol group's records in ``__consumer_offsets``, as Kafka writes and replays them.

Writing follows ``GroupCoordinatorRecordHelpers`` (group-coordinator module); every key is read at
its record type (the key version), every value at version 0 (the only one of these schemas):

- ``newConsumerGroupMemberSubscriptionRecord``: type 5, ``ConsumerGroupMemberMetadataValue``: the
  instance id of a static member (null for a dynamic one), no rack id, the client id, the client
  host, the subscribed topic names sorted, the regex ``""`` (``ConsumerGroupMember.Builder``'s
  default when the consumer names none), the rebalance timeout, no server assignor (the consumer
  asks for none: the coordinator's default serves), no classic-member metadata;
- ``newConsumerGroupSubscriptionMetadataRecord``: type 4, ``ConsumerGroupPartitionMetadataValue``:
  each subscribed topic's id, name and partition count (no partition racks);
- ``newConsumerGroupEpochRecord``: type 3, ``ConsumerGroupMetadataValue`` (the group epoch);
- ``newConsumerGroupTargetAssignmentRecord``: type 7, ``ConsumerGroupTargetAssignmentMemberValue``
  (one member's target, by topic id), and ``newConsumerGroupTargetAssignmentEpochRecord``: type 6,
  ``ConsumerGroupTargetAssignmentMetadataValue`` (the assignment epoch);
- ``newConsumerGroupCurrentAssignmentRecord``: type 8, ``ConsumerGroupCurrentMemberAssignmentValue``:
  member epoch, previous epoch, ``MemberState.value()`` and the assigned partitions and those
  pending revocation, by topic id;
- the tombstones of types 8, 7 and 5 that ``GroupMetadataManager.removeMember`` writes, in that order
  (``replaceMember`` writes them for the old member, then types 5, 7 and 8 for the new one).

Kafka iterates hash maps where kraft sorts: members by id, topics by name, partitions ascending.

Replaying follows ``GroupMetadataManager.replay`` of each record type; :func:`decode` gives a
record's type and fields, the coordinator applies them (:meth:`.coordinator.GroupCoordinator.replay`).
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping

from kraft.groups.assignors import TopicPartition
from kraft.groups.assignors.server.spec import Uuid
from kraft.groups.consumer_protocol.messages import LEAVE_EPOCH, Partitions, ServerState, client_of_member
from kraft.groups.consumer_protocol.reconcile import MemberRecord
from kraft.groups.offsets_log import CLIENT_HOST, OFFSET_COMMIT, KeyValue
from kraft.log.offsets import decode_offsets_key, decode_offsets_value, encode_offsets_record

GROUP_EPOCH = 3              # ConsumerGroupMetadata
PARTITION_METADATA = 4       # ConsumerGroupPartitionMetadata
MEMBER_METADATA = 5          # ConsumerGroupMemberMetadata
TARGET_EPOCH = 6             # ConsumerGroupTargetAssignmentMetadata
TARGET_MEMBER = 7            # ConsumerGroupTargetAssignmentMember
CURRENT_ASSIGNMENT = 8       # ConsumerGroupCurrentMemberAssignment
VALUE_VERSION = 0
SUBSCRIBED_TOPIC_REGEX = ""  # ConsumerGroupMember.Builder's default: the member names no regex

# MemberState.value() of each state (group-coordinator, modern.MemberState)
STATE_VALUE = {ServerState.STABLE: 0, ServerState.UNREVOKED_PARTITIONS: 1, ServerState.UNRELEASED_PARTITIONS: 2}
STATE_OF = {v: s for s, v in STATE_VALUE.items()}

# the member a tombstone of its current assignment leaves (GroupMetadataManager.replay)
LEFT = MemberRecord(LEAVE_EPOCH, LEAVE_EPOCH, ServerState.STABLE)


def _record(record_type: int, group: str, member: str | None, value: dict[str, Any] | None) -> KeyValue:
    key = {"groupId": group} if member is None else {"groupId": group, "memberId": member}
    return encode_offsets_record(record_type, key, value, None if value is None else VALUE_VERSION)


def by_topic_id(partitions: Iterable[TopicPartition], ids: Mapping[str, Uuid]) -> list[dict[str, Any]]:
    """``[{topicId, partitions}]``: topics by name, partitions ascending."""
    out: dict[str, list[int]] = {}
    for p in sorted(partitions, key=lambda q: (q.topic, q.partition)):
        out.setdefault(p.topic, []).append(p.partition)
    return [{"topicId": str(ids[t]), "partitions": ps} for t, ps in out.items()]


def partitions_of(entries: Iterable[dict[str, Any]], names: Mapping[Uuid, str]) -> Partitions:
    """The partitions a ``[{topicId, partitions}]`` list names."""
    return frozenset(TopicPartition(names[Uuid.from_string(e["topicId"])], p) for e in entries for p in e["partitions"])


def member_subscription(group: str, member: str, topics: Iterable[str], rebalance_timeout_ms: int,
                        instance: str | None = None) -> KeyValue:
    """``newConsumerGroupMemberSubscriptionRecord`` of a member subscribed to ``topics`` (``instance``:
    a static member's instance id); the client id is the member id's client."""
    return _record(MEMBER_METADATA, group, member, {
        "instanceId": instance, "rackId": None, "clientId": client_of_member(member), "clientHost": CLIENT_HOST,
        "subscribedTopicNames": sorted(topics), "subscribedTopicRegex": SUBSCRIBED_TOPIC_REGEX,
        "rebalanceTimeoutMs": rebalance_timeout_ms, "serverAssignor": None, "classicMemberMetadata": None})


def partition_metadata(group: str, topics: Iterable[tuple[str, int]], ids: Mapping[str, Uuid]) -> KeyValue:
    """``newConsumerGroupSubscriptionMetadataRecord``: (name, partitions) of each subscribed topic."""
    return _record(PARTITION_METADATA, group, None, {"topics": [
        {"topicId": str(ids[t]), "topicName": t, "numPartitions": n, "partitionMetadata": []}
        for t, n in sorted(topics)]})


def group_epoch(group: str, epoch: int) -> KeyValue:
    """``newConsumerGroupEpochRecord``."""
    return _record(GROUP_EPOCH, group, None, {"epoch": epoch})


def target_member(group: str, member: str, partitions: Partitions, ids: Mapping[str, Uuid]) -> KeyValue:
    """``newConsumerGroupTargetAssignmentRecord``."""
    return _record(TARGET_MEMBER, group, member, {"topicPartitions": by_topic_id(partitions, ids)})


def target_epoch(group: str, epoch: int) -> KeyValue:
    """``newConsumerGroupTargetAssignmentEpochRecord``."""
    return _record(TARGET_EPOCH, group, None, {"assignmentEpoch": epoch})


def current_assignment(group: str, member: str, m: MemberRecord, ids: Mapping[str, Uuid]) -> KeyValue:
    """``newConsumerGroupCurrentAssignmentRecord``."""
    return _record(CURRENT_ASSIGNMENT, group, member, {
        "memberEpoch": m.epoch, "previousMemberEpoch": m.prev, "state": STATE_VALUE[m.state],
        "assignedPartitions": by_topic_id(m.assigned, ids),
        "partitionsPendingRevocation": by_topic_id(m.pending, ids)})


def member_tombstones(group: str, member: str) -> list[KeyValue]:
    """``GroupMetadataManager.removeMember``: current assignment, target, subscription."""
    return [_record(t, group, member, None) for t in (CURRENT_ASSIGNMENT, TARGET_MEMBER, MEMBER_METADATA)]


def member_of(value: dict[str, Any], names: Mapping[Uuid, str], target_epoch: int) -> MemberRecord:
    """``ConsumerGroupMember.Builder.updateWith(ConsumerGroupCurrentMemberAssignmentValue)``.  The
    epoch of the target the member reconciles towards (``tepoch``, which Kafka does not keep) is the
    assignment epoch in force when the record was written: every member update follows the
    target of that epoch."""
    return MemberRecord(value["memberEpoch"], value["previousMemberEpoch"], STATE_OF[value["state"]],
                        partitions_of(value["assignedPartitions"], names),
                        partitions_of(value["partitionsPendingRevocation"], names), target_epoch)


def decode(key: bytes, value: bytes | None) -> tuple[int, dict[str, Any], dict[str, Any] | None]:
    """(record type, key fields, value fields or None for a tombstone) of one record."""
    record_type, _, key_fields = decode_offsets_key(key)
    if value is None:
        return record_type, key_fields, None
    return record_type, key_fields, decode_offsets_value(record_type, value)[2]


__all__ = ["CURRENT_ASSIGNMENT", "GROUP_EPOCH", "MEMBER_METADATA", "OFFSET_COMMIT", "PARTITION_METADATA",
           "TARGET_EPOCH", "TARGET_MEMBER", "current_assignment", "decode", "group_epoch", "member_of",
           "member_subscription", "member_tombstones", "partition_metadata", "target_epoch", "target_member"]
