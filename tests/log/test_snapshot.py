"""Snapshot files: Kafka's names (Snapshots) and framing (RecordsSnapshotWriter), checked on read."""

from __future__ import annotations

import struct

import pytest

from kraft.log import MemoryFS, Record, RecordBatch
from kraft.log.records import ControlType, control_key
from kraft.log.snapshot import SnapshotError, SnapshotId, parse_snapshot_path, read_snapshot, snapshot_filename, write_snapshot

SID = SnapshotId(100, 3)
NAME = "00000000000000000100-0000000003.checkpoint"


def test_names_as_kafka_formats_and_parses_them() -> None:
    assert snapshot_filename(SID) + ".checkpoint" == NAME
    assert parse_snapshot_path("d/" + NAME) == parse_snapshot_path("d/" + NAME)
    p = parse_snapshot_path("d/" + NAME)
    assert (p.snapshot_id, p.partial, p.deleted) == (SID, False, False)
    assert parse_snapshot_path(NAME + ".part").partial and parse_snapshot_path(NAME + ".deleted").deleted
    assert parse_snapshot_path("00000000000000000100.log") is None
    assert parse_snapshot_path("100-3.checkpoint") is None


def test_write_then_read_and_the_header_footer_bytes() -> None:
    fs = MemoryFS()
    path = write_snapshot(fs, "m", SID, [[Record(0, 0, None, b"a"), Record(0, 0, None, b"b")], [Record(0, 0, None, b"c")]], last_contained_log_timestamp=77, timestamp=5)
    assert path == "m/" + NAME and fs.listdir("m") == [NAME]
    fs.crash()  # fsynced and renamed: it survives
    snap = read_snapshot(fs, path)
    assert (snap.snapshot_id, snap.last_contained_log_timestamp) == (SID, 77)
    assert [r.value for r in snap.records] == [b"a", b"b", b"c"]
    assert [b.base_offset for b in snap.batches] == [0, 1, 3, 4]
    header, footer = snap.batches[0].records[0], snap.batches[-1].records[0]
    # SnapshotHeaderRecord v0: Version int16 0, LastContainedLogTimestamp int64, no tagged fields
    assert (header.key, header.value) == (bytes.fromhex("00000003"), bytes.fromhex("0000 000000000000004d 00"))
    assert (footer.key, footer.value) == (bytes.fromhex("00000004"), bytes.fromhex("0000 00"))
    assert all(b.partition_leader_epoch == 3 for b in snap.batches)


def _raw(batches: list[RecordBatch]) -> bytes:
    return b"".join(b.encode() for b in batches)


def _control(offset: int, kind: ControlType, value: bytes) -> RecordBatch:
    return RecordBatch(offset, 3, [Record(0, 0, control_key(kind), value)], is_control=True)


HEADER = struct.pack(">hqB", 0, 0, 0)
FOOTER = struct.pack(">hB", 0, 0)


@pytest.mark.parametrize(
    ("batches", "position", "why"),
    [
        ([], 0, "empty snapshot"),
        ([RecordBatch(0, 3, [Record(0, 0, None, b"x")]), _control(1, ControlType.SNAPSHOT_FOOTER, FOOTER)], 0, "first batch is not a control batch"),
        ([_control(0, ControlType.SNAPSHOT_HEADER, HEADER), RecordBatch(1, 3, [Record(0, 0, None, b"x")])], 83, "incomplete snapshot"),
        ([_control(0, ControlType.SNAPSHOT_HEADER, HEADER), _control(2, ControlType.SNAPSHOT_FOOTER, FOOTER)], 83, "base offset 2, expected 1"),
        ([_control(0, ControlType.SNAPSHOT_HEADER, b"\0\1"), _control(1, ControlType.SNAPSHOT_FOOTER, FOOTER)], 0, "not version 0"),
    ],
)
def test_bad_snapshots_name_the_position(batches, position, why) -> None:
    fs = MemoryFS()
    fs.write_bytes("m/" + NAME, _raw(batches))
    with pytest.raises(SnapshotError, match=why) as exc:
        read_snapshot(fs, "m/" + NAME)
    assert exc.value.position == position and NAME in str(exc.value)


def test_a_flipped_byte_or_a_bad_name_is_an_error() -> None:
    fs = MemoryFS()
    path = write_snapshot(fs, "m", SID, [[Record(0, 0, None, b"a")]])
    fs.corrupt(path, 83 + 40)  # the data batch's maxTimestamp, inside its CRC
    with pytest.raises(SnapshotError, match="CRC-32C"):
        read_snapshot(fs, path)
    fs.write_bytes("m/x.checkpoint", b"")
    with pytest.raises(SnapshotError, match="not a snapshot file name"):
        read_snapshot(fs, "m/x.checkpoint")
