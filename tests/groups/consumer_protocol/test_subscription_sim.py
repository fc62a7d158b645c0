"""The ``subscription-change`` nemesis end to end in process: seeded runs with every fault keep the
spec's invariants, consumers drop topics whose partitions they own, and the client history those
runs write audits clean (a partition of a dropped topic that moves to another consumer is no
anomaly).  A coordinator that ignores a changed subscription (no ``hasMemberSubscriptionChanged``
epoch bump in ``GroupMetadataManager.consumerGroupHeartbeat``) is caught by the simulator and by
the Hypothesis machine with the subscription rule, both with ValidTargetAssignment."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import settings
from hypothesis.stateful import run_state_machine_as_test

from kraft.groups.consumer_protocol.coordinator import GroupCoordinator
from kraft.groups.consumer_protocol.sim import SUBSCRIPTION_CHANGE, ConsumerProtocolPlugin
from kraft.sim.cli import run_once
from kraft.sim.core import Faults

from .machine import machine_config, make_subscription_machine
from .test_stateful import NO_SHRINK, SEARCH_BUDGET, STEPS

EVENTS = 1500
FAULTS = f"all,{SUBSCRIPTION_CHANGE}:200"


def simulate(seed: int, out: Path | None) -> dict:
    nemeses = ConsumerProtocolPlugin(3, None).nemeses()
    return run_once("consumer-protocol", seed, EVENTS, Faults.parse(FAULTS, nemeses), None, 3, out)


def dropped_owned_topics(history: Path) -> int:
    """How often a consumer's subscribe op leaves out a topic of a partition it was last assigned."""
    owned: dict[str, set[str]] = {}
    dropped = 0
    for line in history.read_text().splitlines():
        op = json.loads(line)
        if op.get("type") != "ok":
            continue
        if op["f"] == "assign":
            owned[op["process"]] = {str(k).rsplit("-", 1)[0] for k in op["value"]}
        elif op["f"] == "subscribe":
            dropped += bool(owned.get(op["process"], set()) - set(op["value"]))
    return dropped


@pytest.mark.parametrize("seed", [1, 2])
def test_subscription_changes_keep_every_invariant_and_audit_clean(seed: int, tmp_path: Path) -> None:
    from spark_validation.audit import AuditOptions, run
    from spark_validation.ingest.history import read_history

    summary = simulate(seed, tmp_path / "run")
    assert summary["verdict"] == "ok", summary.get("violation")
    assert summary["faults_injected"][SUBSCRIPTION_CHANGE] >= 3
    history = Path(summary["history"])
    assert dropped_owned_topics(history) >= 1
    h = read_history(history)
    assert not h.structure_errors and not h.malformed, (h.structure_errors[:3], h.malformed[:3])
    report = run(AuditOptions(paths=(str(history),), no_spark=True, checks=frozenset({"kafka"}),
                              out=tmp_path / "audit"), progress=lambda m: None)
    (res,) = report.results
    assert res.valid is True, res


def ignore_changed_subscriptions(monkeypatch: pytest.MonkeyPatch) -> None:
    """The coordinator takes a member's new topics but neither bumps the group epoch nor writes
    the subscription record: the old target stays, with partitions of topics it left."""
    subscribe = GroupCoordinator._subscribe

    def only_new_members(self: GroupCoordinator, c: str, instance: str | None, sub: frozenset[str]) -> None:
        if c not in self.members:
            subscribe(self, c, instance, sub)
    monkeypatch.setattr(GroupCoordinator, "_subscribe", only_new_members)


def test_the_simulator_catches_a_coordinator_ignoring_subscription_changes(monkeypatch) -> None:
    ignore_changed_subscriptions(monkeypatch)
    summary = simulate(1, None)
    assert summary["verdict"] == "violation"
    assert summary["violation"]["invariant"] == "ValidTargetAssignment", summary["violation"]


def test_the_machine_catches_a_coordinator_ignoring_subscription_changes(monkeypatch) -> None:
    ignore_changed_subscriptions(monkeypatch)
    with pytest.raises(AssertionError) as exc:
        run_state_machine_as_test(
            make_subscription_machine(machine_config()),
            settings=settings(max_examples=SEARCH_BUDGET, stateful_step_count=STEPS, phases=NO_SHRINK,
                              database=None, derandomize=True))
    assert "ValidTargetAssignment" in str(exc.value).splitlines()[0], str(exc.value)
