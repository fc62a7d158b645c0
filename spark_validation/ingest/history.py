"""Client histories: reading Jepsen EDN and kraft NDJSON into :class:`History` values.

A history is what clients saw, in Jepsen's conventions (see DESIGN.md, "Traces and histories", and
docs/contracts.md section 5): a time-ordered list of operations, each an ``invoke`` followed later by
its completion (``ok``, ``fail`` or ``info``) from the same process.

Formats read by :func:`read_history` (chosen by the file extension, sniffed when unknown):

* ``.edn`` -- Jepsen/Knossos: one top-level vector or list of op maps, or one op map per line (Jepsen's
  ``history.edn``; newer Jepsen writes each op as a record literal ``#jepsen.history.Op{...}``,
  read as the map). Parsed by the safe reader in :mod:`spark_validation.ingest.edn`.
* ``.ndjson`` / ``.jsonl`` -- kraft: an optional header line ``{"v": 1, "kind": "history", ...}``,
  then one op object per line.
* ``.json`` -- one array of op objects (or NDJSON under a ``.json`` name).

Normalisation (so EDN and NDJSON histories of the same events compare equal):

* keywords become plain strings everywhere, in keys and values (``:invoke`` -> ``"invoke"``,
  ``:ns/x`` -> ``"ns/x"``); symbols and characters become strings too;
* every sequence (EDN vector or list, JSON array) becomes a ``tuple``; maps stay ``dict``; EDN
  sets stay ``frozenset``; other tagged literals stay :class:`~spark_validation.ingest.edn.Tagged`;
* the known keys (``process type f key value time index``) become :class:`Op` fields, everything
  else goes to ``Op.extra``; ``Op.index`` is the op's ``index`` when it has one, else its position
  among the file's well-formed ops.

Nothing is dropped silently. A line (or array element) that cannot be parsed, or that is not an op
(not a map, no ``type``/``process``, an unknown ``type``) becomes a :class:`MalformedLine` in
``History.malformed`` and reading continues with the next op. A history whose ops do not pair up
by Jepsen's rule (:mod:`spark_validation.ingest.pairing`: a completion with no open invocation, a
completion whose ``f`` differs from its invocation's, or a second invocation by a process with one
still open) keeps all its ops and lists each problem in ``History.structure_errors``; the checkers
refuse to guess at such a history (verdict ``"unknown"``).
A file that is not a history at all (wrong header ``kind``, undecodable, or no op could be read)
raises :class:`HistoryFormatError`; :func:`iter_corpus` counts those in ``CorpusScan.skipped``.

Processes: every process is a client except the nemesis (Jepsen's ``:nemesis``, ``"nemesis"`` in
NDJSON): its ops are kept in ``History.ops`` and counted (``History.nemesis_ops``) but the checkers
ignore them. (Treating only integers as clients would silently ignore every op of a history whose
tool names clients ``"c1"``, ``"c2"``.)
"""

from __future__ import annotations

import json
import math
import os
import re
from decimal import Decimal
from pathlib import Path
from typing import Any, Iterable, Iterator, Sequence

import attrs

from kraft.inputs import nesting
from spark_validation.ingest.edn import MAX_DEPTH, Char, EdnError, Keyword, Reader, Symbol, Tagged
from spark_validation.ingest.pairing import NEMESIS, Pairing, describe, pair

__all__ = [
    "CorpusScan",
    "History",
    "HistoryFormatError",
    "MalformedLine",
    "Op",
    "Operation",
    "SkippedFile",
    "StructureError",
    "iter_corpus",
    "normalize",
    "pair_ops",
    "parse_history_text",
    "read_history",
    "select_model",
    "to_jsonable",
]

OP_TYPES = ("invoke", "ok", "fail", "info")
HISTORY_EXTENSIONS = (".edn", ".ndjson", ".jsonl", ".json")
_KNOWN_KEYS = ("index", "process", "type", "f", "key", "value", "time")


# --------------------------------------------------------------------------------------------
# values


