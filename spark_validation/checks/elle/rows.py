"""Cycle rows: the op rows of send/poll/txn ops, one ``op`` row per op and one row per micro-op
(the micro-ops of ``kafka_rules.micro_ops``, written out column by column here; the tests compare
the two), as the Arrow table (``ROW_COLUMNS``) the vectorised graph build (:mod:`.graph`) reads."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from spark_validation.checks.kafka import rules as kafka_rules
from spark_validation.ingest.records import COMPLETIONS, OpRow, parse_text, to_int, to_text

ROW_COLUMNS = ("history", "seq", "op", "process", "type", "mop", "key", "offset", "value", "pos")
OP_IN = ("history", "line", "index", "process", "type", "f", "key", "value")  # the op columns the rows need


def _text(x: Any) -> Any:
    """records.to_text, with the common cases first."""
    if x is None or type(x) is str:
        return x
    if type(x) is int:
        return str(x)
    return to_text(x)


def _int(x: Any) -> Any:
    return x if type(x) is int else to_int(x)


def input_table(rows: list[OpRow]) -> Any:
    """Cycle rows of op rows, in-process: per send/poll/txn op row one ``op`` row, then its
    micro-ops (those of :func:`kafka_rules.micro_ops`, written out column by column here; the
    tests compare the two)."""
    return _cycle_rows(*([getattr(r, c) for r in rows] for c in OP_IN))


def _cycle_rows(hs: list, lines: list, idxs: list, procs: list, types: list, fs: list, keys: list,
                values: list) -> Any:
    """The cycle rows (an Arrow table in ``ROW_COLUMNS``) of op rows given as columns. Per
    micro-op only what differs within an op is collected; the op's own fields are taken from its
    row at the end."""
    R: list[int] = []  # the op row of each cycle row
    MOP: list[str] = []
    K: list = []
    OFF: list = []
    V: list = []
    POS: list[int] = []
    r_a, m_a, k_a, o_a, v_a, p_a = R.append, MOP.append, K.append, OFF.append, V.append, POS.append
    stride = kafka_rules.POS_STRIDE
    kafka_fs = kafka_rules.KAFKA_FS
    for n, (t, f, key, value) in enumerate(zip(types, fs, keys, values)):
        if f not in kafka_fs:
            continue
        r_a(n), m_a("op"), k_a(None), o_a(None), v_a(None), p_a(-1)
        if t not in COMPLETIONS:
            continue
        if key is not None and f != "txn":
            if f == "send":
                if value is not None:
                    x = parse_text(value)
                    off, v = (_int(x[0]), _text(x[1])) if isinstance(x, list) and len(x) == 2 else (None, _text(x))
                    if v is not None:
                        r_a(n), m_a("send"), k_a(key), o_a(off), v_a(v), p_a(0)
            else:
                pairs = parse_text(value)
                if isinstance(pairs, list):
                    for j, pair in enumerate(pairs):
                        if isinstance(pair, list) and len(pair) >= 2 and pair[1] is not None:
                            r_a(n), m_a("poll"), k_a(key), o_a(_int(pair[0])), v_a(_text(pair[1])), p_a(j)
            continue
        mops = parse_text(value)
        if not isinstance(mops, list):
            continue
        for i, m in enumerate(mops):
            if not isinstance(m, list) or not m:
                continue
            name = _text(m[0])
            if name == "send" and len(m) >= 3:
                k = _text(m[1])
                x = m[2]
                off, v = (_int(x[0]), _text(x[1])) if isinstance(x, list) and len(x) == 2 else (None, _text(x))
                if k is not None and v is not None:
                    r_a(n), m_a("send"), k_a(k), o_a(off), v_a(v), p_a(i * stride)
            elif name == "poll" and len(m) >= 2 and isinstance(m[1], dict):
                for kk, pairs in m[1].items():
                    if not isinstance(pairs, list):
                        continue
                    k = _text(kk)
                    if k is None:
                        continue
                    for j, pair in enumerate(pairs):
                        if isinstance(pair, list) and len(pair) >= 2 and pair[1] is not None:
                            r_a(n), m_a("poll"), k_a(k), o_a(_int(pair[0])), v_a(_text(pair[1])), p_a(i * stride + j)
    take = pa.array(np.asarray(R, dtype=np.int64), pa.int64())
    ty = _row_types()
    op_cols = [pa.array(c, t).take(take) for c, t in zip((hs, lines, idxs, procs, types), ty[:5])]
    return pa.Table.from_arrays(op_cols + [pa.array(c, t) for c, t in zip((MOP, K, OFF, V, POS), ty[5:])],
                                names=list(ROW_COLUMNS))


def _row_types() -> list:
    return [pa.string(), pa.int64(), pa.int64(), pa.string(), pa.string(), pa.string(), pa.string(), pa.int64(),
            pa.string(), pa.int64()]


def rows_of_ops(t: Any) -> Any:
    """The cycle rows of an Arrow table of op rows (the columns of ``OP_IN``)."""
    return _cycle_rows(*(t.column(c).to_pylist() for c in OP_IN))
