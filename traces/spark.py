"""``kraft conform --spark``: the batched TLC runs distributed over Spark executors.

The driver reads only the headers (to group traces by spec and CONSTANTS and cut batches, exactly
as the local mode does), then ``sparkContext.parallelize(batches).mapPartitions(...)`` runs each
batch on an executor: the executor re-reads its trace files, runs TLC in a private directory
(own ``-metadir`` and ``java.io.tmpdir``), re-runs and explains rejected traces, and returns one
row per trace.  Trace paths must be readable from the executors (local mode: always; a cluster:
a shared file system).  Results come back to the driver (one small row per trace) and are also
written as Parquet: ``OUT/conform.parquet``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable, Iterator

import attrs

from spark_validation.session import get_session
from traces.check import Options, TraceResult, check_paths, plan
from traces.protocols import load_glue

PARQUET_COLUMNS = ("trace", "protocol", "spec", "seed", "variant", "events", "skipped", "checked",
                   "verdict", "kind", "line", "step", "action", "node", "disagree", "message",
                   "seconds", "tlc_runs", "details")


def _run_partition(items: Iterable[tuple[list[str], dict[str, Any], tuple[str, ...]]]) -> Iterator[str]:
    """Executor side: check each batch of paths, yield one JSON row per trace."""
    for paths, opt, glues in items:
        for g in glues:
            load_glue(g)
        opts = Options(batch=max(1, len(paths)), jobs=1, timeout=opt.get("timeout"), heap=opt.get("heap", "2g"),
                       diagnose=opt.get("diagnose", True), witness=opt.get("witness", "exit"))
        for r in check_paths(paths, opts):
            yield json.dumps(r.as_dict(), default=str)


def _row(d: dict[str, Any]) -> dict[str, Any]:
    return {
        "trace": d["trace"], "protocol": d.get("protocol"), "spec": d.get("spec"),
        "seed": None if d.get("seed") is None else str(d["seed"]), "variant": d.get("variant"),
        "events": int(d.get("events") or 0), "skipped": int(d.get("skipped") or 0),
        "checked": int(d.get("checked") or 0), "verdict": d["verdict"], "kind": d.get("kind"),
        "line": d.get("line"), "step": d.get("step"), "action": d.get("action"),
        "node": None if d.get("node") is None else str(d["node"]),
        "disagree": list(d.get("disagree") or []), "message": d.get("message", ""),
        "seconds": float(d.get("seconds") or 0.0), "tlc_runs": int(d.get("tlc_runs") or 0),
        "details": json.dumps(d, default=str),
    }


def check_with_spark(paths: list[Path], opts: Options, *, master: str = "local[*]", out_dir: Path,
                     glue_targets: Iterable[str] = ()) -> list[TraceResult]:
    from pyspark.sql import types as T  # optional: pyspark

    session = get_session(master, app_name="kraft-conform", light_jvm=True)  # TLC runs in the workers
    batches, done = plan(paths, attrs.evolve(opts, segment=0))  # the executors check whole traces
    work = [([p.trace.path for p in b], {"timeout": opts.timeout, "heap": opts.heap,
                                          "diagnose": opts.diagnose, "witness": opts.witness},
             tuple(glue_targets)) for b in batches]
    rows: list[dict[str, Any]] = []
    if work:
        sc = session.sparkContext
        rdd = sc.parallelize(work, numSlices=len(work)).mapPartitions(_run_partition)
        rows = [json.loads(x) for x in rdd.collect()]
    results = [_from_dict(d) for d in rows] + list(done)
    order = {str(p): i for i, p in enumerate(paths)}
    results.sort(key=lambda r: order.get(r.trace, len(order)))
    schema = T.StructType([
        T.StructField("trace", T.StringType()), T.StructField("protocol", T.StringType()),
        T.StructField("spec", T.StringType()), T.StructField("seed", T.StringType()),
        T.StructField("variant", T.StringType()), T.StructField("events", T.LongType()),
        T.StructField("skipped", T.LongType()), T.StructField("checked", T.LongType()),
        T.StructField("verdict", T.StringType()), T.StructField("kind", T.StringType()),
        T.StructField("line", T.LongType()), T.StructField("step", T.LongType()),
        T.StructField("action", T.StringType()), T.StructField("node", T.StringType()),
        T.StructField("disagree", T.ArrayType(T.StringType())), T.StructField("message", T.StringType()),
        T.StructField("seconds", T.DoubleType()), T.StructField("tlc_runs", T.LongType()),
        T.StructField("details", T.StringType()),
    ])
    data = [tuple(_row(r.as_dict())[c] for c in PARQUET_COLUMNS) for r in results]
    df = session.createDataFrame(data, schema=schema)
    df.coalesce(1).write.mode("overwrite").parquet(str(Path(out_dir) / "conform.parquet"))
    return results


def _from_dict(d: dict[str, Any]) -> TraceResult:
    names = {f.name for f in attrs.fields(TraceResult)}
    return TraceResult(**{k: v for k, v in d.items() if k in names})
