"""kraft dump-log against the line formats of Kafka's DumpLogSegments
(core/src/main/scala/kafka/tools/DumpLogSegments.scala: printBatchLevel, dumpLog, dumpIndex,
dumpTimeIndex, TimeIndexDumpErrors.printErrors), each option, and hostile files."""

from __future__ import annotations

import struct
from pathlib import Path

from click.testing import CliRunner

from kraft.log import Log, OsFS, Record, RecordBatch
from kraft.log.decoders import offsets_parser
from kraft.log.dump import increment_sequence
from kraft.log.records import ControlType, control_key
from kraft.log.snapshot import SnapshotId, write_snapshot
from kraft.log.cli import dump_log
from kraft.log.control import encode_control
from kraft.log.metadata import MetadataRecord, encode_metadata

INT32_MAX = 2**31 - 1


def run(*args: str):
    return CliRunner().invoke(dump_log, list(args))


def segment(tmp_path: Path, n: int = 12) -> tuple[str, Log]:
    """Batches of 1000 bytes (indexed at 5000 and 10000), batch 5 with an older timestamp."""
    log, _ = Log.open(OsFS(), str(tmp_path))
    for i in range(n):
        ts = 10 if i == 5 else 1000 + i
        log.append(RecordBatch(i, 1, [Record(0, 0, None, b"x" * 930)], first_timestamp=ts, max_timestamp=ts))
    log.flush()
    return str(tmp_path / "00000000000000000000"), log


def test_index_and_timeindex_lines(tmp_path) -> None:
    stem, _ = segment(tmp_path)
    res = run("--files", f"{stem}.index,{stem}.timeindex")
    assert res.exit_code == 0, res.output
    assert res.output.splitlines() == [
        f"Dumping {stem}.index",
        "offset: 5 position: 5000",
        "offset: 10 position: 10000",
        f"Dumping {stem}.timeindex",
        "timestamp: 1004 offset: 4",
        "timestamp: 1010 offset: 10",
    ]


def test_files_option_and_arguments_combine(tmp_path) -> None:
    stem, _ = segment(tmp_path, 2)
    res = run(f"{stem}.log", "--files", f"{stem}.index")
    assert [l for l in res.output.splitlines() if l.startswith("Dumping")] == [f"Dumping {stem}.index", f"Dumping {stem}.log"]
    assert f"{stem}.index is empty." in res.output and res.exit_code == 0
    assert run().exit_code == 2


def _one_batch_file(tmp_path: Path, batch: RecordBatch) -> str:
    p = tmp_path / "00000000000000000000.log"
    p.write_bytes(batch.encode())
    return str(p)


def test_log_append_time_records_print_the_batch_max_timestamp(tmp_path) -> None:
    b = RecordBatch(0, 0, [Record(0, 0, None, b"a"), Record(1, 3, None, b"b")], first_timestamp=100, max_timestamp=999, timestamp_type=1)
    out = run("--deep-iteration", _one_batch_file(tmp_path, b)).output.splitlines()
    assert " LogAppendTime: 999 " in out[2]
    assert out[3].startswith("| offset: 0 LogAppendTime: 999 ") and out[4].startswith("| offset: 1 LogAppendTime: 999 ")


def test_sequences_wrap_past_int32_max(tmp_path) -> None:
    assert increment_sequence(INT32_MAX - 1, 2) == 0 and increment_sequence(5, 2) == 7
    recs = [Record(i, 0, None, b"v") for i in range(3)]
    b = RecordBatch(0, 0, recs, producer_id=7, producer_epoch=0, base_sequence=INT32_MAX - 1)
    out = run("--deep-iteration", _one_batch_file(tmp_path, b)).output.splitlines()
    assert f"baseSequence: {INT32_MAX - 1} lastSequence: 0 producerId: 7" in out[2]
    assert [l.split("sequence: ")[1].split()[0] for l in out[3:]] == [str(INT32_MAX - 1), str(INT32_MAX), "0"]


