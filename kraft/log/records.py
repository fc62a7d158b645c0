"""Kafka record batches, message format v2 (magic 2), byte for byte as Kafka lays them out.

Batch header (61 bytes, big-endian), offsets from the batch start::

     0 baseOffset int64            27 baseTimestamp int64
     8 batchLength int32           35 maxTimestamp int64
    12 partitionLeaderEpoch int32  43 producerId int64
    16 magic int8 (= 2)            51 producerEpoch int16
    17 crc uint32                  53 baseSequence int32
    21 attributes int16            57 records count int32
    23 lastOffsetDelta int32       61 records...

``batchLength`` counts the bytes after itself (total size - 12). The CRC is CRC-32C (Castagnoli)
over attributes..end (bytes 21..end); Kafka leaves baseOffset, batchLength and
partitionLeaderEpoch outside it so a broker can assign offsets and stamp the leader epoch without
recomputing it (see ``DefaultRecordBatch`` in Kafka and KIP-98/KIP-101). Attributes: compression
in bits 0-2, timestamp type bit 3, transactional bit 4, control bit 5, delete-horizon bit 6.

A compressed batch (``compression`` gzip, snappy, lz4 or zstd; framing in
:mod:`kraft.log.compression`) keeps this header; the records section after byte 61 is one
compressed stream, and the CRC covers the compressed bytes. Count and lastOffsetDelta are
those of the records inside, and Kafka, like this decoder, rejects decompressed bytes left over
after ``count`` records (``DefaultRecordBatch.RecordIterator``).

Each record: length varint, attributes int8, timestampDelta varlong, offsetDelta varint,
keyLength varint + key (-1 = null), valueLength varint + value (-1 = null), headers count varint,
each header: key length varint + UTF-8 key, value length varint + value (-1 = null). All varints
are zig-zag encoded (protobuf style), as in Kafka's ``ByteUtils.writeVarint``.

Control records (KIP-98, KIP-595, KIP-853): key = version int16 (0) + type int16; the value's
schema depends on the type. ``LEADER_CHANGE`` carries Kafka's ``LeaderChangeMessage`` v0 (a
flexible message: Version int16, LeaderId int32, Voters and GrantingVoters as compact arrays of
``{VoterId int32, tagged fields}``, then tagged fields).
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import Any, Iterator

import attrs
import crc32c as _crc32c

from .codec import SchemaError
from .compression import (
    CODEC_IDS,
    CODEC_NAMES,
    MAX_DECOMPRESSED_BYTES,
    DecompressedTooLarge,
    DecompressionError,
    compress,
    decompress,
    known_codec,
)
from .control import ControlType, control_key, encode_control
from .control import decode_control as decode_control_value

__all__ = [
    "MAGIC",
    "HEADER_SIZE",
    "ControlType",
    "Record",
    "RecordBatch",
    "iter_batches",
    "CorruptBatchError",
    "TruncatedBatchError",
    "UnsupportedBatchError",
    "control_batch",
    "leader_change_batch",
    "encode_leader_change",
    "decode_leader_change",
    "decode_control",
    "crc32c",
]

MAGIC = 2
HEADER_SIZE = 61
LENGTH_OFFSET = 8
LOG_OVERHEAD = 12  # baseOffset + batchLength
CRC_OFFSET = 17
ATTRIBUTES_OFFSET = 21
MIN_BATCH_LENGTH = HEADER_SIZE - LOG_OVERHEAD  # 49

COMPRESSION_MASK = 0x07
TIMESTAMP_TYPE_BIT = 0x08
TRANSACTIONAL_BIT = 0x10
CONTROL_BIT = 0x20
DELETE_HORIZON_BIT = 0x40

_HEADER = struct.Struct(">qiibIhiqqqhii")
_INT32 = struct.Struct(">i")


def crc32c(data: bytes | bytearray | memoryview) -> int:
    """CRC-32C (Castagnoli), the checksum of record batch format v2."""
    return _crc32c.crc32c(data)


class CorruptBatchError(ValueError):
    """A batch that is not a valid v2 batch. ``path`` is the file (None for an in-memory buffer),
    ``position`` the byte position of the batch start in it, ``why`` what is wrong."""

    def __init__(self, path: str | None, position: int, why: str) -> None:
        self.path = path
        self.position = position
        self.why = why
        where = f"{path}: " if path else ""
        super().__init__(f"{where}corrupt record batch at byte position {position}: {why}")

    def with_path(self, path: str) -> "CorruptBatchError":
        return type(self)(path, self.position, self.why)


class TruncatedBatchError(CorruptBatchError):
    """The buffer ends inside the batch (what a torn write leaves at the tail of a segment)."""


class UnsupportedBatchError(ValueError):
    """A batch this implementation does not read: an unassigned compression id (5-7), or a
    records section that decompresses past the decompression bound."""

    def __init__(self, path: str | None, position: int, why: str) -> None:
        self.path = path
        self.position = position
        self.why = why
        where = f"{path}: " if path else ""
        super().__init__(f"{where}unsupported record batch at byte position {position}: {why}")


# ------------------------------------------------------------------------------------ varints


def _zigzag(n: int) -> int:
    return (n << 1) if n >= 0 else ((-n) << 1) - 1


def _unzigzag(z: int) -> int:
    return (z >> 1) ^ -(z & 1)


def _write_uvarint(out: bytearray, z: int) -> None:
    while z >= 0x80:
        out.append((z & 0x7F) | 0x80)
        z >>= 7
    out.append(z)


def write_varint(out: bytearray, n: int) -> None:
    """Zig-zag varint of a signed 32-bit value."""
    if not -(1 << 31) <= n < (1 << 31):
        raise ValueError(f"varint out of int32 range: {n}")
    _write_uvarint(out, _zigzag(n))


def write_varlong(out: bytearray, n: int) -> None:
    """Zig-zag varint of a signed 64-bit value."""
    if not -(1 << 63) <= n < (1 << 63):
        raise ValueError(f"varlong out of int64 range: {n}")
    _write_uvarint(out, _zigzag(n))


class _Reader:
    """Bounds-checked reads from ``buf[pos:end]``; errors name the absolute byte position."""

    __slots__ = ("buf", "pos", "end", "origin", "where")

    def __init__(self, buf: bytes | bytearray | memoryview, pos: int, end: int, origin: int, where: str = "") -> None:
        self.buf = buf
        self.pos = pos
        self.end = end
        self.origin = origin
        self.where = where  # what ``pos`` counts in, when not the buffer handed in

    def fail(self, why: str) -> CorruptBatchError:
        return CorruptBatchError(None, self.origin, f"{why} (at byte {self.pos}{self.where})")

    def uvarint(self, max_bytes: int) -> int:
        result = 0
        shift = 0
        buf = self.buf
        for _ in range(max_bytes):
            if self.pos >= self.end:
                raise self.fail("varint runs past the end of the batch")
            b = buf[self.pos]
            self.pos += 1
            result |= (b & 0x7F) << shift
            if not b & 0x80:
                return result
            shift += 7
        raise self.fail(f"varint longer than {max_bytes} bytes")

    def varint(self) -> int:
        z = self.uvarint(5)
        if z >> 32:
            raise self.fail("varint overflows int32")
        return _unzigzag(z)

    def varlong(self) -> int:
        z = self.uvarint(10)
        if z >> 64:
            raise self.fail("varlong overflows int64")
        return _unzigzag(z)

    def take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > self.end:
            raise self.fail(f"field of {n} bytes runs past the end of its container")
        v = bytes(self.buf[self.pos : self.pos + n])
        self.pos += n
        return v

    def int8(self) -> int:
        return struct.unpack(">b", self.take(1))[0]

    def int16(self) -> int:
        return struct.unpack(">h", self.take(2))[0]

    def int32(self) -> int:
        return struct.unpack(">i", self.take(4))[0]

    def int64(self) -> int:
        return struct.unpack(">q", self.take(8))[0]


# ------------------------------------------------------------------------------------ records


@attrs.frozen
class Record:
    """One record of a v2 batch (offset and timestamp are deltas from the batch's base)."""

    offset_delta: int
    timestamp_delta: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...] = attrs.field(default=(), converter=tuple)
    attributes: int = 0  # unused by Kafka (kept for fidelity)

    def encode_into(self, out: bytearray) -> None:
        body = bytearray()
        body.append(self.attributes & 0xFF)
        write_varlong(body, self.timestamp_delta)
        write_varint(body, self.offset_delta)
        if self.key is None:
            write_varint(body, -1)
        else:
            write_varint(body, len(self.key))
            body += self.key
        if self.value is None:
            write_varint(body, -1)
        else:
            write_varint(body, len(self.value))
            body += self.value
        write_varint(body, len(self.headers))
        for hk, hv in self.headers:
            kb = hk.encode("utf-8")
            write_varint(body, len(kb))
            body += kb
            if hv is None:
                write_varint(body, -1)
            else:
                write_varint(body, len(hv))
                body += hv
        write_varint(out, len(body))
        out += body

    @classmethod
    def _decode(cls, r: _Reader) -> "Record":
        length = r.varint()
        if length < 0:
            raise r.fail(f"negative record length {length}")
        end = r.pos + length
        if end > r.end:
            raise r.fail(f"record of {length} bytes runs past the end of the batch")
        outer_end = r.end
        r.end = end
        attributes = r.int8() & 0xFF
        ts_delta = r.varlong()
        off_delta = r.varint()
        klen = r.varint()
        key = None if klen == -1 else r.take(klen) if klen >= 0 else None
        if klen < -1:
            raise r.fail(f"invalid key length {klen}")
        vlen = r.varint()
        if vlen < -1:
            raise r.fail(f"invalid value length {vlen}")
        value = None if vlen == -1 else r.take(vlen)
        nheaders = r.varint()
        if nheaders < 0:
            raise r.fail(f"invalid header count {nheaders}")
        headers = []
        for _ in range(nheaders):
            hklen = r.varint()
            if hklen < 0:
                raise r.fail(f"invalid header key length {hklen}")
            try:
                hk = r.take(hklen).decode("utf-8")
            except UnicodeDecodeError:
                raise r.fail("header key is not UTF-8") from None
            hvlen = r.varint()
            if hvlen < -1:
                raise r.fail(f"invalid header value length {hvlen}")
            headers.append((hk, None if hvlen == -1 else r.take(hvlen)))
        if r.pos != end:
            raise r.fail(f"record declares {length} bytes but its fields use {length - (end - r.pos)}")
        r.end = outer_end
        return cls(off_delta, ts_delta, key, value, tuple(headers), attributes)


