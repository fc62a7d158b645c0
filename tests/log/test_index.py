"""Offset and time indexes: Kafka's layout and entry rule, lookups through them, truncation and
recovery (rebuilt when missing or wrong)."""

from __future__ import annotations

import struct

from kraft.log import Log, MemoryFS, Record, RecordBatch
from kraft.log.index import decode_offset_index, decode_time_index

D = "p0"
SEG = f"{D}/00000000000000000000.log"
IDX = f"{D}/00000000000000000000.index"
TIDX = f"{D}/00000000000000000000.timeindex"


def batch(offset: int, ts: int, value_bytes: int = 930) -> RecordBatch:
    """A one-record batch of exactly ``value_bytes + 70`` bytes (1000 by default)."""
    return RecordBatch(offset, 1, [Record(0, 0, None, b"x" * value_bytes)], first_timestamp=ts, max_timestamp=ts)


def stamps(i: int) -> int:
    return 10 if i == 5 else 1000 + i  # batch 5 goes back in time


def build(fs: MemoryFS, n: int, **kw) -> Log:
    log, _ = Log.open(fs, D, **kw)
    for i in range(n):
        log.append(batch(i, stamps(i)))
    log.flush()
    return log


def test_index_bytes_follow_kafkas_4096_rule() -> None:
    """Batches of 1000 bytes at positions 0, 1000, ...: LogSegment.append indexes a batch when more
    than 4096 bytes were appended since the last entry, i.e. at 5000 and 10000. Each entry is
    (last offset - base) int32 + position int32; the time index takes the max timestamp so far
    and its offset, (1004, 4) at batch 5 since batch 5 itself has timestamp 10."""
    fs = MemoryFS()
    log = build(fs, 12)
    assert len(log.read(0)[0].encode()) == 1000
    assert fs.read_bytes(IDX) == bytes.fromhex("00000005 00001388 0000000a 00002710")
    assert fs.read_bytes(TIDX) == bytes.fromhex("00000000000003ec 00000004 00000000000003f2 0000000a")


def test_the_interval_is_strictly_more_than() -> None:
    fs = MemoryFS()
    build(fs, 4, index_interval_bytes=2000)  # 1000 - 0 and 2000 - 0 are not > 2000; 3000 is
    assert decode_offset_index(fs.read_bytes(IDX), 0) == [(3, 3000)]


def test_a_roll_closes_the_time_index_with_the_max_timestamp() -> None:
    fs = MemoryFS()
    log = build(fs, 13, segment_bytes=12_000)
    assert len(log.segments) == 2
    # onBecomeInactiveSegment: (1011, 11) is appended to the rolled segment's time index
    assert decode_time_index(fs.read_bytes(TIDX), 0) == [(1004, 4), (1010, 10), (1011, 11)]
    assert fs.read_bytes(f"{D}/00000000000000000012.index") == b""


class CountingFS(MemoryFS):
    def __init__(self) -> None:
        super().__init__()
        self.reads: list[tuple[str, int, int]] = []

    def read_bytes(self, path: str) -> bytes:
        data = super().read_bytes(path)
        self.reads.append((path, 0, len(data)))
        return data

    def read_at(self, path: str, position: int, size: int) -> bytes:
        data = super().read_at(path, position, size)
        self.reads.append((path, position, len(data)))
        return data


def test_read_from_disk_starts_at_the_index_entry() -> None:
    fs = CountingFS()
    log = build(fs, 200)
    for target in (0, 7, 150, 199):
        fs.reads.clear()
        got = log.read_from_disk(target, max_bytes=2000)
        assert got == log.read(target, max_batches=2)
        seg_reads = [(p, n) for path, p, n in fs.reads if path == SEG]
        # the scan starts at the last entry <= target: at most 5 batches of 1000 bytes before it
        assert seg_reads[0][0] >= target * 1000 - 5000
        assert sum(n for _, n in seg_reads) <= 5 * 61 + 2000 + 61
    assert log.read_from_disk(200) == []
    assert log.read_from_disk(3) == log.read(3)


def test_missing_corrupt_or_torn_indexes_are_rebuilt_and_reported() -> None:
    fs = MemoryFS()
    build(fs, 12)
    good_idx, good_tidx = fs.read_bytes(IDX), fs.read_bytes(TIDX)
    fs.remove(IDX)
    fs.corrupt(TIDX, 11)
    fs.write_bytes(f"{D}/00000000000000000042.index", b"\0" * 8)
    fs.fsync(f"{D}/00000000000000000042.index")
    log, report = Log.open(fs, D)
    got = {(r.path, r.action): r.reason for r in report.indexes}
    assert got == {
        (IDX, "rebuilt"): "missing",
        (TIDX, "rebuilt"): "entry 0 (byte position 0) does not match the segment's batches",
        (f"{D}/00000000000000000042.index", "removed"): "no segment of that base offset",
    }
    assert "rebuilt index" in str(report) and not report.truncated
    assert (fs.read_bytes(IDX), fs.read_bytes(TIDX)) == (good_idx, good_tidx)
    fs.truncate(IDX, 5)
    assert Log.open(fs, D)[1].indexes[0].reason == "5 bytes, not a multiple of the entry size 8"
    assert Log.open(fs, D)[1].indexes == ()  # rebuilt durably: a clean open reports nothing


def test_a_crash_that_loses_index_entries_is_repaired() -> None:
    fs = MemoryFS()
    log = build(fs, 3)
    for i in range(3, 12):
        log.append(batch(i, stamps(i)))
    fs.crash(keep_unsynced={SEG: 9000})  # the segment's pending bytes reach the disk, the index's do not
    log, report = Log.open(fs, D)
    assert log.end_offset == 12
    assert {r.path: r.reason for r in report.indexes} == {IDX: "0 entries, the segment's batches give 2", TIDX: "0 entries, the segment's batches give 2"}
    assert log.read_from_disk(11) == log.read(11)


def test_truncation_truncates_the_indexes() -> None:
    fs = MemoryFS()
    log = build(fs, 12)
    log.truncate_to(8)  # the entry for offset 10 goes, the one for 5 stays (OffsetIndex.truncateTo)
    assert decode_offset_index(fs.read_bytes(IDX), 0) == [(5, 5000)]
    assert decode_time_index(fs.read_bytes(TIDX), 0) == [(1004, 4)]
    fs.crash()  # durable at once
    log, report = Log.open(fs, D)
    assert report.indexes == () and log.end_offset == 8
    log.truncate_to(5)
    assert fs.read_bytes(IDX) == b"" and fs.read_bytes(TIDX) == b""
    for i in range(5, 12):  # appending again builds the same indexes
        log.append(batch(i, stamps(i)))
    assert fs.read_bytes(IDX) == struct.pack(">iiii", 5, 5000, 10, 10000)


def test_truncating_into_a_rolled_segment_drops_its_closing_time_entry() -> None:
    fs = MemoryFS()
    log = build(fs, 14, segment_bytes=12_000)
    log.truncate_to(11)  # the second segment goes; the first is active again
    assert len(log.segments) == 1 and not fs.exists(f"{D}/00000000000000000012.timeindex")
    assert decode_time_index(fs.read_bytes(TIDX), 0) == [(1004, 4), (1010, 10)]
    assert Log.open(fs, D)[1].indexes == ()
