"""The coordinator's ``__consumer_offsets`` partition: after a run it decodes to exactly the
commits the coordinator accepted and the generations it completed; the records are Kafka's bytes;
``kraft simulate --offsets-log`` writes the partition for ``kraft dump-log --offsets-decoder``."""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from kraft.core.step import Trigger
from kraft.groups.assignors import TopicPartition
from kraft.groups.coordinator import GroupConfig, GroupCoordinator
from kraft.groups.offsets_log import assignment_bytes, offset_commit_record, subscription_bytes
from kraft.groups.sim import GroupsPlugin
from kraft.groups.world import GroupWorld
from kraft.log import Log, OsFS
from kraft.log.cli import dump_log
from kraft.log.offsets import decode_offsets_record
from kraft.sim.cli import simulate
from kraft.sim.core import Faults, Simulator


def _records(fs: Any, directory: str) -> list[list[tuple[dict, Any]]]:
    """Every batch of the log, reopened from its bytes, as decoded (key, value) pairs."""
    log, _ = Log.open(fs, directory)
    return [[decode_offsets_record(r.key, r.value) for r in b.records] for b in log.read(0)]


def _partitions(assignment: Any) -> set[str]:
    """A decoded ConsumerProtocolAssignment's partitions (none for Kafka's empty assignment,
    which does not decode and stays bytes)."""
    if not isinstance(assignment, dict):
        return set()
    return {f"{tp['topic']}-{p}" for tp in assignment["assignedPartitions"] for p in tp["partitions"]}


def _shape(assignment: dict[str, set[str]]) -> list[list[str]]:
    return sorted(sorted(ps) for ps in assignment.values())


def _group_writes(batches: list[list[tuple[dict, Any]]]) -> list[dict]:
    out = []
    for batch in batches:
        kinds = {key["type"] for key, _ in batch}
        assert kinds == {"1"} or (kinds == {"2"} and len(batch) == 1), batch   # one write, one batch
        if kinds == {"2"}:
            out.append(batch[0][1]["data"])
    return out


def _expected_generations(co: GroupCoordinator) -> list[tuple[int, dict[str, set[str]]]]:
    """(generation, member -> partitions) of each completed generation, from the rebalance log:
    the assignment that made it Stable, or none for a generation that ended with no member."""
    out = []
    for e in co.log:
        if e["event"] == "stable":
            out.append((e["generation"], {m: set(ps) for m, ps in e["assignment"].items()}))
        elif e["event"] == "state" and e["from"] == "PreparingRebalance" and e["to"] == "Empty":
            out.append((e["generation"], {}))
    return out


@pytest.mark.parametrize("seed", [0, 1])   # eager, cooperative
def test_the_log_holds_exactly_the_accepted_commits_and_completed_generations(seed: int) -> None:
    plugin = GroupsPlugin(3, None)
    sim = Simulator(plugin, seed, Faults.parse("all"))
    sim.run(1500)
    co = plugin.world.coordinator
    assert co.offsets_log is not None
    batches = _records(co.offsets_log.fs, co.offsets_log.directory)

    commits = [(k["data"]["group"], k["data"]["topic"], k["data"]["partition"], v["data"]["offset"],
                v["data"]["commitTimestamp"]) for batch in batches for k, v in batch if k["type"] == "1"]
    accepted = [("g", a.partition.topic, a.partition.partition, a.offset, a.at) for a in co.offsets.accepted]
    assert len(accepted) > 10 and commits == accepted

    groups = _group_writes(batches)
    assert groups[0] == {"protocolType": "", "generation": 0, "protocol": None, "leader": None,
                         "currentStateTimestamp": groups[0]["currentStateTimestamp"], "members": []}
    written = [(g["generation"], {m["memberId"]: _partitions(m["assignment"])
                                  for m in g["members"]}) for g in groups[1:]]
    expected = _expected_generations(co)
    assert len(expected) >= 2
    # every completed generation, in order; in between, only a static member replaced in Stable
    # rewrites the generation in force, under its new member id (the same assignment)
    pos, prev = 0, None
    for got in written:
        if pos < len(expected) and got == expected[pos]:
            prev, pos = got, pos + 1
            continue
        assert prev is not None and got[0] == prev[0] and _shape(got[1]) == _shape(prev[1]), (got, prev)
        prev = got
    assert pos == len(expected), f"generation {expected[pos]} is not in the log: {written}"
    for g in groups[1:]:
        assert g["protocolType"] == "consumer"
        assert (g["protocol"] is None) == (not g["members"]) and (g["leader"] is None) == (not g["members"])
        assert all(m["subscription"]["topics"] == ["t"] for m in g["members"])


def test_a_static_member_replaced_in_stable_rewrites_its_generation() -> None:
    w = GroupWorld(GroupConfig(topics=(("t", 2),)), (("c1", None), ("c3", "c3")))
    w.start()
    w.settle()
    w.crash("c3")
    w.restart("c3")
    w.deliver_all()
    co = w.coordinator
    assert co.state.value == "Stable"
    before, after = _group_writes(_records(w.fs, co.offsets_log.directory))[-2:]
    assert after["generation"] == before["generation"] == co.generation

    def members(g: dict) -> dict[str | None, tuple[str, set[str]]]:
        return {m["groupInstanceId"]: (m["memberId"], _partitions(m["assignment"])) for m in g["members"]}

    old, new = members(before), members(after)
    assert old[None] == new[None] and old["c3"][1] == new["c3"][1] and old["c3"][0] != new["c3"][0]
    assert new["c3"][0] in co.members