def _fast_record(buf: Any, p: int, end: int) -> tuple[Record, int] | None:
    """Decode the common simple record (every varint one byte, no headers) without the general
    reader; ``None`` sends the caller to the general path, which also produces exact errors."""
    b = buf[p]
    if b & 0x80:
        return None
    length = (b >> 1) ^ -(b & 1)
    q = p + 1
    rend = q + length
    if length < 5 or rend > end:
        return None
    attributes, ts, od, kl = buf[q], buf[q + 1], buf[q + 2], buf[q + 3]
    if (ts | od | kl) & 0x80:
        return None
    q += 4
    klen = (kl >> 1) ^ -(kl & 1)
    if klen == -1:
        key = None
    elif 0 <= klen and q + klen < rend:
        key = bytes(buf[q : q + klen])
        q += klen
    else:
        return None
    vl = buf[q]
    if vl & 0x80:
        return None
    vlen = (vl >> 1) ^ -(vl & 1)
    q += 1
    if vlen == -1:
        value = None
    elif 0 <= vlen and q + vlen < rend:
        value = bytes(buf[q : q + vlen])
        q += vlen
    else:
        return None
    if q + 1 != rend or buf[q] != 0:
        return None
    return Record((od >> 1) ^ -(od & 1), (ts >> 1) ^ -(ts & 1), key, value, (), attributes), rend