def test_the_stored_crc_is_printed_and_isvalid_says_if_it_matches(tmp_path) -> None:
    b = RecordBatch(0, 0, [Record(0, 0, None, b"payload")])
    raw = bytearray(b.encode())
    stored = struct.unpack(">I", raw[17:21])[0]
    raw[-3] ^= 0x01  # a value byte: inside the CRC, the record still decodes
    p = tmp_path / "00000000000000000000.log"
    p.write_bytes(bytes(raw))
    res = run("--print-data-log", str(p))
    assert f"crc: {stored} isvalid: false" in res.stdout
    assert "| offset: 0 " in res.stdout  # Kafka iterates the records of an invalid batch too
    assert res.exit_code == 2 and f"{p}: corrupt batch at byte position 0: CRC-32C mismatch: stored {stored}" in res.stderr


def test_print_data_skip_metadata_and_max_bytes(tmp_path) -> None:
    log, _ = Log.open(OsFS(), str(tmp_path))
    log.append(RecordBatch(0, 1, [Record(0, 0, b"k", b"v1"), Record(1, 0, None, b"v2")]))
    log.append(RecordBatch(2, 1, [Record(0, 0, b"k", None)]))
    log.flush()
    path = log.segments[0]
    lines = run("--print-data-log", "--skip-record-metadata", path).output.splitlines()
    assert [l for l in lines if l.startswith("|")] == ["| key: k payload: v1", "|  payload: v2", "| key: k"]
    first = len(log.read(0)[0].encode())
    limited = run("--max-bytes", str(first), path)
    assert limited.exit_code == 0 and sum(l.startswith("baseOffset") for l in limited.output.splitlines()) == 1
    assert "invalid bytes" not in limited.output


def test_verify_index_only_reports_mismatches_on_stderr(tmp_path) -> None:
    stem, _ = segment(tmp_path)
    assert run("--verify-index-only", f"{stem}.index").output.splitlines() == [f"Dumping {stem}.index"]
    with open(f"{stem}.index", "r+b") as f:  # the second entry now claims offset 9 is at 10000
        f.seek(8)
        f.write(struct.pack(">i", 9))
    res = run("--verify-index-only", f"{stem}.index")
    assert res.exit_code == 1
    assert res.stderr.splitlines() == [f"Mismatches in :{stem}.index", "  Index offset: 9, log offset: 10"]


def test_time_index_errors_as_kafka_prints_them(tmp_path) -> None:
    stem, _ = segment(tmp_path)
    with open(f"{stem}.timeindex", "r+b") as f:
        f.write(struct.pack(">qi", 1003, 4))  # wrong timestamp for offset 4
    res = run("--verify-index-only", f"{stem}.timeindex")
    assert res.exit_code == 1
    assert res.stderr.splitlines() == [f"Found timestamp mismatch in :{stem}.timeindex", "  Index timestamp: 1003, log timestamp: 1004"]


def test_index_sanity_check(tmp_path) -> None:
    stem, _ = segment(tmp_path)
    res = run("--index-sanity-check", "--files", f"{stem}.index,{stem}.timeindex")
    assert res.output.splitlines()[1::2] == [f"{stem}.index passed sanity check.", f"{stem}.timeindex passed sanity check."]
    with open(f"{stem}.index", "ab") as f:
        f.write(b"\0\0\0")
    bad = run("--index-sanity-check", f"{stem}.index")
    assert bad.exit_code == 2 and "found 19 bytes which is not a multiple of 8" in bad.stderr


def test_snapshot_files(tmp_path) -> None:
    path = write_snapshot(OsFS(), str(tmp_path), SnapshotId(5, 2), [[Record(0, 0, None, b"r")]], last_contained_log_timestamp=42)
    res = run("--deep-iteration", path)
    assert res.exit_code == 0, res.output
    lines = res.output.splitlines()
    assert lines[1] == "Snapshot end offset: 5, epoch: 2"
    assert lines[3].endswith(' SnapshotHeader {"version":0,"lastContainedLogTimestamp":42}')
    assert lines[-1].endswith(' SnapshotFooter {"version":0}')


def test_offsets_decoder_without_a_known_type(tmp_path) -> None:
    b = RecordBatch(0, 0, [Record(0, 0, struct.pack(">h", 99), b"\0\0")])
    assert offsets_parser(b, b.records[0]) == ("Unknown record type 99 at offset 0, skipping.", None)
    res = run("--offsets-decoder", _one_batch_file(tmp_path, b))
    assert res.stdout.splitlines()[-1].endswith(" key: Unknown record type 99 at offset 0, skipping.")
    assert res.exit_code == 2 and "the decoder skipped offsets 0 of this batch" in res.stderr


