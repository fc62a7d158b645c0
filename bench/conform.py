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

    python bench/conform.py --breakdown [--protocols kraft,replication,groups] [--sizes 1000,10000]

splits the wall time of checking one trace per protocol and size (faults from --faults, default
``all`` in this mode) into its phases: reading the trace and translating it for TLC (``read``),
writing the trace module (``module``), the JVM starting until TLC's first output line (``jvm``),
SANY parsing the spec and the trace module until TLC says it starts the search (``parse``), TLC's
search until the process ends (``search``), and reading TLC's output (``output``). The TLC run is
the one ``kraft conform`` makes (same command line); its output lines are timestamped as they
arrive; the phases are those of one TLC run on the whole trace. ``conform`` is the end-to-end wall
time of ``kraft conform`` on the same trace with its defaults (a long trace whose spec allows it is
cut into segments checked in parallel), ``runs`` its TLC runs. The table goes to
bench/results/conform-breakdown.md.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
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
SIM_STEPS = {"kraft": (1, 4), "groups": (3, 1)}  # others: (1, 2)


def sim_trace(protocol: str, seed: int, n: int) -> list[str]:
    """The first ``n`` spec steps of a fault-free simulator trace of ``protocol``."""
    from kraft.sim.core import Faults, Simulator
    from kraft.protocols import PROTOCOLS
    from kraft.sim.recorder import Recorder

    proto = PROTOCOLS[protocol].plugin(3, None)
    rec = Recorder({"protocol": protocol, "spec": proto.declaration.spec_module, "constants": proto.constants(),
                    "seed": seed, "variant": None}, {"model": proto.declaration.history_model})
    sim = Simulator(proto, seed, Faults.parse(FAULTS), recorder=rec)
    first, div = SIM_STEPS.get(protocol, (1, 2))
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


PHASES = ("read", "module", "jvm", "parse", "search", "output")


def _tlc_command(run: Path, name: str, heap: str) -> list[str]:
    """The command line :func:`model_check.run_tlc` builds for a conformance run."""
    from model_check.tlc import find_jar, find_java
    from traces.tlcrun import JVM_ARGS

    return [find_java(), "-XX:+UseParallelGC", f"-Djava.io.tmpdir={run / 'tmp'}", f"-Xmx{heap}", *JVM_ARGS,
            "-cp", find_jar(), "tlc2.TLC", "-tool", "-workers", "1", "-metadir", str(run / "meta"),
            "-deadlock", "-config", f"{name}.cfg", f"{name}.tla"]


def _timed_tlc(run: Path, name: str, heap: str) -> tuple[str, int, float, float, float]:
    """Run TLC; return its output, exit code, and the seconds until its first output line, until
    its "Starting..." message (parsing done), and until it exits."""
    start_tag = "@!@!@STARTMSG 2185:"  # TLC's EC.TLC_STARTING: "Starting...", parsing is done
    t0 = time.monotonic()
    proc = subprocess.Popen(_tlc_command(run, name, heap), cwd=run, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, errors="replace")
    first = started = None
    lines = []
    assert proc.stdout is not None
    for line in proc.stdout:
        now = time.monotonic() - t0
        first = now if first is None else first
        if started is None and line.startswith(start_tag):
            started = now
        lines.append(line)
    proc.wait()
    end = time.monotonic() - t0
    return "".join(lines), proc.returncode, first or end, started or end, end


