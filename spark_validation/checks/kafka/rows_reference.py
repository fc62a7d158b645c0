"""The check kernels' input tables, built from a history's op rows without an ``Op`` per row, as
plain Python loops (the reference): the Kafka kernel rows of :mod:`.kernel` (:func:`kernel_table`,
equal to :func:`.kernel.input_table`), Elle's cycle rows (:func:`cycle_table`), and the dictionary
codes the numpy kernels take (:func:`string_codes`, :func:`int_values`).

:mod:`.rows_native` exports the same functions over the compiled loops of
``spark_validation/_rowkernel.c``; :mod:`.rows` picks one of the two once.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from spark_validation.checks.kafka.rules import KAFKA_FS, kernel_mops
from spark_validation.ingest.records import OpRow, to_text
from spark_validation.ingest.jsontext import UNPARSED as _UNPARSED
from spark_validation.ingest.rows import Rows, _const

__all__ = ["kernel_columns", "kernel_table", "cycle_table", "row_schema", "string_codes", "int_values"]

COLUMNS = ("row", "mop", "key", "offset", "value", "pos")
"""What :func:`kernel_columns` collects per micro-op (``row``: the op row's position)."""


def kernel_columns(rows: Rows) -> dict[str, Any]:
    """The Kafka kernel rows of ``rows`` (:data:`.kernel.ROW_COLUMNS`), in the order
    :func:`.kernel.input_table` builds them, with :func:`.rules.micro_ops`'s rules. Per
    micro-op only what differs within an op is collected; ``seq``/``op``/``process``/``type``
    come from the op row (``row``: its position in ``rows``)."""
    return {"history": rows.history, **columns_at(rows, range(len(rows.line))), "rows": rows}


def columns_at(rows: Rows, positions: Any) -> dict[str, list]:
    """:func:`kernel_columns`'s lists of the op rows at ``positions`` (all of them for the
    reference; the rows the compiled loop declines for :mod:`.rows_native`)."""
    cols: dict[str, list] = {c: [] for c in COLUMNS}
    appends = [cols[c].append for c in COLUMNS[1:]]
    decoded = rows.parsed if len(rows.parsed) == len(rows.line) else ()
    for n in positions:
        for mop in _row_mops(rows, n, decoded):
            cols["row"].append(n)
            for add, x in zip(appends, mop):
                add(x)
    return cols


def _row_mops(rows: Rows, n: int, decoded: Any) -> list[tuple]:
    """The reference's kernel rows (:func:`.rules.kernel_mops`) of op row ``n``, whose value is the
    decoded one where the row holds it (``Rows.parsed``: the structure the value text encodes)."""
    value = rows.value[n]
    if n < len(decoded) and decoded[n] is not _UNPARSED:
        value = to_text(decoded[n])
    return kernel_mops(OpRow(rows.history, rows.line[n], rows.index[n], rows.process[n], rows.type[n], rows.f[n],
                             rows.key[n], value, rows.time[n], rows.model))


def row_schema() -> pa.Schema:
    """The kernel rows' pyarrow schema (:data:`.kernel.ROW_COLUMNS`, with their types)."""
    return pa.schema([("history", pa.string()), ("seq", pa.int64()), ("op", pa.int64()), ("process", pa.string()),
                      ("type", pa.string()), ("mop", pa.string()), ("key", pa.string()), ("offset", pa.int64()),
                      ("value", pa.string()), ("pos", pa.int64())])


def kernel_table(rows: Rows | dict):
    """:func:`kernel_columns` (of ``rows``, or given) as the kernel's pyarrow table
    (:func:`row_schema`)."""
    c = kernel_columns(rows) if isinstance(rows, Rows) else rows
    r = c["rows"]
    n = len(c["row"])
    take = pa.array(np.asarray(c["row"], dtype=np.int64), pa.int64())
    i64, st = pa.int64(), pa.string()
    return pa.Table.from_arrays([
        _const(c["history"], n, st),
        r.col("line").take(take), r.col("index").take(take), r.col("process").take(take), r.col("type").take(take),
        pa.array(c["mop"], st), pa.array(c["key"], st), pa.array(c["offset"], i64), pa.array(c["value"], st),
        pa.array(c["pos"], i64)], schema=row_schema())


def string_codes(col: pa.ChunkedArray | pa.Array) -> tuple[np.ndarray, pa.Array]:
    """Dictionary codes (int64, -1 for null) and the dictionary of a string column, for the
    numpy kernels (:mod:`.kernel`, :mod:`spark_validation.checks.elle`)."""
    if isinstance(col, pa.ChunkedArray):
        col = col.combine_chunks()
    d = pc.dictionary_encode(col)
    idx = d.indices.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64, copy=False)
    return idx, d.dictionary


def int_values(col: pa.ChunkedArray | pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """(values with nulls as 0, validity mask) of an integer column, for the numpy kernels."""
    if isinstance(col, pa.ChunkedArray):
        col = col.combine_chunks()
    valid = ~col.is_null().to_numpy(zero_copy_only=False)
    vals = col.fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64, copy=False)
    return vals, valid


def cycle_table(c: dict | Rows, kt=None):
    """The cycle rows of :mod:`elle` (``elle.ROW_COLUMNS``, what ``elle.input_table`` builds with
    one row per op): one ``op`` row (``pos`` -1) per send/poll/txn op row, invocations included,
    and the send/poll micro-ops of :func:`kernel_columns` (the assign rows left out). ``c`` is
    :func:`kernel_columns`'s result, or the rows themselves; ``kt`` its :func:`kernel_table`
    where already built."""
    rows = c if isinstance(c, Rows) else c["rows"]
    idx = np.fromiter((n for n, f in enumerate(rows.f) if f in KAFKA_FS), dtype=np.int64)
    return cycle_rows(rows, kernel_table(c) if kt is None else kt, idx)


def cycle_rows(rows: Rows, kt, idx: np.ndarray):
    """:func:`cycle_table` from the kernel table ``kt`` and the positions ``idx`` of the
    send/poll/txn op rows."""
    mop = kt.column("mop")
    if mop.null_count or pc.any(pc.equal(mop, "assign")).as_py():  # else nothing to leave out (and no copy)
        kt = kt.filter(pc.not_equal(mop, "assign"))
    take = pa.array(idx, pa.int64())
    m, i64, st = len(idx), pa.int64(), pa.string()
    ops = pa.Table.from_arrays([
        _const(rows.history, m, st),
        rows.col("line").take(take), rows.col("index").take(take), rows.col("process").take(take),
        rows.col("type").take(take), _const("op", m, st), pa.nulls(m, st), pa.nulls(m, i64), pa.nulls(m, st),
        pa.array(np.full(m, -1, dtype=np.int64))], schema=kt.schema)
    return pa.concat_tables([ops, kt])
