"""Issue 15 (hostile input): one test per reported defect, in-process (no Spark, no TLC).

Each test reproduces the defect as the issue describes it; the comment says what happened before.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from kraft.groups.assignors.cli import assign
from kraft.outcome import EXIT_ERROR, EXIT_INCONCLUSIVE, EXIT_OK
from kraft.review.page import report
from kraft.sim.cli import simulate
from spark_validation.cli import audit, unknown_reason
from spark_validation.checks.linearizable import LinInfo, Undecided
from spark_validation.engine.result import HistoryInfo, HistoryResult

FIXTURES = Path(__file__).resolve().parents[1] / "spark_validation" / "fixtures"
GOOD = FIXTURES / "reg_valid_concurrent.ndjson"  # a valid register history (6 ops)


def run(cmd, args):
    res = CliRunner().invoke(cmd, [str(a) for a in args])
    assert res.exception is None or isinstance(res.exception, SystemExit), res.output
    assert "Traceback" not in res.output
    return res


def _audit(tmp_path: Path, *paths, extra=()):
    out = tmp_path / "out"
    res = run(audit, [*paths, "--no-spark", "--out", out, *extra])
    results = json.loads((out / "results.json").read_text()) if (out / "results.json").exists() else None
    malformed = json.loads((out / "malformed.json").read_text()) if (out / "malformed.json").exists() else None
    return res, results, malformed


# -- 1. tracebacks ---------------------------------------------------------------------------


@pytest.mark.parametrize("junk", [b"not parquet at all" * 5, b"PAR1" + b"\x00" * 40 + b"PAR1", b"PAR1"])
def test_corrupt_parquet_beside_good_history_is_a_counted_skip(tmp_path, junk):
    """Before: ArrowInvalid traceback, and the good history beside it was lost."""
    d = tmp_path / "corpus"
    d.mkdir()
    (d / "good.ndjson").write_bytes(GOOD.read_bytes())
    (d / "bad.parquet").write_bytes(junk)
    res, results, malformed = _audit(tmp_path, d)
    assert res.exit_code == EXIT_OK, res.output
    assert [r["history"] for r in results] == [str(d / "good.ndjson")] and results[0]["valid"] is True
    skipped = [m for m in malformed if m["scope"] == "file"]
    assert skipped and skipped[0]["path"] == str(d / "bad.parquet")
    assert "unreadable Parquet" in skipped[0]["reason"] and "bad.parquet" in res.output


def _deep(n: int, kind: str) -> str:
    return "[" * n + "]" * n if kind == "vec" else '{"a":' * n + "1" + "}" * n


@pytest.mark.parametrize("depth", [150, 5000, 100_000])
def test_deeply_nested_ndjson_value_is_a_malformed_line(tmp_path, depth):
    """Before: RecursionError traceback (exit 1, read as 'violation found')."""
    p = tmp_path / "h.ndjson"
    lines = GOOD.read_text().splitlines()
    lines.insert(2, '{"index": 50, "process": 9, "type": "invoke", "f": "write", "value": ' + _deep(depth, "vec") + "}")
    p.write_text("\n".join(lines) + "\n")
    res, results, malformed = _audit(tmp_path, p)
    assert res.exit_code == EXIT_OK, res.output
    bad = [m for m in malformed if m["scope"] == "line"]
    assert len(bad) == 1 and bad[0]["line"] == 3 and "nested deeper than 100 levels" in bad[0]["reason"]
    assert results[0]["malformed_lines"] == 1  # and the verdict says so (defect 3)


@pytest.mark.parametrize("depth,shape", [(150, "[]"), (5000, "[]"), (150, "()"), (5000, "{}"), (5000, "#a ")])
def test_deeply_nested_edn_value_is_a_malformed_line(tmp_path, depth, shape):
    """Before: RecursionError traceback from spark_validation/edn.py."""
    p = tmp_path / "h.edn"
    if shape == "#a ":
        value = "#a " * depth + "1"
    else:
        value = shape[0] * depth + shape[-1] * depth if shape != "{}" else "{:a " * depth + "1" + "}" * depth
    p.write_text("{:type :invoke, :f :write, :value 1, :process 0}\n"
                 "{:type :ok, :f :write, :value 1, :process 0}\n"
                 f"{{:type :invoke, :f :write, :value {value}, :process 1}}\n")
    (tmp_path / "h.edn.model").write_text("register\n")
    res, results, malformed = _audit(tmp_path, p)
    assert res.exit_code in (EXIT_OK, EXIT_INCONCLUSIVE), res.output
    assert any(m["line"] == 3 and "nested deeper" in m["reason"] for m in malformed), malformed


def test_deeply_nested_trace_line_is_a_problem_not_a_crash():
    """Before: conform crashed with RecursionError (docs/conformance.md: never crashes)."""
    from traces.schema import parse_trace

    header = b'{"v": 1, "kind": "trace", "protocol": "kraft", "spec": "KRaft", "constants": {}}\n'
    for depth in (150, 5000, 100_000):
        tr = parse_trace(header + b'{"i": 0, "x": ' + _deep(depth, "vec").encode() + b"}\n", "t.ndjson")
        assert tr.problem is not None and tr.problem.kind == "malformed_json" and tr.problem.line == 2
        assert "nested deeper" in tr.problem.message


def test_conform_expand_inputs_survives_deep_header(tmp_path):
    from traces.check import expand_inputs

    (tmp_path / "x.ndjson").write_text("[" * 5000 + "]" * 5000 + "\n")
    paths, ignored = expand_inputs([str(tmp_path)])
    assert paths == [tmp_path / "x.ndjson"]  # handed to the reader, which rejects it with its line


def test_report_on_an_audit_directory_renders_it(tmp_path):
    """The page reads an audit's output as it reads a review's (it once failed with 'KeyError:
    stages', then refused it as 'not a `kraft review` summary')."""
    _audit(tmp_path, GOOD)
    d = tmp_path / "out"
    res = run(report, [d])
    assert res.exit_code == 0, res.output
    assert "(1 audit)" in res.output and (d / "report.html").exists()


@pytest.mark.parametrize("text,needle", [("not json{", ":1: not JSON (column 1"),
                                         ('{"command": "review",\n "stages": ', ":2: not JSON"),
                                         ("[1, 2]", "top level is a list, not an object with the kraft header")])
def test_report_on_a_corrupt_summary(tmp_path, text, needle):
    (tmp_path / "summary.json").write_text(text)
    res = run(report, [tmp_path])
    assert res.exit_code == EXIT_ERROR and needle in res.output, res.output


def _group(tmp_path: Path, text: str | bytes) -> Path:
    p = tmp_path / "g.json"
    p.write_bytes(text if isinstance(text, bytes) else text.encode())
    return p


def test_assign_partition_racks_as_a_list(tmp_path):
    """Before: AttributeError traceback."""
    p = _group(tmp_path, '{"partitions": {"t": 3}, "members": {"a": {"topics": ["t"]}},\n "partition_racks": ["r1"]}')
    res = run(assign, [p])
    assert res.exit_code == EXIT_ERROR and f'{p}:2: "partition_racks" must be an object' in res.output


def test_assign_non_utf8_file(tmp_path):
    """Before: UnicodeDecodeError traceback."""
    p = _group(tmp_path, b'{"partitions": {"t": 3},\n "members": {"a\xff": {"topics": ["t"]}}}')
    res = run(assign, [p])
    assert res.exit_code == EXIT_ERROR and f"{p}:2: not UTF-8 (byte 0xff" in res.output


def test_assign_json_into_missing_directory(tmp_path):
    """Already an error before this pass (exit 2, names the path); kept as a regression test."""
    p = _group(tmp_path, '{"partitions": {"t": 3}, "members": {"a": {"topics": ["t"]}}}')
    res = run(assign, [p, "--json", tmp_path / "nope" / "x.json"])
    assert res.exit_code == EXIT_ERROR and f"cannot write {tmp_path / 'nope' / 'x.json'}" in res.output


def test_assign_partition_count_is_bounded(tmp_path):
    """Before: {"t": 10**12} ran the assignor until memory ran out."""
    p = _group(tmp_path, '{"partitions": {"t": 999999, "u": 999999999999}, "members": {"a": {"topics": ["t"]}}}')
    res = run(assign, [p])
    assert res.exit_code == EXIT_ERROR and "g.json:1: partitions: 1,000,000,999,998 in total" in res.output, res.output


def test_out_under_a_regular_file(tmp_path):
    """Before: NotADirectoryError traceback (audit, simulate; conform is tested in tests/traces)."""
    (tmp_path / "file").write_text("x")
    out = tmp_path / "file" / "sub"
    res = run(audit, [GOOD, "--no-spark", "--out", out])
    assert res.exit_code == EXIT_ERROR and f"{out}: Not a directory" in res.output
    res = run(simulate, ["--steps", "10", "--out", out])
    assert res.exit_code == EXIT_ERROR and f"cannot create --out {out}: Not a directory" in res.output


def test_conform_out_under_a_regular_file(tmp_path):
    from traces.cli import conform

    (tmp_path / "file").write_text("x")
    trace = Path(__file__).resolve().parents[1] / "traces" / "fixtures" / "kraft_fetch_resent_while_outstanding.ndjson"
    res = run(conform, [trace, "--out", tmp_path / "file" / "sub"])
    assert res.exit_code == EXIT_ERROR and "cannot create --out" in res.output and "Not a directory" in res.output


# -- 2. exit 0 although nothing was checked ----------------------------------------------------


def test_misspelt_model_is_a_usage_error(tmp_path):
    res, _, _ = _audit(tmp_path, GOOD, extra=("--model", "cas-registr"))
    assert res.exit_code == EXIT_ERROR and "unknown model 'cas-registr'" in res.output
    assert "cas-register" in res.output  # the known ones are listed


def test_directory_of_only_skipped_files_is_inconclusive(tmp_path):
    d = tmp_path / "c"
    d.mkdir()
    (d / "junk.ndjson").write_bytes(bytes(range(256)) * 3)
    (d / "v2.ndjson").write_text('{"v": 2, "kind": "history"}\n{"type": "invoke"}\n')
    (d / "empty.ndjson").write_text("")
    res, results, malformed = _audit(tmp_path, d)
    assert res.exit_code == EXIT_INCONCLUSIVE and results == []
    assert {m["path"] for m in malformed if m["scope"] == "file"} == {str(d / n) for n in
                                                                      ("junk.ndjson", "v2.ndjson", "empty.ndjson")}


@pytest.mark.parametrize("name", ["e.ndjson", "e.edn", "e.json"])
def test_empty_file_is_a_skipped_file_not_a_zero_op_history(tmp_path, name):
    """Before: an empty file was a 0-op history (unknown) in-process and vanished on Spark."""
    (tmp_path / name).write_text("\n\n")
    res, results, malformed = _audit(tmp_path, tmp_path / name)
    assert res.exit_code == EXIT_INCONCLUSIVE and results == []
    assert malformed == [{"scope": "file", "path": str(tmp_path / name), "line": None,
                          "reason": "no operation in the file (empty)"}]


def test_structure_error_is_unknown_and_the_summary_says_why(tmp_path):
    p = tmp_path / "s.ndjson"
    p.write_text('{"v": 1, "kind": "history", "model": "cas-register"}\n'
                 '{"index": 0, "process": 0, "type": "ok", "f": "write", "value": 1}\n')
    res, results, _ = _audit(tmp_path, p)
    assert res.exit_code == EXIT_INCONCLUSIVE
    assert results[0]["valid"] == "unknown"
    assert f"UNKNOWN {p}: malformed history, not checked: ok completion (f='write') of process 0 has no open invocation" \
        in res.output


def test_unknown_reason_reads_budget_and_kafka_reasons():
    def undecided(**kw):
        return HistoryResult("h", None, "unknown", 1, **kw)

    budget = HistoryInfo(lin=LinInfo(unknown_partitions=[Undecided(None, "time budget exhausted", 2, 1, 9)]))
    assert unknown_reason(undecided(info=budget)) == "time budget exhausted"
    assert unknown_reason(undecided(info=HistoryInfo(error="unknown model 'x'"))) == "unknown model 'x'"
    assert unknown_reason(undecided(info=HistoryInfo(kafka="empty transaction graph"))) == "empty transaction graph"
    assert unknown_reason(undecided(info=HistoryInfo(lin=LinInfo(error="malformed history")))) == "malformed history"
    assert unknown_reason(undecided(info=HistoryInfo())) == "undecided (no reason recorded)"
    assert unknown_reason(undecided(malformed="op 3 never completes")).endswith("op 3 never completes")


# -- 3. a history that lost lines says so ----------------------------------------------------


def test_lost_line_is_counted_in_results_and_summary(tmp_path):
    p = tmp_path / "lost.ndjson"
    p.write_text(GOOD.read_text() + '{"index": 99, "process": 0, "type": "invoke"\n')
    res, results, malformed = _audit(tmp_path, p)
    assert res.exit_code == EXIT_OK
    r = results[0]
    assert r["valid"] is True and r["malformed_lines"] == 1
    assert r["info"]["malformed_lines"] == 1 and "1 line(s) could not be read" in r["info"]["scope"]
    assert "valid            1 (1 only for the ops read" in res.output
    assert "1 history valid only for the ops read (1 line unreadable)" in res.output
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["valid_with_lost_lines"] == 1 and summary["malformed_lines"] == 1
    assert "valid only for the ops read" in summary["summary"]


def test_intact_history_has_no_lost_line_mark(tmp_path):
    _, results, _ = _audit(tmp_path, GOOD)
    assert "malformed_lines" not in results[0]


# -- 4. kraft assign strict input -------------------------------------------------------------


@pytest.mark.parametrize("extra,key", [('"assignor": "range",', "assignor"), ('"partition_rack": {},', "partition_rack")])
def test_assign_unknown_top_level_key(tmp_path, extra, key):
    p = _group(tmp_path, '{"partitions": {"t": 3},\n' + extra + '\n"members": {"a": {"topics": ["t"]}}}')
    res = run(assign, [p])
    assert res.exit_code == EXIT_ERROR and f"{p}:2: unknown field(s) ['{key}']" in res.output


def test_assign_unknown_member_key_names_the_line(tmp_path):
    p = _group(tmp_path, '{"partitions": {"t": 3},\n"members": {"a": {"topics": ["t"],\n "owend": []}}}')
    res = run(assign, [p])
    assert res.exit_code == EXIT_ERROR and f"{p}:3: members.a: unknown field(s) ['owend']" in res.output


def test_assign_duplicate_member_id(tmp_path):
    """Before: the second "a" silently replaced the first (exit 0)."""
    p = _group(tmp_path, '{"partitions": {"t": 3},\n "members": {"a": {"topics": ["t"]},\n'
                         '  "a": {"topics": ["t"], "rack": "r1"}}}\n')
    res = run(assign, [p])
    assert res.exit_code == EXIT_ERROR and f"{p}:3: duplicate key 'a' (first at line 2)" in res.output


# -- 5. messages --------------------------------------------------------------------------------


def test_missing_path_is_named_not_the_errno(tmp_path):
    res = run(audit, [tmp_path / "nope", "--no-spark", "--out", tmp_path / "o"])
    assert res.exit_code == EXIT_ERROR and f"no such file or directory: {tmp_path / 'nope'}" in res.output
    res = run(audit, [GOOD, "--no-spark", "--out", "/proc/nope/x"])
    assert res.exit_code == EXIT_ERROR and "/proc/nope" in res.output and ": 2" not in res.output


def test_edn_cut_line_message_is_a_whole_sentence():
    from spark_validation.ingest.history import parse_history_text

    text = ("{:type :invoke, :f :write, :value 1, :process 0}\n"
            "{:type :ok, :f :write, :value 1, :process 0}\n"
            "{:type :invoke, :f :read, :val")
    ops, bad, _ = parse_history_text(text, "x.edn", "edn")
    assert len(ops) == 2 and len(bad) == 1 and bad[0].line == 3
    assert bad[0].reason == "EDN error at line 3, column 1: '{' opened at line 3, column 1 is not closed (end of input)"


def test_trace_recognised_by_its_header_in_process(tmp_path):
    """Before: in-process, a trace not named trace.ndjson was a skipped file (Spark reads its header),
    so the metadata check silently did not run."""
    src = Path(__file__).resolve().parents[1] / "traces" / "fixtures" / "kraft_fetch_resent_while_outstanding.ndjson"
    (tmp_path / "run1.ndjson").write_text("\n".join(src.read_text().splitlines()[:20]) + "\n")
    res, results, malformed = _audit(tmp_path, tmp_path / "run1.ndjson")
    assert res.exit_code == EXIT_OK, res.output
    assert [(r["history"], r["model"], r["checks"]) for r in results] == [
        (str(tmp_path / "run1.ndjson"), "kraft-metadata", ["metadata"])]
    assert malformed == []


def test_edn_op_with_a_map_as_key_is_a_malformed_line():
    """Found by atheris (tests/hostile/atheris_fuzz.py): before, TypeError: unhashable type: 'dict'."""
    from spark_validation.ingest.history import parse_history_text

    text = ("{:type :invoke, :f :write, :value 1, :process 0}\n"
            "{:type :invoke, {:a 1} 2, :f :write, :value 1, :process 0}\n"
            "{:type :ok, :f :write, :value 1, :process 0}\n")
    ops, bad, _ = parse_history_text(text, "x.edn", "edn")
    assert len(ops) == 2 and [(b.line, b.reason) for b in bad] == [
        (2, "op map has a FrozenMap as a key, not a keyword or string")]


def test_manifest_nested_too_deeply_is_a_manifest_error(tmp_path):
    """Found by the long Hypothesis run (test_manifest_reader_long): tomllib's RecursionError."""
    from model_check.specs import ManifestError, load_manifest

    p = tmp_path / "M.toml"
    p.write_text('module = "M"\nx = ' + "[" * 5000 + "]" * 5000 + "\n")
    with pytest.raises(ManifestError, match="nested too deeply"):
        load_manifest(p)
    p.write_bytes(b'module = "M"\n\xff = 1\n')
    with pytest.raises(ManifestError, match=r"M.toml:2: not UTF-8"):
        load_manifest(p)


@pytest.mark.parametrize("blank", ["\t", " ", ",", "\n", ";;\n"])
def test_edn_long_blank_run_before_a_bad_token_is_linear(blank):
    """Found by atheris: the EDN tokenizer's nested ``(?:[\\s,]+|...)*`` backtracked exponentially
    over a run of blanks before a token the fast path does not take (62 tabs: seconds)."""
    import time

    from spark_validation.ingest.edn import EdnError
    from tests.spark_validation.readers import loads_all

    text = "[:a" + blank * 5000 + "#{}" + blank * 5000 + "(" + blank * 5000 + "]"
    t = time.perf_counter()
    with pytest.raises(EdnError):
        list(loads_all(text, "x.edn"))
    assert time.perf_counter() - t < 2.0


# -- 4. the in-process engine reads a file as Spark does (tests/hostile/test_differential.py) -----


def test_non_utf8_ndjson_costs_only_its_line(tmp_path):
    """Before: the whole file was one skipped file in-process (Spark: lines)."""
    d = tmp_path / "corpus"
    d.mkdir()
    lines = GOOD.read_bytes().split(b"\n")
    junk = b'{"process": 5, "type": "invoke", "f": "\xe9crire", "value": 1}'
    (d / "h.ndjson").write_bytes(b"\n".join(lines[:2] + [junk] + lines[2:]))
    _, results, malformed = _audit(tmp_path, d)
    assert [(m["scope"], m["line"], m["reason"]) for m in malformed] == [("line", 3, "not UTF-8 text")]
    assert results[0]["ops"] == 6 and results[0]["malformed_lines"] == 1


def test_line_ends_are_sparks(tmp_path):
    """Before: U+2028 inside a JSON string split the line in-process (str.splitlines)."""
    d = tmp_path / "corpus"
    d.mkdir()
    text = GOOD.read_text().replace('"write"', '"wr\u2028ite"', 1).replace("\n", "\r\n")
    (d / "h.ndjson").write_text(text)
    _, results, malformed = _audit(tmp_path, d)
    assert [m for m in malformed if m["scope"] == "line"] == []
    assert results[0]["ops"] == 6


def test_structure_error_names_its_file_line(tmp_path):
    """Before: line null in-process (Spark: the file line)."""
    d = tmp_path / "corpus"
    d.mkdir()
    header = GOOD.read_text().splitlines()[0]
    (d / "h.ndjson").write_text(header + '\n\n{"index": 0, "process": 0, "type": "ok", "f": "write", "value": 1}\n')
    _, _, malformed = _audit(tmp_path, d)
    assert [(m["scope"], m["line"]) for m in malformed] == [("history", 3)]


def test_header_only_file_is_a_skipped_file(tmp_path):
    """Before: a 0-op history in-process (nothing on Spark)."""
    d = tmp_path / "corpus"
    d.mkdir()
    (d / "h.ndjson").write_text('{"v": 1, "kind": "history", "model": "register"}\n')
    res, results, malformed = _audit(tmp_path, d)
    assert res.exit_code == EXIT_INCONCLUSIVE and not results
    assert [(m["scope"], m["reason"]) for m in malformed] == [("file", "no operation in the file (only a header)")]


def test_a_file_of_malformed_lines_is_one_skipped_file(tmp_path):
    d = tmp_path / "corpus"
    d.mkdir()
    (d / "h.ndjson").write_bytes(b"\x00\x01\n\n{nope\n")
    _, _, malformed = _audit(tmp_path, d)
    assert [(m["scope"], m["line"], m["reason"]) for m in malformed] == \
        [("file", 1, "no operation could be read (2 malformed lines, the first at line 1)")]


@pytest.mark.parametrize("bad", ["Infinity", "-Infinity", "NaN"])
def test_a_time_of_infinity_or_nan_is_a_malformed_line(tmp_path, bad):
    """Found by the long fuzz run (HOSTILE_EXAMPLES=1500): Python's JSON reader takes
    ``Infinity`` and ``NaN``, and ``int()`` of them was an OverflowError/ValueError traceback."""
    d = tmp_path / "corpus"
    d.mkdir()
    lines = GOOD.read_text().splitlines()
    op = json.loads(lines[1])
    lines[1] = json.dumps(op)[:-1] + f', "time": {bad}}}' if "time" not in op else \
        json.dumps({**op, "time": 0}).replace('"time": 0', f'"time": {bad}')
    (d / "h.ndjson").write_text("\n".join(lines) + "\n")
    res, results, malformed = _audit(tmp_path, d)
    bad_lines = [m for m in malformed if m["scope"] == "line"]
    assert len(bad_lines) == 1 and bad_lines[0]["line"] == 2 and "bad time" in bad_lines[0]["reason"], malformed
    assert results[0]["malformed_lines"] == 1
