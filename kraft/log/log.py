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
makes the simulator's thousands of appends and reads per second cheap.
"""

from __future__ import annotations

import bisect
import re

import attrs

from .fs import FileSystem, join
from .records import CorruptBatchError, RecordBatch, TruncatedBatchError, UnsupportedBatchError, MAGIC, LOG_OVERHEAD, LENGTH_OFFSET, MIN_BATCH_LENGTH

__all__ = ["Cut", "Log", "RecoveryReport", "segment_name", "DEFAULT_SEGMENT_BYTES"]

DEFAULT_SEGMENT_BYTES = 1 << 20
SEGMENT_RE = re.compile(r"^(\d{20})\.log$")


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
        return s


@attrs.define
class _Segment:
    base_offset: int
    path: str
    first_index: int  # index of its first batch in Log._batches
    size: int = 0


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


class Log:
    """Segments of record batches in ``directory`` of ``fs`` (docs/contracts.md section 3)."""

    def __init__(self, fs: FileSystem, directory: str, segment_bytes: int = DEFAULT_SEGMENT_BYTES, *, _recovering: bool = False) -> None:
        """An empty log in ``directory``. A directory that already holds segments must be opened
        with :meth:`open` (which recovers them); constructing over it is refused rather than
        silently overwriting data."""
        if segment_bytes < 64:
            raise ValueError("segment_bytes must be at least 64")
        self.fs = fs
        self.directory = directory.rstrip("/") or directory
        self.segment_bytes = segment_bytes
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
    def open(cls, fs: FileSystem, directory: str, segment_bytes: int = DEFAULT_SEGMENT_BYTES) -> tuple["Log", RecoveryReport]:
        """Open (or create) the log in ``directory``, recovering it. Raises
        :class:`CorruptBatchError` for corruption that is not a torn tail."""
        log = cls(fs, directory, segment_bytes, _recovering=True)
        names = fs.listdir(log.directory)
        segs: list[tuple[int, str]] = []
        ignored: list[str] = []
        for name in names:
            m = SEGMENT_RE.match(name)
            if m:
                segs.append((int(m.group(1)), name))
            elif name.endswith(".log"):
                raise CorruptBatchError(join(log.directory, name), 0, "a .log file whose name is not a 20-digit base offset")
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
            seg = _Segment(base, path, len(log._batches))
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
        report = RecoveryReport(
            directory=log.directory,
            segments=len(log._segments),
            batches=len(log._batches),
            end_offset=log._end_offset,
            cuts=tuple(cuts),
            removed_segments=tuple(removed),
            ignored_files=tuple(ignored),
        )
        return log, report

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
            seg = _Segment(batch.base_offset, join(self.directory, segment_name(batch.base_offset)), len(self._batches))
            self._segments.append(seg)
            self._dir_dirty = True
            if self.fs.exists(seg.path):  # cannot happen after open(); never overwrite data
                raise ValueError(f"{seg.path} exists already; refusing to overwrite it")
        self.fs.append(seg.path, raw)
        self._add(batch, seg.size, len(raw))
        seg.size += len(raw)
        self._dirty.add(seg.path)
        self._end_offset = batch.next_offset

    def flush(self) -> None:
        """Make everything appended so far durable (fsync the dirty segments and, after a
        roll, the directory)."""
        for seg in self._segments:
            if seg.path in self._dirty:
                self.fs.fsync(seg.path)
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
            self.fs.remove(seg.path)
            self._dirty.discard(seg.path)
            self._dir_dirty = True
        # the segment holding batch i keeps what precedes it (possibly nothing: an empty
        # segment whose name, the base offset of batch i, is exactly the new end offset)
        seg = self._segments[-1]
        seg.size = self._positions[i]
        self.fs.truncate_durably(seg.path, seg.size)
        del self._batches[i:], self._positions[i:], self._sizes[i:], self._last[i:]
        if self._dir_dirty:
            self.fs.fsync_dir(self.directory)
            self._dir_dirty = False
        self._end_offset = new_end
        self._flushed_offset = min(self._flushed_offset, new_end)
        while self._epochs and self._epochs[-1][1] >= new_end:
            self._epochs.pop()

    # ------------------------------------------------------------------------------ reads
    def read(self, from_offset: int, max_batches: int | None = None) -> list[RecordBatch]:
        """Batches containing offsets >= ``from_offset``, in order (from memory)."""
        i = bisect.bisect_left(self._last, from_offset)
        j = len(self._batches) if max_batches is None else min(len(self._batches), i + max_batches)
        return self._batches[i:j]

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
