"""Partition-replication numbers: simulator events/s, and per bug variant the Kafka anomalies the
audit finds in client histories of runs that keep going after the bug acts.

    python bench/replication.py [--seeds N] [--steps K]

Events/s: ``kraft simulate --protocol replication --faults all`` without trace states.  Variant
histories: the simulator with ``check_every_event=False`` (the invariants are not allowed to stop
the run, so clients get to observe the loss), then ``kraft audit --checks kafka --no-spark``.
Hypothesis time to the first counterexample: ``pytest tests/replication/test_stateful.py -m slow``
(durations printed by pytest).  Numbers measured on a shared 2-core machine are pessimistic.
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


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--steps", type=int, default=4000)
    args = ap.parse_args()
    print(f"simulator (faults all, no trace states): {events_per_second(args.steps * 2):,.0f} events/s")
    out = Path(tempfile.mkdtemp())
    print(f"{'variant':28} {'seeds':>5}  anomalies found by kraft audit --checks kafka")
    for v in (None, *PROTOCOL.variant_names):
        d = variant_histories(v, args.seeds, args.steps, out)
        print(f"{v or 'correct':28} {args.seeds:>5}  {audit(d)}")


if __name__ == "__main__":
    main()
