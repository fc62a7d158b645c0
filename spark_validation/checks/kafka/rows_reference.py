"""The check kernels' input tables, built from a history's op rows without an ``Op`` per row:
the Kafka kernel rows of :mod:`.kernel` (:func:`kernel_table`, equal to
:func:`.kernel.input_table`), Elle's cycle rows (:func:`cycle_table`), and the dictionary
codes the numpy kernels take (:func:`string_codes`, :func:`int_values`).

The loops run compiled (spark_validation/_rowkernel.c) where the install built them
(:data:`spark_validation.ingest.rows.ROW_KERNEL`, which ``KRAFT_COMPILED=off`` switches off),
with the same rows (``tests/spark_validation/test_rowkernel.py``). The compiled loop calls no
Python helper: a row whose value it does not take (a key or value neither text nor an integer, a
value text that is not plain JSON) comes back declined, and the Python loop's rows of it
(:func:`_row_mops`) are merged in at its place.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from spark_validation.ingest import rows as _rows
from spark_validation.ingest.records import to_text
from spark_validation.ingest.rows import _UNPARSED, Rows, _const
from spark_validation.checks.kafka.rules import POS_STRIDE, kernel_mops

__all__ = ["kernel_columns", "kernel_table", "cycle_table", "row_schema", "string_codes", "int_values", "small_codes"]

ROW_KERNEL: Any = _rows.ROW_KERNEL
"""The compiled loops in use (``_rowkernel.kernel_columns``, ``kernel_arrays``, ``rows_with_f``,
``small_codes``), or ``None``: the Python code."""
_KAFKA_FS = ("send", "poll", "txn")
_COLUMNS = ("row", "mop", "key", "offset", "value", "pos")


def kernel_columns(rows: Rows) -> dict[str, Any]:
    """The Kafka kernel rows of ``rows`` (:data:`.kernel.ROW_COLUMNS`), in the order
    :func:`.kernel.input_table` builds them, with :func:`.rules.micro_ops`'s rules. Per
    micro-op only what differs within an op is collected; ``seq``/``op``/``process``/``type``
    come from the op row (``row``: its position in ``rows``). The loop runs compiled
    (spark_validation/_rowkernel.c) where the install built it, with the same rows."""
    if ROW_KERNEL is not None:
        n = len(rows.line)
        parsed = rows.parsed if len(rows.parsed) == n else None
        *got, declined = ROW_KERNEL.kernel_columns(
            rows.type, rows.f, rows.key, rows.value, parsed, _UNPARSED, POS_STRIDE)
        cols = dict(zip(_COLUMNS, got))
        if declined:
            cols = _merged(cols, _python_columns(rows, np.frombuffer(declined, np.int64).tolist()))
        return {"history": rows.history, **cols, "rows": rows}
    return {"history": rows.history, **_python_columns(rows, range(len(rows.line))), "rows": rows}


def _python_columns(rows: Rows, positions: Any) -> dict[str, list]:
    """:func:`kernel_columns`'s lists of the op rows at ``positions`` by the Python loop: all of
    them where the compiled loop is not in use, else the rows it declined."""
    cols: dict[str, list] = {c: [] for c in _COLUMNS}
    appends = [cols[c].append for c in _COLUMNS[1:]]
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
    row = {"history": rows.history, "line": rows.line[n], "index": rows.index[n], "process": rows.process[n],
           "type": rows.type[n], "f": rows.f[n], "key": rows.key[n], "value": rows.value[n], "time": rows.time[n],
           "model": rows.model}
    if n < len(decoded) and decoded[n] is not _UNPARSED:
        row["value"] = to_text(decoded[n])
    return kernel_mops(row)


def _merged(a: dict[str, list], b: dict[str, list]) -> dict[str, list]:
    """Two sets of kernel columns, each in row order, as one in row order (a row's own rows keep
    their order: each row's rows are all in one of the two)."""
    both = {c: a[c] + b[c] for c in _COLUMNS}
    order = sorted(range(len(both["row"])), key=both["row"].__getitem__)
    return {c: [both[c][i] for i in order] for c in _COLUMNS}


def row_schema() -> pa.Schema:
    """The kernel rows' pyarrow schema (:data:`.kernel.ROW_COLUMNS`, with their types)."""
    return pa.schema([("history", pa.string()), ("seq", pa.int64()), ("op", pa.int64()), ("process", pa.string()),
                      ("type", pa.string()), ("mop", pa.string()), ("key", pa.string()), ("offset", pa.int64()),
                      ("value", pa.string()), ("pos", pa.int64())])


def kernel_table(rows: Rows | dict):
    """:func:`kernel_columns` as the kernel's pyarrow table (:func:`row_schema`)."""
    if isinstance(rows, Rows) and ROW_KERNEL is not None:
        return _kernel_table_compiled(rows)
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


def _kernel_table_compiled(rows: Rows):
    """:func:`kernel_table` from the compiled loop's Arrow buffers (``_rowkernel.kernel_arrays``):
    the same table, without a Python object per value."""
    parsed = rows.parsed if len(rows.parsed) == len(rows.line) else None
    n, ri, mop, key, off, val, pos, declined = ROW_KERNEL.kernel_arrays(
        rows.type, rows.f, rows.key, rows.value, parsed, _UNPARSED, POS_STRIDE)
    buf = pa.py_buffer

    def strings(v: tuple, offsets: bytes, data: bytes):
        (bitmap, nulls) = v
        return pa.Array.from_buffers(pa.string(), n, [bitmap and buf(bitmap), buf(offsets), buf(data)], null_count=nulls)

    def ints(v: tuple, data: bytes):
        (bitmap, nulls) = v
        return pa.Array.from_buffers(pa.int64(), n, [bitmap and buf(bitmap), buf(data)], null_count=nulls)

    at = np.frombuffer(ri, np.int64)
    mops = _MOP_NAMES().take(pa.Array.from_buffers(pa.uint8(), n, [None, buf(mop)]))
    cols = [mops, strings(*key), ints(*off), strings(*val), pa.Array.from_buffers(pa.int64(), n, [None, buf(pos)])]
    if declined:
        at, cols = _with_declined(rows, at, cols, np.frombuffer(declined, np.int64).tolist())
    take = pa.array(at, pa.int64())
    return pa.Table.from_arrays([
        _const(rows.history, len(at), pa.string()),
        rows.col("line").take(take), rows.col("index").take(take), rows.col("process").take(take),
        rows.col("type").take(take), *cols], schema=row_schema())


def _with_declined(rows: Rows, at: np.ndarray, cols: list, declined: list[int]) -> tuple[np.ndarray, list]:
    """The compiled loop's row positions and (mop, key, offset, value, pos) arrays with the Python
    loop's rows of the ``declined`` op rows merged in, in row order."""
    py = _python_columns(rows, declined)
    types = (pa.string(), pa.string(), pa.int64(), pa.string(), pa.int64())
    cols = [pa.concat_arrays([c, pa.array(py[name], t)]) for c, name, t in zip(cols, _COLUMNS[1:], types)]
    at = np.concatenate([at, np.asarray(py["row"], np.int64)])
    perm = np.argsort(at, kind="stable")
    order = pa.array(perm, pa.int64())
    return at[perm], [c.take(order) for c in cols]


def _MOP_NAMES():
    return pa.array(["send", "poll", "assign"], pa.string())  # the codes of _rowkernel.kernel_arrays


def small_codes(col: Any) -> tuple[Any, list] | None:
    """(int64 codes, -1 for null; the strings in order of first appearance) of a pyarrow string
    array holding at most a few distinct strings, as ``pyarrow.compute.dictionary_encode`` codes
    it, from the compiled loop (``_rowkernel.small_codes``); None where that is not built, the
    array is of another type, or it holds more strings (then the caller encodes it)."""
    if ROW_KERNEL is None or col.type != pa.string():
        return None
    validity, offsets, data = col.buffers()
    if offsets is None or data is None:
        return None
    got = ROW_KERNEL.small_codes(validity if col.null_count else None, offsets, data, col.offset, len(col))
    if got is None:
        return None
    return np.frombuffer(got[0], np.int64), got[1]


def string_codes(col: pa.ChunkedArray | pa.Array) -> tuple[np.ndarray, pa.Array]:
    """Dictionary codes (int64, -1 for null) and the dictionary of a string column, for the
    numpy kernels (:mod:`.kernel`, :mod:`spark_validation.checks.elle`)."""
    if isinstance(col, pa.ChunkedArray):
        col = col.combine_chunks()
    few = small_codes(col)
    if few is not None:
        return few[0], pa.array(few[1], pa.string())
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
    :func:`kernel_columns`'s result, or the rows themselves."""
    if isinstance(c, Rows):
        c = {"rows": c, "history": c.history}
    rows = c["rows"]
    kt = kernel_table(c) if kt is None else kt
    mop = kt.column("mop")
    if mop.null_count or pc.any(pc.equal(mop, "assign")).as_py():  # else nothing to leave out (and no copy)
        kt = kt.filter(pc.not_equal(mop, "assign"))
    if ROW_KERNEL is not None:
        idx = np.frombuffer(ROW_KERNEL.rows_with_f(rows.f, _KAFKA_FS), dtype=np.int64)
    else:
        idx = np.fromiter((n for n, f in enumerate(rows.f) if f in _KAFKA_FS), dtype=np.int64)
    take = pa.array(idx, pa.int64())
    m, i64, st = len(idx), pa.int64(), pa.string()
    ops = pa.Table.from_arrays([
        _const(c["history"], m, st),
        rows.col("line").take(take), rows.col("index").take(take), rows.col("process").take(take),
        rows.col("type").take(take), _const("op", m, st), pa.nulls(m, st), pa.nulls(m, i64), pa.nulls(m, st),
        pa.array(np.full(m, -1, dtype=np.int64))], schema=kt.schema)
    return pa.concat_tables([ops, kt])

