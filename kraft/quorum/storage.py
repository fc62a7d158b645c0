"""Durable state of one voter: the metadata log and the quorum-state file, through ``kraft.log``.

The log holds real record batches, one offset per record: one ``LeaderChange`` control batch
(control type 2) at each epoch start, one data batch per client value (value = the decimal bytes
of the client value) and, in the metadata quorum, one data batch per controller operation holding
one record per metadata record (value = the record's bytes, key null; Kafka's
``BatchAccumulator``); ``partition_leader_epoch`` = the entries' epoch.  The quorum-state file mirrors Kafka's
``quorum-state`` JSON (``leaderEpoch``, ``leaderId``, ``votedId``, ``currentVoters``) and is replaced
atomically (temp + fsync + rename) before a vote is answered or an epoch change takes effect.

``entries`` is a volatile decoded mirror of the log (rebuilt from the log on open), so projections
and invariant checks do not decode batches after every event.
"""

from __future__ import annotations

import json
from typing import Any, Sequence

from kraft.quorum.messages import LEADER_CHANGE, Entry

from kraft.log import Log, MemoryFS, Record, RecordBatch, leader_change_batch, write_atomically

QUORUM_STATE_FILE = "quorum-state"


def _read_file(fs: Any, path: str) -> bytes | None:
    if not fs.exists(path):
        return None
    return fs.read_bytes(path)


def _value(raw: bytes) -> int | bytes:
    """A record value: a client value is decimal text; anything else is a metadata record's
    bytes, kept as they are (its codec belongs to the controller)."""
    if raw.isdigit() or (raw[:1] == b"-" and raw[1:].isdigit()):
        return int(raw.decode())
    return raw


def batch_to_entries(batch: Any) -> list[Entry]:
    """The entries of one batch, one per record (a control batch: its LeaderChange)."""
    if batch.is_control:
        return [Entry(batch.partition_leader_epoch, LEADER_CHANGE)]
    last = len(batch.records) - 1
    return [Entry(batch.partition_leader_epoch, _value(r.value or b""), i == last)
            for i, r in enumerate(batch.records)]


def _data_batch(offset: int, epoch: int, values: tuple[int | bytes, ...], timestamp: int) -> RecordBatch:
    records = tuple(Record(i, 0, None, v if isinstance(v, bytes) else str(v).encode())
                    for i, v in enumerate(values))
    return RecordBatch(offset, epoch, records, first_timestamp=timestamp, max_timestamp=timestamp)


class QuorumStorage:
    """The log plus the quorum-state file of one node, in ``directory`` of ``fs``."""

    def __init__(self, fs: Any, directory: str, log: Any, report: Any = None) -> None:
        self.fs = fs
        self.directory = directory
        self.log = log
        self.recovery_report = report
        self.entries: list[Entry] = [e for b in log.read(0) for e in batch_to_entries(b)]

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

    def append_value(self, epoch: int, value: int | tuple[bytes, ...], timestamp: int = 0) -> int:
        """Append one data batch: an int client value (one record), or a tuple of metadata record
        values, one record each at consecutive offsets (all or nothing).  Returns the offset of
        the batch's last record (Kafka's ``scheduleAtomicAppend``)."""
        values = value if isinstance(value, tuple) else (value,)
        if not values:
            raise ValueError("an empty batch")
        offset = self.end_offset
        self.log.append(_data_batch(offset, epoch, values, timestamp))
        last = len(values) - 1
        self.entries += [Entry(epoch, v, i == last) for i, v in enumerate(values)]
        return offset + last

    def append_entries(self, entries: Sequence[Entry], leader_id: int, voters: tuple[int, ...],
                       timestamp: int = 0) -> None:
        """Append fetched entries as the batches their ``last_in_batch`` flags delimit (the caller
        hands whole batches: ``whole_batches``)."""
        start = 0
        for k, entry in enumerate(entries):
            if not entry.last_in_batch and k + 1 < len(entries):
                continue
            if entry.value == LEADER_CHANGE:
                self.append_leader_change(entry.epoch, leader_id, voters, timestamp)
            else:
                self._append_batch(entries[start:k + 1], timestamp)
            start = k + 1

    def _append_batch(self, batch: Sequence[Entry], timestamp: int) -> None:
        epoch = batch[0].epoch
        if any(e.epoch != epoch or not isinstance(e.value, (int, bytes)) for e in batch):
            raise ValueError(f"not one data batch: {list(batch)}")
        self.log.append(_data_batch(self.end_offset, epoch, tuple(e.value for e in batch), timestamp))
        self.entries += batch

    def truncate_to(self, offset: int) -> int:
        """Remove the entries from ``offset`` on; a batch straddling it goes whole (the log
        removes whole batches), so the new end offset can be lower.  Returns it."""
        if offset < self.end_offset:
            self.log.truncate_to(offset)
            del self.entries[self.log.end_offset:]
        return self.end_offset

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


__all__ = ["QuorumStorage", "MemoryFS", "batch_to_entries"]
