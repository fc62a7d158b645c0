"""Kafka anomalies as Spark DataFrame operations.

Definitions: :mod:`spark_validation.kafka_ref` (the pure-Python reference; a Hypothesis test
checks that both find exactly the same anomalies). Everything here is column expressions,
``groupBy``, windows and joins, so the work is spread over the executors and never touches a
Python row. The input is the op table of :mod:`spark_validation.records` (values as text).

Output: one DataFrame ``(history, kind, key, evidence)`` where ``evidence`` is a JSON string.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from spark_validation.kafka_ref import POS_STRIDE, UNSEEN_SAMPLE

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame


def _F():
    from pyspark.sql import functions as F

    return F


def _offset(col):
    """Text -> bigint offset, null unless the text is an integer (records.to_int)."""
    F = _F()
    t = F.trim(col)
    return F.when(t.rlike(r"^[+-]?[0-9]+$"), t.try_cast("bigint"))


def micro_ops(ops: "DataFrame") -> "DataFrame":
    """Op rows -> micro-op rows ``(history, seq, op, process, type, mop, key, offset, value, pos)``."""
    F = _F()
    comp = ops.where(F.col("type").isin("ok", "fail", "info") & F.col("f").isin("send", "poll", "txn")).select(
        "history", F.col("line").alias("seq"), F.col("index").alias("op"), "process", "type", "f", "key", "value"
    )
    base = ["history", "seq", "op", "process", "type"]

    def send_cols(x):
        arr = F.from_json(x, "array<string>")
        is_pair = F.trim(x).startswith("[") & (F.size(arr) == 2)
        off = F.when(is_pair, _offset(arr[0]))
        val = F.when(is_pair, arr[1]).otherwise(x)
        return off, val

    # flat form -------------------------------------------------------------------------------
    flat = comp.where(F.col("key").isNotNull() & F.col("f").isin("send", "poll"))
    fs = flat.where(F.col("f") == "send").where(F.col("value").isNotNull())
    off, val = send_cols(F.col("value"))
    flat_send = fs.select(*base, F.lit("send").alias("mop"), "key", off.alias("offset"), val.alias("value"),
                          F.lit(0).cast("long").alias("pos"))
    fp = flat.where(F.col("f") == "poll").select(
        *base, "key", F.posexplode(F.from_json(F.col("value"), "array<array<string>>")).alias("pos", "pair"))
    flat_poll = fp.where(F.size("pair") >= 2).select(
        *base, F.lit("poll").alias("mop"), "key", _offset(F.col("pair")[0]).alias("offset"),
        F.col("pair")[1].alias("value"), F.col("pos").cast("long").alias("pos"))

    # Jepsen micro-op form ---------------------------------------------------------------------
    tx = comp.where(~(F.col("key").isNotNull() & F.col("f").isin("send", "poll"))).select(
        *base, F.posexplode(F.from_json(F.col("value"), "array<array<string>>")).alias("i", "mop_arr"))
    tx = tx.where(F.size("mop_arr") >= 1)
    ts = tx.where((F.col("mop_arr")[0] == "send") & (F.size("mop_arr") >= 3))
    off2, val2 = send_cols(F.col("mop_arr")[2])
    tx_send = ts.select(*base, F.lit("send").alias("mop"), F.col("mop_arr")[1].alias("key"), off2.alias("offset"),
                        val2.alias("value"), (F.col("i").cast("long") * POS_STRIDE).alias("pos"))
    tp = tx.where((F.col("mop_arr")[0] == "poll") & (F.size("mop_arr") >= 2)).select(
        *base, "i", F.explode(F.from_json(F.col("mop_arr")[1], "map<string,array<array<string>>>")).alias("key", "pairs"))
    tp = tp.select(*base, "i", "key", F.posexplode("pairs").alias("j", "pair"))
    tx_poll = tp.where(F.size("pair") >= 2).select(
        *base, F.lit("poll").alias("mop"), "key", _offset(F.col("pair")[0]).alias("offset"),
        F.col("pair")[1].alias("value"), (F.col("i").cast("long") * POS_STRIDE + F.col("j")).alias("pos"))

    out = flat_send.unionByName(flat_poll).unionByName(tx_send).unionByName(tx_poll)
    return out.where(F.col("key").isNotNull() & F.col("value").isNotNull())


def assignments(ops: "DataFrame") -> "DataFrame":
    F = _F()
    return ops.where(F.col("f").isin("assign", "subscribe") & F.col("type").isin("ok", "info")).select(
        "history", F.col("line").alias("aseq"), F.col("process").alias("aprocess"),
        F.coalesce(F.from_json(F.col("value"), "array<string>"), F.array().cast("array<string>")).alias("akeys"))


def _anom(df: "DataFrame", kind: str, evidence) -> "DataFrame":
    F = _F()
    return df.select("history", F.lit(kind).alias("kind"), "key", F.to_json(evidence).alias("evidence"))


def check(ops: "DataFrame", m: "DataFrame | None" = None) -> "DataFrame":
    """All Kafka anomalies of the op table: ``(history, kind, key, evidence-json)``."""
    from pyspark.sql import Window

    F = _F()
    # Materialise the building blocks (localCheckpoint cuts the lineage): every anomaly below is
    # then a small plan over a few leaf tables, which keeps Catalyst's planning time flat.
    # Every table below is keyed by history first: hash-partitioning the micro-ops by history once
    # lets the groupBys, windows and joins on (history, ...) run without another shuffle.
    if m is None:
        m = micro_ops(ops)
    parts = int(ops.sparkSession.conf.get("spark.sql.shuffle.partitions"))
    m = m.repartition(parts, "history").localCheckpoint()
    sends = m.where(F.col("mop") == "send")
    reads = m.where(F.col("mop") == "poll")
    ok_reads = reads.where(F.col("type") == "ok")
    ok_kv = ok_reads.select("history", "key", "value").distinct().localCheckpoint()
    okr_flag = ok_kv.withColumn("ok_read", F.lit(True))

    info_proven = (sends.where(F.col("type") == "info").join(ok_kv, ["history", "key", "value"], "left_semi")
                   .select("history", "seq").distinct().withColumn("proven", F.lit(True)))
    committed = (sends.join(info_proven, ["history", "seq"], "left")
                 .where((F.col("type") == "ok") | ((F.col("type") == "info") & F.col("proven").isNotNull()))
                 .drop("proven")).localCheckpoint()

    cols = ["history", "key", "offset", "value", "op"]
    vo = (reads.where(F.col("offset").isNotNull()).select(*cols)
          .unionByName(committed.where(F.col("offset").isNotNull()).select(*cols))).localCheckpoint()
    index = (vo.select("history", "key", "offset").distinct()
             .withColumn("idx", F.dense_rank().over(Window.partitionBy("history", "key").orderBy("offset")) - 1)
             ).localCheckpoint()

    results = []

    # inconsistent-offsets
    g = vo.groupBy("history", "key", "offset").agg(
        F.array_sort(F.collect_set("value")).alias("values"), F.array_sort(F.collect_set("op")).alias("ops"))
    results.append(_anom(g.where(F.size("values") > 1), "inconsistent-offsets",
                         F.struct(F.col("offset"), F.col("values"), F.col("ops"))))

    # duplicate
    g = vo.groupBy("history", "key", "value").agg(F.array_sort(F.collect_set("offset")).alias("offsets"))
    results.append(_anom(g.where(F.size("offsets") > 1), "duplicate", F.struct("value", "offsets")))

    # G1a
    failed = sends.where(F.col("type") == "fail").select("history", "key", "value", F.col("op").alias("writer"))
    g = (ok_reads.select("history", "key", "value", "offset", F.col("op").alias("reader"))
         .join(failed, ["history", "key", "value"]).distinct())
    results.append(_anom(g, "G1a", F.struct("value", "offset", "writer", "reader")))

    # lost-write
    vi = vo.join(index, ["history", "key", "offset"])
    span = (vi.groupBy("history", "key", "value").agg(F.min("idx").alias("first_idx"), F.max("idx").alias("last_idx"))
            .localCheckpoint())
    readers = ok_reads.groupBy("history", "key", "value").agg(F.min("op").alias("reader"))
    read_span = span.join(readers, ["history", "key", "value"])
    bound = read_span.groupBy("history", "key").agg(F.max("first_idx").alias("bound"))
    max_read = (read_span.join(bound, ["history", "key"]).where(F.col("first_idx") == F.col("bound"))
                .groupBy("history", "key", "bound").agg(F.min(F.struct("value", "reader")).alias("mr"))
                .join(index.withColumnRenamed("idx", "bound").withColumnRenamed("offset", "bound_offset"),
                      ["history", "key", "bound"]))
    writer = committed.groupBy("history", "key", "value").agg(F.min("op").alias("writer"))
    first_off = index.withColumnRenamed("idx", "first_idx").withColumnRenamed("offset", "first_offset")
    lost = (span.join(max_read, ["history", "key"])
            .where(F.col("last_idx") <= F.col("bound"))
            .join(okr_flag, ["history", "key", "value"], "left_anti")
            .join(writer, ["history", "key", "value"])
            .join(first_off, ["history", "key", "first_idx"]))
    results.append(_anom(lost, "lost-write", F.struct(
        F.col("value"), F.col("first_offset").alias("offset"), F.col("writer"),
        F.struct(F.col("mr.value").alias("value"), F.col("bound_offset").alias("offset"),
                 F.col("mr.reader").alias("op")).alias("max_read"))))

    # indexes of micro-ops
    mi = m.join(index, ["history", "key", "offset"], "left").localCheckpoint()

    # internal (within one op)
    w_int = Window.partitionBy("history", "seq", "key", "mop").orderBy("pos")
    pairs = (mi.withColumn("pv", F.lag("value").over(w_int)).withColumn("po", F.lag("offset").over(w_int))
             .withColumn("pi", F.lag("idx").over(w_int))
             .where(F.col("pi").isNotNull() & F.col("idx").isNotNull())
             .withColumn("delta", F.col("idx") - F.col("pi")))
    ev_int = F.struct(F.array("pv", "value").alias("values"), F.array("po", "offset").alias("offsets"),
                      F.col("delta"), F.col("op"))
    for mop, skip, nm in (("poll", "int-poll-skip", "int-nonmonotonic-poll"),
                          ("send", "int-send-skip", "int-nonmonotonic-send")):
        p = pairs.where(F.col("mop") == mop)
        results.append(_anom(p.where(F.col("delta") > 1), skip, ev_int))
        results.append(_anom(p.where(F.col("delta") < 1), nm, ev_int))

    # precommitted-read
    sv = sends.select("history", "seq", "key", "value", "op")
    rv = reads.select("history", "seq", "key", "value")
    pre = (sv.join(rv, ["history", "seq", "key", "value"], "left_semi")
           .groupBy("history", "seq", "key").agg(F.array_sort(F.collect_set("value")).alias("values"),
                                                 F.min("op").alias("op")))
    results.append(_anom(pre, "precommitted-read", F.struct("values", "op")))

    # cross-op, per process
    assigns = assignments(ops)
    summ = (mi.groupBy("history", "seq", "op", "process", "type", "mop", "key")
            .agg(F.min(F.struct("pos", "value", "offset", "idx")).alias("first"),
                 F.max(F.struct("pos", "value", "offset", "idx")).alias("last"))).localCheckpoint()
    for mop, types, skip, nm in (("poll", ("ok",), "poll-skip", "nonmonotonic-poll"),
                                 ("send", ("ok", "info"), None, "nonmonotonic-send")):
        s = summ.where((F.col("mop") == mop) & F.col("type").isin(*types))
        w = Window.partitionBy("history", "process", "key").orderBy("seq")
        s = (s.withColumn("prev", F.lag("last").over(w)).withColumn("prev_seq", F.lag("seq").over(w))
             .withColumn("prev_op", F.lag("op").over(w)).where(F.col("prev_seq").isNotNull()))
        resets = (s.join(assigns, (s.history == assigns.history) & (s.process == assigns.aprocess)
                         & (assigns.aseq > s.prev_seq) & (assigns.aseq < s.seq)
                         & ~F.array_contains(assigns.akeys, s.key), "left_semi"))
        s = s.join(resets.select("history", "process", "key", "seq"), ["history", "process", "key", "seq"], "left_anti")
        s = (s.where(F.col("prev.idx").isNotNull() & F.col("first.idx").isNotNull())
             .withColumn("delta", F.col("first.idx") - F.col("prev.idx")))
        ev = F.struct(F.col("process"), F.array("prev.value", "first.value").alias("values"),
                      F.array("prev.offset", "first.offset").alias("offsets"), F.col("delta"),
                      F.array("prev_op", "op").alias("ops"))
        if skip:
            results.append(_anom(s.where(F.col("delta") > 1), skip, ev))
        results.append(_anom(s.where(F.col("delta") < 1), nm, ev))

    # unseen
    un = (sends.where(F.col("type") == "ok").select("history", "key", "value")
          .join(okr_flag, ["history", "key", "value"], "left_anti").distinct()
          .groupBy("history", "key").agg(F.count("*").alias("count"),
                                         F.slice(F.array_sort(F.collect_set("value")), 1, UNSEEN_SAMPLE).alias("values")))
    results.append(_anom(un, "unseen", F.struct("count", "values")))

    out = results[0]
    for r in results[1:]:
        out = out.unionByName(r)
    return out
