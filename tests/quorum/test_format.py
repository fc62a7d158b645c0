"""``kraft format``: meta.properties and the bootstrap checkpoint as ``kafka-storage format
--standalone`` / ``--initial-controllers`` write them, and a clear exit 2 for each bad input."""

from __future__ import annotations

import struct

import pytest
from click.testing import CliRunner

from kraft.cli import main
from kraft.log import OsFS, decode_control
from kraft.log.cli import dump_log
from kraft.log.control import ControlType
from kraft.log.schema import uuid_from_str
from kraft.log.snapshot import read_snapshot
from kraft.quorum.bootstrap import FormatError, parse_dynamic_voter, parse_dynamic_voters, parse_uuid
from kraft.quorum.voters import ControlRecordHistory, ReplicaKey, VoterSet

CLUSTER = "MkU3OEVBNTcwNTJENDM2Qg"
DIR1 = "J8aAPcfLQt2bqs1JT_rMgQ"
DIR2 = "MvDxzVmcRsaTz33bUuRU6A"
TS = 1700000000000  # Tue Nov 14 22:13:20 UTC 2023
CHECKPOINT = "__cluster_metadata-0/00000000000000000000-0000000000.checkpoint"


def _format(directory, *args: str):
    return CliRunner().invoke(main, ["format", str(directory), "--cluster-id", CLUSTER, "--timestamp-ms", str(TS), *args])


def _voters_value_by_hand() -> bytes:
    """VotersRecord version 0 (clients/.../VotersRecord.json, flexible from 0) for voter 1,
    directory DIR1, endpoint CONTROLLER localhost:9093, kraft.version 0..1:
    Version int16 | Voters compact array (n+1) of {VoterId int32, VoterDirectoryId 16 bytes,
    Endpoints compact array of {Name, Host compact strings (len+1), Port uint16, tags 0},
    KRaftVersionFeature {Min int16, Max int16, tags 0}, tags 0} | tags 0."""
    def cstr(s: str) -> bytes:
        return bytes([len(s) + 1]) + s.encode()
    endpoint = cstr("CONTROLLER") + cstr("localhost") + struct.pack(">H", 9093) + b"\x00"
    voter = struct.pack(">i", 1) + uuid_from_str(DIR1) + b"\x02" + endpoint + struct.pack(">hh", 0, 1) + b"\x00\x00"
    return struct.pack(">h", 0) + b"\x02" + voter + b"\x00"


def test_initial_controllers_writes_meta_properties_and_the_bootstrap_checkpoint(tmp_path) -> None:
    res = _format(tmp_path / "m", "--node-id", "1", "--initial-controllers", f"1@localhost:9093:{DIR1}")
    assert res.exit_code == 0, res.output
    assert res.output == f"Formatting dynamic metadata voter directory {tmp_path / 'm'} with kraft.version 1.\n"
    # Properties.store: '#', the date, then ConcurrentHashMap order (node.id, directory.id,
    # version, cluster.id for these keys)
    assert (tmp_path / "m" / "meta.properties").read_text() == (
        f"#\n#Tue Nov 14 22:13:20 UTC 2023\nnode.id=1\ndirectory.id={DIR1}\nversion=1\ncluster.id={CLUSTER}\n")
    snap = read_snapshot(OsFS(), str(tmp_path / "m" / CHECKPOINT))
    header, footer = snap.batches
    assert header.is_control and header.partition_leader_epoch == 0 and header.first_timestamp == TS
    kinds = [decode_control(r) for r in header.records]
    assert [k for k, _ in kinds] == [ControlType.SNAPSHOT_HEADER, ControlType.KRAFT_VERSION, ControlType.KRAFT_VOTERS]
    assert snap.last_contained_log_timestamp == TS and footer.base_offset == 3
    # KRaftVersionRecord v0: Version int16 0, KRaftVersion int16 1, no tagged fields
    assert header.records[1].value == bytes.fromhex("0000" "0001" "00")
    assert header.records[2].value == _voters_value_by_hand()


def test_the_checkpoint_seeds_the_voter_history(tmp_path) -> None:
    res = _format(tmp_path, "--node-id", "3",
                  "--initial-controllers", f"2@h2:9094:{DIR2},1@[::1]:9093:{DIR1}")
    assert res.exit_code == 0, res.output
    assert "Formatting dynamic metadata directory" in res.output  # node 3 is not a voter
    history = ControlRecordHistory(VoterSet.static([9]))
    history.load_snapshot(read_snapshot(OsFS(), str(tmp_path / CHECKPOINT)))
    assert history.last_voter_set().voter_keys == {ReplicaKey(1, DIR1), ReplicaKey(2, DIR2)}
    assert history.last_voter_set_offset() == -1 and history.kraft_version() == 1
    assert [e.host for n in history.last_voter_set().nodes for e in n.endpoints] == ["::1", "h2"]
    own = (tmp_path / "meta.properties").read_text().split("directory.id=")[1].split("\n")[0]
    assert len(uuid_from_str(own)) == 16 and own not in (DIR1, DIR2)


