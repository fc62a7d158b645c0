"""The review pipeline's own logic: stage verdicts from the JSON header and exit codes, skipped
stages, the HTML page, and that no protocol package imports the review."""

import json
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from kraft import cli
from kraft.outcome import Verdict, header
from kraft.review import page, pipeline, suite


@pytest.fixture
def fake_commands(monkeypatch, tmp_path):
    """Register throwaway subcommands that write the shared header: clean, a violation, an error
    without a document, an inconclusive one, one whose header disagrees with its exit code, and
    one that writes a header-less list (the old, guessed-at shape)."""
    mod = tmp_path / "fake_stage_cmds.py"
    mod.write_text(
        "import json, pathlib, sys, click\n"
        "from kraft.outcome import Verdict, header\n"
        "def doc(out, verdict, summary, code=None):\n"
        "    p = pathlib.Path(out); p.mkdir(parents=True, exist_ok=True)\n"
        "    (p / 'r.json').write_text(json.dumps(header('fake', verdict, summary, {'results': [{'verdict': 'ok'}]})))\n"
        "    sys.exit(verdict.exit_code if code is None else code)\n"
        "@click.command()\n@click.option('--out')\n"
        "def clean(out):\n    doc(out, Verdict.CLEAN, '2 things, all fine')\n"
        "@click.command()\n@click.option('--out')\n"
        "def bad(out):\n    print('found a counterexample'); doc(out, Verdict.VIOLATION, 'Bounded violated')\n"
        "@click.command()\n@click.option('--out')\n"
        "def broken(out):\n    print('TLC: parse error in X.tla line 3'); sys.exit(2)\n"
        "@click.command()\n@click.option('--out')\n"
        "def unsure(out):\n    doc(out, Verdict.INCONCLUSIVE, '1 history undecided (unknown)')\n"
        "@click.command()\n@click.option('--out')\n"
        "def liar(out):\n    doc(out, Verdict.CLEAN, 'all fine', code=1)\n"
        "@click.command()\n@click.option('--out')\n"
        "def slow(out):\n    import time; time.sleep(30)\n"
        "@click.command()\n@click.option('--out')\n"
        "def old(out):\n"
        "    p = pathlib.Path(out); p.mkdir(parents=True, exist_ok=True)\n"
        "    (p / 'r.json').write_text(json.dumps([{'verdict': 'ok'}]))\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("PYTHONPATH", str(tmp_path) + ":" + ":".join(sys.path))
    for name in FAKES:
        monkeypatch.setitem(cli.COMMANDS, f"fake-{name}", f"fake_stage_cmds:{name}")
    return tmp_path


FAKES = ("clean", "bad", "broken", "unsure", "liar", "old", "slow")


def test_stage_verdicts_come_from_the_header(fake_commands, tmp_path, monkeypatch):
    # the stage subprocess runs `python -m kraft.cli`, which has the real COMMANDS table: route
    # through a tiny launcher module that patches it the same way first
    (fake_commands / "launch_kraft.py").write_text(
        "import sys\nfrom kraft import cli\n"
        f"cli.COMMANDS.update({{f'fake-{{n}}': f'fake_stage_cmds:{{n}}' for n in {FAKES!r}}})\ncli.main()\n")
    monkeypatch.setattr(pipeline, "_launcher", lambda: ["-m", "launch_kraft"])
    out = tmp_path / "out"
    out.mkdir()

    def stage(name, cmd, expect_violation=False):
        return pipeline.run_stage(pipeline.Stage(name, cmd, (f"fake-{cmd}", "--out", str(out / name)), f"{name}/r.json",
                                                 expect_violation=expect_violation), out, 60)

    clean, bad, broken, unsure = stage("a", "clean"), stage("b", "bad"), stage("c", "broken"), stage("u", "unsure")
    assert (clean.status, clean.exit_code, clean.detail) == ("passed", 0, "2 things, all fine")
    assert (bad.status, bad.exit_code, bad.detail) == ("violation", 1, "Bounded violated")
    assert (broken.status, broken.exit_code) == ("error", 2)
    assert "parse error in X.tla line 3" in broken.detail  # no document: the log's tail says why
    assert (unsure.status, unsure.exit_code, unsure.detail) == ("inconclusive", 3, "1 history undecided (unknown)")
    assert stage("d", "bad", expect_violation=True).status == "passed"
    missed = stage("e", "clean", expect_violation=True)
    assert missed.status == "error" and "expected a violation" in missed.detail
    # a header that disagrees with the exit code, or no header at all, is never taken at its word
    liar = stage("l", "liar")
    assert liar.status == "error" and "exit code 1 but r.json says clean" in liar.detail
    old = stage("o", "old")
    assert old.status == "error" and "not an object with the kraft header" in old.detail
    # a stage stopped by --stage-timeout decided nothing: inconclusive
    slow = pipeline.run_stage(pipeline.Stage("s", "slow", ("fake-slow", "--out", str(out / "s")), "s/r.json"), out, 1.5)
    assert (slow.status, slow.exit_code, slow.detail) == ("inconclusive", None, "stopped after 2s (--stage-timeout)")
    # the review's own verdict is the worst stage's; its document carries the header too
    verdict, sentence = pipeline.review_verdict([clean, unsure])
    assert verdict is Verdict.INCONCLUSIVE and sentence == "1 of 2 stages passed (u inconclusive)"
    assert pipeline.review_verdict([clean, unsure, broken, bad])[0] is Verdict.VIOLATION
    assert pipeline.review_verdict([clean])[1] == "all 1 stage passed"


def test_stale_output_is_not_read(fake_commands, tmp_path, monkeypatch):
    """A previous run's JSON in the same --out must not stand in for a stage that wrote nothing."""
    (fake_commands / "launch_kraft.py").write_text(
        "import sys\nfrom kraft import cli\n"
        f"cli.COMMANDS.update({{f'fake-{{n}}': f'fake_stage_cmds:{{n}}' for n in {FAKES!r}}})\ncli.main()\n")
    monkeypatch.setattr(pipeline, "_launcher", lambda: ["-m", "launch_kraft"])
    (tmp_path / "s").mkdir()
    (tmp_path / "s" / "r.json").write_text(json.dumps(header("fake", Verdict.CLEAN, "old news")))
    r = pipeline.run_stage(pipeline.Stage("s", "crash", ("fake-broken", "--out", "x"), "s/r.json"), tmp_path, 60)
    assert r.status == "error" and "old news" not in r.detail


def test_missing_subcommand_is_skipped_not_passed(tmp_path, monkeypatch):
    monkeypatch.setitem(cli.COMMANDS, "nothing-here", "no_such_module_xyz:cmd")
    r = pipeline.run_stage(pipeline.Stage("n", "absent", ("nothing-here",), "n.json"), tmp_path, 10)
    assert r.status == "skipped"
    assert "not part of this build" in r.detail


def test_report_page_lists_every_stage(tmp_path):
    (tmp_path / "check.json").write_text(json.dumps(header(
        "check", Verdict.CLEAN, "KRaft (small): no violation in 12 distinct states",
        {"runs": [{"spec": "KRaft", "verdict": "ok", "states": 12}]})))
    summary = header("review", Verdict.VIOLATION, "1 of 2 stages passed (audit violation)", {"generated": "now", "stages": [
        {"name": "model-check", "what": "TLC", "status": "passed", "exit_code": 0, "seconds": 1.0,
         "detail": "1 rows", "output": str(tmp_path / "check.json"), "log": ""},
        {"name": "audit", "what": "Spark <audit>", "status": "violation", "exit_code": 1, "seconds": 2.0,
         "detail": "lost-write", "output": None, "log": ""},
    ]})
    (tmp_path / "summary.json").write_text(json.dumps(summary))
    result = CliRunner().invoke(page.report, [str(tmp_path)])
    assert result.exit_code == 0, result.output
    html = (tmp_path / "report.html").read_text()
    assert "model-check" in html and "KRaft" in html and "violation" in html
    assert "no violation in 12 distinct states" in html and "1 of 2 stages passed" in html
    assert "Spark &lt;audit&gt;" in html  # escaped


def test_report_without_summary_is_a_usage_error(tmp_path):
    result = CliRunner().invoke(page.report, [str(tmp_path)])
    assert result.exit_code == 2
    assert "summary.json" in result.output


def test_kraft_test_maps_pytest_exit_codes():
    """pytest's 1 (failures) is a violation, 5 (nothing collected) inconclusive, 3/4 errors."""
    assert [suite.PYTEST_TO_KRAFT[c] for c in range(6)] == [0, 1, 2, 2, 2, 3]


def test_no_protocol_package_imports_the_review():
    """kraft.review imports the checkers; the protocol packages never import it (DESIGN.md)."""
    import re

    root = Path(cli.__file__).parent
    pattern = re.compile(r"^\s*(from\s+kraft\.review|import\s+kraft\.review|from\s+kraft\s+import\s+.*\breview\b)", re.M)
    offenders = [str(p) for p in root.rglob("*.py")
                 if p.relative_to(root).parts[0] not in ("review", "cli.py") and pattern.search(p.read_text())]
    assert offenders == []
