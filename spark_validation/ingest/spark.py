"""Spark ingest: history files and Parquet corpora -> the op table, plus malformed lines.

* NDJSON (``.ndjson``/``.jsonl``): read by Spark itself (``spark.read.text`` + ``from_json``
  with an explicit schema). The history id is the file; the real 1-based file line is derived
  from the hidden ``_metadata`` columns: rows of one file block arrive in file order inside a
  partition, so ``monotonically_increasing_id`` minus the block's first id is the line within
  the block, and a running sum of earlier blocks' line counts makes it a file line.
* EDN (and ``.json`` arrays): parsed in the executors (``flatMap`` over the file list) by the
  history reader of contract section 6 (:func:`spark_validation.ingest.records.read_any`).
* Parquet: a table with the op columns (``history`` id column required), e.g. the
  ``ops.parquet`` an earlier audit wrote.

Malformed lines are never dropped silently: each is returned with file, line and reason.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Iterable

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from spark_validation.ingest.history import NOT_UTF8, no_op_readable, select_model, to_jsonable
from spark_validation.ingest.records import InputError, Malformed, ndjson_lines, read_any, require_op_columns
from spark_validation.ingest.rows import Rows, structure_problem
from spark_validation.ingest.spark_schema import MALFORMED_SCHEMA, OPS_SCHEMA

PROBLEM_DDL = "history string, line bigint, reason string"
_PROBLEM_TYPES = (pa.string(), pa.int64(), pa.string())
_LINE_SCHEMA = (
    "struct<process:string,type:string,f:string,key:string,value:string,time:string,"
    "index:string,kind:string,model:string,_corrupt:string>"
)


def _int_col(c):
    t = F.trim(c)
    return F.when(t.rlike(r"^[+-]?[0-9]+$"), t.try_cast("bigint"))


def file_lines(spark: "SparkSession", paths: list[str]) -> "DataFrame":
    """``(path, line, text)`` for every line of the given text files, with real line numbers."""
    raw = spark.read.text(paths).select(
        F.col("value").alias("text"),
        F.url_decode(F.regexp_replace(F.col("_metadata.file_path"), r"^file:(//)?", "")).alias("abs"),
        F.col("_metadata.file_block_start").alias("block"),
        F.monotonically_increasing_id().alias("mid"),
    )
    blocks = raw.groupBy("abs", "block").agg(F.min("mid").alias("mid0"), F.count("*").alias("n"))
    w = Window.partitionBy("abs").orderBy("block").rowsBetween(Window.unboundedPreceding, -1)
    blocks = blocks.withColumn("before", F.coalesce(F.sum("n").over(w), F.lit(0)))
    mapping = spark.createDataFrame([(str(Path(p).resolve()), p) for p in paths], "abs string, path string")
    return (raw.join(F.broadcast(blocks.select("abs", "block", "mid0", "before")), ["abs", "block"])
            .join(F.broadcast(mapping), "abs", "left")
            .select(F.coalesce("path", "abs").alias("path"),
                    (F.col("before") + F.col("mid") - F.col("mid0") + 1).alias("line"), "text"))


def ndjson_meta(path: str, cli_model: str | None) -> tuple[str, int, str | None, object, str | None]:
    """Driver-side look at one NDJSON file's header: ``(path, header_line, model, initial, skip)``.

    ``header_line`` is 0 without a header; the model follows :func:`history.select_model`
    (sidecar, header, ``model.txt``, then ``--model``); ``skip`` is a reason to skip the file
    (a header of another kind or version), as the history reader does.
    """
    header: dict = {}
    header_line = 0
    seen = 0  # non-blank lines looked at (at most two: a header and a first op)
    for n, obj, problem, _ in ndjson_lines(path):  # only the first non-blank line can be a header
        seen += 1
        if seen > 1:
            break
        if problem is None and "kind" in obj and "type" not in obj:
            if obj.get("kind") != "history":
                return path, n, None, None, f"not a history: header kind is {obj.get('kind')!r}"
            if obj.get("v") != 1:
                return path, n, None, None, f"unsupported history version v={obj.get('v')!r}"
            header, header_line = obj, n
        else:
            break
    if seen == 0:  # as history.parse_history_text: an empty file is skipped (and counted), not dropped
        return path, None, None, None, "no operation in the file (empty)"
    if seen == 1 and header_line:  # a header and nothing else: skipped, never a 0-op history
        return path, None, None, None, "no operation in the file (only a header)"
    model, initial = select_model(path, header, cli_model)
    return path, header_line, model, initial, None


def read_ndjson(spark: "SparkSession", metas: list[tuple]) -> tuple["DataFrame", "DataFrame"]:
    """(ops, malformed) of NDJSON history files; malformed is ``(path, line, reason, text)``.

    The per-line rules are the history reader's (:mod:`spark_validation.ingest.history`): a line that
    is not a JSON object, lacks ``type`` or ``process``, has an unknown type, a structured
    process, or a non-integer ``index``/``time`` is malformed.
    """
    paths = [m[0] for m in metas]
    meta = spark.createDataFrame([(m[0], m[1], m[2]) for m in metas], "path string, header_line long, model string")
    # blank as JSON defines white space (space, tab, CR, LF), as the in-process reader tests it
    lines = file_lines(spark, paths).where(~F.col("text").rlike("^[ \t\r\n]*$")).join(F.broadcast(meta), "path")
    lines = lines.where(F.col("line") != F.col("header_line"))
    p = lines.withColumn("j", F.from_json("text", _LINE_SCHEMA, {"columnNameOfCorruptRecord": "_corrupt"}))
    t = F.col("j.type")
    proc = F.trim(F.col("j.process"))
    num = r"^[+-]?[0-9]+$"
    reason = (F.when(~F.is_valid_utf8("text"), F.lit(NOT_UTF8))
              .when(F.col("j").isNull() | F.col("j._corrupt").isNotNull(), F.lit("invalid JSON or not a JSON object"))
              .when(t.isNull(), F.lit("op has no type"))
              .when(~t.isin("invoke", "ok", "fail", "info"), F.format_string("unknown op type '%s'", t))
              .when(proc.isNull(), F.lit("op has no process"))
              .when(proc.startswith("[") | proc.startswith("{"), F.format_string("bad process %s", proc))
              .when(F.col("j.index").isNotNull() & ~F.trim(F.col("j.index")).rlike(num),
                    F.format_string("bad index %s", F.col("j.index")))
              .when(F.col("j.time").isNotNull() & F.trim(F.col("j.time")).try_cast("double").isNull(),
                    F.format_string("bad time %s", F.col("j.time"))))
    p = p.withColumn("reason", reason)
    bad = p.where(F.col("reason").isNotNull()).select(
        "path", "line", "reason", F.substring("text", 1, 200).alias("text"))
    good = p.where(F.col("reason").isNull())
    pos = F.row_number().over(Window.partitionBy("path").orderBy("line")) - 1
    ops = good.select(F.col("path").alias("history"), "line",
                      F.coalesce(_int_col(F.col("j.index")), pos).alias("index"),
                      proc.alias("process"), t.alias("type"), F.col("j.f").alias("f"),
                      F.col("j.key").alias("key"), F.col("j.value").alias("value"),
                      F.trim(F.col("j.time")).try_cast("double").cast("bigint").alias("time"), "model")
    return ops, bad


def read_parsed(spark: "SparkSession", paths: list[str], model: str | None
                ) -> tuple["DataFrame", "DataFrame", list[tuple[str, str | None, str | None]], list[Malformed]]:
    """(ops, malformed lines, [(history, model, initial-json)], skipped files) of EDN/JSON files,
    parsed in executors. A file the reader rejects whole (not a history, undecodable) is a skipped
    file, as in ``--no-spark``, not a malformed line."""
    sc = spark.sparkContext
    n = max(1, min(len(paths), sc.defaultParallelism * 4))
    cli_model = model
    names = OPS_SCHEMA.fieldNames()

    def parse(path: str):
        try:
            rows, bad, h = read_any(Path(path), cli_model)
        except Exception as exc:  # noqa: BLE001 - a file the reader rejects whole is reported, not fatal
            yield ("skip", (path, getattr(exc, "line", None), (getattr(exc, "reason", None) or str(exc))[:300]))
            return
        yield ("meta", (h.id, h.model, json.dumps(to_jsonable(h.initial)) if h.initial is not None else None))
        for r in rows:
            yield ("op", tuple(r[c] for c in names))
        for b in bad:
            yield ("bad", (b.path, b.line, b.reason, b.text[:200]))

    parsed = sc.parallelize(paths, n).flatMap(parse).persist()
    ops = spark.createDataFrame(parsed.filter(lambda t: t[0] == "op").map(lambda t: t[1]), OPS_SCHEMA)
    bad = spark.createDataFrame(parsed.filter(lambda t: t[0] == "bad").map(lambda t: t[1]), MALFORMED_SCHEMA)
    metas = parsed.filter(lambda t: t[0] == "meta").map(lambda t: t[1]).collect()
    skipped = [Malformed(p, line, reason, "")
               for p, line, reason in parsed.filter(lambda t: t[0] == "skip").map(lambda t: t[1]).collect()]
    return ops, bad, metas, sorted(skipped, key=lambda m: m.path)


def read_parquet(spark: "SparkSession", paths: list[str], model: str | None) -> "DataFrame":
    """Op rows of Parquet tables written by the audit (``ops.parquet``) or in the same shape.

    Required: ``history``, ``type``, ``f``; the other op columns are filled when absent (``line``
    from the row order is NOT guessed: a table without ``line`` must have ``index``).
    """
    out = None
    for path in paths:
        df = spark.read.parquet(path)
        cols = set(df.columns)
        require_op_columns(path, cols)
        if "line" not in cols and "index" not in cols:
            raise InputError(f"{path}: Parquet table needs a 'line' or 'index' column to order ops")
        sel = []
        for field in OPS_SCHEMA.fields:
            if field.name in cols:
                sel.append(F.col(field.name).cast(field.dataType).alias(field.name))
            elif field.name == "line":
                sel.append(F.col("index").cast("bigint").alias("line"))
            elif field.name == "index":
                sel.append(F.col("line").cast("bigint").alias("index"))
            else:
                sel.append(F.lit(None).cast(field.dataType).alias(field.name))
        df = df.select(*sel)
        if model:  # --model is the default for rows naming none (as for files)
            df = df.withColumn("model", F.coalesce(F.col("model"), F.lit(model)))
        out = df if out is None else out.unionByName(df)
    return out


def pairing_problems(ops: "DataFrame") -> "DataFrame":
    """``(history, line, reason)``: the first problem per history of Jepsen's pairing rule, found
    in the executors by the in-process path's own function (:func:`first_problem`)."""
    return (ops.select("history", "line", "index", "process", "type", "f")
            .groupBy("history").applyInArrow(first_problem, PROBLEM_DDL))


