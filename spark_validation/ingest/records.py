"""The flat operation row both audit paths (Spark and ``--no-spark``) work on.

A history, whatever its file format, becomes a list of *op rows* (:class:`OpRow`): one per Jepsen
operation, with the value kept as *text* so that a Parquet column, a Spark ``from_json`` string
field and a Python parser all agree on it:

========  =====================================================================================
column    meaning
========  =====================================================================================
history   the history id: the file path, or the id column of a Parquet corpus
line      1-based line of the op in its file (EDN: 1-based position of the op in the history)
index     the op's ``index`` field when it has one, else ``line``; evidence names ops by it
process   the process, as text (``0``, ``nemesis``)
type      ``invoke`` | ``ok`` | ``fail`` | ``info``
f         the function, as text (``send``, ``poll``, ``txn``, ``assign``, ``read``, ...)
key       the op-level key as text, or null (Jepsen's Kafka ops carry keys in micro-ops)
value     the value as text (see :func:`to_text`), or null
time      nanoseconds, or null
model     the model named by ``--model``, the history header or a sidecar file, or null
========  =====================================================================================

Text encoding (:func:`to_text`) is the one Spark's JSON reader uses when a ``string`` field
meets a JSON value: strings stay unquoted, numbers keep their JSON spelling, ``true``/``false``,
and arrays/objects become compact JSON. EDN keywords become their name (``:send`` -> ``send``),
vectors and lists become arrays, sets become sorted arrays, maps become objects with text keys.
"""

from __future__ import annotations

import json
import os
from decimal import Decimal
from pathlib import Path
from typing import Any, Iterable, Iterator, Literal, Mapping

import attrs

from spark_validation.ingest.history import Op, normalize

OP_COLUMNS = ("history", "line", "index", "process", "type", "f", "key", "value", "time", "model")
COMPLETIONS = frozenset({"ok", "fail", "info"})
HISTORY_SUFFIXES = (".ndjson", ".jsonl", ".json", ".edn")
MODEL_SIDECAR_SUFFIX = ".model"


def _plain(value: Any) -> Any:
    """Turn a parsed value (JSON or EDN) into plain JSON-able Python."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, Decimal):
        return float(value)
    if isinstance(value, dict):
        return {to_text(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (frozenset, set)):
        items = [_plain(v) for v in value]
        return sorted(items, key=lambda x: json.dumps(x, sort_keys=True, default=str))
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    name = getattr(value, "name", None)  # edn Keyword / Symbol
    if isinstance(name, str):
        ns = getattr(value, "namespace", None)
        return f"{ns}/{name}" if ns else name
    inner = getattr(value, "value", None)  # edn Tagged
    if inner is not None:
        return _plain(inner)
    return str(value)


def to_text(value: Any) -> str | None:
    """The text form of a value, identical to what Spark's JSON reader puts in a string field."""
    value = _plain(value)
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    if isinstance(value, (int, float)):
        return json.dumps(value)
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def parse_text(text: str | None) -> Any:
    """Inverse of :func:`to_text` for structures: arrays/objects are parsed, scalars stay text."""
    if text is None:
        return None
    s = text.lstrip()
    if s[:1] in ("[", "{"):
        try:
            return json.loads(s)
        except ValueError:
            return text
    return text


def to_int(text: Any) -> int | None:
    """An offset: an integer, or None (the same rule as Spark's ``try_cast(... as bigint)``)."""
    if text is None or isinstance(text, bool):
        return None
    if isinstance(text, int):
        return text
    s = str(text).strip()
    body = s[1:] if s[:1] in "+-" else s
    if body.isdigit() and body.isascii():
        v = int(s)
        if -(2**63) <= v < 2**63:
            return v
    return None


class InputError(ValueError):
    """Input the audit cannot use at all (exit 2); the message names the file."""


def require_op_columns(path: Any, columns: Iterable[str]) -> None:
    """Raise :class:`InputError` naming ``path`` unless an op table with these columns has the
    ones no op can do without (``history``, ``type``, ``f``)."""
    missing = {"history", "type", "f"} - set(columns)
    if missing:
        raise InputError(f"{path}: Parquet table lacks column(s) {sorted(missing)} (needs the op columns)")


MALFORMED_TEXT = 200
"""How much of an unreadable line a :class:`Malformed` entry keeps."""


@attrs.frozen
class Malformed:
    """Something the audit could not use, with where and why (a ``malformed.json`` entry): a
    line of a history file or trace (``scope="line"``, with the first :data:`MALFORMED_TEXT`
    characters of its text), a history whose ops do not pair up (``"history"``, at the line of
    the op that does not) or a whole file (``"file"``; ``line`` where the reader stopped)."""

    scope: Literal["line", "history", "file"]
    path: str
    line: int | None
    reason: str
    text: str | None = None  # set for "line" entries only

    @classmethod
    def of_line(cls, path: Any, line: int | None, reason: str, text: Any) -> "Malformed":
        """An unreadable line, its text cut to :data:`MALFORMED_TEXT` characters."""
        return cls("line", str(path), line, reason, str(text)[:MALFORMED_TEXT])