def _records_converter(v: Any) -> tuple[Record, ...]:
    return tuple(v)


def _decompress_records(codec: str, buf: Any, pos: int, end: int, limit: int) -> bytes:
    """The records section of the compressed batch at ``buf[pos:end]``, decompressed."""
    try:
        return decompress(codec, bytes(buf[pos + HEADER_SIZE : end]), limit)
    except DecompressedTooLarge as exc:
        raise UnsupportedBatchError(None, pos, str(exc)) from None
    except DecompressionError as exc:
        raise CorruptBatchError(None, pos, f"records section (bytes {pos + HEADER_SIZE}-{end - 1}): {exc}") from None


def _decode_records(r: _Reader, count: int) -> list[Record]:
    """``count`` records from ``r``, offsetDeltas strictly increasing."""
    records = []
    prev_delta = -1
    buf, end = r.buf, r.end
    for i in range(count):
        fast = _fast_record(buf, r.pos, end) if r.pos < end else None
        if fast is not None:
            rec, r.pos = fast
        else:
            rec = Record._decode(r)
        if rec.offset_delta <= prev_delta:
            raise CorruptBatchError(None, r.origin, f"record {i} has offsetDelta {rec.offset_delta} after {prev_delta} (offsets must increase)")
        prev_delta = rec.offset_delta
        records.append(rec)
    return records


