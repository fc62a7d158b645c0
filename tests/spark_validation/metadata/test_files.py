"""What audit-metadata reads: snapshots, several segments, and files it cannot read (exit 2 with
the byte position, never a traceback)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kraft.log.metadata import encode_metadata
from kraft.log.records import Record, RecordBatch
from spark_validation.checks.metadata.audit import audit_directory as audit_typed
from spark_validation.checks.metadata.cli import directory_json

from .logs import Cluster, bootstrap, change, partition, register, topic, write_snapshot

SEGMENT = "00000000000000000000.log"


def audit_directory(directory: str, **static) -> dict:
    """The directory's entry of ``audit-metadata.json``: the audit's result as the command writes it."""
    return directory_json(audit_typed(directory, **static))


def _flat(batches):
    return [r for b in batches for r in b]


def test_snapshot_then_the_log_after_it(tmp_path: Path) -> None:
    d = tmp_path / "m"
    write_snapshot(d, _flat(bootstrap()), end_offset=6)
    Cluster(batches=[[change(isr=[1, 2])], [change(isr=[2, 3])]]).write(d, start=6, leader_change=False)
    r = audit_directory(str(d))
    assert r["snapshot"] == {"file": "00000000000000000006-0000000001.checkpoint", "end_offset": 6, "records": 5}
    assert r["control_records"] == {"SNAPSHOT_FOOTER": 1, "SNAPSHOT_HEADER": 1}
    assert [(v["invariant"], v["file"], v["offset"]) for v in r["violations"]] == [
        ("LeaderInIsr", "00000000000000000006.log", 7)]


def test_records_the_snapshot_holds_are_not_replayed_twice(tmp_path: Path) -> None:
    d = tmp_path / "m"
    write_snapshot(d, _flat(bootstrap()), end_offset=6)
    Cluster().then(change(isr=[1, 2])).write(d)  # offsets 0..6; 0..5 are in the snapshot
    r = audit_directory(str(d))
    assert r["verdict"] == "clean" and r["records"] == 6  # five from the snapshot, one from the log


def test_latest_snapshot_wins_and_its_state_is_checked(tmp_path: Path) -> None:
    d = tmp_path / "m"
    write_snapshot(d, _flat(bootstrap()), end_offset=6)
    bad = [register(1, 1), register(2, 2), register(3, 3), topic(), partition(isr=[2, 3], leader=1)]
    write_snapshot(d, bad, end_offset=7, epoch=2)
    r = audit_directory(str(d))
    assert r["snapshot"]["file"] == "00000000000000000007-0000000002.checkpoint"
    assert [(v["invariant"], v["file"], v["partition"]) for v in r["violations"]] == [
        ("LeaderInIsr", "00000000000000000007-0000000002.checkpoint", "t-0")]


def test_snapshot_without_footer_is_unreadable(tmp_path: Path) -> None:
    d = tmp_path / "m"
    path = write_snapshot(d, _flat(bootstrap()), end_offset=6)
    data = path.read_bytes()
    path.write_bytes(data[:RecordBatch.decode(data, 0)[1]])  # the header batch alone
    Cluster(batches=[[change(isr=[1, 2])]]).write(d, start=6, leader_change=False)
    r = audit_directory(str(d))
    assert _error(r) == ("error", 2, path.name, 0) and "Footer" in r["error"]["why"]


def test_snapshot_being_written_is_not_loaded(tmp_path: Path) -> None:
    d = tmp_path / "m"
    path = write_snapshot(d, _flat(bootstrap()), end_offset=6)
    path.rename(path.with_name(path.name + ".part"))
    Cluster().then(change(isr=[1, 2])).write(d)
    r = audit_directory(str(d))
    assert r["snapshot"] is None and r["verdict"] == "clean" and r["records"] == 6
    assert r["ignored_files"] == [path.name + ".part"]


def test_several_segments(tmp_path: Path) -> None:
    c = Cluster()
    for i in range(30):
        c.then(change(isr=[1, 2] if i % 2 == 0 else [1, 2, 3]))
    c.then(change(isr=[2, 3]))
    r = audit_directory(str(c.write(tmp_path / "m", segment_bytes=400)))
    assert len(r["segments"]) > 3
    [v] = r["violations"]
    assert v["invariant"] == "LeaderInIsr" and v["offset"] == 36 and v["file"] == r["segments"][-1]


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd"])
def test_compressed_batches(tmp_path: Path, codec: str) -> None:
    c = Cluster(compression=codec).then(change(isr=[1, 2])).then(change(isr=[2, 3]))
    r = audit_directory(str(c.write(tmp_path / "m")))
    assert [(v["invariant"], v["offset"]) for v in r["violations"]] == [("LeaderInIsr", 7)]
    assert r["records"] == 7


def test_undecodable_record_in_a_compressed_batch_names_the_batch(tmp_path: Path) -> None:
    d = Cluster().write(tmp_path / "m")
    seg = d / SEGMENT
    at = len(seg.read_bytes())
    seg.write_bytes(seg.read_bytes() + RecordBatch(6, 1, [Record(0, 0, None, bytes([1, 99, 0]))], compression="gzip").encode())
    r = audit_directory(str(d))
    assert _error(r) == ("error", 2, SEGMENT, at) and "api key 99" in r["error"]["why"]


def test_log_not_starting_where_the_snapshot_ends_is_inconclusive(tmp_path: Path) -> None:
    d = Cluster(batches=[[change(isr=[1, 2])]]).write(tmp_path / "m", start=6, leader_change=False)
    r = audit_directory(str(d))
    assert (r["verdict"], r["exit_code"]) == ("inconclusive", 3)
    assert "starts at offset 6" in r["reason"]


def test_empty_directory_is_inconclusive(tmp_path: Path) -> None:
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "quorum-state").write_text("{}")
    r = audit_directory(str(tmp_path / "m"))
    assert (r["verdict"], r["exit_code"], r["ignored_files"]) == ("inconclusive", 3, ["quorum-state"])


def _with_value(tmp_path: Path, value: bytes) -> tuple[dict, int]:
    """A clean log plus one batch whose record value is ``value``; the value's file position."""
    d = Cluster().write(tmp_path / "m")
    seg = d / SEGMENT
    data = seg.read_bytes()
    seg.write_bytes(data + RecordBatch(6, 1, [Record(0, 0, None, value)]).encode())
    at = seg.read_bytes().rfind(value)
    return audit_directory(str(d)), at


