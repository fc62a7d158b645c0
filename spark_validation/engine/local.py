"""The in-process engine (``--no-spark``): every history file through
:func:`engine.history.check_file`, every Parquet table's histories through
:func:`engine.history.check_rows`, then the metadata check of the traces, in this process."""

from __future__ import annotations

import shutil
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from spark_validation.engine.collected import Collected, Progress
from spark_validation.engine.history import check_file, check_rows
from spark_validation.ingest.records import Malformed
from spark_validation.ingest.rows import read_table
from spark_validation.checks.agreement import check_traces_local
from spark_validation.options import AuditOptions


def run_local(opts: AuditOptions, histories: list[Path], tables: list[Path], traces: list[Path],
              ops_out: Path | None, progress: Progress) -> Collected:
    """Check everything in this process; with ``ops_out`` also write the op table there."""
    stage: defaultdict[str, float] = defaultdict(float)
    got = Collected()
    ops_tables: list[Any] = []
    t0 = time.perf_counter()
    for i, path in enumerate(histories, 1):
        r = check_file(str(path), opts, "ref", keep_rows=ops_out is not None)
        if r.trace:
            traces = sorted({*traces, Path(path)})
            continue
        if r.skip:
            got.malformed.append(r.skip)
            continue
        got.add_file(r, stage)
        if ops_out is not None:
            ops_tables.append(r.rows)
        if i % 1000 == 0:
            progress(f"check: {i}/{len(histories)} files")
    for t in tables:
        ops_tables += _check_table(opts, t, got, stage, keep_rows=ops_out is not None)
    stage["checks"] = time.perf_counter() - t0
    progress(f"checked {len(got.results)} histories in {stage['checks']:.2f}s")
    if ops_out is not None:
        _write_ops_local(ops_tables, ops_out / "ops.parquet")
    if traces and "metadata" in opts.checks:
        t = time.perf_counter()
        found = check_traces_local([str(p) for p in traces])
        stage["metadata"] = time.perf_counter() - t
        got.add_metadata(found, stage["metadata"])
    got.stage_seconds = dict(stage)
    return got


def _check_table(opts: AuditOptions, path: Path, got: Collected, stage: defaultdict[str, float],
                 keep_rows: bool) -> list[Any]:
    """Every history of one Parquet op table checked into ``got``; with ``keep_rows`` their op
    rows as Arrow tables."""
    try:
        tbl = pq.read_table(path)
    except Exception as exc:  # footers were fine (unreadable_parquet) but a data page is not
        got.malformed.append(Malformed("file", str(path), None,
                                       f"unreadable Parquet table: {str(exc).splitlines()[0] if str(exc) else exc!r}"))
        return []
    out = []
    for rows in read_table(tbl, path, opts.model):
        res, bad = check_rows(rows.history, rows, None, opts, "ref", stage)
        got.add_result(res, bad)
        got.ops_total += len(rows)
        if keep_rows:
            out.append(rows.arrow())
    return out


def _write_ops_local(tables: list[Any], path: Path) -> None:
    if path.exists():
        shutil.rmtree(path)
    tables = [t for t in tables if t.num_rows]
    if not tables:
        return
    pq.write_to_dataset(pa.concat_tables(tables), str(path), partition_cols=["model"])
