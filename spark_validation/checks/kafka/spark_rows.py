"""Kafka micro-ops of a Spark op table, as column expressions: :func:`.rules.micro_ops`'s
encodings for the op table of :mod:`spark_validation.ingest.spark` (values as text), so the
kernel rows of a Parquet table or a DataFrame are built in the executors without a Python row.
:mod:`.spark` feeds them to the kernel; the cycle search (:mod:`spark_validation.checks.elle`) reads
them too. The Spark tests hold the kernel's verdicts over these rows to the reference's.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from spark_validation.checks.kafka.rules import POS_STRIDE


def _offset(col):
    """Text -> bigint offset, null unless the text is an integer (records.to_int)."""
    t = F.trim(col)
    return F.when(t.rlike(r"^[+-]?[0-9]+$"), t.try_cast("bigint"))


def _mop(mop: str, key, offset, value, pos):
    return F.struct(F.lit(mop).alias("mop"), key.cast("string").alias("key"), offset.alias("offset"),
                    value.cast("string").alias("value"), pos.cast("long").alias("pos"))


def _send_parts(x, arr=None):
    """A send's value -> (offset, value): ``[offset, v]`` gives both, anything else is a value
    with unknown offset (rules._send_parts). ``arr`` is ``x`` parsed as an array, if known."""
    if arr is None:
        arr = F.from_json(x, "array<string>")
    is_pair = F.trim(x).startswith("[") & (F.size(arr) == 2)
    return F.when(is_pair, _offset(arr[0])), F.when(is_pair, arr[1]).otherwise(x)


def _pairs(pairs, key_of, pos_of):
    """``[[offset, value], ...]`` -> poll micro-ops (entries with fewer than two items skipped)."""
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
    assign/subscribe op, and one per key it names (the kernel rows of :mod:`.kernel`).
    """
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