@attrs.frozen
class OpRow:
    """One op row (the module docstring's columns): the one shape every reference check reads.
    Build it with :func:`op_row` from raw values, or with :meth:`of_mapping` from a table's
    record; the fast paths read the same columns as a table (:class:`.rows.Rows`)."""

    history: str
    line: int
    index: int
    process: str | None
    type: str | None
    f: str | None
    key: str | None = None
    value: str | None = None
    time: int | None = None
    model: str | None = None

    @classmethod
    def of_mapping(cls, r: Mapping[str, Any], model: str | None = None) -> "OpRow":
        """The op row of a record of an op table (a Parquet or Spark row as a mapping): a
        missing ``line`` is the ``index`` and the other way round, a missing ``model`` is
        ``model``."""
        line, index, m = r.get("line"), r.get("index"), r.get("model")
        return cls(r.get("history"), line if line is not None else index, index if index is not None else line,
                   r.get("process"), r.get("type"), r.get("f"), r.get("key"), r.get("value"), r.get("time"),
                   m if m is not None else model)


def op_row(
    history: str,
    line: int,
    *,
    index: Any,
    process: Any,
    type: Any,
    f: Any,
    key: Any = None,
    value: Any = None,
    time: Any = None,
    model: str | None = None,
) -> OpRow:
    """One op row of raw values: texts by :func:`to_text`, ``index`` and ``time`` integers."""
    idx = to_int(index) if index is not None else None
    t = to_int(time) if time is not None and not isinstance(time, float) else (int(time) if time else None)
    return OpRow(history, int(line), idx if idx is not None else int(line), to_text(process), to_text(type),
                 to_text(f), to_text(key), to_text(value), t, model)


# ---------------------------------------------------------------------------------------------
# Corpus discovery and the model of a history


def is_parquet_table(path: Path) -> bool:
    """A directory written by Spark/pyarrow as a Parquet table (``ops.parquet`` of an audit)."""
    if path.is_file():
        return path.suffix == ".parquet"
    if not path.is_dir():
        return False
    if path.suffix == ".parquet" or (path / "_SUCCESS").exists():
        return True
    files = [p for p in path.iterdir() if p.is_file()]
    # a directory that also holds histories is a corpus with a Parquet file in it, not a table:
    # walked, so the histories are read and the Parquet file is a table of its own
    return (any(p.suffix == ".parquet" for p in files)
            and not any(p.suffix in HISTORY_SUFFIXES and p.name not in OWN_OUTPUTS for p in files))


def discover(paths: Iterable[str | os.PathLike[str]]) -> tuple[list[Path], list[Path], list[Path]]:
    """Split the command-line paths into (history files, Parquet tables, trace files).

    A directory is walked recursively; Parquet tables inside it are taken whole. Trace files
    (``trace.ndjson`` / ``*.trace.ndjson``, contract section 5) go to the metadata check.
    Raises FileNotFoundError for a path that does not exist.
    """
    histories: list[Path] = []
    tables: list[Path] = []
    traces: list[Path] = []

    def add_file(p: Path) -> None:
        if p.suffix == ".parquet":
            tables.append(p)
        elif p.name == "trace.ndjson" or p.name.endswith(".trace.ndjson"):
            traces.append(p)
        elif (p.suffix in HISTORY_SUFFIXES and p.name not in ("results.json", "malformed.json")
              and summary_command(p) is None):
            histories.append(p)

    for raw in paths:
        p = Path(raw)
        if not p.exists():
            raise FileNotFoundError(str(p))
        if p.is_file():
            add_file(p)
            continue
        if is_parquet_table(p):
            tables.append(p)
            continue
        for root, dirs, files in os.walk(p):
            rootp = Path(root)
            keep = []
            for d in sorted(dirs):
                if is_parquet_table(rootp / d):
                    tables.append(rootp / d)
                else:
                    keep.append(d)
            dirs[:] = keep
            for name in sorted(files):
                add_file(rootp / name)
    return sorted(set(histories)), sorted(set(tables)), sorted(set(traces))


OWN_OUTPUTS = ("results.json", "malformed.json", "summary.json")
SUMMARY_MAX_BYTES = 16 << 20