def normalize(value: Any) -> Any:
    """Normalise a parsed EDN/JSON value to the audit's plain Python form (see module doc)."""
    if value is None or isinstance(value, (bool, int, float, Decimal)):
        return value
    if isinstance(value, str):
        return str(value) if isinstance(value, Char) else value
    if isinstance(value, Keyword):
        return value.qualified
    if isinstance(value, Symbol):
        return value.qualified
    if isinstance(value, (tuple, list)):
        return tuple(normalize(v) for v in value)
    if isinstance(value, dict):
        return {normalize(k): normalize(v) for k, v in value.items()}
    if isinstance(value, frozenset):
        return frozenset(normalize(v) for v in value)
    if isinstance(value, Tagged):
        return Tagged(value.tag, normalize(value.value))
    return value


def to_jsonable(value: Any) -> Any:
    """Convert a normalised value to something ``json.dumps`` accepts.

    Tuples become lists, sets sorted lists (when sortable), map keys strings (JSON requires it;
    non-string keys go through ``json.dumps``), tagged values ``{"#tag": value}``, decimals strings.
    """
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if value == value and value not in (float("inf"), float("-inf")) else str(value)
    if isinstance(value, (tuple, list)):
        return [to_jsonable(v) for v in value]
    if isinstance(value, (set, frozenset)):
        items = [to_jsonable(v) for v in value]
        try:
            return sorted(items)
        except TypeError:
            return sorted(items, key=lambda x: json.dumps(x, sort_keys=True))
    if isinstance(value, dict):
        return {
            (k if isinstance(k, str) else json.dumps(to_jsonable(k))): to_jsonable(v)
            for k, v in value.items()
        }
    if isinstance(value, Tagged):
        return {"#" + value.tag: to_jsonable(value.value)}
    if isinstance(value, Decimal):
        return str(value)
    return repr(value)


# --------------------------------------------------------------------------------------------
# records


@attrs.frozen
class Op:
    """One history event: an invocation or a completion (Jepsen's op map)."""

    index: int
    process: Any
    type: str
    f: Any
    key: Any = None
    value: Any = None
    time: int | None = None
    extra: dict = attrs.field(factory=dict, eq=True, hash=False)

    @property
    def is_client(self) -> bool:
        """Every process but the nemesis (``"nemesis"``, from Jepsen's ``:nemesis``) is a client."""
        return self.process != NEMESIS

    def to_dict(self) -> dict[str, Any]:
        """A JSON-able dict in the NDJSON history format (extra keys included)."""
        d: dict[str, Any] = {
            "index": self.index,
            "process": self.process,
            "type": self.type,
            "f": to_jsonable(self.f),
        }
        if self.key is not None:
            d["key"] = to_jsonable(self.key)
        d["value"] = to_jsonable(self.value)
        if self.time is not None:
            d["time"] = self.time
        for k, v in self.extra.items():
            d[k if isinstance(k, str) else json.dumps(to_jsonable(k))] = to_jsonable(v)
        return d


@attrs.frozen
class MalformedLine:
    """A line (or array element) of a history file that could not be read as an op."""

    path: str
    line: int
    reason: str
    text: str

    def to_dict(self) -> dict[str, Any]:
        return attrs.asdict(self)


@attrs.frozen
class StructureError:
    """An op that does not pair up with the others (see module doc). ``position`` is its place
    in ``History.ops``."""

    position: int
    index: int
    process: Any
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return {"position": self.position, "index": self.index, "process": self.process, "reason": self.reason}


@attrs.frozen
class Operation:
    """An invocation paired with its completion (``None``: it never completed)."""

    invoke: Op
    complete: Op | None
    invoke_pos: int
    complete_pos: int | None

    @property
    def outcome(self) -> str:
        """``ok``, ``fail``, ``info``, or ``pending`` (never completed; treated as ``info``)."""
        return self.complete.type if self.complete is not None else "pending"