def _error(r: dict) -> tuple:
    return r["verdict"], r["exit_code"], r["error"]["file"], r["error"]["position"]


def test_torn_batch(tmp_path: Path) -> None:
    d = Cluster().then(change(isr=[1, 2])).write(tmp_path / "m")
    seg = d / SEGMENT
    data = seg.read_bytes()
    pos = 0  # the last batch's start
    while True:
        _, end = RecordBatch.decode(data, pos)
        if end == len(data):
            break
        pos = end
    seg.write_bytes(data[:-3])
    r = audit_directory(str(d))
    assert _error(r) == ("error", 2, SEGMENT, pos)
    assert "past the end" in r["error"]["why"]


def test_flipped_crc(tmp_path: Path) -> None:
    d = Cluster().write(tmp_path / "m")
    seg = d / SEGMENT
    data = bytearray(seg.read_bytes())
    _, second = RecordBatch.decode(bytes(data), 0)
    data[second + 17] ^= 0x01  # the second batch's CRC field
    seg.write_bytes(bytes(data))
    r = audit_directory(str(d))
    assert _error(r) == ("error", 2, SEGMENT, second) and "CRC" in r["error"]["why"]


def test_unknown_record_type(tmp_path: Path) -> None:
    r, at = _with_value(tmp_path, bytes([1, 99, 0]))
    assert _error(r) == ("error", 2, SEGMENT, at + 1) and "api key 99" in r["error"]["why"]


def test_version_above_the_maximum(tmp_path: Path) -> None:
    body = encode_metadata(change(isr=[1, 2, 3]))[3:]
    r, at = _with_value(tmp_path, bytes([1, 5, 9]) + body)
    assert _error(r) == ("error", 2, SEGMENT, at + 2) and "version 9" in r["error"]["why"]


def test_truncated_tagged_field(tmp_path: Path) -> None:
    value = encode_metadata(change(isr=[1, 2, 3], leader=2))
    r, at = _with_value(tmp_path, value[:-2])
    assert r["exit_code"] == 2 and r["error"]["file"] == SEGMENT
    assert at < r["error"]["position"] <= at + len(value)


def test_violation_before_a_corrupt_batch_is_still_reported(tmp_path: Path) -> None:
    d = Cluster().then(change(isr=[2, 3])).write(tmp_path / "m")
    seg = d / SEGMENT
    seg.write_bytes(seg.read_bytes() + b"\x00" * 20)
    r = audit_directory(str(d))
    assert r["verdict"] == "violation" and r["error"]["position"] is not None
