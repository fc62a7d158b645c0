"""The simulator's ghost of committed records (``Monitor.committed``) is the spec's ``committed``:
``CommitGhost`` extends it whenever a leader's high watermark passes it, at every spec step, while
the simulator checks its invariants after whole events."""

from __future__ import annotations

from typing import Any

from kraft.quorum.config import QuorumConfig
from kraft.quorum.sim import KRaftPlugin
from kraft.sim.core import Faults, Simulator


class _SpecGhost:
    """A recorder that grows the spec's ghost from each recorded post-state, as CommitGhost does."""

    states = True

    def __init__(self) -> None:
        self.trace_header: dict[str, Any] = {}
        self.committed: list[tuple[int, Any]] = []

    def step(self, action: str, node: Any, args: dict[str, Any], spec: bool, state: dict[str, Any] | None) -> None:
        if not spec or state is None:
            return
        for n, role in state["role"].items():
            hw, start = state["highWatermark"][n], state["logStartOffset"][n]
            if role == "Leader" and hw > len(self.committed) >= start:
                entries = state["log"][n][len(self.committed) - start:hw - start]
                self.committed += [(e["epoch"], e["value"]) for e in entries]

    def op(self, *args: Any, **kwargs: Any) -> None:
        pass


def test_a_removed_leader_that_commits_and_resigns_in_one_event_grows_the_ghost() -> None:
    """Seed 5 of this run has a leader commit its own removal and resign within one event, before
    any follower learns the new high watermark: the ghost must hold the VotersRecord (without it,
    the disk-loss fault wiped a voter the spec's DiskLossAllowed protects)."""
    plugin = KRaftPlugin(3, QuorumConfig(), observers=1)
    ghost = _SpecGhost()
    sim = Simulator(plugin, 5, Faults.parse("all,reendpoint", plugin.nemeses()), recorder=ghost)
    sim.run(2000)
    assert plugin.stats["voters_removed"] >= 1
    assert [(e[0], e[1]) for e in plugin.world.monitor.committed] == ghost.committed