@attrs.define
class History:
    """A parsed history. The first four fields are the contract (docs/contracts.md section 6)."""

    id: str
    ops: list[Op]
    model: str | None
    malformed: list[MalformedLine] = attrs.field(factory=list)
    structure_errors: list[StructureError] = attrs.field(factory=list)
    path: str | None = None
    header: dict = attrs.field(factory=dict)
    initial: Any = None
    lines: list[int] = attrs.field(factory=list)  # the file line of each op (empty when not read from a file)
    pairing: Pairing | None = attrs.field(default=None, eq=False, repr=False)  # of ``ops``; None: not computed

    @property
    def nemesis_ops(self) -> int:
        """Number of ops from non-client processes (kept, ignored by the checkers)."""
        return sum(1 for op in self.ops if not op.is_client)

    def summary(self) -> dict[str, Any]:
        counts = {t: 0 for t in OP_TYPES}
        for op in self.ops:
            if op.is_client:
                counts[op.type] = counts.get(op.type, 0) + 1
        return {
            "id": self.id,
            "model": self.model,
            "ops": len(self.ops),
            "nemesis_ops": self.nemesis_ops,
            "types": counts,
            "malformed_lines": len(self.malformed),
            "structure_errors": len(self.structure_errors),
        }


class HistoryFormatError(ValueError):
    """The file is not a history at all (its whole content is unusable). Names file and line."""

    def __init__(self, path: str, line: int | None, reason: str) -> None:
        where = f"{path}:{line}" if line else path
        super().__init__(f"{where}: {reason}")
        self.path = path
        self.line = line
        self.reason = reason


# --------------------------------------------------------------------------------------------
# pairing


def pairing_of(ops: Sequence[Op]) -> Pairing:
    """Jepsen's pairing of these ops (:func:`spark_validation.ingest.pairing.pair`)."""
    return pair(ops)


def pair_ops(ops: Sequence[Op], pairing: Pairing | None = None) -> tuple[list[Operation], list[StructureError]]:
    """The client operations of ``ops`` in invocation order (``complete=None``: never completed)
    and the structure errors, by Jepsen's pairing rule (:mod:`spark_validation.ingest.pairing`;
    ``pairing``: that rule's result for these ops, when already known)."""
    p = pairing if pairing is not None else pairing_of(ops)
    operations = [make_operation(ops[i], ops[c], i, c) if c >= 0 else make_operation(ops[i], None, i, None)
                  for i, c in zip(p.invokes, p.completions)]
    return operations, structure_errors(ops, p)


def structure_errors(ops: Sequence[Op], pairing: Pairing) -> list[StructureError]:
    """The problems of ``pairing`` (the pairing of ``ops``) as structure errors."""
    out = []
    for prob in pairing.problems:
        op = ops[prob.position]
        inv = ops[pairing.invokes[prob.invocation]] if prob.invocation >= 0 else None
        reason = describe(prob.kind, op.process, op.index, op.type, op.f,
                          None if inv is None else inv.index, None if inv is None else inv.f)
        out.append(StructureError(prob.position, op.index, op.process, reason))
    return out


_new, _put = object.__new__, object.__setattr__


def make_operation(invoke: Op, complete: Op | None, invoke_pos: int, complete_pos: int | None) -> Operation:
    """``Operation(...)`` without attrs' ``__init__`` (the hot path of :func:`pair_ops`)."""
    o = _new(Operation)
    _put(o, "invoke", invoke)
    _put(o, "complete", complete)
    _put(o, "invoke_pos", invoke_pos)
    _put(o, "complete_pos", complete_pos)
    return o


# --------------------------------------------------------------------------------------------
# reading


def _op_from_mapping(raw: Any, position: int) -> Op | str:
    """Build an Op from a parsed map, or return the reason it is not an op."""
    if isinstance(raw, Tagged) and isinstance(raw.value, dict):
        # a record literal: newer Jepsen writes ops as #jepsen.history.Op{:index 0, ...}
        raw = raw.value
    if not isinstance(raw, dict):
        return f"not an op map but {type(raw).__name__}"
    fields: dict[str, Any] = {}
    extra: dict[Any, Any] = {}
    for k, v in raw.items():
        name = normalize(k)
        if isinstance(name, (dict, list, set)):  # a map/vector/set used as a key (atheris found it)
            return f"op map has a {type(k).__name__} as a key, not a keyword or string"
        if name in _KNOWN_KEYS:
            fields[name] = v
        else:
            extra[name] = normalize(v)
    if "type" not in fields:
        return "op has no type"
    typ = normalize(fields["type"])
    if typ not in OP_TYPES:
        return f"unknown op type {typ!r}"
    if "process" not in fields:
        return "op has no process"
    process = normalize(fields["process"])
    if process is None or isinstance(process, (bool, float, dict, tuple, frozenset)):
        return f"bad process {process!r}"
    index = fields.get("index", position)
    if not isinstance(index, int) or isinstance(index, bool):
        return f"bad index {index!r}"
    time = fields.get("time")
    if time is not None and (not isinstance(time, int) or isinstance(time, bool)):
        if isinstance(time, float) and math.isfinite(time):
            time = int(time)
        else:  # (a JSON Infinity or NaN, which Python's reader accepts, is no time either)
            return f"bad time {time!r}"
    return Op(
        index=index,
        process=process,
        type=typ,
        f=normalize(fields.get("f")),
        key=normalize(fields.get("key")),
        value=normalize(fields.get("value")),
        time=time,
        extra=extra,
    )


