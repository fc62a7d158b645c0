"""The consumer-protocol coordinator's ``__consumer_offsets`` records and its failover.

The bytes of every record type are spelled out by hand from Kafka's schemas
(group-coordinator/src/main/resources/common/message/ConsumerGroup*.json: keys non-flexible at
their record type, values flexible version 0) and decode back through kraft's decoder; the records
of one write come in ``GroupMetadataManager``'s order; replaying the log gives the live
coordinator's state after every event of seeded simulations; a coordinator moved by the
``coordinator-failover`` nemesis keeps every invariant; the partition dumps with
``kraft dump-log --offsets-decoder``.
"""

from __future__ import annotations

import json
import re
import struct
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from kraft.core.invariants import InvariantViolation
from kraft.groups.assignors import TopicPartition
from kraft.groups.assignors.server.spec import Uuid
from kraft.groups.consumer_protocol import records as rec
from kraft.groups.consumer_protocol.config import ProtocolConfig
from kraft.groups.consumer_protocol.coordinator import GroupCoordinator
from kraft.groups.consumer_protocol.messages import ServerState
from kraft.groups.consumer_protocol.reconcile import MemberRecord
from kraft.groups.consumer_protocol.sim import ConsumerProtocolPlugin
from kraft.groups.consumer_protocol.world import ConsumerProtocolWorld
from kraft.log import Log, OsFS
from kraft.log.cli import dump_log
from kraft.log.offsets import decode_offsets_record
from kraft.sim.cli import simulate
from kraft.sim.core import Faults, Simulator

IDS = {"t1": Uuid(0, 1), "t2": Uuid(0, 2)}
T1 = bytes(15) + b"\x01"              # the 16 bytes of Uuid(0, 1)
T2 = bytes(15) + b"\x02"
TP = TopicPartition


def _i32(n: int) -> bytes:
    return struct.pack(">i", n)


def _key(record_type: int, member: str | None = None) -> bytes:
    """A key: int16 record type, then the key message at that version (int16-length strings)."""
    out = struct.pack(">h", record_type) + b"\x00\x01g"
    return out if member is None else out + struct.pack(">h", len(member)) + member.encode()


# ---------------------------------------------------------------------------------------- bytes
def test_member_subscription_bytes() -> None:
    key, value = rec.member_subscription("g", "c1", ["t2", "t1"], 3000)
    assert key == _key(5, "c1")
    assert value == (b"\x00\x00"                  # value version 0
                     + b"\x00" + b"\x00"          # instanceId, rackId: null (compact length 0)
                     + b"\x03c1"                  # clientId
                     + b"\x0b/127.0.0.1"          # clientHost
                     + b"\x03" + b"\x03t1" + b"\x03t2"   # subscribedTopicNames, sorted
                     + b"\x01"                    # subscribedTopicRegex ""
                     + _i32(3000)                 # rebalanceTimeoutMs
                     + b"\x00"                    # serverAssignor null
                     + b"\x01" + b"\x00\x01\x00")  # one tagged field: classicMemberMetadata (tag 0) null


def test_partition_metadata_bytes() -> None:
    key, value = rec.partition_metadata("g", [("t2", 3), ("t1", 2)], IDS)
    assert key == _key(4)
    topic = lambda uid, name, n: uid + b"\x03" + name + _i32(n) + b"\x01" + b"\x00"  # noqa: E731
    assert value == b"\x00\x00" + b"\x03" + topic(T1, b"t1", 2) + topic(T2, b"t2", 3) + b"\x00"
    assert rec.partition_metadata("g", (), IDS)[1] == b"\x00\x00" + b"\x01" + b"\x00"   # no topics left


def test_epoch_records_bytes() -> None:
    assert rec.group_epoch("g", 7) == (_key(3), b"\x00\x00" + _i32(7) + b"\x00")
    assert rec.target_epoch("g", 7) == (_key(6), b"\x00\x00" + _i32(7) + b"\x00")


