"""Replay decoded metadata records into an :class:`~.image.Image`, checking each against the
rules of :mod:`.invariants` before and after it is applied.

Records come from a snapshot (they restate the image: only what holds of every state is checked,
once the snapshot is loaded) or from the log (each is a change: the change is checked too). A
record Kafka's replay would refuse is reported and skipped. Metadata transactions (KIP-868:
BeginTransaction ... EndTransaction | AbortTransaction) are held back until their end record and
dropped if aborted, as ``image/loader/MetadataBatchLoader`` does.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Callable, Protocol

import attrs

from . import invariants
from .image import Image, Refused, merge, partition_from_record
from .invariants import INVARIANTS, Finding

MAX_LISTED = 200  # violations listed per directory; all are counted


class Record(Protocol):
    name: str
    version: int
    fields: dict[str, Any]


@attrs.frozen
class Where:
    """Where a record sits: file (name in its directory), byte position of its batch, offset."""

    file: str
    position: int
    offset: int


@attrs.frozen
class Violation:
    invariant: str
    record_type: str
    where: Where
    message: str
    partition: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"invariant": self.invariant, "file": self.where.file, "offset": self.where.offset,
                "position": self.where.position, "record_type": self.record_type,
                "partition": self.partition, "message": self.message, "kafka": INVARIANTS[self.invariant][1]}

    def __str__(self) -> str:
        part = f" {self.partition}" if self.partition else ""
        return (f"{self.where.file} offset {self.where.offset} (batch at byte {self.where.position}) "
                f"{self.record_type}{part}: {self.invariant}: {self.message}")


@attrs.frozen
class UncleanElection:
    """A leader elected from outside the ISR: where its record sits, the partition, the leader
    before and after, and the new leader epoch."""

    file: str
    offset: int
    partition: str
    before: int
    after: int
    leader_epoch: int


INTERPRETED = ("RegisterBrokerRecord", "UnregisterBrokerRecord", "FenceBrokerRecord", "UnfenceBrokerRecord",
               "BrokerRegistrationChangeRecord", "TopicRecord", "PartitionRecord", "PartitionChangeRecord",
               "RemoveTopicRecord", "ConfigRecord", "BeginTransactionRecord", "EndTransactionRecord",
               "AbortTransactionRecord")


@attrs.define
class Replayer:
    image: Image
    violations: list[Violation] = attrs.Factory(list)
    violation_count: int = 0
    by_invariant: Counter = attrs.Factory(Counter)
    record_types: Counter = attrs.Factory(Counter)
    not_interpreted: Counter = attrs.Factory(Counter)
    aborted_records: int = 0
    unclean_elections: int = 0
    unclean: list[UncleanElection] = attrs.Factory(list)
    in_snapshot: bool = False
    _pending: list[tuple[Record, Where]] | None = None
    _at: Where | None = None  # the record being applied

    def replay(self, record: Record, where: Where) -> None:
        self.record_types[record.name] += 1
        if record.name == "BeginTransactionRecord":
            self._pending = []
        elif record.name in ("EndTransactionRecord", "AbortTransactionRecord"):
            held, self._pending = self._pending or [], None
            if record.name == "AbortTransactionRecord":
                self.aborted_records += len(held)
            else:
                for r, w in held:
                    self._apply(r, w)
        elif self._pending is not None:
            self._pending.append((record, where))
        else:
            self._apply(record, where)

    def end_snapshot(self, where: Where) -> None:
        """The snapshot is loaded: check what holds of every partition of the image."""
        for t in self.image.topics.values():
            for pid, p in sorted(t.partitions.items()):
                self._report(invariants.partition_state(p), "PartitionRecord", where, f"{t.name}-{pid}")

    # ---------------------------------------------------------------- dispatch
    def _apply(self, record: Record, where: Where) -> None:
        handler = _HANDLERS.get(record.name)
        if handler is None:
            self.not_interpreted[record.name] += 1
            return
        self._at = where
        try:
            findings, partition = handler(self, record.fields)
        except Refused as exc:
            findings, partition = [(exc.invariant, exc.why)], None
        self._report(findings, record.name, where, partition)

    def _report(self, findings: list[Finding], record_type: str, where: Where, partition: str | None) -> None:
        for invariant, message in findings:
            self.violation_count += 1
            self.by_invariant[invariant] += 1
            if len(self.violations) < MAX_LISTED:
                self.violations.append(Violation(invariant, record_type, where, message, partition))

    # ---------------------------------------------------------------- brokers
    def _register(self, f: dict[str, Any]) -> tuple[list[Finding], None]:
        findings = [] if self.in_snapshot else invariants.registration(self.image, f)
        self.image.register(f)
        return findings, None

    def _unregister(self, f: dict[str, Any]) -> tuple[list[Finding], None]:
        self.image.broker(f["brokerId"], f["brokerEpoch"], "UnregisterBrokerRecord")
        del self.image.brokers[f["brokerId"]]
        return [], None

    def _fence(self, f: dict[str, Any]) -> tuple[list[Finding], None]:
        self.image.change_broker(f["id"], f["epoch"], True, None, "FenceBrokerRecord")
        return [], None

    def _unfence(self, f: dict[str, Any]) -> tuple[list[Finding], None]:
        self.image.change_broker(f["id"], f["epoch"], False, None, "UnfenceBrokerRecord")
        return [], None

    def _registration_change(self, f: dict[str, Any]) -> tuple[list[Finding], None]:
        fenced_change, shutdown_change = f.get("fenced", 0), f.get("inControlledShutdown", 0)
        if fenced_change not in (-1, 0, 1) or shutdown_change not in (0, 1):
            raise Refused("TypeOK", f"fenced {fenced_change} / inControlledShutdown {shutdown_change}: "
                                    "not a value BrokerRegistrationChangeRecord defines")
        fenced = {-1: False, 0: None, 1: True}[fenced_change]
        shutdown = True if shutdown_change == 1 else None
        self.image.change_broker(f["brokerId"], f["brokerEpoch"], fenced, shutdown, "BrokerRegistrationChangeRecord")
        return [], None

    # ---------------------------------------------------------------- topics
    def _topic(self, f: dict[str, Any]) -> tuple[list[Finding], None]:
        other = self.image.names.get(f["name"])
        if other is not None:
            raise Refused("KnownTopic", f"topic name {f['name']!r} already belongs to topic id {other}")
        self.image.add_topic(f["topicId"], f["name"])
        return [], None

    def _remove_topic(self, f: dict[str, Any]) -> tuple[list[Finding], None]:
        self.image.remove_topic(f["topicId"])
        return [], None

    def _partition(self, f: dict[str, Any]) -> tuple[list[Finding], str]:
        t = self.image.topic(f["topicId"], "PartitionRecord")
        pid = f["partitionId"]
        after = partition_from_record(f)
        before = t.partitions.get(pid)
        t.partitions[pid] = after
        findings: list[Finding] = []
        if not self.in_snapshot:
            findings = (invariants.created(after, self.image) if before is None
                        else invariants.restated(before, after))
            findings += invariants.partition_state(after)
            findings += invariants.elr_under_min_isr(after, self.image.min_isr(t.id))
        return findings, f"{t.name}-{pid}"

    def _partition_change(self, f: dict[str, Any]) -> tuple[list[Finding], str]:
        before = self.image.partition(f["topicId"], f["partitionId"], "PartitionChangeRecord")
        t = self.image.topics[f["topicId"]]
        after = merge(before, f)
        t.partitions[f["partitionId"]] = after
        findings = (invariants.changed(before, after, f, self.image) + invariants.partition_state(after)
                    + invariants.elr_under_min_isr(after, self.image.min_isr(t.id)))
        name = f"{t.name}-{f['partitionId']}"
        if invariants.is_election(before, after) and not invariants.is_clean_election(before, after):
            if invariants.is_marked_unclean(after):   # (otherwise CleanElection reports it)
                findings += invariants.unclean_allowed(before, after, self.image.unclean_enabled(t.id))
            self.unclean_elections += 1
            if len(self.unclean) < MAX_LISTED and self._at is not None:
                self.unclean.append(UncleanElection(self._at.file, self._at.offset, name, before.leader, after.leader,
                                                    after.leader_epoch))
        return findings, name

    def _config(self, f: dict[str, Any]) -> tuple[list[Finding], None]:
        self.image.set_config(f)
        return [], None


_HANDLERS: dict[str, Callable[[Replayer, dict[str, Any]], tuple[list[Finding], str | None]]] = {
    "RegisterBrokerRecord": Replayer._register,
    "UnregisterBrokerRecord": Replayer._unregister,
    "FenceBrokerRecord": Replayer._fence,
    "UnfenceBrokerRecord": Replayer._unfence,
    "BrokerRegistrationChangeRecord": Replayer._registration_change,
    "TopicRecord": Replayer._topic,
    "RemoveTopicRecord": Replayer._remove_topic,
    "PartitionRecord": Replayer._partition,
    "PartitionChangeRecord": Replayer._partition_change,
    "ConfigRecord": Replayer._config,
}
