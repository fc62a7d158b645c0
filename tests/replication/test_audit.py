"""The audit sees PartitionReplication's data-loss variants in client histories.

``kraft simulate --protocol replication --after-violation N`` keeps running after the first
invariant violation (faults and clients as before) for N events, then ends as a Jepsen test does:
heal, restart every stopped node, quiesce, and final reads from offset 0 by every consumer (every
replication run that keeps its invariants ends that way too).  The Kafka rules of the audit
(Jepsen's Kafka workload) must then find the loss in the client history of the runs pinned for
each data-loss variant (``Variant.sim`` in kraft/replication/protocol.py: seed, steps, faults,
after-violation and the anomaly kinds), and nothing in the histories of the correct
implementation, neither under the pinned schedules nor over many seeds.

Seeds are pinned: a change to the simulator's schedule (new nodes, other random draws) moves
them. ``python -m tests.replication.test_audit VARIANT [FIRST] [COUNT] [FAULTS] [STEPS] [AFTER]``
prints, per seed, the first invariant violated and the anomaly kinds the audit reports, to pin new ones.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from kraft.core.declaration import SimRun
from kraft.replication.protocol import PROTOCOL as REPLICATION
from kraft.replication.sim import make
from kraft.sim.core import Faults, Simulator
from kraft.sim.recorder import Recorder
from spark_validation.checks.kafka import rules as kafka_rules
from spark_validation.audit import AuditOptions, run
from spark_validation.engine.result import HistoryResult

STEPS = 2000
AFTER = 1000
# invariants whose violation means clients could see a loss (an acknowledged record gone from a
# leader's log; one offset readable with two values)
LOSS_INVARIANTS = frozenset({"NoCommittedRecordLost", "ConsistentRead"})

# every run pinned for a variant: (variant, run)
PINNED: list[tuple[str, SimRun]] = [(v.name, r) for v in REPLICATION.variants for r in v.sim]
# the first pinned run of each variant is in the default suite, the others are -m slow
FIRST = {v.name: v.sim[0] for v in REPLICATION.variants if v.sim}
CORRECT_SEEDS = (0, 6)
# the fault mixes of the pins (the random faults and the targeted ones): the correct implementation
# must audit clean under each of them too
MIXES = sorted({r.faults for _, r in PINNED})
UE = FIRST["UncleanElection"]
CHEAP = FIRST["HwAdvanceUnderMinIsr"]  # the shortest pinned run (the CLI test's)


def simulate(variant: str | None, seed: int | SimRun, out: Path, after: int | None = AFTER,
             faults: str = "all", steps: int = STEPS) -> tuple[Simulator, Path]:
    """One run as ``kraft simulate --protocol replication --faults FAULTS --after-violation AFTER``
    (no trace); a ``SimRun`` gives seed, steps, faults and after-violation.  Returns the simulator
    and the history file."""
    if isinstance(seed, SimRun):
        seed, steps, faults, after = seed.seed, seed.steps, seed.faults, seed.after_violation
    plugin = make(3, variant)
    rec = Recorder({}, {"model": "append-log", "source": f"test_audit {variant} seed {seed} faults {faults}"},
                   states=False, trace=False)
    sim = Simulator(plugin, seed, Faults.parse(faults, plugin.nemeses()), recorder=rec, after_violation=after)
    sim.run(steps)
    sim.finish()
    _, history = rec.write(out)
    return sim, history


def audit(path: Path, out: Path) -> HistoryResult:
    """The in-process audit (``kraft audit --no-spark --checks kafka``) of one history: its result."""
    report = run(AuditOptions(paths=(str(path),), no_spark=True, checks=frozenset({"kafka"}), out=out,
                              write_ops=False), progress=lambda m: None)
    assert len(report.results) == 1 and not report.malformed, report.malformed
    return report.results[0]


def violation_kinds(result: HistoryResult) -> set[str]:
    return {a.kind for a in result.anomalies if kafka_rules.is_violation(a)}


@pytest.fixture(scope="module")
def run_cached(tmp_path_factory: pytest.TempPathFactory):
    """``simulate`` + ``audit`` of (variant, run), each run once per module."""
    cache: dict[tuple[str | None, SimRun], tuple[Simulator, Path, HistoryResult]] = {}
    base = tmp_path_factory.mktemp("runs")

    def get(variant: str | None, r: SimRun | int) -> tuple[Simulator, Path, HistoryResult]:
        r = r if isinstance(r, SimRun) else SimRun(r, STEPS, "all", AFTER)
        if (variant, r) not in cache:
            d = base / f"{variant}-{len(cache)}"
            sim, history = simulate(variant, r, d / "run")
            cache[(variant, r)] = (sim, history, audit(history, d / "audit"))
        return cache[(variant, r)]

    return get


def losses(sim: Simulator) -> set[str]:
    v = sim.first_violation
    if v is None:
        return set()
    return ({x.invariant for x in v.violations} | set(sim.later_violations)) & LOSS_INVARIANTS


def test_every_variant_is_pinned_or_declared_not_observable() -> None:
    """A variant either has simulator runs the audit flags, or says why no client can see it."""
    for v in REPLICATION.variants:
        why = v.unobservable.get("audit", "")
        assert bool(v.sim) != bool(why), f"{v.name}: pinned runs {v.sim}, declared not observable: {why!r}"
        for r in v.sim:
            assert r.anomalies, f"{v.name}: a pinned run names the anomaly kinds it shows"
            assert set(r.anomalies) <= set(kafka_rules.VIOLATIONS), r.anomalies
            Faults.parse(r.faults, make(3, v.name).nemeses())


def _check_pinned(variant: str, r: SimRun, run_cached) -> None:
    sim, history, result = run_cached(variant, r)
    argv = " ".join(r.argv())
    assert sim.first_violation is not None, (
        f"{variant} {argv}: no invariant violated (re-pin: python -m tests.replication.test_audit {variant})")
    assert sim.events >= sim.first_violation.event + r.after_violation  # it ran on after the violation
    kinds = violation_kinds(result)
    assert result.valid is False and set(r.anomalies) <= kinds, (variant, argv, sorted(kinds))
    assert sim.final_phase["final_reads"]["polls"] >= 1


@pytest.mark.parametrize("variant", sorted(FIRST))
def test_the_audit_finds_the_variants_loss_in_the_history(variant: str, run_cached) -> None:
    """The first pinned run of each variant: the bug acted (an invariant broke), the run went on
    and ended with Jepsen's final phase, and the audit names the pinned anomaly kinds."""
    _check_pinned(variant, FIRST[variant], run_cached)


