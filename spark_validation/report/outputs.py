"""The audit's outputs under ``--out``: ``results.json``, ``malformed.json``, ``results.parquet``,
``anomalies.parquet``, and ``summary.json`` (the shared header of every kraft command, written
last, when every history is decided). The typed results become JSON here and nowhere else
(:func:`result_json`, :func:`malformed_json`, :func:`anomaly_rows`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from kraft.outcome import write_document
from spark_validation.checks.anomaly import entry_json
from spark_validation.engine.result import HistoryResult
from spark_validation.ingest.records import Malformed
from spark_validation.report.report import AuditReport

DOCUMENTS = ("results.json", "malformed.json", "summary.json")  # summary.json, with the header, last


def result_json(r: HistoryResult) -> dict[str, Any]:
    """One history's ``results.json`` entry: ``history, model, valid, ops, seconds, anomalies
    (each {"kind", "key", "evidence"}), checks`` and, where set, ``malformed``, ``info``,
    ``malformed_lines``."""
    out: dict[str, Any] = {"history": r.history, "model": r.model, "valid": r.valid, "ops": r.ops,
                           "seconds": r.seconds, "anomalies": [entry_json(a) for a in r.anomalies], "checks": r.checks}
    if r.malformed is not None:
        out["malformed"] = r.malformed
    if r.info is not None:
        out["info"] = r.info.to_json()
    if r.malformed_lines:
        out["malformed_lines"] = r.malformed_lines
    return out


def malformed_json(m: Malformed) -> dict[str, Any]:
    """One ``malformed.json`` entry: ``scope, path, line, reason`` and, for a line, its ``text``."""
    out: dict[str, Any] = {"scope": m.scope, "path": m.path, "line": m.line, "reason": m.reason}
    if m.text is not None:
        out["text"] = m.text
    return out


def anomaly_rows(report: AuditReport) -> list[dict[str, Any]]:
    """Every anomaly of the report as an ``anomalies.parquet`` row: ``history, kind, key,
    evidence`` (the evidence as JSON text)."""
    rows = []
    for history, a in report.anomalies:
        d = entry_json(a)
        rows.append({"history": history, "kind": d["kind"], "key": None if d["key"] is None else str(d["key"]),
                     "evidence": json.dumps(d["evidence"], default=str)})
    return rows


def write_outputs(report: AuditReport, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    results = [result_json(r) for r in report.results]
    write_document(out / "results.json", json.dumps(results, indent=1, default=str) + "\n")
    write_document(out / "malformed.json", json.dumps([malformed_json(m) for m in report.malformed], indent=1, default=str) + "\n")
    res_tbl = pa.Table.from_pylist(
        [{"history": r["history"], "model": r["model"], "valid": str(r["valid"]).lower(), "ops": r["ops"],
          "seconds": float(r["seconds"]), "anomalies": json.dumps(r["anomalies"], default=str),
          "malformed": r.get("malformed")} for r in results],
        schema=pa.schema([("history", pa.string()), ("model", pa.string()), ("valid", pa.string()),
                          ("ops", pa.int64()), ("seconds", pa.float64()), ("anomalies", pa.string()),
                          ("malformed", pa.string())]))
    pq.write_table(res_tbl, out / "results.parquet")
    an_tbl = pa.Table.from_pylist(
        anomaly_rows(report),
        schema=pa.schema([("history", pa.string()), ("kind", pa.string()), ("key", pa.string()),
                          ("evidence", pa.string())]))
    pq.write_table(an_tbl, out / "anomalies.parquet")
    write_document(out / "summary.json", json.dumps(report.document(), indent=1, default=str) + "\n")
