"""bench/kraft.py is the one KRaft benchmark command: it must print both tables and write them,
under the shared header, to its results file."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_kraft_bench_prints_tlc_and_implementation_tables(tmp_path: Path) -> None:
    # a size the manifest lacks keeps TLC out of the test; the row must still be printed, and
    # since nothing was model-checked the bench says so with the inconclusive exit code
    argv = ["bench/kraft.py", "--sizes", "nosuchsize", "--events", "60", "--examples", "2"]
    out = subprocess.run([sys.executable, *argv], capture_output=True, text=True, timeout=300, cwd=ROOT,
                         env={**os.environ, "KRAFT_BENCH_RESULTS": str(tmp_path)})
    assert out.returncode == 3, out.stderr
    text = out.stdout
    assert re.search(r"KRaft\s+nosuchsize\s+-\s+-.*skipped \(no such size\)", text), text
    for voters in (3, 5):
        for faults in ("none", "all"):
            assert re.search(rf"simulator, {voters} voters, faults={faults}, no trace\s+[\d,]+ events/s", text), text
    assert re.search(r"Hypothesis stateful machine.*\s[\d.]+ examples/s", text), text
    written = (tmp_path / "kraft.md").read_text()
    assert "| command | `python bench/kraft.py --sizes nosuchsize --events 60 --examples 2` |" in written
    assert text.strip() in written