def _line_text(text: str, line_start: int) -> str:
    end = text.find("\n", line_start)
    return text[line_start : end if end >= 0 else len(text)][:500]


class _Collector:
    def __init__(self, path: str) -> None:
        self.path = path
        self.ops: list[Op] = []
        self.lines: list[int] = []  # the file line of each op
        self.malformed: list[MalformedLine] = []

    def add(self, raw: Any, line: int, text: Any) -> None:
        """``text`` is the line's text, or a function giving it (only called if needed)."""
        result = _op_from_mapping(raw, len(self.ops))
        if isinstance(result, str):
            self.malformed.append(MalformedLine(self.path, line, result, text() if callable(text) else text))
        else:
            self.ops.append(result)
            self.lines.append(line)

    def bad(self, line: int, reason: str, text: str) -> None:
        self.malformed.append(MalformedLine(self.path, line, reason, text))


def _resync(text: str, after_line_start: int, stops: str) -> int:
    """Offset of the first line after the one starting at ``after_line_start`` whose first
    non-blank character is in ``stops`` (or the end of the text)."""
    pos = text.find("\n", after_line_start)
    while pos >= 0:
        start = pos + 1
        stripped = text[start : start + 200].lstrip(" \t,\r")
        if stripped[:1] and stripped[0] in stops:
            return start
        pos = text.find("\n", start)
    return len(text)


def _read_sequence(
    text: str,
    path: str,
    col: _Collector,
    start: int,
    in_vector: bool,
    read_one: Any,
    skip_ws: Any,
    closer: str = "]",
) -> None:
    """Read op values from ``start`` on, resynchronising at the next op-looking line on error.

    ``read_one(pos) -> (value, end)`` raises ``(reason, error_pos)`` via ``_ReadError``.
    """
    pos = start
    n = len(text)
    closed = not in_vector
    what = "list" if closer == ")" else "vector"
    counted_to, line = 0, 1  # newlines are counted incrementally (the text may be large)
    while True:
        pos = skip_ws(pos)
        if pos >= n:
            break
        line_start = text.rfind("\n", 0, pos) + 1
        line += text.count("\n", counted_to, pos)
        counted_to = pos
        if in_vector and not closed and text[pos] == closer:
            closed = True
            pos += 1
            continue
        if in_vector and closed:
            col.bad(line, f"data after the closing {closer!r} of the history {what}", _line_text(text, line_start))
            pos = _resync(text, line_start, "{#")
            continue
        try:
            value, pos = read_one(pos)
        except _ReadError as exc:
            col.bad(line, exc.reason, _line_text(text, line_start))
            pos = _resync(text, line_start, "{#" + closer if in_vector else "{#")
            continue
        col.add(value, line, lambda ls=line_start: _line_text(text, ls))
    if in_vector and not closed:
        line = text.count("\n") + 1
        col.bad(line, f"end of file: the history {what} is not closed with {closer!r}", "")


class _ReadError(Exception):
    def __init__(self, reason: str) -> None:
        self.reason = reason


