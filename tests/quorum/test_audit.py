"""The audit sees KRaft's bug variants in client histories where the simulator reaches them.

Each run pinned in ``Variant.sim`` (kraft/quorum/protocol.py: seed, steps, faults, after-violation
and the Kafka anomaly kinds) is simulated as ``kraft simulate --protocol kraft --variant V
--after-violation N`` does (the run keeps going after the first violation, then Jepsen's final
phase and final reads); the in-process audit's Kafka rules must report exactly those kinds.  The
correct implementation audits clean on the same seeds.  The random schedule (seeds 1-30, 2000
events, all faults) reaches HwmFromAnyEpoch and ForgetVoteOnRestart in no run whose history shows
them, so they have no pin (TLC, Hypothesis and conformance catch them).  The pins of
KeepSuffixAfterSnapshotInstall, LeaderCountsSelfWhenRemoved, ObserverSkipsFsync,
VoterChangeBeforeEpochCommit (three voters: the split brain needs four) and IgnoreDirectoryIdInVote
are runs where the bug acts (conformance rejects them, tests/traces/test_kraft.py) but no client
read shows it: they declare no anomaly, and their histories audit clean.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kraft.core.declaration import SimRun
from kraft.quorum.protocol import PROTOCOL
from kraft.sim.core import Faults, Simulator
from kraft.protocols import PROTOCOLS
from kraft.sim.recorder import Recorder
from spark_validation.checks.kafka import rules as kafka_rules
from spark_validation.audit import AuditOptions, run

PINNED = [(v.name, r) for v in PROTOCOL.variants for r in v.sim]


def _history(variant: str | None, pin: SimRun, out: Path) -> Path:
    rec = Recorder({}, {"model": "append-log", "source": f"test_audit {variant} seed {pin.seed}"},
                   states=False, trace=False)
    plugin = PROTOCOLS["kraft"].plugin(3, variant, observers=pin.observers)
    sim = Simulator(plugin, pin.seed, Faults.parse(pin.faults, plugin.nemeses()), recorder=rec,
                    after_violation=pin.after_violation)
    sim.run(pin.steps)
    sim.finish()
    return rec.write(out)[1]


def _kinds(history: Path, out: Path) -> set[str]:
    report = run(AuditOptions(paths=(str(history),), no_spark=True, checks=frozenset({"kafka"}), out=out),
                 progress=lambda m: None)
    (res,) = report.results
    return {a.kind for a in res.anomalies if kafka_rules.is_violation(a)}


def test_polls_return_no_control_records(tmp_path: Path) -> None:
    """A consumer never sees control records: with voter changes the log holds VotersRecords, which
    no poll returns (else every reader would see the value "Voters" at many offsets: a duplicate)."""
    history = _history(None, SimRun(22, 500, "all", 300, observers=1), tmp_path)
    ops = [json.loads(x) for x in history.read_text().splitlines()[1:]]
    polled = [v for o in ops if o["f"] == "poll" and o["type"] == "ok" for _, v in o["value"]]
    assert polled and all(isinstance(v, int) for v in polled)
    assert _kinds(history, tmp_path / "a") == set()


def test_some_variants_are_pinned() -> None:
    assert {v for v, _ in PINNED} == {"VoteWithoutLogCheck", "NoTruncateOnDivergence", "KeepSuffixAfterSnapshotInstall",
                                      "ConcurrentVoterChange", "LeaderCountsSelfWhenRemoved", "ObserverSkipsFsync",
                                      "VoterChangeBeforeEpochCommit",
                                      "IgnoreDirectoryIdInVote"}


@pytest.mark.parametrize("variant,pin", PINNED, ids=[f"{v}-seed{r.seed}" for v, r in PINNED])
def test_pinned_run_is_flagged_and_the_correct_run_is_clean(variant: str, pin: SimRun, tmp_path: Path) -> None:
    assert _kinds(_history(variant, pin, tmp_path / "bad"), tmp_path / "a1") == set(pin.anomalies)
    assert _kinds(_history(None, pin, tmp_path / "good"), tmp_path / "a2") == set()
