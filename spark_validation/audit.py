"""The audit's entry point: find the inputs, run an engine, write the report.

Two engines with the same checks and the same outputs (:mod:`spark_validation.engine`):

* Spark (default): history files are read and checked inside Spark tasks by the per-history
  function; Parquet op tables go through DataFrame jobs (the linearizability checker per
  history inside the executors, ``groupBy(history).applyInPandas``, each with the ``--budget``).
* ``--no-spark``: the same per-history function in this process, for quick feedback on small
  inputs.

Outputs under ``--out`` (contract: ``results.json``):

``summary.json``      the command's document: the shared header of every kraft command
                      (``command, verdict, summary, exit_code``; kraft/outcome.py), then the
                      counts printed at the end of the run
``results.json``      one object per history: ``history, model, valid, ops, seconds, anomalies``
                      (+ ``checks``, and ``malformed`` / ``info`` when relevant)
``results.parquet``   the same, anomalies as a JSON string column
``anomalies.parquet`` one row per anomaly: ``history, kind, key, evidence`` (JSON string)
``malformed.json``    every malformed line / unusable file / malformed history, by file and line
``ops.parquet``       (with ``--write-ops`` or ``--store-kafka-rows``) the ingested op table,
                      partitioned by model: a corpus ``kraft audit`` reads
``kafka_rows.parquet`` (with ``--store-kafka-rows``) the Kafka kernel rows of ``ops.parquet``,
                      clustered by history, and ``kafka_rows.json`` naming the ``ops.parquet`` files
                      they were made from. A later ``kraft audit OUT/ops.parquet`` whose files
                      still match checks Kafka anomalies from them, one task per file and no
                      shuffle (:func:`checks.kafka.spark.collect_stored`), the fastest path.
"""

from __future__ import annotations

import sys
from pathlib import Path

from kraft.outcome import clear_documents
from spark_validation.engine.collected import Progress
from spark_validation.engine.local import run_local
from spark_validation.ingest.records import Malformed, command_summaries, discover, ignored_files
from spark_validation.ingest.rows import unreadable_parquet
from spark_validation.options import AuditOptions
from spark_validation.report import DOCUMENTS, AuditReport, mark_lost_lines, write_outputs

__all__ = ["AuditOptions", "AuditReport", "run"]


def _stderr(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def run(opts: AuditOptions, progress: Progress = _stderr) -> AuditReport:
    """Run the audit and write its outputs under ``opts.out``."""
    histories, tables, traces = discover(opts.paths)
    bad_tables = [(t, why) for t in tables if (why := unreadable_parquet(t))]  # both engines skip them
    tables = [t for t in tables if not any(t == b for b, _ in bad_tables)]
    ignored = [str(p) for p in ignored_files(opts.paths)]
    summaries = command_summaries(opts.paths)
    progress(f"audit: {len(histories)} history file(s), {len(tables)} Parquet table(s), {len(traces)} trace(s), "
             f"{len(summaries)} kraft summary file(s), {len(ignored)} other file(s) ignored")
    out = Path(opts.out)
    out.mkdir(parents=True, exist_ok=True)
    clear_documents(*(out / name for name in DOCUMENTS))  # written again when every history is decided
    ops_dir = out / "ops.parquet"
    reading_own = any(Path(t).resolve() == ops_dir.resolve() for t in tables)
    write_ops = (opts.write_ops or opts.store_kafka) and not reading_own
    if opts.no_spark:
        engine = run_local
    else:
        # lazy: the one import of the Spark engine, which loads pyspark; --no-spark never does
        from spark_validation.engine.spark import run_spark
        engine = run_spark
    report = AuditReport.of(engine(opts, histories, tables, traces, out if write_ops else None, progress),
                            ignored, summaries)
    report.malformed[:0] = [Malformed("file", str(t), None, why) for t, why in bad_tables]
    mark_lost_lines(report)
    write_outputs(report, out)
    return report
