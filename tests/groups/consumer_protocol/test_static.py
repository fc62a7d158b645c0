"""Static membership (``group.instance.id``) at the coordinator and the consumer.  The cases follow
GroupMetadataManagerTest (group-coordinator): testNoGroupEpochBumpWhenStaticMemberTemporarilyLeaves,
testStaticMemberGetsBackAssignmentUponRejoin,
testShouldThrownUnreleasedInstanceIdExceptionWhenNewMemberJoinsWithInUseInstanceId,
testShouldThrownUnknownMemberIdExceptionWhenUnknownStaticMemberJoins,
testShouldThrowFencedInstanceIdExceptionWhenStaticMemberWithDifferentMemberIdJoins and
testSessionTimeoutExpirationStaticMember.  The simulator's ``static-restart`` nemesis keeps every
invariant, across coordinator failovers too."""

from __future__ import annotations

import pytest

from kraft.core.step import TICK, Trigger
from kraft.groups.assignors import TopicPartition
from kraft.groups.consumer_protocol import records as rec
from kraft.groups.consumer_protocol.config import ProtocolConfig
from kraft.groups.consumer_protocol.consumer import Consumer
from kraft.groups.consumer_protocol.coordinator import GroupCoordinator
from kraft.groups.consumer_protocol.messages import (
    ClientState,
    Errors,
    Heartbeat,
    HeartbeatResponse,
    Partitions,
    ServerState,
)
from kraft.groups.consumer_protocol.sim import STATIC_RESTART, ConsumerProtocolPlugin
from kraft.sim.core import Faults, Simulator

CONFIG = ProtocolConfig(topics=(("foo", 2),), static=("a",))
FOO = frozenset({TopicPartition("foo", 0), TopicPartition("foo", 1)})


def hb(co: GroupCoordinator, member: str, epoch: int, owned: Partitions | None = None,
       instance: str | None = "a", now: int = 0) -> HeartbeatResponse | None:
    out = co.step(Heartbeat(member, 0, epoch, owned, ("foo",), instance), now).messages
    return out[0] if out else None


def stable_group() -> GroupCoordinator:
    """Static member ``a`` (instance ``a``) and dynamic member ``b``, both STABLE at epoch 2."""
    co = GroupCoordinator("g", CONFIG)
    hb(co, "a", 0, frozenset())
    hb(co, "b", 0, frozenset(), instance=None)
    hb(co, "a", 1, FOO)                         # a is to give b a partition
    hb(co, "a", 1, co.members["a"].assigned)    # a gave it up
    hb(co, "b", 2, frozenset(), instance=None)
    assert co.members["a"].state is co.members["b"].state is ServerState.STABLE
    assert co.members["a"].epoch == co.members["b"].epoch == co.group_epoch == 2
    return co


def record_types(co: GroupCoordinator, batch: int) -> list[tuple[int, str | None, bool]]:
    out = []
    for r in co.offsets_log.batches()[batch].records:
        t, k, v = rec.decode(r.key, r.value)
        out.append((t, k.get("memberId"), v is None))
    return out


def test_a_static_member_records_its_instance_id() -> None:
    co = GroupCoordinator("g", CONFIG)
    hb(co, "a", 0, frozenset())
    (first, *_) = co.offsets_log.batches()[0].records
    t, k, v = rec.decode(first.key, first.value)
    assert (t, k["memberId"], v["instanceId"], v["clientId"]) == (rec.MEMBER_METADATA, "a", "a", "a")
    assert co.static_members == {"a": "a"}


def test_a_static_leave_keeps_the_member_and_its_assignment_without_a_rebalance() -> None:
    co = stable_group()
    before = co.members["a"]
    batches = len(co.offsets_log.batches())
    assert hb(co, "a", -2) is None
    after = co.members["a"]
    assert (after.epoch, after.assigned, after.pending) == (-2, before.assigned, frozenset())
    assert (co.group_epoch, co.assignment_epoch) == (2, 2)
    assert all(co.partition_epoch[p] == -2 for p in before.assigned)
    assert record_types(co, batches) == [(rec.CURRENT_ASSIGNMENT, "a", False)]


def test_a_new_process_gets_the_assignment_back_under_its_new_member_id() -> None:
    co = stable_group()
    assigned = co.members["a"].assigned
    hb(co, "a", -2)
    batches = len(co.offsets_log.batches())
    resp = hb(co, "a#1", 0, frozenset())
    assert resp is not None and (resp.error, resp.member_epoch, resp.assignment) == (Errors.NONE, 2, assigned)
    assert "a" not in co.members and co.static_members == {"a": "a#1"}
    assert co.members["a#1"].assigned == assigned and co.target["a#1"] == assigned
    assert (co.group_epoch, co.assignment_epoch) == (2, 2)
    old, new = [(t, "a", True) for t in (8, 7, 5)], [(t, "a#1", False) for t in (5, 7, 8)]
    assert record_types(co, batches) == old + new + [(rec.CURRENT_ASSIGNMENT, "a#1", False)]


def test_joining_under_an_instance_id_not_released_is_refused() -> None:
    co = stable_group()
    resp = hb(co, "a#1", 0, frozenset())
    assert resp is not None and resp.error is Errors.UNRELEASED_INSTANCE_ID
    assert set(co.members) == {"a", "b"} and co.members["a"].epoch == 2


def test_an_unknown_instance_id_is_an_unknown_member() -> None:
    co = stable_group()
    resp = hb(co, "z", 2, instance="z")
    assert resp is not None and resp.error is Errors.UNKNOWN_MEMBER_ID


