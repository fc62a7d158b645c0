"""Kafka kernel rows stored beside an audit's ``ops.parquet`` (``--store-kafka-rows``): where
they are, the manifest naming the op table's files they were made from, and the test that a
later audit may use them (the op table's files are still exactly those)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kraft.outcome import write_document
from spark_validation.checks.kafka import spark as kafka_spark

KAFKA_ROWS = "kafka_rows.parquet"
KAFKA_ROWS_MANIFEST = "kafka_rows.json"


def _parquet_listing(table: Path) -> list[list]:
    """The data files of a Parquet table as ``[relative path, size]``, sorted."""
    table = Path(table)
    files = [Path(f) for f in kafka_spark.stored_files(str(table))]
    return [[str(f.relative_to(table)) if f != table else f.name, f.stat().st_size] for f in files]


def store_kafka_rows(spark: Any, ops: Any, out: Path) -> None:
    """The kernel rows of the op table ``ops``, clustered by history, and their manifest."""
    parts = max(2, spark.sparkContext.defaultParallelism * 2)
    kafka_spark.store(ops, str(out / KAFKA_ROWS), parts)
    write_manifest(out)


def write_manifest(out: Path) -> None:
    """``kafka_rows.json``: the files of ``out/ops.parquet`` the kernel rows were made from."""
    manifest = {"v": 1, "ops_table": "ops.parquet", "ops_files": _parquet_listing(out / "ops.parquet")}
    write_document(out / KAFKA_ROWS_MANIFEST, json.dumps(manifest, indent=1) + "\n")


def stored_kafka_rows(tables: list[Path], histories: list[Path]) -> Path | None:
    """The stored kernel rows to use: only when the run reads exactly one table, it is an
    audit's ``ops.parquet``, and the manifest beside it names exactly its current files (a table
    rewritten since is not trusted: the rows are then re-derived from the op table)."""
    if len(tables) != 1 or histories:
        return None
    table = Path(tables[0])
    rows, manifest = table.parent / KAFKA_ROWS, table.parent / KAFKA_ROWS_MANIFEST
    if table.name != "ops.parquet" or not rows.is_dir() or not manifest.is_file():
        return None
    try:
        doc = json.loads(manifest.read_text())
    except (OSError, ValueError):
        return None
    return rows if doc.get("ops_files") == _parquet_listing(table) else None
