"""Record batch format v2: exact bytes, round trips, corruption detection."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kraft.log import (
    ControlType,
    CorruptBatchError,
    Record,
    RecordBatch,
    TruncatedBatchError,
    UnsupportedBatchError,
    crc32c,
    decode_control,
    decode_leader_change,
    encode_leader_change,
    leader_change_batch,
)
from kraft.log.records import write_varint, write_varlong
from tests import examples


def test_crc32c_check_value() -> None:
    # the standard check value of CRC-32C (Castagnoli), RFC 3720 appendix B.4
    assert crc32c(b"123456789") == 0xE3069283


def test_varints_zigzag() -> None:
    def v(n: int, long: bool = False) -> bytes:
        out = bytearray()
        (write_varlong if long else write_varint)(out, n)
        return bytes(out)

    assert v(0) == b"\x00"
    assert v(-1) == b"\x01"
    assert v(1) == b"\x02"
    assert v(-64) == b"\x7f"
    assert v(64) == b"\x80\x01"
    assert v(300) == b"\xd8\x04"  # zigzag(300) = 600 = 0b100_1011000
    assert v(2**31 - 1) == b"\xfe\xff\xff\xff\x0f"
    assert v(-(2**31)) == b"\xff\xff\xff\xff\x0f"
    assert v(-(2**63), long=True) == b"\xff" * 9 + b"\x01"
    with pytest.raises(ValueError):
        v(2**31)


def test_hand_worked_batch_bytes() -> None:
    """One record, key b"k", value b"v", base offset 5, leader epoch 3, timestamps 1000.

    Record: length 8 (zigzag 16 = 0x10), attributes 0, timestampDelta 0, offsetDelta 0,
    keyLength 1 (0x02) 'k', valueLength 1 (0x02) 'v', 0 headers => 9 bytes.
    Batch: 61 header bytes + 9 = 70, so batchLength = 70 - 12 = 58 (0x3a)."""
    batch = RecordBatch(5, 3, [Record(0, 0, b"k", b"v")], first_timestamp=1000, max_timestamp=1000)
    after_crc = bytes.fromhex(
        "0000"  # attributes
        "00000000"  # lastOffsetDelta
        "00000000000003e8"  # baseTimestamp 1000
        "00000000000003e8"  # maxTimestamp 1000
        "ffffffffffffffff"  # producerId -1
        "ffff"  # producerEpoch -1
        "ffffffff"  # baseSequence -1
        "00000001"  # records count
        "10" "00" "00" "00" "02" "6b" "02" "76" "00"  # the record
    )
    expected = (
        bytes.fromhex("0000000000000005" "0000003a" "00000003" "02")
        + struct.pack(">I", crc32c(after_crc))
        + after_crc
    )
    raw = batch.encode()
    assert raw == expected
    assert len(raw) == 70
    decoded, end = RecordBatch.decode(raw)
    assert end == 70 and decoded == batch and decoded.last_offset == 5


def test_header_and_negative_delta_bytes() -> None:
    rec = Record(1, -1, None, b"", (("h", None), ("k2", b"\x01")))
    out = bytearray()
    rec.encode_into(out)
    # attrs 00, tsDelta -1 -> 01, offDelta 1 -> 02, key null -> 01, value len 0 -> 00,
    # 2 headers -> 04, "h" -> 02 68, null -> 01, "k2" -> 04 6b 32, len 1 -> 02 01
    body = bytes.fromhex("00 01 02 01 00 04 02 68 01 04 6b 32 02 01".replace(" ", ""))
    assert bytes(out) == bytes([len(body) * 2]) + body


def test_leader_change_message_bytes() -> None:
    # LeaderChangeMessage v0: Version int16, LeaderId int32, Voters compact array (len+1) of
    # {VoterId int32, tagged fields (0)}, GrantingVoters likewise, tagged fields (0)
    raw = encode_leader_change(1, [1, 2, 3], [1, 2])
    assert raw == bytes.fromhex("0000" "00000001" "04" "0000000100" "0000000200" "0000000300" "03" "0000000100" "0000000200" "00")
    assert decode_leader_change(raw) == {
        "version": 0,
        "leaderId": 1,
        "voters": [{"voterId": 1}, {"voterId": 2}, {"voterId": 3}],
        "grantingVoters": [{"voterId": 1}, {"voterId": 2}],
    }
    b = leader_change_batch(7, 4, 2, [1, 2, 3], 123)
    assert b.is_control and b.control_type == ControlType.LEADER_CHANGE
    assert b.records[0].key == b"\x00\x00\x00\x02"
    decoded, _ = RecordBatch.decode(b.encode())
    assert decoded.attributes & 0x20 and decoded.partition_leader_epoch == 4
    ctype, value = decode_control(decoded.records[0])
    assert ctype is ControlType.LEADER_CHANGE and value["leaderId"] == 2


def test_control_types_match_kafka() -> None:
    assert [ControlType.ABORT, ControlType.COMMIT, ControlType.LEADER_CHANGE] == [0, 1, 2]
    assert ControlType.KRAFT_VOTERS == 6


headers = st.lists(st.tuples(st.text(max_size=8), st.none() | st.binary(max_size=8)), max_size=3).map(tuple)
int32 = st.integers(-(2**31), 2**31 - 1)
int64 = st.integers(-(2**63), 2**63 - 1)


@st.composite
def batches(draw: st.DrawFn) -> RecordBatch:
    n = draw(st.integers(0, 6))
    deltas = sorted(draw(st.sets(st.integers(0, 2**31 - 1), min_size=n, max_size=n)))
    records = [
        Record(d, draw(int64), draw(st.none() | st.binary(max_size=20)), draw(st.none() | st.binary(max_size=40)), draw(headers))
        for d in deltas
    ]
    return RecordBatch(
        draw(st.integers(0, 2**62)),
        draw(int32),
        records,
        is_control=draw(st.booleans()),
        is_transactional=draw(st.booleans()),
        producer_id=draw(int64),
        producer_epoch=draw(st.integers(-(2**15), 2**15 - 1)),
        base_sequence=draw(int32),
        first_timestamp=draw(int64),
        max_timestamp=draw(int64),
        timestamp_type=draw(st.integers(0, 1)),
        has_delete_horizon=draw(st.booleans()),
    )


def assert_round_trip(batch: RecordBatch) -> None:
    """``batch`` decodes from its bytes (behind other bytes) to itself and encodes to them again."""
    raw = batch.encode()
    decoded, end = RecordBatch.decode(b"junk" + raw, 4)
    assert end == 4 + len(raw)
    assert decoded == batch
    assert decoded.encode() == raw


@examples.PURE()
@given(batches())
def test_batch_round_trip(batch: RecordBatch) -> None:
    assert_round_trip(batch)


def _batch() -> RecordBatch:
    return RecordBatch(
        10,
        2,
        [Record(0, 0, b"key", b"value", (("h", b"x"),)), Record(1, 7, None, b"second")],
        first_timestamp=1_700_000_000_000,
        max_timestamp=1_700_000_000_007,
    )


def test_every_single_byte_flip_is_detected() -> None:
    """Every byte the CRC covers, plus batchLength and magic, is checked by decode. Kafka's CRC
    deliberately excludes baseOffset (bytes 0-7) and partitionLeaderEpoch (12-15) so brokers can
    assign them; a flip there decodes with a different value. The log catches baseOffset flips by
    offset contiguity (test_log.py); leader-epoch flips are a gap of the format itself."""
    raw = _batch().encode()
    for i in range(len(raw)):
        for xor in (0x01, 0x80, 0xFF):
            bad = bytearray(raw)
            bad[i] ^= xor
            if i < 8 or 12 <= i < 16:
                decoded, _ = RecordBatch.decode(bytes(bad))
                assert (decoded.base_offset, decoded.partition_leader_epoch) != (10, 2)
                continue
            with pytest.raises((CorruptBatchError, UnsupportedBatchError)):
                RecordBatch.decode(bytes(bad))


def test_truncated_buffers_raise_truncated() -> None:
    raw = _batch().encode()
    for k in range(len(raw)):
        with pytest.raises(CorruptBatchError) as info:
            RecordBatch.decode(raw[:k])
        assert isinstance(info.value, TruncatedBatchError), (k, info.value)
        assert info.value.position == 0


def test_unassigned_compression_ids_are_unsupported() -> None:
    for cid in (5, 6, 7):
        raw = bytearray(_batch().encode())
        raw[22] |= cid  # attributes low byte: compression bits 0-2
        struct.pack_into(">I", raw, 17, crc32c(bytes(raw[21:])))
        with pytest.raises(UnsupportedBatchError, match=f"unknown compression id {cid}"):
            RecordBatch.decode(bytes(raw))
    with pytest.raises(ValueError, match="compression must be one of"):
        RecordBatch(0, 0, [], compression="brotli")


def test_bad_magic_and_length() -> None:
    raw = bytearray(_batch().encode())
    raw[16] = 1
    with pytest.raises(CorruptBatchError, match="magic"):
        RecordBatch.decode(bytes(raw))
    raw = bytearray(_batch().encode())
    struct.pack_into(">i", raw, 8, 10)
    with pytest.raises(CorruptBatchError, match="smaller than the minimum"):
        RecordBatch.decode(bytes(raw))


@examples.PURE()
@given(
    st.integers(-80, 80),
    st.integers(-80, 80),
    st.none() | st.binary(max_size=70),
    st.none() | st.binary(max_size=70),
    headers,
)
def test_fast_record_path_agrees_with_general_decoder(off: int, ts: int, key: bytes | None, value: bytes | None, hdrs) -> None:
    """The one-byte-varint fast path either declines (None) or decodes exactly as the general
    reader does."""
    from kraft.log.records import Record as R, _fast_record, _Reader

    rec = R(off, ts, key, value, hdrs)
    out = bytearray()
    rec.encode_into(out)
    raw = bytes(out) + b"\xff"  # trailing byte: the decoders must stop at the record's end
    general = R._decode(_Reader(raw, 0, len(raw), 0))
    assert general == rec
    fast = _fast_record(raw, 0, len(raw))
    if fast is not None:
        assert fast == (rec, len(out))
    simple = not hdrs and -64 <= off < 64 and -64 <= ts < 64 and len(out) < 65
    simple = simple and (key is None or len(key) < 64) and (value is None or len(value) < 64)
    if simple:
        assert fast is not None  # the common case does take the fast path


def test_a_batch_the_reader_would_refuse_is_not_written() -> None:
    """Offset deltas that do not increase, or a last record past lastOffsetDelta, would be
    refused by the reader as corrupt: the writer refuses them first."""
    with pytest.raises(ValueError, match="offsets must increase"):
        RecordBatch(0, 1, (Record(0, 0, None, b"a"), Record(0, 1, None, b"b"))).encode()
    with pytest.raises(ValueError, match="lastOffsetDelta 0"):
        RecordBatch(0, 1, (Record(0, 0, None, b"a"), Record(1, 1, None, b"b")), last_offset_delta=0).encode()
    gap = RecordBatch(0, 1, (Record(0, 0, None, b"a"), Record(2, 1, None, b"b")), last_offset_delta=3)
    assert RecordBatch.decode(gap.encode())[0].last_offset == 3   # compaction leaves gaps: allowed
