"""``kraft audit --no-spark``: the whole command in-process (no JVM)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from spark_validation.cli import audit
from spark_validation.checks.agreement import check_trace_file
from tests.spark_validation.cases import CASES
from tests.spark_validation.corpus import build, expected_verdicts, trace_lines


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> tuple[Path, dict]:
    root = tmp_path_factory.mktemp("corpus")
    return root, build(root)


@pytest.fixture(scope="module")
def local_run(corpus, tmp_path_factory):
    root, _ = corpus
    out = tmp_path_factory.mktemp("out")
    # --store-kafka-rows also writes the op table (ops.parquet), which test_parquet_round_trip reads
    res = CliRunner().invoke(audit, [str(root), "--no-spark", "--out", str(out), "--store-kafka-rows"])
    return res, out


def test_exit_code_and_summary(local_run) -> None:
    res, _ = local_run
    assert res.exit_code == 1, res.output
    assert "violations by kind:" in res.output
    assert "lost-write" in res.output and "metadata-divergence" in res.output


def test_results_json_contract(local_run, corpus) -> None:
    root, _ = corpus
    _, out = local_run
    results = json.loads((out / "results.json").read_text())
    assert isinstance(results, list)
    for r in results:
        assert {"history", "model", "valid", "ops", "seconds", "anomalies"} <= set(r)
        assert r["valid"] in (True, False, "unknown")
        assert isinstance(r["ops"], int) and r["ops"] > 0
        assert isinstance(r["seconds"], float) and r["seconds"] >= 0
        for a in r["anomalies"]:
            assert set(a) == {"kind", "key", "evidence"}
    verdicts = {r["history"]: r["valid"] for r in results}
    assert verdicts == expected_verdicts(root)
    for f in ("results.parquet", "anomalies.parquet", "malformed.json", "ops.parquet"):
        assert (out / f).exists(), f


def test_labelled_evidence_in_results(local_run, corpus) -> None:
    root, _ = corpus
    _, out = local_run
    by_id = {r["history"]: r for r in json.loads((out / "results.json").read_text())}
    for name, (_, exp) in CASES.items():
        got = sorted((a["kind"], a["key"], json.dumps(a["evidence"], sort_keys=True))
                     for a in by_id[str(root / "kafka" / f"{name}.ndjson")]["anomalies"])
        assert got == sorted((k, key, json.dumps(ev, sort_keys=True)) for k, key, ev in exp), name


def test_jepsen_edn_g1a(local_run, corpus) -> None:
    root, _ = corpus
    _, out = local_run
    by_id = {r["history"]: r for r in json.loads((out / "results.json").read_text())}
    g = by_id[str(root / "jepsen" / "g1a.edn")]
    assert [(a["kind"], a["key"], a["evidence"]) for a in g["anomalies"]] == [
        ("G1a", "1", {"value": "7", "offset": 0, "writer": 1, "reader": 3})]


def test_malformed_counted_by_file_and_line(local_run, corpus) -> None:
    _, exp = corpus
    _, out = local_run
    mal = json.loads((out / "malformed.json").read_text())
    lines = {(m["path"], m["line"]) for m in mal if m["scope"] == "line"}
    assert lines == exp["malformed_lines"]
    hist = [m for m in mal if m["scope"] == "history"]
    assert [m["path"] for m in hist] == [exp["unpaired"]]
    assert "no open invocation" in hist[0]["reason"]


def test_metadata_divergence_evidence(corpus) -> None:
    _, exp = corpus
    t = check_trace_file(exp["diverge"])
    assert t.steps == 3
    ev = t.divergence.evidence
    assert (ev.offset, ev.step, ev.nodes) == (1, 3, ("1", "3"))
    assert [e.entry for e in ev.entries] == [{"epoch": 1, "value": "a"}, {"epoch": 1, "value": "b"}]
    assert check_trace_file(exp["agree"]).divergence is None


def test_metadata_non_spec_step_without_state_is_a_step(corpus, tmp_path) -> None:
    """A non-spec step without state left the state unchanged: counted, not malformed; a spec
    step without state is still malformed."""
    _, exp = corpus
    t = check_trace_file(exp["agree"])
    assert (t.steps, t.malformed, t.divergence) == (4, (), None)
    lines = Path(exp["agree"]).read_text().splitlines()
    lines.insert(3, json.dumps({"i": 9, "action": "HandleFetchResponse", "node": 2, "spec": True, "args": {}}))
    (tmp_path / "trace.ndjson").write_text("\n".join(lines) + "\n")
    t = check_trace_file(str(tmp_path / "trace.ndjson"))
    assert (t.steps, t.malformed) == (4, ((4, "step has no state"),))


def test_metadata_catches_a_committed_entry_that_changes(tmp_path) -> None:
    """Same node, later step, different entry at a committed offset: a violation too."""
    lines = trace_lines(False)
    step = json.loads(lines[-1])
    step["i"] = 4
    step["state"]["log"]["1"][1] = {"epoch": 2, "value": "z"}
    p = tmp_path / "trace.ndjson"
    p.write_text("\n".join(lines + [json.dumps(step)]) + "\n")
    div = check_trace_file(str(p)).divergence
    assert div and div.evidence.offset == 1 and div.evidence.step == 4


def test_metadata_reads_a_log_from_its_start_offset(tmp_path) -> None:
    """A log that starts past 0 (a snapshot holds what lies below) is read at its absolute offsets:
    the same entries at the same offsets agree, and the offsets are not taken from 0."""
    lines = trace_lines(False)
    step = json.loads(lines[-1])
    step["i"] = 4
    log, hw = step["state"]["log"], step["state"]["highWatermark"]
    node = next(n for n in log if hw.get(n, 0) >= 2)
    log[node] = log[node][1:]
    step["state"]["logStartOffset"] = {node: 1}
    p = tmp_path / "trace.ndjson"
    p.write_text("\n".join(lines + [json.dumps(step)]) + "\n")
    assert check_trace_file(str(p)).divergence is None
    del step["state"]["logStartOffset"]  # the same log read from 0: its entries move down one offset
    p.write_text("\n".join(lines + [json.dumps(step)]) + "\n")
    assert check_trace_file(str(p)).divergence is not None


def test_parquet_round_trip(local_run, tmp_path) -> None:
    _, out = local_run
    first = {r["history"]: r for r in json.loads((out / "results.json").read_text()) if r["model"] != "kraft-metadata"}
    res = CliRunner().invoke(audit, [str(out / "ops.parquet"), "--no-spark", "--out", str(tmp_path / "o2")])
    assert res.exit_code == 1, res.output
    again = {r["history"]: r for r in json.loads((tmp_path / "o2" / "results.json").read_text())}
    assert set(again) == set(first)
    for hid, r in first.items():
        assert (again[hid]["valid"], again[hid]["anomalies"], again[hid]["ops"]) == (r["valid"], r["anomalies"], r["ops"]), hid


def test_an_audit_without_spark_loads_no_pyspark(local_run, corpus, tmp_path) -> None:
    """``--no-spark`` over every kind of input (history files, traces, a stored op table) in a fresh
    process: the Spark modules, and so pyspark, are never imported."""
    root, _ = corpus
    _, out = local_run
    code = ("import sys\n"
            "from click.testing import CliRunner\n"
            "from spark_validation.cli import audit\n"
            "codes = [CliRunner().invoke(audit, [p, '--no-spark', '--out', o]).exit_code\n"
            "         for p, o in zip(sys.argv[1::2], sys.argv[2::2])]\n"
            "print(codes, sorted(m for m in sys.modules if m.split('.')[0] == 'pyspark')[:3])\n")
    args = [str(root), str(tmp_path / "a"), str(out / "ops.parquet"), str(tmp_path / "b")]
    got = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=300)
    assert got.stdout.strip() == "[1, 1] []", got.stdout + got.stderr[-2000:]


def test_checks_filter_and_clean_exit(corpus, tmp_path) -> None:
    root, _ = corpus
    res = CliRunner().invoke(audit, [str(root / "kafka" / "valid.ndjson"), str(root / "traces" / "agree"),
                                     "--no-spark", "--out", str(tmp_path)])
    assert res.exit_code == 0, res.output
    res = CliRunner().invoke(audit, [str(root / "register"), "--no-spark", "--checks", "kafka",
                                     "--out", str(tmp_path)])
    assert res.exit_code == 3, res.output  # lin not run: no verdict (unknown), so inconclusive
    assert all(r["valid"] == "unknown" for r in json.loads((tmp_path / "results.json").read_text()))


@pytest.mark.parametrize("args, needle", [
    (["/nonexistent/path"], "no such file"),
    (["--checks", "bogus"], "unknown check"),
    (["--initial", "[1 2"], "--initial"),
    (["--budget", "0"], "positive"),
    (["--engine", "dataframe"], "'dataframe' is no longer available"),
    (["--engine", "bogus"], "unknown engine 'bogus'"),
])
def test_usage_errors_exit_2(corpus, tmp_path, args, needle) -> None:
    root, _ = corpus
    argv = args if args[0].startswith("/") else [str(root / "kafka" / "valid.ndjson"), *args]
    res = CliRunner().invoke(audit, [*argv, "--no-spark", "--out", str(tmp_path)])
    assert res.exit_code == 2, res.output
    assert needle in res.output


def test_bad_parquet_table_exit_2(tmp_path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"a": [1]}), tmp_path / "t.parquet")
    res = CliRunner().invoke(audit, [str(tmp_path / "t.parquet"), "--no-spark", "--out", str(tmp_path / "o")])
    assert res.exit_code == 2
    assert "lacks column" in res.output


def test_missing_java_is_a_clear_exit_2(corpus, tmp_path, monkeypatch) -> None:
    from spark_validation import session

    root, _ = corpus
    monkeypatch.setattr(session, "_SESSION", None)
    monkeypatch.setattr(session, "_SC", None)
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "no-jdk"))
    res = CliRunner().invoke(audit, [str(root / "kafka" / "valid.ndjson"), "--out", str(tmp_path / "o")])
    assert res.exit_code == 2, res.output
    assert "java not found" in res.output and "--no-spark" in res.output


def test_ignored_files_are_counted_and_listed(tmp_path) -> None:
    """Files that are not histories, tables or traces are counted and named, not skipped silently;
    model sidecars are not counted."""
    d = tmp_path / "in"
    d.mkdir()
    (d / "h.ndjson").write_text('{"v":1,"kind":"history","model":"kafka"}\n'
                                '{"process":0,"type":"invoke","f":"send","key":1,"value":5}\n'
                                '{"process":0,"type":"ok","f":"send","key":1,"value":[0,5]}\n'
                                '{"process":1,"type":"invoke","f":"poll","key":1,"value":null}\n'
                                '{"process":1,"type":"ok","f":"poll","key":1,"value":[[0,5]]}\n')
    (d / "h.ndjson.model").write_text("kafka\n")
    (d / "README.txt").write_text("notes\n")
    (d / "sub").mkdir()
    (d / "sub" / "run.log").write_text("log\n")
    out = tmp_path / "out"
    res = CliRunner().invoke(audit, [str(d), "--no-spark", "--out", str(out)])
    assert res.exit_code == 0, res.output
    s = json.loads((out / "summary.json").read_text())
    assert s["ignored_files"] == 2
    assert s["ignored"] == [str(d / "README.txt"), str(d / "sub" / "run.log")]
    assert "ignored          2 file(s)" in res.output and "README.txt" in res.output
