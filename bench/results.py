"""Where every benchmark writes its table: ``bench/results/<name>.md``.

A bench's ``__main__`` block calls ``sys.exit(results.run(NAME, main))``. :func:`run` runs
``main`` with its standard output shown as usual and copied, and when ``main`` returns, writes
the copy to ``bench/results/NAME.md`` under a header that says where the numbers come from: the
date (UTC), the git commit (short hash, ``+dirty`` when the work tree differs from it), the
machine's cores, the load average at start and end, and the exact command line. A run that
raises writes nothing. ``KRAFT_BENCH_RESULTS=DIR`` writes to DIR instead (the tests use it).

A bench that compares against an external tool it cannot find prints a row
``not run: <tool> not found`` (:func:`not_run`) rather than failing.
"""

from __future__ import annotations

import contextlib
import io
import os
import shlex
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, TextIO

ROOT = Path(__file__).resolve().parents[1]
RESULTS = Path(__file__).resolve().parent / "results"


def results_dir() -> Path:
    return Path(os.environ.get("KRAFT_BENCH_RESULTS") or RESULTS)


def not_run(why: str) -> str:
    """The row a bench prints for a comparison it could not make."""
    return f"not run: {why}"


def per_spec(name: str, specs: list[str]) -> str:
    """The table of a bench run over these specs: ``NAME-SPEC1-SPEC2`` (``NAME`` for all), so a
    run of one spec does not overwrite another's rows."""
    return "-".join([name, *sorted(specs)])


def git_commit(root: Path = ROOT) -> str:
    """The short hash of HEAD, ``+dirty`` when the tree has changes outside ``bench/results/``
    (the tables themselves do not change what is measured); ``unknown`` outside a git checkout."""
    try:
        head = subprocess.run(["git", "-C", str(root), "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True, check=True).stdout.strip()
        status = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--", ".",
                                 ":(exclude)bench/results"],
                                capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + ("+dirty" if status.strip() else "")


def command_line(argv: list[str]) -> str:
    """``python bench/NAME.py ARGS`` as typed from the repository root."""
    script = Path(argv[0]).resolve()
    with contextlib.suppress(ValueError):
        script = script.relative_to(ROOT)
    return shlex.join(["python", str(script), *argv[1:]])


def header(name: str, started: datetime, commit: str, load_start: tuple[float, ...],
           load_end: tuple[float, ...], argv: list[str]) -> str:
    def load(xs: tuple[float, ...]) -> str:
        return " ".join(f"{x:.2f}" for x in xs)

    return "\n".join([
        f"# bench/{name}.py",
        "",
        "| | |",
        "|---|---|",
        f"| date (UTC) | {started:%d %b %Y, %H:%M:%S} |",
        f"| commit | `{commit}` |",
        f"| machine | {os.cpu_count()} cores |",
        f"| load average (1/5/15 min) | start {load(load_start)}; end {load(load_end)} |",
        f"| command | `{command_line(argv)}` |",
        "",
    ])


class _Tee(io.TextIOBase):
    """Writes go to the terminal and into a copy."""

    def __init__(self, out: TextIO) -> None:
        self.out, self.copy = out, io.StringIO()

    def write(self, s: str) -> int:
        self.out.write(s)
        return self.copy.write(s)

    def flush(self) -> None:
        self.out.flush()


def print_table(header: tuple[str, ...], rows: list[tuple[str, ...]], right: set[int]) -> None:
    """A text table: the header, a rule, the rows; the columns in ``right`` aligned right."""
    widths = [max(len(h), *(len(row[i]) for row in rows)) if rows else len(h) for i, h in enumerate(header)]

    def line(row: tuple[str, ...]) -> str:
        return "  ".join(c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(row, widths)))

    print(line(header))
    print("  ".join("-" * w for w in widths))
    for row in rows:
        print(line(row))


def run(name: str, main: Callable[[], int | None], argv: list[str] | None = None, table: str | None = None) -> int:
    """Run ``main`` and write what it printed to ``bench/results/TABLE.md`` (``TABLE`` defaults to
    ``NAME``: a bench whose runs cover different things names one table per thing); return its
    exit code."""
    argv = list(sys.argv if argv is None else argv)
    started = datetime.now(timezone.utc)
    commit = git_commit()
    load_start = os.getloadavg()
    tee = _Tee(sys.stdout)
    with contextlib.redirect_stdout(tee):
        rc = main()
    text = header(name, started, commit, load_start, os.getloadavg(), argv)
    text += "\n```text\n" + tee.copy.getvalue().rstrip("\n") + "\n```\n"
    out = results_dir() / f"{table or name}.md"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
    print(f"table written to {out}", file=sys.stderr)
    return rc or 0
