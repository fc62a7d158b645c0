"""Spark ingest: Parquet op tables -> the op table; the pairing rule as a Spark job; text files
as numbered lines.

History files never pass through here: ``kraft audit`` reads them with the history reader's fast
row readers (:func:`spark_validation.ingest.rows.read_rows`) inside its Spark tasks, and they reach
Spark DataFrames only as the Parquet op table those tasks can write (``ops.parquet``), which a
later audit of that table reads with :func:`load`.

* Parquet: a table with the op columns (``history`` id column required), e.g. the
  ``ops.parquet`` an earlier audit wrote.
* :func:`file_lines`: the lines of text files with their real 1-based file line, derived from
  the hidden ``_metadata`` columns: rows of one file block arrive in file order inside a
  partition, so ``monotonically_increasing_id`` minus the block's first id is the line within
  the block, and a running sum of earlier blocks' line counts makes it a file line.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterable

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from spark_validation.ingest.records import InputError, require_op_columns
from spark_validation.ingest.rows import Rows, structure_problem
from spark_validation.ingest.spark_schema import OPS_SCHEMA

PROBLEM_DDL = "history string, line bigint, reason string"
_PROBLEM_TYPES = (pa.string(), pa.int64(), pa.string())


def file_lines(spark: "SparkSession", paths: list[str]) -> "DataFrame":
    """``(path, line, text)`` for every line of the given text files, with real line numbers."""
    raw = spark.read.text(paths).select(
        F.col("value").alias("text"),
        F.url_decode(F.regexp_replace(F.col("_metadata.file_path"), r"^file:(//)?", "")).alias("abs"),
        F.col("_metadata.file_block_start").alias("block"),
        F.monotonically_increasing_id().alias("mid"),
    )
    blocks = raw.groupBy("abs", "block").agg(F.min("mid").alias("mid0"), F.count("*").alias("n"))
    w = Window.partitionBy("abs").orderBy("block").rowsBetween(Window.unboundedPreceding, -1)
    blocks = blocks.withColumn("before", F.coalesce(F.sum("n").over(w), F.lit(0)))
    mapping = spark.createDataFrame([(str(Path(p).resolve()), p) for p in paths], "abs string, path string")
    return (raw.join(F.broadcast(blocks.select("abs", "block", "mid0", "before")), ["abs", "block"])
            .join(F.broadcast(mapping), "abs", "left")
            .select(F.coalesce("path", "abs").alias("path"),
                    (F.col("before") + F.col("mid") - F.col("mid0") + 1).alias("line"), "text"))


def read_parquet(spark: "SparkSession", paths: list[str], model: str | None) -> "DataFrame":
    """Op rows of Parquet tables written by the audit (``ops.parquet``) or in the same shape.

    Required: ``history``, ``type``, ``f``; the other op columns are filled when absent (``line``
    from the row order is NOT guessed: a table without ``line`` must have ``index``).
    """
    out = None
    for path in paths:
        df = spark.read.parquet(path)
        cols = set(df.columns)
        require_op_columns(path, cols)
        if "line" not in cols and "index" not in cols:
            raise InputError(f"{path}: Parquet table needs a 'line' or 'index' column to order ops")
        sel = []
        for field in OPS_SCHEMA.fields:
            if field.name in cols:
                sel.append(F.col(field.name).cast(field.dataType).alias(field.name))
            elif field.name == "line":
                sel.append(F.col("index").cast("bigint").alias("line"))
            elif field.name == "index":
                sel.append(F.col("line").cast("bigint").alias("index"))
            else:
                sel.append(F.lit(None).cast(field.dataType).alias(field.name))
        df = df.select(*sel)
        if model:  # --model is the default for rows naming none (as for files)
            df = df.withColumn("model", F.coalesce(F.col("model"), F.lit(model)))
        out = df if out is None else out.unionByName(df)
    return out


def load(spark: "SparkSession", tables: Iterable[Path], model: str | None) -> "DataFrame":
    """The op table (:data:`OPS_SCHEMA`) of the Parquet op ``tables``."""
    ops = spark.createDataFrame([], OPS_SCHEMA)
    paths = [str(p) for p in tables]
    return ops.unionByName(read_parquet(spark, paths, model)) if paths else ops


def pairing_problems(ops: "DataFrame") -> "DataFrame":
    """``(history, line, reason)``: the first problem per history of Jepsen's pairing rule, found
    in the executors by the in-process path's own function (:func:`first_problem`)."""
    return (ops.select("history", "line", "index", "process", "type", "f")
            .groupBy("history").applyInArrow(first_problem, PROBLEM_DDL))


def first_problem(t: pa.Table) -> pa.Table:
    """The ``applyInArrow`` function of :func:`pairing_problems`: the op rows of one history ->
    its first pairing problem (:func:`spark_validation.ingest.rows.structure_problem`), as no row
    or one row of :data:`PROBLEM_DDL`."""
    t = t.sort_by("line")
    rows = Rows(t.column("history")[0].as_py() if t.num_rows else "")
    for name in ("line", "index", "process", "type", "f"):
        setattr(rows, name, t.column(name).to_pylist())
    got = structure_problem(rows) if t.num_rows else None
    found = [] if got is None else [(rows.history, rows.line[got[0]], got[1])]
    return pa.table([pa.array([x[i] for x in found], typ) for i, typ in enumerate(_PROBLEM_TYPES)],
                    names=["history", "line", "reason"])
