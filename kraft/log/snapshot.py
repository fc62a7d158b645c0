"""KRaft snapshot files (``.checkpoint``), named and framed as Kafka writes them.

Name (Kafka's ``Snapshots.filenameFromSnapshotId``): the snapshot's end offset as 20 digits, ``-``,
its epoch as 10 digits, then ``.checkpoint``; a snapshot being written is ``….checkpoint.part``
and one marked for deletion ``….checkpoint.deleted`` (``Snapshots.parse`` reads all three).
``00000000000000000100-0000000003.checkpoint`` holds the state up to offset 99 of epoch 3.

Content (``RecordsSnapshotWriter``): record batches whose offsets start at 0. The first batch is
a control batch whose first record is a ``SnapshotHeaderRecord`` (control type 3); the last is a
control batch holding a ``SnapshotFooterRecord`` (control type 4); data batches in between. The
writer writes the ``.part`` file, fsyncs it and renames it into place (``FileRawSnapshotWriter
.freeze``). The reader checks the name and that framing, as ``RecordsSnapshotReader`` checks the
header; it also insists on the footer, which is what shows a snapshot was written to the end.

Header and footer values are flexible messages of version 0: ``SnapshotHeaderRecord`` is Version
int16, LastContainedLogTimestamp int64, tagged fields; ``SnapshotFooterRecord`` is Version int16,
tagged fields (``clients/src/main/resources/common/message/SnapshotHeaderRecord.json`` and
``SnapshotFooterRecord.json``).
"""

from __future__ import annotations

import re
import struct
from collections.abc import Iterable, Sequence

import attrs

from .fs import FileSystem, join
from .codec import SchemaError
from .control import ControlType, decode_control
from .records import CorruptBatchError, Record, RecordBatch, UnsupportedBatchError, control_batch, iter_batches

__all__ = [
    "DELETE_SUFFIX",
    "PARTIAL_SUFFIX",
    "SUFFIX",
    "Snapshot",
    "SnapshotError",
    "SnapshotId",
    "SnapshotPath",
    "parse_snapshot_path",
    "read_snapshot",
    "snapshot_filename",
    "write_snapshot",
]

SUFFIX = ".checkpoint"
PARTIAL_SUFFIX = SUFFIX + ".part"
DELETE_SUFFIX = SUFFIX + ".deleted"
_NAME_RE = re.compile(r"^(\d{20})-(\d{10})")


@attrs.frozen(order=True)
class SnapshotId:
    """Kafka's ``OffsetAndEpoch`` of a snapshot: it holds every offset < ``end_offset``."""

    end_offset: int
    epoch: int


@attrs.frozen
class SnapshotPath:
    path: str
    snapshot_id: SnapshotId
    partial: bool
    deleted: bool


class SnapshotError(ValueError):
    """A snapshot file that is not what Kafka writes: ``path``, byte ``position``, ``why``."""

    def __init__(self, path: str, position: int, why: str) -> None:
        self.path = path
        self.position = position
        self.why = why
        super().__init__(f"{path}: invalid snapshot at byte position {position}: {why}")


def snapshot_filename(snapshot_id: SnapshotId) -> str:
    """The name without suffix: ``%020d-%010d`` of end offset and epoch."""
    return f"{snapshot_id.end_offset:020d}-{snapshot_id.epoch:010d}"


def parse_snapshot_path(path: str) -> SnapshotPath | None:
    """``Snapshots.parse``: the id and state of a snapshot file name, None if it is not one."""
    name = path.rsplit("/", 1)[-1]
    partial, deleted = name.endswith(PARTIAL_SUFFIX), name.endswith(DELETE_SUFFIX)
    if not (partial or deleted or name.endswith(SUFFIX)):
        return None
    m = _NAME_RE.match(name)
    if m is None:
        return None
    return SnapshotPath(path, SnapshotId(int(m.group(1)), int(m.group(2))), partial, deleted)


def snapshot_batches(
    snapshot_id: SnapshotId,
    data: Iterable[Sequence[Record]],
    *,
    last_contained_log_timestamp: int = 0,
    timestamp: int = 0,
    header_records: Sequence[tuple[ControlType, dict]] = (),
) -> list[RecordBatch]:
    """The batches of a snapshot: the header batch (the SnapshotHeaderRecord, then
    ``header_records``: the KRaftVersion and Voters records ``RecordsSnapshotWriter.Builder.build``
    puts there), one data batch per sequence of records (offset deltas are renumbered 0, 1, ...),
    the footer; offsets from 0, every batch of the snapshot's epoch."""
    epoch = snapshot_id.epoch
    header = [(ControlType.SNAPSHOT_HEADER, {"lastContainedLogTimestamp": last_contained_log_timestamp}), *header_records]
    out = [control_batch(0, epoch, header, timestamp)]
    offset = out[0].next_offset
    for records in data:
        recs = [attrs.evolve(r, offset_delta=i) for i, r in enumerate(records)]
        if not recs:
            continue
        out.append(RecordBatch(offset, epoch, recs, first_timestamp=timestamp, max_timestamp=timestamp))
        offset += len(recs)
    out.append(control_batch(offset, epoch, [(ControlType.SNAPSHOT_FOOTER, {})], timestamp))
    return out


