"""Parquet op tables on Spark: the op table as a DataFrame, then each check as a Spark job
(pairing, the Kafka kernel per partition, Elle's cycles, linearizability per history with
``groupBy(history).applyInPandas``), joined into one result per history."""

from __future__ import annotations

import json
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import attrs
import pandas as pd
from pyspark.sql import functions as F

from spark_validation.checks.elle import CycleOptions
from spark_validation.checks.elle.explain import CycleAnomaly
from spark_validation.checks.elle.spark import check_spark
from spark_validation.checks.kafka import KAFKA_FS
from spark_validation.checks.kafka import rules as kafka_rules
from spark_validation.checks.kafka import spark as kafka_spark
from spark_validation.checks.kafka.anomaly import KafkaAnomaly, sorted_anomalies
from spark_validation.ingest.chunks import ChunkPaths
from spark_validation.checks.linearizable import LinInfo, LinResult, check_history
from spark_validation.checks.linearizable.evidence import LinAnomaly
from spark_validation.engine.collected import Collected, Progress
from spark_validation.engine.result import build_result, lin_models
from spark_validation.engine.stored import KAFKA_ROWS, store_kafka_rows, stored_kafka_rows
from spark_validation.ingest import spark as ingest
from spark_validation.ingest.history import normalize, to_jsonable
from spark_validation.ingest.records import Malformed, OpRow, rows_to_ops
from spark_validation.options import AuditOptions

LIN_DDL = "history string, valid string, ops long, seconds double, anomalies string, info string"


@attrs.define
class _Ingested:
    """The op table of the tables read: ``ops`` (all), ``good`` (the histories that pair up),
    one summary row per history, the histories that do not pair up (why)."""

    ops: Any
    summary: list[Any]
    good: Any = None
    structure: dict[str, str] = attrs.field(factory=dict)


@attrs.define
class _KafkaFound:
    anomalies: defaultdict[str, list[KafkaAnomaly]] = attrs.field(factory=lambda: defaultdict(list))
    cycles: defaultdict[str, list[CycleAnomaly]] = attrs.field(factory=lambda: defaultdict(list))
    histories: set[str] = attrs.field(factory=set)  # the Kafka histories that pair up
    seconds: float = 0.0
    engine: ChunkPaths | None = None  # which path the kernel took


def check_tables(opts: AuditOptions, spark: Any, tables: list[Path], ops_out: Path | None, progress: Progress,
                 got: Collected) -> None:
    """Every history of the Parquet op ``tables`` checked into ``got``."""
    ing = _ingest(opts, spark, tables, got, progress)
    if ops_out is not None:
        _write_ops(opts, spark, ing.ops, ops_out, got.stage_seconds, progress)
    _pairing(spark, ing, got)
    found = _kafka(opts, spark, ing, tables, got.stage_seconds, progress)
    got.kafka_engine = found.engine
    lin_by_h = _lin(opts, spark, ing, got.stage_seconds, progress)
    kafka_ops = sum(r["n"] for r in ing.summary if r["history"] in found.histories) or 1
    for r in sorted(ing.summary, key=lambda r: r["history"]):
        hid = r["history"]
        ka = ((found.anomalies.get(hid, []), found.cycles.get(hid, []))
              if hid in found.histories and "kafka" in opts.checks else None)
        share = found.seconds * r["n"] / kafka_ops if ka is not None else 0.0
        res = build_result(hid, r["model"], r["n"], bool(r["kafka"]), ing.structure.get(hid), ka, share,
                           lin_by_h.get(hid), opts.checks, kafka_empty=not r["kafka_data"],
                           allowed_kinds=opts.allowed_kinds)
        got.add_result(res, None)


def _ingest(opts: AuditOptions, spark: Any, tables: list[Path], got: Collected, progress: Progress) -> _Ingested:
    """The op table (materialised once) and one summary row per history."""
    t = time.perf_counter()
    ops = ingest.load(spark, tables, opts.model)
    ops = ops.localCheckpoint()  # materialised once; later plans start from this leaf
    summary = (ops.groupBy("history").agg(
        F.count("*").alias("n"), F.max("model").alias("model"),
        F.max(F.col("f").isin(*KAFKA_FS).cast("int")).alias("kafka"),
        F.max(kafka_rules.has_data_column(F).cast("int")).alias("kafka_data")).collect())
    got.ops_total += sum(r["n"] for r in summary)
    got.stage_seconds["ingest"] = time.perf_counter() - t
    progress(f"ingest: {len(summary)} histories, {got.ops_total} ops, {len(got.malformed)} malformed "
             f"({got.stage_seconds['ingest']:.1f}s)")
    return _Ingested(ops, summary)


def _write_ops(opts: AuditOptions, spark: Any, ops: Any, ops_out: Path, stage: dict[str, float],
               progress: Progress) -> None:
    """``ops_out/ops.parquet`` (and with ``--store-kafka-rows`` the kernel rows beside it)."""
    t = time.perf_counter()
    ops.write.mode("overwrite").partitionBy("model").parquet(str(ops_out / "ops.parquet"))
    stage["write_ops"] = time.perf_counter() - t
    if opts.store_kafka:
        t = time.perf_counter()
        store_kafka_rows(spark, ops, ops_out)
        stage["write_kafka_rows"] = time.perf_counter() - t
        progress(f"stored Kafka kernel rows in {ops_out / KAFKA_ROWS} ({stage['write_kafka_rows']:.1f}s)")


