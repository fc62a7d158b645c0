"""Kafka's offset index (``.index``) and time index (``.timeindex``) of a log segment.

Layout (Kafka's ``OffsetIndex`` and ``TimeIndex`` in ``storage/.../internals/log``), big-endian:

- ``.index``: entries of 8 bytes, relative offset int32 (offset - segment base offset) then the
  byte position int32 of a batch in the segment. The offset of an entry is the *last* offset of
  the batch that starts at that position (``LogSegment.append`` appends ``largestOffset``).
- ``.timeindex``: entries of 12 bytes, timestamp int64 then relative offset int32: the largest
  batch max-timestamp seen so far in the segment and the last offset of the batch that has it.

When entries are made (``LogSegment.append`` and ``LogSegment.recover``): before a batch is
appended, if more than ``index.interval.bytes`` bytes were appended since the last offset-index
entry (or since the segment start), the batch gets an offset-index entry and the time index is
offered (max timestamp so far, its offset); ``TimeIndex.maybeAppend`` keeps it only if the
timestamp is greater than the last indexed one. When a segment stops being the active one
(``LogSegment.onBecomeInactiveSegment``) the time index is offered the segment's max timestamp once
more, so a rolled segment's time index ends with its largest timestamp.

Kafka preallocates index files (``segment.index.bytes``, 10 MiB) and trims them to their entries
on roll and close (``AbstractIndex.trimToValidSize``). These files are never preallocated: every
file holds exactly its entries, which is what Kafka leaves on disk after a roll or a clean close.
The spacing of entries is computed from batch positions (as ``LogSegment.recover`` does), so a
segment's indexes are a function of its bytes and of whether it is still active; recovery can
therefore check an index file exactly and rebuild it when it differs.
"""

from __future__ import annotations

import bisect
import struct
from collections.abc import Iterable

import attrs

__all__ = [
    "DEFAULT_INDEX_INTERVAL_BYTES",
    "OFFSET_ENTRY_SIZE",
    "TIME_ENTRY_SIZE",
    "CorruptIndexError",
    "IndexBuilder",
    "SegmentIndexes",
    "build_indexes",
    "decode_offset_index",
    "decode_time_index",
    "encode_offset_index",
    "encode_time_index",
    "index_name",
    "lookup_position",
    "offset_index_sanity",
    "time_index_sanity",
    "timeindex_name",
]

DEFAULT_INDEX_INTERVAL_BYTES = 4096  # index.interval.bytes (LogConfig)
OFFSET_ENTRY_SIZE = 8
TIME_ENTRY_SIZE = 12
NO_TIMESTAMP = -1  # RecordBatch.NO_TIMESTAMP

_OFFSET = struct.Struct(">ii")
_TIME = struct.Struct(">qi")
_INT32_MAX = (1 << 31) - 1


def index_name(base_offset: int) -> str:
    return f"{base_offset:020d}.index"


def timeindex_name(base_offset: int) -> str:
    return f"{base_offset:020d}.timeindex"


class CorruptIndexError(ValueError):
    """An index file that cannot be what Kafka writes: ``path``, byte ``position``, ``why``."""

    def __init__(self, path: str | None, position: int, why: str) -> None:
        self.path = path
        self.position = position
        self.why = why
        where = f"{path}: " if path else ""
        super().__init__(f"{where}corrupt index at byte position {position}: {why}")


def _relative(base_offset: int, offset: int) -> int:
    rel = offset - base_offset
    if not 0 <= rel <= _INT32_MAX:
        raise ValueError(f"offset {offset} is not representable relative to base offset {base_offset}")
    return rel


def encode_offset_index(base_offset: int, entries: Iterable[tuple[int, int]]) -> bytes:
    """``.index`` bytes of (offset, position) entries."""
    return b"".join(_OFFSET.pack(_relative(base_offset, o), p) for o, p in entries)


def encode_time_index(base_offset: int, entries: Iterable[tuple[int, int]]) -> bytes:
    """``.timeindex`` bytes of (timestamp, offset) entries."""
    return b"".join(_TIME.pack(t, _relative(base_offset, o)) for t, o in entries)


def _check_length(data: bytes, size: int, path: str | None) -> None:
    if len(data) % size:
        raise CorruptIndexError(path, len(data) - len(data) % size, f"{len(data)} bytes is not a multiple of the entry size {size}")


def decode_offset_index(data: bytes, base_offset: int, path: str | None = None) -> list[tuple[int, int]]:
    """(offset, position) entries; offsets and positions must increase strictly."""
    _check_length(data, OFFSET_ENTRY_SIZE, path)
    out: list[tuple[int, int]] = []
    for pos in range(0, len(data), OFFSET_ENTRY_SIZE):
        rel, position = _OFFSET.unpack_from(data, pos)
        if rel < 0 or position < 0:
            raise CorruptIndexError(path, pos, f"negative relative offset {rel} or position {position}")
        if out and (base_offset + rel <= out[-1][0] or position <= out[-1][1]):
            raise CorruptIndexError(path, pos, f"entry (offset {base_offset + rel}, position {position}) does not follow (offset {out[-1][0]}, position {out[-1][1]})")
        out.append((base_offset + rel, position))
    return out


