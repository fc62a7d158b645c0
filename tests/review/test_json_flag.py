"""``--json`` on every judging command (kraft/cliutil.py): stdout is exactly the command's JSON
document, the same one it writes under ``--out``, and the exit code is the one without the flag.
Every case runs the real command on a small input."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from kraft.outcome import read_header

TESTS = Path(__file__).resolve().parents[1]
HISTORIES = TESTS / "spark_validation" / "fixtures"


def _json(cmd, args: list) -> tuple[dict, int, str]:
    res = CliRunner().invoke(cmd, [str(a) for a in args])
    assert res.exception is None or isinstance(res.exception, SystemExit), res.output
    doc = json.loads(res.stdout)  # the whole of stdout is one JSON document, nothing else
    read_header(doc, "stdout")
    assert doc["exit_code"] == res.exit_code
    return doc, res.exit_code, res.stderr


def _same_as_file(doc: dict, path: Path) -> None:
    assert doc == json.loads(path.read_text())


@pytest.mark.tlc
def test_check_json(tmp_path, monkeypatch):
    from model_check.cli import check

    spec = tmp_path / "spec"
    shutil.copytree(TESTS / "model_check" / "fixtures", spec)
    monkeypatch.setenv("KRAFT_SPEC_DIR", str(spec))
    doc, code, _ = _json(check, ["Counter", "--variant", "BuggyStep", "--out", tmp_path / "o", "--json"])
    assert (doc["command"], doc["verdict"], code) == ("check", "clean", 0)
    assert doc["runs"][0]["variant"] == "BuggyStep" and doc["runs"][0]["status"] == "ok"
    _same_as_file(doc, tmp_path / "o" / "check.json")
    # a usage error still gives one document on stdout, naming the error; the exit code stays 2
    doc, code, err = _json(check, ["Nope", "--out", tmp_path / "o2", "--json"])
    assert (doc["verdict"], code) == ("error", 2) and "no spec manifest 'Nope'" in doc["summary"]
    assert "no spec manifest" in err


def test_simulate_json(tmp_path):
    from kraft.sim.cli import simulate

    doc, code, _ = _json(simulate, ["--protocol", "groups", "--steps", "200", "--count", "2", "--out", tmp_path,
                                    "--json"])
    assert (doc["command"], doc["verdict"], code, doc["runs"]) == ("simulate", "clean", 0, 2)
    _same_as_file(doc, tmp_path / "summary.json")
    one, code, _ = _json(simulate, ["--protocol", "groups", "--steps", "200", "--out", tmp_path / "one", "--json"])
    assert (one["command"], code) == ("simulate", 0) and one["events"] > 0 and "history" in one
    _same_as_file(one, tmp_path / "one" / "summary.json")
    bad, code, _ = _json(simulate, ["--protocol", "paxos", "--out", tmp_path / "x", "--json"])
    assert (bad["verdict"], code) == ("error", 2) and "unknown protocol 'paxos'" in bad["summary"]


@pytest.mark.tlc
def test_conform_json(tmp_path):
    from kraft.sim.cli import simulate
    from traces.cli import conform

    CliRunner().invoke(simulate, ["--protocol", "groups", "--steps", "60", "--out", str(tmp_path / "sim")])
    doc, code, _ = _json(conform, [tmp_path / "sim", "--out", tmp_path / "c", "--json"])
    assert (doc["command"], doc["verdict"], code) == ("conform", "clean", 0)
    assert doc["totals"]["traces"] == 1 and doc["totals"]["events"] > 0
    _same_as_file(doc, tmp_path / "c" / "conform.json")


def test_audit_json(tmp_path):
    from spark_validation.cli import audit

    doc, code, _ = _json(audit, [HISTORIES / "cas_invalid.edn", "--no-spark", "--out", tmp_path, "--json"])
    assert (doc["command"], doc["verdict"], code) == ("audit", "violation", 1)
    assert doc["invalid"] == 1
    _same_as_file(doc, tmp_path / "summary.json")
    doc, code, _ = _json(audit, [tmp_path / "missing", "--no-spark", "--out", tmp_path / "m", "--json"])
    assert (doc["verdict"], code) == ("error", 2) and "no such file" in doc["summary"]


def test_review_json(tmp_path, monkeypatch):
    from kraft.review import pipeline

    # one stage whose command is not in this build: skipped, so the review is inconclusive (3)
    monkeypatch.setitem(pipeline.COMMANDS, "nothing-here", "no_such_module_xyz:cmd")
    monkeypatch.setattr(pipeline, "_stages", lambda *a, **k: [pipeline.Stage("n", "absent", ("nothing-here",),
                                                                             "n.json")])
    doc, code, _ = _json(pipeline.review, ["--out", tmp_path, "--json"])
    assert (doc["command"], doc["verdict"], code) == ("review", "inconclusive", 3)
    assert [s["status"] for s in doc["stages"]] == ["skipped"]
    _same_as_file(doc, tmp_path / "summary.json")
