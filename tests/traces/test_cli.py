"""`kraft conform`: table, JSON, exit codes; `--spark` writes Parquet."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from traces.cli import conform

GLUE = str(Path(__file__).parent / "fixtures" / "relay_glue.py") + ":GLUE"


def _corpus(relay, d: Path, bad: bool) -> Path:
    d.mkdir()
    relay.write_trace(d / "a.ndjson", 1, 60)
    relay.write_trace(d / "b.ndjson", 2, 60)
    if bad:
        relay.write_trace(d / "bad.ndjson", 2, 300, variant="BuggyMax")
    (d / "history.ndjson").write_text('{"v": 1, "kind": "history", "model": "register"}\n')
    return d


@pytest.mark.tlc
def test_accepting_corpus_exit_0_and_json(relay, tmp_path):
    d = _corpus(relay, tmp_path / "c", bad=False)
    out = tmp_path / "out"
    r = CliRunner().invoke(conform, [str(d), "--glue", GLUE, "--out", str(out), "--jobs", "2"])
    assert r.exit_code == 0, r.output
    assert "accepted" in r.output and "2 accepted, 0 rejected" in r.output
    doc = json.loads((out / "conform.json").read_text())
    assert list(doc)[:4] == ["command", "verdict", "summary", "exit_code"]
    assert (doc["command"], doc["verdict"], doc["exit_code"]) == ("conform", "clean", 0)
    assert doc["summary"].startswith("2 traces, all accepted") and doc["summary"] in r.output
    assert doc["totals"]["traces"] == 2 and doc["totals"]["accepted"] == 2
    assert doc["totals"]["ignored_files"][0]["path"].endswith("history.ndjson")
    assert {Path(x["trace"]).name for x in doc["results"]} == {"a.ndjson", "b.ndjson"}


@pytest.mark.tlc
def test_rejection_exit_1_names_line_and_variables(relay, tmp_path):
    d = _corpus(relay, tmp_path / "c", bad=True)
    out = tmp_path / "out"
    r = CliRunner().invoke(conform, [str(d), "--glue", GLUE, "--out", str(out)])
    assert r.exit_code == 1, r.output
    doc = json.loads((out / "conform.json").read_text())
    assert (doc["verdict"], doc["exit_code"]) == ("violation", 1) and "1 trace of 3 rejected" in doc["summary"]
    bad = [x for x in doc["results"] if x["verdict"] == "rejected"]
    assert len(bad) == 1 and bad[0]["kind"] == "state_mismatch" and bad[0]["disagree"] == ["val"]
    assert f"line {bad[0]['line']}" in r.output and "Receive" in r.output
    assert f"bad.ndjson:{bad[0]['line']}:" in r.output.replace("\n", "")
    # the witness-invariant way of detecting acceptance gives the same verdicts and line
    out_w = tmp_path / "out_w"
    r = CliRunner().invoke(conform, [str(d), "--glue", GLUE, "--out", str(out_w), "--batch", "1",
                                     "--witness", "invariant"])
    assert r.exit_code == 1, r.output
    doc_w = json.loads((out_w / "conform.json").read_text())
    assert sorted((Path(x["trace"]).name, x["verdict"], x.get("line")) for x in doc_w["results"]) == \
        sorted((Path(x["trace"]).name, x["verdict"], x.get("line")) for x in doc["results"])


def test_usage_errors_exit_2(tmp_path):
    r = CliRunner().invoke(conform, [str(tmp_path / "missing.ndjson")])
    assert r.exit_code == 2 and "no such file" in r.output
    (tmp_path / "h.ndjson").write_text('{"v": 1, "kind": "history"}\n')
    r = CliRunner().invoke(conform, [str(tmp_path), "--glue", "no_such_module:GLUE"])
    assert r.exit_code == 2 and "cannot load glue" in r.output


def test_no_trace_files_is_inconclusive_exit_3(tmp_path):
    """Inputs holding no trace at all: nothing was checked, which is never a clean 0."""
    d = tmp_path / "in"
    d.mkdir()
    (d / "h.ndjson").write_text('{"v": 1, "kind": "history"}\n')
    r = CliRunner().invoke(conform, [str(d), "--out", str(tmp_path / "o")])
    assert r.exit_code == 3 and "no trace files" in r.output
    doc = json.loads((tmp_path / "o" / "conform.json").read_text())
    assert (doc["verdict"], doc["exit_code"], doc["totals"]["traces"]) == ("inconclusive", 3, 0)
    assert doc["totals"]["ignored_files"][0]["path"].endswith("h.ndjson")


@pytest.mark.tlc
def test_timeout_is_inconclusive_exit_3(relay, tmp_path):
    """A TLC run stopped by --timeout decides nothing: the trace is undecided, the command exits 3."""
    d = tmp_path / "c"
    d.mkdir()
    relay.write_trace(d / "a.ndjson", 1, 60)
    r = CliRunner().invoke(conform, [str(d), "--glue", GLUE, "--out", str(tmp_path / "o"), "--timeout", "0.2"])
    assert r.exit_code == 3, r.output
    doc = json.loads((tmp_path / "o" / "conform.json").read_text())
    assert doc["verdict"] == "inconclusive" and doc["totals"]["timeouts"] == doc["totals"]["errors"] == 1
    assert "undecided: TLC reached --timeout" in doc["summary"]


def test_unknown_protocol_is_an_error_not_a_crash(tmp_path):
    p = tmp_path / "t.ndjson"
    p.write_text('{"v": 1, "kind": "trace", "protocol": "paxos", "spec": "Paxos", "constants": {}}\n')
    r = CliRunner().invoke(conform, [str(p), "--out", str(tmp_path / "o")])
    assert r.exit_code == 2 and "no conformance glue for protocol 'paxos'" in r.output.replace("\n", "")


@pytest.mark.tlc
def test_malformed_trace_is_rejected_not_crashing(tmp_path):
    p = tmp_path / "t.ndjson"
    p.write_text('{"v": 1, "kind": "trace", "protocol": "relay", "spec": "Relay", "constants": {}}\n{"i": 1,\n')
    r = CliRunner().invoke(conform, [str(p), "--out", str(tmp_path / "o")])
    assert r.exit_code == 1 and "malformed_json" in r.output and "Traceback" not in r.output


@pytest.mark.spark
@pytest.mark.tlc
def test_spark_mode_writes_parquet(relay, tmp_path):
    import pyarrow.parquet as pq

    d = _corpus(relay, tmp_path / "c", bad=True)
    out = tmp_path / "out"
    r = CliRunner().invoke(conform, [str(d), "--glue", GLUE, "--out", str(out), "--spark", "--batch", "2"])
    assert r.exit_code == 1, r.output
    table = pq.read_table(out / "conform.parquet").to_pydict()
    verdicts = dict(zip((Path(t).name for t in table["trace"]), table["verdict"]))
    assert verdicts == {"a.ndjson": "accepted", "b.ndjson": "accepted", "bad.ndjson": "rejected"}
    i = table["verdict"].index("rejected")
    assert table["disagree"][i] == ["val"] and table["line"][i] > 1
