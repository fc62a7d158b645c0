"""Read a ``__cluster_metadata-0`` directory without changing it: the latest ``.checkpoint``
snapshot, then the segments' batches from the snapshot's end offset on.

File names are Kafka's: a segment is ``<20-digit base offset>.log``; a snapshot is
``<20-digit end offset>-<10-digit epoch>.checkpoint`` (:mod:`kraft.log.snapshot`), its end offset
the first offset it does not hold; a ``.checkpoint.part`` (being written) or
``.checkpoint.deleted`` one is not loaded, as Kafka loads neither. Other files (``.index``,
``.timeindex``, ``quorum-state``, ``leader-epoch-checkpoint``, ``partition.metadata``, ...) are
listed as ignored. A snapshot is checked as :func:`kraft.log.snapshot.read_snapshot` checks it
(header first, footer last) before its records are replayed.

Nothing is recovered or cut: a torn tail or a corrupt batch stops the read with
:class:`Unreadable` naming the file and the byte position (``RecordBatch.decode``'s batch start,
or for a record that does not decode, the position inside the record's value the schema codec
names). Control records are counted by type, never replayed.
"""

from __future__ import annotations

import os
from collections import Counter
from typing import Iterator

import attrs

from kraft.log.codec import SchemaError
from kraft.log.fs import OsFS
from kraft.log.log import SEGMENT_RE
from kraft.log.metadata import MetadataRecord, decode_metadata
from kraft.log.records import (HEADER_SIZE, ControlType, CorruptBatchError, RecordBatch, UnsupportedBatchError,
                               iter_batches)
from kraft.log.snapshot import SnapshotError, parse_snapshot_path, read_snapshot


class Unreadable(Exception):
    """A file the audit cannot read: ``file`` (its name in the directory), ``position`` (byte)."""

    def __init__(self, file: str, position: int | None, why: str) -> None:
        where = f" at byte position {position}" if position is not None else ""
        super().__init__(f"{file}{where}: {why}")
        self.file, self.position, self.why = file, position, why


@attrs.frozen
class Layout:
    snapshot: str | None
    snapshot_end: int
    segments: tuple[tuple[int, str], ...]
    ignored: tuple[str, ...]


def layout(directory: str) -> Layout:
    """The files of a metadata log directory: the latest snapshot, the segments in offset order."""
    snapshots: list[tuple[int, int, str]] = []
    segments: list[tuple[int, str]] = []
    ignored: list[str] = []
    for name in sorted(os.listdir(directory)):
        if m := SEGMENT_RE.match(name):
            segments.append((int(m.group(1)), name))
        elif (snap := parse_snapshot_path(name)) is not None and not (snap.partial or snap.deleted):
            snapshots.append((snap.snapshot_id.end_offset, snap.snapshot_id.epoch, name))
        else:
            ignored.append(name)
    latest = max(snapshots) if snapshots else None
    return Layout(snapshot=latest[2] if latest else None, snapshot_end=latest[0] if latest else 0,
                  segments=tuple(sorted(segments)), ignored=tuple(ignored))


def read_file(directory: str, name: str) -> bytes:
    try:
        with open(os.path.join(directory, name), "rb") as fh:
            return fh.read()
    except OSError as exc:
        raise Unreadable(name, None, f"cannot read: {exc.strerror or exc}") from None


def check_snapshot(directory: str, name: str) -> None:
    """The snapshot's framing as Kafka's reader expects it, or :class:`Unreadable`."""
    try:
        read_snapshot(OsFS(), os.path.join(directory, name))
    except SnapshotError as exc:
        raise Unreadable(name, exc.position, exc.why) from None


def batches(name: str, data: bytes) -> Iterator[tuple[RecordBatch, int]]:
    """Every batch of a file with its byte position; a bad one raises :class:`Unreadable`."""
    try:
        for pos, batch in iter_batches(data):
            yield batch, pos
    except (CorruptBatchError, UnsupportedBatchError) as exc:
        raise Unreadable(name, exc.position, exc.why) from None


def _uvarint(data: bytes, p: int) -> tuple[int, int]:
    n = shift = 0
    while True:
        b = data[p]
        p += 1
        n |= (b & 0x7F) << shift
        if not b & 0x80:
            return n, p
        shift += 7


def _varint(data: bytes, p: int) -> tuple[int, int]:
    z, p = _uvarint(data, p)
    return (z >> 1) ^ -(z & 1), p


def value_positions(data: bytes, batch_pos: int, count: int) -> list[int]:
    """The file position of each record's value in an uncompressed batch that decoded (so its
    varints are sound): walk length, attributes, timestamp, offset delta, key, value length."""
    out, p = [], batch_pos + HEADER_SIZE
    for _ in range(count):
        length, p = _varint(data, p)
        end = p + length
        q = p + 1
        _, q = _uvarint(data, q)  # timestampDelta
        _, q = _uvarint(data, q)  # offsetDelta
        klen, q = _varint(data, q)
        q += max(klen, 0)
        _, q = _varint(data, q)  # valueLength
        out.append(q)
        p = end
    return out


def _control_name(key: bytes | None) -> str:
    """The control type of a control record's key (version int16, type int16)."""
    if key is None or len(key) < 4:
        return "unknown control record"
    t = int.from_bytes(key[2:4], "big", signed=True)
    return ControlType(t).name if t in ControlType._value2member_map_ else f"control type {t}"


def _compressed(batch: RecordBatch) -> bool:
    return batch.compression not in (0, "none")


def records(name: str, data: bytes, batch: RecordBatch, pos: int,
            controls: Counter) -> Iterator[tuple[MetadataRecord, int]]:
    """The metadata records of one batch with their offsets; control records are counted in
    ``controls``. A record that does not decode raises :class:`Unreadable` at the position the
    codec names (in a compressed batch, the batch's own position)."""
    if batch.is_control:
        for rec in batch.records:
            controls[_control_name(rec.key)] += 1
        return
    bases = [pos] * len(batch.records) if _compressed(batch) else value_positions(data, pos, len(batch.records))
    for rec, base in zip(batch.records, bases):
        offset = batch.base_offset + rec.offset_delta
        if rec.value is None:
            raise Unreadable(name, base, f"record at offset {offset} has a null value")
        try:
            record = decode_metadata(rec.value, base=0 if _compressed(batch) else base)
        except SchemaError as exc:
            where = exc.position if not _compressed(batch) else pos
            raise Unreadable(name, where, f"record at offset {offset}: {exc.why}") from None
        yield record, offset