@attrs.frozen(eq=True)
class RecordBatch:
    """A v2 record batch. ``encode()`` gives Kafka's bytes; ``decode`` checks everything it can."""

    base_offset: int
    partition_leader_epoch: int
    records: tuple[Record, ...] = attrs.field(converter=_records_converter)
    is_control: bool = attrs.field(default=False, kw_only=True)
    is_transactional: bool = attrs.field(default=False, kw_only=True)
    producer_id: int = attrs.field(default=-1, kw_only=True)
    producer_epoch: int = attrs.field(default=-1, kw_only=True)
    base_sequence: int = attrs.field(default=-1, kw_only=True)
    first_timestamp: int = attrs.field(default=0, kw_only=True)
    max_timestamp: int = attrs.field(default=0, kw_only=True)
    compression: str = attrs.field(default="none", kw_only=True, validator=known_codec)
    timestamp_type: int = attrs.field(default=0, kw_only=True)  # 0 CreateTime, 1 LogAppendTime
    has_delete_horizon: bool = attrs.field(default=False, kw_only=True)
    last_offset_delta: int = attrs.field(default=None, kw_only=True)  # default: last record's delta

    def __attrs_post_init__(self) -> None:
        if self.last_offset_delta is None:
            object.__setattr__(self, "last_offset_delta", self.records[-1].offset_delta if self.records else 0)

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.last_offset + 1

    @property
    def attributes(self) -> int:
        a = CODEC_IDS[self.compression]
        if self.timestamp_type:
            a |= TIMESTAMP_TYPE_BIT
        if self.is_transactional:
            a |= TRANSACTIONAL_BIT
        if self.is_control:
            a |= CONTROL_BIT
        if self.has_delete_horizon:
            a |= DELETE_HORIZON_BIT
        return a

    def _check_offsets(self) -> None:
        """Refuse to write what the reader (``decode``) would call corrupt: offset deltas that do
        not increase, or run past ``lastOffsetDelta`` (Kafka's ``MemoryRecordsBuilder`` assigns
        them, so it cannot write such a batch)."""
        prev = -1
        for i, rec in enumerate(self.records):
            if rec.offset_delta <= prev:
                raise ValueError(f"record {i} has offsetDelta {rec.offset_delta} after {prev} (offsets must increase)")
            prev = rec.offset_delta
        if prev > self.last_offset_delta or self.last_offset_delta < 0:
            raise ValueError(f"lastOffsetDelta {self.last_offset_delta} with a last record at offsetDelta {prev}")

    def encode(self) -> bytes:
        self._check_offsets()
        out = bytearray(HEADER_SIZE)
        if self.compression == "none":
            for rec in self.records:
                rec.encode_into(out)
        else:
            body = bytearray()
            for rec in self.records:
                rec.encode_into(body)
            out += compress(self.compression, bytes(body))
        _HEADER.pack_into(
            out,
            0,
            self.base_offset,
            len(out) - LOG_OVERHEAD,
            self.partition_leader_epoch,
            MAGIC,
            0,
            self.attributes,
            self.last_offset_delta,
            self.first_timestamp,
            self.max_timestamp,
            self.producer_id,
            self.producer_epoch,
            self.base_sequence,
            len(self.records),
        )
        struct.pack_into(">I", out, CRC_OFFSET, _crc32c.crc32c(memoryview(out)[ATTRIBUTES_OFFSET:]))
        return bytes(out)

    @property
    def size(self) -> int:
        return len(self.encode())

    @classmethod
    def decode(
        cls, buf: bytes | bytearray | memoryview, pos: int = 0, *, max_decompressed: int = MAX_DECOMPRESSED_BYTES
    ) -> tuple["RecordBatch", int]:
        """Decode the batch at ``buf[pos:]``; return it and the position just after it.

        Raises :class:`TruncatedBatchError` if the buffer ends inside the batch,
        :class:`CorruptBatchError` for anything invalid (length, magic, CRC, compressed stream,
        record framing), :class:`UnsupportedBatchError` for an unassigned compression id or a
        records section that decompresses to more than ``max_decompressed`` bytes."""
        n = len(buf)
        if n - pos < LOG_OVERHEAD:
            raise TruncatedBatchError(None, pos, f"only {n - pos} bytes left, a batch header needs {HEADER_SIZE}")
        (length,) = _INT32.unpack_from(buf, pos + LENGTH_OFFSET)
        if length < MIN_BATCH_LENGTH:
            raise CorruptBatchError(None, pos, f"batchLength {length} is smaller than the minimum {MIN_BATCH_LENGTH}")
        end = pos + LOG_OVERHEAD + length
        if n - pos < HEADER_SIZE:
            raise TruncatedBatchError(None, pos, f"only {n - pos} bytes left, a batch header needs {HEADER_SIZE}")
        magic = buf[pos + 16]
        if magic != MAGIC:
            raise CorruptBatchError(None, pos, f"magic {magic} (expected {MAGIC})")
        if end > n:
            raise TruncatedBatchError(None, pos, f"batchLength {length} runs {end - n} bytes past the end of the data")
        (
            base_offset,
            _length,
            leader_epoch,
            _magic,
            stored_crc,
            attributes,
            last_offset_delta,
            first_ts,
            max_ts,
            producer_id,
            producer_epoch,
            base_sequence,
            count,
        ) = _HEADER.unpack_from(buf, pos)
        computed = _crc32c.crc32c(memoryview(buf)[pos + ATTRIBUTES_OFFSET : end])
        if computed != stored_crc:
            raise CorruptBatchError(None, pos, f"CRC-32C mismatch: stored {stored_crc}, computed {computed}")
        codec = CODEC_NAMES.get(attributes & COMPRESSION_MASK)
        if codec is None:
            raise UnsupportedBatchError(None, pos, f"unknown compression id {attributes & COMPRESSION_MASK} (Kafka assigns 0-4)")
        if attributes & ~0x7F & 0xFFFF:
            raise CorruptBatchError(None, pos, f"unknown attribute bits 0x{attributes:04x}")
        if count < 0:
            raise CorruptBatchError(None, pos, f"negative record count {count}")
        if codec == "none":
            r = _Reader(buf, pos + HEADER_SIZE, end, pos)
        else:
            plain = _decompress_records(codec, buf, pos, end, max_decompressed)
            r = _Reader(plain, 0, len(plain), pos, f" of the decompressed {codec} records section")
        records = _decode_records(r, count)
        if r.pos != r.end:
            raise CorruptBatchError(None, pos, f"{r.end - r.pos} bytes left over after {count} records")
        if records and records[-1].offset_delta > last_offset_delta:
            raise CorruptBatchError(None, pos, f"record offsetDelta {records[-1].offset_delta} exceeds lastOffsetDelta {last_offset_delta}")
        if last_offset_delta < 0:
            raise CorruptBatchError(None, pos, f"negative lastOffsetDelta {last_offset_delta}")
        is_control = bool(attributes & CONTROL_BIT)
        batch = cls(
            base_offset,
            leader_epoch,
            tuple(records),
            is_control=is_control,
            is_transactional=bool(attributes & TRANSACTIONAL_BIT),
            producer_id=producer_id,
            producer_epoch=producer_epoch,
            base_sequence=base_sequence,
            first_timestamp=first_ts,
            max_timestamp=max_ts,
            compression=codec,
            timestamp_type=1 if attributes & TIMESTAMP_TYPE_BIT else 0,
            has_delete_horizon=bool(attributes & DELETE_HORIZON_BIT),
            last_offset_delta=last_offset_delta,
        )
        return batch, end

    @property
    def control_type(self) -> ControlType | None:
        """The control type of a control batch's (first) record."""
        if not self.is_control or not self.records or self.records[0].key is None or len(self.records[0].key) < 4:
            return None
        t = struct.unpack(">h", self.records[0].key[2:4])[0]
        try:
            return ControlType(t)
        except ValueError:
            return None


