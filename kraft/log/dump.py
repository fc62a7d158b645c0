"""What ``kraft dump-log`` prints, line for line as Kafka's ``DumpLogSegments`` (kafka-dump-log.sh)
prints it (``core/src/main/scala/kafka/tools/DumpLogSegments.scala``: ``printBatchLevel``,
``dumpLog``, ``dumpIndex``, ``dumpTimeIndex``, ``TimeIndexDumpErrors.printErrors``).

Batches are walked as ``FileLogInputStream.nextBatch`` walks them: by their length field, without
checking the CRC first, so a batch whose CRC does not match is printed with ``isvalid: false`` and
its stored ``crc``. Records are printed as ``DefaultRecordBatch`` yields them: the timestamp of a
record in a LogAppendTime batch is the batch's max timestamp, and its sequence is
``incrementSequence(baseSequence, offsetDelta)`` (wrapping past Int32.MAX to 0).

Where Kafka stops with an exception (a length below the minimum, a record it cannot decode, an
index entry pointing at no batch), this module records a :class:`Problem` naming the file and the
byte position instead, and the command exits 2.
"""

from __future__ import annotations

import json
import os
import struct
from collections.abc import Callable
from typing import Any

import attrs

from .index import decode_offset_index, decode_time_index, lookup_position, offset_index_sanity, time_index_sanity
from .index import OFFSET_ENTRY_SIZE, TIME_ENTRY_SIZE
from .compression import CODEC_NAMES
from .records import (
    CRC_OFFSET,
    LOG_OVERHEAD,
    MAGIC,
    MIN_BATCH_LENGTH,
    ControlType,
    CorruptBatchError,
    Record,
    RecordBatch,
    UnsupportedBatchError,
    crc32c,
    decode_control,
)
from .snapshot import parse_snapshot_path

__all__ = ["DumpOptions", "Dumper", "Problem", "increment_sequence", "INT32_MAX"]

INT32_MAX = (1 << 31) - 1
HEADER_SIZE_UP_TO_MAGIC = 17  # FileLogInputStream: offset, length, leader epoch, magic
BOOTSTRAP_SNAPSHOT = "bootstrap.checkpoint"  # BootstrapDirectory.BINARY_BOOTSTRAP_FILENAME
_BATCH = struct.Struct(">qiibIhiqqqhii")

Parser = Callable[[RecordBatch, Record], tuple[str | None, str | None]]


class Skipped(str):
    """The text a decoder prints in place of a record it could not decode (Kafka's
    ``Error at OFFSET, skipping. ...``); the dump counts these and reports them at the end."""


def increment_sequence(sequence: int, increment: int) -> int:
    """``DefaultRecordBatch.incrementSequence``: add, wrapping past Int32.MAX to 0."""
    if sequence > INT32_MAX - increment:
        return increment - (INT32_MAX - sequence) - 1
    return sequence + increment


@attrs.frozen
class Problem:
    """Input the dump could not read: file, byte position (None for a whole file), and why,
    as ``kind: detail`` when there is a position."""

    path: str
    position: int | None
    why: str

    def __str__(self) -> str:
        if self.position is None:
            return f"kraft dump-log: {self.path}: {self.why}"
        kind, _, detail = self.why.partition(": ")
        return f"kraft dump-log: {self.path}: {kind} at byte position {self.position}: {detail}"


@attrs.frozen
class DumpOptions:
    deep: bool = False
    print_data: bool = False
    skip_record_metadata: bool = False
    verify_only: bool = False
    index_sanity_only: bool = False
    max_bytes: int = INT32_MAX
    max_message_size: int = 5 * 1024 * 1024
    parser: Parser | None = None


@attrs.frozen
class _Header:
    """The fields of a v2 batch header, read without validating anything but the length."""

    base_offset: int
    length: int
    leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    count: int

    @property
    def size(self) -> int:
        return LOG_OVERHEAD + self.length

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta


def _ts_type(batch: RecordBatch | _Header) -> str:
    attributes = batch.attributes
    return "LogAppendTime" if attributes & 0x08 else "CreateTime"


def _bool(b: bool) -> str:
    return "true" if b else "false"


