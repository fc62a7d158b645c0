"""The groups plug-in in the shared simulator: clean runs under every message fault and
consumer crashes keep the spec's invariants; a bug variant is caught; trace and history are
recorded in the shared formats."""

from __future__ import annotations

import pytest

from kraft.groups.sim_plugin import GroupsProtocol
from kraft.core.invariants import InvariantViolation
from kraft.sim.core import Faults, Simulator
from kraft.sim.recorder import Recorder

FAULTS = "drop,dup,delay,reorder,crash"


@pytest.mark.parametrize("seed", [1, 2])
def test_clean_run_keeps_invariants(seed: int) -> None:
    p = GroupsProtocol(3, None)
    rec = Recorder({"protocol": "groups", "spec": "ConsumerGroup"}, {"model": "consumer-group"})
    sim = Simulator(p, seed, Faults.parse(FAULTS), recorder=rec)
    sim.run(1500)
    s = p.summary(sim)
    assert s["rebalances"] >= 1 and s["generation"] >= 1
    assert {o["f"] for o in rec.ops} >= {"poll", "assign"}
    assert any(st["action"] == "HandleJoinGroup" for st in rec.steps)
    assert "groupState" in rec.steps[-1]["state"]


def test_variant_caught_in_simulation() -> None:
    caught = 0
    for seed in range(4):
        sim = Simulator(GroupsProtocol(3, "CooperativeAssignWithoutRevoke"), seed, Faults.parse(FAULTS))
        try:
            sim.run(2000)
        except InvariantViolation as e:
            assert e.invariant == "NoDoubleOwnership"
            caught += 1
    assert caught >= 2


def test_unknown_variant_is_rejected() -> None:
    with pytest.raises(ValueError, match="unknown variant"):
        GroupsProtocol(3, "NoSuchBug")
