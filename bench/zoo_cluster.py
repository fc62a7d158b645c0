"""Benchmark: the zoo's wall time locally (``--workers``) and as Spark tasks (``--master``), and
each run's matrix, for the same protocols and budget.

    python bench/zoo_cluster.py [--protocol P ...] [--budget S] [--workers N] [--master URL ...]

Each run is ``kraft zoo --protocol P ... --budget S --no-spark --json`` in a subprocess (local
first, then once per ``--master``, default ``local[2]``); ``seconds`` is the command's wall time,
Spark's start included. A row per run: its exit code, the cells decided and the cells the budget
stopped, and whether its decided cells agree with the local run's. The table goes to
bench/results/zoo_cluster.md. The TLC speed-ups of the medium sizes are bench/check_cluster.py's.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import results  # noqa: E402  (bench/results.py)

ROOT = Path(__file__).resolve().parents[1]


def zoo_argv(protocols: list[str], budget: float, out: Path, extra: list[str]) -> list[str]:
    argv = [sys.executable, "-m", "kraft.cli", "zoo", "--budget", f"{budget:g}", "--no-spark", "--json",
            "--out", str(out)]
    for p in protocols:
        argv += ["--protocol", p]
    return argv + extra


def run_zoo(argv: list[str], out: Path) -> tuple[int, float, dict[str, Any] | None]:
    """(exit code, wall seconds, zoo.json or None)."""
    start = time.monotonic()
    code = subprocess.run(argv, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode
    secs = time.monotonic() - start
    try:
        doc = json.loads((out / "zoo.json").read_text())
    except (OSError, ValueError):
        doc = None
    return code, secs, doc


def decided(doc: dict[str, Any] | None) -> dict[tuple[Any, str], tuple[Any, Any]]:
    """(row, check) -> (status, size) of the cells the budget did not stop."""
    if doc is None:
        return {}
    return {((r["protocol"], r["variant"]), c): (cell["status"], cell["size"])
            for r in doc["rows"] for c, cell in r["cells"].items() if not cell["budget"]}


def agreement(local: dict, other: dict) -> str:
    both = local.keys() & other.keys()
    differ = sorted(str(k) for k in both if local[k] != other[k])
    return f"{len(both)} shared, all agree" if not differ else f"{len(differ)} of {len(both)} differ: {differ[0]}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--protocol", action="append", default=[], help="protocols (repeatable; default: all)")
    ap.add_argument("--budget", type=float, default=300.0, help="the zoo's budget in seconds (default 300)")
    ap.add_argument("--workers", type=int, default=2, help="the local run's workers (default 2)")
    ap.add_argument("--master", action="append", default=[], help="Spark masters (repeatable; default local[2])")
    args = ap.parse_args(argv)
    masters = args.master or ["local[2]"]
    rows = []
    with tempfile.TemporaryDirectory(prefix="zoo-bench-") as tmp:
        runs = [(f"local, {args.workers} workers", ["--workers", str(args.workers)])]
        runs += [(f"--master {m}", ["--master", m]) for m in masters]
        base: dict = {}
        for i, (label, extra) in enumerate(runs):
            out = Path(tmp) / str(i)
            print(f"{label} ...", file=sys.stderr, flush=True)
            code, secs, doc = run_zoo(zoo_argv(args.protocol, args.budget, out, extra), out)
            cells = decided(doc)
            base = base or cells
            stopped = sum(1 for r in (doc or {}).get("rows", []) for c in r["cells"].values() if c["budget"])
            rows.append((label, f"{secs:.1f}", str(code), str(len(cells)), str(stopped),
                         "-" if i == 0 else agreement(base, cells)))
    header = ("run", "seconds", "exit", "decided", "budget", "matrix vs local")
    print(f"protocols: {', '.join(args.protocol) or 'all'}; budget {args.budget:g}s")
    results.print_table(header, rows, {1, 2, 3, 4})
    return 0


if __name__ == "__main__":
    sys.exit(results.run("zoo_cluster", main))
