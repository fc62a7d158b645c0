"""tests/durations_file.py: the CI's durations file lists every test phase over 0.1 s and the
seconds per test directory."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_the_file_has_every_slow_phase_and_the_seconds_per_directory(tmp_path: Path) -> None:
    for d, n in (("a", 3), ("b", 1)):
        (tmp_path / d).mkdir()
        body = "".join(f"def test_{k}():\n    time.sleep(0.15)\n\n\n" for k in range(n))
        (tmp_path / d / f"test_{d}.py").write_text("import time\n\n\n" + body)
    cmd = [sys.executable, "-m", "pytest", "-c", "/dev/null", "--rootdir", str(tmp_path), "-p", "tests.durations_file",
           "-p", "no:cacheprovider", "--durations=1", "--durations-file=out.txt", str(tmp_path)]
    run = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    lines = (tmp_path / "out.txt").read_text().splitlines()
    calls = [ln for ln in lines if " call " in ln]
    assert len(calls) == 4  # every phase over 0.1 s, though the terminal shows one
    per_dir = lines[lines.index("=== seconds per test directory ===") + 1:]
    assert [ln.split()[1] for ln in per_dir] == ["a", "b", "total"]
    seconds = [float(ln.split()[0]) for ln in per_dir]
    assert seconds[0] >= 0.45 and seconds[1] >= 0.15 and abs(seconds[2] - seconds[0] - seconds[1]) < 0.02
