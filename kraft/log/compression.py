"""The four compression codecs of record batch format v2, framed exactly as Kafka frames them.

A compressed batch keeps its 61-byte header as it is; only the records section after it is one
compressed stream (``DefaultRecordBatch.recordInputStream`` in Kafka reads it through
``Compression.wrapForInput``; ``MemoryRecordsBuilder`` writes it through ``wrapForOutput``). The
codec id sits in bits 0-2 of the batch attributes (``CompressionType``: 0 none, 1 gzip, 2 snappy,
3 lz4, 4 zstd; 5-7 are unassigned). Kafka classes are under
``clients/src/main/java/org/apache/kafka/common/compress/``:

- gzip (``GzipCompression``): a gzip stream (``java.util.zip.GZIPOutputStream``), written with the
  Deflater's default level (zlib level 6). Concatenated members are read as one stream; bytes
  after the last member that do not start another are refused here, where Java's
  ``GZIPInputStream`` ignores them.
- snappy (``SnappyCompression``): xerial snappy-java's ``SnappyOutputStream`` framing: the 8-byte
  magic ``\\x82SNAPPY\\x00``, version and minimum-compatible version as big-endian int32 (1, 1),
  then blocks of big-endian int32 length + raw snappy data, each block at most 32 KiB of input.
  The header is written even for empty input. Read as snappy-java 1.1.10.5 (Kafka's version)
  ``SnappyInputStream`` reads: input that does not start with the 8-byte magic, or is shorter
  than the 16-byte header, is one raw snappy block; a block length equal to the magic's first
  four bytes starts a concatenated stream; fewer than four bytes left end the stream.
- lz4 (``Lz4Compression``, ``Lz4BlockOutputStream``/``Lz4BlockInputStream``): an LZ4 frame with
  FLG = version 1 + independent blocks (no block checksum, no content size, no content
  checksum), BD = 64 KiB blocks, and the header checksum byte = second byte of XXH32 over FLG and
  BD, as the LZ4 frame format defines it (magic v0 batches alone used the old checksum over the
  magic too; v2 never does). A block the compressor cannot shrink is stored raw with the high
  bit of its length set; a zero length ends the frame. The reader verifies the header checksum
  and block checksums, skips a content size and a content checksum without checking them, and
  refuses dependent blocks, as ``Lz4BlockInputStream`` does.
- zstd (``ZstdCompression``): a zstd frame, written at level 3 (``CompressionType.ZSTD``'s
  default); concatenated frames are read as one stream.

The compressed output need not equal the Java libraries' byte for byte (the compressors differ);
the framing does, so either side reads the other's batches.

Decompression is bounded: a records section that decompresses to more than ``limit`` bytes
(default :data:`MAX_DECOMPRESSED_BYTES`) raises :class:`DecompressedTooLarge` before the output
is materialised. Kafka itself sets no such bound.
"""

from __future__ import annotations

import struct
from typing import Any

import cramjam

__all__ = [
    "CODEC_IDS",
    "CODEC_NAMES",
    "MAX_DECOMPRESSED_BYTES",
    "DecompressionError",
    "DecompressedTooLarge",
    "compress",
    "decompress",
    "known_codec",
    "xxh32",
]

CODEC_NAMES = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}
CODEC_IDS = {name: cid for cid, name in CODEC_NAMES.items()}

MAX_DECOMPRESSED_BYTES = 64 * 1024 * 1024

GZIP_LEVEL = 6
ZSTD_LEVEL = 3

SNAPPY_MAGIC = b"\x82SNAPPY\x00"
SNAPPY_HEADER = SNAPPY_MAGIC + struct.pack(">ii", 1, 1)
SNAPPY_BLOCK = 32 * 1024
SNAPPY_MAX_CHUNK = 512 * 1024 * 1024  # SnappyInputStream.MAX_CHUNK_SIZE