def breakdown_one(path: Path, heap: str = "2g") -> dict[str, float]:
    """Seconds per phase of checking the trace at ``path`` in one TLC run (single mode)."""
    from model_check.tlc import parse_tool_output
    from traces.check import _markers, _setup, prepare
    from traces.generate import MODULE_PREFIX, declared_model_values, render_cfg, render_module
    from traces.schema import read_trace
    from traces.tlcrun import classify

    out: dict[str, float] = {}
    t0 = time.monotonic()
    p = prepare(read_trace(path))
    assert not isinstance(p, __import__("traces.check").check.TraceResult), p
    out["read"] = time.monotonic() - t0
    with tempfile.TemporaryDirectory(prefix="bench-breakdown-") as d:
        run = Path(d)
        (run / "tmp").mkdir()
        t0 = time.monotonic()
        _setup(run, p.glue)
        name = f"{MODULE_PREFIX}_{p.glue.module}"
        text = render_module(p.glue, name, [p.micros], [p.init], "single", witness="exit", diagnose=False,
                             names=p.names)
        (run / f"{name}.tla").write_text(text)
        mvs = declared_model_values(text)
        (run / f"{name}.cfg").write_text(render_cfg(p.constants, "single", "exit", mvs))
        out["module"] = time.monotonic() - t0
        output, rc, first, started, end = _timed_tlc(run, name, heap)
    out["jvm"], out["parse"], out["search"] = first, started - first, end - started
    t0 = time.monotonic()
    res = classify(parse_tool_output(output, exit_code=rc, cfg_text=""))
    accepted = res.outcome == "invariant" or bool(_markers(res.printed, "TRACCEPT"))
    out["output"] = time.monotonic() - t0
    out["accepted"] = float(accepted)
    out["events"] = float(len(p.events))
    return out


def breakdown(protocols: list[str], sizes: list[int], skip: set[tuple[str, int]] = frozenset()) -> None:
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-conform-") as d:
        for proto in protocols:
            for n in [n for n in sizes if (proto, n) not in skip]:
                t0 = time.monotonic()
                path = Path(d) / f"{proto}-{n}.ndjson"
                path.write_text("\n".join(sim_trace(proto, 1, n)) + "\n")
                print(f"  {proto} {n}: trace made in {time.monotonic() - t0:.1f}s", file=sys.stderr)
                ph = breakdown_one(path)
                wall, _, res = run([path], Options(batch=1, jobs=0))  # kraft conform's defaults
                ok = res[0].verdict == "accepted"
                if not ok or not ph["accepted"]:
                    print(f"warning: {proto} {n} not accepted: {res[0].message[:300]}", file=sys.stderr)
                rows.append((proto, n, ph, wall, ok, res[0].tlc_runs))
                print(f"  {proto} {n}: {wall:.1f}s", file=sys.stderr)
    print(f"\nkraft conform time by phase (one all-fault trace per row, faults {FAULTS}, seconds)")
    hdr = f"{'protocol':<12} {'events':>7} " + " ".join(f"{x:>7}" for x in PHASES) + \
        f" {'sum':>7} {'conform':>8} {'runs':>5} {'events/s':>9} {'accepted':>8}"
    print(hdr)
    print("-" * len(hdr))
    for proto, n, ph, wall, ok, runs in rows:
        total = sum(ph[x] for x in PHASES)
        print(f"{proto:<12} {n:>7} " + " ".join(f"{ph[x]:>7.2f}" for x in PHASES)
              + f" {total:>7.2f} {wall:>8.2f} {runs:>5} {n / wall:>9.0f} {str(ok):>8}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--protocol", choices=("relay", "kraft", "groups"), default="kraft")
    ap.add_argument("--sizes", default="100,1000,5000")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--faults", default="none", help="kraft, groups: simulator faults (see kraft simulate)")
    ap.add_argument("--traces", default="100:16,1000:8,5000:4",
                    help="traces per size for the batched/parallel rows (size:count,...)")
    ap.add_argument("--breakdown", action="store_true", help="time per phase, one trace per protocol and size")
    ap.add_argument("--protocols", default="kraft,replication,groups", help="--breakdown: protocols")
    ap.add_argument("--skip", default="", help="--breakdown: PROTOCOL:SIZE,... rows not to run (e.g. replication:10000, "
                                                "whose trace takes the simulator long to make)")
    args = ap.parse_args()
    global FAULTS
    if args.breakdown:
        FAULTS = args.faults if args.faults != "none" or "--faults" in sys.argv else "all"
        skip = {(x.split(":")[0], int(x.split(":")[1])) for x in args.skip.split(",") if x}
        breakdown(args.protocols.split(","), [int(s) for s in args.sizes.split(",")], skip)
        return
    sizes = [int(s) for s in args.sizes.split(",")]
    counts = dict((int(a), int(b)) for a, b in (x.split(":") for x in args.traces.split(",")))
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
    sys.exit(results.run("conform-breakdown" if "--breakdown" in sys.argv else "conform", main))