def _parse_edn(text: str, path: str, col: _Collector) -> None:
    reader = Reader(text, path)

    def skip_ws(pos: int) -> int:
        reader.pos = pos
        reader.skip_ws()
        return reader.pos

    def read_one(pos: int) -> tuple[Any, int]:
        reader.pos = pos
        try:
            value = reader.read()
        except EdnError as exc:
            raise _ReadError(f"EDN error at line {exc.line}, column {exc.column}: {exc.reason}") from None
        return value, reader.pos

    # Top-level forms Jepsen and Knossos write: one vector of ops (``[{...} ...]``), one list of
    # ops (``({...} ...)``, what ``pr`` of a Clojure seq prints, e.g. Knossos's test data), or one
    # op map per line (Jepsen's history.edn), each op possibly a ``#jepsen.history.Op{...}``.
    start = skip_ws(0)
    opener = text[start : start + 1]
    in_seq = opener in ("[", "(")
    _read_sequence(text, path, col, start + 1 if in_seq else start, in_seq, read_one, skip_ws,
                   "]" if opener == "[" else ")")


_JSON = json.JSONDecoder()


def _json_error(text: str, exc: json.JSONDecodeError) -> str:
    return f"JSON error at line {exc.lineno}, column {exc.colno}: {exc.msg}"


def _parse_json_array(text: str, path: str, col: _Collector, start: int) -> None:
    def skip_ws(pos: int) -> int:
        n = len(text)
        while pos < n and text[pos] in " \t\r\n,":
            pos += 1
        return pos

    def read_one(pos: int) -> tuple[Any, int]:
        try:
            value, end = _JSON.raw_decode(text, pos)
        except json.JSONDecodeError as exc:
            raise _ReadError(_json_error(text, exc)) from None
        except RecursionError:
            raise _ReadError(f"JSON value nested deeper than {MAX_DEPTH} levels") from None
        if nesting(value) > MAX_DEPTH:
            raise _ReadError(f"JSON value nested deeper than {MAX_DEPTH} levels")
        return value, end

    _read_sequence(text, path, col, start + 1, True, read_one, skip_ws)



# Lines end as Spark's text reader (Hadoop's LineRecordReader) ends them: at \n, \r\n or \r, and
# nowhere else (str.splitlines would also split at \v, \f, \x1c-\x1e, \x85, U+2028 and U+2029,
# which may sit inside a JSON string).
_LINE_BREAK = re.compile(r"\r\n|\r|\n")
# The reason for a line holding bytes that are not UTF-8.
NOT_UTF8 = "not UTF-8 text"
_ESCAPED = re.compile("[\udc80-\udcff]")
_JSON_SPACE = " \t\r\n"


def _parse_ndjson(text: str, path: str, col: _Collector) -> dict:
    header: dict = {}
    first = True
    for lineno, line in enumerate(_LINE_BREAK.split(text), 1):
        stripped = line.strip(_JSON_SPACE)
        if not stripped:  # blank as JSON defines white space (Spark's reader: the same test)
            continue
        h = _ndjson_line(line, stripped, lineno, path, col, first)
        first = False
        if h is not None:
            header = h
    return header


def _ndjson_line(line: str, stripped: str, lineno: int, path: str, col: Any, first: bool) -> dict | None:
    """One non-blank NDJSON line (``stripped``: without JSON white space): an op or a malformed
    line goes to ``col`` (``add``/``bad``); a header (only on the ``first`` non-blank line) is
    returned. Also the fallback of the fast reader (:mod:`spark_validation.ingest.rows`)."""
    if _ESCAPED.search(line):  # bytes that were not UTF-8 (read_history's surrogateescape)
        col.bad(lineno, NOT_UTF8, line[:500].encode("utf-8", "surrogateescape").decode("utf-8", "replace"))
        return None
    try:
        value = json.loads(stripped)
        if (stripped.count("[") + stripped.count("{") > MAX_DEPTH) and nesting(value) > MAX_DEPTH:
            raise RecursionError
    except json.JSONDecodeError as exc:
        col.bad(lineno, f"JSON error at column {exc.colno}: {exc.msg}", line[:500])
        return None
    except RecursionError:  # hostile input: nesting deeper than any op needs (and than the stack)
        col.bad(lineno, f"JSON value nested deeper than {MAX_DEPTH} levels", line[:500])
        return None
    if first and isinstance(value, dict) and "kind" in value and "type" not in value:
        if value.get("kind") != "history":
            raise HistoryFormatError(path, lineno, f"not a history: header kind is {value.get('kind')!r}")
        if value.get("v") != 1:
            raise HistoryFormatError(path, lineno, f"unsupported history version v={value.get('v')!r}")
        return value
    col.add(value, lineno, line[:500])
    return None


