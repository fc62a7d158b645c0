"""Scenarios in the spirit of Kafka's RaftEventSimulationTest, on the seeded simulator.

Each runs with invariants checked after every event (the simulator raises InvariantViolation) and
then asserts liveness: a leader, and committed progress."""

from __future__ import annotations

import pytest

from kraft.quorum.config import Role
from kraft.sim.core import Faults, Simulator
from kraft.quorum.sim import KRaftPlugin

SEEDS = [0, 1, 2]


def make(voters: int, seed: int, faults: str = "none") -> tuple[Simulator, KRaftPlugin]:
    p = KRaftPlugin(voters)
    return Simulator(p, seed, Faults.parse(faults)), p


def leader(sim: Simulator, p: KRaftPlugin) -> int | None:
    return p.believed_leader(sim)


def committed(p: KRaftPlugin) -> int:
    return len(p.world.monitor.committed)


def run_until_leader(sim: Simulator, p: KRaftPlugin, within_ms: int = 15_000,
                     exclude: set[int] = frozenset()) -> int:
    deadline = sim.now + within_ms
    while sim.now < deadline:
        sim.run_until(sim.now + 100)
        lid = leader(sim, p)
        if lid is not None and lid not in exclude:
            return lid
    raise AssertionError(f"no leader within {within_ms}ms:\n{p.describe(sim)}")


def assert_progress(sim: Simulator, p: KRaftPlugin, ms: int = 3000, by: int = 5) -> None:
    before = committed(p)
    sim.run_until(sim.now + ms)
    assert committed(p) >= before + by, f"committed {before} -> {committed(p)} in {ms}ms:\n{p.describe(sim)}"


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("voters", [1, 3, 5])
def test_elect_initial_leader(voters: int, seed: int) -> None:
    sim, p = make(voters, seed)
    lid = run_until_leader(sim, p)
    sim.run_until(sim.now + 2000)
    assert all(n.leader_id == lid for n in p.nodes.values()), p.describe(sim)
    assert_progress(sim, p)


@pytest.mark.parametrize("seed", SEEDS)
def test_new_leader_after_old_one_fails(seed: int) -> None:
    sim, p = make(3, seed)
    old = run_until_leader(sim, p)
    assert_progress(sim, p)
    sim.crash(old, downtime_ms=None)
    new = run_until_leader(sim, p, exclude={old})
    assert new != old
    assert_progress(sim, p)
    sim.restart(old)
    sim.run_until(sim.now + 3000)
    assert p.nodes[old].role is Role.FOLLOWER and p.nodes[old].leader_id == leader(sim, p), p.describe(sim)


@pytest.mark.parametrize("seed", SEEDS)
def test_new_leader_after_old_one_is_partitioned_away(seed: int) -> None:
    sim, p = make(3, seed)
    old = run_until_leader(sim, p)
    others = [n for n in p.voter_ids if n != old]
    sim.network.partition({(old, o) for o in others} | {(o, old) for o in others})
    new = run_until_leader(sim, p, exclude={old})
    assert_progress(sim, p)
    # the isolated leader resigns by check-quorum (1.5 x fetch timeout) and cannot commit alone
    sim.run_until(sim.now + 5000)
    assert p.nodes[old].role is not Role.LEADER, p.describe(sim)
    sim.network.heal()
    sim.run_until(sim.now + 4000)
    assert p.nodes[old].leader_id == leader(sim, p) and p.nodes[old].current_epoch == p.nodes[new].current_epoch


@pytest.mark.parametrize("seed", SEEDS)
def test_progress_with_a_reachable_majority_of_five(seed: int) -> None:
    sim, p = make(5, seed)
    lid = run_until_leader(sim, p)
    cut = [n for n in p.voter_ids if n != lid][:2]  # two followers unreachable
    for c in cut:
        sim.network.partition({(c, o) for o in p.voter_ids if o != c} | {(o, c) for o in p.voter_ids if o != c})
    assert_progress(sim, p, ms=5000, by=10)
    sim.network.heal()
    sim.run_until(sim.now + 5000)
    ld = p.nodes[leader(sim, p)]
    for c in cut:
        assert p.nodes[c].storage.end_offset >= ld.high_watermark - 5, p.describe(sim)


@pytest.mark.parametrize("seed", SEEDS)
def test_back_to_back_leader_failures(seed: int) -> None:
    sim, p = make(5, seed)
    first = run_until_leader(sim, p)
    assert_progress(sim, p)
    sim.crash(first, downtime_ms=None)
    second = run_until_leader(sim, p, exclude={first})
    sim.crash(second, downtime_ms=None)  # before it could do much
    third = run_until_leader(sim, p, exclude={first, second})
    assert len({first, second, third}) == 3
    assert_progress(sim, p)
    sim.restart(first)
    sim.restart(second)
    assert_progress(sim, p)


@pytest.mark.parametrize("seed", SEEDS)
def test_recovery_after_all_nodes_are_killed(seed: int) -> None:
    sim, p = make(3, seed)
    run_until_leader(sim, p)
    assert_progress(sim, p)
    before = committed(p)
    for n in p.voter_ids:
        sim.crash(n, downtime_ms=None)
    sim.run_until(sim.now + 2000)
    for n in p.voter_ids:
        sim.restart(n)
    run_until_leader(sim, p)
    assert_progress(sim, p)
    # nothing committed was lost (the simulator also checks NoCommittedRecordLost after every event)
    assert committed(p) > before


@pytest.mark.parametrize("seed", SEEDS)
def test_follower_losing_its_disk_rejoins_and_catches_up(seed: int) -> None:
    """A follower's disk is wiped (the committed prefix is durable on the other two voters, so the
    scenario is safe; see docs/quorum.md "Losing a disk" for the unsafe cases)."""
    sim, p = make(3, seed)
    lid = run_until_leader(sim, p)
    assert_progress(sim, p, by=20)
    victim = next(n for n in p.voter_ids if n != lid)
    for _ in range(200):  # wait for a moment when the other follower has caught up with the victim
        if p.can_lose_disk(sim, victim):
            break
        sim.step()
    assert p.can_lose_disk(sim, victim), p.describe(sim)
    sim.lose_disk(victim)
    node = p.nodes[victim]
    assert node.storage.end_offset == 0 and node.current_epoch == 0 and node.awaiting_leader
    sim.run_until(sim.now + 4000)
    ld = p.nodes[leader(sim, p)]
    assert node.role is Role.FOLLOWER and not node.awaiting_leader
    k = min(node.storage.end_offset, ld.high_watermark)
    assert node.storage.entries[:k] == ld.storage.entries[:k]
    assert node.storage.end_offset >= ld.high_watermark - 5 and node.high_watermark >= ld.high_watermark - 5


def test_disk_loss_guard_refuses_when_the_node_is_needed() -> None:
    """With one voter down, wiping another would leave the committed prefix on a minority."""
    sim, p = make(3, 0)
    lid = run_until_leader(sim, p)
    assert_progress(sim, p)
    a, b = [n for n in p.voter_ids if n != lid]
    sim.crash(a, downtime_ms=None)
    p.world.fs[a].lose_disk(p.nodes[a].directory)
    p.nodes[a].storage.entries.clear()  # what the projection would see once it restarts
    assert not p.can_lose_disk(sim, b)
    assert not p.can_lose_disk(sim, lid)  # never the leader


@pytest.mark.parametrize("seed", range(4))
def test_all_faults_keep_invariants(seed: int) -> None:
    sim, p = make(3 if seed % 2 == 0 else 5, seed, "all")
    sim.run(4000)
    sim.finish()
    assert p.elections >= 1 and committed(p) > 0
