"""The uniform fast path of the row readers, as plain Python (the reference).

A file whose op lines all have the same keys in the same order, written compactly (no white
space), as a program writes them (Jepsen's and our own writers, the bench's corpus), is read by
one regular-expression pass over the whole text instead of line by line. The op fields other than
the value are matched exactly by the expression, only in the forms the per-line fast path accepts
(a 64-bit integer of at most 18 digits without a sign other than '-' or leading zeros, a string
without escapes or control characters, null where allowed), so each field's text is what
``rows._fast_op`` would give (:func:`columns`); each value is parsed alone by ``orjson`` (so it
is one JSON value) and the whole list printed back once must equal the text byte for byte (so
each value's text is its compact JSON, ``records.to_text``), with no float in it
(:func:`values`). Anything else (another key order on some line, white space, escapes, a float,
a line that is not an op, an odd byte) and the file is read by the per-line loop, which gives the
same rows (tests/spark_validation/test_oprows.py compares both with the history reader).

:mod:`.uniform_native` exports the same functions over ``spark_validation/_rowkernel.c``;
:mod:`.rows` picks one of the two once.
"""

from __future__ import annotations

import re
from itertools import repeat
from typing import Any, Callable

from spark_validation.ingest.jsontext import FLOAT_MARK, UNPARSED, dumps, loads, scalar_text

__all__ = ["columns", "values"]

_U_INT = r"(?:0|-?[1-9][0-9]{0,17})"
_U_STR = r'"([^"\\\x00-\x1f]*)"'
FIELD = {  # key -> (pattern, group count)
    "index": (f"({_U_INT})", 1),
    "time": (f"({_U_INT})", 1),
    "type": ('"(invoke|ok|fail|info)"', 1),
    "process": (f"({_U_INT})|{_U_STR}", 2),
    "f": (f"({_U_INT})|{_U_STR}|(null)", 3),
    "key": (f"({_U_INT})|{_U_STR}|(null)", 3),
    "value": ("(.*)", 1),
}
KIND = {"index": 0, "time": 0, "type": 1, "process": 2, "f": 3, "key": 3, "value": 4}
"""Each key's field kind (integer, op type, process, text-or-integer-or-null, value): the codes
``_rowkernel.scan_uniform`` takes."""
_CACHE: dict[tuple[str, ...], Any] = {}
_NOT_BRACKET = bytes(c for c in range(256) if c not in b"[]{}")


def too_deep(joined: str, max_depth: int) -> bool:
    """Might ``joined`` (``[v1,v2,...]``, as deep as an op line holding the deepest value) nest
    deeper than ``max_depth``? Each pass removes the innermost bracket pairs, one or two
    levels, so after k passes nothing is left only if the depth is at most 2k; brackets inside
    strings count too: the answer errs towards yes (then the per-line reader decides)."""
    b = joined.encode().translate(None, _NOT_BRACKET)
    for _ in range(max_depth // 2):
        if not b:
            return False
        b = b.replace(b"[]", b"").replace(b"{}", b"")
    return True


def _pattern(keys: tuple[str, ...]) -> Any:
    pat = _CACHE.get(keys)
    if pat is None:
        body = ",".join(f'"{k}":(?:{FIELD[k][0]})' for k in keys)
        # one alternative or the other takes every line, so the scan never retries a position
        pat = _CACHE[keys] = re.compile(r"\{" + body + r"\}\n|([^\n]*)\n")
    return pat


def columns(text: str, keys: tuple[str, ...], first_lineno: int) -> tuple[int, Any, dict] | None:
    """(op lines, their line numbers, each key's column) of ``text`` (the first line at
    ``first_lineno``) by the expression of :func:`_pattern`, or None when a line is neither such
    an op nor blank."""
    cols = list(zip(*_pattern(keys).findall(text if text.endswith("\n") else text + "\n")))
    if not cols or any(cols[-1]):
        return None  # a line the expression does not take (or no line at all)
    at, starts = 0, {}  # each key's first group
    for k in keys:
        starts[k] = at
        at += FIELD[k][1]
    t_at = starts["type"]
    n = len(cols[t_at])
    while n and not cols[t_at][n - 1]:
        n -= 1  # blank lines at the end (after the final newline, at least)
    linenos: Any = range(first_lineno, first_lineno + n)
    if "" in cols[t_at][:n]:  # blank lines in between: left out
        keep = [j for j, t in enumerate(cols[t_at][:n]) if t]
        cols = [[c[j] for j in keep] for c in cols]
        linenos = [first_lineno + j for j in keep]
        n = len(keep)
    elif n < len(cols[t_at]):
        cols = [c[:n] for c in cols]
    g = {k: cols[starts[k]:starts[k] + FIELD[k][1]] for k in keys}
    col: dict[str, Any] = {}
    for k in keys:
        kind = KIND[k]
        col[k] = (map(int, g[k][0]) if kind == 0 else _strint(g[k]) if kind in (2, 3) else g[k][0])
    return n, linenos, col


def _strint(c: list) -> Any:
    """An integer, string (or null) field's column from its groups, as _fast_op gives it."""
    ints, strs = c[0], c[1]
    nulls = c[2] if len(c) > 2 else ()
    if not any(nulls):
        if not any(strs) and "" not in ints:
            return ints
        if not any(ints):
            return strs
        return [a if a else b for a, b in zip(ints, strs)]
    return [a if a else (None if z else b) for a, b, z in zip(ints, strs, nulls)]


def floaty_or_deep(texts: Any, joined: str, max_depth: int) -> bool:
    """Does ``joined`` (the value ``texts`` as ``[t1,t2,...]``) hold a float mark, or might it nest
    deeper than ``max_depth`` (:func:`too_deep`)?"""
    return FLOAT_MARK.search(joined) is not None or too_deep(joined, max_depth)


def values(texts: Any, n: int, max_depth: int) -> tuple[Any, Any] | None:
    """(value texts, decoded values or ``UNPARSED``) of the ``n`` value texts of a uniform file,
    or None when some value is not compact JSON as ``records.to_text`` writes it, holds a float,
    or nests deeper than ``max_depth`` (then the per-line reader decides and words it)."""
    return decoded_values(texts, n, max_depth, floaty_or_deep)


def decoded_values(texts: Any, n: int, max_depth: int,
                   floaty_or_deep: Callable[[Any, str, int], bool]) -> tuple[Any, Any] | None:
    """:func:`values`, each value decoded and printed back, with ``floaty_or_deep`` as the float
    and depth test."""
    try:
        parsed = list(map(loads, texts))
    except Exception:  # noqa: BLE001 - not one JSON value each: the per-line reader decides
        return None
    joined = "[" + ",".join(texts) + "]"
    try:
        printed = dumps(parsed).decode()
    except Exception:  # noqa: BLE001 - e.g. an integer orjson cannot print
        return None
    # the joined list is one level deeper than a value, as deep as the line; a huge integer
    # orjson read as a float prints differently too
    if printed != joined or floaty_or_deep(texts, joined, max_depth):
        return None
    out: Any = texts
    pv: Any = parsed
    if not all(map(str.startswith, texts, repeat(("[", "{")))):  # scalars: their text as scalar_text gives it
        pv = [v if type(v) is list or type(v) is dict else UNPARSED for v in parsed]
        out = [t if t[:1] in "[{" else scalar_text(v) for t, v in zip(texts, parsed)]
    return out, pv
