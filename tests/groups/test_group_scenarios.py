"""Readable scenarios: the shrunk counterexamples of the Hypothesis suite, replayed step by step
on the world with each variant on (the invariant breaks at the marked step) and off (it
holds); and the ordinary lives of a group (join, crash, static restart, leave, expiry)."""

from __future__ import annotations

import pytest

from kraft.core.invariants import Violation
from kraft.core.step import Trigger
from kraft.groups.consumer import GroupConsumer
from kraft.groups.assignors import TopicPartition
from kraft.groups.coordinator import GroupConfig
from kraft.groups.world import GroupWorld
from kraft.groups.messages import ConsumerPhase, Errors, GroupState, OffsetCommit, RebalanceProtocol

EAGER, COOP = RebalanceProtocol.EAGER, RebalanceProtocol.COOPERATIVE


def world(protocol: RebalanceProtocol, **variant: bool) -> GroupWorld:
    return GroupWorld(GroupConfig(protocol=protocol, topics=(("t", 3),), **variant))


def owned(w: GroupWorld) -> dict[str, list[str]]:
    return {c: sorted(map(str, x.owned)) for c, x in w.consumers.items()}


def late_joiner_newest_first(w: GroupWorld) -> None:
    """c3 starts late; c1 and c2 settle; c3 starts; messages are delivered newest first."""
    w.crash("c3")
    w.start()
    w.settle()
    w.restart("c3")
    w.settle(order="lifo")


@pytest.mark.parametrize("protocol,variant", [(COOP, "CooperativeAssignWithoutRevoke"),
                                              (EAGER, "EagerNoRevokeBeforeJoin")])
def test_moving_partition_owned_twice_only_with_variant(protocol: RebalanceProtocol, variant: str) -> None:
    bad = world(protocol, **{variant: True})
    late_joiner_newest_first(bad)
    assert any(v.invariant == "NoDoubleOwnership" for v in bad.violations()), bad.narrative
    good = world(protocol)
    late_joiner_newest_first(good)
    assert good.violations() == [], good.narrative
    assert good.coordinator.state == GroupState.STABLE
    assert sorted(p for ps in owned(good).values() for p in ps) == ["t-0", "t-1", "t-2"]


def zombie_commit(w: GroupWorld) -> None:
    """c2 commits; its request is delayed across a rebalance that moves c2's partition to c1."""
    w.crash("c1")
    w.start()
    w.settle()
    assert owned(w) == {"c1": [], "c2": ["t-0", "t-1"], "c3": ["t-2"]}
    w.commit("c2")
    held = w.pending.pop()
    assert isinstance(held, OffsetCommit) and held.generation == w.coordinator.generation
    w.restart("c1")
    w.settle()
    assert owned(w)["c1"] == ["t-0"]
    w.pending.insert(0, held)
    w.deliver(0)


def test_stale_commit_fenced_only_with_variant() -> None:
    bad = world(EAGER, AcceptStaleGeneration=True)
    zombie_commit(bad)
    assert Violation("CommitFencing", "commit of t-0 by c2 accepted while c1 owned it") in bad.violations()
    good = world(EAGER)
    zombie_commit(good)
    assert good.violations() == []
    # ILLEGAL_GENERATION (the assignment changes that came while it was open follow it)
    assert [op for op in good.history if op["f"] == "commit"][-1]["type"] == "fail"


@pytest.mark.parametrize("protocol", [EAGER, COOP])
def test_group_life(protocol: RebalanceProtocol) -> None:
    w = world(protocol)
    w.start()
    w.settle()
    assert w.coordinator.state == GroupState.STABLE and w.violations() == []
    assert sorted(p for ps in owned(w).values() for p in ps) == ["t-0", "t-1", "t-2"]
    gen = w.coordinator.generation
    # a static member (c3) restarts within the session timeout: same partitions, no rebalance
    before = owned(w)["c3"]
    w.crash("c3")
    w.restart("c3")
    w.settle()
    assert owned(w)["c3"] == before and w.coordinator.generation == gen
    assert any(e["event"] == "replace_static_member" for e in w.coordinator.log)
    # a dynamic member crashes: its session expires, the rest take its partitions
    w.crash("c1")
    w.run_for(15_000)
    w.settle()
    assert w.violations() == []
    assert w.coordinator.generation > gen
    assert sorted(p for ps in owned(w).values() for p in ps) == ["t-0", "t-1", "t-2"]
    assert owned(w)["c1"] == []
    # a member leaves: LeaveGroup triggers an immediate rebalance
    gen = w.coordinator.generation
    w.leave("c2")
    w.settle()
    assert w.coordinator.generation > gen and owned(w)["c2"] == []
    assert sorted(owned(w)["c3"]) == ["t-0", "t-1", "t-2"]
    assert w.violations() == []


def test_slow_consumer_loses_its_lease_before_the_coordinator_expires_it() -> None:
    w = world(COOP)
    w.start()
    w.settle()
    # c1's heartbeats are lost for a whole session timeout: the client gives up its partitions
    # first (lease), then the coordinator expires the member; nobody double-owns meanwhile
    for _ in range(5):
        w.advance(3_000)
        w.net.discard(lambda m: getattr(m, "source", None) == "c1")
        assert w.violations() == []
    assert w.consumers["c1"].owned == frozenset()
    w.settle()
    assert w.violations() == [] and w.coordinator.state == GroupState.STABLE


def test_member_id_required_and_errors() -> None:
    w = world(EAGER)
    c = w.consumers["c1"]
    (join,) = c.step(Trigger(GroupConsumer.send_join_group), 0).messages
    out = w.coordinator.step(join, 0).messages
    assert out[0].error == Errors.MEMBER_ID_REQUIRED and out[0].member.startswith("c1-")
    # a heartbeat from a member the group does not know
    from kraft.groups.messages import Heartbeat
    r = w.coordinator.step(Heartbeat("c9", 1, "nobody", None, 0), 0).messages
    assert r[0].error == Errors.UNKNOWN_MEMBER_ID


def test_fenced_instance_id() -> None:
    w = world(EAGER)
    w.start()
    w.settle()
    c3 = w.consumers["c3"]
    old_member, gen = c3.member_id, c3.generation
    w.crash("c3")
    w.restart("c3")
    w.settle()
    from kraft.groups.messages import Heartbeat
    r = w.coordinator.step(Heartbeat("c3", 99, old_member, "c3", gen), w.now).messages
    assert r[0].error == Errors.FENCED_INSTANCE_ID


def test_history_and_rebalance_log() -> None:
    w = world(COOP)
    w.start()
    w.settle()
    w.poll("c1")
    w.commit("c1")
    w.settle()
    fs = {op["f"] for op in w.history}
    assert {"subscribe", "assign", "poll", "commit"} <= fs
    assert all(set(op) >= {"process", "type", "f", "value", "time", "index"} for op in w.history)
    log = w.rebalance_log()
    assert any(e["event"] == "stable" for e in log) and any(e["event"] == "assigned" for e in log)
    assert w.consumers["c1"].phase == ConsumerPhase.STABLE
    p = sorted(w.consumers["c1"].owned, key=str)[0]
    assert w.coordinator.offsets.fetch(TopicPartition(p.topic, p.partition)) == 1
