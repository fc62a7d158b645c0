"""kraft/outcome.py: the exit-code table, combining verdicts, and the shared JSON header; plus the
header of the commands that need neither TLC nor Spark (audit --no-spark, conform, assign)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from kraft.outcome import (EXIT_ERROR, EXIT_INCONCLUSIVE, EXIT_OK, EXIT_VIOLATION, HeaderError, Verdict, header,
                           read_header)


def test_exit_code_table() -> None:
    assert [v.exit_code for v in Verdict] == [EXIT_OK, EXIT_VIOLATION, EXIT_ERROR, EXIT_INCONCLUSIVE] == [0, 1, 2, 3]
    assert [Verdict.from_exit_code(c) for c in range(4)] == list(Verdict)
    with pytest.raises(ValueError):
        Verdict.from_exit_code(4)


def test_worst_ranks_violation_then_error_then_inconclusive() -> None:
    C, V, E, I = Verdict.CLEAN, Verdict.VIOLATION, Verdict.ERROR, Verdict.INCONCLUSIVE
    assert Verdict.worst([C, C]) is C
    assert Verdict.worst([C, I]) is I
    assert Verdict.worst([I, E, C]) is E
    assert Verdict.worst([E, V, I]) is V
    assert Verdict.worst([]) is I  # nothing checked is never clean
    assert Verdict.worst([], empty=C) is C


def test_header_comes_first_and_is_validated() -> None:
    doc = header("conform", Verdict.VIOLATION, "1 trace of 3 rejected", {"totals": {"traces": 3}})
    assert list(doc) == ["command", "verdict", "summary", "exit_code", "totals"]
    assert read_header(json.loads(json.dumps(doc))) == ("conform", Verdict.VIOLATION, "1 trace of 3 rejected", 1)
    with pytest.raises(ValueError, match="collides"):
        header("conform", Verdict.CLEAN, "x", {"summary": {"traces": 3}})
    with pytest.raises(TypeError):
        header("conform", "clean", "x")  # type: ignore[arg-type]
    bad = [
        ([1, 2], "top level is a list"),
        ({"command": "x", "verdict": "clean"}, "missing summary, exit_code"),
        ({"verdict": "clean", "command": "x", "summary": "s", "exit_code": 0}, "not first"),
        ({"command": "x", "verdict": "fine", "summary": "s", "exit_code": 0}, "unknown verdict"),
        ({"command": "x", "verdict": "clean", "summary": "s", "exit_code": 1}, "does not match"),
        ({"command": "x", "verdict": "clean", "summary": {"n": 1}, "exit_code": 0}, "not a sentence"),
    ]
    for doc, why in bad:
        with pytest.raises(HeaderError, match=why):
            read_header(doc, "f.json")


def test_audit_summary_json_has_the_header(tmp_path: Path) -> None:
    from spark_validation.cli import audit

    h = tmp_path / "h.ndjson"
    h.write_text('{"v":1,"kind":"history","model":"kafka"}\n'
                 '{"process":0,"type":"invoke","f":"send","key":1,"value":5}\n'
                 '{"process":0,"type":"ok","f":"send","key":1,"value":[0,5]}\n'
                 '{"process":1,"type":"invoke","f":"poll","key":1,"value":null}\n'
                 '{"process":1,"type":"ok","f":"poll","key":1,"value":[[0,5]]}\n')
    res = CliRunner().invoke(audit, [str(h), "--no-spark", "--out", str(tmp_path / "o")])
    doc = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert res.exit_code == 0, res.output
    assert read_header(doc)[:2] == ("audit", Verdict.CLEAN) and doc["summary"] == "1 history, valid (4 ops)"
    assert doc["histories"] == 1 and doc["summary"] in res.output
    # nothing to audit: inconclusive, never 0
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "notes.txt").write_text("hello\n")
    res = CliRunner().invoke(audit, [str(empty), "--no-spark", "--out", str(tmp_path / "o2")])
    assert res.exit_code == 3, res.output
    doc = json.loads((tmp_path / "o2" / "summary.json").read_text())
    assert (doc["verdict"], doc["summary"]) == ("inconclusive", "no histories found: nothing was checked")


def test_assign_json_has_the_header(tmp_path: Path) -> None:
    from kraft.groups.assignors.cli import assign

    group = tmp_path / "g.json"
    group.write_text(json.dumps({"partitions": {"t": 3}, "members": {"a": {"topics": ["t"]}, "b": {"topics": ["t"]}}}))
    out = tmp_path / "a.json"
    res = CliRunner().invoke(assign, [str(group), "--assignor", "range", "--check", "--json", str(out)])
    assert res.exit_code == 0, res.output
    doc = json.loads(out.read_text())
    assert read_header(doc) == ("assign", Verdict.CLEAN, "range assigned 3 partitions to 2 members: valid and balanced", 0)
    assert doc["rounds"][0]["assignment"] == {"a": ["t-0", "t-1"], "b": ["t-2"]}