def test_target_member_bytes() -> None:
    key, value = rec.target_member("g", "c1", frozenset({TP("t2", 0), TP("t1", 1), TP("t1", 0)}), IDS)
    assert key == _key(7, "c1")
    assert value == (b"\x00\x00" + b"\x03"
                     + T1 + b"\x03" + _i32(0) + _i32(1) + b"\x00"
                     + T2 + b"\x02" + _i32(0) + b"\x00"
                     + b"\x00")
    assert rec.target_member("g", "c2", frozenset(), IDS)[1] == b"\x00\x00" + b"\x01" + b"\x00"


def test_current_assignment_bytes() -> None:
    m = MemberRecord(5, 4, ServerState.UNREVOKED_PARTITIONS, frozenset({TP("t1", 0)}), frozenset({TP("t2", 1)}), 5)
    key, value = rec.current_assignment("g", "c1", m, IDS)
    assert key == _key(8, "c1")
    assert value == (b"\x00\x00" + _i32(5) + _i32(4)
                     + b"\x01"                                       # MemberState.UNREVOKED_PARTITIONS
                     + b"\x02" + T1 + b"\x02" + _i32(0) + b"\x00"    # assignedPartitions
                     + b"\x02" + T2 + b"\x02" + _i32(1) + b"\x00"    # partitionsPendingRevocation
                     + b"\x00")


def test_tombstones_in_remove_member_order() -> None:
    assert rec.member_tombstones("g", "c1") == [(_key(8, "c1"), None), (_key(7, "c1"), None), (_key(5, "c1"), None)]


def test_every_record_decodes_back() -> None:
    names = {v: k for k, v in IDS.items()}
    m = MemberRecord(5, 4, ServerState.UNRELEASED_PARTITIONS, frozenset({TP("t1", 0), TP("t2", 1)}), frozenset(), 6)
    key, value = rec.current_assignment("g", "c1", m, IDS)
    record_type, k, v = rec.decode(key, value)
    assert (record_type, k) == (8, {"groupId": "g", "memberId": "c1"})
    assert rec.member_of(v, names, 6) == m
    assert decode_offsets_record(*rec.member_subscription("g", "c1", ["t1"], 3000)) == (
        {"type": "5", "data": {"groupId": "g", "memberId": "c1"}},
        {"version": "0", "data": {"instanceId": None, "rackId": None, "clientId": "c1", "clientHost": "/127.0.0.1",
                                  "subscribedTopicNames": ["t1"], "subscribedTopicRegex": "",
                                  "rebalanceTimeoutMs": 3000, "serverAssignor": None,
                                  "classicMemberMetadata": None}})
    assert decode_offsets_record(*rec.target_member("g", "c1", frozenset({TP("t2", 1)}), IDS))[1] == {
        "version": "0", "data": {"topicPartitions": [{"topicId": str(IDS["t2"]), "partitions": [1]}]}}
    assert decode_offsets_record(*rec.partition_metadata("g", [("t1", 2)], IDS))[1]["data"]["topics"] == [
        {"topicId": str(IDS["t1"]), "topicName": "t1", "numPartitions": 2, "partitionMetadata": []}]
    for kv in (rec.group_epoch("g", 3), rec.target_epoch("g", 3)):
        assert list(decode_offsets_record(*kv)[1]["data"].values()) == [3]
    assert all(decode_offsets_record(k, v)[1] == "<DELETE>" for k, v in rec.member_tombstones("g", "c1"))


# ---------------------------------------------------------------------------------------- writes
def _types(co: GroupCoordinator) -> list[list[int]]:
    """The record types of each batch of the coordinator's partition."""
    return [[rec.decode(r.key, r.value)[0] for r in b.records] for b in co.offsets_log.batches()]


