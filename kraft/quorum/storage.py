"""Durable state of one voter: the metadata log and the quorum-state file, through ``kraft.log``.

The log holds real record batches: one ``LeaderChange`` control batch (control type 2) at each
epoch start and one data batch per client value (value = the decimal bytes of the client value),
``partition_leader_epoch`` = the entry's epoch.  The quorum-state file mirrors Kafka's
``quorum-state`` JSON (``leaderEpoch``, ``leaderId``, ``votedId``, ``currentVoters``) and is replaced
atomically (temp + fsync + rename) before a vote is answered or an epoch change takes effect.

``entries`` is a volatile decoded mirror of the log (rebuilt from the log on open), so projections
and invariant checks do not decode batches after every event.
"""

from __future__ import annotations

import json
from typing import Any

from kraft.quorum.messages import LEADER_CHANGE, Entry

from kraft.log import Log, MemoryFS, Record, RecordBatch, leader_change_batch, write_atomically

QUORUM_STATE_FILE = "quorum-state"


def _read_file(fs: Any, path: str) -> bytes | None:
    if not fs.exists(path):
        return None
    return fs.read_bytes(path)


def batch_to_entry(batch: Any) -> Entry:
    """A data batch holds one record: a client value (decimal bytes) or, for the metadata quorum
    under the replication simulator (``kraft.replication.stacked``), one controller operation's
    metadata records as a JSON array; that entry's value is the tuple of the records' JSON texts."""
    if batch.is_control:
        return Entry(batch.partition_leader_epoch, LEADER_CHANGE)
    value = batch.records[0].value or b""
    if value.startswith(b"["):
        docs = json.loads(value)
        return Entry(batch.partition_leader_epoch,
                     tuple(json.dumps(d, separators=(",", ":"), sort_keys=True) for d in docs))
    return Entry(batch.partition_leader_epoch, int(value.decode()))


class QuorumStorage:
    """The log plus the quorum-state file of one node, in ``directory`` of ``fs``."""

    def __init__(self, fs: Any, directory: str, log: Any, report: Any = None) -> None:
        self.fs = fs
        self.directory = directory
        self.log = log
        self.recovery_report = report
        self.entries: list[Entry] = [batch_to_entry(b) for b in log.read(0)]

    @classmethod
    def open(cls, fs: Any, directory: str) -> "QuorumStorage":
        opened = Log.open(fs, directory)
        log, report = opened if isinstance(opened, tuple) else (opened, None)
        return cls(fs, directory, log, report)

    # -- log -----------------------------------------------------------------------------------
    @property
    def end_offset(self) -> int:
        return len(self.entries)

    @property
    def flushed_offset(self) -> int:
        return self.log.flushed_offset

    @property
    def last_epoch(self) -> int:
        return self.entries[-1].epoch if self.entries else 0

    def end_offset_for_epoch(self, epoch: int) -> tuple[int, int]:
        """Kafka's ``endOffsetForEpoch``: the largest epoch <= ``epoch`` present in the log and the
        offset one past its last entry; ``(0, 0)`` when no such epoch exists."""
        best = None
        for i in range(len(self.entries) - 1, -1, -1):
            if self.entries[i].epoch <= epoch:
                best = i
                break
        if best is None:
            return (0, 0)
        return (self.entries[best].epoch, best + 1)

    def append_leader_change(self, epoch: int, leader_id: int, voters: tuple[int, ...], timestamp: int) -> int:
        offset = self.end_offset
        self.log.append(leader_change_batch(offset, epoch, leader_id, list(voters), timestamp))
        self.entries.append(Entry(epoch, LEADER_CHANGE))
        return offset

    def append_value(self, epoch: int, value: int | tuple[str, ...], timestamp: int = 0) -> int:
        """Append one data batch of one record: an int client value, or a tuple of serialised
        metadata records (compact JSON texts, sorted keys) written as one JSON array (one entry =
        one offset, so the quorum's entry offsets stay the log's offsets)."""
        offset = self.end_offset
        text = "[" + ",".join(value) + "]" if isinstance(value, tuple) else str(value)
        record = Record(0, 0, None, text.encode())
        self.log.append(RecordBatch(offset, epoch, (record,), first_timestamp=timestamp, max_timestamp=timestamp))
        self.entries.append(Entry(epoch, value))
        return offset

    def append_entry(self, entry: Entry, leader_id: int, voters: tuple[int, ...], timestamp: int = 0) -> int:
        if entry.value == LEADER_CHANGE:
            return self.append_leader_change(entry.epoch, leader_id, voters, timestamp)
        assert isinstance(entry.value, (int, tuple))
        return self.append_value(entry.epoch, entry.value, timestamp)

    def truncate_to(self, offset: int) -> None:
        if offset < self.end_offset:
            self.log.truncate_to(offset)
            del self.entries[offset:]

    def flush(self) -> None:
        self.log.flush()

    # -- quorum state --------------------------------------------------------------------------
    def write_quorum_state(self, epoch: int, leader_id: int | None, voted_id: int | None,
                           voters: tuple[int, ...], awaiting_leader: bool = False) -> None:
        doc: dict[str, Any] = {
            "leaderEpoch": epoch,
            "leaderId": -1 if leader_id is None else leader_id,
            "votedId": -1 if voted_id is None else voted_id,
            "currentVoters": [{"voterId": v} for v in voters],
            "data_version": 0,
        }
        if awaiting_leader:
            # not a Kafka field: our stand-in for KIP-853's new directory id (docs/quorum.md,
            # "Losing a disk"); it must survive restarts until a leader has been followed
            doc["awaitingLeader"] = True
        write_atomically(self.fs, f"{self.directory}/{QUORUM_STATE_FILE}", json.dumps(doc).encode())

    def read_quorum_state(self) -> tuple[int, int | None, int | None]:
        """(epoch, leaderId, votedId) from the file; (0, None, None) when there is none yet."""
        epoch, leader, voted, _ = self.read_quorum_state_full()
        return (epoch, leader, voted)

    def read_quorum_state_full(self) -> tuple[int, int | None, int | None, bool]:
        """(epoch, leaderId, votedId, awaitingLeader); (0, None, None, False) when there is no file."""
        path = f"{self.directory}/{QUORUM_STATE_FILE}"
        raw = _read_file(self.fs, path)
        if raw is None:
            return (0, None, None, False)
        try:
            doc = json.loads(raw)
            epoch = int(doc["leaderEpoch"])
            leader = int(doc["leaderId"])
            voted = int(doc["votedId"])
            awaiting = bool(doc.get("awaitingLeader", False))
        except (ValueError, KeyError, TypeError) as exc:
            raise ValueError(f"{path}: corrupt quorum-state file: {exc}") from exc
        return (epoch, None if leader < 0 else leader, None if voted < 0 else voted, awaiting)


__all__ = ["QuorumStorage", "MemoryFS", "batch_to_entry"]
