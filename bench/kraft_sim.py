"""Simulator throughput and Hypothesis stateful-suite speed for the KRaft implementation.

    python bench/kraft_sim.py [--events N] [--examples M]

Prints one table: simulator events/second (3 and 5 voters, without faults and with all faults,
invariants checked after every event, no trace recording; and with full trace recording), then
Hypothesis examples/second of the stateful machine (40 steps per example, every invariant after
every step, convergence teardown). The table goes to bench/results/kraft_sim.md.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import results  # noqa: E402  (bench/results.py)
from hypothesis import HealthCheck, settings  # noqa: E402
from hypothesis.stateful import run_state_machine_as_test  # noqa: E402

from kraft.quorum.config import QuorumConfig  # noqa: E402
from kraft.sim.core import Faults, Simulator  # noqa: E402
from kraft.quorum.sim import KRaftPlugin  # noqa: E402
from kraft.sim.recorder import Recorder  # noqa: E402


def sim_rate(voters: int, faults: str, events: int, record: bool, seeds: int = 3) -> tuple[float, int]:
    total_events, total_s, committed = 0, 0.0, 0
    for seed in range(seeds):
        p = KRaftPlugin(voters)
        rec = Recorder({}, {}, states=True) if record else None
        sim = Simulator(p, seed, Faults.parse(faults), recorder=rec)
        t = time.perf_counter()
        sim.run(events)
        total_s += time.perf_counter() - t
        total_events += sim.events
        committed += len(p.world.monitor.committed)
    return total_events / total_s, committed // seeds


def hypothesis_rate(examples: int) -> float:
    import importlib

    machine_mod = importlib.import_module("tests.quorum.machine")
    count = [0]
    machine = machine_mod.make_machine(QuorumConfig())
    original = machine.__init__

    def counting_init(self: object) -> None:
        count[0] += 1
        original(self)

    machine.__init__ = counting_init  # type: ignore[method-assign]
    t = time.perf_counter()
    run_state_machine_as_test(machine, settings=settings(
        max_examples=examples, stateful_step_count=40, deadline=None, derandomize=True,
        suppress_health_check=list(HealthCheck), database=None))
    return count[0] / (time.perf_counter() - t)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=5000)
    ap.add_argument("--examples", type=int, default=60)
    args = ap.parse_args(argv)
    rows = []
    for voters in (3, 5):
        for faults in ("none", "all"):
            for record in (False, True):
                rate, committed = sim_rate(voters, faults, args.events, record)
                rows.append((f"simulator, {voters} voters, faults={faults}, "
                             f"{'trace+states' if record else 'no trace'}",
                             f"{rate:,.0f} events/s", f"{committed} committed / {args.events} events"))
    rate = hypothesis_rate(args.examples)
    rows.append(("Hypothesis stateful machine, 3 voters, 40 steps", f"{rate:,.1f} examples/s",
                 f"{args.examples} examples"))
    w0 = max(len(r[0]) for r in rows)
    w1 = max(len(r[1]) for r in rows)
    print(f"{'what':<{w0}}  {'rate':>{w1}}  notes")
    print(f"{'-' * w0}  {'-' * w1}  -----")
    for name, r, note in rows:
        print(f"{name:<{w0}}  {r:>{w1}}  {note}")


if __name__ == "__main__":
    sys.exit(results.run("kraft_sim", main))
