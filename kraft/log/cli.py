"""``kraft dump-log FILE``: print a segment file the way Kafka's ``kafka-dump-log.sh``
(``DumpLogSegments``) prints it: one line per batch, and with ``--deep``/``--print-data`` one
``| offset: ...`` line per record, control records decoded (``LeaderChange: {...}``).

Exit codes (kraft/outcome.py): 0 the whole file decoded; 2 the file is missing, or holds corrupt,
torn or unsupported data (everything before it is printed, and the byte position is named). It
writes no JSON.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import click

from kraft.outcome import EXIT_ERROR, EXIT_OK

from .records import ControlType, CorruptBatchError, RecordBatch, TruncatedBatchError, UnsupportedBatchError, decode_control


def _text(b: bytes | None) -> str:
    if b is None:
        return "null"
    return b.decode("utf-8", errors="backslashreplace")


def format_batch(batch: RecordBatch, position: int, size: int) -> str:
    last_seq = batch.base_sequence + batch.last_offset_delta if batch.base_sequence >= 0 else -1
    ts_name = "LogAppendTime" if batch.timestamp_type else "CreateTime"
    raw = batch.encode()
    crc = int.from_bytes(raw[17:21], "big")
    return (
        f"baseOffset: {batch.base_offset} lastOffset: {batch.last_offset} count: {len(batch.records)} "
        f"baseSequence: {batch.base_sequence} lastSequence: {last_seq} producerId: {batch.producer_id} "
        f"producerEpoch: {batch.producer_epoch} partitionLeaderEpoch: {batch.partition_leader_epoch} "
        f"isTransactional: {str(batch.is_transactional).lower()} isControl: {str(batch.is_control).lower()} "
        f"position: {position} {ts_name}: {batch.max_timestamp} size: {size} magic: 2 "
        f"compresscodec: {batch.compression} crc: {crc} isvalid: true"
    )


def format_records(batch: RecordBatch, print_data: bool) -> list[str]:
    lines = []
    ts_name = "LogAppendTime" if batch.timestamp_type else "CreateTime"
    for rec in batch.records:
        seq = batch.base_sequence + rec.offset_delta if batch.base_sequence >= 0 else -1
        line = (
            f"| offset: {batch.base_offset + rec.offset_delta} {ts_name}: {batch.first_timestamp + rec.timestamp_delta} "
            f"keySize: {-1 if rec.key is None else len(rec.key)} valueSize: {-1 if rec.value is None else len(rec.value)} "
            f"sequence: {seq} headerKeys: [{','.join(k for k, _ in rec.headers)}]"
        )
        if batch.is_control:
            try:
                ctype, value = decode_control(rec)
            except ValueError as exc:
                line += f" control record: undecodable ({exc})"
            else:
                if ctype == ControlType.LEADER_CHANGE:
                    line += " LeaderChange: " + json.dumps(value, separators=(",", ":"))
                elif ctype in (ControlType.ABORT, ControlType.COMMIT) and value is not None:
                    line += f" endTxnMarker: {ctype.name} coordinatorEpoch: {value['coordinatorEpoch']}"
                elif isinstance(ctype, ControlType):
                    line += f" {ctype.name}: " + (json.dumps(value, separators=(",", ":")) if value is not None else (rec.value or b"").hex())
                else:
                    line += f" unknown control type {ctype}"
        elif print_data:
            line += f" key: {_text(rec.key)} payload: {_text(rec.value)}"
        lines.append(line)
    return lines


def _dump(file: str, print_data: bool, deep: bool) -> bool:
    """Print one file; False if it could not be read completely."""
    path = Path(file)
    try:
        data = path.read_bytes()
    except OSError as exc:
        click.echo(f"kraft dump-log: cannot read {file}: {exc.strerror or exc}", err=True)
        return False
    click.echo(f"Dumping {file}")
    m = re.match(r"^(\d{20})\.log$", path.name)
    if m:
        click.echo(f"Log starting offset: {int(m.group(1))}")
    pos = 0
    batches = records = 0
    while pos < len(data):
        try:
            batch, end = RecordBatch.decode(data, pos)
        except (CorruptBatchError, UnsupportedBatchError) as exc:
            kind = (
                "torn (incomplete) batch" if isinstance(exc, TruncatedBatchError)
                else "unsupported batch" if isinstance(exc, UnsupportedBatchError)
                else "corrupt batch"
            )
            click.echo(
                f"kraft dump-log: {file}: {kind} at byte position {pos}: {exc.why}; "
                f"{len(data) - pos} byte(s) from there not decoded ({batches} batch(es), {records} record(s) before it)",
                err=True,
            )
            return False
        click.echo(format_batch(batch, pos, end - pos))
        if deep:
            for line in format_records(batch, print_data):
                click.echo(line)
        batches += 1
        records += len(batch.records)
        pos = end
    return True


@click.command(name="dump-log")
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("--print-data", is_flag=True, help="print keys and values (implies --deep)")
@click.option("--deep", "deep", is_flag=True, help="one line per record (--deep-iteration)")
@click.option("--deep-iteration", "deep", is_flag=True, hidden=True)
def dump_log(files: tuple[str, ...], print_data: bool, deep: bool) -> None:
    """Print the record batches of segment FILES like Kafka's kafka-dump-log.sh."""
    ok = True
    for file in files:
        ok = _dump(file, print_data, deep or print_data) and ok
    sys.exit(EXIT_OK if ok else EXIT_ERROR)
