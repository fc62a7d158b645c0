"""The simulator's post-fault convergence checks (``KRaftPlugin.liveness``, the spec's liveness
properties) hold on the correct protocol and fail on a leader broken after the faults stop."""

from __future__ import annotations

import pytest

from kraft.core.invariants import InvariantViolation
from kraft.core.majority import majority_value
from kraft.quorum.config import QuorumConfig
from kraft.quorum.node import QuorumNode
from kraft.quorum.sim import KRaftPlugin
from kraft.sim.core import Faults, Simulator


def _simulate(seed: int, steps: int = 1500) -> tuple[KRaftPlugin, Simulator]:
    """Three voters and an observer, every fault, then the final phase (heal, quiesce, checks)."""
    plugin = KRaftPlugin(3, QuorumConfig(), observers=1)
    sim = Simulator(plugin, seed, Faults.parse("drop,dup,delay,reorder,crash,resign", plugin.nemeses()))
    sim.run(steps)
    sim.quiesce()
    return plugin, sim


def _voter_changes(plugin: KRaftPlugin) -> int:
    return plugin.stats["voters_added"] + plugin.stats["voters_removed"]


def test_voter_changes_are_committed_after_the_faults_stop() -> None:
    changed = 0
    for seed in (3, 4, 5):
        plugin, _ = _simulate(seed)   # a stuck change raises ReconfigurationNotStuck
        changed += _voter_changes(plugin)
    assert changed > 0


def _never_commit_voter_changes(self: QuorumNode) -> None:
    """The leader's high watermark rule, broken: it never passes an uncommitted VotersRecord."""
    flushed = self.storage.flushed_offset
    candidate = majority_value(flushed if v == self.id else self.end_offsets[v] for v in sorted(self.voters))
    if any(self.high_watermark <= o < candidate for o in self.storage.voter_offsets):
        return
    if candidate > self.epoch_start_offset and candidate > self.high_watermark:
        self.high_watermark = candidate
        self._apply_committed()


def test_a_change_the_leader_never_commits_is_reported(monkeypatch) -> None:
    monkeypatch.setattr(QuorumNode, "_maybe_advance_high_watermark", _never_commit_voter_changes)
    with pytest.raises(InvariantViolation) as exc:
        for seed in (3, 4, 5):
            _simulate(seed)
    assert exc.value.violation.invariant == "ReconfigurationNotStuck", exc.value
    assert "still have a voter change uncommitted" in exc.value.violation.message


def _simulate_crashes(seed: int) -> None:
    """Three voters, crashes and restarts among every other fault, then the final phase."""
    plugin = KRaftPlugin(3, QuorumConfig())
    sim = Simulator(plugin, seed, Faults.parse("drop,dup,delay,reorder,crash,resign", plugin.nemeses()))
    sim.run(1500)
    sim.quiesce()


def test_a_leader_is_elected_after_the_faults_stop() -> None:
    for seed in (1, 2, 3, 4, 5):
        _simulate_crashes(seed)   # no leader after the quiet period raises LeaderAfterCrash


def test_no_election_after_the_faults_stop_is_reported(monkeypatch) -> None:
    """Elections broken once the faults stop: a voter's election or fetch timer then starts no
    round (its timers are cleared), so a cluster left without a leader by the faults stays so."""
    calm = {"on": False}
    calm_down, timeout = Simulator.calm_down, QuorumNode.timeout

    def calm_down_and_break(self: Simulator, why: str) -> None:
        calm["on"] = True
        calm_down(self, why)

    def timeout_unless_calm(self: QuorumNode, now: int) -> None:
        if not calm["on"]:
            timeout(self, now)
            return
        self.election_deadline = self.fetch_deadline = None

    monkeypatch.setattr(Simulator, "calm_down", calm_down_and_break)
    monkeypatch.setattr(QuorumNode, "timeout", timeout_unless_calm)
    with pytest.raises(InvariantViolation) as exc:
        for seed in range(1, 21):
            calm["on"] = False
            _simulate_crashes(seed)
    # followers left behind the committed end by the lost leader are reported first
    found = {v.invariant: v.message for v in exc.value.violations}
    assert "LeaderAfterCrash" in found, exc.value
    assert "no replica leads epoch" in found["LeaderAfterCrash"]
