"""The groups plug-in in the shared simulator: clean runs under every message fault and
consumer crashes keep the spec's invariants; a bug variant is caught; trace and history are
recorded in the shared formats."""

from __future__ import annotations

import pytest

from kraft.groups.sim import GroupsPlugin
from kraft.core.invariants import InvariantViolation
from kraft.sim.core import Faults, Simulator
from kraft.sim.recorder import Recorder

FAULTS = "drop,dup,delay,reorder,crash"


@pytest.mark.parametrize("seed", [1, 2])
def test_clean_run_keeps_invariants(seed: int) -> None:
    p = GroupsPlugin(3, None)
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
        sim = Simulator(GroupsPlugin(3, "CooperativeAssignWithoutRevoke"), seed, Faults.parse(FAULTS))
        try:
            sim.run(2000)
        except InvariantViolation as e:
            assert e.invariant == "NoDoubleOwnership"
            caught += 1
    assert caught >= 2


def test_unknown_variant_is_rejected() -> None:
    with pytest.raises(ValueError, match="unknown variant"):
        GroupsPlugin(3, "NoSuchBug")


@pytest.mark.parametrize("seed", range(1, 7))
def test_history_is_well_formed_and_decided_by_the_audit(seed: int, tmp_path) -> None:
    """The client history is shaped as Jepsen writes one (every completion after its invocation,
    one open op per process, an abandoned asynchronous commit ended as ``info``; polls as
    ``{key: [[offset, value]]}``), so the audit's Kafka rules decide it (valid, not unknown). It
    had ``info`` assigns with no invocation and polls without values: the zoo's control audit
    was undecided."""
    from spark_validation.audit import AuditOptions, run
    from spark_validation.ingest.history import read_history

    rec = Recorder({}, {"model": "consumer-group"}, states=False, trace=False)
    sim = Simulator(GroupsPlugin(3, None), seed, Faults.parse(FAULTS), recorder=rec)
    sim.run(1500)
    path = rec.write(tmp_path / "run")[1]
    h = read_history(path)
    assert not h.structure_errors and not h.malformed, (h.structure_errors[:3], h.malformed[:3])
    report = run(AuditOptions(paths=(str(path),), no_spark=True, checks=frozenset({"kafka"}), out=tmp_path / "a"),
                 progress=lambda m: None)
    (res,) = report.results
    assert res.valid is True, res
