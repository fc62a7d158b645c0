"""KRAFT_NO_JVM=1 (the fast tier, ``./kraft.sh test --fast``, sets it): no test may start java.

``java`` on PATH becomes a stub that refuses and records the test that called it (JAVA_HOME is
unset, so TLC, Spark and a direct ``java`` call all find the stub); the run then fails, naming those
tests, even when they passed or skipped without java. A test that starts a JVM carries the ``tlc``,
``spark`` or ``jvm`` marker, which the fast tier deselects. The xdist workers and nested pytest
runs inherit the stub from the process that made it.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

NO_JVM = os.environ.get("KRAFT_NO_JVM") == "1"
STUB_DIR = "KRAFT_JAVA_STUB_DIR"
JAVA_STUB = """#!/bin/sh
echo "${PYTEST_CURRENT_TEST:-outside a test}" >> "$KRAFT_JAVA_STUB_DIR/started"
echo "java refused: KRAFT_NO_JVM=1 (the fast tier starts no JVM); mark the test tlc, spark or jvm" >&2
exit 1
"""

_made: list[Path] = []  # the stub's directory, in the process that made it


def pytest_configure(config: pytest.Config) -> None:
    if NO_JVM and STUB_DIR not in os.environ:
        stub = Path(tempfile.mkdtemp(prefix="kraft-no-jvm-"))
        (stub / "java").write_text(JAVA_STUB)
        (stub / "java").chmod(0o755)
        _made.append(stub)
        os.environ[STUB_DIR] = str(stub)
        os.environ["PATH"] = f"{stub}{os.pathsep}{os.environ.get('PATH', '')}"
        os.environ.pop("JAVA_HOME", None)


def _java_callers() -> list[str]:
    """The tests that ran ``java``: ``nodeid (phase)`` lines, once each."""
    started = _made[0] / "started" if _made else None
    lines = started.read_text().splitlines() if started and started.exists() else []
    return sorted(set(lines))


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if _java_callers() and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    callers = _java_callers()
    if callers:
        terminalreporter.write_sep("=", "java started under KRAFT_NO_JVM=1: the run fails", red=True)
        for nodeid in callers:
            terminalreporter.write_line(f"{nodeid}: mark it tlc, spark or jvm")


def pytest_unconfigure(config: pytest.Config) -> None:
    for stub in _made:
        shutil.rmtree(stub, ignore_errors=True)
