"""Run the readable scenario scripts under tests/quorum/testdata/."""

from __future__ import annotations

from pathlib import Path

import pytest

from kraft.quorum.script import ScriptError, run_script

SCRIPTS = sorted((Path(__file__).parent / "testdata").glob("*.txt"))


@pytest.mark.parametrize("path", SCRIPTS, ids=[p.stem for p in SCRIPTS])
def test_script(path: Path) -> None:
    assert run_script(path)


def test_script_errors_name_file_and_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.txt"
    bad.write_text("voters 3\nrun 2000\nexpect role 1 Candidate\n")
    with pytest.raises(ScriptError) as info:
        run_script(bad)
    assert info.value.line == 3 and "bad.txt:3" in str(info.value)
    bad.write_text("voters 3\nfrobnicate 2\n")
    with pytest.raises(ScriptError, match="bad.txt:2: unknown command"):
        run_script(bad)
