"""The review pipeline's own logic: stage verdicts from exit codes, skipped stages, the HTML page."""

import json
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from kraft import cli, review


@pytest.fixture
def fake_commands(monkeypatch, tmp_path):
    """Register three throwaway subcommands: one clean, one finding a violation, one crashing."""
    mod = tmp_path / "fake_stage_cmds.py"
    mod.write_text(
        "import json, sys, click\n"
        "@click.command()\n@click.option('--out')\n"
        "def clean(out):\n"
        "    import pathlib; p = pathlib.Path(out); p.mkdir(parents=True, exist_ok=True)\n"
        "    (p / 'r.json').write_text(json.dumps([{'verdict': 'ok'}, {'verdict': 'ok'}]))\n"
        "@click.command()\n@click.option('--out')\n"
        "def bad(out):\n    print('found a counterexample'); sys.exit(1)\n"
        "@click.command()\n@click.option('--out')\n"
        "def broken(out):\n    print('TLC: parse error in X.tla line 3'); sys.exit(2)\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("PYTHONPATH", str(tmp_path) + ":" + ":".join(sys.path))
    monkeypatch.setitem(cli.COMMANDS, "fake-clean", "fake_stage_cmds:clean")
    monkeypatch.setitem(cli.COMMANDS, "fake-bad", "fake_stage_cmds:bad")
    monkeypatch.setitem(cli.COMMANDS, "fake-broken", "fake_stage_cmds:broken")
    return tmp_path


def test_stage_verdicts_follow_exit_codes(fake_commands, tmp_path, monkeypatch):
    # the stage subprocess runs `python -m kraft.cli`, which has the real COMMANDS table: route
    # through a tiny launcher module that patches it the same way first
    (fake_commands / "launch_kraft.py").write_text(
        "import sys\nfrom kraft import cli\n"
        "cli.COMMANDS.update({'fake-clean': 'fake_stage_cmds:clean', 'fake-bad': 'fake_stage_cmds:bad',"
        " 'fake-broken': 'fake_stage_cmds:broken'})\ncli.main()\n")
    monkeypatch.setattr(review, "_launcher", lambda: ["-m", "launch_kraft"])
    out = tmp_path / "out"
    out.mkdir()
    clean = review.run_stage(review.Stage("a", "clean", ("fake-clean", "--out", str(out / "a")), "a/r.json"), out, 60)
    bad = review.run_stage(review.Stage("b", "bad", ("fake-bad", "--out", "x"), "b/r.json"), out, 60)
    broken = review.run_stage(review.Stage("c", "broken", ("fake-broken", "--out", "x"), "c/r.json"), out, 60)
    caught = review.run_stage(
        review.Stage("d", "variant", ("fake-bad", "--out", "x"), "d/r.json", expect_violation=True), out, 60)
    missed = review.run_stage(
        review.Stage("e", "variant", ("fake-clean", "--out", str(out / "e")), "e/r.json", expect_violation=True),
        out, 60)
    assert (clean.status, clean.exit_code) == ("passed", 0)
    assert clean.detail == "2 rows: ok: 2"
    assert (bad.status, bad.exit_code) == ("violation", 1)
    assert (broken.status, broken.exit_code) == ("error", 2)
    assert "parse error in X.tla line 3" in broken.detail
    assert caught.status == "passed"
    assert missed.status == "error"


def test_missing_subcommand_is_skipped_not_passed(tmp_path, monkeypatch):
    monkeypatch.setitem(cli.COMMANDS, "nothing-here", "no_such_module_xyz:cmd")
    r = review.run_stage(review.Stage("n", "absent", ("nothing-here",), "n.json"), tmp_path, 10)
    assert r.status == "skipped"
    assert "not part of this build" in r.detail


def test_report_page_lists_every_stage(tmp_path):
    (tmp_path / "check.json").write_text(json.dumps([{"spec": "KRaft", "verdict": "ok", "states": 12}]))
    summary = {"generated": "now", "stages": [
        {"name": "model-check", "what": "TLC", "status": "passed", "exit_code": 0, "seconds": 1.0,
         "detail": "1 rows", "output": str(tmp_path / "check.json"), "log": ""},
        {"name": "audit", "what": "Spark <audit>", "status": "violation", "exit_code": 1, "seconds": 2.0,
         "detail": "lost-write", "output": None, "log": ""},
    ]}
    (tmp_path / "summary.json").write_text(json.dumps(summary))
    result = CliRunner().invoke(review.report, [str(tmp_path)])
    assert result.exit_code == 0, result.output
    page = (tmp_path / "report.html").read_text()
    assert "model-check" in page and "KRaft" in page and "violation" in page
    assert "Spark &lt;audit&gt;" in page  # escaped


def test_report_without_summary_is_a_usage_error(tmp_path):
    result = CliRunner().invoke(review.report, [str(tmp_path)])
    assert result.exit_code == 2
    assert "summary.json" in result.output


def test_stage_digest_counts_lists_instead_of_printing_them(tmp_path):
    p = tmp_path / "conform.json"
    p.write_text(json.dumps({"summary": {"traces": 4, "accepted": 4,
                                         "ignored_files": [{"path": "a", "why": "x"}, {"path": "b", "why": "y"}]}}))
    assert review._summarise_json(p) == "traces=4, accepted=4, ignored_files=2"
