"""bench/results.py: the header every bench table carries and the file it is written to."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
import results  # noqa: E402  (bench/results.py)

sys.path.pop(0)


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True,
                   env={**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
                        "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"})


def test_commit_is_dirty_when_the_tree_changes_outside_the_results(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q")
    (tmp_path / "bench" / "results").mkdir(parents=True)
    (tmp_path / "code.py").write_text("x = 1\n")
    git(tmp_path, "add", ".")
    git(tmp_path, "commit", "-qm", "c")
    clean = results.git_commit(tmp_path)
    assert re.fullmatch(r"[0-9a-f]{7,}", clean)
    (tmp_path / "bench" / "results" / "check.md").write_text("a table\n")
    assert results.git_commit(tmp_path) == clean
    (tmp_path / "code.py").write_text("x = 2\n")
    assert results.git_commit(tmp_path) == clean + "+dirty"


def test_commit_outside_a_checkout_is_unknown(tmp_path: Path) -> None:
    assert results.git_commit(tmp_path / "nowhere") == "unknown"


def test_run_writes_the_header_and_what_main_printed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("KRAFT_BENCH_RESULTS", str(tmp_path))

    def main() -> int:
        print("row  1.0")
        print(results.not_run("Porcupine driver not found"))
        return 3

    argv = [str(results.ROOT / "bench" / "demo.py"), "--quick", "a b"]
    assert results.run("demo", main, argv) == 3
    assert "row  1.0" in capsys.readouterr().out
    text = (tmp_path / "demo.md").read_text()
    assert text.startswith("# bench/demo.py\n")
    assert re.search(r"\| date \(UTC\) \| \d\d \w{3} \d{4}, \d\d:\d\d:\d\d \|", text)
    assert re.search(r"\| commit \| `([0-9a-f]{7,}(\+dirty)?|unknown)` \|", text)
    assert f"| machine | {os.cpu_count()} cores |" in text
    assert re.search(r"\| load average \(1/5/15 min\) \| start [\d. ]+; end [\d. ]+ \|", text)
    assert "| command | `python bench/demo.py --quick 'a b'` |" in text
    assert text.endswith("```text\nrow  1.0\nnot run: Porcupine driver not found\n```\n")


def test_a_run_that_raises_writes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KRAFT_BENCH_RESULTS", str(tmp_path))

    def main() -> int:
        print("half a table")
        raise SystemExit("checker bug")

    with pytest.raises(SystemExit):
        results.run("demo", main, ["bench/demo.py"])
    assert not (tmp_path / "demo.md").exists()


def test_a_per_spec_run_writes_its_own_table(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KRAFT_BENCH_RESULTS", str(tmp_path))
    assert results.per_spec("check", []) == "check"
    table = results.per_spec("check", ["PartitionReplication", "KRaft"])
    assert table == "check-KRaft-PartitionReplication"
    argv = [str(results.ROOT / "bench" / "check.py"), "PartitionReplication", "KRaft"]
    assert results.run("check", lambda: 0, argv, table=table) == 0
    assert [p.name for p in tmp_path.iterdir()] == ["check-KRaft-PartitionReplication.md"]
    assert (tmp_path / f"{table}.md").read_text().startswith("# bench/check.py\n")
