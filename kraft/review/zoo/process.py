"""The zoo's subprocesses: each runs in its own session with its output in a log, and is stopped
(its whole process group: TLC's java too) at the budget's deadline or when the zoo itself is
interrupted; and the small readers of what they leave behind."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from kraft import interrupt
from kraft.review.zoo.plan import Budget

def launcher() -> list[str]:
    """How a subprocess starts the kraft CLI (a seam for tests, as in pipeline.py)."""
    return [sys.executable, "-m", "kraft.cli"]


def run_process(argv: list[str], log: Path, budget: Budget, cwd: Path | None = None,
                env: dict[str, str] | None = None) -> tuple[int | None, float]:
    """Run ``argv`` (``env``: variables it gets besides ours) with its output in ``log``; stop it
    (its whole process group) at the budget's deadline, or when the zoo is interrupted
    (``kraft.interrupt``).  Returns (exit code or None if stopped, seconds)."""
    log.parent.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    with log.open("w") as f:
        code = interrupt.run(argv, timeout=budget.remaining(), stdout=f, stderr=subprocess.STDOUT, cwd=cwd,
                             env={**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})})
    if code is None:
        budget.exhausted = True
    return code, time.monotonic() - start


def tail(log: Path, n: int = 2) -> str:
    """The last ``n`` non-blank lines of a log, on one line (for a cell's detail)."""
    try:
        lines = [ln for ln in log.read_text(errors="replace").splitlines() if ln.strip()]
    except OSError:
        return ""
    return " | ".join(lines[-n:])[:300]


def read_json(path: Path) -> Any:
    """The JSON document at ``path``, or None if it is missing or unreadable."""
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def under(path: Any, root: Path) -> bool:
    """Whether ``path`` (a string from a tool's JSON) lies under ``root``."""
    if not isinstance(path, str):
        return False
    try:
        Path(path).resolve().relative_to(root.resolve())
        return True
    except ValueError:
        return False
