"""Segments, durability, recovery, epochs and the dump-log command."""

from __future__ import annotations

import random

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from kraft.log import CorruptBatchError, Log, MemoryFS, OsFS, Record, RecordBatch, leader_change_batch, write_atomically
from kraft.log.cli import dump_log
from tests import examples

SEG = "n1/00000000000000000000.log"


def data_batch(offset: int, epoch: int = 1, value: bytes | None = None) -> RecordBatch:
    v = value if value is not None else f"v{offset}".encode()
    return RecordBatch(offset, epoch, [Record(0, 0, None, v)], first_timestamp=offset, max_timestamp=offset)


def build(fs: MemoryFS, n: int, *, flush_after: int | None = None, segment_bytes: int = 1 << 20, epoch=lambda i: 1) -> Log:
    log, _ = Log.open(fs, "n1", segment_bytes=segment_bytes)
    for i in range(n):
        log.append(data_batch(i, epoch(i)))
        if flush_after is not None and i + 1 == flush_after:
            log.flush()
    return log


def values(log: Log) -> list[bytes]:
    return [b.records[0].value for b in log.read(0)]


def test_append_read_flush_offsets() -> None:
    fs = MemoryFS()
    log = build(fs, 5, flush_after=3)
    assert (log.end_offset, log.flushed_offset, log.last_epoch) == (5, 3, 1)
    assert [b.base_offset for b in log.read(2)] == [2, 3, 4]
    assert [b.base_offset for b in log.read(2, max_batches=2)] == [2, 3]
    assert log.read(5) == []
    with pytest.raises(ValueError, match="log end offset is 5"):
        log.append(data_batch(7))


def test_crash_loses_exactly_the_unflushed_suffix() -> None:
    fs = MemoryFS()
    build(fs, 8, flush_after=5)
    fs.crash()
    log2, report = Log.open(fs, "n1")
    assert log2.end_offset == 5 and log2.flushed_offset == 5
    assert values(log2) == [f"v{i}".encode() for i in range(5)]
    assert not report.truncated  # nothing torn: the unflushed bytes simply never reached the disk


@examples.MODEL()
@given(st.lists(st.sampled_from(["append", "append", "append", "flush", "crash", "truncate"]), max_size=40), st.randoms(use_true_random=False))
def test_memoryfs_crash_model(ops: list[str], rnd: random.Random) -> None:
    """Against a model: the durable prefix is what was flushed (truncation is durable)."""
    fs = MemoryFS()
    log, _ = Log.open(fs, "n1", segment_bytes=150)
    model: list[bytes] = []
    flushed = 0
    for op in ops:
        if op == "append":
            v = f"x{len(model)}-{rnd.randint(0, 9)}".encode()
            log.append(data_batch(len(model), value=v))
            model.append(v)
        elif op == "flush":
            log.flush()
            flushed = len(model)
        elif op == "truncate" and model:
            k = rnd.randint(0, len(model))
            log.truncate_to(k)
            del model[k:]
            flushed = min(flushed, k)
        elif op == "crash":
            fs.crash()
            log, report = Log.open(fs, "n1", segment_bytes=150)
            del model[flushed:]
            assert report.bytes_cut == 0
        assert values(log) == model
        assert log.end_offset == len(model) and log.flushed_offset == flushed


def test_torn_tail_at_every_byte_recovers_to_last_full_batch() -> None:
    fs0 = MemoryFS()
    log = build(fs0, 4, flush_after=1)
    sizes = [len(b.encode()) for b in log.read(0)]
    bounds = [sum(sizes[:k]) for k in range(len(sizes) + 1)]
    total = bounds[-1]
    for keep in range(total - sizes[0] + 1):  # how many unflushed bytes reach the disk
        fs = MemoryFS()
        build(fs, 4, flush_after=1)
        fs.crash(keep_unsynced={SEG: keep})
        length = sizes[0] + keep
        complete = max(k for k, b in enumerate(bounds) if b <= length)
        log2, report = Log.open(fs, "n1")
        assert log2.end_offset == complete
        assert values(log2) == [f"v{i}".encode() for i in range(complete)]
        cut = length - bounds[complete]
        assert report.bytes_cut == cut
        if cut:
            assert report.segment == SEG and report.position == bounds[complete]
            assert report.reason.startswith("torn write")
        assert fs.size(SEG) == bounds[complete]  # the cut itself is durable
        fs.crash()
        assert Log.open(fs, "n1")[0].end_offset == complete