def format_batch(h: _Header, position: int, valid: bool) -> str:
    """``printBatchLevel`` for a magic-2 batch."""
    last_seq = -1 if h.base_sequence == -1 else increment_sequence(h.base_sequence, h.last_offset_delta)
    horizon = f"OptionalLong[{h.base_timestamp}]" if h.attributes & 0x40 else "OptionalLong.empty"
    codec = CODEC_NAMES.get(h.attributes & 0x07, f"unknown({h.attributes & 0x07})")
    return (
        f"baseOffset: {h.base_offset} lastOffset: {h.last_offset} count: {h.count} "
        f"baseSequence: {h.base_sequence} lastSequence: {last_seq} producerId: {h.producer_id} "
        f"producerEpoch: {h.producer_epoch} partitionLeaderEpoch: {h.leader_epoch} "
        f"isTransactional: {_bool(bool(h.attributes & 0x10))} isControl: {_bool(bool(h.attributes & 0x20))} "
        f"deleteHorizonMs: {horizon} position: {position} {_ts_type(h)}: {h.max_timestamp} size: {h.size} "
        f"magic: {h.magic} compresscodec: {codec} crc: {h.crc} isvalid: {_bool(valid)}"
    )


def record_timestamp(batch: RecordBatch, rec: Record) -> int:
    if batch.timestamp_type:
        return batch.max_timestamp
    return batch.first_timestamp + rec.timestamp_delta


def _json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


_CONTROL_JSON = {
    ControlType.SNAPSHOT_HEADER: "SnapshotHeader",
    ControlType.SNAPSHOT_FOOTER: "SnapshotFooter",
    ControlType.KRAFT_VERSION: "KRaftVersion",
    ControlType.KRAFT_VOTERS: "KRaftVoters",
}


def _control_text(rec: Record) -> str:
    """What ``dumpLog`` appends for a control record: the decoded value of the types it
    decodes, else ``controlType: NAME(id)`` (``UNKNOWN`` for a type Kafka does not know)."""
    type_id = struct.unpack(">h", rec.key[2:4])[0] if rec.key is not None and len(rec.key) >= 4 else -1
    try:
        ctype: ControlType | None = ControlType(type_id)
    except ValueError:
        ctype = None
    try:
        value = decode_control(rec)[1] if ctype is not None and ctype != ControlType.LEADER_CHANGE else None
    except ValueError:
        value = None
    if ctype in (ControlType.ABORT, ControlType.COMMIT) and value is not None:
        return f" endTxnMarker: {ctype.name} coordinatorEpoch: {value['coordinatorEpoch']}"
    if ctype in _CONTROL_JSON and value is not None:
        return f" {_CONTROL_JSON[ctype]} {_json(value)}"
    return f" controlType: {ctype.name}({type_id})" if ctype is not None else f" controlType: UNKNOWN({type_id})"


def string_parser(batch: RecordBatch, rec: Record) -> tuple[str | None, str | None]:
    """Kafka's default ``StringDecoder`` for key and value (UTF-8, invalid bytes replaced)."""
    key = None if rec.key is None else rec.key.decode("utf-8", errors="replace")
    value = None if rec.value is None else rec.value.decode("utf-8", errors="replace")
    return key, value


def format_record(batch: RecordBatch, rec: Record, opts: DumpOptions, skipped: list[int] | None = None) -> str:
    """One ``|`` line of ``dumpLog``'s deep iteration; the offset of a record the decoder
    skipped goes into ``skipped``."""
    line = "| "
    sep = ""
    if not opts.skip_record_metadata:
        seq = -1 if batch.base_sequence == -1 else increment_sequence(batch.base_sequence, rec.offset_delta)
        line += (
            f"offset: {batch.base_offset + rec.offset_delta} {_ts_type(batch)}: {record_timestamp(batch, rec)} "
            f"keySize: {-1 if rec.key is None else len(rec.key)} valueSize: {-1 if rec.value is None else len(rec.value)}"
            f" sequence: {seq} headerKeys: [{','.join(k for k, _ in rec.headers)}]"
        )
        sep = " "
        if batch.is_control:
            line += _control_text(rec)
    if opts.print_data and not batch.is_control:
        key, payload = (opts.parser or string_parser)(batch, rec)
        if skipped is not None and (isinstance(key, Skipped) or isinstance(payload, Skipped)):
            skipped.append(batch.base_offset + rec.offset_delta)
        if key is not None:
            line += f"{sep}key: {key}"
        if payload is not None:
            line += f" payload: {payload}"
    return line


