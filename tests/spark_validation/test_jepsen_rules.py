"""jepsen.tests.kafka rules that need a whole audit run (the per-rule micro-histories that all
three engines check are in tests/spark_validation/cases.py, names starting ``jepsen-``)."""

from __future__ import annotations

import json
from pathlib import Path

from spark_validation.audit import AuditOptions, run
from spark_validation.report.outputs import result_json
from tests.spark_validation.cases import H


def _audit(tmp_path: Path, h: H, name: str, **opts) -> dict:
    f = h.write_ndjson(tmp_path / f"{name}.ndjson")
    rep = run(AuditOptions(paths=(str(f),), out=tmp_path / "out", no_spark=True, **opts), progress=lambda m: None)
    (res,) = rep.results
    return result_json(res)  # the results.json entry


def test_empty_transaction_graph_is_not_valid(tmp_path: Path) -> None:
    # Elle (elle.txn/cycles) flags an empty graph as :empty-transaction-graph, valid? :unknown;
    # here: Kafka ops, but no completion carries a send or poll result
    h = H()
    h._op(process=0, type="invoke", f="send", key="x", value=1)
    h._op(process=0, type="info", f="send", key="x", value=None)
    h._op(process=1, type="invoke", f="poll", key="x", value=None)
    h._op(process=1, type="ok", f="poll", key="x", value=[])
    res = _audit(tmp_path, h, "empty")
    assert res["valid"] == "unknown"
    assert "empty transaction graph" in res["info"]["kafka"]
    json.dumps(res)


def test_one_result_is_enough_to_check(tmp_path: Path) -> None:
    h = H()
    h.send(0, "x", 1, 0)
    res = _audit(tmp_path, h, "one")  # acknowledged, never polled: Jepsen's :unseen, invalid
    assert res["valid"] is False and [a["kind"] for a in res["anomalies"]] == ["unseen"]
    res = _audit(tmp_path, h, "one", allow_unseen=True)
    assert res["valid"] is True and [a["evidence"].get("allowed") for a in res["anomalies"]] == [True]