def _reject_single_document(text: str, path: str, start: int) -> None:
    """A ``.json`` file holding one JSON object that is not an op (a simulator's summary.json, a
    results file) is not a history: say so, instead of reporting each of its lines as malformed."""
    if text[start : start + 1] != "{":
        return
    try:
        value = json.loads(text)
    except (json.JSONDecodeError, RecursionError):
        return  # NDJSON (several values) or broken JSON: the line reader reports it
    if isinstance(value, dict) and "type" not in value:
        keys = ", ".join(sorted(map(str, value))[:6]) + (", ..." if len(value) > 6 else "")
        line = text.count("\n", 0, start) + 1
        raise HistoryFormatError(path, line, f"not a history: one JSON object (keys: {keys}), not ops")


def _sniff(text: str) -> str:
    s = text.lstrip(" \t\r\n\ufeff")
    if s.startswith("{\"") or s.startswith("{ \""):
        return "ndjson"
    if s.startswith("[") and s[1:].lstrip().startswith("{\""):
        return "json"
    return "edn"


def parse_history_text(
    text: str, path: str, fmt: str | None = None, lines: list[int] | None = None
) -> tuple[list[Op], list[MalformedLine], dict]:
    """Parse history text. ``fmt`` is ``edn``, ``ndjson`` or ``json`` (sniffed when ``None``);
    ``lines``, when given, receives the file line of each op.

    Returns (ops, malformed lines, NDJSON header or ``{}``). Raises :class:`HistoryFormatError`
    when nothing in the text is an op but something is wrong with it.
    """
    col = _Collector(path)
    header: dict = {}
    if fmt is None:
        fmt = _sniff(text)
    if fmt == "edn":
        _parse_edn(text, path, col)
    elif fmt == "json":
        start = len(text) - len(text.lstrip())
        if text[start : start + 1] == "[":
            _parse_json_array(text, path, col, start)
        else:
            _reject_single_document(text, path, start)
            header = _parse_ndjson(text, path, col)
    elif fmt == "ndjson":
        header = _parse_ndjson(text, path, col)
    else:
        raise ValueError(f"unknown history format {fmt!r}")
    if not col.ops and not col.malformed:  # skipped and counted, never a 0-op history
        raise HistoryFormatError(path, None, "no operation in the file (only a header)" if header
                                 else "no operation in the file (empty)")
    if not col.ops and col.malformed:
        raise HistoryFormatError(path, col.malformed[0].line, no_op_readable(len(col.malformed), col.malformed[0].line))
    if lines is not None:
        lines.extend(col.lines)
    return col.ops, col.malformed, header


def no_op_readable(malformed: int, first_line: int | None) -> str:
    """Why a file whose every line is malformed is skipped (the same words on both engines)."""
    return f"no operation could be read ({malformed} malformed line{'s' if malformed != 1 else ''}, the first at line {first_line})"


def _format_for(path: Path) -> str | None:
    suffix = path.suffix.lower()
    if suffix == ".edn":
        return "edn"
    if suffix in (".ndjson", ".jsonl"):
        return "ndjson"
    if suffix == ".json":
        return "json"
    return None


def _read_model_file(path: Path) -> tuple[str | None, Any, bool]:
    """A model file holds a model name, or JSON ``{"model": name, "initial": value}``."""
    text = path.read_text(encoding="utf-8").strip()
    if text.startswith("{"):
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as exc:
            raise HistoryFormatError(str(path), exc.lineno, f"bad model file: {exc.msg}") from None
        return obj.get("model"), normalize(obj.get("initial")), "initial" in obj
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            return line.split()[0], None, False
    return None, None, False


