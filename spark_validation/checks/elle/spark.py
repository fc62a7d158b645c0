"""The Elle check on Spark: the vectorised check per partition, no shuffle where partitions
hold whole histories; histories seen by several chunks are checked again after a shuffle
(``groupBy(history).applyInArrow``), as the Kafka checks' Spark path does. The micro-ops are
extracted in the Python worker (:func:`.rows.rows_of_ops`)."""

from __future__ import annotations

import json
from typing import Any, Iterable, Iterator

import pyarrow as pa
from pyspark import TaskContext
from pyspark.sql import functions as F

from spark_validation.checks.anomaly import in_report_order
from spark_validation.checks.kafka import rules as kafka_rules
from spark_validation.checks.kafka.spark import with_split_rechecked
from spark_validation.checks.elle.check import check_rows_ref, check_table
from spark_validation.checks.elle.explain import CycleAnomaly
from spark_validation.checks.elle.reference import CycleOptions
from spark_validation.checks.elle.rows import OP_IN, rows_of_ops
from spark_validation.ingest.chunks import CHUNK_STRIDE, OUT_DDL, ChunkPaths, history_chunks, out_batch
from spark_validation.ingest.records import OpRow

CHUNK_ROWS = 1 << 19  # op rows a task gathers before it checks the whole histories among them


def cycle_input(ops: Any) -> Any:
    """The op rows the cycle check reads (send/poll/txn ops, the columns of ``OP_IN``): a narrow
    selection, so partitions that hold whole histories keep holding them. The micro-ops are
    extracted in the Python worker (:func:`.rows.rows_of_ops`), cheaper than Spark's
    ``from_json`` with higher-order functions over Jepsen's nested values."""
    return ops.where(F.col("f").isin(*kafka_rules.KAFKA_FS)).select(*OP_IN)


def _check_chunk(t: Any, chunk: int, opts: CycleOptions) -> Any:
    """Check a chunk of op rows (whole histories, as far as this task knows)."""
    try:
        anoms = check_table(rows_of_ops(t), opts)
    except (OverflowError, ValueError, TypeError):  # as check_rows: the reference decides
        anoms = check_rows_ref([OpRow.of_mapping(r) for r in t.to_pylist()], opts)
    return out_batch(anoms, [json.dumps(a.evidence.to_json()) for a in anoms], t, chunk)


def _chunks(batches: Iterable[Any], base: int, chunk_rows: int, opts: CycleOptions) -> Iterator[Any]:
    """Check the rows of ``batches`` a chunk at a time, each chunk cut at a history boundary."""
    for k, t in enumerate(history_chunks(batches, chunk_rows)):
        yield _check_chunk(t, base + k, opts)


def check_spark(ops: Any, opts: CycleOptions, chunk_rows: int = CHUNK_ROWS) -> list[CycleAnomaly]:
    """Cycle anomalies of every history of the op table ``ops``. The kernel runs per partition;
    the driver accepts a history only if exactly one chunk saw it, and checks the others again
    after a shuffle."""
    return collect(ops, opts, chunk_rows)[0]


def collect(ops: Any, opts: CycleOptions, chunk_rows: int = CHUNK_ROWS) -> tuple[list[CycleAnomaly], ChunkPaths]:
    """Cycle anomalies of the op table ``ops`` and a report of which path each history took."""
    def per_partition(it: Iterable[Any]) -> Iterator[Any]:
        ctx = TaskContext.get()
        yield from _chunks(it, (ctx.partitionId() if ctx is not None else 0) * CHUNK_STRIDE, chunk_rows, opts)

    def per_history(t: Any) -> Any:
        return pa.Table.from_batches([_check_chunk(t, -1, opts)])

    c = cycle_input(ops)
    anoms, info = with_split_rechecked(c.mapInArrow(per_partition, OUT_DDL).collect(), "cycles", lambda: c,
                                       per_history)
    out = [CycleAnomaly.from_json({"history": r["history"], "kind": r["kind"], "evidence": json.loads(r["evidence"])})
           for r in anoms]
    return in_report_order(out), info

