"""``bench/audit_speed.py`` of two checkouts, interleaved: before/after numbers from one run.

    python bench/audit_speed_vs.py --old /path/to/older/checkout [--etcd DIR] [--ops 1000000,10000000]
    python bench/audit_speed_vs.py --old DIR --groups e2e --ops 1000000,1000000,1000000   # repeats

Each row group of ``bench/audit_speed.py`` (ingest, end to end per corpus size, linearizability
of register histories, the etcd corpus) runs once in each checkout, with that checkout's own
``.venv`` and its own ``bench/audit_speed.py``, the two one right after the other and the one
going first alternating from group to group, so that a neighbour's load falls on both alike.
A size given several times in ``--ops`` runs its pair again, the order alternating
too. The corpora are generated once, under ``--dir``, and read by both. Each end-to-end run's audit
output is kept as ``DIR/out-old-N`` and ``DIR/out-new-N`` (their ``results.json`` can be
compared). The rows of both are printed under the group, then one ratio per row (new time / old
time: below 1 is faster); the load average is printed before each run.

Not part of the test suite.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import results  # noqa: E402  (bench/results.py)

NEW = HERE.parent
_ROW = re.compile(r"^(?P<name>.{44}) +(?P<ops>[\d,]+) +(?P<secs>[\d.]+)(?P<ms>ms)?(?: +(?P<rate>[\d,]+)\b)?")


def load() -> str:
    return "load " + "/".join(f"{x:.1f}" for x in os.getloadavg())


def groups(args: argparse.Namespace) -> list[tuple[str, list[str]]]:
    """(name, audit_speed.py arguments) of each row group."""
    every = ["ingest", "before", "e2e", "lin", "etcd"]

    def only(*keep: str) -> str:
        return ",".join(g for g in every if g not in keep)

    out = [("ingest", ["--skip", only("ingest"), "--ingest-ops", str(args.ingest_ops)]),
           ("lin", ["--skip", only("lin")])]
    if args.etcd:
        out.append(("etcd", ["--skip", only("etcd"), "--etcd", args.etcd]))
    return out + [(f"e2e-{n}", ["--skip", only("e2e"), "--ops", n]) for n in args.ops.split(",") if n]


def bench(tree: Path, argv: list[str], d: Path) -> list[str]:
    """The row lines of ``tree``'s ``bench/audit_speed.py ARGV`` (its own .venv, corpora under ``d``)."""
    env = {**os.environ, "KRAFT_BENCH_RESULTS": tempfile.mkdtemp(prefix="audit-speed-vs-")}
    cmd = [str(tree / ".venv" / "bin" / "python"), str(tree / "bench" / "audit_speed.py"), "--dir", str(d), *argv]
    p = subprocess.run(cmd, cwd=tree, env=env, capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"{shlex.join(cmd)} failed with exit code {p.returncode}:\n{p.stderr[-3000:]}")
    lines = p.stdout.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith("---")) + 1
    return [ln for ln in lines[start:] if not ln.startswith("end:")]


def seconds(line: str) -> tuple[str, float] | None:
    """(row name, seconds) of a row line, or None for a line without a time."""
    m = _ROW.match(line)
    if not m:
        return None
    if m["rate"] and int(m["rate"].replace(",", "")):  # ops / (ops/s): more digits than the seconds
        return m["name"].strip(), int(m["ops"].replace(",", "")) / int(m["rate"].replace(",", ""))
    return m["name"].strip(), float(m["secs"]) / (1000 if m["ms"] else 1)


def keep_outputs(d: Path, tag: str) -> None:
    """Rename the end-to-end outputs ``d/out-N`` to ``d/out-TAG-N``."""
    for out in d.glob("out-[0-9]*"):
        kept = d / f"out-{tag}-{out.name[4:]}"
        shutil.rmtree(kept, ignore_errors=True)
        out.rename(kept)


def run_group(i: int, name: str, argv: list[str], trees: dict[str, Path], d: Path) -> None:
    order = ["old", "new"] if i % 2 == 0 else ["new", "old"]
    got: dict[str, list[str]] = {}
    print(f"\n## {name} ({' then '.join(order)})")
    for tag in order:
        print(f"{tag}: {load()}", flush=True)
        got[tag] = bench(trees[tag], argv, d)
        keep_outputs(d, tag)
    for tag in ("old", "new"):
        for line in got[tag]:
            print(f"{tag}  {line}")
    times = {tag: dict(filter(None, map(seconds, got[tag]))) for tag in got}
    for row, new in times["new"].items():
        old = times["old"].get(row)
        if old:
            print(f"new/old  {row:<44} {new / old:>8.3f}x")


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--old", required=True, help="the older checkout (with its own .venv)")
    ap.add_argument("--ops", default="1000000,10000000", help="corpus sizes of the end-to-end rows")
    ap.add_argument("--ingest-ops", type=int, default=1_000_000, help="ops of the ingest rows")
    ap.add_argument("--etcd", default=os.environ.get("KRAFT_ETCD_LOGS"),
                    help="Porcupine's Jepsen etcd logs (test_data/jepsen); KRAFT_PORCUPINE as in audit_speed.py")
    ap.add_argument("--dir", default="/tmp/kraft-audit-speed", help="where corpora are generated and kept")
    ap.add_argument("--groups", default="",
                    help="comma-separated: run only the groups whose name starts so (the table is then "
                         "audit_speed_vs-GROUPS.md)")
    return ap


def main(args: argparse.Namespace) -> None:
    trees = {"old": Path(args.old).resolve(), "new": NEW}
    for tag, tree in trees.items():
        if not (tree / ".venv" / "bin" / "python").exists():
            raise SystemExit(f"{tree}: no .venv (run ./kraft.sh there once)")
        print(f"{tag}: {tree} at {results.git_commit(tree)}")
    d = Path(args.dir)
    wanted = tuple(filter(None, args.groups.split(",")))
    chosen = [(name, argv) for name, argv in groups(args) if not wanted or name.startswith(wanted)]
    for i, (name, argv) in enumerate(chosen):
        run_group(i, name, argv, trees, d)


if __name__ == "__main__":
    ARGS = parser().parse_args()
    TABLE = "audit_speed_vs" + (f"-{ARGS.groups.replace(',', '-')}" if ARGS.groups else "")
    sys.exit(results.run(TABLE, lambda: main(ARGS)))