def select_model(path: str | os.PathLike[str], header: dict | None = None, default: str | None = None) -> tuple[str | None, Any]:
    """The model for a history file, and its initial value: the sidecar ``<file>.model`` first,
    then the NDJSON header's ``model``, then ``model.txt`` in the file's directory, then
    ``default``. (File-specific settings beat directory-wide ones.)"""
    p = Path(path)
    header = header or {}
    sidecar = p.with_name(p.name + ".model")
    if sidecar.is_file():
        name, initial, has = _read_model_file(sidecar)
        if name:
            return name, initial if has else header.get("initial")
    if header.get("model"):
        return header["model"], normalize(header.get("initial"))
    dir_file = p.parent / "model.txt"
    if dir_file.is_file():
        name, initial, _ = _read_model_file(dir_file)
        if name:
            return name, initial
    return default, None


def read_history(
    path: str | os.PathLike[str], *, default_model: str | None = None, id: str | None = None
) -> History:
    """Read one history file (see the module doc for formats and error handling).

    Raises :class:`HistoryFormatError` if the file is not a history (unreadable, not UTF-8, a
    header of another kind, or no op readable), naming the file and line.
    """
    p = Path(path)
    try:
        data = p.read_bytes()
    except OSError as exc:
        raise HistoryFormatError(str(p), None, f"cannot read: {exc.strerror or exc}") from None
    fmt = _format_for(p)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        if fmt != "ndjson":
            line = data.count(b"\n", 0, exc.start) + 1
            raise HistoryFormatError(str(p), line, f"not UTF-8 text (byte {exc.start})") from None
        # NDJSON is read line by line, as Spark reads it: only the lines holding such bytes are
        # lost (surrogateescape keeps them recognisable: lone surrogates never come from UTF-8)
        text = data.decode("utf-8", errors="surrogateescape")
    if text.startswith("\ufeff"):
        text = text[1:]
    lines: list[int] = []
    ops, malformed, header = parse_history_text(text, str(p), fmt, lines)
    model, initial = select_model(p, header, default_model)
    pairing = pairing_of(ops)
    return History(
        id=id if id is not None else str(p),
        ops=ops,
        model=model,
        malformed=malformed,
        structure_errors=structure_errors(ops, pairing),
        pairing=pairing,
        path=str(p),
        header=header,
        initial=initial,
        lines=lines,
    )


@attrs.frozen
class SkippedFile:
    path: str
    reason: str


class CorpusScan:
    """Iterate the histories under some paths; ``skipped`` lists the files that were not read.

    Directories are walked recursively in sorted order (deterministic). Files with a history
    extension are read; model files (``*.model``, ``model.txt``) are metadata; any other file is
    counted in ``skipped`` (reason "not a history file"), as is every file that raised
    :class:`HistoryFormatError`. History ids are paths relative to the argument they came from.
    """

    def __init__(self, paths: Iterable[str | os.PathLike[str]], default_model: str | None = None) -> None:
        self.paths = [Path(p) for p in paths]
        self.default_model = default_model
        self.skipped: list[SkippedFile] = []
        self.read = 0

    def files(self) -> Iterator[tuple[Path, str]]:
        """(file, id) pairs in deterministic order; missing paths are recorded as skipped."""
        for root in self.paths:
            if root.is_file():
                yield root, str(root)
            elif root.is_dir():
                for dirpath, dirnames, filenames in os.walk(root):
                    dirnames.sort()
                    for name in sorted(filenames):
                        f = Path(dirpath) / name
                        yield f, f.relative_to(root).as_posix() if len(self.paths) == 1 else str(f)
            else:
                self.skipped.append(SkippedFile(str(root), "no such file or directory"))

    def __iter__(self) -> Iterator[History]:
        for f, hid in self.files():
            if f.name == "model.txt" or f.name.endswith(".model"):
                continue
            if f.suffix.lower() not in HISTORY_EXTENSIONS:
                self.skipped.append(SkippedFile(str(f), "not a history file (extension)"))
                continue
            try:
                h = read_history(f, default_model=self.default_model, id=hid)
            except HistoryFormatError as exc:
                self.skipped.append(SkippedFile(str(f), str(exc)))
                continue
            self.read += 1
            yield h


def iter_corpus(paths: Iterable[str | os.PathLike[str]] | str | os.PathLike[str], *, default_model: str | None = None) -> CorpusScan:
    """Histories under ``paths`` (files or directories). Iterate the result; afterwards
    ``.read`` and ``.skipped`` say what was read and what was not (and why)."""
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    return CorpusScan(paths, default_model)
