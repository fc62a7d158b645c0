"""A Kafka-style log: segment files of v2 record batches, recovery, and the leader-epoch lookup.

Segments are named by the base offset of their first batch, 20 digits zero-padded, ``.log``
(``00000000000000000000.log``), as Kafka names them. A new segment starts when the active one
would grow past ``segment_bytes``.

Durability: ``append`` writes the batch to the file system's volatile layer; nothing is durable
until ``flush()`` fsyncs the dirty segments (``flushed_offset`` says how far). ``truncate_to`` is
made durable at once (without syncing unflushed bytes before the cut): the KRaft spec's ``flushedOffset`` model assumes a
truncation survives a crash.

Recovery (``Log.open``) scans every batch of every segment, validating framing, CRC-32C and
offsets. Only an invalid *tail* (nothing valid after it, in that segment or any later one) is
treated as a torn write: it is cut off and reported in the :class:`RecoveryReport`. An invalid
batch followed by valid data is corruption and raises :class:`CorruptBatchError` with the file and
byte position; nothing is ever skipped.

Offsets must be contiguous: every batch starts where the previous one ended and the first batch
of a segment starts at the segment's base offset. Kafka tolerates gaps (compaction), but this log
never compacts, and the check is what catches a damaged ``baseOffset`` (which Kafka's CRC does
not cover).

All batches are kept decoded in memory (``read`` never touches the file system), which is what
makes the simulator's thousands of appends and reads per second cheap. ``read_from_disk`` reads
the segment files as Kafka does, through the offset index.

Every segment has Kafka's ``.index`` and ``.timeindex`` beside it (kraft/log/index.py): written as
batches are appended, fsynced by ``flush``, cut by ``truncate_to``, closed on a roll, and checked
by recovery against the segment's batches, which rewrites a missing or wrong index and deletes an
index without a segment (``RecoveryReport.indexes``). A lost index never loses data.
"""

from __future__ import annotations

import bisect
import re
import struct

import attrs

from .fs import FileSystem, join
from .index import (
    DEFAULT_INDEX_INTERVAL_BYTES,
    OFFSET_ENTRY_SIZE,
    TIME_ENTRY_SIZE,
    CorruptIndexError,
    IndexBuilder,
    build_indexes,
    decode_offset_index,
    encode_offset_index,
    encode_time_index,
    index_name,
    lookup_position,
    timeindex_name,
)
from .records import HEADER_SIZE, LENGTH_OFFSET, LOG_OVERHEAD, MAGIC, MIN_BATCH_LENGTH, CorruptBatchError, RecordBatch, TruncatedBatchError, UnsupportedBatchError

LAST_OFFSET_DELTA_OFFSET = 23

__all__ = ["Cut", "IndexRebuild", "Log", "RecoveryReport", "segment_name", "DEFAULT_SEGMENT_BYTES"]

DEFAULT_SEGMENT_BYTES = 1 << 20
SEGMENT_RE = re.compile(r"^(\d{20})\.log$")
INDEX_RE = re.compile(r"^(\d{20})\.(index|timeindex)$")


def segment_name(base_offset: int) -> str:
    return f"{base_offset:020d}.log"


@attrs.frozen
class Cut:
    """Bytes removed from the tail of one segment by recovery."""

    segment: str
    position: int
    bytes_cut: int
    reason: str


@attrs.frozen
class IndexRebuild:
    """An index file recovery rewrote (``action`` "rebuilt") or deleted (``action``
    "removed", an index without its segment), and why."""

    path: str
    action: str
    reason: str


@attrs.frozen
class RecoveryReport:
    """What ``Log.open`` found. ``bytes_cut > 0`` means a torn/corrupt tail was removed at
    ``position`` of ``segment`` for ``reason`` (the first cut; ``cuts`` lists them all: a torn
    write can leave partial data in the last segment and in the one before it)."""

    directory: str
    segments: int = 0
    batches: int = 0
    end_offset: int = 0
    cuts: tuple[Cut, ...] = ()
    removed_segments: tuple[str, ...] = ()
    ignored_files: tuple[str, ...] = ()
    indexes: tuple[IndexRebuild, ...] = ()

    @property
    def segment(self) -> str | None:
        return self.cuts[0].segment if self.cuts else None

    @property
    def position(self) -> int | None:
        return self.cuts[0].position if self.cuts else None

    @property
    def reason(self) -> str | None:
        return self.cuts[0].reason if self.cuts else None

    @property
    def bytes_cut(self) -> int:
        return sum(c.bytes_cut for c in self.cuts)

    @property
    def truncated(self) -> bool:
        return self.bytes_cut > 0 or bool(self.removed_segments)

    def __str__(self) -> str:
        s = f"{self.directory}: {self.segments} segment(s), {self.batches} batch(es), end offset {self.end_offset}"
        for c in self.cuts:
            s += f"; cut {c.bytes_cut} byte(s) at position {c.position} of {c.segment}: {c.reason}"
        if self.removed_segments:
            s += f"; removed segment(s) {', '.join(self.removed_segments)}"
        if self.ignored_files:
            s += f"; ignored non-segment file(s) {', '.join(self.ignored_files)}"
        for r in self.indexes:
            s += f"; {r.action} index {r.path}: {r.reason}"
        return s