def test_standalone_uses_the_given_or_a_random_directory_id(tmp_path) -> None:
    res = _format(tmp_path / "a", "--node-id", "4", "--standalone", "--controller-address", "c4:9099",
                  "--directory-id", DIR2)
    assert res.exit_code == 0, res.output
    snap = read_snapshot(OsFS(), str(tmp_path / "a" / CHECKPOINT))
    voters = VoterSet.from_voters_record(decode_control(snap.batches[0].records[2])[1])
    assert voters.voter_keys == {ReplicaKey(4, DIR2)}
    assert [(e.name, e.host, e.port) for e in voters.nodes[0].endpoints] == [("CONTROLLER", "c4", 9099)]
    assert _format(tmp_path / "b", "--node-id", "4", "--standalone").exit_code == 0
    assert f"directory.id={DIR2}" not in (tmp_path / "b" / "meta.properties").read_text()


def test_dump_log_shows_the_bootstrap_records(tmp_path) -> None:
    assert _format(tmp_path, "--node-id", "1", "--initial-controllers", f"1@localhost:9093:{DIR1}").exit_code == 0
    out = CliRunner().invoke(dump_log, ["--deep-iteration", str(tmp_path / CHECKPOINT)])
    assert out.exit_code == 0, out.output
    assert ' KRaftVersion {"version":0,"kRaftVersion":1}' in out.output
    assert (f' KRaftVoters {{"version":0,"voters":[{{"voterId":1,"voterDirectoryId":"{DIR1}","endpoints":'
            '[{"name":"CONTROLLER","host":"localhost","port":9093}],"kRaftVersionFeature":'
            '{"minSupportedVersion":0,"maxSupportedVersion":1}}]}') in out.output
    assert " SnapshotFooter " in out.output


@pytest.mark.parametrize("text, why", [
    ("1localhost:9093:" + DIR1, "no '@'"),
    ("@localhost:9093:" + DIR1, "no node id"),
    ("x@localhost:9093:" + DIR1, "node id 'x'"),
    ("-1@localhost:9093:" + DIR1, "negative node id"),
    ("1@", "no host"),
    ("1@[::1:9093:" + DIR1, "no ']'"),
    ("1@localhost", "no ':' after the host"),
    ("1@[::1]9093:" + DIR1, "port must follow"),
    ("1@localhost:9093", "no ':' after the port"),
    ("1@localhost:http:" + DIR1, "port 'http'"),
    ("1@localhost:70000:" + DIR1, "out of range"),
    ("1@localhost:9093:nope", "not a base64 UUID"),
    ("1@localhost:9093:" + DIR1 + "AAAAAA", "too long"),
])
def test_malformed_voter_is_refused(text: str, why: str) -> None:
    with pytest.raises(FormatError, match=why):
        parse_dynamic_voter(text)


def test_voter_list_rules() -> None:
    voters = parse_dynamic_voters(f" 2@b:2:{DIR2},,1@a:1:{DIR1}")
    assert [v.node_id for v in voters] == [1, 2]
    with pytest.raises(FormatError, match="more than once"):
        parse_dynamic_voters(f"1@a:1:{DIR1},1@b:2:{DIR2}")
    with pytest.raises(FormatError, match="no voters"):
        parse_dynamic_voters(",")
    assert parse_uuid(DIR1 + "==") == DIR1


@pytest.mark.parametrize("args, why", [
    (["--initial-controllers", "1@localhost"], "voter '1@localhost': no ':' after the host"),
    (["--initial-controllers", f"1@a:1:{DIR1},1@b:2:{DIR2}"], "node id 1 is given more than once"),
    (["--standalone", "--directory-id", "zz"], "--standalone with --controller-address 'localhost:9093': 'zz'"),
    (["--standalone", "--controller-address", "nohost"], "no ':' after the port"),
])
def test_bad_input_exits_2_with_a_message(tmp_path, args: list[str], why: str) -> None:
    res = _format(tmp_path, "--node-id", "1", *args)
    assert res.exit_code == 2 and why in res.output and "Traceback" not in res.output
    assert not (tmp_path / "meta.properties").exists()


@pytest.mark.parametrize("args", [[], ["--standalone", "--initial-controllers", f"1@a:1:{DIR1}"],
                                  ["--initial-controllers", f"1@a:1:{DIR1}", "--directory-id", DIR1]])
def test_usage_errors_exit_2(tmp_path, args: list[str]) -> None:
    res = _format(tmp_path, "--node-id", "1", *args)
    assert res.exit_code == 2 and "Error:" in res.output and "Traceback" not in res.output


def test_a_formatted_directory_is_refused(tmp_path) -> None:
    args = ["--node-id", "1", "--initial-controllers", f"1@localhost:9093:{DIR1}"]
    assert _format(tmp_path, *args).exit_code == 0
    before = (tmp_path / CHECKPOINT).read_bytes()
    res = _format(tmp_path, *args)
    assert res.exit_code == 2 and f"log directory {tmp_path} is already formatted" in res.output
    assert (tmp_path / CHECKPOINT).read_bytes() == before


def test_an_unwritable_directory_exits_2(tmp_path) -> None:
    (tmp_path / "file").write_text("x")
    res = _format(tmp_path / "file" / "sub", "--node-id", "1", "--standalone")
    assert res.exit_code == 2 and "kraft format:" in res.output and "Traceback" not in res.output
