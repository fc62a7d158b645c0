"""The typed results the engines hand to the report: what the per-file function both engines
run (``engine.history.check_file``) gives back for each kind of file, that the outcome survives
pickling (a Spark task sends it to the driver that way), the malformed entries as
``malformed.json`` has them, and the metadata check of traces."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest

from spark_validation.checks.agreement import KIND, Divergence, check_traces_local
from spark_validation.engine.history import check_file
from spark_validation.engine.result import FileOutcome
from spark_validation.ingest.records import MALFORMED_TEXT, Malformed
from spark_validation.options import AuditOptions
from spark_validation.report.outputs import malformed_json
from tests.spark_validation.corpus import build


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> tuple[Path, dict]:
    root = tmp_path_factory.mktemp("corpus")
    return root, build(root)


OPTS = AuditOptions(paths=())


def test_a_history_with_unreadable_lines(corpus) -> None:
    root, exp = corpus
    path = str(root / "malformed" / "lines.ndjson")
    out = check_file(path, OPTS)
    assert isinstance(out, FileOutcome) and not out.trace and out.skip is None and out.history_bad is None
    assert {(m.scope, m.path, m.line) for m in out.malformed} == {("line", p, ln) for p, ln in exp["malformed_lines"]}
    assert [m.text for m in out.malformed if m.line == 3] == ["this is not json"]
    assert out.result is not None and out.result.history == path and out.result.valid is True
    n_ops = len(Path(path).read_text().splitlines()) - 1 - len(exp["malformed_lines"])  # less the header
    assert out.ops == out.result.ops == n_ops and out.rows is None
    assert {"read", "kafka", "cpu"} <= set(out.secs)
    assert pickle.loads(pickle.dumps(out)) == out


def test_keep_rows_carries_the_op_table(corpus) -> None:
    root, _ = corpus
    out = check_file(str(root / "kafka" / "valid.ndjson"), OPTS, keep_rows=True)
    assert out.rows is not None and out.rows.num_rows == out.ops > 0
    assert set(out.rows.column("history").to_pylist()) == {str(root / "kafka" / "valid.ndjson")}


def test_a_history_whose_ops_do_not_pair_up(corpus) -> None:
    _, exp = corpus
    out = check_file(exp["unpaired"], OPTS)
    assert out.history_bad is not None
    assert (out.history_bad.scope, out.history_bad.path, out.history_bad.line) == ("history", exp["unpaired"], 2)
    assert out.history_bad.reason.startswith("malformed history: ") and out.history_bad.text is None
    assert out.result is not None and out.result.valid == "unknown" and out.result.malformed


def test_a_file_that_is_not_a_history_is_skipped(corpus) -> None:
    _, exp = corpus
    out = check_file(exp["skipped"][0], OPTS)
    assert out.result is None and not out.trace and out.ops == 0
    assert out.skip == Malformed("file", exp["skipped"][0], 1, out.skip.reason)
    assert out.skip.reason.startswith("not a history: one JSON object")


def test_a_trace_is_left_to_the_metadata_check(tmp_path) -> None:
    p = tmp_path / "t.ndjson"
    p.write_text('{"v": 1, "kind": "trace", "spec": "KRaft"}\n')
    assert check_file(str(p), OPTS) == FileOutcome(str(p), trace=True)


def test_malformed_entries_as_json() -> None:
    """A line keeps the start of its text; a history or a file has none (malformed.json)."""
    line = Malformed.of_line(Path("h.ndjson"), 3, "op has no type", "x" * (MALFORMED_TEXT + 50))
    assert malformed_json(line) == {"scope": "line", "path": "h.ndjson", "line": 3, "reason": "op has no type",
                                    "text": "x" * MALFORMED_TEXT}
    assert list(malformed_json(Malformed("file", "t.parquet", None, "unreadable"))) == ["scope", "path", "line",
                                                                                        "reason"]


def test_the_metadata_check_of_traces_is_typed(corpus, tmp_path) -> None:
    """``check_traces_local``: steps per trace, a ``Divergence`` per diverging trace, the lines
    that are not steps as ``Malformed`` line entries."""
    _, exp = corpus
    bad = tmp_path / "bad.ndjson"
    lines = Path(exp["agree"]).read_text().splitlines()
    bad.write_text("\n".join(lines[:2] + ["{not json"] + lines[2:]) + "\n")
    found = check_traces_local([exp["agree"], exp["diverge"], str(bad)])
    assert found.steps == {exp["agree"]: 4, exp["diverge"]: 3, str(bad): 4}
    assert list(found.divergences) == [exp["diverge"]]
    div = found.divergences[exp["diverge"]]
    assert isinstance(div, Divergence) and div.kind == KIND and div.evidence.offset == 1
    assert [(m.scope, m.path, m.line, m.text) for m in found.malformed] == [("line", str(bad), 3, "")]
