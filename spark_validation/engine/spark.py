"""The Spark engine: history files read and checked inside Spark tasks by the per-history
function (:func:`engine.history.check_file`, no op row through the JVM), Parquet op tables as
DataFrames (:mod:`.tables`), the metadata check of traces as a DataFrame job."""

from __future__ import annotations

import heapq
import os
import shutil
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from spark_validation.engine.collected import BothPaths, Collected, FilesPath, Progress
from spark_validation.engine.history import check_file
from spark_validation.engine.stored import KAFKA_ROWS, write_manifest
from spark_validation.engine.tables import check_tables
from spark_validation.checks.agreement_spark import check_traces_spark
from spark_validation.options import AuditOptions
from spark_validation.session import get_context, get_session


def run_spark(opts: AuditOptions, histories: list[Path], tables: list[Path], traces: list[Path],
              ops_out: Path | None, progress: Progress) -> Collected:
    """Check everything on Spark (``opts.master``); with ``ops_out`` also write the op table there."""
    stage: dict[str, float] = {}
    t0 = time.perf_counter()
    # history files: the work is in the Python workers (a light JVM), and a SparkContext is all
    # they need; the DataFrame paths (tables, metadata traces) add a SparkSession over it
    light = not tables
    sc = get_context(opts.master, light_jvm=light)
    spark = get_session(opts.master, light_jvm=light) if tables else None
    stage["session"] = time.perf_counter() - t0
    progress(f"spark: {'session' if spark else 'context'} on {sc.master} ({stage['session']:.1f}s)")
    got = Collected(stage_seconds=stage, engine=f"spark {sc.master}")
    if ops_out is not None:  # a fresh op table (and kernel rows): the old ones must not mix in
        for name in ("ops.parquet", KAFKA_ROWS):
            shutil.rmtree(ops_out / name, ignore_errors=True)
    if tables:
        check_tables(opts, spark, tables, ops_out, progress, got)
    if histories:
        tables_engine = got.kafka_engine
        traces = sorted(set(traces) | set(_spark_files(opts, sc, histories, ops_out, progress, got)))
        if tables_engine is not None:
            assert isinstance(got.kafka_engine, FilesPath) and not isinstance(tables_engine, BothPaths)
            got.kafka_engine = BothPaths(got.kafka_engine, tables_engine)
    if ops_out is not None and opts.store_kafka and (ops_out / KAFKA_ROWS).is_dir():
        write_manifest(ops_out)
    if traces and "metadata" in opts.checks:
        t = time.perf_counter()
        found = check_traces_spark(get_session(opts.master, light_jvm=light), [str(p) for p in traces])
        stage["metadata"] = time.perf_counter() - t
        got.add_metadata(found, stage["metadata"])
        progress(f"metadata: {len(found.steps)} traces ({stage['metadata']:.1f}s)")
    return got


def units(files: list[Path], n: int) -> list[tuple[int, list[str]]]:
    """Files in ``n`` groups of about equal size (largest first onto the lightest group)."""
    sized = sorted(((os.path.getsize(f) if os.path.exists(f) else 0, str(f)) for f in files), reverse=True)
    heap = [(0, u) for u in range(max(1, min(n, len(files))))]
    groups: dict[int, list[str]] = defaultdict(list)
    for size, f in sized:
        load, u = heapq.heappop(heap)
        groups[u].append(f)
        heapq.heappush(heap, (load + size + 1, u))
    return [(u, sorted(fs)) for u, fs in sorted(groups.items())]


def _spark_files(opts: AuditOptions, sc: Any, files: list[Path], ops_out: Path | None, progress: Progress,
                 got: Collected) -> list[Path]:
    """Every history file read and checked inside one Spark task (:func:`check_file`: the fast
    row readers of :mod:`ingest.rows`, the Kafka kernel, the cycle search, linearizability): no op row
    passes through the JVM and no intermediate table is written and read back. The op table
    (``ops.parquet``) and, with ``--store-kafka-rows``, the kernel rows are written by the tasks
    themselves, one Parquet file per history file. Files are grouped into about three tasks per
    core, balanced by size. Returns the files that turned out to be traces."""
    t = time.perf_counter()
    groups = units(files, sc.defaultParallelism * 3)
    ops_dir = str(ops_out / "ops.parquet") if ops_out is not None else None
    krows_dir = str(ops_out / KAFKA_ROWS) if ops_out is not None and opts.store_kafka else None

    def run_unit(it):
        for u, paths in it:
            for path in paths:
                yield check_file(path, opts, "kernel", ops_dir, krows_dir, u)

    outs = sorted(sc.parallelize(groups, len(groups)).mapPartitions(run_unit).collect(), key=lambda r: r.path)
    n_results, n_malformed, n_ops = len(got.results), len(got.malformed), got.ops_total
    traces: list[Path] = []
    secs: defaultdict[str, float] = defaultdict(float)
    for r in outs:
        if r.trace:
            traces.append(Path(r.path))
        elif r.skip:
            got.malformed.append(r.skip)
        else:
            got.add_file(r, secs)
    got.stage_seconds["files"] = time.perf_counter() - t
    kafka_h = sum(1 for r in got.results[n_results:] if "kafka" in r.checks)
    got.kafka_engine = FilesPath(len(files), len(groups), kafka_h, {k: round(v, 3) for k, v in sorted(secs.items())})
    progress(f"files: {len(got.results) - n_results} histories, {got.ops_total - n_ops} ops, "
             f"{len(got.malformed) - n_malformed} malformed, read and checked in {len(groups)} tasks "
             f"({got.stage_seconds['files']:.1f}s)")
    return traces