def summary_command(path: Path) -> str | None:
    """The command that wrote ``path`` when it is a kraft command's ``summary.json`` (a JSON
    document starting with the shared header of kraft/outcome.py: ``command``, ``verdict``,
    ``summary``, ``exit_code``), else None. Such a file is not a history: ``kraft simulate``
    writes one beside each run's history, so the audit counts them instead of skipping them as
    malformed. A ``summary.json`` without that header is read (and rejected) as a history file."""
    if path.name != "summary.json":
        return None
    try:
        if path.stat().st_size > SUMMARY_MAX_BYTES:
            return None
        doc = json.loads(path.read_bytes())
    except (OSError, ValueError, RecursionError):
        return None
    if (isinstance(doc, dict) and isinstance(doc.get("command"), str)
            and all(k in doc for k in ("verdict", "summary", "exit_code"))):
        return doc["command"]
    return None


def _plain_files(p: Path) -> list[Path]:
    """The files a command-line path names outside Parquet tables: the path itself if it is a
    file, else every file under it, in order, without descending into a table."""
    if p.is_file():
        return [p]
    if is_parquet_table(p):
        return []
    out: list[Path] = []
    for root, dirs, names in os.walk(p):
        rootp = Path(root)
        dirs[:] = [d for d in sorted(dirs) if not is_parquet_table(rootp / d)]
        out.extend(rootp / n for n in sorted(names))
    return out


def command_summaries(paths: Iterable[str | os.PathLike[str]]) -> list[tuple[str, str]]:
    """``(path, command)`` of every kraft command summary (:func:`summary_command`) under the
    command-line paths: files :func:`discover` does not take as histories."""
    out: list[tuple[str, str]] = []
    for raw in paths:
        p = Path(raw)
        files = [p] if p.is_file() else [f for f in _plain_files(p) if f.name == "summary.json"]
        out.extend((str(f), c) for f in files if (c := summary_command(f)) is not None)
    return sorted(set(out))


def ignored_files(paths: Iterable[str | os.PathLike[str]]) -> list[Path]:
    """Files under the command-line paths that :func:`discover` does not take: not a history,
    Parquet table or trace, nor a model sidecar (``*.model``, ``model.txt``). The audit counts
    and lists them instead of skipping them silently (its own output files are not counted)."""
    paths = list(paths)
    histories, tables, traces = discover(paths)
    taken = set(histories) | set(traces)
    out: list[Path] = []
    for raw in paths:
        for f in _plain_files(Path(raw)):
            if f in taken or f.suffix in (".parquet", MODEL_SIDECAR_SUFFIX) or f.name in ("model.txt", *OWN_OUTPUTS):
                continue
            out.append(f)
    return sorted(set(out))


# ---------------------------------------------------------------------------------------------
# NDJSON lines in plain Python (the in-process metadata check reads traces with them)


def ndjson_lines(path: str | os.PathLike) -> Iterator[tuple[int, Any, str | None, str]]:
    """The non-blank lines of an NDJSON file, read the one way every audit reader reads them:
    ``(line, obj, problem, text)`` with the 1-based line number, the parsed JSON object (``None``
    when the line is unusable), why it is unusable (``"invalid JSON: ..."`` or ``"not a JSON
    object"``; else ``None``) and the stripped text. Undecodable bytes are replaced, not fatal."""
    with open(path, encoding="utf-8", errors="replace") as fh:
        for n, text in enumerate(fh, start=1):
            s = text.strip(" \t\r\n")  # JSON white space, as the history reader tests it
            if not s:
                continue
            try:
                obj = json.loads(s)
            except ValueError as exc:
                yield n, None, f"invalid JSON: {exc.msg}", s
                continue
            except RecursionError:  # hostile input: nesting deeper than the stack
                yield n, None, "JSON value nested too deeply", s
                continue
            if not isinstance(obj, dict):
                yield n, None, "not a JSON object", s
                continue
            yield n, obj, None, s


def history_rows(h: Any) -> list[OpRow]:
    """Op rows of a :class:`spark_validation.ingest.history.History` (line = the op's file line; its
    1-based position when it was not read from a file)."""
    lines = h.lines if len(h.lines) == len(h.ops) else range(1, len(h.ops) + 1)
    return [
        op_row(h.id, lines[i], index=op.index, process=op.process, type=op.type, f=op.f, key=op.key,
               value=op.value, time=op.time, model=h.model)
        for i, op in enumerate(h.ops)
    ]


def value_from_text(text: str | None) -> Any:
    """Best inverse of :func:`to_text` for the models: JSON when it parses, else the string."""
    if text is None:
        return None
    s = text.strip()
    if s[:1] in "[{-0123456789" or s in ("true", "false", "null"):
        try:
            return json.loads(s)
        except ValueError:
            return text
    return text


def rows_to_ops(rows: Iterable[OpRow]) -> list:
    """Op rows back to :class:`spark_validation.ingest.history.Op` values (for the lin checker)."""
    out = []
    for r in sorted(rows, key=lambda r: r.line):
        pi = to_int(r.process)
        out.append(Op(index=int(r.index), process=pi if pi is not None else r.process, type=r.type,
                      f=r.f, key=normalize(value_from_text(r.key)),
                      value=normalize(value_from_text(r.value)), time=r.time))
    return out
