"""The per-history function both engines run: one history's op rows to its ``results.json``
entry, and one history file read and checked (:func:`check_file`, what a Spark task runs per
file and the in-process engine per file).

``kafka="ref"`` checks Kafka anomalies with :func:`checks.kafka.check_rows` (the kernel where it
is built, else the reference) and Elle's cycles with the reference graph; ``"kernel"`` (the
Spark workers) builds the kernel table once and runs the kernel and the vectorised cycle search
over it. A test holds the two to the same anomalies and evidence.
"""

from __future__ import annotations

import time
import uuid
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from kraft.inputs import collector_paused
from spark_validation.checks import elle as cycle_check
from spark_validation.checks import kafka as kafka_check
from spark_validation.checks.elle import CycleOptions, check_rows_ref, check_table
from spark_validation.checks.elle.explain import CycleAnomaly
from spark_validation.checks.kafka import KAFKA_FS
from spark_validation.checks.kafka import kernel as kafka_kernel
from spark_validation.checks.kafka import rules as kafka_rules
from spark_validation.checks.kafka.anomaly import KafkaAnomaly, sorted_anomalies
from spark_validation.checks.kafka.fast import KERNEL_LIMITS
from spark_validation.checks.kafka.rows import cycle_table, kernel_table
from spark_validation.checks.linearizable import check_history
from spark_validation.engine.result import FileOutcome, HistoryResult, build_result, lin_models
from spark_validation.ingest.history import HistoryFormatError
from spark_validation.ingest.records import Malformed, rows_to_ops
from spark_validation.ingest.rows import read_rows, structure_problem
from spark_validation.options import AuditOptions

def check_rows(hid: str, rows: Any, initial: Any, opts: AuditOptions, kafka: str = "ref",
               secs: dict[str, float] | None = None) -> tuple[HistoryResult, Malformed | None]:
    """One history's result (``results.json`` entry) and its malformed-history entry (or None),
    from its op rows (:class:`ingest.rows.Rows`). Both engines call this, so they report the same;
    ``kafka``: ``"ref"`` or ``"kernel"`` (the module docstring)."""
    secs = secs if secs is not None else {}
    n = len(rows)
    model = rows.model
    bad = None
    sp = structure_problem(rows)
    structure = sp[1] if sp else None
    if sp:  # the file line of the op that does not pair up
        bad = Malformed("history", hid, rows.line[sp[0]], f"malformed history: {structure}")
    fs = set(rows.f)
    has_kafka = any(f in fs for f in KAFKA_FS)
    kafka_found, k_secs, lin = None, 0.0, None
    kafka_empty = True
    if has_kafka:
        kafka_empty = not any(kafka_check.has_data(t, f, v)
                              for t, f, v in zip(rows.type, rows.f, rows.value) if f in KAFKA_FS)
    if not structure and has_kafka and "kafka" in opts.checks:
        t = time.perf_counter()
        kafka_found = _kafka_found(rows, opts, kafka)
        k_secs = time.perf_counter() - t
        secs["kafka"] = secs.get("kafka", 0.0) + k_secs
    if not structure and model in lin_models() and "lin" in opts.checks:
        t = time.perf_counter()
        init = opts.initial if opts.initial is not None else initial
        lin = check_history(rows_to_ops(rows.ops()), model, initial=init, budget_seconds=opts.budget,
                            nil_reads=opts.nil_reads, history_id=hid)
        secs["lin"] = secs.get("lin", 0.0) + time.perf_counter() - t
    res = build_result(hid, model, n, has_kafka, structure, kafka_found, k_secs, lin, opts.checks,
                       kafka_empty=kafka_empty, allowed_kinds=opts.allowed_kinds)
    return res, bad


def _kafka_found(rows: Any, opts: AuditOptions, kafka: str) -> tuple[list[KafkaAnomaly], list[CycleAnomaly]]:
    """A history's Kafka anomalies and Elle's cycles in it."""
    cycle_opts = CycleOptions(opts.ww_deps, opts.rw_deps, opts.process_order, opts.realtime)
    if kafka == "kernel":  # in the Spark workers
        try:
            kt = kernel_table(rows)
            # Elle's cycle search over the same rows, vectorised (checks.elle.check_table)
            return sorted_anomalies(kafka_kernel.check_table(kt)), check_table(cycle_table(rows, kt), cycle_opts)
        except KERNEL_LIMITS:  # e.g. an offset beyond 64 bits: the reference decides
            ops = rows.ops()
            return kafka_rules.check_rows(ops), check_rows_ref(ops, cycle_opts)
    ops = rows.ops()
    return kafka_check.check_rows(ops), cycle_check.check_rows(ops, cycle_opts)


def check_file(path: str, opts: AuditOptions, kafka: str = "ref", ops_dir: str | None = None,
               krows_dir: str | None = None, unit: int = 0, keep_rows: bool = False) -> FileOutcome:
    """Read one history file and check it. With ``ops_dir`` its op rows are written there as a
    Parquet file (``model=M/part-UNIT-...``), with ``krows_dir`` its Kafka kernel rows (one
    history per file, so the files are clustered by history as ``--store-kafka-rows``
    promises); with ``keep_rows`` the outcome carries its op rows."""
    with collector_paused():
        return _check_file(path, opts, kafka, ops_dir, krows_dir, unit, keep_rows)


def _check_file(path: str, opts: AuditOptions, kafka: str, ops_dir: str | None, krows_dir: str | None, unit: int,
                keep_rows: bool) -> FileOutcome:
    cpu = time.process_time()
    t = time.perf_counter()
    try:
        rows, bad, _, initial = read_rows(path, opts.model)
    except HistoryFormatError as exc:
        if exc.reason.endswith("header kind is 'trace'"):  # a trace by its header: the metadata check
            return FileOutcome(path, trace=True)
        return FileOutcome(path, skip=Malformed("file", str(path), exc.line, exc.reason))
    secs = {"read": time.perf_counter() - t}
    table = rows.arrow() if keep_rows else None
    if ops_dir is not None or krows_dir is not None:
        t = time.perf_counter()
        _write_unit_tables(rows, ops_dir, krows_dir, unit, "kafka" in opts.checks)
        secs["write"] = time.perf_counter() - t
    result, history_bad = check_rows(rows.history, rows, initial, opts, kafka, secs)
    secs["cpu"] = time.process_time() - cpu  # this process's CPU time for the whole file
    return FileOutcome(path, malformed=tuple(Malformed.of_line(b.path, b.line, b.reason, b.text) for b in bad),
                       result=result, history_bad=history_bad, ops=len(rows), secs=secs, rows=table)


def _write_unit_tables(rows: Any, ops_dir: str | None, krows_dir: str | None, unit: int, kafka: bool) -> None:
    name = f"part-{unit:05d}-{uuid.uuid4().hex[:12]}.parquet"
    if ops_dir is not None:
        part = Path(ops_dir) / f"model={rows.model if rows.model is not None else '__HIVE_DEFAULT_PARTITION__'}"
        part.mkdir(parents=True, exist_ok=True)
        pq.write_table(rows.arrow().drop_columns(["model"]), part / name)
    if krows_dir is not None and kafka and any(f in KAFKA_FS for f in set(rows.f)):
        kt = kernel_table(rows)
        if kt.num_rows:
            Path(krows_dir).mkdir(parents=True, exist_ok=True)
            pq.write_table(kt, Path(krows_dir) / name)


