"""The application side of the quorum: committed metadata records replayed in offset order."""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from kraft.quorum.messages import LEADER_CHANGE, Entry, QuorumSnapshot


@runtime_checkable
class MetadataStateMachine(Protocol):
    """Receives every committed record exactly once per incarnation, in offset order.

    The driver of a node owns it and feeds it the node's ``Ready.committed`` (``replay``); after a
    restart the driver builds a fresh one, and the node hands out its latest snapshot (if its log
    starts above 0) and then its log as the high watermark advances (Kafka's controller loads its
    snapshot, then replays the log)."""

    def on_commit(self, offset: int, record: Entry) -> None: ...

    def load_snapshot(self, snapshot: QuorumSnapshot) -> None: ...


def replay(machine: MetadataStateMachine, committed: Any) -> None:
    """Feed a ``Ready.committed`` to ``machine``: a snapshot item (the node's latest snapshot, when
    the next record to apply lies below its log start) replaces the state, records are applied."""
    for offset, record in committed:
        if isinstance(record, QuorumSnapshot):
            machine.load_snapshot(record)
        else:
            machine.on_commit(offset, record)


class RecordListStateMachine:
    """Keeps the committed records as a list; ``records[i]`` is the record at offset ``i``."""

    def __init__(self) -> None:
        self.records: list[Entry] = []

    def on_commit(self, offset: int, record: Entry) -> None:
        if offset != len(self.records):
            raise AssertionError(f"commit out of order: offset {offset}, expected {len(self.records)}")
        self.records.append(record)

    def load_snapshot(self, snapshot: QuorumSnapshot) -> None:
        """The state below the snapshot's end: its records at their offsets; the offsets between
        them held LeaderChange entries (the only entries a snapshot leaves out)."""
        records: list[Entry] = [Entry(snapshot.epoch, LEADER_CHANGE)] * snapshot.end
        for r in snapshot.records:
            records[r.offset] = Entry(snapshot.epoch, r.value)
        self.records = records

    def values(self) -> list[int | str]:
        return [r.value for r in self.records]
