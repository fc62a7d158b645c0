"""Metadata records of ``__cluster_metadata`` (Kafka's names and fields, trimmed to one partition).

Kafka: metadata/src/main/resources/common/metadata/*.json (RegisterBrokerRecord, FenceBrokerRecord,
UnfenceBrokerRecord, BrokerRegistrationChangeRecord, TopicRecord, PartitionRecord,
PartitionChangeRecord).  As in Kafka, a ``PartitionChangeRecord`` is a delta (``None``: field
unchanged) and replay bumps the partition epoch, and the leader epoch when the leader changes
(``PartitionRegistration.merge``).

Offsets: the log starts with the ``TopicRecord`` at offset 0, then one ``RegisterBrokerRecord``
per broker (offsets 1..N: the broker epoch is the record's offset, as in Kafka), then the
``PartitionRecord``.  The spec (``spec/PartitionReplication.tla``) abstracts topics away and
numbers its records from 1; dropping the TopicRecord makes the Kafka offset of every other
record equal to its spec position, so broker epochs agree on both sides.  ``to_spec`` gives the
spec's record (``None`` for the TopicRecord).
"""

from __future__ import annotations

from typing import Any

import attrs

from kraft.controller.protocol import (
    CONTROLLED_SHUTDOWN_RECORD,
    FENCE_BROKER,
    PARTITION_CHANGE,
    REGISTER_BROKER,
    UNFENCE_BROKER,
)

TOPIC = "kraft-test"
TOPIC_ID = "AAAAAAAAAAAAAAAAAAAAAQ"  # a fixed Uuid, base64 as Kafka prints it
PARTITION = 0


@attrs.frozen
class TopicRecord:
    name: str = TOPIC
    topicId: str = TOPIC_ID


@attrs.frozen
class RegisterBrokerRecord:
    brokerId: int
    brokerEpoch: int  # = this record's offset
    fenced: bool = True
    incarnationId: int = 0


@attrs.frozen
class FenceBrokerRecord:
    id: int
    epoch: int


@attrs.frozen
class UnfenceBrokerRecord:
    id: int
    epoch: int


@attrs.frozen
class BrokerRegistrationChangeRecord:
    """Only the controlled-shutdown use: ``inControlledShutdown = 1``."""

    brokerId: int
    brokerEpoch: int
    inControlledShutdown: int = 1


@attrs.frozen
class PartitionRecord:
    """The partition as created (replicas = every broker in ascending order)."""

    partitionId: int
    topicId: str
    replicas: tuple[int, ...]
    isr: frozenset[int]
    leader: int
    leaderEpoch: int = 0
    partitionEpoch: int = 0
    eligibleLeaderReplicas: frozenset[int] = frozenset()
    lastKnownElr: frozenset[int] = frozenset()
    leaderRecoveryState: str = "RECOVERED"


@attrs.frozen
class PartitionChangeRecord:
    """A delta; ``None`` = unchanged (Kafka omits the tagged field)."""

    partitionId: int
    topicId: str
    leader: int | None = None
    isr: frozenset[int] | None = None
    eligibleLeaderReplicas: frozenset[int] | None = None
    lastKnownElr: frozenset[int] | None = None
    leaderRecoveryState: str | None = None


MetadataRecord = Any


def to_spec(record: MetadataRecord, image_after: Any = None) -> dict[str, Any] | None:
    """The spec's record; a partition record needs the registration after it (``image_after``,
    a ``PartitionRegistration``) because the spec logs the full image."""
    if isinstance(record, TopicRecord):
        return None
    if isinstance(record, RegisterBrokerRecord):
        return {"type": REGISTER_BROKER, "broker": record.brokerId, "fenced": record.fenced}
    if isinstance(record, FenceBrokerRecord):
        return {"type": FENCE_BROKER, "broker": record.id}
    if isinstance(record, UnfenceBrokerRecord):
        return {"type": UNFENCE_BROKER, "broker": record.id}
    if isinstance(record, BrokerRegistrationChangeRecord):
        return {"type": CONTROLLED_SHUTDOWN_RECORD, "broker": record.brokerId}
    if isinstance(record, (PartitionRecord, PartitionChangeRecord)):
        return {"type": PARTITION_CHANGE, **image_after.to_spec()}
    raise TypeError(f"not a metadata record: {record!r}")