def test_an_empty_group_deleted_leaves_tombstones() -> None:
    w = GroupWorld(GroupConfig(topics=(("t", 2),)), (("c1", None),))
    w.start()
    w.settle()
    w.commit("c1")
    w.settle()
    w.leave("c1")
    w.deliver_all()
    w.advance(w.config.rebalance_timeout_ms + 1)   # the join phase ends with no member: Empty
    co = w.coordinator
    co.step(Trigger(GroupCoordinator.delete_group), w.now)
    batches = _records(w.fs, co.offsets_log.directory)
    emptied = batches[-2][0][1]["data"]
    assert (emptied["generation"], emptied["members"], emptied["protocol"]) == (2, [], None)
    assert [k for k, _ in batches[-1]] == [
        {"type": "1", "data": {"group": "g", "topic": "t", "partition": 0}},
        {"type": "1", "data": {"group": "g", "topic": "t", "partition": 1}},
        {"type": "2", "data": {"group": "g"}}]
    assert {v for _, v in batches[-1]} == {"<DELETE>"}
    assert co.state.value == "Dead"


def test_offset_commit_record_bytes_by_hand() -> None:
    """OffsetCommitKey v1 and OffsetCommitValue v3 (non-flexible: int16-length strings, no
    tagged fields), each after its int16 version, as ``CoordinatorRecordSerde`` frames them."""
    key, value = offset_commit_record("g", TopicPartition("t", 1), 42, 1000)
    assert key == (b"\x00\x01"                       # record type 1 = key version
                   + b"\x00\x01g" + b"\x00\x01t"      # group, topic
                   + b"\x00\x00\x00\x01")             # partition
    assert value == (b"\x00\x03"                      # value version 3
                     + struct.pack(">q", 42)          # offset
                     + b"\xff\xff\xff\xff"            # leaderEpoch -1
                     + b"\x00\x00"                    # metadata ""
                     + struct.pack(">q", 1000))       # commitTimestamp (no expireTimestamp in v3)


def test_consumer_protocol_bytes_by_hand() -> None:
    """ConsumerProtocolSubscription/Assignment v3, version-prefixed (``MessageUtil
    .toVersionPrefixedBytes``)."""
    tp = TopicPartition
    assert assignment_bytes([tp("t", 1), tp("t", 0)]) == (
        b"\x00\x03" + b"\x00\x00\x00\x01" + b"\x00\x01t" + b"\x00\x00\x00\x02" + b"\x00\x00\x00\x00"
        + b"\x00\x00\x00\x01" + b"\xff\xff\xff\xff")   # one topic, partitions [0, 1], userData null
    assert subscription_bytes(["t"], [tp("t", 2)]) == (
        b"\x00\x03" + b"\x00\x00\x00\x01\x00\x01t"    # topics ["t"]
        + b"\xff\xff\xff\xff"                          # userData null
        + b"\x00\x00\x00\x01\x00\x01t\x00\x00\x00\x01\x00\x00\x00\x02"   # ownedPartitions t:[2]
        + b"\xff\xff\xff\xff"                          # generationId -1
        + b"\xff\xff")                                 # rackId null


RUN = ["--protocol", "groups", "--seed", "0", "--steps", "800", "--faults", "all"]


def test_simulate_writes_the_partition_for_dump_log(tmp_path: Path) -> None:
    result = CliRunner().invoke(simulate, [*RUN, "--out", str(tmp_path), "--offsets-log"])
    assert result.exit_code == 0, result.output
    summary = json.loads((tmp_path / "summary.json").read_text())
    [directory] = summary["offsets_log"]
    assert Path(directory).relative_to(tmp_path).as_posix() == "offsets-log/__consumer_offsets-3"
    batches = _records(OsFS(), directory)
    assert sum(1 for b in batches for k, _ in b if k["type"] == "1") == summary["commits_accepted"]
    segment = Path(directory) / "00000000000000000000.log"
    out = CliRunner().invoke(dump_log, ["--offsets-decoder", "--files", str(segment)]).output
    lines = [line for line in out.splitlines() if line.startswith("| offset: ")]
    assert len(lines) == sum(map(len, batches))
    assert ' key: {"type":"2","data":{"group":"g"}} payload: {"version":"3","data":{"protocolType":""' in lines[0]
    assert any('"assignment":{"assignedPartitions":[{"topic":"t","partitions":[' in line for line in lines)
    assert any(' key: {"type":"1","data":{"group":"g","topic":"t","partition":' in line for line in lines)


def test_off_by_default_and_refused_where_there_is_no_offsets_log(tmp_path: Path) -> None:
    CliRunner().invoke(simulate, [*RUN, "--steps", "200", "--out", str(tmp_path)])
    assert not (tmp_path / "offsets-log").exists()
    assert "offsets_log" not in json.loads((tmp_path / "summary.json").read_text())
    result = CliRunner().invoke(simulate, ["--protocol", "replication", "--steps", "10",
                                           "--out", str(tmp_path / "r"), "--offsets-log"])
    assert result.exit_code == 2 and "keeps no offsets log" in result.output