def write_snapshot(
    fs: FileSystem,
    directory: str,
    snapshot_id: SnapshotId,
    data: Iterable[Sequence[Record]],
    *,
    last_contained_log_timestamp: int = 0,
    timestamp: int = 0,
    header_records: Sequence[tuple[ControlType, dict]] = (),
) -> str:
    """Write a snapshot as ``RecordsSnapshotWriter`` + ``freeze`` do: ``.part`` file, fsync,
    rename to ``.checkpoint``, fsync the directory. Returns the final path."""
    batches = snapshot_batches(snapshot_id, data, last_contained_log_timestamp=last_contained_log_timestamp,
                               timestamp=timestamp, header_records=header_records)
    fs.makedirs(directory)
    final = join(directory, snapshot_filename(snapshot_id) + SUFFIX)
    part = join(directory, snapshot_filename(snapshot_id) + PARTIAL_SUFFIX)
    fs.write_bytes(part, b"".join(b.encode() for b in batches))
    fs.fsync(part)
    fs.rename(part, final)
    fs.fsync_dir(directory)
    return final


@attrs.frozen
class Snapshot:
    """A snapshot read and checked: its id, the header's timestamp, and every batch (header
    and footer batches included: the header batch may carry KRaftVersion and Voters records)."""

    path: str
    snapshot_id: SnapshotId
    last_contained_log_timestamp: int
    batches: tuple[RecordBatch, ...]

    @property
    def data_batches(self) -> list[RecordBatch]:
        return [b for b in self.batches if not b.is_control]

    @property
    def records(self) -> list[Record]:
        """The data records, in order."""
        return [r for b in self.data_batches for r in b.records]


def _decode_all(data: bytes, path: str) -> list[tuple[int, RecordBatch]]:
    out: list[tuple[int, RecordBatch]] = []
    try:
        for pos, batch in iter_batches(data):
            expected = out[-1][1].next_offset if out else 0
            if batch.base_offset != expected:
                raise SnapshotError(path, pos, f"batch base offset {batch.base_offset}, expected {expected}")
            out.append((pos, batch))
    except (CorruptBatchError, UnsupportedBatchError) as exc:
        raise SnapshotError(path, exc.position, exc.why) from None
    return out


def _control_kind(batch: RecordBatch, record: Record) -> int | None:
    if not batch.is_control or record.key is None or len(record.key) < 4:
        return None
    return struct.unpack(">h", record.key[2:4])[0]


def _header_timestamp(path: str, pos: int, batch: RecordBatch) -> int:
    if not batch.records or _control_kind(batch, batch.records[0]) != ControlType.SNAPSHOT_HEADER:
        raise SnapshotError(path, pos, "the first batch is not a control batch starting with a SnapshotHeaderRecord")
    rec = batch.records[0]
    try:
        _, _, fields = decode_control(rec.key, rec.value)
    except SchemaError as exc:
        raise SnapshotError(path, pos, f"SnapshotHeaderRecord: {exc}") from None
    return fields["lastContainedLogTimestamp"]


def _check_footer(path: str, located: list[tuple[int, RecordBatch]]) -> None:
    pos, last = located[-1]
    if len(located) < 2 or not last.records or _control_kind(last, last.records[-1]) != ControlType.SNAPSHOT_FOOTER:
        raise SnapshotError(path, pos, "the last batch is not a control batch ending with a SnapshotFooterRecord (an incomplete snapshot)")
    for p, b in located[:-1]:
        if any(_control_kind(b, r) == ControlType.SNAPSHOT_FOOTER for r in b.records):
            raise SnapshotError(path, p, "a SnapshotFooterRecord before the last batch")


def read_snapshot(fs: FileSystem, path: str) -> Snapshot:
    """Read and check a ``.checkpoint`` file: the name, every batch, the header first and the
    footer last. Raises :class:`SnapshotError` naming the byte position."""
    parsed = parse_snapshot_path(path)
    if parsed is None:
        raise SnapshotError(path, 0, "not a snapshot file name (20-digit end offset, '-', 10-digit epoch, .checkpoint)")
    located = _decode_all(fs.read_bytes(path), path)
    if not located:
        raise SnapshotError(path, 0, "empty snapshot: no SnapshotHeaderRecord")
    ts = _header_timestamp(path, located[0][0], located[0][1])
    _check_footer(path, located)
    return Snapshot(path, parsed.snapshot_id, ts, tuple(b for _, b in located))