# ------------------------------------------------------------------------------------ control


def encode_leader_change(leader_id: int, voters: list[int] | tuple[int, ...], granting_voters: list[int] | tuple[int, ...] = ()) -> bytes:
    """Kafka's ``LeaderChangeMessage`` version 0 from the schema table: Version int16 (0),
    LeaderId int32, Voters and GrantingVoters as compact arrays of {VoterId int32}."""
    fields = {
        "version": 0,
        "leaderId": leader_id,
        "voters": [{"voterId": v} for v in voters],
        "grantingVoters": [{"voterId": v} for v in granting_voters],
    }
    return encode_control(ControlType.LEADER_CHANGE, fields)[1]


def decode_leader_change(value: bytes) -> dict[str, Any]:
    """The fields of a ``LeaderChangeMessage`` value; ``ValueError`` if it is malformed."""
    try:
        return decode_control_value(control_key(ControlType.LEADER_CHANGE), value)[2]
    except SchemaError as exc:
        raise ValueError(f"malformed LeaderChangeMessage: {exc}") from None


def decode_control(record: Record) -> tuple[ControlType | int, dict[str, Any] | None]:
    """Decode a control record's key and value (``ValueError`` if either is malformed); an
    unknown type gives its number and None."""
    kind, _version, fields = decode_control_value(record.key, record.value)
    if kind == "UNKNOWN":
        return fields["type"], None
    return ControlType[kind], fields


