"""Op rows straight from history files: the audit's fast readers.

The history reader (:mod:`spark_validation.ingest.history`) builds an :class:`~history.Op` per line and
:func:`records.history_rows` turns each into an op row: safe and general, but it builds Python
objects per op that the audit does not need.
The audit only needs the op rows, so this module reads them directly, as columns
(:class:`Rows`), for the shapes almost every line has, and hands every other line to the
history reader's own per-line code. The rows, the malformed lines (file, line, reason, text) and
the files rejected whole are exactly the history reader's (``tests/spark_validation/test_oprows.py``
checks it on random and hostile lines):

* **Uniform files** first (NDJSON, and EDN after its rewrite to JSON): when every op line has
  the key order of the first and is written compactly, the whole file is read by one
  regular-expression pass plus one ``orjson`` call per value (``_uniform``, whose comment says
  what it accepts); any other file goes line by line as below.
* **NDJSON** (``.ndjson``/``.jsonl``): each line is parsed with ``orjson`` (C, several times
  faster than ``json``). A line takes the fast path only if it is a JSON object whose ``type``
  is one of the four op types, whose ``process`` is an integer or a string, whose ``index`` and
  ``time`` are absent or 64-bit integers, whose ``f`` and ``key`` are strings, integers or null,
  and whose value's text (:func:`records.to_text`: compact JSON) holds no float (``orjson``
  prints floats differently from ``json``, and reads integers above 2**64 as floats). Anything
  else (the header line, invalid JSON, bytes that are not UTF-8, deep nesting, odd types) goes
  through ``history._ndjson_line``, the reader's own code for one line.
* **EDN** (Jepsen's ``history.edn``: one op map per line, as Clojure's printer writes it): the
  lines that use only keywords, integers, ``nil``/``true``/``false``, vectors, lists and maps
  (no strings, characters, sets, tags but the ``#jepsen.history.Op`` record tag, comments,
  metadata) are rewritten to JSON with a few regular-expression passes over the whole file
  (keywords become strings; a map key is the token after ``{`` or ``, ``), parsed with
  ``orjson``, and accepted only when ``orjson`` prints the parsed value back byte for byte as
  the rewritten text (so a duplicate key, a number JSON spells differently or a map whose
  entries are not separated the Clojure way is never mis-read). Any other line is read alone by
  the safe EDN reader (:mod:`spark_validation.ingest.edn`) when it holds exactly one form; otherwise
  (a form over several lines, a vector of ops, an error) the whole file is read by the history
  reader, so multi-line forms and resynchronisation keep their exact semantics.

Then, without building an ``Op`` per row, Jepsen's pairing rule over the rows
(:func:`structure_problem`, the first problem :mod:`spark_validation.ingest.pairing` finds). The
check kernels' tables are built from the rows in :mod:`spark_validation.checks.kafka.rows`.
"""

from __future__ import annotations

import re
from itertools import repeat
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from kraft.inputs import collector_paused, nesting
from spark_validation.ingest import uniform
from spark_validation.ingest.edn import EdnError, Reader
from spark_validation.ingest.jsontext import SLOW as _SLOW
from spark_validation.ingest.jsontext import UNPARSED as _UNPARSED
from spark_validation.ingest.jsontext import dumps as _dumps
from spark_validation.ingest.jsontext import loads as _loads
from spark_validation.ingest.jsontext import scalar_text as _scalar_text
from spark_validation.ingest.history import (
    MAX_DEPTH,
    HistoryFormatError,
    OP_TYPES,
    MalformedLine,
    _JSON_SPACE,
    _ndjson_line,
    _op_from_mapping,
    no_op_readable,
    read_history,
    select_model,
)
from spark_validation.ingest.native import extension
from spark_validation.ingest.pairing import describe, pair
from spark_validation.ingest.records import (
    OP_COLUMNS, OpRow, history_rows, op_row, parse_text, require_op_columns, to_int,
)

__all__ = ["Rows", "read_rows", "read_table", "structure_problem", "fast_parse_text"]

