"""The Kafka kernel (:mod:`.kernel`) run by Spark, per partition, without a shuffle where the
layout allows it.

Why per partition: a DataFrame formulation needs one shuffle of the micro-ops by history and
several sorts with window passes over them, and the shuffle plus one sort alone cost more than
the whole check needs. Every anomaly is a property of one history, so if every partition holds
whole histories, no shuffle is needed.

Layout and its verification (nothing depends on the layout silently):

* :func:`kernel_input` turns the op table into kernel rows with narrow transformations only
  (no shuffle), so a table whose partitions hold whole histories (NDJSON/EDN files as ingested,
  ``ops.parquet`` as the audit writes it, or kernel rows stored by :func:`store`) keeps them whole.
* Each task cuts its rows into chunks at history boundaries and checks a chunk at a time; next
  to the anomalies it emits one row per history it checked, with the chunk's id and row count.
* The driver (:func:`collect`) accepts a history only if exactly one chunk saw it. Every input
  row is read by some task, so a history seen by one chunk was seen whole. Histories seen by
  several chunks (a file split across tasks, an unclustered table) have their partial results
  dropped and are checked again after a shuffle: ``groupBy(history).applyInArrow`` with the
  same kernel. The result says how many histories took each path.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Callable, Iterable, Iterator

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark import TaskContext
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from spark_validation.checks.kafka import spark_rows
from spark_validation.checks.kafka.anomaly import KafkaAnomaly
from spark_validation.checks.kafka.kernel import ROW_COLUMNS, check_table
from spark_validation.ingest.chunks import CHUNK_STRIDE, OUT_DDL, ChunkPaths, chunk_paths, history_chunks, out_batch

CHUNK_ROWS = 1 << 20  # rows a task gathers before it checks the whole histories among them

# ------------------------------------------------------------------------------------------
# Spark: per-partition check, verification of the layout, shuffle fallback


def kernel_input(ops: "DataFrame") -> "DataFrame":
    """Kernel rows of the op table: narrow transformations only, so partitions that hold whole
    histories keep holding them."""
    return spark_rows.micro_ops(ops, with_assign=True)


def store(ops: "DataFrame", path: str, parts: int) -> None:
    """Ingest: write the kernel rows as Parquet clustered by history (one shuffle, once), each
    file holding whole histories sorted by (history, seq, pos)."""
    (kernel_input(ops).repartition(parts, "history").sortWithinPartitions("history", "seq", "pos")
     .write.mode("overwrite").parquet(path))


def _check_chunk(t: "pa.Table", chunk: int) -> "pa.RecordBatch":
    anoms = check_table(t)
    return out_batch(anoms, [json.dumps(a.to_json()["evidence"]) for a in anoms], t, chunk)


def _chunks(batches: Iterable["pa.RecordBatch"], base: int, chunk_rows: int) -> Iterator["pa.RecordBatch"]:
    """Check the rows of ``batches`` a chunk at a time, each chunk cut at a history boundary
    (the trailing history waits for the next batches); chunk ids ``base + 0, 1, ...``."""
    for k, t in enumerate(history_chunks(batches, chunk_rows)):
        yield _check_chunk(t, base + k)


def check_partitions(batches: Iterable["pa.RecordBatch"], chunk_rows: int = CHUNK_ROWS) -> Iterator["pa.RecordBatch"]:
    """The ``mapInArrow`` function over kernel rows: anomaly rows and, per chunk, one
    ``(history, chunk, n)`` row per history it saw (``kind`` null)."""
    ctx = TaskContext.get()
    yield from _chunks(batches, (ctx.partitionId() if ctx is not None else 0) * CHUNK_STRIDE, chunk_rows)


def _check_group(t: "pa.Table") -> "pa.Table":
    """The ``applyInArrow`` function of the fallback: one whole history."""
    return pa.Table.from_batches([_check_chunk(t, -1)])


def check(m: "DataFrame", chunk_rows: int = CHUNK_ROWS) -> "DataFrame":
    """The per-partition pass over kernel rows: anomaly rows plus per-chunk history counts."""
    return m.select(*ROW_COLUMNS).mapInArrow(lambda it: check_partitions(it, chunk_rows), OUT_DDL)


def collect(ops: "DataFrame | None" = None, m: "DataFrame | None" = None,
            chunk_rows: int = CHUNK_ROWS) -> tuple[list[KafkaAnomaly], ChunkPaths]:
    """All Kafka anomalies (read back from the anomaly rows' JSON evidence) and which path each
    history took. ``m``: kernel rows stored at ingest (:func:`store`); else from ``ops``."""
    if m is None:
        m = kernel_input(ops)
    rows = check(m, chunk_rows).collect()
    return _verify(rows, lambda: m, "arrow")


# ------------------------------------------------------------------------------------------
# Spark: kernel rows stored as Parquet, read by the Python workers themselves


def stored_files(path: str) -> list[str]:
    """The data files of a Parquet table (sorted, so unit numbers are stable): the kernel rows of
    :func:`store`, or the ``ops.parquet`` an audit writes."""
    p = Path(path)
    if p.is_file():
        return [str(p)]
    return sorted(str(f) for f in p.rglob("*.parquet") if not f.name.startswith((".", "_")))


def check_files(units: Iterable["pa.RecordBatch"], chunk_rows: int = CHUNK_ROWS) -> Iterator["pa.RecordBatch"]:
    """The ``mapInArrow`` function over a table of ``(unit, path)`` rows: each file is read here
    with pyarrow, a record batch at a time, and checked like :func:`check_partitions` (chunk ids
    ``unit * stride + chunk``)."""
    for ub in units:
        for unit, path in zip(ub.column(0).to_pylist(), ub.column(1).to_pylist()):
            batches = pq.ParquetFile(path).iter_batches(batch_size=1 << 17, columns=list(ROW_COLUMNS))
            yield from _chunks(batches, unit * CHUNK_STRIDE, chunk_rows)


def collect_stored(spark, path: str, chunk_rows: int = CHUNK_ROWS) -> tuple[list[KafkaAnomaly], ChunkPaths]:
    """All Kafka anomalies of kernel rows stored by :func:`store`: one Spark task per file, the
    file read by the Python worker (no row passes through the JVM). Verified and, where a
    history spans files or chunks, re-checked after a shuffle, as in :func:`collect`. The files
    must be readable at the same path on every executor (a shared or local file system)."""
    files = stored_files(path)
    if not files:
        return [], ChunkPaths("arrow-files", 0, 0, 0, 0, 0)
    # one partition per file: spark.range puts id i alone in partition i
    units = spark.range(len(files), numPartitions=len(files)).select(
        "id", F.element_at(F.array(*[F.lit(f) for f in files]), F.col("id").cast("int") + 1).alias("path"))
    rows = units.mapInArrow(lambda it: check_files(it, chunk_rows), OUT_DDL).collect()
    return _verify(rows, lambda: spark.read.parquet(*files), "arrow-files")


def _verify(rows: list, source: Callable[[], "DataFrame"], engine: str) -> tuple[list[KafkaAnomaly], ChunkPaths]:
    """Accept each history seen by exactly one chunk; re-check the others after a shuffle."""
    anoms, info = with_split_rechecked(rows, engine, lambda: source().select(*ROW_COLUMNS), _check_group)
    return [KafkaAnomaly.from_json(r.asDict()) for r in anoms], info


def with_split_rechecked(rows: list, engine: str, source: Callable[[], "DataFrame"],
                         per_history: Callable[["pa.Table"], "pa.Table"]) -> tuple[list, ChunkPaths]:
    """The anomaly rows of a per-partition check's output ``rows``: those of each history one
    chunk saw whole, and for a history several chunks saw in parts, those of ``per_history`` on
    the whole history from ``source()`` after a shuffle; with the paths the histories took."""
    anoms = [r for r in rows if r["kind"] is not None]
    split, info = chunk_paths(rows, engine)
    if split:
        df = source()
        bad = df.sparkSession.createDataFrame([(h,) for h in split], "history string")
        again = (df.join(F.broadcast(bad), "history", "left_semi").groupBy("history")
                 .applyInArrow(per_history, OUT_DDL).where(F.col("kind").isNotNull()).collect())
        drop = set(split)
        anoms = [r for r in anoms if r["history"] not in drop] + again
    return anoms, info
