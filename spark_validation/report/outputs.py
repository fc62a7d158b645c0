"""The audit's outputs under ``--out``: ``results.json``, ``malformed.json``, ``results.parquet``,
``anomalies.parquet``, and ``summary.json`` (the shared header of every kraft command, written
last, when every history is decided)."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from kraft.outcome import write_document
from spark_validation.report.report import AuditReport

DOCUMENTS = ("results.json", "malformed.json", "summary.json")  # summary.json, with the header, last


def write_outputs(report: AuditReport, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    write_document(out / "results.json",
                   json.dumps([r.to_json() for r in report.results], indent=1, default=str) + "\n")
    write_document(out / "malformed.json", json.dumps(report.malformed, indent=1, default=str) + "\n")
    res_tbl = pa.Table.from_pylist(
        [{"history": r.history, "model": r.model, "valid": str(r.valid).lower(), "ops": r.ops,
          "seconds": float(r.seconds), "anomalies": json.dumps(r.anomalies, default=str),
          "malformed": r.malformed} for r in report.results],
        schema=pa.schema([("history", pa.string()), ("model", pa.string()), ("valid", pa.string()),
                          ("ops", pa.int64()), ("seconds", pa.float64()), ("anomalies", pa.string()),
                          ("malformed", pa.string())]))
    pq.write_table(res_tbl, out / "results.parquet")
    an_tbl = pa.Table.from_pylist(
        [{"history": a["history"], "kind": a["kind"], "key": None if a["key"] is None else str(a["key"]),
          "evidence": json.dumps(a["evidence"], default=str)} for a in report.anomalies],
        schema=pa.schema([("history", pa.string()), ("kind", pa.string()), ("key", pa.string()),
                          ("evidence", pa.string())]))
    pq.write_table(an_tbl, out / "anomalies.parquet")
    write_document(out / "summary.json", json.dumps(report.document(), indent=1, default=str) + "\n")