LZ4_MAGIC = 0x184D2204
LZ4_FLG = 0x60  # version 01, block independence
LZ4_BD = 0x40  # block maximum size code 4: 64 KiB
LZ4_BLOCK = 64 * 1024
LZ4_UNCOMPRESSED_BIT = 0x80000000

_BE_INT32 = struct.Struct(">i")
_LE_UINT32 = struct.Struct("<I")
_LE_4UINT32 = struct.Struct("<4I")


def known_codec(instance: object, attribute: Any, value: str) -> None:
    """An attrs validator: ``value`` names a codec (``compression.type``'s values)."""
    if value not in CODEC_IDS:
        raise ValueError(f"{attribute.name} must be one of {', '.join(CODEC_IDS)}, got {value!r}")


class DecompressionError(ValueError):
    """The compressed records section is not a valid stream of its codec."""


class DecompressedTooLarge(DecompressionError):
    """The records section decompresses to more than the bound."""

    def __init__(self, codec: str, limit: int) -> None:
        self.limit = limit
        super().__init__(f"{codec} records section decompresses to more than {limit} bytes, the decompression bound")


# ------------------------------------------------------------------------------------ xxh32

_P1, _P2, _P3, _P4, _P5 = 2654435761, 2246822519, 3266489917, 668265263, 374761393
_M32 = 0xFFFFFFFF


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _M32


def _xxh32_round(acc: int, lane: int) -> int:
    return _rotl((acc + lane * _P2) & _M32, 13) * _P1 & _M32


def xxh32(data: bytes | memoryview, seed: int = 0) -> int:
    """XXH32, the checksum of the LZ4 frame format (header, block and content checksums)."""
    n = len(data)
    p = 0
    if n >= 16:
        v1, v2, v3, v4 = (seed + _P1 + _P2) & _M32, (seed + _P2) & _M32, seed, (seed - _P1) & _M32
        while p + 16 <= n:
            a, b, c, d = _LE_4UINT32.unpack_from(data, p)
            v1, v2, v3, v4 = _xxh32_round(v1, a), _xxh32_round(v2, b), _xxh32_round(v3, c), _xxh32_round(v4, d)
            p += 16
        h = (_rotl(v1, 1) + _rotl(v2, 7) + _rotl(v3, 12) + _rotl(v4, 18)) & _M32
    else:
        h = (seed + _P5) & _M32
    h = (h + n) & _M32
    while p + 4 <= n:
        h = _rotl((h + _LE_UINT32.unpack_from(data, p)[0] * _P3) & _M32, 17) * _P4 & _M32
        p += 4
    while p < n:
        h = _rotl((h + data[p] * _P5) & _M32, 11) * _P1 & _M32
        p += 1
    h = (h ^ (h >> 15)) * _P2 & _M32
    h = (h ^ (h >> 13)) * _P3 & _M32
    return h ^ (h >> 16)


def lz4_header_checksum(descriptor: bytes) -> int:
    """The frame descriptor's checksum byte: bits 8-15 of XXH32 over the descriptor (FLG, BD and
    the optional content size), without the magic."""
    return (xxh32(descriptor) >> 8) & 0xFF


# ------------------------------------------------------------------------------------ writers


def _snappy_compress(data: bytes) -> bytes:
    out = bytearray(SNAPPY_HEADER)
    for i in range(0, len(data), SNAPPY_BLOCK):
        block = bytes(cramjam.snappy.compress_raw(data[i : i + SNAPPY_BLOCK]))
        out += _BE_INT32.pack(len(block))
        out += block
    return bytes(out)


def _lz4_compress(data: bytes) -> bytes:
    out = bytearray(_LE_UINT32.pack(LZ4_MAGIC))
    out += bytes((LZ4_FLG, LZ4_BD, lz4_header_checksum(bytes((LZ4_FLG, LZ4_BD)))))
    for i in range(0, len(data), LZ4_BLOCK):
        chunk = data[i : i + LZ4_BLOCK]
        block = bytes(cramjam.lz4.compress_block(chunk, store_size=False))
        if len(block) >= len(chunk):
            out += _LE_UINT32.pack(len(chunk) | LZ4_UNCOMPRESSED_BIT)
            out += chunk
        else:
            out += _LE_UINT32.pack(len(block))
            out += block
    out += _LE_UINT32.pack(0)
    return bytes(out)


