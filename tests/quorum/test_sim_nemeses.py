"""The KRaft plug-in's targeted faults (``KRaftPlugin.nemeses``) do what they say."""

from __future__ import annotations

from kraft.quorum.config import QuorumConfig, Role
from kraft.quorum.sim import KRaftPlugin
from kraft.quorum.voters import CONTROLLER_PORT
from kraft.quorum.world import QuorumWorld
from kraft.sim.core import Faults, Simulator


def _run(variant: str | None, seed: int = 1, steps: int = 600) -> tuple[KRaftPlugin, Simulator]:
    plugin = KRaftPlugin(3, QuorumConfig().with_variant(variant))
    sim = Simulator(plugin, seed, Faults.parse("resign,change-after-election", plugin.nemeses()))
    sim.run(steps)
    return plugin, sim


def test_the_correct_leader_refuses_a_change_right_after_its_election() -> None:
    """No high watermark in its epoch yet: every change the nemesis asks for is refused."""
    plugin, sim = _run(None)
    asked = sim.fault_counts.get("change-after-election", 0)
    assert asked >= 1
    assert plugin.stats["voter_changes_refused"] == asked
    assert plugin.stats["voters_removed"] == plugin.stats["voters_added"] == 0


def test_a_leader_with_the_bug_changes_the_voters_right_after_its_election() -> None:
    plugin, sim = _run("VoterChangeBeforeEpochCommit")
    assert sim.fault_counts.get("change-after-election", 0) >= 1
    assert plugin.stats["voters_removed"] >= 1
    assert any(len(n.voters) < 3 for n in plugin.nodes.values())


def _elect_with_removal_armed(variant: str | None) -> QuorumWorld:
    """Four voters, cold start: the fault point armed once (the 2nd of the winner's other voters),
    then voter 1's election timer fires and every message is delivered until it leads."""
    world = QuorumWorld(4, QuorumConfig(PreVote=False).with_variant(variant))
    world.change_after_election.append(1)
    world.timeout(1)
    while world.nodes[1].role is not Role.LEADER:
        world.deliver(0)
    return world


def test_the_hand_stepped_fault_point_is_refused_by_the_correct_leader() -> None:
    world = _elect_with_removal_armed(None)
    assert world.change_after_election == []   # spent on this election
    assert world.nodes[1].voters == (1, 2, 3, 4)


def test_the_hand_stepped_fault_point_removes_a_voter_with_the_bug() -> None:
    world = _elect_with_removal_armed("VoterChangeBeforeEpochCommit")
    assert world.change_after_election == []
    assert world.nodes[1].voters == (1, 2, 4)   # others (2, 3, 4), index 1
    assert world.nodes[1].high_watermark == 0   # nothing of its epoch committed when it changed


def test_a_replica_restarted_on_a_new_port_is_listed_there_after_its_update() -> None:
    """``reendpoint``: replicas restart on new ports; a voter that then follows a leader for an
    update-voter period has its new port written into the voter set, which every voter reads."""
    plugin = KRaftPlugin(3, QuorumConfig())
    sim = Simulator(plugin, 1, Faults.parse("reendpoint:6000", plugin.nemeses()))
    sim.run(1700)
    assert sim.fault_counts.get("reendpoint", 0) >= 1
    listed = {v.key.id: v.endpoints for v in plugin.nodes[1].voter_nodes_at()}
    updated = [i for i, n in plugin.nodes.items() if n.endpoints[0].port != CONTROLLER_PORT and listed[i] == n.endpoints]
    assert updated, {i: (n.endpoints, listed[i]) for i, n in plugin.nodes.items()}
    assert all(n.voter_nodes_at() == plugin.nodes[1].voter_nodes_at() for n in plugin.nodes.values())
