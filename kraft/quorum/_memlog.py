"""In-memory stand-in for ``kraft.log`` (contract section 3), used only while the real package is absent.

It implements exactly the subset of the contract that ``kraft.quorum.storage`` calls, with the same
names and crash semantics (unflushed batches and unsynced file bytes are lost by ``MemoryFS.crash``).
It does not encode bytes; ``kraft.quorum.storage`` prefers the real ``kraft.log`` whenever it imports.
"""

from __future__ import annotations

from typing import Any

import attrs


@attrs.frozen
class Record:
    offset_delta: int
    timestamp_delta: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes], ...] = ()


@attrs.frozen
class RecordBatch:
    base_offset: int
    partition_leader_epoch: int
    records: tuple[Record, ...]
    is_control: bool = attrs.field(default=False, kw_only=True)

    @property
    def last_offset(self) -> int:
        return self.base_offset + len(self.records) - 1


def leader_change_batch(base_offset: int, epoch: int, leader_id: int, voters: Any, timestamp: int) -> RecordBatch:
    value = f"LeaderChange:{leader_id}:{','.join(map(str, voters))}".encode()
    return RecordBatch(base_offset, epoch, (Record(0, 0, b"\x00\x00\x00\x02", value),), is_control=True)


class MemoryFS:
    def __init__(self) -> None:
        self.files: dict[str, bytes] = {}
        self.durable_files: dict[str, bytes] = {}
        self.logs: dict[str, dict[str, Any]] = {}

    def crash(self) -> None:
        self.files = dict(self.durable_files)
        for st in self.logs.values():
            del st["batches"][st["durable"]:]

    def lose_disk(self, directory: str) -> None:
        for path in [p for p in self.files if p.startswith(directory)]:
            del self.files[path]
        for path in [p for p in self.durable_files if p.startswith(directory)]:
            del self.durable_files[path]
        self.logs.pop(directory, None)

    def read_bytes(self, path: str) -> bytes:
        return self.files[path]

    def exists(self, path: str) -> bool:
        return path in self.files


def write_atomically(fs: MemoryFS, path: str, data: bytes) -> None:
    fs.files[path] = data
    fs.durable_files[path] = data


@attrs.frozen
class RecoveryReport:
    truncated_bytes: int = 0


class Log:
    def __init__(self, fs: MemoryFS, directory: str, segment_bytes: int = 1 << 20) -> None:
        self.fs = fs
        self.directory = directory
        self._st = fs.logs.setdefault(directory, {"batches": [], "durable": 0})

    @classmethod
    def open(cls, fs: MemoryFS, directory: str) -> tuple["Log", RecoveryReport]:
        return cls(fs, directory), RecoveryReport()

    def append(self, batch: RecordBatch) -> None:
        if batch.base_offset != self.end_offset:
            raise ValueError(f"append at {batch.base_offset}, log end is {self.end_offset}")
        self._st["batches"].append(batch)

    def flush(self) -> None:
        self._st["durable"] = len(self._st["batches"])

    def truncate_to(self, offset: int) -> None:
        b = self._st["batches"]
        keep = [x for x in b if x.last_offset < offset]
        b[:] = keep
        self._st["durable"] = min(self._st["durable"], len(keep))

    def read(self, from_offset: int, max_batches: int | None = None) -> list[RecordBatch]:
        out = [x for x in self._st["batches"] if x.last_offset >= from_offset]
        return out if max_batches is None else out[:max_batches]

    @property
    def end_offset(self) -> int:
        b = self._st["batches"]
        return b[-1].last_offset + 1 if b else 0

    @property
    def flushed_offset(self) -> int:
        d = self._st["durable"]
        return self._st["batches"][d - 1].last_offset + 1 if d else 0
