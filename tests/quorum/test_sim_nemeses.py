"""The KRaft plug-in's targeted faults (``KRaftPlugin.nemeses``) do what they say."""

from __future__ import annotations

from kraft.quorum.config import QuorumConfig
from kraft.quorum.sim import KRaftPlugin
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