def _pairing(spark: Any, ing: _Ingested, got: Collected) -> None:
    """The histories whose ops do not pair up (:func:`ingest.spark.pairing_problems`): each a
    malformed-history entry, left out of ``ing.good``."""
    t = time.perf_counter()
    probs = {r["history"]: (r["line"], r["reason"]) for r in ingest.pairing_problems(ing.ops).collect()}
    ing.structure = {h: why for h, (_, why) in probs.items()}
    for hid, (line, why) in sorted(probs.items()):
        got.malformed.append(Malformed("history", hid, line, f"malformed history: {why}"))
    got.stage_seconds["pairing"] = time.perf_counter() - t
    ing.good = ing.ops
    if ing.structure:
        bad_h = spark.createDataFrame([(h,) for h in ing.structure], "history string")
        ing.good = ing.ops.join(F.broadcast(bad_h), "history", "left_anti")


def _kafka(opts: AuditOptions, spark: Any, ing: _Ingested, tables: list[Path], stage: dict[str, float],
           progress: Progress) -> _KafkaFound:
    """Kafka anomalies (the kernel per partition, or from stored kernel rows) and Elle's cycles
    (edges as a DataFrame, components per history: jepsen.tests.kafka/cycles!)."""
    found = _KafkaFound(histories={r["history"] for r in ing.summary if r["kafka"] and r["history"] not in ing.structure})
    if not found.histories or "kafka" not in opts.checks:
        return found
    t = time.perf_counter()
    kops = (ing.good.where(F.col("history").isin(list(found.histories)))
            if len(found.histories) < len(ing.summary) else ing.good)
    anoms, found.engine = _kernel(spark, kops, tables, found.histories)
    for a in sorted_anomalies(anoms):
        found.anomalies[a.history].append(a)
    tc = time.perf_counter()
    cyc = check_spark(kops, CycleOptions(opts.ww_deps, opts.rw_deps, opts.process_order, opts.realtime))
    for c in cyc:  # in the report's order
        found.cycles[c.history].append(c)
    stage["cycles"] = time.perf_counter() - tc
    found.seconds = stage["kafka"] = time.perf_counter() - t
    how = f", {found.engine.clustered} checked in place, {found.engine.shuffled} after a shuffle"
    progress(f"kafka ({found.engine.engine}): {len(found.histories)} histories, {len(anoms)} anomalies{how} "
             f"({found.seconds:.1f}s)")
    return found


def _kernel(spark: Any, kops: Any, tables: list[Path], histories: set[str]) -> tuple[list[KafkaAnomaly], ChunkPaths]:
    """The Kafka kernel's anomalies of the histories ``histories`` and the path it took."""
    stored = stored_kafka_rows(tables, [])
    if stored is None:
        # per partition, no shuffle where partitions hold whole histories (verified; the
        # histories that do not are re-checked after a shuffle)
        return kafka_spark.collect(kops)
    # kernel rows stored by an earlier audit of exactly this ops.parquet: one task per file, no
    # shuffle; only the histories this run checks are kept
    anoms, engine = kafka_spark.collect_stored(spark, str(stored))
    return [a for a in anoms if a.history in histories], attrs.evolve(engine, stored=str(stored))


def _lin(opts: AuditOptions, spark: Any, ing: _Ingested, stage: dict[str, float],
         progress: Progress) -> dict[str, LinResult]:
    """The linearizability check of every history with a known model, one per Spark group."""
    models = lin_models()
    lin_hist = [r["history"] for r in ing.summary if r["model"] in models and r["history"] not in ing.structure]
    if not lin_hist or "lin" not in opts.checks:
        return {}
    t = time.perf_counter()
    init_json = json.dumps(to_jsonable(opts.initial)) if opts.initial is not None else None
    lops = ing.good.where(F.col("model").isin(list(models)))
    n_parts = max(2, min(len(lin_hist), spark.sparkContext.defaultParallelism * 4))
    lin_rows = (lops.repartition(n_parts, "history").groupBy("history")
                .applyInPandas(lin_udf(models, init_json, opts.budget, opts.nil_reads), LIN_DDL)
                .collect())
    out = {}
    for r in lin_rows:
        v = {"true": True, "false": False}.get(r["valid"], "unknown")
        out[r["history"]] = LinResult(v, r["ops"], r["seconds"],
                                      [LinAnomaly.from_json(a) for a in json.loads(r["anomalies"])],
                                      LinInfo.from_json(json.loads(r["info"])))
    stage["lin"] = time.perf_counter() - t
    progress(f"lin: {len(lin_rows)} histories ({stage['lin']:.1f}s)")
    return out


def lin_udf(models: frozenset[str], initial_json: str | None, budget: float | None, nil_reads: str = "auto"):
    """The function applied to each history's rows in the executors; ``initial_json``: the
    ``--initial`` value (an op table carries none of its own)."""

    def run_one(pdf):
        records = pdf.astype(object).where(pdf.notna(), None).to_dict("records")
        for r in records:
            for c in ("time", "line", "index"):
                if r.get(c) is not None:
                    r[c] = int(r[c])
        rows = [OpRow.of_mapping(r) for r in records]
        hid = rows[0].history
        model = next((r.model for r in rows if r.model), None)
        init = normalize(json.loads(initial_json)) if initial_json is not None else None
        t = time.perf_counter()
        try:
            res = check_history(rows_to_ops(rows), model, initial=init, budget_seconds=budget, nil_reads=nil_reads,
                                history_id=hid)
            out = (str(res.valid).lower() if isinstance(res.valid, bool) else str(res.valid), len(rows),
                   res.seconds, json.dumps([a.to_json() for a in res.anomalies]), json.dumps(res.info.to_json()))
        except Exception as exc:  # noqa: BLE001 - one history's crash must not kill the corpus
            out = ("unknown", len(rows), time.perf_counter() - t, "[]",
                   json.dumps(LinInfo(error=f"checker raised {type(exc).__name__}: {exc}").to_json()))
        return pd.DataFrame([(hid, *out)], columns=["history", "valid", "ops", "seconds", "anomalies", "info"])

    return run_one