def compress(codec: str, data: bytes) -> bytes:
    """The records section ``data`` compressed as Kafka frames ``codec``."""
    if codec == "gzip":
        return bytes(cramjam.gzip.compress(data, level=GZIP_LEVEL))
    if codec == "snappy":
        return _snappy_compress(data)
    if codec == "lz4":
        return _lz4_compress(data)
    if codec == "zstd":
        return bytes(cramjam.zstd.compress(data, level=ZSTD_LEVEL))
    raise ValueError(f"unknown compression codec {codec!r}")


# ------------------------------------------------------------------------------------ readers


class _Budget:
    """Counts decompressed bytes against the bound."""

    def __init__(self, codec: str, limit: int) -> None:
        self.codec = codec
        self.left = limit
        self.limit = limit

    def take(self, n: int) -> None:
        if n > self.left:
            raise DecompressedTooLarge(self.codec, self.limit)
        self.left -= n


def _bounded_stream(codec: str, module: object, data: bytes, limit: int) -> bytes:
    """Decompress a whole gzip or zstd stream into a buffer that grows up to ``limit + 1`` bytes;
    a stream that fills that is larger than the bound. cramjam stops at the buffer's end (it
    either returns the buffer full or reports that it could not write everything), so a bomb
    costs at most the bound."""
    size = min(limit + 1, max(64 * 1024, 8 * len(data)))
    while True:
        out = bytearray(size)
        try:
            n = module.decompress_into(data, out)  # type: ignore[attr-defined]
        except cramjam.DecompressionError as exc:
            if "failed to write whole buffer" not in str(exc):
                raise DecompressionError(f"invalid {codec} stream: {exc}") from None
            n = size
        if n < size:
            return bytes(out[:n])
        if size > limit:
            raise DecompressedTooLarge(codec, limit)
        size = min(limit + 1, size * 4)


def _snappy_raw(block: bytes, budget: _Budget) -> bytes:
    try:
        n = cramjam.snappy.decompress_raw_len(block)
    except cramjam.DecompressionError as exc:
        raise DecompressionError(f"invalid snappy block: {exc}") from None
    budget.take(n)
    try:
        out = bytes(cramjam.snappy.decompress_raw(block))
    except cramjam.DecompressionError as exc:
        raise DecompressionError(f"invalid snappy block: {exc}") from None
    if len(out) != n:
        raise DecompressionError(f"snappy block declares {n} bytes but holds {len(out)}")
    return out


def _snappy_decompress(data: bytes, budget: _Budget) -> bytes:
    if not data:
        raise DecompressionError("empty snappy stream")
    if len(data) < len(SNAPPY_HEADER) or data[:8] != SNAPPY_MAGIC:
        return _snappy_raw(data, budget)
    out = bytearray()
    p = len(SNAPPY_HEADER)
    head = _BE_INT32.unpack(SNAPPY_MAGIC[:4])[0]
    while len(data) - p >= 4:
        (chunk,) = _BE_INT32.unpack_from(data, p)
        p += 4
        if chunk == head:  # a concatenated stream: its header again
            if len(data) - p < len(SNAPPY_HEADER) - 4:
                raise DecompressionError(f"concatenated snappy header cut short at byte {p}")
            magic_end = data[p : p + 4]
            (version,) = _BE_INT32.unpack_from(data, p + 4)
            p += len(SNAPPY_HEADER) - 4
            if magic_end != SNAPPY_MAGIC[4:]:
                break
            if version < 1:
                raise DecompressionError(f"snappy stream version {version}; at least 1 is required")
            continue
        if chunk < 0 or chunk > SNAPPY_MAX_CHUNK:
            raise DecompressionError(f"snappy block length {chunk} at byte {p - 4} is out of range")
        if len(data) - p < chunk:
            raise DecompressionError(f"snappy block of {chunk} bytes at byte {p - 4} runs past the end")
        out += _snappy_raw(data[p : p + chunk], budget)
        p += chunk
    return bytes(out)


