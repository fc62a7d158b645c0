"""Compressed record batches: Kafka's framing per codec, round trips, another implementation's
batches both ways (kafka-python), and hostile compressed sections."""

from __future__ import annotations

import hashlib
import struct
import warnings

import attrs
import lz4.frame
import pytest
import snappy
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from kraft.log import CorruptBatchError, Log, MemoryFS, Record, RecordBatch, TruncatedBatchError, UnsupportedBatchError, crc32c
from kraft.log.cli import dump_log
from kraft.log.compression import (
    CODEC_IDS,
    SNAPPY_BLOCK,
    DecompressionError,
    compress,
    decompress,
    xxh32,
)
from tests import examples
from tests.log.test_records import assert_round_trip, batches

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)  # kafka-python loads its schemas with an old importlib API
    from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder

CODECS = ("gzip", "snappy", "lz4", "zstd")


def _records(n: int, value: bytes = b"value-value-value-value") -> list[Record]:
    return [Record(i, i * 3, b"key-%d" % i, value, (("h", b"x"),)) for i in range(n)]


def _batch(codec: str, n: int = 20, value: bytes = b"value-value-value-value") -> RecordBatch:
    return RecordBatch(100, 3, _records(n, value), compression=codec, first_timestamp=1_700_000_000_000,
                       max_timestamp=1_700_000_000_000 + 3 * (n - 1))


def _with_section(codec: str, section: bytes, count: int = 1, last_offset_delta: int = 0) -> bytes:
    """A batch of ``codec`` whose records section is ``section``, with a valid length and CRC."""
    header = bytearray(RecordBatch(0, 0, [], compression=codec, last_offset_delta=last_offset_delta).encode()[:61])
    raw = header + section
    struct.pack_into(">i", raw, 8, len(raw) - 12)
    struct.pack_into(">i", raw, 57, count)
    struct.pack_into(">I", raw, 17, crc32c(bytes(raw[21:])))
    return bytes(raw)


