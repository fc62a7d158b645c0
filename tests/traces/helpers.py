"""Helpers shared by the trace-conformance tests: record a simulator run's trace, write trace
lines to a file, and find the first line where two traces of the same seed differ."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Callable


def simulate_trace(out: Path, protocol: str, seed: int, steps: int, faults: str = "all",
                   variant: str | None = None, observers: int = 0) -> list[str]:
    """Run ``kraft simulate`` (a subprocess, as a user would) and return the lines of its trace.
    Exit 1 is allowed: a buggy variant's run breaks an invariant, and its trace is what we want."""
    cmd = [sys.executable, "-m", "kraft.cli", "simulate", "--protocol", protocol, "--seed", str(seed),
           "--steps", str(steps), "--faults", faults, "--out", str(out)]
    if variant:
        cmd += ["--variant", variant]
    if observers:
        cmd += ["--observers", str(observers)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert proc.returncode in (0, 1), proc.stderr[-2000:]
    return (out / "trace.ndjson").read_text().splitlines()


def simulator(protocol: str) -> Callable[..., list[str]]:
    """``simulate(out, seed, steps, faults="all", variant=None, observers=0)`` for one protocol."""

    def simulate(out: Path, seed: int, steps: int, faults: str = "all", variant: str | None = None,
                 observers: int = 0) -> list[str]:
        return simulate_trace(out, protocol, seed, steps, faults, variant, observers)

    return simulate


def first_difference(a: list[str], b: list[str]) -> int | None:
    """The physical line (header = 1) of the first step where two traces differ, or None."""
    for n, (x, y) in enumerate(zip(a[1:], b[1:]), 2):
        if x != y:
            return n
    return None


def edit_line(lines: list[str], k: int, f: Callable[[dict], None]) -> list[str]:
    """A copy of trace ``lines`` whose line at index ``k`` is decoded, changed by ``f`` in place and
    encoded again."""
    out = list(lines)
    d = json.loads(out[k])
    f(d)
    out[k] = json.dumps(d)
    return out


def write(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(x + "\n" for x in lines))
    return path


def variant_pair(simulate: Callable[..., list[str]], base: Path, variant: str, seed: int,
                 steps: int = 2000, tail: int = 20) -> tuple[list[Path], int]:
    """The correct and the buggy run of one seed, each cut ``tail`` lines past the first line where
    they differ (where the bug first acts), written to ``base/<variant>-good.ndjson`` and
    ``-bad.ndjson``; returns both files and that line."""
    good = simulate(base / f"{variant}-good", seed, steps)
    bad = simulate(base / f"{variant}-bad", seed, steps, variant=variant)
    line = first_difference(good, bad)
    assert line is not None, f"{variant}: the bug never acted in seed {seed}"
    return [write(base / f"{variant}-good.ndjson", good[: line + tail]),
            write(base / f"{variant}-bad.ndjson", bad[: line + tail])], line


def lines_of(relay, seed: int, steps: int, **kw) -> list[str]:
    """The trace lines of a Relay toy run (the ``relay`` fixture's simulator)."""
    return [json.dumps(r) for r in relay.simulate(seed, steps, **kw)]


def without_variable(lines: list[str], var: str) -> list[str]:
    """The trace with ``var`` left out of every logged state (a partial projection)."""
    out = []
    for x in lines:
        r = json.loads(x)
        if "state" in r:
            r["state"].pop(var)
        out.append(json.dumps(r))
    return out