@pytest.mark.slow
@pytest.mark.parametrize("variant,r", [(v, r) for v, r in PINNED if r is not FIRST[v]],
                         ids=lambda x: x if isinstance(x, str) else f"seed{x.seed}")
def test_every_pinned_run_is_flagged(variant: str, r: SimRun, run_cached) -> None:
    _check_pinned(variant, r, run_cached)


def _check_clean(sim: Simulator, result: HistoryResult, what: str) -> None:
    assert sim.first_violation is None and not losses(sim), f"{what}: {sim.first_violation}"
    assert result.valid is True and not violation_kinds(result), (what, result.anomalies[:3])


@pytest.mark.parametrize("faults", MIXES)
def test_correct_implementation_audits_clean_under_each_pinned_fault_mix(faults: str, run_cached) -> None:
    """The pinned schedule of each fault mix (its first pin), with the correct implementation: no
    violation, the final reads find a leader, the history is clean; so what the audit reports in
    the variant's run is the bug's doing, not the targeted faults'."""
    r = next(r for _, r in PINNED if r.faults == faults)
    sim, _, result = run_cached(None, r)
    _check_clean(sim, result, f"correct implementation, {' '.join(r.argv())}")
    assert sim.final_phase["final_reads"]["leader"] is not None


@pytest.mark.slow
@pytest.mark.parametrize("variant,r", PINNED, ids=lambda x: x if isinstance(x, str) else f"seed{x.seed}")
def test_every_pinned_schedule_is_clean_for_the_correct_implementation(variant: str, r: SimRun, run_cached) -> None:
    sim, _, result = run_cached(None, r)
    _check_clean(sim, result, f"correct implementation, {' '.join(r.argv())}")


