"""Benchmark: wall time for parallel TLC simulation on Spark to find each bug variant at the
``medium`` size, with one worker and with two, and their ratio.

    python bench/check_cluster.py [SPEC ...] [--variant NAME ...] [--timeout S]
                                  [--one local[1]] [--two local[2]]

Each variant runs once per master (``--one``, ``--two``: any Spark master URLs; by default local
mode with one and with two cores), with as many seeds as the master's cores, through the same
code as ``kraft check SPEC --size medium --variant V --master URL``. ``seconds`` is the search's
wall time (waves until a replayed counterexample, Spark's start and the replay excluded); ratio
is one worker's over two workers'. The table goes to bench/results/check_cluster-SPEC.md for the
specs named, bench/results/check_cluster.md when none is named.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import results  # noqa: E402  (bench/results.py)
from kraft.outcome import EXIT_ERROR  # noqa: E402
from model_check import ManifestError, TLCError, load_manifests, spec_dir  # noqa: E402

SIZE = "medium"


def _search(m, variant: str, master: str, timeout: float) -> tuple[str, float | None, int]:
    """(what was found, seconds to find it or None, states)."""
    from model_check.spark import SparkUnavailable, simulate_on_spark  # optional: pyspark

    try:
        par = simulate_on_spark(m, SIZE, variant, master=master, seeds=None, budget=timeout)
    except (SparkUnavailable, TLCError, ManifestError) as exc:
        return f"error: {exc}", None, 0
    r = par.result
    if r.violation and par.replay is not None and par.replay.confirmed:
        return f"caught ({r.violated or r.outcome})", r.seconds, r.states
    return f"{r.outcome} in {r.seconds:.0f}s", None, r.states


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("specs", nargs="*", help="manifest names (default: all with a medium size)")
    ap.add_argument("--variant", action="append", default=[], help="only these variants (repeatable)")
    ap.add_argument("--timeout", type=float, default=120.0, help="budget per search in seconds (default 120)")
    ap.add_argument("--one", default="local[1]", help="the one-worker master (default local[1])")
    ap.add_argument("--two", default="local[2]", help="the two-worker master (default local[2])")
    return ap.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    try:
        manifests = load_manifests()
    except ManifestError as exc:
        print(f"bench/check_cluster.py: {exc}", file=sys.stderr)
        return EXIT_ERROR
    names = args.specs or sorted(n for n, m in manifests.items() if SIZE in m.sizes)
    unknown = [n for n in names if n not in manifests or SIZE not in manifests[n].sizes]
    if unknown:
        print(f"bench/check_cluster.py: no manifest with a {SIZE} size: {', '.join(unknown)} in {spec_dir()}",
              file=sys.stderr)
        return EXIT_ERROR
    jobs = [(n, v) for n in names for v in manifests[n].variants if not args.variant or v in args.variant]
    found: dict[tuple[str, str, str], tuple[str, float | None, int]] = {}
    for master in (args.one, args.two):  # one Spark context at a time
        for n, v in jobs:
            print(f"{master}: {n} {v} ...", file=sys.stderr, flush=True)
            found[(master, n, v)] = _search(manifests[n], v, master, args.timeout)
    header = ("spec", "variant", "1 worker s", "states", "2 workers s", "states", "ratio", "verdict (2 workers)")
    rows = []
    for n, v in jobs:
        w1, t1, s1 = found[(args.one, n, v)]
        w2, t2, s2 = found[(args.two, n, v)]
        ratio = f"{t1 / t2:.2f}" if t1 and t2 else "-"
        rows.append((n, v, f"{t1:.1f}" if t1 else "-", f"{s1:,}", f"{t2:.1f}" if t2 else "-", f"{s2:,}", ratio, w2))
    print(f"masters: one worker {args.one}, two workers {args.two}; budget {args.timeout:g}s per search")
    results.print_table(header, rows, {2, 3, 4, 5, 6})
    return 0


if __name__ == "__main__":
    sys.exit(results.run("check_cluster", main, table=results.per_spec("check_cluster", parse().specs)))