@attrs.define
class _Segment:
    base_offset: int
    path: str
    first_index: int  # index of its first batch in Log._batches
    size: int = 0
    index: IndexBuilder = attrs.field(factory=IndexBuilder)

    @property
    def index_path(self) -> str:
        return self.path[: -len(".log")] + ".index"

    @property
    def timeindex_path(self) -> str:
        return self.path[: -len(".log")] + ".timeindex"


def _valid_batch_after(data: bytes, start: int) -> int | None:
    """Position of the first decodable batch starting at or after ``start``, else None.
    A candidate needs magic 2 at +16, a plausible length and a matching CRC-32C, so a false
    positive in garbage is about 2**-32 per candidate."""
    n = len(data)
    q = data.find(MAGIC.to_bytes(1, "big"), start + 16)
    while q != -1 and q - 16 + 61 <= n:
        p = q - 16
        length = int.from_bytes(data[p + LENGTH_OFFSET : p + LENGTH_OFFSET + 4], "big", signed=True)
        if length >= MIN_BATCH_LENGTH and p + LOG_OVERHEAD + length <= n:
            try:
                RecordBatch.decode(data, p)
                return p
            except (CorruptBatchError, UnsupportedBatchError):
                pass
        q = data.find(MAGIC.to_bytes(1, "big"), q + 1)
    return None


def _header_length_and_last_offset(head: bytes, path: str, pos: int) -> tuple[int, int]:
    """(total size, last offset) of the batch whose header is ``head``, read at ``pos``."""
    if len(head) < HEADER_SIZE:
        raise TruncatedBatchError(path, pos, f"only {len(head)} bytes left, a batch header needs {HEADER_SIZE}")
    base, length = struct.unpack_from(">qi", head, 0)
    if length < MIN_BATCH_LENGTH:
        raise CorruptBatchError(path, pos, f"batchLength {length} is smaller than the minimum {MIN_BATCH_LENGTH}")
    (delta,) = struct.unpack_from(">i", head, LAST_OFFSET_DELTA_OFFSET)
    return LOG_OVERHEAD + length, base + delta


