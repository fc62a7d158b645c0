"""Kafka anomalies as Spark DataFrame operations.

Definitions: :mod:`spark_validation.kafka_ref` (the pure-Python reference; a Hypothesis test
checks that both find exactly the same anomalies). Everything here is column expressions,
``groupBy``, windows and joins, so the work is spread over the executors and never touches a
Python row. The input is the op table of :mod:`spark_validation.ingest.records` (values as text).

Output: one DataFrame ``(history, kind, key, evidence)`` where ``evidence`` is a JSON string.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from spark_validation.kafka_ref import POS_STRIDE, UNSEEN_SAMPLE

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame


def _F():
    from pyspark.sql import functions as F  # optional: pyspark

    return F


def _offset(col):
    """Text -> bigint offset, null unless the text is an integer (records.to_int)."""
    F = _F()
    t = F.trim(col)
    return F.when(t.rlike(r"^[+-]?[0-9]+$"), t.try_cast("bigint"))


def _mop(mop: str, key, offset, value, pos):
    F = _F()
    return F.struct(F.lit(mop).alias("mop"), key.cast("string").alias("key"), offset.alias("offset"),
                    value.cast("string").alias("value"), pos.cast("long").alias("pos"))


def _send_parts(x, arr=None):
    """A send's value -> (offset, value): ``[offset, v]`` gives both, anything else is a value
    with unknown offset (kafka_ref._send_parts). ``arr`` is ``x`` parsed as an array, if known."""
    F = _F()
    if arr is None:
        arr = F.from_json(x, "array<string>")
    is_pair = F.trim(x).startswith("[") & (F.size(arr) == 2)
    return F.when(is_pair, _offset(arr[0])), F.when(is_pair, arr[1]).otherwise(x)


def _pairs(pairs, key_of, pos_of):
    """``[[offset, value], ...]`` -> poll micro-ops (entries with fewer than two items skipped)."""
    F = _F()
    indexed = F.transform(pairs, lambda pair, j: F.struct(pair.alias("p"), j.alias("j")))
    return F.transform(F.filter(indexed, lambda e: F.size(e["p"]) >= 2),
                       lambda e: _mop("poll", key_of, _offset(e["p"][0]), e["p"][1], pos_of(e["j"])))


_MOP_ARRAY = "array<struct<mop:string,key:string,offset:bigint,value:string,pos:bigint>>"


def micro_ops(ops: "DataFrame", with_assign: bool = False) -> "DataFrame":
    """Op rows -> micro-op rows ``(history, seq, op, process, type, mop, key, offset, value, pos)``.

    One pass whatever the encoding: each completed op's value is parsed once, turned into one
    array of micro-op structs by higher-order functions, and a single ``inline`` makes the rows.
    Only narrow transformations: the rows stay in the partition of their op.

    ``with_assign``: also one row ``mop = 'assign'`` with a null key and value for each ``ok``/``info``
    assign/subscribe op, and one per key it names (the kernel rows of :mod:`kafka_arrow`).
    """
    F = _F()
    col = F.col
    kafka = col("type").isin("ok", "fail", "info") & col("f").isin("send", "poll", "txn")
    is_assign = col("f").isin("assign", "subscribe") & col("type").isin("ok", "info")
    comp = ops.where(kafka | is_assign) if with_assign else ops.where(kafka)
    flat = col("key").isNotNull() & col("f").isin("send", "poll")
    flat_send = flat & (col("f") == "send")
    # parse once (a CASE branch would re-run from_json for every use of the parsed value)
    assign = is_assign if with_assign else F.lit(False)
    comp = comp.select("history", col("line").alias("seq"), col("index").alias("op"), "process", "type", "key",
                       "value", flat.alias("flat"), flat_send.alias("flat_send"), assign.alias("assign"),
                       F.when(flat_send | assign, F.from_json("value", "array<string>")).alias("sarr"),
                       F.when(~flat_send & ~assign, F.from_json("value", "array<array<string>>")).alias("parr"))
    key, value = col("key"), col("value")
    off, val = _send_parts(value, col("sarr"))
    one_send = F.array(_mop("send", key, off, val, F.lit(0)))
    flat_poll = _pairs(col("parr"), key, lambda j: j)

    def one(mop, i):
        name = mop[0]
        base = i.cast("long") * POS_STRIDE
        soff, sval = _send_parts(mop[2])
        send = F.array(_mop("send", mop[1], soff, sval, base))
        entries = F.map_entries(F.from_json(mop[1], "map<string,array<array<string>>>"))
        poll = F.flatten(F.transform(entries, lambda e: _pairs(e["value"], e["key"], lambda j: base + j)))
        return (F.when((name == "send") & (F.size(mop) >= 3), send)
                .when((name == "poll") & (F.size(mop) >= 2), poll))

    txn = F.flatten(F.transform(col("parr"), lambda mop, i: F.coalesce(one(mop, i), F.array().cast(_MOP_ARRAY))))
    arr = (F.when(col("flat_send"), F.when(value.isNotNull(), one_send))
           .when(col("flat"), flat_poll)
           .otherwise(txn))
    if with_assign:
        none = F.lit(None)
        a_op = F.array(_mop("assign", none, none.cast("bigint"), none, F.lit(0)))
        a_keys = F.transform(F.filter(F.coalesce(col("sarr"), F.array().cast("array<string>")), lambda x: x.isNotNull()),
                             lambda x: _mop("assign", x, none.cast("bigint"), none, F.lit(0)))
        arr = F.when(col("assign"), F.concat(a_op, a_keys)).otherwise(arr)
    m = comp.select("history", "seq", "op", "process", "type", F.inline(F.coalesce(arr, F.array().cast(_MOP_ARRAY))))
    keep = col("key").isNotNull() & col("value").isNotNull()
    return m.where(keep | (col("mop") == "assign")) if with_assign else m.where(keep)


def assignments(ops: "DataFrame") -> "DataFrame":
    F = _F()
    return ops.where(F.col("f").isin("assign", "subscribe") & F.col("type").isin("ok", "info")).select(
        "history", F.col("line").alias("aseq"), F.col("process").alias("aprocess"),
        F.coalesce(F.from_json(F.col("value"), "array<string>"), F.array().cast("array<string>")).alias("akeys"))


def _anom(df: "DataFrame", kind: str, evidence) -> "DataFrame":
    F = _F()
    return df.select("history", F.lit(kind).alias("kind"), "key", F.to_json(evidence).alias("evidence"))


def proven_ops(m: "DataFrame") -> "DataFrame":
    """``(hno, seq)`` of the ``info`` ops one of whose sends an ``ok`` poll read (so they must have
    committed). Small: it is built from the ``info`` sends only (broadcast), matched against the
    ``ok`` reads without a shuffle of the reads."""
    F = _F()
    col = F.col
    info = m.where((col("mop") == "send") & (col("type") == "info")).select("hno", "key", "value", "seq")
    reads = m.where((col("mop") == "poll") & (col("type") == "ok")).select("hno", "key", "value")
    return reads.join(F.broadcast(info), ["hno", "key", "value"]).select("hno", "seq").distinct()


def enrich(m: "DataFrame", parts: int, proven: "DataFrame") -> "DataFrame":
    """Micro-ops with every per-row fact the anomalies need, from one shuffle (by history) and
    three sorts, each serving several window passes without a further shuffle:

    0. ``committed`` (an ``ok`` send, or a send of a ``proven`` ``info`` op: a broadcast join),
       hence ``in_vo`` (in the version order);
    1. sort by ``(history, key, offset)``: ``idx``, the offset's dense rank among the key's
       version-order offsets (null outside it), and per offset whether it holds several values;
    2. sort by ``(history, key, value, seq)``: per op and value ``pre`` (the op both sent and read
       it); per value ``okr`` (an ``ok`` poll read it), ``has_fail`` (a send of it failed), whether
       it sits at several offsets, its first/last index, first offset, first reader and writer;
       per key (same sort) the highest first index an ``ok`` poll reached;
    3. sort by ``(history, process, key, mop)`` in op order: the previous micro-op (``pseq``,
       ``pidx``, ``pv``, ``po``, ``pop``), giving pairs inside one op and from one op to the next.

    Each anomaly then shows as a flag (``FLAGS``) on a few rows, so the caller keeps only those;
    before the last sort the rows are cut down to the flags and the evidence of flagged rows.
    """
    from pyspark.sql import Window  # optional: pyspark

    F = _F()
    # Every partitioning and sort key starts with ``hno``, a dense integer standing for the
    # history id (see :func:`check`), so the one shuffle by ``hno`` serves every window below.
    m = m.repartition(parts, "hno")
    col = F.col
    is_send, is_poll = col("mop") == "send", col("mop") == "poll"
    okpoll = is_poll & (col("type") == "ok")
    H = ("hno",)
    full = (Window.unboundedPreceding, Window.unboundedFollowing)

    pv = F.broadcast(proven.select("hno", "seq", F.lit(True).alias("proven")))
    m = m.join(pv, ["hno", "seq"], "left")
    committed = is_send & ((col("type") == "ok") | ((col("type") == "info") & col("proven").isNotNull()))
    m = m.select(*[c for c in m.columns if c != "proven"], committed.alias("committed"))
    m = m.withColumn("in_vo", col("offset").isNotNull() & (is_poll | col("committed")))

    w3 = Window.partitionBy(*H, "key").orderBy(col("offset").asc_nulls_first(), col("in_vo").desc())
    run = w3.rowsBetween(Window.unboundedPreceding, Window.currentRow)
    m = m.withColumn("marker", col("in_vo") & ~F.lag("offset").over(w3).eqNullSafe(col("offset")))
    m = m.select("*", F.sum(col("marker").cast("long")).over(run).alias("cum"),
                 F.max(F.when(col("marker"), col("offset"))).over(run).alias("last_vo"))
    idx = F.when(col("offset").isNotNull() & (col("last_vo") == col("offset")), col("cum") - 1)
    w4 = Window.partitionBy(*H, "key", "offset")
    vo_value = F.when(col("in_vo"), col("value"))
    m = m.select(*[c for c in m.columns if c not in ("marker", "cum", "last_vo")], idx.alias("idx"))
    incons = col("in_vo") & (F.min(vo_value).over(w4) != F.max(vo_value).over(w4))
    m = m.select("*", F.coalesce(incons, F.lit(False)).alias("f_incons"))

    # the (history, key, value, seq) window comes first, so its sort serves the two after it
    wp = Window.partitionBy(*H, "key", "value", "seq")
    m = m.select("*", (F.max(is_send).over(wp) & F.max(is_poll).over(wp)).alias("pre"))
    w5 = Window.partitionBy(*H, "key", "value").rowsBetween(*full)
    vo_idx = F.when(col("in_vo"), col("idx"))
    m = m.select("*", F.max(okpoll).over(w5).alias("okr"),
                 F.max(is_send & (col("type") == "fail")).over(w5).alias("has_fail"),
                 (F.min("offset").over(w5) != F.max("offset").over(w5)).alias("maybe_dup"),
                 F.min(vo_idx).over(w5).alias("first_idx"), F.max(vo_idx).over(w5).alias("last_idx"),
                 F.min(F.when(col("in_vo"), col("offset"))).over(w5).alias("off_min"),
                 F.min(F.when(okpoll, col("op"))).over(w5).alias("reader"),
                 F.min(F.when(col("committed"), col("op"))).over(w5).alias("writer"),
                 F.max(is_send & (col("type") == "ok")).over(w5).alias("ok_sent"))
    w6 = Window.partitionBy(*H, "key").rowsBetween(*full)
    read_struct = F.struct((-col("first_idx")).alias("nb"), "value", "reader", "off_min")
    m = m.withColumn("mr", F.min(F.when(col("okr") & col("first_idx").isNotNull(), read_struct)).over(w6))
    # The per-value flags are final here; what the last sort carries is cut down to the flags and
    # the evidence of flagged rows (sorting wide rows is what costs).
    lost = ~col("okr") & col("writer").isNotNull() & (col("last_idx") <= -col("mr.nb"))
    flags = {
        "f_dup": col("in_vo") & col("maybe_dup"),
        "f_g1a": col("has_fail") & col("okr"),
        "f_lost": lost,
        "f_unseen": col("ok_sent") & ~col("okr"),
        "f_pre": col("pre"),
    }
    m = m.select(*BASE, "idx", "f_incons", *[F.coalesce(c, F.lit(False)).alias(n) for n, c in flags.items()],
                 *[F.when(lost, col(c)).alias(c) for c in ("off_min", "writer", "mr")],
                 F.max(vo_idx).over(w5).alias("vidx"))

    # a send with no offset takes the index where the version order has its value (the last one,
    # as Jepsen's by-value map in jepsen.tests.kafka/version-orders), so reads can prove a skip
    m = m.withColumn("idx", F.coalesce(col("idx"), F.when(is_send & col("offset").isNull(), col("vidx"))))
    cls = (is_poll & (col("type") == "ok")) | (is_send & col("type").isin("ok", "info"))
    m = m.withColumn("cls", cls)
    w7 = Window.partitionBy(*H, "process", "key", "mop", "cls").orderBy("seq", "pos")
    m = m.select("*", F.lag("seq").over(w7).alias("pseq"), F.lag("idx").over(w7).alias("pidx"),
                 F.lag("value").over(w7).alias("pv"), F.lag("offset").over(w7).alias("po"),
                 F.lag("op").over(w7).alias("pop"))
    # a poll inside an info or failed op: its first read of the key is compared with the last read
    # of the process's last ok poll of it (jepsen.tests.kafka/poll-skip+nonmonotonic-cases-per-process
    # compares every op's polls; only ok ops move the position)
    w8 = (Window.partitionBy(*H, "process", "key", "mop").orderBy("seq", "pos")
          .rowsBetween(Window.unboundedPreceding, -1))
    last_ok = F.last(F.when(okpoll, F.struct(col("seq").alias("s"), col("idx").alias("i"), col("value").alias("v"),
                                             col("offset").alias("o"), col("op").alias("p"))), True).over(w8)
    m = m.withColumn("lok", F.when(is_poll & ~col("cls") & (col("pseq").isNull() | (col("pseq") != col("seq"))),
                                   last_ok))
    nb = col("lok").isNotNull()
    m = m.select(*[c for c in m.columns if c not in ("pseq", "pidx", "pv", "po", "pop", "lok")],
                 F.when(nb, col("lok.s")).otherwise(col("pseq")).alias("pseq"),
                 F.when(nb, col("lok.i")).otherwise(col("pidx")).alias("pidx"),
                 F.when(nb, col("lok.v")).otherwise(col("pv")).alias("pv"),
                 F.when(nb, col("lok.o")).otherwise(col("po")).alias("po"),
                 F.when(nb, col("lok.p")).otherwise(col("pop")).alias("pop"),
                 nb.alias("nbpoll"))
    # a pair of micro-ops worth a look: any index step but +1, except a forward skip between two
    # sends of different ops (producers interleave; only going back is an anomaly there)
    delta = col("idx") - col("pidx")
    pair = (col("pidx").isNotNull() & col("idx").isNotNull() & (delta != 1)
            & ~(is_send & (col("pseq") != col("seq")) & (delta > 1)))
    return m.withColumn("f_pair", F.coalesce(pair, F.lit(False)))


BASE = ("hno", "seq", "op", "process", "type", "mop", "key", "offset", "value", "pos")
FLAGS = ("f_incons", "f_dup", "f_g1a", "f_lost", "f_unseen", "f_pre", "f_pair")


def history_numbers(ops: "DataFrame") -> "DataFrame":
    """``(history, hno)``: a dense integer per history id (small; broadcast where it is used)."""
    from pyspark.sql import Window  # optional: pyspark

    F = _F()
    return (ops.select("history").distinct()
            .withColumn("hno", F.row_number().over(Window.orderBy("history")).cast("int")))


def check(ops: "DataFrame", m: "DataFrame | None" = None) -> "DataFrame":
    """All Kafka anomalies of the op table: ``(history, kind, key, evidence-json)``.

    ``m``: the micro-ops of ``ops`` (:func:`micro_ops`) if they were stored at ingest, e.g. as
    Parquet; otherwise they are extracted here and kept for the passes over them."""
    F = _F()
    col = F.col
    spark = ops.sparkSession
    cached = []
    parts = int(spark.conf.get("spark.sql.shuffle.partitions"))
    if m is None:
        # extracted here: kept (memory, else local disk) for the passes over it
        m = micro_ops(ops).persist()
        cached.append(m)
    names = history_numbers(m)
    m = m.join(F.broadcast(names), "history").drop("history")
    E = enrich(m, parts, proven_ops(m))
    is_send, is_poll = col("mop") == "send", col("mop") == "poll"
    okpoll = is_poll & (col("type") == "ok")
    delta = col("idx") - col("pidx")
    any_flag = None
    for c in FLAGS:
        any_flag = col(c) if any_flag is None else any_flag | col(c)
    # The only materialised table: the few rows some anomaly needs (all of an anomalous group's
    # rows, so that every anomaly below is a small groupBy over it).
    R = E.where(any_flag)
    R = R.join(F.broadcast(names), "hno").drop("hno")
    R = R.cache()
    cached.append(R)
    results = []

    # inconsistent-offsets: one offset of a key with several values
    g = (R.where("f_incons").groupBy("history", "key", "offset")
         .agg(F.array_sort(F.collect_set("value")).alias("values"), F.array_sort(F.collect_set("op")).alias("ops")))
    results.append(_anom(g, "inconsistent-offsets", F.struct("offset", "values", "ops")))

    # duplicate: one value at several offsets of a key
    g = (R.where("f_dup").groupBy("history", "key", "value")
         .agg(F.array_sort(F.collect_set("offset")).alias("offsets")).where(F.size("offsets") > 1))
    results.append(_anom(g, "duplicate", F.struct("value", "offsets")))

    # G1a: an ok poll read a value whose send failed
    d = R.where("f_g1a")
    failed = d.where(is_send & (col("type") == "fail")).select("history", "key", "value", col("op").alias("writer"))
    g = (d.where(okpoll).select("history", "key", "value", "offset", col("op").alias("reader"))
         .join(failed, ["history", "key", "value"]).distinct())
    results.append(_anom(g, "G1a", F.struct("value", "offset", "writer", "reader")))

    # lost-write: a committed value no ok poll read, whose last index is at or below the highest
    # index an ok poll reached (each read value counted at its first index)
    g = R.where("f_lost").select("history", "key", "value", "off_min", "writer", "mr").distinct()
    results.append(_anom(g, "lost-write", F.struct(
        col("value"), col("off_min").alias("offset"), col("writer"),
        F.struct(col("mr.value").alias("value"), col("mr.off_min").alias("offset"),
                 col("mr.reader").alias("op")).alias("max_read"))))

    # unseen (informational): ok sends never read by an ok poll
    un = (R.where("f_unseen").select("history", "key", "value").distinct().groupBy("history", "key")
          .agg(F.count("*").alias("count"),
               F.slice(F.array_sort(F.collect_list("value")), 1, UNSEEN_SAMPLE).alias("values")))
    results.append(_anom(un, "unseen", F.struct("count", "values")))

    # precommitted-read: an op read a value it sent itself
    pre = (R.where("f_pre").groupBy("history", "seq", "key")
           .agg(F.array_sort(F.collect_set("value")).alias("values"), F.min("op").alias("op")))
    results.append(_anom(pre, "precommitted-read", F.struct("values", "op")))

    # consecutive micro-ops of a process and key: inside one op (any completion) ...
    s = R.where("f_pair").withColumn("delta", delta)
    internal = s.where(col("pseq") == col("seq"))
    ev_int = F.struct(F.array("pv", "value").alias("values"), F.array("po", "offset").alias("offsets"),
                      col("delta"), col("op"))
    for mop, skip, nm in (("poll", "int-poll-skip", "int-nonmonotonic-poll"),
                          ("send", "int-send-skip", "int-nonmonotonic-send")):
        p = internal.where(col("mop") == mop)
        results.append(_anom(p.where(col("delta") > 1), skip, ev_int))
        results.append(_anom(p.where(col("delta") < 1), nm, ev_int))

    # ... and from one op to the next (ok polls; ok/info sends), unless an ok/info assign or
    # subscribe by the process in between left the key out
    cross = s.where((col("cls") | col("nbpoll")) & (col("pseq") != col("seq")))
    assigns = F.broadcast(assignments(ops).join(F.broadcast(R.where("f_pair").select("history").distinct()),
                                                "history", "left_semi"))
    reset = ((cross.history == assigns.history) & (cross.process == assigns.aprocess)
             & (assigns.aseq > cross.pseq) & (assigns.aseq < cross.seq) & ~F.array_contains(assigns.akeys, cross.key))
    cross = cross.join(assigns, reset, "left_anti")
    ev = F.struct(col("process"), F.array("pv", "value").alias("values"), F.array("po", "offset").alias("offsets"),
                  col("delta"), F.array("pop", "op").alias("ops"))
    for mop, skip, nm in (("poll", "poll-skip", "nonmonotonic-poll"), ("send", None, "nonmonotonic-send")):
        c = cross.where(col("mop") == mop)
        if skip:
            results.append(_anom(c.where(col("delta") > 1), skip, ev))
        results.append(_anom(c.where(col("delta") < 1), nm, ev))

    out = results[0]
    for r in results[1:]:
        out = out.unionByName(r)
    out._kraft_cached = cached  # released by collect()
    return out


def collect(ops: "DataFrame", m: "DataFrame | None" = None) -> list:
    """Run :func:`check` and return its rows, releasing what it cached."""
    out = check(ops, m)
    try:
        return out.collect()
    finally:
        for df in getattr(out, "_kraft_cached", []):
            df.unpersist()
