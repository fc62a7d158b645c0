"""Trace-conformance throughput: validated events per second and traces per second.

    python bench/conform.py [--protocol relay|kraft|groups] [--sizes 100,1000,5000] [--jobs 2]

For each trace size (spec steps per trace) it checks traces three ways:

  single    one trace per TLC run (JVM start + SANY parse + check, each time)
  batched   many traces in one TLC run (trace index chosen in Init)
  parallel  the same traces cut into batches run by --jobs TLC processes at once

and prints wall seconds, CPU seconds of the TLC processes, events/s and traces/s (both on wall
time).  Traces come from the simulator of the protocol (``relay``: the toy protocol of
tests/traces/fixtures; ``kraft``: ``kraft.sim``, faults chosen by --faults, default none;
``groups``: the consumer-group plug-in (``kraft.groups.sim``), 3 consumers, eager for even seeds and
cooperative for odd ones, same --faults), cut to exactly N spec steps. The table goes to
bench/results/conform.md, whose header gives the load average: on a shared machine wall time is
inflated by other work, the CPU column is not.
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "traces" / "fixtures"))

import results  # noqa: E402  (bench/results.py)
from traces.check import Options, check_paths  # noqa: E402
from traces.protocols import register  # noqa: E402


def cut_to_spec_steps(lines: list[str], n: int) -> list[str] | None:
    out, k = [lines[0]], 0
    for x in lines[1:]:
        if k == n:
            break
        out.append(x)
        if json.loads(x).get("spec", True):
            k += 1
    return out if k == n else None


def relay_trace(seed: int, n: int) -> list[str]:
    import relay_ref

    register(__import__("relay_glue").GLUE)
    lines = [json.dumps(r) for r in relay_ref.simulate(seed, int(n * 1.6) + 20)]
    cut = cut_to_spec_steps(lines, n)
    assert cut is not None
    return cut


FAULTS = "none"


# simulator events for the first run (times n) and to add for each further run (n // div + 10)
# until the trace holds n spec steps: a KRaft event is a spec step more often than a consumer-group
# event
SIM_STEPS = {"kraft": (1, 4), "groups": (3, 1)}


def sim_trace(protocol: str, seed: int, n: int) -> list[str]:
    """The first ``n`` spec steps of a fault-free simulator trace of ``protocol``."""
    from kraft.sim.core import Faults, Simulator
    from kraft.protocols import PROTOCOLS
    from kraft.sim.recorder import Recorder

    proto = PROTOCOLS[protocol].plugin(3, None)
    rec = Recorder({"protocol": protocol, "spec": proto.declaration.spec_module, "constants": proto.constants(),
                    "seed": seed, "variant": None}, {"model": proto.declaration.history_model})
    sim = Simulator(proto, seed, Faults.parse(FAULTS), recorder=rec)
    first, div = SIM_STEPS[protocol]
    steps = first * n
    while True:
        sim.run(steps)  # runs until the simulator has processed ``steps`` events in all
        if sum(1 for s in rec.steps if s["spec"]) >= n:
            break
        steps = sim.events + n // div + 10
    sim.finish()
    with tempfile.TemporaryDirectory() as d:
        tpath, _ = rec.write(d)
        lines = tpath.read_text().splitlines()
    cut = cut_to_spec_steps(lines, n)
    assert cut is not None
    return cut


def run(paths: list[Path], opts: Options) -> tuple[float, float, list]:
    c0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    res = check_paths(paths, opts)
    wall = time.monotonic() - t0
    c1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (c1.ru_utime - c0.ru_utime) + (c1.ru_stime - c0.ru_stime)
    return wall, cpu, res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--protocol", choices=("relay", "kraft", "groups"), default="kraft")
    ap.add_argument("--sizes", default="100,1000,5000")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--faults", default="none", help="kraft, groups: simulator faults (see kraft simulate)")
    ap.add_argument("--traces", default="100:16,1000:8,5000:4",
                    help="traces per size for the batched/parallel rows (size:count,...)")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    counts = dict((int(a), int(b)) for a, b in (x.split(":") for x in args.traces.split(",")))
    global FAULTS
    FAULTS = args.faults
    make = relay_trace if args.protocol == "relay" else (lambda seed, n: sim_trace(args.protocol, seed, n))
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-conform-") as d:
        for n in sizes:
            count = counts.get(n, 4)
            paths = []
            for s in range(count):
                p = Path(d) / f"{args.protocol}-{n}-{s}.ndjson"
                p.write_text("\n".join(make(s + 1, n)) + "\n")
                paths.append(p)
            for mode, ps, opts in (
                ("single", paths[:1], Options(batch=1, jobs=1)),
                ("batched", paths, Options(batch=count, jobs=1)),
                ("parallel", paths, Options(batch=max(1, count // args.jobs), jobs=args.jobs)),
            ):
                wall, cpu, res = run(ps, opts)
                bad = [r for r in res if r.verdict != "accepted"]
                if bad:
                    print(f"warning: {len(bad)} trace(s) not accepted, e.g. {bad[0].message[:300]}",
                          file=sys.stderr)
                events = sum(r.events for r in res)
                rows.append((n, mode, len(ps), events, wall, cpu, events / wall, len(ps) / wall,
                             len(res) - len(bad)))
                print(f"  {n:>5} {mode:<8} done in {wall:.1f}s", file=sys.stderr)
    print(f"\nkraft conform throughput ({args.protocol} traces, TLC 2.15, --jobs {args.jobs})")
    hdr = f"{'events/trace':>12} {'mode':<9} {'traces':>6} {'events':>7} {'wall s':>7} {'TLC cpu s':>9} " \
          f"{'events/s':>9} {'traces/s':>8} {'accepted':>8}"
    print(hdr)
    print("-" * len(hdr))
    for n, mode, t, ev, wall, cpu, eps, tps, ok in rows:
        print(f"{n:>12} {mode:<9} {t:>6} {ev:>7} {wall:>7.1f} {cpu:>9.1f} {eps:>9.0f} {tps:>8.2f} {ok:>8}")


if __name__ == "__main__":
    sys.exit(results.run("conform", main))