def test_one_batch_per_write_in_kafkas_order() -> None:
    w = ConsumerProtocolWorld(ProtocolConfig(), ("c1", "c2"))
    w.join("c1")
    w.settle()
    co = w.coordinator
    # first member: subscription, the group's topics, group epoch; its target, the assignment
    # epoch; its current assignment
    assert _types(co)[0] == [5, 4, 3, 7, 6, 8]
    w.join("c2")
    w.settle()
    joined = [b for b in _types(co) if b[:1] == [5]][1]
    assert joined[:2] == [5, 3] and joined[-2:] == [6, 8] and set(joined[2:-2]) == {7}
    commits = len(co.offsets.accepted)
    w.leave("c2")
    w.settle()
    assert [8, 7, 5, 3] in _types(co)                   # removeMember's tombstones, then the epoch
    assert all(set(b) == {1} for b in _types(co) if 1 in b)
    batches = co.offsets_log.batches()
    written = [decode_offsets_record(r.key, r.value) for b in batches for r in b.records if b.records[0].key[:2] == b"\x00\x01"]
    assert len(written) == len(co.offsets.accepted) > commits
    w.leave("c1")
    w.settle()
    assert _types(co)[-1] == [8, 7, 5, 4, 3]            # the last member: the group's topics emptied


# ---------------------------------------------------------------------------------------- replay
def _state(co: GroupCoordinator) -> tuple[Any, ...]:
    return (co.group_epoch, co.assignment_epoch, co.target, co.members, co.partition_epoch,
            {p: o.offset for p, o in co.offsets.committed.items()})


def _replay_every_event(seed: int, variant: str | None, events: int) -> int:
    """Replays the records written so far after every event of a run into a second coordinator
    and holds its state to the live one's; the number of records replayed."""
    plugin = ConsumerProtocolPlugin(3, variant)
    sim = Simulator(plugin, seed, Faults.parse("all"))
    co = plugin.world.coordinator
    shadow = GroupCoordinator(co.group_id, co.config)
    done = 0
    try:
        while sim.events < events and sim.step():
            for r in (r for b in co.offsets_log.log.read(done) for r in b.records):
                shadow.replay(r.key, r.value)
            done = co.offsets_log.log.end_offset
            assert _state(shadow) == _state(co), f"event {sim.events}"
    except InvariantViolation:
        assert variant is not None   # a bug variant's run ends at its violation
    loaded = GroupCoordinator.load(co.group_id, co.config, co.offsets_log.next_leader(), sim.now)
    assert _state(loaded) == _state(co)
    return done


@pytest.mark.parametrize("seed, variant", [(0, None), (1, None), (2, "RevocationAckIgnoredOnNewTarget"),
                                           (5, "PartitionEpochLostOnReassign")])
def test_replay_gives_the_live_state_after_every_event(seed: int, variant: str | None) -> None:
    assert _replay_every_event(seed, variant, 1500) > 50


def test_load_restarts_the_timers() -> None:
    w = ConsumerProtocolWorld(ProtocolConfig(), ("c1", "c2"))
    w.join("c1")
    w.settle()
    w.join("c2")
    for _ in range(100):
        if any(m.state is ServerState.UNREVOKED_PARTITIONS for m in w.coordinator.members.values()):
            break
        w.deliver(0) if w.pending else w.advance(w.config.heartbeat_interval_ms)
    co = w.coordinator
    loaded = GroupCoordinator.load(co.group_id, co.config, co.offsets_log.next_leader(), w.now + 50)
    assert loaded.last_heartbeat == {"c1": w.now + 50, "c2": w.now + 50}
    assert loaded.revoking_since == {x: w.now + 50 for x, m in co.members.items()
                                     if m.state is ServerState.UNREVOKED_PARTITIONS} != {}


def test_a_record_of_another_kind_is_refused() -> None:
    co = GroupCoordinator("g", ProtocolConfig())
    with pytest.raises(ValueError, match="record type 2"):
        co.replay(b"\x00\x02\x00\x01g", None)
    co.replay(b"\x00\x02\x00\x01h", None)      # another group's record is not this coordinator's


