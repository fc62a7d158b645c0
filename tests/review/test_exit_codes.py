"""One exit-code contract (kraft/outcome.py), command by command: the codes not already proved by a
command's own tests (see docs/contracts.md section 10 for the whole matrix and where each cell is
tested). Every case runs the real command."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from kraft.outcome import EXIT_ERROR, EXIT_INCONCLUSIVE, EXIT_OK, EXIT_VIOLATION
from kraft.sim.cli import simulate


def _invoke(cmd, args):
    res = CliRunner().invoke(cmd, [str(a) for a in args])
    assert res.exception is None or isinstance(res.exception, SystemExit), res.output
    assert "Traceback" not in res.output
    return res


def _header(path: Path) -> tuple[str, int]:
    doc = json.loads(path.read_text())
    return doc["verdict"], doc["exit_code"]


def test_simulate_clean_run_is_0(tmp_path):
    res = _invoke(simulate, ["--protocol", "groups", "--steps", "300", "--seed", "1", "--out", tmp_path])
    assert res.exit_code == EXIT_OK, res.output
    assert _header(tmp_path / "summary.json") == ("clean", EXIT_OK)


def test_simulate_violation_is_1(tmp_path):
    # CooperativeAssignWithoutRevoke hands a partition to two owners in 2 of seeds 0..3
    # (tests/groups/test_sim_plugin.py); one violating run makes the batch a violation
    res = _invoke(simulate, ["--protocol", "groups", "--variant", "CooperativeAssignWithoutRevoke", "--faults",
                             "drop,dup,delay,reorder,crash", "--steps", "2000", "--seed", "0", "--count", "4",
                             "--out", tmp_path])
    assert res.exit_code == EXIT_VIOLATION, res.output
    assert _header(tmp_path / "summary.json") == ("violation", EXIT_VIOLATION)


@pytest.mark.parametrize("args", [["--faults", "drop,lightning"], ["--protocol", "paxos"],
                                  ["--protocol", "groups", "--variant", "NoSuchBug"]])
def test_simulate_usage_error_is_2(tmp_path, args):
    res = _invoke(simulate, [*args, "--steps", "10", "--out", tmp_path])
    assert res.exit_code == EXIT_ERROR, res.output


def _kraft_test(tmp_path: Path, body: str | None, *extra: str) -> subprocess.CompletedProcess:
    args = list(extra)
    if body is not None:
        f = tmp_path / "test_sample.py"
        f.write_text(body)
        args = [str(f), *args]
    return subprocess.run([sys.executable, "-m", "kraft.cli", "test", "-p", "no:cacheprovider", "-q", *args],
                          capture_output=True, text=True, cwd=tmp_path, timeout=300)


@pytest.mark.parametrize("body,extra,code", [
    ("def test_ok():\n    assert 1 + 1 == 2\n", (), EXIT_OK),
    ("def test_bad():\n    assert 1 + 1 == 3\n", (), EXIT_VIOLATION),
    ("x = 1\n", (), EXIT_INCONCLUSIVE),                       # no tests collected
    ("def test_ok():\n    pass\n", ("--no-such-option",), EXIT_ERROR),  # pytest usage error
])
def test_kraft_test_codes(tmp_path, body, extra, code):
    r = _kraft_test(tmp_path, body, *extra)
    assert r.returncode == code, r.stdout + r.stderr
    assert "Traceback" not in r.stderr