def test_hostile_inputs_exit_2_naming_file_and_position(tmp_path) -> None:
    stem, log = segment(tmp_path, 3)
    with open(f"{stem}.log", "ab") as f:
        f.write(b"\0" * 30)
    torn = run(f"{stem}.log")
    assert torn.exit_code == 2 and "Found 30 invalid bytes at the end of 00000000000000000000.log" in torn.stdout
    assert f"{stem}.log: torn (incomplete) batch at byte position 3000" in torn.stderr
    short = tmp_path / "00000000000000000007.log"
    short.write_bytes(struct.pack(">qi", 7, 3) + b"\0" * 60)
    res = run(str(short))
    assert res.exit_code == 2 and "corrupt batch at byte position 0: batchLength 3" in res.stderr
    (tmp_path / "00000000000000000007.index").write_bytes(struct.pack(">ii", 1, 9999))
    res = run(str(tmp_path / "00000000000000000007.index"))
    assert res.exit_code == 2 and "byte position 9999 of the segment" in res.stderr
    for bad in (str(tmp_path / "nope.log"), str(tmp_path / "x.txt"), str(tmp_path / "1.timeindex")):
        res = run(bad)
        assert res.exit_code == 2 and res.exception is None or isinstance(res.exception, SystemExit)
        assert bad in res.stderr


def test_control_records_print_as_kafka_names_them(tmp_path) -> None:
    recs = [Record(0, 0, control_key(ControlType.LEADER_CHANGE), b""), Record(1, 0, struct.pack(">hh", 0, 9), b"")]
    b = RecordBatch(0, 0, recs, is_control=True)
    out = run("--print-data-log", _one_batch_file(tmp_path, b)).output.splitlines()
    assert out[3].endswith(" controlType: LEADER_CHANGE(2)") and out[4].endswith(" controlType: UNKNOWN(9)")


def test_cluster_metadata_decoder(tmp_path) -> None:
    """ClusterMetadataLogMessageParser: no key, the value as {"type","version","data"} JSON;
    a value that does not decode prints "Error at OFFSET, skipping. ...", is counted, and the
    dump ends with exit 2 naming the batch."""
    rec = MetadataRecord("FeatureLevelRecord", 0, {"name": "metadata.version", "featureLevel": 7})
    b = RecordBatch(0, 1, [Record(0, 0, None, encode_metadata(rec)), Record(1, 0, None, b"\xff")])
    res = run("--cluster-metadata-decoder", _one_batch_file(tmp_path, b))
    lines = res.stdout.splitlines()
    assert lines[3].endswith(' payload: {"type":"FEATURE_LEVEL_RECORD","version":0,"data":{"name":"metadata.version","featureLevel":7}}')
    assert " payload: Error at 1, skipping. " in lines[4]
    assert res.exit_code == 2
    assert res.stderr.strip().endswith("undecodable records at byte position 0: the decoder skipped offsets 1 of this batch")


def test_voters_record_prints_as_kraft_voters(tmp_path) -> None:
    """dumpLog prints a KRAFT_VOTERS value with VotersRecordJsonConverter, as " KRaftVoters {...}"."""
    voter = {"voterId": 1, "voterDirectoryId": "AAAAAAAAAAAAAAAAAAAAAQ", "endpoints": [{"name": "CONTROLLER", "host": "h", "port": 9093}], "kRaftVersionFeature": {"minSupportedVersion": 0, "maxSupportedVersion": 1}}
    key, value = encode_control("KRAFT_VOTERS", {"version": 0, "voters": [voter]})
    b = RecordBatch(0, 0, [Record(0, 0, key, value)], is_control=True)
    out = run("--deep-iteration", _one_batch_file(tmp_path, b)).output.splitlines()
    assert out[3].endswith(
        ' KRaftVoters {"version":0,"voters":[{"voterId":1,"voterDirectoryId":"AAAAAAAAAAAAAAAAAAAAAQ",'
        '"endpoints":[{"name":"CONTROLLER","host":"h","port":9093}],"kRaftVersionFeature":{"minSupportedVersion":0,"maxSupportedVersion":1}}]}'
    )