# ---------------------------------------------------------------------------------------- failover
@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_failover_keeps_every_invariant(seed: int) -> None:
    plugin = ConsumerProtocolPlugin(3, None)
    sim = Simulator(plugin, seed, Faults.parse("all,coordinator-failover:400", plugin.nemeses()))
    sim.run(2000)
    assert sim.fault_counts["coordinator-failover"] >= 10
    log = plugin.world.coordinator.offsets_log
    epochs = [b.partition_leader_epoch for b in log.batches()]   # each leader writes after the last
    assert epochs == sorted(epochs) and len(set(epochs)) > 5 and epochs[-1] <= log.leader_epoch
    assert plugin.world.coordinator.offsets.accepted   # the history carried over


def test_a_failover_that_loses_state_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """FailoverKeepsState fails when the replay forgets the targets."""
    w = ConsumerProtocolWorld(ProtocolConfig(), ("c1", "c2"))
    w.join("c1")
    w.join("c2")
    w.settle()
    monkeypatch.setitem(GroupCoordinator._REPLAY, rec.TARGET_MEMBER, lambda co, k, v: None)
    w.failover()
    assert [v.invariant for v in w.violations()] == ["FailoverKeepsState"]


def test_failover_mid_rebalance_then_the_group_converges() -> None:
    w = ConsumerProtocolWorld(ProtocolConfig(), ("c1", "c2", "c3"))
    w.join("c1")
    w.settle()
    w.join("c2")
    w.join("c3")
    for _ in range(4):
        w.deliver(0)
        w.failover()
    w.settle()
    assert w.quiet() and not w.violations()
    assert w.coordinator.offsets_log.leader_epoch == 4 and len(w.coordinator.members) == 3


# ---------------------------------------------------------------------------------------- the CLI
def test_simulate_keeps_the_partition_for_dump_log(tmp_path: Path) -> None:
    run = ["--protocol", "consumer-protocol", "--seed", "1", "--steps", "1500",
           "--faults", "all,coordinator-failover:500", "--out", str(tmp_path), "--offsets-log"]
    result = CliRunner().invoke(simulate, run)
    assert result.exit_code == 0, result.output
    summary = json.loads((tmp_path / "summary.json").read_text())
    [directory] = summary["offsets_log"]
    assert Path(directory).relative_to(tmp_path).as_posix() == "offsets-log/__consumer_offsets-3"
    log, _ = Log.open(OsFS(), directory)
    decoded = [decode_offsets_record(r.key, r.value) for b in log.read(0) for r in b.records]
    assert {k["type"] for k, _ in decoded} == {"1", "3", "4", "5", "6", "7", "8"}
    assert sum(1 for k, _ in decoded if k["type"] == "1") == summary["commits_accepted"]
    out = CliRunner().invoke(dump_log, ["--offsets-decoder", "--files", str(Path(directory) / "00000000000000000000.log")])
    assert out.exit_code == 0, out.output
    lines = [line for line in out.output.splitlines() if line.startswith("| offset: ")]
    assert len(lines) == len(decoded)
    assert lines[0].endswith(' key: {"type":"5","data":{"groupId":"g","memberId":"c1"}} payload: {"version":"0",'
                             '"data":{"instanceId":null,"rackId":null,"clientId":"c1","clientHost":"/127.0.0.1",'
                             '"subscribedTopicNames":["t1","t2"],"subscribedTopicRegex":"","rebalanceTimeoutMs":3000,'
                             '"serverAssignor":null,"classicMemberMetadata":null}}')
    assert any('payload: <DELETE>' in line and '"type":"8"' in line for line in lines)
    epochs = [int(m) for m in re.findall(r"partitionLeaderEpoch: (\d+) ", out.output)]
    assert epochs[0] == 0 and max(epochs) > 0 and epochs == sorted(epochs)