def test_codec_ids_are_kafkas() -> None:
    # CompressionType: NONE 0, GZIP 1, SNAPPY 2, LZ4 3, ZSTD 4
    assert CODEC_IDS == {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
    for codec in CODECS:
        raw = _batch(codec).encode()
        assert struct.unpack(">h", raw[21:23])[0] & 0x07 == CODEC_IDS[codec]


def test_xxh32_reference_values() -> None:
    # values of the xxHash reference implementation, seed 0
    assert xxh32(b"") == 0x02CC5D05
    assert xxh32(b"a") == 0x550D7456


@examples.PURE()
@given(st.binary(max_size=300))
def test_xxh32_agrees_with_lz4_content_checksum(data: bytes) -> None:
    frame = lz4.frame.compress(data, content_checksum=True, store_size=False)
    assert struct.unpack("<I", frame[-4:])[0] == xxh32(data)


def test_lz4_frame_as_lz4_block_output_stream_writes_it() -> None:
    """Magic 0x184D2204 little-endian, FLG 0x60 (version 1, independent blocks, no checksums, no
    content size), BD 0x40 (64 KiB blocks), header checksum = byte 1 of XXH32(FLG, BD) = 0x82,
    then length-prefixed blocks and a zero end mark."""
    assert compress("lz4", b"") == bytes.fromhex("04224d18" "60" "40" "82" "00000000")
    data = bytes(range(256)) * 300  # 76800 bytes: two blocks
    frame = compress("lz4", data)
    first = struct.unpack_from("<I", frame, 7)[0]
    assert first & 0x7FFFFFFF < 64 * 1024 and frame.endswith(b"\x00\x00\x00\x00")
    assert lz4.frame.decompress(frame) == data
    incompressible = b"".join(hashlib.sha256(b"%d" % i).digest() for i in range(40))
    frame = compress("lz4", incompressible)
    (size,) = struct.unpack_from("<I", frame, 7)  # stored raw, the high bit of its length set
    assert size == len(incompressible) | 0x80000000 and frame[11 : 11 + len(incompressible)] == incompressible
    assert decompress("lz4", frame) == incompressible and lz4.frame.decompress(frame) == incompressible


def test_snappy_xerial_framing() -> None:
    """SnappyOutputStream: magic 82 'SNAPPY' 00, version 1, compatible version 1 (big-endian
    int32), then big-endian int32 length + raw snappy block per 32 KiB of input."""
    assert compress("snappy", b"") == b"\x82SNAPPY\x00" + bytes.fromhex("00000001" "00000001")
    data = b"0123456789abcdef" * 5000  # 80000 bytes: three blocks
    stream = compress("snappy", data)
    p, out, blocks = 16, b"", 0
    while p < len(stream):
        (n,) = struct.unpack_from(">i", stream, p)
        block = snappy.decompress(stream[p + 4 : p + 4 + n])  # a raw snappy block
        assert len(block) <= SNAPPY_BLOCK
        out, p, blocks = out + block, p + 4 + n, blocks + 1
    assert out == data and blocks == 3


def test_snappy_reads_what_snappy_input_stream_reads() -> None:
    data = b"records " * 1000
    assert decompress("snappy", snappy.compress(data)) == data  # unframed: one raw block
    twice = compress("snappy", data[:100]) + compress("snappy", data[100:])  # concatenated streams
    assert decompress("snappy", twice) == data
    assert decompress("snappy", compress("snappy", data) + b"\x00\x00") == data  # < 4 bytes: the end
    with pytest.raises(DecompressionError, match="empty"):
        decompress("snappy", b"")


def test_lz4_reads_what_lz4_block_input_stream_reads() -> None:
    data = b"records " * 20000
    for kw in ({}, {"block_checksum": True}, {"content_checksum": True}, {"store_size": True},
               {"block_size": lz4.frame.BLOCKSIZE_MAX4MB}):
        assert decompress("lz4", lz4.frame.compress(data, block_linked=False, **kw)) == data, kw
    with pytest.raises(DecompressionError, match="independent blocks"):
        decompress("lz4", lz4.frame.compress(data, block_linked=True))
    bad = bytearray(lz4.frame.compress(data, block_linked=False, block_checksum=True))
    bad[-10] ^= 0x01  # inside the last block, before its checksum and the end mark
    with pytest.raises(DecompressionError):
        decompress("lz4", bytes(bad))


def _old_kafka_lz4(frame: bytes) -> bytes:
    """The frame with the header checksum the magic v0 writers computed, over magic + FLG + BD."""
    return frame[:6] + bytes(((xxh32(frame[:6]) >> 8) & 0xFF,)) + frame[7:]


def test_lz4_header_checksum_the_old_broken_way_is_refused() -> None:
    """Magic v2 batches must carry the correct descriptor checksum; Lz4BlockInputStream skips the
    check only for magic v0. lz4's own frame reader refuses the broken checksum as well."""
    good = compress("lz4", b"records " * 10)
    broken = _old_kafka_lz4(good)
    assert broken != good
    with pytest.raises(DecompressionError, match="descriptor checksum"):
        decompress("lz4", broken)
    with pytest.raises(RuntimeError):
        lz4.frame.decompress(broken)
    raw = _with_section("lz4", _old_kafka_lz4(compress("lz4", _encoded(_records(2)))), 2, 1)
    with pytest.raises(CorruptBatchError, match="descriptor checksum"):
        RecordBatch.decode(raw)


def _encoded(records: list[Record]) -> bytes:
    out = bytearray()
    for r in records:
        r.encode_into(out)
    return bytes(out)


@examples.MODEL()
@given(batches(), st.sampled_from(CODECS))
def test_compressed_round_trip(batch: RecordBatch, codec: str) -> None:
    assert_round_trip(attrs.evolve(batch, compression=codec))


def test_none_keeps_every_byte() -> None:
    raw = _batch("none").encode()
    assert RecordBatch(100, 3, _records(20), first_timestamp=1_700_000_000_000,
                       max_timestamp=1_700_000_000_057).encode() == raw
    assert raw[61:] == _encoded(_records(20))


def test_compression_shrinks_the_records_section() -> None:
    plain = len(_batch("none", 50).encode())
    for codec in CODECS:
        raw = _batch(codec, 50).encode()
        assert len(raw) < plain / 2, codec
        assert decompress(codec, raw[61:]) == _encoded(_records(50))


# ------------------------------------------------------------------------------ kafka-python


record_lists = st.lists(
    st.tuples(
        st.integers(0, 10_000),
        st.none() | st.binary(max_size=12),
        st.none() | st.binary(max_size=60),
        st.lists(st.tuples(st.text(max_size=6), st.binary(max_size=6)), max_size=2),
    ),
    min_size=1,
    max_size=8,
)


def _kafka_python_batch(codec: str, rows: list, base_ts: int) -> bytes:
    builder = DefaultRecordBatchBuilder(2, CODEC_IDS[codec], False, -1, -1, -1, 1 << 20)
    for i, (ts, key, value, headers) in enumerate(rows):
        builder.append(i, base_ts + ts, key, value, headers)
    return bytes(builder.build())


@examples.MODEL()
@given(st.sampled_from(CODECS), record_lists, st.integers(0, 2**40))
def test_kraft_reads_kafka_python_batches(codec: str, rows: list, base_ts: int) -> None:
    # kafka-python sends a batch uncompressed when compression does not shrink it (Kafka always
    # compresses); a long repeated value makes every batch shrink
    rows = [(ts, key, (value or b"") + b"padding " * 20, headers) for ts, key, value, headers in rows]
    raw = _kafka_python_batch(codec, rows, base_ts)
    batch, end = RecordBatch.decode(raw)
    assert end == len(raw) and batch.compression == codec
    assert [r.offset_delta for r in batch.records] == list(range(len(rows)))
    for rec, (ts, key, value, headers) in zip(batch.records, rows):
        assert batch.first_timestamp + rec.timestamp_delta == base_ts + ts
        assert (rec.key, rec.value, list(rec.headers)) == (key, value, [tuple(h) for h in headers])


@examples.MODEL()
@given(st.sampled_from(CODECS), record_lists, st.integers(0, 2**40), st.integers(0, 2**40))
def test_kafka_python_reads_kraft_batches(codec: str, rows: list, base_ts: int, base_offset: int) -> None:
    records = [Record(i, ts, key, value, tuple(headers)) for i, (ts, key, value, headers) in enumerate(rows)]
    ours = RecordBatch(base_offset, 5, records, compression=codec, first_timestamp=base_ts,
                       max_timestamp=base_ts + max(ts for ts, *_ in rows))
    theirs = DefaultRecordBatch(bytearray(ours.encode()))
    assert theirs.validate_crc() and theirs.compression_type == CODEC_IDS[codec]
    read = list(theirs)
    assert len(read) == len(rows)
    for i, (got, (ts, key, value, headers)) in enumerate(zip(read, rows)):
        assert (got.offset, got.timestamp) == (base_offset + i, base_ts + ts)
        assert (got.key, got.value) == (key, value)
        assert [(k, v) for k, v in got.headers] == [tuple(h) for h in headers]


# ------------------------------------------------------------------------------ hostile


@pytest.mark.parametrize("codec", CODECS)
def test_a_flipped_byte_in_the_compressed_section_fails_the_crc(codec: str) -> None:
    raw = _batch(codec).encode()
    for i in range(61, len(raw)):
        bad = bytearray(raw)
        bad[i] ^= 0x10
        with pytest.raises(CorruptBatchError, match="CRC-32C mismatch"):
            RecordBatch.decode(bytes(bad))


@pytest.mark.parametrize("codec", CODECS)
def test_garbage_under_a_valid_crc_names_the_batch_position(codec: str) -> None:
    garbage = b"\xfe\xed" + bytes(range(7, 250, 3)) * 3
    raw = b"\x00" * 70 + _with_section(codec, garbage)
    with pytest.raises(CorruptBatchError) as info:
        RecordBatch.decode(raw, 70)
    assert info.value.position == 70 and f"records section (bytes {70 + 61}-" in str(info.value)
    assert "corrupt record batch at byte position 70" in str(info.value)


@pytest.mark.parametrize("codec", CODECS)
def test_a_truncated_compressed_section_is_corrupt(codec: str) -> None:
    full = compress(codec, _encoded(_records(20)))
    for cut in range(0, len(full), max(1, len(full) // 40)):
        raw = _with_section(codec, full[:cut], 20, 19)
        with pytest.raises(CorruptBatchError):
            RecordBatch.decode(raw)
    raw = _batch(codec).encode()
    with pytest.raises(TruncatedBatchError):
        RecordBatch.decode(raw[:-3])


@pytest.mark.parametrize("codec", CODECS)
def test_decompressed_bytes_left_after_count_records_are_corrupt(codec: str) -> None:
    section = compress(codec, _encoded(_records(3)) + b"\x00")
    with pytest.raises(CorruptBatchError, match="1 bytes left over after 3 records"):
        RecordBatch.decode(_with_section(codec, section, 3, 2))
    section = compress(codec, _encoded(_records(2)))
    with pytest.raises(CorruptBatchError, match="of the decompressed"):
        RecordBatch.decode(_with_section(codec, section, 3, 2))


@pytest.mark.parametrize("codec", CODECS)
def test_the_decompression_bound(codec: str) -> None:
    batch = _batch(codec, 4, b"\x00" * 250_000)  # a million bytes of records, a few KiB compressed
    raw = batch.encode()
    assert len(raw) < 100_000
    assert RecordBatch.decode(raw)[0] == batch
    size = len(_encoded(batch.records))
    assert RecordBatch.decode(raw, max_decompressed=size)[0] == batch
    with pytest.raises(UnsupportedBatchError, match=f"decompresses to more than {size - 1} bytes"):
        RecordBatch.decode(raw, max_decompressed=size - 1)


@pytest.mark.parametrize("codec", ["gzip", "zstd"])
def test_a_bomb_is_refused_at_the_default_bound(codec: str) -> None:
    section = compress(codec, b"\x00" * (80 << 20))  # 80 MiB of zeros, past the 64 MiB bound
    with pytest.raises(UnsupportedBatchError, match="decompression bound"):
        RecordBatch.decode(_with_section(codec, section))


# ------------------------------------------------------------------------------ log, dump-log, broker


def test_log_recovers_compressed_batches_and_dump_log_names_the_codec(tmp_path) -> None:
    fs = MemoryFS()
    log, _ = Log.open(fs, "/d")
    off = 0
    for codec in ("none",) + CODECS:
        b = RecordBatch(off, 1, _records(3), compression=codec)
        log.append(b)
        off = b.next_offset
    log.flush()
    reopened, report = Log.open(fs, "/d")
    assert not report.truncated and [b.compression for b in reopened.read(0)] == ["none", *CODECS]
    seg = tmp_path / "00000000000000000000.log"
    seg.write_bytes(fs.read_bytes(log.segments[0]))
    res = CliRunner().invoke(dump_log, [str(seg), "--deep"])
    assert res.exit_code == 0, res.output
    codecs = [line.split("compresscodec: ")[1].split()[0] for line in res.output.splitlines() if "compresscodec" in line]
    assert codecs == ["none", "gzip", "snappy", "lz4", "zstd"]  # CompressionType.name, as DumpLogSegments prints it
    assert res.output.count("| offset:") == 15


def test_broker_writes_the_configured_codec() -> None:
    from kraft.controller.controller import Controller
    from kraft.replication.broker import Broker
    from kraft.replication.config import ReplicationConfig
    from kraft.replication.messages import Entry

    for codec in ("none",) + CODECS:
        cfg = ReplicationConfig(compression_type=codec)
        fs = MemoryFS()
        broker = Broker(2, (1, 2, 3), cfg, fs, Controller((1, 2, 3), cfg).records)
        broker._append_entries([Entry(1, 7), Entry(1, 8)])
        data = fs.read_bytes(broker.log.segments[0])
        first, end = RecordBatch.decode(data)
        assert data[22] & 0x07 == CODEC_IDS[codec] and first.compression == codec
        assert [b.records[0].value for b in Log.open(fs, broker.directory)[0].read(0)] == [b"7", b"8"]
    with pytest.raises(ValueError, match="compression_type must be one of"):
        ReplicationConfig(compression_type="brotli")
