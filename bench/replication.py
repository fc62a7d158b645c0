"""Partition-replication numbers in tables: per bug variant, the time to the first counterexample
for TLC (``kraft check PartitionReplication --variant NAME``, through model_check's ``run_spec`` at
the variant's manifest size, one worker) and for the Hypothesis machine (tests/replication/machine.py,
derandomized, each variant at its test budget and shrink time (tests/replication/test_stateful.py
``BUDGET``, ``SHRINK_SECONDS``), each in a fresh process: examples and seconds to the first failing run, and in brackets
with the bounded shrink, what the test takes); then the simulator's events/s;
then the audit table: per variant, each pinned simulator run (``Variant.sim`` in
kraft/replication/protocol.py: ``kraft simulate --variant V --seed S --steps K --faults F
--after-violation N``), the invariant it broke first, whether records were lost
(NoCommittedRecordLost / ConsistentRead), the Kafka anomalies ``kraft audit --checks kafka
--no-spark`` reports, and the same schedule with the correct implementation (must be clean).

    python bench/replication.py [VARIANT ...] [--examples N] [--no-tlc] [--no-hypothesis] [--no-audit]

The tables go to bench/results/replication.md (its header gives the machine and its load).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import results  # noqa: E402  (bench/results.py)
from kraft.core.declaration import SimRun  # noqa: E402
from tests.replication.machine import search  # noqa: E402
from kraft.replication.protocol import PROTOCOL  # noqa: E402
from kraft.replication.sim import make  # noqa: E402
from kraft.sim.core import Faults, Simulator  # noqa: E402
from kraft.sim.recorder import Recorder  # noqa: E402


def events_per_second(steps: int) -> float:
    sim = Simulator(make(3, None), 1, Faults.parse("all"))
    t = time.perf_counter()
    sim.run(steps)
    return sim.events / (time.perf_counter() - t)


def pinned_row(variant: str | None, run: SimRun, out: Path) -> dict[str, object]:
    """One pinned run (``variant`` None: the correct implementation on the same schedule): the first
    violation, the losses, the anomaly kinds the audit reports, events and seconds."""
    from spark_validation.checks.kafka import rules as kafka_rules
    from spark_validation.audit import AuditOptions, run as audit_run

    t = time.perf_counter()
    plugin = make(3, variant)
    rec = Recorder({}, {"model": "append-log", "source": f"bench/replication.py {variant} {' '.join(run.argv())}"},
                   states=False, trace=False)
    sim = Simulator(plugin, run.seed, Faults.parse(run.faults, plugin.nemeses()), recorder=rec,
                    after_violation=run.after_violation)
    sim.run(run.steps)
    sim.finish()
    seconds = time.perf_counter() - t
    _, history = rec.write(out)
    rep = audit_run(AuditOptions(paths=(str(history),), no_spark=True, checks=frozenset({"kafka"}), out=out / "audit",
                                 write_ops=False), progress=lambda m: None)
    kinds = sorted({a.kind for a in rep.results[0].anomalies if kafka_rules.is_violation(a)})
    v = sim.first_violation
    lost = sorted(({x.invariant for x in v.violations} | set(sim.later_violations)) & LOSS) if v else []
    return {"first": f"{v.invariant} @{v.event}" if v else "none", "lost": ", ".join(lost) or "no",
            "kinds": ", ".join(kinds) or "clean", "events": sim.events, "seconds": seconds}


LOSS = {"NoCommittedRecordLost", "ConsistentRead"}


def audit_table(variants: list[str]) -> str:
    out = Path(tempfile.mkdtemp())
    rows = []
    for name in variants:
        v = PROTOCOL.variant(name)
        if not v.sim:
            why = f"not observable: {v.unobservable['audit']}" if "audit" in v.unobservable else "not pinned"
            rows.append((name, "-", "-", "-", why, "-", "-", "-"))
        for i, r in enumerate(v.sim):
            print(f"audit {name} {' '.join(r.argv())} ...", file=sys.stderr, flush=True)
            bad = pinned_row(name, r, out / f"{name}-{i}")
            good = pinned_row(None, r, out / f"{name}-{i}-correct")
            rows.append((name, f"{r.seed} / {r.steps} / {r.faults} / {r.after_violation}", bad["first"], bad["lost"],
                         bad["kinds"], f"{bad['events']:,}", f"{bad['seconds']:.1f}", good["kinds"]
                         + ("" if good["first"] == "none" else f" ({good['first']})")))
    return table(("variant", "seed / steps / faults / after", "first violation @event", "lost records",
                  "audit (kafka)", "events", "s", "correct impl., same run"), rows)


def tlc_row(variant: str) -> tuple[str, str, str, str]:
    """(size, what TLC found, seconds, states) for ``kraft check PartitionReplication --variant NAME``."""
    from model_check import ManifestError, TLCError, run_spec

    v = PROTOCOL.variant(variant)
    if v.not_caught_by_tlc:
        return ("-", "not in the manifest (see docs/replication-spec.md)", "-", "-")
    try:
        r = run_spec(PROTOCOL.spec_module, v.size, variant, workers=1)
    except (TLCError, ManifestError, FileNotFoundError) as exc:
        return (v.size, f"tool error: {exc}", "-", "-")
    found = (r.violated or r.outcome) if r.violation else f"nothing ({r.outcome})"
    return (v.size, found, f"{r.seconds:.1f}", f"{r.states:,}")


def hypothesis_row(variant: str, examples: int | None) -> tuple[str, str, str, str]:
    """:func:`hypothesis_row_here` in a fresh process: Hypothesis's search in one process depends
    on what ran before it there (a variant found quickly alone may be missed after other
    searches), and the suite runs each variant's search first in its own test, so a fresh
    process is the number a user gets."""
    import subprocess

    argv = [sys.executable, __file__, "--one-hypothesis", variant] + ([] if examples is None else
                                                                      ["--examples", str(examples)])
    p = subprocess.run(argv, capture_output=True, text=True)
    try:
        return tuple(json.loads(p.stdout.strip().splitlines()[-1]))  # type: ignore[return-value]
    except (ValueError, IndexError):
        return ("-", f"error (exit {p.returncode}): {p.stderr.strip()[-200:]}", "-", "-")


def hypothesis_row_here(variant: str, examples: int | None) -> tuple[str, str, str, str]:
    """(budget, examples, seconds, invariant) to the machine's first failing run, before shrinking;
    ``examples`` None: the variant's test budget (what the suite runs)."""
    from tests import examples as suite_examples
    from tests.replication.test_stateful import BUDGET, SHRINK_SECONDS

    suite_examples.pin_constant_pool()  # the constants Hypothesis draws from, as in the suite
    budget = examples if examples is not None else BUDGET[variant]
    # the test's own settings (shrinking on: Hypothesis generates other examples without the shrink
    # phase, so a search without it is not the search the suite runs)
    r = search(variant, budget, shrink_seconds=SHRINK_SECONDS)
    e = r["error"]
    if e is None:
        return (str(budget), f"none in {r['examples']}", f"{r['seconds']:.1f}", "nothing")
    return (str(budget), str(r["examples"]), f"{r['seconds']:.1f} ({r['total_seconds']:.1f})",
            getattr(e, "invariant", type(e).__name__))


