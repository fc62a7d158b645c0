"""``kraft check`` through click's CliRunner: verdicts, counterexample printing, JSON, exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from rich.console import Console

from model_check import TraceState
from model_check.cli import check, print_counterexample


def invoke(*args: str) -> tuple[int, str, str]:
    res = CliRunner().invoke(check, list(args))
    assert res.exception is None or isinstance(res.exception, SystemExit), res.exception
    return res.exit_code, res.stdout, res.stderr


def test_counterexample_shows_only_changed_variables() -> None:
    console = Console(record=True, width=120)
    trace = [
        TraceState(1, None, None, {"a": 0, "b": "x"}),
        TraceState(2, "Step", 2, {"a": 1, "b": "x"}),
        TraceState(3, "Stuttering", None, {"a": 1, "b": "x"}),
    ]
    print_counterexample(console, trace)
    text = console.export_text()
    assert text.splitlines() == [
        "step 1  <Init>",
        "    a = 0",
        '    b = "x"',
        "step 2  Step  node=2",
        "    a = 1",
        "step 3  Stuttering  (stutters forever)",
        "    (no variable changed)",
    ]


def test_unknown_spec_or_variant_is_usage_error(spec_dir: Path, tmp_path: Path) -> None:
    code, _, err = invoke("Nope", "--out", str(tmp_path))
    assert code == 2 and "no spec manifest 'Nope'" in err
    code, _, err = invoke("Counter", "--variant", "Nope", "--out", str(tmp_path))
    assert code == 2 and "no variant 'Nope'" in err


def test_missing_java_exit_2_without_traceback(spec_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    code, out, err = invoke("Counter", "--out", str(tmp_path))
    assert code == 2
    assert "java was not found" in err and "Traceback" not in err + out
    assert json.loads((tmp_path / "check.json").read_text())["runs"][0]["verdict"] == "TOOL ERROR"


@pytest.mark.tlc
def test_check_ok_and_variant_caught(spec_dir: Path, tmp_path: Path) -> None:
    code, out, _ = invoke("Counter", "--out", str(tmp_path))
    assert code == 0, out
    runs = json.loads((tmp_path / "check.json").read_text())["runs"]
    assert runs[0]["outcome"] == "ok" and runs[0]["distinct"] == 16 and runs[0]["verdict"] == "ok"
    code, out, _ = invoke("Counter", "--variant", "BuggyStep", "--out", str(tmp_path))
    assert code == 0, out
    assert "caught (Bounded)" in out
    assert "step 4  Jump" in out and "    x = 4" in out
    runs = json.loads((tmp_path / "check.json").read_text())["runs"]
    assert runs[0]["variant"] == "BuggyStep" and runs[0]["violated"] == "Bounded"
    assert [s["action"] for s in runs[0]["counterexample"]] == [None, "Inc", "Inc", "Jump"]
    assert runs[0]["counterexample"][3]["variables"]["info"]["owners"] == [1]


@pytest.mark.tlc
def test_all_variants_missed_and_wrong_exit_1(spec_dir: Path, tmp_path: Path) -> None:
    (spec_dir / "Counter.toml").unlink()
    (spec_dir / "CounterMissed.toml").write_text(
        'module = "Counter"\n[sizes.small]\ncfg = "CounterTiny.cfg"\n'
        '[variants.BuggyStep]\nviolates = "Bounded"\n'  # Limit = 1: Jump is never enabled
    )
    (spec_dir / "CounterWrong.toml").write_text(
        'module = "Counter"\n[sizes.small]\ncfg = "Counter.cfg"\n'
        '[variants.BuggyStep]\nviolates = "TypeOK"\n'  # TLC reports Bounded, not TypeOK
    )
    code, out, _ = invoke("--all-variants", "--quiet-trace", "--out", str(tmp_path))
    assert code == 1, out
    runs = {r["spec"]: r for r in json.loads((tmp_path / "check.json").read_text())["runs"]}
    assert runs["CounterMissed"]["verdict"] == "MISSED"
    assert runs["CounterWrong"]["verdict"] == "WRONG (Bounded; expected TypeOK)"
    assert "MISSED" in out and "step 1" not in out


@pytest.mark.tlc
def test_violation_exit_1_and_parse_error_exit_2(spec_dir: Path, tmp_path: Path) -> None:
    (spec_dir / "Buggy.toml").write_text('module = "Counter"\n[sizes.small]\ncfg = "CounterBuggy.cfg"\n')
    code, out, _ = invoke("Buggy", "--out", str(tmp_path))
    assert code == 1 and "VIOLATED (Bounded)" in out and "Counterexample" in out
    (spec_dir / "Broken.toml").write_text('module = "Broken"\n[sizes.small]\ncfg = "Broken.cfg"\n')
    code, out, err = invoke("Broken", "--out", str(tmp_path))
    assert code == 2 and "PARSE ERROR" in out
    assert f"{spec_dir / 'Broken.tla'}:5:20: TLA+ parse error" in err


@pytest.mark.tlc
def test_check_json_starts_with_the_shared_header(spec_dir: Path, tmp_path: Path) -> None:
    from kraft.outcome import read_header

    code, out, _ = invoke("Counter", "--out", str(tmp_path))
    doc = json.loads((tmp_path / "check.json").read_text())
    assert list(doc)[:5] == ["command", "verdict", "summary", "exit_code", "runs"]
    command, verdict, summary, exit_code = read_header(doc, "check.json")
    assert (command, verdict.value, exit_code, code) == ("check", "clean", 0, 0)
    assert summary == "Counter (small): no violation in 16 distinct states" and summary in out


@pytest.mark.tlc
def test_timeout_is_inconclusive_exit_3(spec_dir: Path, tmp_path: Path) -> None:
    """A TLC run stopped by its timeout before finding anything cannot say "clean": exit 3."""
    (spec_dir / "Slow.toml").write_text('module = "Slow"\n[sizes.small]\ncfg = "Slow.cfg"\n')
    code, out, _ = invoke("Slow", "--timeout", "3", "--out", str(tmp_path))
    assert code == 3, out
    doc = json.loads((tmp_path / "check.json").read_text())
    assert doc["verdict"] == "inconclusive" and doc["exit_code"] == 3
    assert doc["runs"][0]["status"] == "inconclusive" and doc["runs"][0]["verdict"] == "TIMEOUT"
    assert "hit a time or memory limit" in doc["summary"]


def test_nothing_checked_is_inconclusive_exit_3(spec_dir: Path, tmp_path: Path) -> None:
    """--all-variants on a spec without variants runs nothing: that is not a clean result."""
    (spec_dir / "Plain.toml").write_text('module = "Counter"\n[sizes.small]\ncfg = "Counter.cfg"\n')
    code, out, _ = invoke("Plain", "--all-variants", "--out", str(tmp_path))
    assert code == 3, out
    doc = json.loads((tmp_path / "check.json").read_text())
    assert doc["verdict"] == "inconclusive" and doc["summary"].startswith("nothing was model-checked")
