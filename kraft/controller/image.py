"""The metadata image: what replaying ``__cluster_metadata`` yields (Kafka's ``MetadataImage``:
``ClusterImage`` broker registrations + ``TopicsImage`` partition registrations).

Both the controller and every broker build it the same way, by ``replay`` of committed records in
offset order; nothing else sets it.  Spec names: ``brokerEpoch``, ``brokerState``, ``leader``,
``leaderEpoch``, ``partitionEpoch``, ``isr``, ``elr``, ``lastKnownElr``, ``leaderRecoveryState``.
"""

from __future__ import annotations

from typing import Any

import attrs

from kraft.controller.records import (
    BrokerRegistrationChangeRecord,
    FenceBrokerRecord,
    MetadataRecord,
    PartitionChangeRecord,
    PartitionRecord,
    RegisterBrokerRecord,
    TopicRecord,
    UnfenceBrokerRecord,
)

from kraft.controller.protocol import (  # noqa: E402  (re-exported)
    CONTROLLED_SHUTDOWN, FENCED, FENCED_IN_SHUTDOWN, FENCED_STATES, UNFENCED)


@attrs.frozen
class PartitionRegistration:
    """Kafka's ``PartitionRegistration`` (one partition).  ``to_spec`` is the spec's image record."""

    replicas: tuple[int, ...]
    leader: int
    leaderEpoch: int
    partitionEpoch: int
    isr: frozenset[int]
    elr: frozenset[int] = frozenset()
    lastKnownElr: frozenset[int] = frozenset()
    leaderRecoveryState: str = "RECOVERED"

    def merge(self, r: PartitionChangeRecord) -> "PartitionRegistration":
        """PartitionRegistration.merge: apply a delta; the partition epoch always grows, the
        leader epoch when the leader changes."""
        leader = self.leader if r.leader is None else r.leader
        return PartitionRegistration(
            self.replicas, leader,
            self.leaderEpoch + 1 if leader != self.leader else self.leaderEpoch,
            self.partitionEpoch + 1,
            self.isr if r.isr is None else r.isr,
            self.elr if r.eligibleLeaderReplicas is None else r.eligibleLeaderReplicas,
            self.lastKnownElr if r.lastKnownElr is None else r.lastKnownElr,
            self.leaderRecoveryState if r.leaderRecoveryState is None else r.leaderRecoveryState)

    def to_spec(self) -> dict[str, Any]:
        return {"leader": self.leader, "leaderEpoch": self.leaderEpoch, "partitionEpoch": self.partitionEpoch,
                "isr": set(self.isr), "elr": set(self.elr), "lastKnownElr": set(self.lastKnownElr),
                "leaderRecoveryState": self.leaderRecoveryState}


@attrs.define
class BrokerRegistration:
    epoch: int
    state: str
    incarnation: int = 0


class MetadataImage:
    """Replay state.  ``applied``: how many records were replayed; ``last_offset``: the log offset
    of the last one (-1 before any).  Offsets equal positions in the spec's abstraction; in the
    metadata quorum LeaderChange control records take offsets too, so the two differ
    (docs/replication.md, "Metadata offsets")."""

    def __init__(self) -> None:
        self.applied = 0
        self.last_offset = -1
        self.brokers: dict[int, BrokerRegistration] = {}
        self.partition: PartitionRegistration | None = None
        self.topic: TopicRecord | None = None
        # position of the last partition record replayed (ReplayMetadata's "changed in the range")
        self.last_partition_index = -1

    def replay(self, index: int, record: MetadataRecord, offset: int | None = None) -> None:
        """Apply the record at position ``index`` of the metadata log, at log ``offset`` (default:
        the position)."""
        if index != self.applied:
            raise ValueError(f"replay out of order: record {index}, expected {self.applied}")
        offset = index if offset is None else offset
        if offset <= self.last_offset:
            raise ValueError(f"replay out of order: offset {offset} after {self.last_offset}")
        self.applied += 1
        self.last_offset = offset
        if isinstance(record, TopicRecord):
            self.topic = record
        elif isinstance(record, RegisterBrokerRecord):
            self.brokers[record.brokerId] = BrokerRegistration(record.brokerEpoch,
                                                               FENCED if record.fenced else UNFENCED,
                                                               record.incarnationId)
        elif isinstance(record, FenceBrokerRecord):
            reg = self.brokers[record.id]
            reg.state = FENCED_IN_SHUTDOWN if reg.state in (CONTROLLED_SHUTDOWN, FENCED_IN_SHUTDOWN) else FENCED
        elif isinstance(record, BrokerRegistrationChangeRecord):
            reg = self.brokers[record.brokerId]
            reg.state = FENCED_IN_SHUTDOWN if reg.state in FENCED_STATES else CONTROLLED_SHUTDOWN
        elif isinstance(record, PartitionRecord):
            self.partition = PartitionRegistration(record.replicas, record.leader, record.leaderEpoch,
                                                   record.partitionEpoch, record.isr,
                                                   record.eligibleLeaderReplicas, record.lastKnownElr,
                                                   record.leaderRecoveryState)
            self.last_partition_index = index
        elif isinstance(record, PartitionChangeRecord):
            assert self.partition is not None
            self.partition = self.partition.merge(record)
            self.last_partition_index = index
        elif isinstance(record, UnfenceBrokerRecord):
            reg = self.brokers[record.id]
            reg.state = CONTROLLED_SHUTDOWN if reg.state == FENCED_IN_SHUTDOWN else UNFENCED
        else:
            raise TypeError(f"not a metadata record at offset {offset}: {record!r}")

    def broker_epoch(self, b: int) -> int:
        reg = self.brokers.get(b)
        return -1 if reg is None else reg.epoch

    def broker_incarnation(self, b: int) -> int:
        reg = self.brokers.get(b)
        return 0 if reg is None else reg.incarnation

    def broker_state(self, b: int) -> str:
        reg = self.brokers.get(b)
        return FENCED if reg is None else reg.state

    def active(self) -> frozenset[int]:
        """ClusterControlManager.isActive: unfenced and not in controlled shutdown."""
        return frozenset(b for b, r in self.brokers.items() if r.state == UNFENCED)
