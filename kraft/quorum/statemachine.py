"""The application side of the quorum: committed metadata records replayed in offset order."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from kraft.quorum.messages import Entry


@runtime_checkable
class MetadataStateMachine(Protocol):
    """Receives every committed record exactly once per incarnation, in offset order.

    The driver of a node owns it and feeds it the node's ``Ready.committed``; after a restart the
    driver builds a fresh one, and the node hands out its log from offset 0 again as the high
    watermark advances (Kafka's controller does the same from its snapshot + log)."""

    def on_commit(self, offset: int, record: Entry) -> None: ...


class RecordListStateMachine:
    """Keeps the committed records as a list; ``records[i]`` is the record at offset ``i``."""

    def __init__(self) -> None:
        self.records: list[Entry] = []

    def on_commit(self, offset: int, record: Entry) -> None:
        if offset != len(self.records):
            raise AssertionError(f"commit out of order: offset {offset}, expected {len(self.records)}")
        self.records.append(record)

    def values(self) -> list[int | str]:
        return [r.value for r in self.records]