def test_correct_implementation_histories_audit_clean(run_cached) -> None:
    """``--faults all`` as the review runs it; with or without --after-violation a run of the
    correct implementation is the same (it violates nothing) and ends with the final phase."""
    for seed in CORRECT_SEEDS:
        sim, history, result = run_cached(None, seed)
        _check_clean(sim, result, f"seed {seed}")
        fin = sim.final_phase["final_reads"]
        assert fin["leader"] is not None or fin.get("offline"), fin


def test_without_after_violation_a_clean_run_also_ends_with_the_final_phase(tmp_path: Path) -> None:
    """The review's mode (``kraft simulate --protocol replication --faults all --count N``, no
    --after-violation): the correct implementation's runs end with heal, quiesce and final reads,
    so an acknowledged send is never `unseen` merely because the run stopped; the summary says so."""
    from kraft.sim.cli import simulate as simulate_cmd
    from spark_validation.cli import audit as audit_cmd

    out = tmp_path / "sim"
    res = CliRunner().invoke(simulate_cmd, ["--protocol", "replication", "--faults", "all", "--seed", "1",
                                            "--count", "2", "--steps", "1000", "--no-states", "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert res.output.count("final phase: calm from event 1000") == 2
    for seed in (1, 2):
        doc = json.loads((out / f"replication-seed{seed}" / "summary.json").read_text())
        assert doc["final_phase"]["final_reads"]["leader"] is not None and "after_violation" not in doc
    res = CliRunner().invoke(audit_cmd, [str(out), "--no-spark", "--checks", "kafka", "--out", str(tmp_path / "a")])
    assert res.exit_code == 0, res.output


def test_final_phase_heals_and_reads_from_zero(run_cached) -> None:
    """After the steps: no partition, nobody down, no writes, and a fresh consumer that assigned
    itself and read every offset from 0 up to the leader's high watermark, which is the log end
    of every broker (the quiesce stops early once the cluster has settled)."""
    sim, history, _ = run_cached(None, CORRECT_SEEDS[0])
    assert sim.first_violation is None and sim.calm and not sim.network.blocked and not sim.down
    fin = sim.final_phase["final_reads"]
    ops = [json.loads(line) for line in history.read_text().splitlines()[1:]]
    fresh = fin["readers"][-1]
    polls = [o for o in ops if o["process"] == fresh and o["f"] == "poll" and o["type"] == "ok"]
    offsets = [off for o in polls for off, _ in o["value"]]
    assert offsets == list(range(fin["high_watermark"])) and fin["high_watermark"] > 0
    assert all(b.leo == fin["high_watermark"] for b in sim.plugin.brokers.values())
    assert sim.final_phase["quiesce_ms"] <= sim.quiesce_ms
    last_send = max(o["index"] for o in ops if o["f"] == "send" and o["type"] == "invoke")
    assert last_send < min(o["index"] for o in polls)  # writes stopped before the final reads


def test_a_partition_whose_isr_and_elr_members_all_crashed_ends_offline(run_cached) -> None:
    """Seed 6: the leader and the one ELR member both crash and lose their unflushed tails; on
    re-registration each leaves ISR and ELR (handleBrokerUncleanShutdown), so no replica may lead
    and, with unclean election disabled, the partition stays offline (KIP-966). The final phase
    says so instead of naming a leader."""
    sim, _, result = run_cached(None, CORRECT_SEEDS[1])
    _check_clean(sim, result, f"seed {CORRECT_SEEDS[1]}")
    p = sim.plugin.controller.partition
    assert p.leader == -1 and not p.isr and not p.elr and p.lastKnownElr
    fin = sim.final_phase["final_reads"]
    assert fin["leader"] is None and fin["offline"] == "no eligible leader: ISR and ELR are empty"


def test_a_consumer_past_the_new_leaders_log_end_resets_to_earliest(run_cached) -> None:
    """OFFSET_OUT_OF_RANGE then auto.offset.reset=earliest: the poll records the reset and reads
    from offset 0, which the audit reports as a nonmonotonic poll."""
    sim, history, result = run_cached("UncleanElection", UE)
    ops = [json.loads(line) for line in history.read_text().splitlines()[1:]]
    resets = [o for o in ops if o.get("reset")]
    assert resets and sim.plugin.stats["offset_resets"] == len(resets)
    for o in resets:
        assert o["reset"]["from"] > o["reset"]["leo"] and (not o["value"] or o["value"][0][0] == 0)
    assert "nonmonotonic-poll" in violation_kinds(result)


def test_without_the_option_the_run_stops_at_the_violation(tmp_path: Path) -> None:
    from kraft.core.invariants import InvariantViolation

    plugin = make(3, "UncleanElection")
    sim = Simulator(plugin, UE.seed, Faults.parse(UE.faults, plugin.nemeses()))
    with pytest.raises(InvariantViolation) as exc:
        sim.run(UE.steps)
    assert sim.events == exc.value.event and sim.stopped_at_violation
    sim.finish()
    assert not sim.final_phase  # a run stopped at a violation gets no final phase


def test_cli_summary_and_audit_counts_simulator_summaries(tmp_path: Path) -> None:
    from kraft.sim.cli import simulate as simulate_cmd
    from spark_validation.cli import audit as audit_cmd

    out = tmp_path / "sim"
    res = CliRunner().invoke(simulate_cmd, ["--protocol", "replication", "--variant", "HwAdvanceUnderMinIsr",
                                            *CHEAP.argv(), "--count", "2", "--no-states", "--out", str(out)])
    assert res.exit_code == 1, res.output
    assert "final phase: ran" in res.output
    doc = json.loads((out / f"replication-seed{CHEAP.seed}" / "summary.json").read_text())
    fin = doc["after_violation"]
    assert doc["violation"]["invariant"] and fin["limit"] == CHEAP.after_violation
    assert fin["events_after"] >= CHEAP.after_violation and fin["final_reads"]["polls"] >= 1
    header = (out / f"replication-seed{CHEAP.seed}" / "history.ndjson").read_text().splitlines()[0]
    assert f"--after-violation {CHEAP.after_violation}" in header and "isolate-followers:2000" in header
    res = CliRunner().invoke(audit_cmd, [str(out), "--no-spark", "--checks", "kafka", "--out", str(tmp_path / "a")])
    assert res.exit_code == 1, res.output
    assert "not histories    3 simulator summaries (summary.json)" in res.output
    assert "skipped file" not in res.output and "0 file(s) skipped" in res.output
    summary = json.loads((tmp_path / "a" / "summary.json").read_text())
    assert summary["command_summaries"] == {"simulate": 3} and summary["skipped_files"] == 0
    assert summary["histories"] == 2


def test_targeted_faults_are_deterministic_and_checked(tmp_path: Path) -> None:
    """A targeted fault (``--faults ...,isolate-leader:1000``) strikes the partition leader; the
    same seed gives the same run; invariants are checked after every event as ever."""
    r = SimRun(3, 1500, "drop,delay,partition,isolate-leader:700,isolate-followers:1500", 0)
    runs = [simulate(None, r, tmp_path / f"r{i}") for i in range(2)]
    (a, ha), (b, hb) = runs
    assert a.fault_counts == b.fault_counts and a.fault_counts.get("isolate-leader", 0) >= 2
    assert a.fault_counts.get("isolate-followers", 0) >= 1
    assert ha.read_text() == hb.read_text() and a.first_violation is None


# -- the sweep behind the docs table (docs/replication.md) -------------------------------------------

SWEEP_SEEDS = int(os.environ.get("KRAFT_AUDIT_SWEEP_SEEDS", "100"))  # a smaller number for a quick look


def sweep(variant: str | None, seeds: range, tmp: Path, faults: str = "all", steps: int = STEPS,
          after: int = AFTER) -> dict[str, Any]:
    """Per seed: the first invariant violated, whether a loss happened (LOSS_INVARIANTS), the
    anomaly kinds the audit reports, and whether the final reads found a leader."""
    rows = []
    for seed in seeds:
        sim, history = simulate(variant, seed, tmp / f"{variant}-{seed}", after=after, faults=faults, steps=steps)
        kinds = violation_kinds(audit(history, tmp / "audit"))
        rows.append({"seed": seed, "first": sim.first_violation and sim.first_violation.invariant,
                     "loss": sorted(losses(sim)), "kinds": sorted(kinds),
                     "online": sim.final_phase.get("final_reads", {}).get("leader") is not None})
    return {"variant": variant, "faults": faults, "rows": rows,
            "violated": sum(1 for r in rows if r["first"]), "lost": sum(1 for r in rows if r["loss"]),
            "caught": sum(1 for r in rows if r["kinds"]), "offline": sum(1 for r in rows if not r["online"]),
            "kinds": sorted({k for r in rows for k in r["kinds"]})}


@pytest.mark.slow
@pytest.mark.parametrize("variant", [None, *sorted(REPLICATION.variant_names)])
def test_sweep(variant: str | None, tmp_path: Path) -> None:
    """100 seeds of ``--faults all``: the correct implementation's histories audit clean, except
    that a partition the faults left offline (every ISR and ELR member shut down uncleanly: KIP-966
    elects none of them) cannot serve the final reads, so acknowledged sends no poll read before
    are `unseen` (docs/replication.md); a variant whose runs lost records is caught in some seed
    (a loss the audit misses in every seed is a bug in the history recording or the audit)."""
    s = sweep(variant, range(SWEEP_SEEDS), tmp_path)
    print(json.dumps({k: v for k, v in s.items() if k != "rows"}))
    if variant is None:
        assert s["lost"] == 0 and s["violated"] == 0, [r for r in s["rows"] if r["loss"] or r["first"]]
        flagged = [r for r in s["rows"] if r["kinds"]]
        assert all(not r["online"] and r["kinds"] == ["unseen"] for r in flagged), flagged
    elif s["lost"]:
        assert s["caught"] >= 1, s


@pytest.mark.slow
@pytest.mark.parametrize("faults", MIXES)
def test_sweep_correct_under_each_pinned_fault_mix(faults: str, tmp_path: Path) -> None:
    """The correct implementation under each pinned fault mix, 20 seeds: clean."""
    r = next(r for _, r in PINNED if r.faults == faults)
    s = sweep(None, range(int(os.environ.get("KRAFT_AUDIT_MIX_SEEDS", "20"))), tmp_path, faults, r.steps, r.after_violation)
    print(json.dumps({k: v for k, v in s.items() if k != "rows"}))
    assert s["violated"] == 0 and s["caught"] == 0, [r for r in s["rows"] if r["kinds"] or r["first"]]


if __name__ == "__main__":  # python -m tests.replication.test_audit VARIANT [FIRST] [COUNT] [FAULTS] [STEPS] [AFTER]
    import tempfile

    a = sys.argv[1:]
    name = a[0] if a else "correct"
    first, count = (int(a[1]) if len(a) > 1 else 0), (int(a[2]) if len(a) > 2 else 20)
    faults, steps, after = (a[3] if len(a) > 3 else "all"), (int(a[4]) if len(a) > 4 else STEPS), \
        (int(a[5]) if len(a) > 5 else AFTER)
    with tempfile.TemporaryDirectory() as d:
        result = sweep(None if name == "correct" else name, range(first, first + count), Path(d), faults, steps, after)
    for r in result["rows"]:
        print(json.dumps(r))
    print(json.dumps({k: v for k, v in result.items() if k != "rows"}))
