"""The zoo's subprocesses: each runs in its own session with its output in a log, and is stopped
(its whole process group: TLC's java too) at the budget's deadline or when the zoo itself is
stopped; and the small readers of what they leave behind."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from kraft.review.zoo.plan import Budget

_ACTIVE: set[subprocess.Popen] = set()  # running children, stopped if the zoo itself is stopped


def launcher() -> list[str]:
    """How a subprocess starts the kraft CLI (a seam for tests, as in pipeline.py)."""
    return [sys.executable, "-m", "kraft.cli"]


def stop_children_on_signals() -> None:
    """On SIGTERM or SIGINT, stop every running child (they run in their own sessions, so the
    signal does not reach them) and exit with 128 + the signal."""
    signal.signal(signal.SIGTERM, _on_terminate)
    signal.signal(signal.SIGINT, _on_terminate)


def _on_terminate(signum: int, frame: Any) -> None:
    for proc in list(_ACTIVE):
        _stop(proc)
    os._exit(128 + signum)


def run_process(argv: list[str], log: Path, budget: Budget, cwd: Path | None = None) -> tuple[int | None, float]:
    """Run ``argv`` with its output in ``log``; stop it at the budget's deadline.
    Returns (exit code or None if stopped, seconds)."""
    log.parent.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    with log.open("w") as f:
        proc = subprocess.Popen(argv, stdout=f, stderr=subprocess.STDOUT, cwd=cwd, start_new_session=True,
                                env={**os.environ, "PYTHONUNBUFFERED": "1"})
        _ACTIVE.add(proc)
        try:
            code: int | None = proc.wait(timeout=budget.remaining())
        except subprocess.TimeoutExpired:
            budget.exhausted = True
            _stop(proc)
            code = None
        finally:
            _ACTIVE.discard(proc)
    return code, time.monotonic() - start


def _stop(proc: subprocess.Popen) -> None:
    for sig, wait in ((signal.SIGTERM, 5), (signal.SIGKILL, 5)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


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