def read_header(data: bytes, pos: int) -> _Header:
    return _Header(*_BATCH.unpack_from(data, pos))


def decode_records(data: bytes, pos: int, h: _Header) -> RecordBatch:
    """Decode the batch at ``pos`` even if its CRC does not match (Kafka iterates the records
    of such a batch too): the stored CRC is replaced by the computed one in a copy first."""
    raw = bytearray(data[pos : pos + h.size])
    struct.pack_into(">I", raw, CRC_OFFSET, crc32c(memoryview(raw)[CRC_OFFSET + 4 :]))
    return RecordBatch.decode(bytes(raw))[0]


class Dumper:
    """Dump files one by one; ``out`` and ``err`` take lines. ``problems`` collects what
    could not be read, ``findings`` what Kafka reports at the end (mismatching indexes,
    non-consecutive offsets), printed by :meth:`finish`."""

    def __init__(self, opts: DumpOptions, out: Callable[[str], None], err: Callable[[str], None]) -> None:
        self.opts = opts
        self.out = out
        self.err = err
        self.problems: list[Problem] = []
        self.index_mismatches: dict[str, list[tuple[int, int]]] = {}
        self.time_mismatches: dict[str, list[tuple[int, int]]] = {}
        self.time_out_of_order: dict[str, list[tuple[int, int]]] = {}
        self.time_not_found: dict[str, list[tuple[int, int]]] = {}
        self.non_consecutive: dict[str, list[tuple[int, int]]] = {}

    # -- dispatch ------------------------------------------------------------------------
    def dump(self, file: str) -> None:
        self.out(f"Dumping {file}")
        name = os.path.basename(file)
        suffix = name[name.rfind(".") :] if "." in name else ""
        handler = {".log": self.dump_log, ".checkpoint": self.dump_log, ".index": self.dump_index, ".timeindex": self.dump_time_index}.get(suffix)
        if handler is None:
            self.err(f"Ignoring unknown file {file}")
            self.problems.append(Problem(file, None, "not a .log, .index, .timeindex or .checkpoint file"))
            return
        try:
            handler(file)
        except OSError as exc:
            self.problems.append(Problem(file, None, f"cannot read: {exc.strerror or exc}"))

    # -- segments and snapshots -------------------------------------------------------------
    def _log_banner(self, file: str) -> bool:
        name = os.path.basename(file)
        if name.endswith(".log"):
            stem = name.split(".")[0]
            if not stem.isdigit():
                self.problems.append(Problem(file, None, "a segment name must be its base offset (20 digits) and .log"))
                return False
            self.out(f"Log starting offset: {int(stem)}")
        elif name == BOOTSTRAP_SNAPSHOT:
            self.out("KRaft bootstrap snapshot")
        else:
            parsed = parse_snapshot_path(file)
            if parsed is None:
                self.problems.append(Problem(file, None, "a snapshot name must be a 20-digit end offset, '-', a 10-digit epoch and .checkpoint"))
                return False
            self.out(f"Snapshot end offset: {parsed.snapshot_id.end_offset}, epoch: {parsed.snapshot_id.epoch}")
        return True

    def dump_log(self, file: str) -> None:
        """``dumpLog``: batch lines, record lines with deep iteration, trailing bytes."""
        with open(file, "rb") as f:
            data = f.read()
        if not self._log_banner(file):
            return
        end = min(len(data), self.opts.max_bytes)
        pos = 0
        last_offset = -1
        while pos < end - HEADER_SIZE_UP_TO_MAGIC:
            h = self._next_header(file, data, pos, end)
            if h is None:
                break
            computed = crc32c(memoryview(data)[pos + CRC_OFFSET + 4 : pos + h.size])
            self.out(format_batch(h, pos, computed == h.crc))
            if computed != h.crc:
                self.problems.append(Problem(file, pos, f"corrupt batch: CRC-32C mismatch: stored {h.crc}, computed {computed}"))
            if self.opts.deep:
                last_offset = self._dump_records(file, data, pos, h, last_offset)
                if last_offset is None:
                    return
            pos += h.size
        trailing = len(data) - pos
        if trailing > 0 and self.opts.max_bytes == INT32_MAX:
            self.out(f"Found {trailing} invalid bytes at the end of {os.path.basename(file)}")
            self.problems.append(Problem(file, pos, f"torn (incomplete) batch: {trailing} byte(s) that are not a whole batch"))

    def _next_header(self, file: str, data: bytes, pos: int, end: int) -> _Header | None:
        """The header at ``pos``, or None where ``FileLogInputStream`` stops (a batch that runs
        past ``end``); a problem for what Kafka rejects or this reader cannot read."""
        (length,) = struct.unpack_from(">i", data, pos + 8)
        if length < MIN_BATCH_LENGTH:
            self.problems.append(Problem(file, pos, f"corrupt batch: batchLength {length} is smaller than the minimum {MIN_BATCH_LENGTH}"))
            return None
        if pos + LOG_OVERHEAD + length > end:
            return None
        if data[pos + 16] != MAGIC:
            self.problems.append(Problem(file, pos, f"unsupported batch: magic {data[pos + 16]} (only magic {MAGIC} is read)"))
            return None
        return read_header(data, pos)

    def _dump_records(self, file: str, data: bytes, pos: int, h: _Header, last_offset: int) -> int | None:
        try:
            batch = decode_records(data, pos, h)
        except (CorruptBatchError, UnsupportedBatchError) as exc:
            kind = "unsupported batch" if isinstance(exc, UnsupportedBatchError) else "corrupt batch"
            self.problems.append(Problem(file, pos, f"{kind}: {exc.why}"))
            return None
        skipped: list[int] = []
        for rec in batch.records:
            offset = batch.base_offset + rec.offset_delta
            if last_offset != -1 and offset != last_offset + 1:
                self.non_consecutive.setdefault(os.path.abspath(file), []).insert(0, (last_offset, offset))
            last_offset = offset
            self.out(format_record(batch, rec, self.opts, skipped))
        if skipped:
            self.problems.append(Problem(file, pos, f"undecodable records: the decoder skipped offsets "
                                                    f"{', '.join(map(str, skipped))} of this batch"))
        return last_offset

    # -- indexes -----------------------------------------------------------------------------
    def _index_context(self, file: str) -> tuple[int, bytes, bytes] | None:
        stem = os.path.basename(file).split(".")[0]
        if not stem.isdigit():
            self.problems.append(Problem(file, None, "an index name must be its segment's base offset (20 digits)"))
            return None
        with open(file, "rb") as f:
            index = f.read()
        with open(os.path.join(os.path.dirname(file), stem + ".log"), "rb") as f:
            log = f.read()
        return int(stem), index, log

    def dump_index(self, file: str) -> None:
        """``dumpIndex``: ``offset: O position: P`` per entry; a mismatch is an entry whose
        position does not hold a batch ending at its offset."""
        ctx = self._index_context(file)
        if ctx is None:
            return
        base, index, log = ctx
        n = len(index) // OFFSET_ENTRY_SIZE
        if n == 0:
            self.out(f"{file} is empty.")
            return
        if self.opts.index_sanity_only:
            self._sanity(file, offset_index_sanity(index, base))
            return
        for i in range(n):
            rel, position = struct.unpack_from(">ii", index, i * OFFSET_ENTRY_SIZE)
            offset = base + rel
            if offset == base and i > 0:
                return
            h = self._batch_at(file, log, position, min(len(log), position + self.opts.max_message_size))
            if h is None:
                return
            if h.last_offset != offset:
                self.index_mismatches.setdefault(os.path.abspath(file), []).insert(0, (offset, h.last_offset))
            if not self.opts.verify_only:
                self.out(f"offset: {offset} position: {position}")

    def _sanity(self, file: str, why: str | None) -> None:
        if why is None:
            self.out(f"{file} passed sanity check.")
        else:
            self.problems.append(Problem(file, None, f"fails Kafka's index sanity check: {why}"))

    def _batch_at(self, file: str, log: bytes, position: int, end: int) -> _Header | None:
        if position < 0 or position >= end - HEADER_SIZE_UP_TO_MAGIC:
            self.problems.append(Problem(file, None, f"an entry points at byte position {position} of the segment, where no batch starts"))
            return None
        known = len(self.problems)
        h = self._next_header(file, log, position, end)
        if h is None and len(self.problems) == known:
            self.problems.append(Problem(file, None, f"an entry points at byte position {position} of the segment, where no whole batch is"))
        return h

    def dump_time_index(self, file: str) -> None:
        """``dumpTimeIndex``: ``timestamp: T offset: O`` per entry, checked against the batch
        the offset index leads to."""
        ctx = self._index_context(file)
        if ctx is None:
            return
        base, tindex, log = ctx
        if self.opts.index_sanity_only:
            self._sanity(file, time_index_sanity(tindex, base))
            return
        offsets = self._sibling_offsets(file, base)
        if offsets is None:
            return
        prev = -1
        key = os.path.abspath(file)
        for i in range(len(tindex) // TIME_ENTRY_SIZE):
            ts, rel = struct.unpack_from(">qi", tindex, i * TIME_ENTRY_SIZE)
            offset = base + rel
            if offset == base and i > 0:
                return
            found = self._find_batch(file, log, lookup_position(offsets, offset), offset)
            if found is None or found.last_offset != offset:
                self.time_not_found.setdefault(key, []).append((offset, -1 if found is None else found.last_offset))
            else:
                if found.max_timestamp != ts:
                    self.time_mismatches.setdefault(key, []).append((ts, found.max_timestamp))
                if prev >= ts:
                    self.time_out_of_order.setdefault(key, []).append((ts, prev))
            if not self.opts.verify_only:
                self.out(f"timestamp: {ts} offset: {offset}")
            prev = ts

    def _sibling_offsets(self, file: str, base: int) -> list[tuple[int, int]] | None:
        path = os.path.join(os.path.dirname(file), os.path.basename(file).split(".")[0] + ".index")
        with open(path, "rb") as f:
            data = f.read()
        n = len(data) // OFFSET_ENTRY_SIZE
        try:
            return decode_offset_index(data[: n * OFFSET_ENTRY_SIZE], base, path)
        except ValueError as exc:
            self.problems.append(Problem(path, None, str(exc)))
            return None

    def _find_batch(self, file: str, log: bytes, pos: int, offset: int) -> RecordBatch | None:
        """The first batch from ``pos`` whose last offset is >= ``offset``, decoded (its max
        timestamp is the largest record timestamp, as Kafka recomputes it)."""
        while pos < len(log) - HEADER_SIZE_UP_TO_MAGIC:
            h = self._next_header(file, log, pos, len(log))
            if h is None:
                return None
            if h.last_offset >= offset:
                try:
                    batch = decode_records(log, pos, h)
                except (CorruptBatchError, UnsupportedBatchError) as exc:
                    self.problems.append(Problem(file, None, f"the batch at byte position {pos} of the segment cannot be read: {exc.why}"))
                    return None
                stamps = [record_timestamp(batch, r) for r in batch.records]
                return attrs.evolve(batch, max_timestamp=max(stamps, default=-1))
            pos += h.size
        return None

    # -- the end -----------------------------------------------------------------------------
    def finish(self) -> None:
        """Kafka's closing reports on stderr, then the problems."""
        for path, pairs in self.index_mismatches.items():
            self.err(f"Mismatches in :{path}")
            for index_offset, log_offset in pairs:
                self.err(f"  Index offset: {index_offset}, log offset: {log_offset}")
        for path, pairs in self.time_mismatches.items():
            self.err("Found timestamp mismatch in :" + path)
            for a, b in pairs:
                self.err(f"  Index timestamp: {a}, log timestamp: {b}")
        for path, pairs in self.time_out_of_order.items():
            self.err("Found out of order timestamp in :" + path)
            for a, b in pairs:
                self.err(f"  Index timestamp: {a}, Previously indexed timestamp: {b}")
        for pairs in self.time_not_found.values():
            self.err("The following indexed offsets are not found in the log.")
            for a, b in pairs:
                self.err(f"Indexed offset: {a}, found log offset: {b}")
        for path, pairs in self.non_consecutive.items():
            self.err(f"Non-consecutive offsets in {path}")
            for a, b in pairs:
                self.err(f"  {a} is followed by {b}")
        for p in self.problems:
            self.err(str(p))

    @property
    def found_mismatches(self) -> bool:
        return bool(self.index_mismatches or self.time_mismatches or self.time_out_of_order or self.time_not_found)