class Log:
    """Segments of record batches in ``directory`` of ``fs`` (docs/contracts.md section 3)."""

    def __init__(
        self,
        fs: FileSystem,
        directory: str,
        segment_bytes: int = DEFAULT_SEGMENT_BYTES,
        *,
        index_interval_bytes: int = DEFAULT_INDEX_INTERVAL_BYTES,
        _recovering: bool = False,
    ) -> None:
        """An empty log in ``directory``. A directory that already holds segments must be opened
        with :meth:`open` (which recovers them); constructing over it is refused rather than
        silently overwriting data."""
        if segment_bytes < 64:
            raise ValueError("segment_bytes must be at least 64")
        self.fs = fs
        self.directory = directory.rstrip("/") or directory
        self.segment_bytes = segment_bytes
        self.index_interval_bytes = index_interval_bytes
        self._segments: list[_Segment] = []
        self._batches: list[RecordBatch] = []
        self._positions: list[int] = []  # byte position of each batch in its segment
        self._sizes: list[int] = []
        self._last: list[int] = []  # last offset of each batch, for bisect
        self._start_offset = 0
        self._end_offset = 0
        self._flushed_offset = 0
        self._dirty: set[str] = set()
        self._dir_dirty = False
        # leader-epoch cache as Kafka keeps it: (epoch, start offset), epochs strictly increasing
        self._epochs: list[tuple[int, int]] = []
        fs.makedirs(self.directory)
        if not _recovering and any(SEGMENT_RE.match(n) for n in fs.listdir(self.directory)):
            raise ValueError(f"{self.directory} already holds log segments: use Log.open(fs, directory) to recover them")

    # ------------------------------------------------------------------------------ open
    @classmethod
    def open(
        cls, fs: FileSystem, directory: str, segment_bytes: int = DEFAULT_SEGMENT_BYTES, *, index_interval_bytes: int = DEFAULT_INDEX_INTERVAL_BYTES
    ) -> tuple["Log", RecoveryReport]:
        """Open (or create) the log in ``directory``, recovering it: segments as the module
        says, then each segment's ``.index`` and ``.timeindex``, rebuilt when missing or not
        what the segment's batches give (and reported). Raises :class:`CorruptBatchError` for
        corruption that is not a torn tail."""
        log = cls(fs, directory, segment_bytes, index_interval_bytes=index_interval_bytes, _recovering=True)
        names = fs.listdir(log.directory)
        segs: list[tuple[int, str]] = []
        ignored: list[str] = []
        index_files: list[str] = []
        for name in names:
            m = SEGMENT_RE.match(name)
            if m:
                segs.append((int(m.group(1)), name))
            elif name.endswith(".log"):
                raise CorruptBatchError(join(log.directory, name), 0, "a .log file whose name is not a 20-digit base offset")
            elif INDEX_RE.match(name):
                index_files.append(name)
            else:
                ignored.append(name)
        segs.sort()
        cuts: list[Cut] = []
        removed: list[str] = []
        expected: int | None = None
        datas = [fs.read_bytes(join(log.directory, name)) for _, name in segs]
        for si, (base, name) in enumerate(segs):
            path = join(log.directory, name)
            data = datas[si]
            if expected is not None and base != expected and data and _valid_batch_after(data, 0) is None:
                # a segment created by a roll whose first write was torn: nothing valid in it
                cuts.append(Cut(path, 0, len(data), "torn write: no valid batch in a segment past the end of the log"))
                fs.remove(path)
                removed.append(path)
                continue
            if expected is not None and base != expected and data:
                raise CorruptBatchError(path, 0, f"segment base offset {base} does not continue the previous segment, which ends at offset {expected}")
            seg = log._new_segment(base, path)
            pos = 0
            next_offset = base
            while pos < len(data):
                try:
                    batch, end = RecordBatch.decode(data, pos)
                except UnsupportedBatchError as exc:
                    raise UnsupportedBatchError(path, pos, exc.why) from None
                except CorruptBatchError as exc:
                    after = _valid_batch_after(data, pos + 1)
                    later = next((segs[j][1] for j in range(si + 1, len(segs)) if _valid_batch_after(datas[j], 0) is not None), None)
                    if later or after is not None:
                        where = f"a valid batch at position {after}" if after is not None else f"valid data in the later segment {later}"
                        raise CorruptBatchError(path, pos, f"{exc.why}; followed by {where}, so this is not a torn tail") from None
                    kind = "torn write" if isinstance(exc, TruncatedBatchError) else "invalid tail"
                    cuts.append(Cut(path, pos, len(data) - pos, f"{kind}: {exc.why}"))
                    fs.truncate_durably(path, pos)
                    data = data[:pos]
                    break
                if batch.base_offset != next_offset:
                    raise CorruptBatchError(path, pos, f"batch base offset {batch.base_offset}, expected {next_offset} (offsets must be contiguous and increasing)")
                log._add(batch, pos, end - pos)
                next_offset = batch.next_offset
                pos = end
            seg.size = len(data)
            if not data and (expected is not None and base != expected):
                # an empty segment that does not continue the log (e.g. after a cut): drop it
                fs.remove(path)
                removed.append(path)
                continue
            log._segments.append(seg)
            expected = next_offset
        if log._segments:
            log._start_offset = log._segments[0].base_offset
        log._end_offset = expected if expected is not None else 0
        # what recovery leaves on disk is durable (Kafka flushes recovered segments too)
        for seg in log._segments:
            fs.fsync(seg.path)
        if removed or cuts:
            fs.fsync_dir(log.directory)
        log._flushed_offset = log._end_offset
        rebuilt = log._recover_indexes(index_files)
        report = RecoveryReport(
            directory=log.directory,
            segments=len(log._segments),
            batches=len(log._batches),
            end_offset=log._end_offset,
            cuts=tuple(cuts),
            removed_segments=tuple(removed),
            ignored_files=tuple(ignored),
            indexes=tuple(rebuilt),
        )
        return log, report

    def _new_segment(self, base: int, path: str) -> _Segment:
        return _Segment(base, path, len(self._batches), index=IndexBuilder(self.index_interval_bytes))

    def _segment_span(self, k: int) -> range:
        """Indexes into ``_batches`` of the batches of segment ``k``."""
        end = self._segments[k + 1].first_index if k + 1 < len(self._segments) else len(self._batches)
        return range(self._segments[k].first_index, end)

    def _recover_indexes(self, index_files: list[str]) -> list[IndexRebuild]:
        """Check every segment's index files against its batches (what ``LogSegment.recover``
        would write); rewrite the ones that differ and delete the ones without a segment."""
        out: list[IndexRebuild] = []
        live = set()
        for k, seg in enumerate(self._segments):
            span = self._segment_span(k)
            triples = ((self._positions[i], self._last[i], self._batches[i].max_timestamp) for i in span)
            active = k == len(self._segments) - 1
            seg.index, built = build_indexes(triples, active=active, interval_bytes=self.index_interval_bytes)
            expected = {
                seg.index_path: encode_offset_index(seg.base_offset, built.offsets),
                seg.timeindex_path: encode_time_index(seg.base_offset, built.times),
            }
            for path, data in expected.items():
                live.add(path)
                why = self._index_differs(path, data)
                if why is not None:
                    self.fs.write_bytes(path, data)
                    self.fs.fsync(path)
                    out.append(IndexRebuild(path, "rebuilt", why))
        for name in index_files:
            path = join(self.directory, name)
            if path not in live:
                self.fs.remove(path)
                out.append(IndexRebuild(path, "removed", "no segment of that base offset"))
        if out:
            self.fs.fsync_dir(self.directory)
        return out

    def _index_differs(self, path: str, expected: bytes) -> str | None:
        if not self.fs.exists(path):
            return "missing"
        data = self.fs.read_bytes(path)
        if data == expected:
            return None
        size = TIME_ENTRY_SIZE if path.endswith(".timeindex") else OFFSET_ENTRY_SIZE
        if len(data) % size:
            return f"{len(data)} bytes, not a multiple of the entry size {size}"
        n, m = len(data) // size, len(expected) // size
        first = next((j for j in range(min(n, m)) if data[j * size : (j + 1) * size] != expected[j * size : (j + 1) * size]), None)
        if first is not None:
            return f"entry {first} (byte position {first * size}) does not match the segment's batches"
        return f"{n} entries, the segment's batches give {m}"

    def _add(self, batch: RecordBatch, pos: int, size: int) -> None:
        self._batches.append(batch)
        self._positions.append(pos)
        self._sizes.append(size)
        self._last.append(batch.last_offset)
        e = batch.partition_leader_epoch
        # Kafka's LeaderEpochFileCache.assign: only a higher epoch starts a new entry
        if e >= 0 and (not self._epochs or e > self._epochs[-1][0]):
            self._epochs.append((e, batch.base_offset))

    # ------------------------------------------------------------------------------ writes
    def append(self, batch: RecordBatch) -> None:
        """Append ``batch`` (its ``base_offset`` must be the log end offset). Not durable until
        :meth:`flush`."""
        if batch.base_offset != self._end_offset:
            raise ValueError(f"append at offset {batch.base_offset}, but the log end offset is {self._end_offset}")
        raw = batch.encode()
        seg = self._segments[-1] if self._segments else None
        if seg is None or (seg.size > 0 and seg.size + len(raw) > self.segment_bytes):
            seg = self._roll(batch.base_offset)
        self.fs.append(seg.path, raw)
        self._index_batch(seg, batch)
        self._add(batch, seg.size, len(raw))
        seg.size += len(raw)
        self._dirty.add(seg.path)
        self._end_offset = batch.next_offset

    def _roll(self, base_offset: int) -> _Segment:
        """Start a segment at ``base_offset``; the previous one gets its closing time-index
        entry (``LogSegment.onBecomeInactiveSegment``)."""
        if self._segments:
            self._close_time_index(self._segments[-1])
        seg = self._new_segment(base_offset, join(self.directory, segment_name(base_offset)))
        for path in (seg.path, seg.index_path, seg.timeindex_path):
            if self.fs.exists(path):  # cannot happen after open(); never overwrite data
                raise ValueError(f"{path} exists already; refusing to overwrite it")
        self._segments.append(seg)
        self._dir_dirty = True
        for path in (seg.index_path, seg.timeindex_path):
            self.fs.write_bytes(path, b"")
            self._dirty.add(path)
        return seg

    def _close_time_index(self, seg: _Segment) -> None:
        if seg.index.close():
            self.fs.append(seg.timeindex_path, encode_time_index(seg.base_offset, seg.index.times[-1:]))
            self._dirty.add(seg.timeindex_path)

    def _index_batch(self, seg: _Segment, batch: RecordBatch) -> None:
        """The index entries ``LogSegment.append`` makes for a batch written at ``seg.size``."""
        times = len(seg.index.times)
        if not seg.index.add(seg.size, batch.last_offset, batch.max_timestamp):
            return
        self.fs.append(seg.index_path, encode_offset_index(seg.base_offset, seg.index.offsets[-1:]))
        self._dirty.add(seg.index_path)
        if len(seg.index.times) > times:
            self.fs.append(seg.timeindex_path, encode_time_index(seg.base_offset, seg.index.times[-1:]))
            self._dirty.add(seg.timeindex_path)

    def flush(self) -> None:
        """Make everything appended so far durable (fsync the dirty segments and, after a
        roll, the directory)."""
        for seg in self._segments:
            for path in (seg.path, seg.index_path, seg.timeindex_path):
                if path in self._dirty:
                    self.fs.fsync(path)
        self._dirty.clear()
        if self._dir_dirty:
            self.fs.fsync_dir(self.directory)
            self._dir_dirty = False
        self._flushed_offset = self._end_offset

    def truncate_to(self, offset: int) -> None:
        """Remove every batch that contains an offset >= ``offset``. As in Kafka, a batch that
        straddles ``offset`` goes entirely, so the end offset can end up below ``offset``. The
        truncation is durable when this returns."""
        i = bisect.bisect_left(self._last, offset)
        if i >= len(self._batches):
            return
        new_end = self._batches[i].base_offset
        while self._segments and self._segments[-1].first_index > i:
            seg = self._segments.pop()
            for path in (seg.path, seg.index_path, seg.timeindex_path):
                if self.fs.exists(path):
                    self.fs.remove(path)
                self._dirty.discard(path)
            self._dir_dirty = True
        # the segment holding batch i keeps what precedes it (possibly nothing: an empty
        # segment whose name, the base offset of batch i, is exactly the new end offset)
        seg = self._segments[-1]
        seg.size = self._positions[i]
        self.fs.truncate_durably(seg.path, seg.size)
        del self._batches[i:], self._positions[i:], self._sizes[i:], self._last[i:]
        self._truncate_indexes(seg)
        if self._dir_dirty:
            self.fs.fsync_dir(self.directory)
            self._dir_dirty = False
        self._end_offset = new_end
        self._flushed_offset = min(self._flushed_offset, new_end)
        while self._epochs and self._epochs[-1][1] >= new_end:
            self._epochs.pop()

    def delete_segments_before(self, offset: int) -> int:
        """Delete the leading segments whose batches all lie below ``offset``, never the active
        (last) one (``UnifiedLog.deleteOldSegments`` after the log start offset moved past them).
        The log start offset becomes the base of the first segment left.  Returns how many
        segments went; durable when this returns."""
        gone = 0
        while len(self._segments) > 1 and self._segments[1].base_offset <= offset:
            seg = self._segments.pop(0)
            for path in (seg.path, seg.index_path, seg.timeindex_path):
                if self.fs.exists(path):
                    self.fs.remove(path)
                self._dirty.discard(path)
            gone += 1
        if gone:
            cut = self._segments[0].first_index
            del self._batches[:cut], self._positions[:cut], self._sizes[:cut], self._last[:cut]
            for seg in self._segments:
                seg.first_index -= cut
            self._start_offset = self._segments[0].base_offset
            self.fs.fsync_dir(self.directory)
        return gone

    def truncate_fully_and_start_at(self, offset: int) -> None:
        """Remove every segment and start the log, empty, at ``offset``: one empty segment of that
        base offset, durable when this returns (``UnifiedLog.truncateFullyAndStartAt``)."""
        for seg in self._segments:
            for path in (seg.path, seg.index_path, seg.timeindex_path):
                if self.fs.exists(path):
                    self.fs.remove(path)
        self._segments = []
        self._batches, self._positions, self._sizes, self._last = [], [], [], []
        self._dirty.clear()
        self._epochs = []
        self._start_offset = self._end_offset = self._flushed_offset = offset
        seg = self._roll(offset)
        self.fs.write_bytes(seg.path, b"")
        for path in (seg.path, seg.index_path, seg.timeindex_path):
            self.fs.fsync(path)
        self._dirty.clear()
        self.fs.fsync_dir(self.directory)
        self._dir_dirty = False

    def _truncate_indexes(self, seg: _Segment) -> None:
        """Cut the now-active last segment's indexes to the entries of its remaining batches
        (``OffsetIndex.truncateTo``/``TimeIndex.truncateTo``); the closing time-index entry of a
        formerly rolled segment goes too, since the segment is active again. Durable at once."""
        span = self._segment_span(len(self._segments) - 1)
        triples = ((self._positions[j], self._last[j], self._batches[j].max_timestamp) for j in span)
        seg.index, built = build_indexes(triples, active=True, interval_bytes=self.index_interval_bytes)
        self.fs.truncate_durably(seg.index_path, len(built.offsets) * OFFSET_ENTRY_SIZE)
        self.fs.truncate_durably(seg.timeindex_path, len(built.times) * TIME_ENTRY_SIZE)

    # ------------------------------------------------------------------------------ reads
    def read(self, from_offset: int, max_batches: int | None = None) -> list[RecordBatch]:
        """Batches containing offsets >= ``from_offset``, in order (from memory)."""
        i = bisect.bisect_left(self._last, from_offset)
        j = len(self._batches) if max_batches is None else min(len(self._batches), i + max_batches)
        return self._batches[i:j]

    def read_from_disk(self, from_offset: int, max_bytes: int | None = None) -> list[RecordBatch]:
        """Batches containing offsets >= ``from_offset``, read from the segment files the way
        Kafka reads them (``LogSegment.translateOffset``): the offset index gives the position
        of the last entry <= ``from_offset``, batch headers are scanned forward from there, and
        batches are read from the first one holding ``from_offset`` on, up to ``max_bytes``
        (always at least one batch)."""
        if not self._segments or from_offset >= self._end_offset:
            return []
        k = max(0, bisect.bisect_right([s.base_offset for s in self._segments], from_offset) - 1)
        out: list[RecordBatch] = []
        used = 0
        for seg in self._segments[k:]:
            index = decode_offset_index(self.fs.read_bytes(seg.index_path), seg.base_offset, seg.index_path)
            pos = lookup_position(index, from_offset)
            while pos < seg.size:
                head = self.fs.read_at(seg.path, pos, HEADER_SIZE)
                length, last = _header_length_and_last_offset(head, seg.path, pos)
                if last < from_offset:
                    pos += length
                    continue
                if max_bytes is not None and out and used + length > max_bytes:
                    return out
                raw = head + self.fs.read_at(seg.path, pos + len(head), length - len(head))
                try:
                    batch, _ = RecordBatch.decode(raw)
                except CorruptBatchError as exc:
                    raise type(exc)(seg.path, pos, exc.why) from None
                out.append(batch)
                used += length
                pos += length
        return out

    @property
    def end_offset(self) -> int:
        return self._end_offset

    @property
    def start_offset(self) -> int:
        return self._start_offset

    @property
    def flushed_offset(self) -> int:
        return self._flushed_offset

    @property
    def last_epoch(self) -> int:
        """Leader epoch of the last batch (0 for an empty log)."""
        return self._batches[-1].partition_leader_epoch if self._batches else 0

    @property
    def segments(self) -> list[str]:
        return [s.path for s in self._segments]

    def batch_position(self, offset: int) -> tuple[str, int]:
        """(segment path, byte position) of the batch that holds ``offset``."""
        i = bisect.bisect_left(self._last, offset)
        if i >= len(self._batches) or self._batches[i].base_offset > offset:
            raise KeyError(offset)
        k = bisect.bisect_right([s.first_index for s in self._segments], i) - 1
        return self._segments[k].path, self._positions[i]

    def epoch_end_offset(self, epoch: int) -> tuple[int, int]:
        """Kafka's leader-epoch lookup (``LeaderEpochFileCache.endOffsetFor``, used for KIP-101
        truncation and KIP-595 fetch divergence): the largest epoch <= ``epoch`` in the log and
        its end offset (the start offset of the next higher epoch, or the log end offset if it
        is the latest). ``(-1, -1)`` if the log has no epoch <= ``epoch``."""
        k = bisect.bisect_right(self._epochs, (epoch, float("inf"))) - 1
        if k < 0:
            return (-1, -1)
        e = self._epochs[k][0]
        end = self._epochs[k + 1][1] if k + 1 < len(self._epochs) else self._end_offset
        return (e, end)

    def epochs(self) -> list[tuple[int, int]]:
        """The leader-epoch cache: (epoch, start offset) pairs."""
        return list(self._epochs)
