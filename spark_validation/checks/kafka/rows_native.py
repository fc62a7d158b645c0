""":mod:`.rows_reference`'s functions, same signatures and results, over the compiled loops of
``spark_validation/_rowkernel.c`` (importing this module fails where the install did not build
them; :mod:`.rows` then picks the reference).

The compiled loops build the Kafka kernel rows (into Python lists, ``kernel_columns``, or straight
into Arrow buffers, ``kernel_arrays``), find the send/poll/txn op rows (``rows_with_f``) and code
string columns of a few distinct strings (``small_codes``). They call no Python helper: a row whose
value they do not take (a key or value neither text nor an integer, a value text that is not plain
JSON) comes back declined, and the reference's rows of it (:func:`.rows_reference.columns_at`) are
merged in at its place. ``tests/spark_validation/test_rowkernel.py`` holds each function to the
reference's.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from spark_validation import _rowkernel
from spark_validation.checks.kafka import rows_reference as reference
from spark_validation.checks.kafka.rows_reference import COLUMNS, columns_at, cycle_rows, int_values, row_schema
from spark_validation.checks.kafka.rules import KAFKA_FS, POS_STRIDE
from spark_validation.ingest.jsontext import UNPARSED as _UNPARSED
from spark_validation.ingest.rows import Rows, _const

__all__ = ["kernel_columns", "kernel_table", "cycle_table", "row_schema", "string_codes", "int_values"]

_MOP_CODES = ("send", "poll", "assign")
"""The micro-op names of ``kernel_arrays``'s codes, in code order."""
_TYPES = (pa.string(), pa.string(), pa.int64(), pa.string(), pa.int64())
"""The Arrow types of (mop, key, offset, value, pos)."""


def kernel_columns(rows: Rows) -> dict[str, Any]:
    """:func:`.rows_reference.kernel_columns` by ``_rowkernel.kernel_columns``."""
    n = len(rows.line)
    parsed = rows.parsed if len(rows.parsed) == n else None
    *got, declined = _rowkernel.kernel_columns(rows.type, rows.f, rows.key, rows.value, parsed, _UNPARSED, POS_STRIDE)
    cols = dict(zip(COLUMNS, got))
    if declined:
        cols = _merged(cols, columns_at(rows, np.frombuffer(declined, np.int64).tolist()))
    return {"history": rows.history, **cols, "rows": rows}


def _merged(a: dict[str, list], b: dict[str, list]) -> dict[str, list]:
    """Two sets of kernel columns, each in row order, as one in row order (a row's own rows keep
    their order: each row's rows are all in one of the two)."""
    both = {c: a[c] + b[c] for c in COLUMNS}
    order = sorted(range(len(both["row"])), key=both["row"].__getitem__)
    return {c: [both[c][i] for i in order] for c in COLUMNS}


def kernel_table(rows: Rows | dict):
    """:func:`.rows_reference.kernel_table`: of op rows, from ``_rowkernel.kernel_arrays``'s Arrow
    buffers, without a Python object per value; of given columns, as the reference builds it."""
    if not isinstance(rows, Rows):
        return reference.kernel_table(rows)
    parsed = rows.parsed if len(rows.parsed) == len(rows.line) else None
    n, ri, mop, key, off, val, pos, declined = _rowkernel.kernel_arrays(
        rows.type, rows.f, rows.key, rows.value, parsed, _UNPARSED, POS_STRIDE)
    at = np.frombuffer(ri, np.int64)
    mops = pa.array(_MOP_CODES, pa.string()).take(pa.Array.from_buffers(pa.uint8(), n, [None, pa.py_buffer(mop)]))
    cols = [mops, _strings(n, *key), _ints(n, *off), _strings(n, *val),
            pa.Array.from_buffers(pa.int64(), n, [None, pa.py_buffer(pos)])]
    if declined:
        at, cols = _with_declined(rows, at, cols, np.frombuffer(declined, np.int64).tolist())
    take = pa.array(at, pa.int64())
    return pa.Table.from_arrays([
        _const(rows.history, len(at), pa.string()),
        rows.col("line").take(take), rows.col("index").take(take), rows.col("process").take(take),
        rows.col("type").take(take), *cols], schema=row_schema())


def _strings(n: int, validity: tuple, offsets: bytes, data: bytes) -> pa.Array:
    """A string array of ``n`` values from ``kernel_arrays``'s (bitmap, null count), offsets and data."""
    bitmap, nulls = validity
    buf = pa.py_buffer
    return pa.Array.from_buffers(pa.string(), n, [bitmap and buf(bitmap), buf(offsets), buf(data)], null_count=nulls)


def _ints(n: int, validity: tuple, data: bytes) -> pa.Array:
    """An int64 array of ``n`` values from ``kernel_arrays``'s (bitmap, null count) and data."""
    bitmap, nulls = validity
    buf = pa.py_buffer
    return pa.Array.from_buffers(pa.int64(), n, [bitmap and buf(bitmap), buf(data)], null_count=nulls)


def _with_declined(rows: Rows, at: np.ndarray, cols: list, declined: list[int]) -> tuple[np.ndarray, list]:
    """The compiled loop's row positions and (mop, key, offset, value, pos) arrays with the
    reference's rows of the ``declined`` op rows merged in, in row order."""
    py = columns_at(rows, declined)
    cols = [pa.concat_arrays([c, pa.array(py[name], t)]) for c, name, t in zip(cols, COLUMNS[1:], _TYPES)]
    at = np.concatenate([at, np.asarray(py["row"], np.int64)])
    perm = np.argsort(at, kind="stable")
    order = pa.array(perm, pa.int64())
    return at[perm], [c.take(order) for c in cols]


def small_codes(col: Any) -> tuple[Any, list] | None:
    """(int64 codes, -1 for null; the strings in order of first appearance) of a pyarrow string
    array holding at most a few distinct strings, as ``pyarrow.compute.dictionary_encode`` codes
    it, from ``_rowkernel.small_codes``; None where the array is of another type or holds more
    strings (then :func:`string_codes` encodes it as the reference does)."""
    if col.type != pa.string():
        return None
    validity, offsets, data = col.buffers()
    if offsets is None or data is None:
        return None
    got = _rowkernel.small_codes(validity if col.null_count else None, offsets, data, col.offset, len(col))
    if got is None:
        return None
    return np.frombuffer(got[0], np.int64), got[1]


def string_codes(col: pa.ChunkedArray | pa.Array) -> tuple[np.ndarray, pa.Array]:
    """:func:`.rows_reference.string_codes`, by :func:`small_codes` where the column holds a few
    distinct strings."""
    if isinstance(col, pa.ChunkedArray):
        col = col.combine_chunks()
    few = small_codes(col)
    if few is not None:
        return few[0], pa.array(few[1], pa.string())
    return reference.string_codes(col)


def cycle_table(c: dict | Rows, kt=None):
    """:func:`.rows_reference.cycle_table`, the send/poll/txn op rows found by
    ``_rowkernel.rows_with_f``."""
    rows = c if isinstance(c, Rows) else c["rows"]
    idx = np.frombuffer(_rowkernel.rows_with_f(rows.f, KAFKA_FS), dtype=np.int64)
    return cycle_rows(rows, kernel_table(c) if kt is None else kt, idx)