@pytest.mark.parametrize("epoch", [2, -1, -2])
def test_another_member_id_under_a_known_instance_id_is_fenced(epoch: int) -> None:
    """A heartbeat is answered FENCED_INSTANCE_ID; a leave changes nothing."""
    co = stable_group()
    members = dict(co.members)
    resp = hb(co, "a#7", epoch)
    assert (resp.error if resp else None) is (Errors.FENCED_INSTANCE_ID if epoch > 0 else None)
    assert co.members == members


def test_a_static_member_that_left_is_removed_by_its_session_timeout() -> None:
    co = stable_group()
    hb(co, "a", -2)
    co.step(TICK, CONFIG.session_timeout_ms)   # b's heartbeat is as old: a goes first (by id)
    assert "a" not in co.members and co.static_members == {}
    assert co.group_epoch > 2


def test_a_static_leave_of_minus_one_removes_the_member() -> None:
    co = stable_group()
    hb(co, "a", -1)
    assert "a" not in co.members and co.static_members == {} and co.group_epoch == 3


def test_a_loaded_coordinator_knows_its_static_members() -> None:
    co = stable_group()
    hb(co, "a", -2)
    hb(co, "a#1", 0, frozenset())
    hb(co, "a#1", 2, co.members["a#1"].assigned)
    hb(co, "a#1", -2)
    loaded = GroupCoordinator.load("g", CONFIG, co.offsets_log.next_leader(), 0)
    assert loaded.static_members == co.static_members == {"a": "a#1"}
    assert loaded.members == co.members and loaded.partition_epoch == co.partition_epoch


def step(c: Consumer, handler: object, m: HeartbeatResponse | None = None) -> list[object]:
    return list(c.step(Trigger(handler) if m is None else m, 0).messages)


def consumer_in_group(cid: str) -> Consumer:
    c = Consumer(cid, CONFIG)
    for action in (Consumer.join, Consumer.send_heartbeat):
        step(c, action)
    step(c, None, HeartbeatResponse(c.member_id, 0, Errors.NONE, 1, FOO))
    for action in (Consumer.reconcile_commit, Consumer.reconcile_revoke, Consumer.reconcile_assign):
        step(c, action)
    assert c.owned == FOO
    return c


def leave(c: Consumer) -> Heartbeat:
    step(c, Consumer.leave)
    step(c, Consumer.leave_revoke)
    (m,) = step(c, Consumer.send_leave_heartbeat)
    assert isinstance(m, Heartbeat)
    return m


@pytest.mark.parametrize("cid,epoch,instance", [("a", -2, "a"), ("b", -1, None)])
def test_a_static_consumer_leaves_with_minus_two(cid: str, epoch: int, instance: str | None) -> None:
    """ConsumerMembershipManager.leaveGroupEpoch."""
    c = consumer_in_group(cid)
    m = leave(c)
    assert (m.member_epoch, m.instance_id, c.epoch, c.state) == (epoch, instance, epoch, ClientState.UNSUBSCRIBED)


@pytest.mark.parametrize("error", [Errors.UNRELEASED_INSTANCE_ID, Errors.FENCED_INSTANCE_ID])
def test_an_instance_id_error_is_fatal(error: Errors) -> None:
    c = consumer_in_group("a")
    step(c, Consumer.send_heartbeat)
    step(c, None, HeartbeatResponse("a", 0, error, 0, None))
    assert (c.state, c.owned) == (ClientState.FATAL, frozenset())
    assert c.due(10_000) is None


def test_a_new_process_chooses_a_new_member_id() -> None:
    c = consumer_in_group("a")
    leave(c)
    step(c, Consumer.new_process)
    assert (c.member_id, c.state, c.epoch) == ("a#1", ClientState.UNSUBSCRIBED, -1)
    (m,) = [step(c, Consumer.join), step(c, Consumer.send_heartbeat)][1]
    assert isinstance(m, Heartbeat) and (m.member_id, m.instance_id, m.member_epoch) == ("a#1", "a", 0)


@pytest.mark.parametrize("seed", [0, 1])
def test_static_restarts_in_the_simulator_keep_every_invariant(seed: int) -> None:
    """Simulator.run raises the first violation; a later process of c1 joined under its instance
    id (its subscription record), and only c1 is static."""
    plugin = ConsumerProtocolPlugin(3, None)
    sim = Simulator(plugin, seed, Faults.parse(f"all,{STATIC_RESTART}:300,coordinator-failover:700", plugin.nemeses()))
    sim.run(2000)
    assert sim.fault_counts[STATIC_RESTART] >= 10 and sim.fault_counts["coordinator-failover"] >= 3
    subscriptions = []
    for batch in plugin.world.coordinator.offsets_log.batches():
        for r in batch.records:
            t, k, v = rec.decode(r.key, r.value)
            if t == rec.MEMBER_METADATA and v is not None:
                subscriptions.append((k["memberId"], v["instanceId"]))
    assert any(x.startswith("c1#") and i == "c1" for x, i in subscriptions)
    assert all(i is None for x, i in subscriptions if not x.startswith("c1"))


def test_without_the_nemesis_no_consumer_is_static() -> None:
    plugin = ConsumerProtocolPlugin(3, None)
    Simulator(plugin, 0, Faults.parse("all", plugin.nemeses())).run(10)
    assert plugin.world.config.static == ()