if extension("_rowkernel") is not None:
    from spark_validation.ingest import uniform_native as UNIFORM
else:
    UNIFORM = uniform
"""The uniform fast path's loops (:func:`uniform.columns`, :func:`uniform.values`), picked once:
:mod:`.uniform_native` (compiled) where built and ``KRAFT_COMPILED=off`` does not switch it off,
else the reference :mod:`.uniform`."""

_OP_TYPES = frozenset(OP_TYPES)
_I64 = 1 << 63
# in JSON text: a float, or an integer of 20 digits or more (orjson reads those above 2**64 as floats)
_NUMBERISH = re.compile(r"[0-9][.eE]|[0-9]{20}")
_BOM = b"\xef\xbb\xbf"
_LINE_BREAK_B = re.compile(rb"\r\n|\r|\n")


class Rows:
    """The op rows of one history file as columns (``records.OP_COLUMNS``; ``history`` and
    ``model`` are one value for the whole file)."""

    __slots__ = ("history", "model", "line", "index", "process", "type", "f", "key", "value", "time", "parsed",
                 "_arrow")

    def __init__(self, history: str, model: str | None = None) -> None:
        self.history = history
        self.model = model
        self.line: list[int] = []
        self.index: list[int] = []
        self.process: list[str | None] = []
        self.type: list[str] = []
        self.f: list[str | None] = []
        self.key: list[str | None] = []
        self.value: list[str | None] = []
        self.time: list[int | None] = []
        # the decoded value of each row whose value text is compact JSON of an array or object
        # read on the fast path (what parse_text would give back), else _UNPARSED
        self.parsed: list[Any] = []
        self._arrow: dict[str, Any] = {}

    def __len__(self) -> int:
        return len(self.line)

    def col(self, name: str):
        """A column as a pyarrow array (line, index: int64; process, type: string), computed once."""
        a = self._arrow.get(name)
        if a is None:
            a = self._arrow[name] = pa.array(getattr(self, name), pa.int64() if name in ("line", "index") else pa.string())
        return a

    def add_row(self, r: OpRow) -> None:
        self.parsed.append(_UNPARSED)
        self.line.append(r.line)
        self.index.append(r.index)
        self.process.append(r.process)
        self.type.append(r.type)
        self.f.append(r.f)
        self.key.append(r.key)
        self.value.append(r.value)
        self.time.append(r.time)

    def ops(self) -> list[OpRow]:
        """The rows one :class:`records.OpRow` each (what the reference checks take)."""
        h, m = self.history, self.model
        return [OpRow(h, ln, i, p, t, f, k, v, tm, m)
                for ln, i, p, t, f, k, v, tm in zip(self.line, self.index, self.process, self.type, self.f,
                                                     self.key, self.value, self.time)]

    @classmethod
    def from_ops(cls, history: str, rows: list[OpRow]) -> "Rows":
        """The columns of one history's op rows, in line order (the model: the first one set)."""
        out = cls(history, next((r.model for r in rows if r.model), None))
        for r in sorted(rows, key=lambda r: r.line):
            out.add_row(r)
        return out

    def arrow(self):
        """The rows as a pyarrow table with the op table's schema (``ops.parquet``)."""
        n = len(self.line)
        return pa.table({
            "history": _const(self.history, n, pa.string()),
            "line": pa.array(self.line, pa.int64()), "index": pa.array(self.index, pa.int64()),
            "process": pa.array(self.process, pa.string()), "type": pa.array(self.type, pa.string()),
            "f": pa.array(self.f, pa.string()), "key": pa.array(self.key, pa.string()),
            "value": pa.array(self.value, pa.string()), "time": pa.array(self.time, pa.int64()),
            "model": _const(self.model, n, pa.string()),
        })


def _const(value: Any, n: int, typ: Any) -> Any:
    """A pyarrow array of ``n`` copies of ``value`` (of type ``typ``), built in C rather than
    converted from a Python list of ``n`` references to one string, whose conversion costs a
    noticeable share of a history's whole check."""
    return pa.repeat(pa.scalar(value, typ), n)


