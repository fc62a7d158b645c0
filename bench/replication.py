"""Partition-replication numbers in one table: per bug variant, the time to the first counterexample
for TLC (``kraft check PartitionReplication --variant NAME``, through model_check's ``run_spec`` at
the variant's manifest size, one worker) and for the Hypothesis machine (tests/replication/machine.py,
derandomized: examples and seconds to the first failing run, before shrinking); then the
simulator's events/s.

    python bench/replication.py [VARIANT ...] [--examples N] [--no-tlc] [--audit [--seeds N] [--steps K]]

``--audit``: also, per variant, the Kafka anomalies ``kraft audit --checks kafka --no-spark`` finds in
client histories of simulator runs that keep going after the bug acts (``check_every_event=False``).
Numbers measured on a shared 2-core machine are pessimistic.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kraft.replication.config import ReplicationConfig  # noqa: E402
from model_check import ManifestError, TLCError, run_spec  # noqa: E402
from tests.replication.machine import search  # noqa: E402
from kraft.replication.protocol import PROTOCOL  # noqa: E402
from kraft.sim.core import Faults, Simulator  # noqa: E402
from kraft.sim.recorder import Recorder  # noqa: E402
from kraft.sim.replication_protocol import ReplicationProtocol  # noqa: E402


def events_per_second(steps: int) -> float:
    sim = Simulator(ReplicationProtocol(3), 1, Faults.parse("all"))
    t = time.perf_counter()
    sim.run(steps)
    return sim.events / (time.perf_counter() - t)


def variant_histories(variant: str | None, seeds: int, steps: int, out: Path) -> Path:
    d = out / (variant or "correct")
    for seed in range(seeds):
        proto = ReplicationProtocol(3, ReplicationConfig().with_variant(variant))
        rec = Recorder({"protocol": "replication", "spec": PROTOCOL.spec_module, "seed": seed, "variant": variant},
                       {"model": "append-log", "source": f"bench/replication.py {variant} seed {seed}"},
                       states=False, trace=False)
        sim = Simulator(proto, seed, Faults.parse("all"), recorder=rec, check_every_event=False)
        sim.run(steps)
        sim.finish()
        rec.write(d / f"seed{seed}")
        (d / f"seed{seed}" / "trace.ndjson").unlink()
    return d


def audit(d: Path) -> dict[str, int]:
    res = Path(tempfile.mkdtemp()) / "audit"
    subprocess.run([sys.executable, "-m", "kraft.cli", "audit", str(d), "--checks", "kafka", "--no-spark",
                    "--out", str(res)], capture_output=True, text=True)
    kinds: dict[str, int] = {}
    invalid = 0
    for r in json.loads((res / "results.json").read_text()):
        invalid += r["valid"] is False or r["valid"] == "false"
        for a in r.get("anomalies", []):
            kinds[a["kind"]] = kinds.get(a["kind"], 0) + 1
    return {"invalid_histories": invalid, **kinds}


def tlc_row(variant: str) -> tuple[str, str, str, str]:
    """(size, what TLC found, seconds, states) for ``kraft check PartitionReplication --variant NAME``."""
    v = PROTOCOL.variant(variant)
    if v.not_caught_by_tlc:
        return ("-", "not in the manifest (see docs/replication-spec.md)", "-", "-")
    try:
        r = run_spec(PROTOCOL.spec_module, v.size, variant, workers=1)
    except (TLCError, ManifestError, FileNotFoundError) as exc:
        return (v.size, f"tool error: {exc}", "-", "-")
    found = (r.violated or r.outcome) if r.violation else f"nothing ({r.outcome})"
    return (v.size, found, f"{r.seconds:.1f}", f"{r.states:,}")


def hypothesis_row(variant: str, examples: int) -> tuple[str, str, str]:
    """(examples, seconds, invariant) to the machine's first failing run, before shrinking."""
    r = search(variant, examples, shrink_seconds=0)
    e = r["error"]
    if e is None:
        return (f"none in {r['examples']}", f"{r['seconds']:.1f}", "nothing")
    return (str(r["examples"]), f"{r['seconds']:.1f}", getattr(e, "invariant", type(e).__name__))


def table(header: tuple[str, ...], rows: list[tuple[str, ...]]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header)]
    line = lambda r: "| " + " | ".join(c.ljust(w) for c, w in zip(r, widths)) + " |"  # noqa: E731
    return "\n".join([line(header), "|" + "|".join("-" * (w + 2) for w in widths) + "|", *map(line, rows)])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("variants", nargs="*", help="variants to measure (default: all)")
    ap.add_argument("--examples", type=int, default=3000, help="Hypothesis budget per variant (default 3000)")
    ap.add_argument("--no-tlc", action="store_true", help="leave out the TLC columns")
    ap.add_argument("--audit", action="store_true", help="also audit simulator histories per variant")
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--steps", type=int, default=4000)
    args = ap.parse_args()
    unknown = [v for v in args.variants if v not in PROTOCOL.variant_names]
    if unknown:
        ap.error(f"unknown variant(s) {', '.join(unknown)}; known: {', '.join(PROTOCOL.variant_names)}")
    rows = []
    for v in args.variants or PROTOCOL.variant_names:
        print(f"{v} ...", file=sys.stderr, flush=True)
        tlc = ("-", "skipped", "-", "-") if args.no_tlc else tlc_row(v)
        rows.append((v, *tlc, *hypothesis_row(v, args.examples)))
    print(table(("variant", "TLC size", "TLC finds", "TLC s", "TLC states", "Hypothesis examples",
                 "Hypothesis s", "Hypothesis finds"), rows))
    print(f"\nsimulator (faults all, no trace states): {events_per_second(8000):,.0f} events/s")
    if not args.audit:
        return
    out = Path(tempfile.mkdtemp())
    print(f"\n{'variant':28} {'seeds':>5}  anomalies found by kraft audit --checks kafka")
    for v in (None, *PROTOCOL.variant_names):
        d = variant_histories(v, args.seeds, args.steps, out)
        print(f"{v or 'correct':28} {args.seeds:>5}  {audit(d)}")


if __name__ == "__main__":
    main()
