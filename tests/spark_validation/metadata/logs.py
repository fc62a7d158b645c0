"""Metadata log directories built from records, with kraft.log's batches and the schema codec.

:class:`Cluster` keeps the records of a small cluster in offset order, one batch per controller
operation, and writes them as Kafka lays out ``__cluster_metadata-0``: segments
(``<base offset>.log``) and, if asked, a ``.checkpoint`` snapshot of the first records.
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import attrs

from kraft.log import snapshot
from kraft.log.fs import OsFS
from kraft.log.metadata import MetadataRecord, encode_metadata
from kraft.log.records import Record, RecordBatch, leader_change_batch

TOPIC_ID = base64.urlsafe_b64encode(bytes(range(1, 17))).decode().rstrip("=")
OTHER_TOPIC_ID = base64.urlsafe_b64encode(bytes(range(2, 18))).decode().rstrip("=")


def uuid(n: int) -> str:
    return base64.urlsafe_b64encode(n.to_bytes(16, "big")).decode().rstrip("=")


def register(b: int, epoch: int, fenced: bool = False, incarnation: int | None = None) -> MetadataRecord:
    return MetadataRecord("RegisterBrokerRecord", 3, {
        "brokerId": b, "brokerEpoch": epoch, "incarnationId": uuid(incarnation if incarnation is not None else epoch),
        "fenced": fenced})


def fence(b: int, epoch: int) -> MetadataRecord:
    return MetadataRecord("FenceBrokerRecord", 0, {"id": b, "epoch": epoch})


def unfence(b: int, epoch: int) -> MetadataRecord:
    return MetadataRecord("UnfenceBrokerRecord", 0, {"id": b, "epoch": epoch})


def shutting_down(b: int, epoch: int) -> MetadataRecord:
    return MetadataRecord("BrokerRegistrationChangeRecord", 2, {"brokerId": b, "brokerEpoch": epoch,
                                                                "inControlledShutdown": 1})


def topic(name: str = "t", topic_id: str = TOPIC_ID) -> MetadataRecord:
    return MetadataRecord("TopicRecord", 0, {"name": name, "topicId": topic_id})


def partition(replicas=(1, 2, 3), isr=None, leader: int = 1, leader_epoch: int = 0, partition_epoch: int = 0,
              topic_id: str = TOPIC_ID, pid: int = 0, **extra: Any) -> MetadataRecord:
    fields = {"partitionId": pid, "topicId": topic_id, "replicas": list(replicas),
              "isr": list(replicas if isr is None else isr), "removingReplicas": [], "addingReplicas": [],
              "leader": leader, "leaderEpoch": leader_epoch, "partitionEpoch": partition_epoch,
              "directories": [uuid(0)] * len(replicas), **extra}
    return MetadataRecord("PartitionRecord", 2, fields)


def change(topic_id: str = TOPIC_ID, pid: int = 0, **fields: Any) -> MetadataRecord:
    """A PartitionChangeRecord; keyword names are the record's fields (``isr``, ``leader``,
    ``eligibleLeaderReplicas``, ``lastKnownElr``, ``leaderRecoveryState``, ``replicas``)."""
    return MetadataRecord("PartitionChangeRecord", 2, {"partitionId": pid, "topicId": topic_id, **fields})


def config(name: str, value: str | None, resource: str = "t", resource_type: int = 2) -> MetadataRecord:
    return MetadataRecord("ConfigRecord", 0, {"resourceType": resource_type, "resourceName": resource,
                                              "name": name, "value": value})


def noop() -> MetadataRecord:
    return MetadataRecord("NoOpRecord", 0, {})


def bootstrap() -> list[list[MetadataRecord]]:
    """Three brokers registered and unfenced, topic ``t`` with one partition on all three."""
    return [[register(1, 1), register(2, 2), register(3, 3)], [topic(), partition()]]


@attrs.define
class Cluster:
    batches: list[list[MetadataRecord]] = attrs.Factory(bootstrap)
    epoch: int = 1
    compression: str = "none"

    def then(self, *records: MetadataRecord) -> "Cluster":
        self.batches.append(list(records))
        return self

    def encoded(self, start: int = 0, leader_change: bool = True) -> list[RecordBatch]:
        """The batches from offset ``start`` on: a LeaderChange control batch, then one batch per
        operation."""
        out: list[RecordBatch] = []
        offset = start
        if leader_change:
            out.append(leader_change_batch(offset, self.epoch, 1, [1], timestamp=0))
            offset += 1
        for recs in self.batches:
            out.append(RecordBatch(offset, self.epoch, [Record(i, 0, None, encode_metadata(r)) for i, r in enumerate(recs)],
                                   compression=self.compression))
            offset += len(recs)
        return out

    def write(self, directory: Path, segment_bytes: int | None = None, start: int = 0,
              leader_change: bool = True) -> Path:
        """``directory`` as a __cluster_metadata-0 copy: one segment, or several of about
        ``segment_bytes``, the first starting at offset ``start``."""
        directory.mkdir(parents=True, exist_ok=True)
        segments: list[tuple[int, bytearray]] = []
        for b in self.encoded(start, leader_change):
            raw = b.encode()
            if not segments or (segment_bytes and len(segments[-1][1]) + len(raw) > segment_bytes):
                segments.append((b.base_offset, bytearray()))
            segments[-1][1].extend(raw)
        for base, data in segments:
            (directory / f"{base:020d}.log").write_bytes(bytes(data))
        return directory


def write_snapshot(directory: Path, records: list[MetadataRecord], end_offset: int, epoch: int = 1) -> Path:
    """A ``.checkpoint`` file holding ``records`` in one data batch (kraft.log.snapshot)."""
    data = [[Record(i, 0, None, encode_metadata(r)) for i, r in enumerate(records)]]
    return Path(snapshot.write_snapshot(OsFS(), str(directory), snapshot.SnapshotId(end_offset, epoch), data))