class _RowSink:
    """The history reader's collector interface (``add``/``bad``), writing op rows."""

    def __init__(self, path: str, rows: Rows) -> None:
        self.path = path
        self.rows = rows
        self.malformed: list[MalformedLine] = []

    def add(self, raw: Any, line: int, text: Any) -> None:
        op = _op_from_mapping(raw, len(self.rows))
        if isinstance(op, str):
            self.malformed.append(MalformedLine(self.path, line, op, text() if callable(text) else text))
            return
        self.rows.add_row(op_row(self.rows.history, line, index=op.index, process=op.process, type=op.type,
                                 f=op.f, key=op.key, value=op.value, time=op.time))

    def bad(self, line: int, reason: str, text: str) -> None:
        self.malformed.append(MalformedLine(self.path, line, reason, text))


def _fast_op(o: Any, position: int) -> tuple | None:
    """(index, process, type, f, key, value, time) of a decoded NDJSON op line in the fast
    subset (module doc), or None."""
    if type(o) is not dict:
        return None
    t = o.get("type")
    if type(t) is not str or t not in _OP_TYPES:
        return None
    p = o.get("process")
    tp = type(p)
    if tp is int:
        p = str(p)
    elif tp is not str:
        return None
    if "index" in o:
        i = o["index"]
        if type(i) is not int or not -_I64 <= i < _I64:
            return None
    else:
        i = position
    tm = o.get("time")
    if tm is not None and (type(tm) is not int or not -_I64 <= tm < _I64):
        return None
    f = o.get("f")
    if f is not None:
        tf = type(f)
        if tf is int:
            f = str(f)
        elif tf is not str:
            return None
    k = o.get("key")
    if k is not None:
        tk = type(k)
        if tk is int:
            k = str(k)
        elif tk is not str:
            return None
    v = _scalar_text(o.get("value"))
    if v is _SLOW:
        return None
    return i, p, t, f, k, v, tm


def _ndjson(data: bytes, path: str, rows: Rows) -> tuple[list[MalformedLine], dict]:
    """NDJSON bytes -> rows (appended to ``rows``), malformed lines, header."""
    if data.startswith(_BOM):
        data = data[3:]
    sink = _RowSink(path, rows)
    if b"\r" not in data:
        header = _ndjson_uniform(data, path, rows, sink)
        if header is not None:
            return sink.malformed, header
    lines = data.split(b"\n") if b"\r" not in data else _LINE_BREAK_B.split(data)
    return sink.malformed, _ndjson_lines(lines, 1, path, rows, sink, True)


def _ndjson_lines(lines: list[bytes], first_lineno: int, path: str, rows: Rows, sink: _RowSink,
                  first: bool) -> dict:
    """NDJSON lines, one at a time (the fast subset with ``orjson``, any other line by the
    history reader's code) -> rows; returns the header if ``first`` and the first non-blank line
    is one."""
    header: dict = {}
    line_a, index_a, proc_a, type_a = rows.line.append, rows.index.append, rows.process.append, rows.type.append
    f_a, key_a, value_a, time_a = rows.f.append, rows.key.append, rows.value.append, rows.time.append
    parsed_a = rows.parsed.append
    loads = _loads
    space = _JSON_SPACE.encode()
    for lineno, raw in enumerate(lines, first_lineno):
        s = raw.strip(space)
        if not s:
            continue
        if not first:
            try:
                o = loads(s)
            except Exception:  # noqa: BLE001 - the safe path words the error
                o = None
            if o is not None and s.count(b"[") + s.count(b"{") > MAX_DEPTH and nesting(o) > MAX_DEPTH:
                o = None  # too deep: the safe path reports it
            r = _fast_op(o, len(rows.line)) if o is not None else None
            if r is not None:
                v = o.get("value")
                parsed_a(v if type(v) is list or type(v) is dict else _UNPARSED)
                line_a(lineno)
                index_a(r[0])
                proc_a(r[1])
                type_a(r[2])
                f_a(r[3])
                key_a(r[4])
                value_a(r[5])
                time_a(r[6])
                continue
        line = raw.decode("utf-8", "surrogateescape")
        h = _ndjson_line(line, line.strip(_JSON_SPACE), lineno, path, sink, first)
        first = False
        if h is not None:
            header = h
    return header


