"""Metadata agreement over KRaft simulator traces as DataFrame operations: the check of
:mod:`.agreement` (its rule and evidence) on Spark, for the Spark engine."""

from __future__ import annotations

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from spark_validation.checks.agreement import Divergence, TraceChecks, divergence_evidence, unreadable_step
from spark_validation.ingest.spark import file_lines


def check_traces_spark(spark: SparkSession, paths: list[str]) -> TraceChecks:
    """The metadata check of every trace, as DataFrame operations."""
    lines = file_lines(spark, paths).where(F.trim("text") != "")
    schema = ("struct<i:bigint,kind:string,spec:string,_corrupt:string,"  # a header's spec is a name
              "state:struct<log:map<string,array<string>>,highWatermark:map<string,bigint>,"
              "logStartOffset:map<string,bigint>>>")
    p = lines.withColumn("j", F.from_json("text", schema, {"columnNameOfCorruptRecord": "_corrupt"})).persist()
    is_header = F.col("j.kind").isNotNull() & F.col("j.state").isNull()
    # a non-spec step without state left it unchanged (contract 5): a step, nothing new to check
    unchanged = F.col("j.state").isNull() & (F.col("j.spec") == F.lit("false"))
    bad = p.where(F.col("j").isNull() | F.col("j._corrupt").isNotNull()
                  | (F.col("j.state").isNull() & ~is_header & ~F.coalesce(unchanged, F.lit(False))))
    bad_rows = [unreadable_step(r["path"], r["line"], "invalid JSON or step has no state") for r in bad.collect()]
    steps_df = p.where(F.col("j.state").isNotNull() & F.col("j._corrupt").isNull())
    counted = p.where((F.col("j.state").isNotNull() | F.coalesce(unchanged, F.lit(False)))
                      & F.col("j._corrupt").isNull())
    steps = {r["path"]: r["n"] for r in counted.groupBy("path").agg(F.count("*").alias("n")).collect()}
    st = steps_df.select("path", "line", F.coalesce(F.col("j.i"), F.col("line")).alias("step"),
                         F.col("j.state.log").alias("log"), F.col("j.state.highWatermark").alias("hw"),
                         F.col("j.state.logStartOffset").alias("starts"))
    per_node = st.select("path", "line", "step", "hw", "starts", F.explode("log").alias("node", "entries"))
    per_node = (per_node.withColumn("h", F.col("hw")[F.col("node")]).where(F.col("h").isNotNull())
                .withColumn("s", F.coalesce(F.col("starts")[F.col("node")], F.lit(0))))
    committed = per_node.select(
        "path", "line", "step", "node", "s",
        F.posexplode(F.slice("entries", 1, F.greatest(F.col("h") - F.col("s"), F.lit(0)).cast("int")))
        .alias("i", "entry")).withColumn("offset", F.col("s") + F.col("i"))
    firsts = (committed.groupBy("path", "offset", "entry")
              .agg(F.min(F.struct("step", "line", "node")).alias("w")))
    per_off = (firsts.groupBy("path", "offset")
               .agg(F.collect_list(F.struct("w", "entry")).alias("es"), F.count("*").alias("n"))
               .where(F.col("n") > 1))
    counts = per_off.groupBy("path").agg(F.min("offset").alias("offset"), F.count("*").alias("nbad"))
    rows = per_off.join(counts, ["path", "offset"]).select("path", "offset", "es", "nbad").collect()
    anomalies = {}
    for r in rows:
        entries = [((e["w"]["step"], e["w"]["line"], e["w"]["node"]), e["entry"]) for e in r["es"]]
        anomalies[r["path"]] = Divergence(divergence_evidence(r["path"], int(r["offset"]), entries, int(r["nbad"])))
    return TraceChecks(steps, anomalies, bad_rows)