def table(header: tuple[str, ...], rows: list[tuple[str, ...]]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header)]
    line = lambda r: "| " + " | ".join(c.ljust(w) for c, w in zip(r, widths)) + " |"  # noqa: E731
    return "\n".join([line(header), "|" + "|".join("-" * (w + 2) for w in widths) + "|", *map(line, rows)])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("variants", nargs="*", help="variants to measure (default: all)")
    ap.add_argument("--examples", type=int, default=None,
                    help="Hypothesis budget per variant (default: the variant's test budget)")
    ap.add_argument("--no-tlc", action="store_true", help="leave out the TLC columns")
    ap.add_argument("--no-hypothesis", action="store_true", help="leave out the Hypothesis columns")
    ap.add_argument("--no-audit", action="store_true", help="leave out the audit table (pinned simulator runs)")
    ap.add_argument("--one-hypothesis", metavar="VARIANT", help=argparse.SUPPRESS)  # the child of hypothesis_row
    args = ap.parse_args()
    if args.one_hypothesis:
        print(json.dumps(hypothesis_row_here(args.one_hypothesis, args.examples)))
        return
    unknown = [v for v in args.variants if v not in PROTOCOL.variant_names]
    if unknown:
        ap.error(f"unknown variant(s) {', '.join(unknown)}; known: {', '.join(PROTOCOL.variant_names)}")
    variants = args.variants or list(PROTOCOL.variant_names)
    if not (args.no_tlc and args.no_hypothesis):
        rows = []
        for v in variants:
            print(f"{v} ...", file=sys.stderr, flush=True)
            tlc = ("-", "skipped", "-", "-") if args.no_tlc else tlc_row(v)
            hyp = ("-", "skipped", "-", "-") if args.no_hypothesis else hypothesis_row(v, args.examples)
            rows.append((v, *tlc, *hyp))
        print(table(("variant", "TLC size", "TLC finds", "TLC s", "TLC states", "Hypothesis budget",
                     "Hypothesis examples", "Hypothesis s (with shrink)", "Hypothesis finds"), rows))
    print(f"\nsimulator (faults all, no trace states): {events_per_second(8000):,.0f} events/s")
    if not args.no_audit:
        print("\naudit of the pinned simulator runs (kraft audit --checks kafka --no-spark):")
        print(audit_table(variants))


if __name__ == "__main__":
    sys.exit(main() if "--one-hypothesis" in sys.argv else results.run("replication", main))