def _ndjson_uniform(data: bytes, path: str, rows: Rows, sink: _RowSink) -> dict | None:
    """The whole file by the uniform fast path (above): its header ({} if none), or None (and
    nothing read) when the file is not uniform."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    # the first non-blank line (a header or an op) goes through the per-line reader
    pos, lineno = 0, 1
    while True:
        nl = text.find("\n", pos)
        if nl < 0:
            return None  # at most one non-blank line: nothing to gain
        if text[pos:nl].strip(_JSON_SPACE):
            break
        pos, lineno = nl + 1, lineno + 1
    u = _uniform(text[nl + 1:], lineno + 1, MAX_DEPTH)
    if u is None:
        return None
    header = _ndjson_lines([text[pos:nl].encode()], lineno, path, rows, sink, True)
    _append_uniform(rows, u)
    return header


def _uniform(text: str, first_lineno: int, max_depth: int) -> dict | None:
    """The columns of ``text`` (op lines, the first at ``first_lineno``) if every non-blank line
    is an op in the uniform subset (:mod:`.uniform`) with the key order of the first, nested at
    most ``max_depth`` deep (the line's own object counted); else None."""
    keys = _uniform_keys(text)
    got = None if keys is None else UNIFORM.columns(text, keys, first_lineno)
    if got is None:
        return None
    n, linenos, col = got
    if "value" in keys:
        vp = UNIFORM.values(col["value"], n, max_depth)
        if vp is None:
            return None
        values, pv = vp
    else:
        values, pv = [None] * n, [_UNPARSED] * n
    return {"n": n, "line": linenos, "index": col.get("index"), "time": col.get("time", repeat(None, n)),
            "type": col["type"], "process": col["process"], "f": col.get("f", repeat(None, n)),
            "key": col.get("key", repeat(None, n)), "value": values, "parsed": pv}


def _uniform_keys(text: str) -> tuple[str, ...] | None:
    """The key order of the first op line of ``text`` if the uniform path can take it, else None."""
    start = len(text) - len(text.lstrip("\n"))
    end = text.find("\n", start)
    try:
        sample = _loads(text[start: end if end >= 0 else len(text)])
    except Exception:  # noqa: BLE001
        return None
    if type(sample) is not dict:
        return None
    keys = tuple(sample)
    if (not set(keys) <= uniform.FIELD.keys() or "type" not in keys or "process" not in keys
            or ("value" in keys and keys[-1] != "value")):
        return None
    return keys


def _append_uniform(rows: Rows, u: dict) -> None:
    base, n = len(rows.line), u["n"]
    rows.line.extend(u["line"])
    rows.index.extend(u["index"] if u["index"] is not None else range(base, base + n))
    for name in ("time", "type", "process", "f", "key", "value", "parsed"):
        getattr(rows, name).extend(u[name])


# --------------------------------------------------------------------------------------------
# EDN: Clojure-printed op maps rewritten to JSON

_EDN_RISKY = re.compile(r'["\\;^\'`~@]|#(?!jepsen\.history\.Op\{)|\bnull\b|\bNaN\b|\bInf|\r')
_REC_TAG = re.compile(r"^#jepsen\.history\.Op\{", re.M)
_NAME = r"[A-Za-z_*][A-Za-z0-9_*!?<>=+\-.]*"
_KWD = rf":{_NAME}(?:/{_NAME})?(?![A-Za-z0-9_*!?<>=+\-./:$%&#'|])"
# the tokens that change: a map key with what precedes and follows it, a keyword, a separator,
# nil (everything else, numbers, brackets, true/false, passes through as it is)
_EDN_TOK = re.compile(rf"((?:\{{|, )(?:{_KWD}|-?(?:0|[1-9][0-9]*)) |{_KWD}|(?<![A-Za-z0-9_*!?<>=+\-./:])nil(?![A-Za-z0-9_*!?<>=+\-./:]))")
_EDN_TOK_NO_NIL = re.compile(rf"((?:\{{|, )(?:{_KWD}|-?(?:0|[1-9][0-9]*)) |{_KWD})")  # faster, for text without "nil"
_PARENS = str.maketrans("()", "[]")


_RISKY_CHARS = ('"', "\\", ";", "^", "'", "`", "~", "@", "null", "NaN", "Inf")


def _risky(text: str) -> bool:
    """Might some line need the safe reader? (:data:`_EDN_RISKY`, with ``str`` searches.)"""
    return (any(c in text for c in _RISKY_CHARS)
            or ("#" in text and text.count("#") != text.count("#jepsen.history.Op{")))


class _Conv(dict):
    """EDN token -> JSON text, computed once per distinct token."""

    def __missing__(self, tok: str) -> str:
        if tok == "nil":
            out = "null"
        elif tok[0] == ":":
            out = f'"{tok[1:]}"'
        else:  # a map key: '{' or ', ', the key, ' '
            lead, body = ("{", tok[1:-1]) if tok[0] == "{" else (",", tok[2:-1])
            out = f'{lead}"{body[1:] if body[0] == ":" else body}":'
        if len(self) > 100_000:
            self.clear()
        self[tok] = out
        return out


_CONV = _Conv()


def _edn_to_json(text: str) -> str:
    """Clojure-printed EDN (no strings; see the module doc) rewritten to JSON, line for line."""
    parts = (_EDN_TOK if "nil" in text else _EDN_TOK_NO_NIL).split(text.translate(_PARENS))
    parts[1::2] = map(_CONV.__getitem__, parts[1::2])
    # what is left between the tokens: separators (now only between elements) and literals
    return "".join(parts).replace(", ", ",").replace(" ", ",")


# the op maps' own keys as Clojure prints them, and their JSON (the first of each line follows '{')
_OP_KEYS = tuple((f"{lead}:{k} ", f'{lead.rstrip()[:1]}"{k}":') for k in ("index", "time", "type", "process", "f",
                                                                         "key", "value") for lead in ("{", ", "))
_MAP_KEY_TOK = re.compile(rf"((?:\{{|, )(?:{_KWD}|-?(?:0|[1-9][0-9]*)) )")
_KWD_NAME = re.compile(rf"{_KWD}")


def _edn_to_json_quick(text: str) -> str | None:
    """:func:`_edn_to_json` for text without ``nil`` (None for text with it), in fewer passes:
    the op keys by plain replacement, the map keys inside values by one expression, then each
    distinct keyword once, longest first (so a keyword is never cut by a shorter one that
    starts it). Only the uniform path uses it: its result must be compact JSON printed back
    byte for byte, so a spelling it gets wrong sends the file to the per-line reader."""
    if "nil" in text:
        return None
    head = text[:4096]
    for a, b in _OP_KEYS:
        # a key spelled one way in the first lines is spelled so throughout a uniform file: a
        # spelling absent there is not looked for (a file that has it further down is not
        # uniform, and its unconverted line sends the file to the per-line reader)
        if a in head:
            text = text.replace(a, b)
    if ", " in text or "{:" in text or any(f"{{{d}" in text for d in "-0123456789"):
        parts = _MAP_KEY_TOK.split(text)
        parts[1::2] = map(_CONV.__getitem__, parts[1::2])
        text = "".join(parts)
    for kw in sorted(set(_KWD_NAME.findall(text)), key=len, reverse=True):
        text = text.replace(kw, f'"{kw[1:]}"')
    return text.translate(_PARENS).replace(", ", ",").replace(" ", ",")


def _edn(text: str, path: str, rows: Rows) -> list[MalformedLine] | None:
    """EDN text -> rows and malformed lines, or None when the file must be read whole by the
    history reader (a form over several lines, a top-level vector or list, a bad line)."""
    start = text.lstrip(" \t\r\n,\ufeff")[:1]
    if start in ("[", "(") or "\r" in text:
        return None  # a vector or list of ops; \r: the EDN reader counts lines at \n only
    risky = _risky(text)
    if not risky:  # every line might be an op map of the fast subset: first the uniform path
        src = _REC_TAG.sub("{", text) if "#" in text else text
        u = _uniform(_edn_to_json_quick(src) or _edn_to_json(src), 1, MAX_DEPTH - 2)
        if u is not None:
            _append_uniform(rows, u)
            return []
    orig = text.split("\n")
    if risky:  # some lines need the safe reader: only the others go to the fast path
        easy = [i for i, ln in enumerate(orig) if ln and not _EDN_RISKY.search(ln)]
    else:
        easy = [i for i, ln in enumerate(orig) if ln]
    loads, dumps = _loads, _dumps
    parsed: dict[int, Any] = {}
    if easy:
        src = "\n".join(orig[i] for i in easy) if len(easy) < len(orig) else text
        converted = _edn_to_json(_REC_TAG.sub("{", src) if "#" in src else src).split("\n")
        for i, js in zip(easy, converted):
            b = js.encode()
            if b[:1] != b"{":
                continue
            try:
                o = loads(b)
            except Exception:  # noqa: BLE001
                continue
            if b.count(b"[") + b.count(b"{") > MAX_DEPTH and nesting(o) > MAX_DEPTH - 2:
                continue  # deep: the safe reader decides (and words) it
            if dumps(o) == b:  # the one JSON spelling of what it parsed to, so nothing was mis-read
                parsed[i] = o
    sink = _RowSink(path, rows)
    for i, ln in enumerate(orig):
        o = parsed.get(i)
        if o is not None:
            r = _fast_op(o, len(rows.line))
            if r is not None:
                v = o.get("value")
                rows.parsed.append(v if type(v) is list or type(v) is dict else _UNPARSED)
                rows.line.append(i + 1)
                rows.index.append(r[0])
                rows.process.append(r[1])
                rows.type.append(r[2])
                rows.f.append(r[3])
                rows.key.append(r[4])
                rows.value.append(r[5])
                rows.time.append(r[6])
                continue
        elif not ln.strip(" \t,"):
            continue
        # a line the fast path does not take: read alone by the safe reader, if it is one form
        try:
            rd = Reader(ln, path)
            value = rd.read()
            if not rd.at_end():
                return None
        except (EdnError, RecursionError):
            return None
        sink.add(value, i + 1, ln[:500])
    return sink.malformed


# --------------------------------------------------------------------------------------------
# reading a file


def read_rows(path: str | Path, model: str | None = None, hid: str | None = None, *,
              fast: bool = True) -> tuple[Rows, list[MalformedLine], str | None, Any]:
    """The op rows of one history file, its malformed lines, its model and initial value:
    what the history reader gives, as columns, without building ops. Raises
    :class:`HistoryFormatError` exactly when the history reader does. ``fast=False`` uses the
    history reader for everything (the reference the fast paths are tested against)."""
    with collector_paused():  # a file's rows are large and acyclic: see collector_paused
        return _read_rows(path, model, hid, fast)




def read_table(table: "pa.Table", path: str | Path, model: str | None) -> list[Rows]:
    """The op rows of a Parquet op table (``ops.parquet`` as the audit writes it, or any table
    with its columns), one :class:`Rows` per history in order of first appearance: a missing
    ``line`` is the ``index`` and the other way round, a missing ``model`` is ``model``. Raises
    :class:`records.InputError` naming ``path`` when a required column is absent."""
    require_op_columns(path, table.column_names)
    groups: dict[str, list[OpRow]] = {}
    for r in table.to_pylist():
        row = OpRow.of_mapping(r, model)
        groups.setdefault(row.history, []).append(row)
    return [Rows.from_ops(hid, hrows) for hid, hrows in groups.items()]


def _read_rows(path: str | Path, model: str | None, hid: str | None,
               fast: bool) -> tuple[Rows, list[MalformedLine], str | None, Any]:
    p = Path(path)
    suffix = p.suffix.lower()
    rid = hid if hid is not None else str(p)
    if fast and suffix in (".ndjson", ".jsonl", ".edn"):
        try:
            data = p.read_bytes()
        except OSError as exc:
            raise HistoryFormatError(str(p), None, f"cannot read: {exc.strerror or exc}") from None
        rows = Rows(rid)
        header: dict = {}
        bad: list[MalformedLine] | None
        if suffix == ".edn":
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError:
                text = None
            bad = _edn(text[1:] if text and text.startswith("\ufeff") else text, str(p), rows) if text else None
        else:
            bad, header = _ndjson(data, str(p), rows)
        if bad is not None:
            if not len(rows) and not bad:
                raise HistoryFormatError(str(p), None, "no operation in the file (only a header)" if header
                                         else "no operation in the file (empty)")
            if not len(rows):
                raise HistoryFormatError(str(p), bad[0].line, no_op_readable(len(bad), bad[0].line))
            rows.model, initial = select_model(p, header, model)
            return rows, bad, rows.model, initial
    h = read_history(str(p), default_model=model, id=rid)
    rows = Rows(rid, h.model)
    for r in history_rows(h):
        rows.add_row(r)
    return rows, list(h.malformed), h.model, h.initial


# --------------------------------------------------------------------------------------------
# what the checks need, from the rows


def fast_parse_text(text: str | None) -> Any:
    """:func:`records.parse_text` (arrays and objects parsed, scalars stay text), with ``orjson``
    first: it decodes the same JSON to the same values, and what it refuses (``NaN``, a lone
    surrogate escape) or reads otherwise (an integer above 2**64 becomes a float there) goes to
    the ``json`` module."""
    if text is None:
        return None
    s = text.lstrip()
    if s[:1] not in ("[", "{") or _NUMBERISH.search(s):
        return parse_text(text)
    try:
        return _loads(s)
    except Exception:  # noqa: BLE001
        return parse_text(text)



def structure_problem(rows: Rows) -> tuple[int, str] | None:
    """The first problem of Jepsen's pairing rule (:mod:`spark_validation.ingest.pairing`) over
    these rows (in line order) as ``(position, reason)``, or None: what
    :func:`history.pair_ops` reports first for the same history, without building ops."""
    procs = process_keys(rows.process)
    p = pair(zip(procs, rows.type, rows.f), first_only=True)
    if not p.problems:
        return None
    prob = p.problems[0]
    pos, j = prob.position, prob.invocation
    inv = p.invokes[j] if j >= 0 else None
    return pos, describe(prob.kind, procs[pos], rows.index[pos], rows.type[pos], rows.f[pos],
                         None if inv is None else rows.index[inv], None if inv is None else rows.f[inv])


def process_keys(processes: list[Any]) -> list[Any]:
    """The process of each row as the history reader has it (an integer where the text is one),
    so that pairing by process is the history reader's."""
    keys = dict.fromkeys(processes)
    for p in keys:
        pi = to_int(p)
        keys[p] = pi if pi is not None else p
    return list(map(keys.__getitem__, processes))


assert OP_COLUMNS == ("history", "line", "index", "process", "type", "f", "key", "value", "time", "model")


def unreadable_parquet(path: str | Path) -> str | None:
    """Why the Parquet table at ``path`` (a file or a dataset directory) cannot be read, or ``None``.

    Both engines call this before reading, so a corrupt or truncated file is one skipped file with
    the same reason in-process and on Spark, and the histories beside it are still checked. Only
    the footers are read (cheap).
    """
    p = Path(path)
    files = sorted(f for f in p.rglob("*.parquet") if f.is_file()) if p.is_dir() else [p]
    for f in files:
        try:
            pq.read_schema(f)
        except Exception as exc:  # pyarrow raises ArrowInvalid, OSError, ... on hostile bytes
            first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            return f"unreadable Parquet file {f}: {first}"
    # a readable table of the wrong shape (no op columns) stays an input error (exit 2), raised
    # by the readers: it is a wrong argument, not a damaged file among good ones
    return None
