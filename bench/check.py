"""Benchmark: run every spec manifest's model sizes (and optionally its bug variants) under TLC.

    python bench/check.py [SPEC ...] [--sizes small,medium] [--variants] [--workers N] [--timeout S]

Prints one row per run: spec, size, variant, mode, states, distinct, depth, seconds, verdict;
the table goes to bench/results/check-SPEC.md for the specs named (check-SPEC1-SPEC2.md for
several), bench/results/check.md when none is named.
Works with whatever ``spec/*.toml`` manifests exist (or ``$KRAFT_SPEC_DIR``); a size a manifest
does not define is skipped and listed as such.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import results  # noqa: E402  (bench/results.py)
from kraft.outcome import EXIT_ERROR, Verdict  # noqa: E402
from model_check import ManifestError, TLCError, load_manifests, run_spec, spec_dir  # noqa: E402


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("specs", nargs="*", help="manifest names (default: all)")
    ap.add_argument("--sizes", default="small,medium", help="comma-separated sizes (default small,medium)")
    ap.add_argument("--variants", action="store_true", help="also run every bug variant at its size")
    ap.add_argument("--workers", type=int, default=None, help="TLC workers (default: the manifest's)")
    ap.add_argument("--timeout", type=float, default=None, help="seconds per run (default: the manifest's)")
    ap.add_argument("--json", type=Path, default=None, help="also write the rows as JSON here")
    return ap.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)

    try:
        manifests = load_manifests()
    except ManifestError as exc:
        print(f"bench/check.py: {exc}", file=sys.stderr)
        return EXIT_ERROR
    names = args.specs or sorted(manifests)
    unknown = [n for n in names if n not in manifests]
    if unknown:
        print(f"bench/check.py: no manifest {', '.join(unknown)} in {spec_dir()} (have: {', '.join(sorted(manifests)) or 'none'})", file=sys.stderr)
        return 2
    sizes = [s for s in args.sizes.split(",") if s]

    jobs: list[tuple[str, str, str | None]] = []
    for n in names:
        m = manifests[n]
        for s in sizes:
            jobs.append((n, s, None))
        if args.variants:
            for v in m.variants.values():
                jobs.append((n, v.size, v.name))

    header = ("spec", "size", "variant", "mode", "states", "distinct", "depth", "seconds", "verdict")
    rows: list[tuple[str, ...]] = []
    verdicts: list[Verdict] = []  # the exit code is the worst run's (kraft/outcome.py)
    for n, s, v in jobs:
        m = manifests[n]
        if s not in m.sizes:
            rows.append((n, s, v or "-", "-", "-", "-", "-", "-", "skipped (no such size)"))
            continue
        mode = m.sizes[s].mode
        print(f"running {n}/{s}{' variant ' + v if v else ''} ...", file=sys.stderr, flush=True)
        try:
            r = run_spec(m, s, v, workers=args.workers, timeout=args.timeout)
        except (TLCError, ManifestError, FileNotFoundError) as exc:
            rows.append((n, s, v or "-", mode, "-", "-", "-", "-", f"tool error: {exc}"))
            verdicts.append(Verdict.ERROR)
            continue
        if r.outcome == "timeout":
            verdict = "TIMEOUT"
            verdicts.append(Verdict.INCONCLUSIVE)
        elif v is None:
            verdict = "ok" if r.outcome == "ok" else f"{r.outcome} {r.violated or ''}".strip()
            verdicts.append(Verdict.VIOLATION if r.violation else Verdict.CLEAN if r.outcome == "ok" else Verdict.ERROR)
        else:
            expected = m.variants[v].violates
            caught = r.violation and (r.violated == expected or r.violated is None)
            verdict = f"caught ({r.violated or r.outcome})" if caught else f"MISSED ({r.outcome})"
            verdicts.append(Verdict.CLEAN if caught else Verdict.VIOLATION)
        distinct = "-" if mode == "simulate" else f"{r.distinct:,}"
        rows.append((n, s, v or "-", mode, f"{r.states:,}", distinct, str(r.depth), f"{r.seconds:.1f}", verdict))

    results.print_table(header, rows, {4, 5, 6, 7})
    if args.json:
        args.json.write_text(json.dumps([dict(zip(header, r)) for r in rows], indent=2) + "\n")
    return Verdict.worst(verdicts).exit_code


if __name__ == "__main__":
    sys.exit(results.run("check", main, table=results.per_spec("check", parse().specs)))