def _lz4_header(data: bytes) -> tuple[int, int, int]:
    """Check an LZ4 frame header; return (FLG, maximum block size, position after it)."""
    if len(data) < 6:
        raise DecompressionError("lz4 frame shorter than its header")
    if _LE_UINT32.unpack_from(data, 0)[0] != LZ4_MAGIC:
        raise DecompressionError(f"lz4 frame magic {bytes(data[:4]).hex()}, expected {_LE_UINT32.pack(LZ4_MAGIC).hex()}")
    flg, bd = data[4], data[5]
    if flg & 0x03 or not flg & 0x20 or flg >> 6 != 1:
        raise DecompressionError(f"lz4 FLG 0x{flg:02x}: need version 1, independent blocks, reserved bits 0")
    if bd & 0x8F or not 4 <= (bd >> 4) & 7 <= 7:
        raise DecompressionError(f"lz4 BD 0x{bd:02x}: need block size code 4-7, reserved bits 0")
    end = 6 + (8 if flg & 0x08 else 0)
    if len(data) < end + 1:
        raise DecompressionError("lz4 frame header cut short")
    expected = lz4_header_checksum(bytes(data[4:end]))
    if data[end] != expected:
        raise DecompressionError(f"lz4 frame descriptor checksum 0x{data[end]:02x}, expected 0x{expected:02x}")
    return flg, 1 << (2 * ((bd >> 4) & 7) + 8), end + 1


def _lz4_block(block: bytes, max_block: int) -> bytes:
    out = bytearray(max_block)
    try:
        n = cramjam.lz4.decompress_block_into(block, out)
    except cramjam.DecompressionError as exc:
        raise DecompressionError(f"invalid lz4 block: {exc}") from None
    return bytes(out[:n])


def _lz4_decompress(data: bytes, budget: _Budget) -> bytes:
    flg, max_block, p = _lz4_header(data)
    out = bytearray()
    while True:
        if len(data) - p < 4:
            raise DecompressionError("lz4 frame ends before its end mark")
        (size,) = _LE_UINT32.unpack_from(data, p)
        p += 4
        raw = bool(size & LZ4_UNCOMPRESSED_BIT)
        size &= ~LZ4_UNCOMPRESSED_BIT
        if size == 0:
            if flg & 0x04 and len(data) - p < 4:
                raise DecompressionError("lz4 content checksum cut short")
            return bytes(out)
        if size > max_block:
            raise DecompressionError(f"lz4 block of {size} bytes exceeds the frame's maximum {max_block}")
        if len(data) - p < size:
            raise DecompressionError(f"lz4 block of {size} bytes at byte {p - 4} runs past the end")
        block = data[p : p + size]
        p += size
        if flg & 0x10:
            if len(data) - p < 4:
                raise DecompressionError("lz4 block checksum cut short")
            if _LE_UINT32.unpack_from(data, p)[0] != xxh32(block):
                raise DecompressionError(f"lz4 block checksum mismatch at byte {p}")
            p += 4
        plain = block if raw else _lz4_block(block, max_block)
        budget.take(len(plain))
        out += plain


def decompress(codec: str, data: bytes, limit: int = MAX_DECOMPRESSED_BYTES) -> bytes:
    """The records section inside ``data``, a stream of ``codec`` as Kafka reads it. Raises
    :class:`DecompressionError` for an invalid stream, :class:`DecompressedTooLarge` past
    ``limit`` bytes."""
    if codec in ("gzip", "zstd"):
        return _bounded_stream(codec, getattr(cramjam, codec), data, limit)
    if codec == "snappy":
        return _snappy_decompress(data, _Budget(codec, limit))
    if codec == "lz4":
        return _lz4_decompress(data, _Budget(codec, limit))
    raise ValueError(f"unknown compression codec {codec!r}")