def test_torn_write_across_a_roll() -> None:
    fs = MemoryFS()
    log = build(fs, 3, flush_after=3, segment_bytes=150)
    for i in range(3, 7):
        log.append(data_batch(i))
    segs = log.segments
    assert len(segs) >= 3
    fs.crash(keep_unsynced={p: 20 for p in segs})
    log2, report = Log.open(fs, "n1", segment_bytes=150)
    assert log2.end_offset == 3
    assert len(report.cuts) >= 2 and report.removed_segments


def test_mid_segment_corruption_raises_with_path_and_position() -> None:
    fs = MemoryFS()
    log = build(fs, 3, flush_after=3)
    path, pos = log.batch_position(1)
    assert path == SEG
    fs.corrupt(SEG, pos + 30)  # inside the CRC-covered part of batch 1
    with pytest.raises(CorruptBatchError) as info:
        Log.open(fs, "n1")
    err = info.value
    assert (err.path, err.position) == (SEG, pos)
    assert "CRC-32C mismatch" in err.why and "not a torn tail" in err.why
    assert f"byte position {pos}" in str(err)


def test_corrupt_length_field_mid_segment_is_not_a_torn_tail() -> None:
    fs = MemoryFS()
    log = build(fs, 3, flush_after=3)
    _, pos = log.batch_position(1)
    fs.corrupt(SEG, pos + 9, 0x40)  # batchLength now runs past the end of the file
    with pytest.raises(CorruptBatchError) as info:
        Log.open(fs, "n1")
    assert info.value.position == pos


def test_every_byte_flip_in_a_segment_is_detected() -> None:
    """Flipping any byte of a 3-batch segment is either an error naming the batch or a cut
    tail, except the partitionLeaderEpoch bytes, which Kafka's CRC does not cover."""
    fs0 = MemoryFS()
    log = build(fs0, 3, flush_after=3)
    raw = fs0.read_bytes(SEG)
    starts = [log.batch_position(i)[1] for i in range(3)]
    for i in range(len(raw)):
        start = max(s for s in starts if s <= i)
        if 12 <= i - start < 16:
            continue
        fs = MemoryFS()
        build(fs, 3, flush_after=3)
        fs.corrupt(SEG, i)
        try:
            log2, report = Log.open(fs, "n1")
        except CorruptBatchError as exc:
            assert exc.position == start, i
        else:
            assert start == starts[-1] and report.bytes_cut == len(raw) - start, i
            assert log2.end_offset == 2


def test_non_monotonic_offsets_are_corruption() -> None:
    fs = MemoryFS()
    fs.makedirs("n1")
    fs.append(SEG, data_batch(0).encode() + data_batch(1).encode() + data_batch(1).encode())
    fs.fsync(SEG)
    with pytest.raises(CorruptBatchError, match="expected 2") as info:
        Log.open(fs, "n1")
    assert info.value.position == 2 * len(data_batch(0).encode())
    fs2 = MemoryFS()
    fs2.append("n1/00000000000000000005.log", data_batch(4).encode())
    with pytest.raises(CorruptBatchError, match="expected 5"):
        Log.open(fs2, "n1")


