"""KRaft traces from `kraft simulate` checked against spec/KRaft.tla.

The oracle for "rejected at the step where the bug acts": the simulator is deterministic per seed,
so the correct and the buggy implementation take the same steps until the bug first changes
something observable; the first line where their traces differ is where the bug acts, and the
checker must reject the buggy trace exactly there (after accepting the correct one past it).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from traces.check import Options, check_paths

pytestmark = pytest.mark.tlc
OPTS = Options(jobs=2)


def simulate(out: Path, seed: int, steps: int, faults: str, variant: str | None = None) -> list[str]:
    cmd = [sys.executable, "-m", "kraft.cli", "simulate", "--protocol", "kraft", "--seed", str(seed),
           "--steps", str(steps), "--faults", faults, "--out", str(out)]
    if variant:
        cmd += ["--variant", variant]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert proc.returncode in (0, 1), proc.stderr[-2000:]  # 1: the buggy run broke an invariant
    return (out / "trace.ndjson").read_text().splitlines()


def first_difference(a: list[str], b: list[str]) -> int | None:
    for n, (x, y) in enumerate(zip(a[1:], b[1:]), 2):
        if x != y:
            return n
    return None


def write(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(x + "\n" for x in lines))
    return path


def test_simulator_traces_are_accepted(tmp_path):
    paths = []
    for seed in (1, 2, 3):
        lines = simulate(tmp_path / f"s{seed}", seed, 300, "none")
        paths.append(write(tmp_path / f"s{seed}.ndjson", lines))
    res = check_paths(paths, OPTS)
    assert [r.verdict for r in res] == ["accepted"] * 3, [r.message[:500] for r in res]
    assert all(r.events == r.checked > 100 for r in res)
    assert all(json.loads(Path(r.trace).read_text().splitlines()[0])["protocol"] == "kraft" for r in res)


@pytest.mark.parametrize("variant,seed,faults,action,var", [
    ("NoTruncateOnDivergence", 1, "resign", "HandleFetchResponse", "log"),
    pytest.param("HwmFromAnyEpoch", 1, "crash", "HandleFetchRequest", "highWatermark", marks=pytest.mark.slow),
    pytest.param("VoteWithoutLogCheck", 1, "resign", "HandleVoteRequest", "votedFor", marks=pytest.mark.slow),
    pytest.param("ForgetVoteOnRestart", 2, "crash", "Restart", "votedFor", marks=pytest.mark.slow),
])
def test_variant_rejected_where_the_bug_acts(tmp_path, variant, seed, faults, action, var):
    good = simulate(tmp_path / "good", seed, 2000, faults)
    bad = simulate(tmp_path / "bad", seed, 2000, faults, variant)
    line = first_difference(good, bad)
    assert line is not None, "the bug never acted in this run"
    g = write(tmp_path / "good.ndjson", good[: line + 20])
    b = write(tmp_path / "bad.ndjson", bad[: line + 20])
    rg, rb = check_paths([g, b], OPTS)
    assert rg.verdict == "accepted", rg.message[:1000]
    assert rb.verdict == "rejected" and rb.kind == "state_mismatch", rb.message[:1000]
    assert rb.line == line and rb.action == action
    assert var in rb.disagree and f"bad.ndjson:{line}:" in rb.message
    assert rb.variant == variant