def first_problem(t: pa.Table) -> pa.Table:
    """The ``applyInArrow`` function of :func:`pairing_problems`: the op rows of one history ->
    its first pairing problem (:func:`spark_validation.ingest.rows.structure_problem`), as no row
    or one row of :data:`PROBLEM_DDL`."""
    t = t.sort_by("line")
    rows = Rows(t.column("history")[0].as_py() if t.num_rows else "")
    for name in ("line", "index", "process", "type", "f"):
        setattr(rows, name, t.column(name).to_pylist())
    got = structure_problem(rows) if t.num_rows else None
    found = [] if got is None else [(rows.history, rows.line[got[0]], got[1])]
    return pa.table([pa.array([x[i] for x in found], typ) for i, typ in enumerate(_PROBLEM_TYPES)],
                    names=["history", "line", "reason"])


def load(spark: "SparkSession", histories: Iterable[Path], tables: Iterable[Path], model: str | None
         ) -> tuple["DataFrame", "DataFrame", dict[str, tuple[str | None, str | None]], list[Path], list[Malformed]]:
    """All inputs -> (ops, malformed lines, {history: (model, initial-json)}, extra trace files,
    skipped files)."""
    hs = [str(p) for p in histories]
    nd = [p for p in hs if p.endswith((".ndjson", ".jsonl"))]
    other = [p for p in hs if not p.endswith((".ndjson", ".jsonl"))]
    ops_parts, bad_parts = [], []
    meta: dict[str, tuple[str | None, str | None]] = {}
    traces: list[Path] = []
    skipped: list[Malformed] = []
    if nd:
        metas = []
        for p in nd:
            path, hl, m, initial, skip = ndjson_meta(p, model)
            if skip and "kind is 'trace'" in skip:
                traces.append(Path(p))
            elif skip:
                skipped.append(Malformed(p, hl, skip, ""))
            else:
                metas.append((path, hl, m))
                meta[path] = (m, json.dumps(to_jsonable(initial)) if initial is not None else None)
        if metas:
            o, b = read_ndjson(spark, metas)
            ops_parts.append(o)
            bad_parts.append(b)
    if other:
        o, b, ms, sk = read_parsed(spark, other, model)
        ops_parts.append(o)
        bad_parts.append(b)
        skipped.extend(sk)
        for hid, m, init in ms:
            meta[hid] = (m, init)
    tl = [str(p) for p in tables]
    if tl:
        ops_parts.append(read_parquet(spark, tl, model))
    ops = spark.createDataFrame([], OPS_SCHEMA)
    for o in ops_parts:
        ops = ops.unionByName(o)
    bad = spark.createDataFrame([], MALFORMED_SCHEMA)
    for b in bad_parts:
        bad = bad.unionByName(b)
    return ops, bad, meta, traces, skipped


def unreadable_files(malformed: list[dict], read: Iterable[str], with_ops: set[str]) -> list[dict]:
    """``malformed`` with the line entries of each NDJSON file that yielded no op at all replaced
    by one skipped-file entry, as the history reader reports such a file in-process."""
    empty = set(read) - with_ops
    lines: dict[str, list[int]] = {}
    for m in malformed:
        if m["scope"] == "line" and m["path"] in empty:
            lines.setdefault(m["path"], []).append(m["line"])
    kept = [m for m in malformed if not (m["scope"] == "line" and m["path"] in lines)]
    files = [{"scope": "file", "path": p, "line": min(ls), "reason": no_op_readable(len(ls), min(ls))}
             for p, ls in sorted(lines.items())]
    return files + kept


def malformed_rows(bad: "DataFrame") -> list[Malformed]:
    return [Malformed(r["path"], r["line"], r["reason"], r["text"] or "") for r in bad.orderBy("path", "line").collect()]