def iter_batches(buf: bytes | bytearray | memoryview, pos: int = 0) -> Iterator[tuple[int, RecordBatch]]:
    """Every batch of ``buf`` from ``pos`` on, with its byte position; a bad batch raises what
    :meth:`RecordBatch.decode` raises."""
    while pos < len(buf):
        batch, end = RecordBatch.decode(buf, pos)
        yield pos, batch
        pos = end


def control_batch(
    base_offset: int,
    epoch: int,
    records: Sequence[tuple[ControlType, dict[str, Any]]],
    timestamp: int,
) -> RecordBatch:
    """One control batch holding ``records`` (kind, value fields) in order, every record at
    ``timestamp``, as ``MemoryRecordsBuilder`` builds a control batch (CreateTime, no producer,
    not transactional, the leader epoch ``epoch``). The value is written at the control schema's
    version 0; each ``fields`` dict holds the value's fields but ``version`` (always 0)."""
    recs = tuple(Record(i, 0, *encode_control(kind, {"version": 0, **fields})) for i, (kind, fields) in enumerate(records))
    return RecordBatch(base_offset, epoch, recs, is_control=True, first_timestamp=timestamp, max_timestamp=timestamp)


def leader_change_batch(
    base_offset: int,
    epoch: int,
    leader_id: int,
    voters: list[int] | tuple[int, ...],
    timestamp: int,
    granting_voters: list[int] | tuple[int, ...] = (),
) -> RecordBatch:
    """The control batch a new KRaft leader appends at the start of its epoch (KIP-595):
    one control record, key (0, LEADER_CHANGE), value a ``LeaderChangeMessage``."""
    rec = Record(0, 0, control_key(ControlType.LEADER_CHANGE), encode_leader_change(leader_id, voters, granting_voters))
    return RecordBatch(
        base_offset,
        epoch,
        (rec,),
        is_control=True,
        first_timestamp=timestamp,
        max_timestamp=timestamp,
    )