def test_segment_rolling_and_truncation_across_segments(tmp_path) -> None:
    for fs, d in ((MemoryFS(), "n1"), (OsFS(), str(tmp_path / "n1"))):
        log, _ = Log.open(fs, d, segment_bytes=200)
        for i in range(10):
            log.append(data_batch(i, epoch=1 + i // 4))
        log.flush()
        names = [n for n in fs.listdir(d) if n.endswith(".log")]
        assert fs.listdir(d) == sorted(n[:20] + ext for n in names for ext in (".index", ".log", ".timeindex"))
        assert len(names) > 2
        bases = [int(n[:20]) for n in names]
        assert bases == [log.read(b, 1)[0].base_offset for b in bases]  # named by base offset
        assert all(len(n) == 24 for n in names)
        assert all(fs.size(f"{d}/{n}") <= 200 for n in names)
        log.truncate_to(bases[1] + 1)  # into the second segment: later segments go
        assert log.end_offset == bases[1] + 1
        assert [n for n in fs.listdir(d) if n.endswith(".log")] == names[:2]
        assert len(fs.listdir(d)) == 6  # each remaining segment keeps its two indexes
        log.append(data_batch(log.end_offset, epoch=9))
        log.flush()
        log2, report = Log.open(fs, d, segment_bytes=200)
        assert log2.end_offset == bases[1] + 2 and not report.truncated and not report.indexes
        assert [b.base_offset for b in log2.read(0)] == list(range(bases[1] + 2))
        log2.truncate_to(0)
        assert log2.end_offset == 0 and log2.read(0) == []
        log2.append(data_batch(0))
        log2.flush()
        assert Log.open(fs, d)[0].end_offset == 1


def test_epoch_end_offset_like_kafka() -> None:
    fs = MemoryFS()
    epochs = [1, 1, 3, 3, 3, 5]
    log = build(fs, len(epochs), epoch=lambda i: epochs[i])
    assert log.epochs() == [(1, 0), (3, 2), (5, 5)]
    assert log.epoch_end_offset(1) == (1, 2)
    assert log.epoch_end_offset(2) == (1, 2)  # largest epoch <= 2 is 1, it ends where 3 starts
    assert log.epoch_end_offset(3) == (3, 5)
    assert log.epoch_end_offset(4) == (3, 5)
    assert log.epoch_end_offset(5) == (5, 6)
    assert log.epoch_end_offset(9) == (5, 6)
    assert log.epoch_end_offset(0) == (-1, -1)
    log.truncate_to(3)
    assert log.epoch_end_offset(5) == (3, 3) and log.last_epoch == 3


def test_write_atomically_and_lose_disk() -> None:
    fs = MemoryFS()
    fs.makedirs("n1")
    write_atomically(fs, "n1/quorum-state", b'{"leaderEpoch": 1}')
    fs.write_bytes("n1/other", b"never synced")
    fs.crash()
    assert fs.read_bytes("n1/quorum-state") == b'{"leaderEpoch": 1}'
    assert not fs.exists("n1/other") and not fs.exists("n1/quorum-state.tmp")
    write_atomically(fs, "n1/quorum-state", b'{"leaderEpoch": 2}')
    fs.crash()
    assert fs.read_bytes("n1/quorum-state") == b'{"leaderEpoch": 2}'
    build(fs, 3, flush_after=3)
    _, report = Log.open(fs, "n1")
    assert report.ignored_files == ("quorum-state",)
    fs.lose_disk("n1")
    assert fs.listdir("n1") == []
    assert Log.open(fs, "n1")[0].end_offset == 0


def _segment_file(tmp_path) -> tuple[str, Log]:
    log, _ = Log.open(OsFS(), str(tmp_path))
    log.append(leader_change_batch(0, 1, 1, [1, 2, 3], 1000, granting_voters=[1, 2]))
    log.append(RecordBatch(1, 1, [Record(0, 0, b"k", b"hello", (("h", b"v"),)), Record(1, 5, None, None)], first_timestamp=2000, max_timestamp=2005))
    log.flush()
    return log.segments[0], log


def test_dump_log_output(tmp_path) -> None:
    """Line formats of DumpLogSegments.printBatchLevel and dumpLog (kafka-dump-log.sh)."""
    path, log = _segment_file(tmp_path)
    res = CliRunner().invoke(dump_log, [path, "--print-data-log"])
    assert res.exit_code == 0, res.output
    lines = res.output.splitlines()
    raw0 = log.read(0)[0].encode()
    size0, crc0 = len(raw0), int.from_bytes(raw0[17:21], "big")
    assert lines[0] == f"Dumping {path}"
    assert lines[1] == "Log starting offset: 0"
    assert lines[2] == (
        "baseOffset: 0 lastOffset: 0 count: 1 baseSequence: -1 lastSequence: -1 producerId: -1 "
        "producerEpoch: -1 partitionLeaderEpoch: 1 isTransactional: false isControl: true deleteHorizonMs: OptionalLong.empty "
        f"position: 0 CreateTime: 1000 size: {size0} magic: 2 compresscodec: none crc: {crc0} isvalid: true"
    )
    assert lines[3] == "| offset: 0 CreateTime: 1000 keySize: 4 valueSize: 34 sequence: -1 headerKeys: [] controlType: LEADER_CHANGE(2)"
    assert f"position: {size0} CreateTime: 2005" in lines[4] and "count: 2" in lines[4]
    assert lines[5] == "| offset: 1 CreateTime: 2000 keySize: 1 valueSize: 5 sequence: -1 headerKeys: [h] key: k payload: hello"
    assert lines[6] == "| offset: 2 CreateTime: 2005 keySize: -1 valueSize: -1 sequence: -1 headerKeys: []"
    shallow = CliRunner().invoke(dump_log, [path])
    assert shallow.exit_code == 0 and not any(l.startswith("|") for l in shallow.output.splitlines())


def test_dump_log_corruption_exit_2(tmp_path) -> None:
    path, log = _segment_file(tmp_path)
    _, pos = log.batch_position(1)
    raw = bytearray(open(path, "rb").read())
    raw[pos + 40] ^= 0xFF
    open(path, "wb").write(bytes(raw))
    res = CliRunner().invoke(dump_log, [path])
    assert res.exit_code == 2
    assert "baseOffset: 0" in res.stdout  # what could be decoded is printed
    assert f"corrupt batch at byte position {pos}" in res.stderr and "CRC-32C" in res.stderr
    missing = CliRunner().invoke(dump_log, [str(tmp_path / "nope.log")])
    assert missing.exit_code == 2 and "cannot read" in missing.stderr


def test_constructing_over_existing_segments_is_refused() -> None:
    fs = MemoryFS()
    build(fs, 2, flush_after=2)
    with pytest.raises(ValueError, match="use Log.open"):
        Log(fs, "n1")
    assert Log.open(fs, "n1")[0].end_offset == 2


@examples.MODEL()
@given(st.integers(1, 12), st.integers(0, 12), st.integers(120, 400), st.randoms(use_true_random=False))
def test_torn_crash_keeps_a_prefix_at_least_the_flushed_one(n: int, flushed: int, seg_bytes: int, rnd: random.Random) -> None:
    """A crash that tears pending writes (random prefixes of every file's unsynced bytes reach
    the disk) recovers to a prefix of what was appended, never shorter than what was flushed."""
    flushed = min(flushed, n)
    fs = MemoryFS()
    log, _ = Log.open(fs, "n1", segment_bytes=seg_bytes)
    for i in range(n):
        log.append(data_batch(i))
        if i + 1 == flushed:
            log.flush()
    before = values(log)
    fs.crash(rng=rnd)
    log2, report = Log.open(fs, "n1", segment_bytes=seg_bytes)
    got = values(log2)
    assert flushed <= len(got) <= n and got == before[: len(got)]
    assert log2.flushed_offset == log2.end_offset == len(got)
    # recovery made its result durable: a second clean crash changes nothing
    fs.crash()
    assert values(Log.open(fs, "n1", segment_bytes=seg_bytes)[0]) == got