def decode_time_index(data: bytes, base_offset: int, path: str | None = None) -> list[tuple[int, int]]:
    """(timestamp, offset) entries; timestamps must increase strictly, offsets must not decrease."""
    _check_length(data, TIME_ENTRY_SIZE, path)
    out: list[tuple[int, int]] = []
    for pos in range(0, len(data), TIME_ENTRY_SIZE):
        ts, rel = _TIME.unpack_from(data, pos)
        if rel < 0:
            raise CorruptIndexError(path, pos, f"negative relative offset {rel}")
        if out and (ts <= out[-1][0] or base_offset + rel < out[-1][1]):
            raise CorruptIndexError(path, pos, f"entry (timestamp {ts}, offset {base_offset + rel}) does not follow (timestamp {out[-1][0]}, offset {out[-1][1]})")
        out.append((ts, base_offset + rel))
    return out


def offset_index_sanity(data: bytes, base_offset: int) -> str | None:
    """Kafka's ``OffsetIndex.sanityCheck`` (what decides a rebuild at broker start): why the
    file fails it, or None."""
    n = len(data) // OFFSET_ENTRY_SIZE
    if n and base_offset + _OFFSET.unpack_from(data, (n - 1) * OFFSET_ENTRY_SIZE)[0] < base_offset:
        return f"the last offset is less than the base offset {base_offset}"
    if len(data) % OFFSET_ENTRY_SIZE:
        return f"found {len(data)} bytes which is not a multiple of {OFFSET_ENTRY_SIZE}"
    return None


def time_index_sanity(data: bytes, base_offset: int) -> str | None:
    """Kafka's ``TimeIndex.sanityCheck``: why the file fails it, or None."""
    n = len(data) // TIME_ENTRY_SIZE
    if n:
        first_ts = _TIME.unpack_from(data, 0)[0]
        last_ts, last_rel = _TIME.unpack_from(data, (n - 1) * TIME_ENTRY_SIZE)
        if last_ts < first_ts:
            return f"the last timestamp {last_ts} is less than the first timestamp {first_ts}"
        if base_offset + last_rel < base_offset:
            return f"the last offset is less than the base offset {base_offset}"
    if len(data) % TIME_ENTRY_SIZE:
        return f"found {len(data)} bytes which is not a multiple of {TIME_ENTRY_SIZE}"
    return None


def lookup_position(entries: list[tuple[int, int]], target: int) -> int:
    """``OffsetIndex.lookup``: the position of the last entry whose offset is <= ``target``, or
    0 (the segment start) when there is none. The batch holding ``target`` starts there or later."""
    k = bisect.bisect_right(entries, (target, _INT32_MAX)) - 1
    return entries[k][1] if k >= 0 else 0


@attrs.define
class IndexBuilder:
    """The indexing state of one segment, fed batch by batch in file order."""

    interval_bytes: int = DEFAULT_INDEX_INTERVAL_BYTES
    offsets: list[tuple[int, int]] = attrs.field(factory=list)
    times: list[tuple[int, int]] = attrs.field(factory=list)
    last_entry_position: int = 0
    max_timestamp: int = NO_TIMESTAMP
    max_timestamp_offset: int = -1

    def add(self, position: int, last_offset: int, max_timestamp: int) -> bool:
        """Account for the batch at ``position``; True if it made index entries."""
        if max_timestamp > self.max_timestamp:
            self.max_timestamp, self.max_timestamp_offset = max_timestamp, last_offset
        if position - self.last_entry_position <= self.interval_bytes:
            return False
        self.offsets.append((last_offset, position))
        self._offer_time()
        self.last_entry_position = position
        return True

    def _offer_time(self) -> bool:
        last = self.times[-1][0] if self.times else NO_TIMESTAMP
        if self.max_timestamp > last:
            self.times.append((self.max_timestamp, self.max_timestamp_offset))
            return True
        return False

    def close(self) -> bool:
        """``onBecomeInactiveSegment``: offer the max timestamp once more; True if appended."""
        return self._offer_time()


@attrs.frozen
class SegmentIndexes:
    offsets: tuple[tuple[int, int], ...]
    times: tuple[tuple[int, int], ...]


def build_indexes(batches: Iterable[tuple[int, int, int]], *, active: bool, interval_bytes: int = DEFAULT_INDEX_INTERVAL_BYTES) -> tuple[IndexBuilder, SegmentIndexes]:
    """The indexes of a segment from its (position, last offset, max timestamp) batches, in
    order; an inactive segment's time index gets its closing entry."""
    b = IndexBuilder(interval_bytes)
    for position, last_offset, max_ts in batches:
        b.add(position, last_offset, max_ts)
    times = list(b.times)
    if not active:
        probe = IndexBuilder(interval_bytes, [], times, 0, b.max_timestamp, b.max_timestamp_offset)
        probe.close()
    return b, SegmentIndexes(tuple(b.offsets), tuple(times))
