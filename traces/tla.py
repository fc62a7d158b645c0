"""Rendering JSON values as TLA+ expressions, and reading back the few TLC values the checker prints.

Protocol glue describes each logged variable/argument with a small type language so that the
same JSON (``{"1": 3}``) can become a function ``(1 :> 3)`` in one place and a record elsewhere:

    INT, STR, BOOL, ANY                    scalars (ANY: infer from the JSON value)
    Seq(T), Set(T)                         from JSON lists
    Rec({field: T, ...}, open=False)       from JSON objects (open: other fields inferred)
    Fun(K, V)                              from JSON objects (keys parsed by K) or [[k, v], ...]
    Nullable(T, nil="Nil")                 JSON null -> the given TLA+ expression
    Const(text)                            always this TLA+ text (model values)

Rendering is deterministic (sets and functions are sorted) so equal JSON gives equal text.
"""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import json
import re
from typing import Any, Iterator

import attrs


class RenderError(ValueError):
    """A JSON value does not fit the type the glue declared (the message says where)."""


def tla_string(s: str) -> str:
    out = s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t")
    return f'"{out}"'


class T:
    def render(self, v: Any, where: str) -> str:  # pragma: no cover - interface
        raise NotImplementedError


@attrs.frozen
class _Int(T):
    def render(self, v: Any, where: str) -> str:
        if isinstance(v, bool) or not isinstance(v, int):
            raise RenderError(f"{where}: expected an integer, got {json.dumps(v)}")
        return str(v) if v >= 0 else f"(-{-v})"


@attrs.frozen
class _Str(T):
    def render(self, v: Any, where: str) -> str:
        if not isinstance(v, str):
            raise RenderError(f"{where}: expected a string, got {json.dumps(v)}")
        return tla_string(v)


@attrs.frozen
class _Bool(T):
    def render(self, v: Any, where: str) -> str:
        if not isinstance(v, bool):
            raise RenderError(f"{where}: expected true/false, got {json.dumps(v)}")
        return "TRUE" if v else "FALSE"


@attrs.frozen
class _Any(T):
    nil: str | None = None

    def render(self, v: Any, where: str) -> str:
        if v is None:
            if self.nil is None:
                raise RenderError(f"{where}: null has no TLA+ counterpart here")
            return self.nil
        if isinstance(v, bool):
            return BOOL.render(v, where)
        if isinstance(v, int):
            return INT.render(v, where)
        if isinstance(v, str):
            return tla_string(v)
        if isinstance(v, list):
            return "<<" + ", ".join(self.render(x, f"{where}[{k}]") for k, x in enumerate(v)) + ">>"
        if isinstance(v, dict):
            if not v:
                raise RenderError(f"{where}: an empty object has no TLA+ record counterpart")
            return "[" + ", ".join(f"{_field(k, where)} |-> {self.render(x, f'{where}.{k}')}"
                                   for k, x in v.items()) + "]"
        raise RenderError(f"{where}: cannot render {json.dumps(v)}")


INT: T = _Int()
STR: T = _Str()
BOOL: T = _Bool()
ANY: T = _Any()


def AnyOr(nil: str) -> T:
    """ANY, with JSON null rendered as ``nil``."""
    return _Any(nil)


def _field(k: str, where: str) -> str:
    if not k or not (k[0].isalpha() or k[0] == "_") or not all(c.isalnum() or c == "_" for c in k):
        raise RenderError(f"{where}: {k!r} is not a TLA+ record field name")
    return k


@attrs.frozen
class Seq(T):
    elem: T

    def render(self, v: Any, where: str) -> str:
        if not isinstance(v, list):
            raise RenderError(f"{where}: expected a list (sequence), got {json.dumps(v)}")
        return "<<" + ", ".join(self.elem.render(x, f"{where}[{k}]") for k, x in enumerate(v)) + ">>"


@attrs.frozen
class Set(T):
    elem: T

    def render(self, v: Any, where: str) -> str:
        if not isinstance(v, list):
            raise RenderError(f"{where}: expected a list (set), got {json.dumps(v)}")
        items = sorted({self.elem.render(x, f"{where}[{k}]") for k, x in enumerate(v)})
        return "{" + ", ".join(items) + "}"


@attrs.frozen
class Rec(T):
    fields: dict[str, T]
    open: bool = False
    nil: str | None = None

    def render(self, v: Any, where: str) -> str:
        if not isinstance(v, dict):
            raise RenderError(f"{where}: expected an object (record), got {json.dumps(v)}")
        parts = []
        for k, t in self.fields.items():
            if k not in v:
                raise RenderError(f"{where}: field {k!r} missing")
            parts.append(f"{k} |-> {t.render(v[k], f'{where}.{k}')}")
        extra = [k for k in v if k not in self.fields]
        if extra and not self.open:
            raise RenderError(f"{where}: unexpected field(s) {', '.join(map(repr, extra))}")
        for k in sorted(extra):
            parts.append(f"{_field(k, where)} |-> {_Any(self.nil).render(v[k], f'{where}.{k}')}")
        if not parts:
            raise RenderError(f"{where}: an empty object has no TLA+ record counterpart")
        return "[" + ", ".join(parts) + "]"


@attrs.frozen
class Fun(T):
    """A TLA+ function. JSON keys are strings, so ``key`` parses them (``INT`` accepts "3")."""

    key: T
    val: T

    def render(self, v: Any, where: str) -> str:
        if isinstance(v, dict):
            pairs = list(v.items())
        elif isinstance(v, list) and all(isinstance(p, list) and len(p) == 2 for p in v):
            pairs = [(p[0], p[1]) for p in v]
        else:
            raise RenderError(f"{where}: expected an object or [[key, value], ...] (function), got {json.dumps(v)}")
        if not pairs:
            return "<<>>"  # the empty function
        if isinstance(self.key, _Int):
            # domain exactly 1..n: a tuple is the same TLA+ value and parses faster
            try:
                ints = {int(k): x for k, x in pairs}
            except (TypeError, ValueError):
                ints = {}
            if len(ints) == len(pairs) and sorted(ints) == list(range(1, len(ints) + 1)):
                return "<<" + ", ".join(self.val.render(ints[i], f"{where}[{i}]")
                                        for i in range(1, len(ints) + 1)) + ">>"
        rendered = []
        for k, x in pairs:
            kk = _parse_key(self.key, k, where)
            rendered.append((kk, f"{kk} :> {self.val.render(x, f'{where}[{k}]')}"))
        rendered.sort()
        return "(" + " @@ ".join(r for _, r in rendered) + ")"


def _parse_key(t: T, k: Any, where: str) -> str:
    if isinstance(t, _Int) and isinstance(k, str):
        try:
            return INT.render(int(k), where)
        except ValueError:
            raise RenderError(f"{where}: key {k!r} is not an integer") from None
    return t.render(k, f"{where} key")


@attrs.frozen
class Nullable(T):
    inner: T
    nil: str = "Nil"

    def render(self, v: Any, where: str) -> str:
        return self.nil if v is None else self.inner.render(v, where)


@attrs.frozen
class Const(T):
    text: str

    def render(self, v: Any, where: str) -> str:
        return self.text


# ---- naming repeated values once --------------------------------------------------------------
#
# A message appears in a trace module several times: when it is sent (a set delta of the network),
# in the arguments of the step that handles it, and when it leaves the network.  Inside
# ``naming()`` a ``Named`` type renders as a name derived from the value's text (``TrM_<hash>``:
# equal values get equal names, in every trace of a batch) and records the definition
# ``TrM_<hash> == <text>``, which the module states once; TLC evaluates such a constant definition
# once, before the search.  Outside ``naming()`` it renders the text itself.

_NAMES: contextvars.ContextVar[dict[str, str] | None] = contextvars.ContextVar("tla_names", default=None)
NAME_RE = re.compile(r"\bTrM_[0-9a-f]{16}\b")


@contextlib.contextmanager
def naming() -> Iterator[dict[str, str]]:
    """Collect the definitions of the values ``Named`` types render inside the block."""
    table: dict[str, str] = {}
    token = _NAMES.set(table)
    try:
        yield table
    finally:
        _NAMES.reset(token)


@attrs.frozen
class Named(T):
    inner: T

    def render(self, v: Any, where: str) -> str:
        text = self.inner.render(v, where)
        table = _NAMES.get()
        if table is None:
            return text
        name = "TrM_" + hashlib.blake2b(text.encode(), digest_size=8).hexdigest()
        table.setdefault(name, text)
        return name


def unname(text: str, names: dict[str, str]) -> str:
    """``text`` with every name of ``names`` replaced by its value's text (for reports)."""
    return NAME_RE.sub(lambda m: names.get(m.group(), m.group()), text)


# ---- reading back what the generated modules print -------------------------------------------


class _Tok:
    def __init__(self, s: str) -> None:
        self.s, self.i = s, 0

    def ws(self) -> None:
        while self.i < len(self.s) and self.s[self.i] in " \t\r\n":
            self.i += 1

    def value(self) -> Any:
        self.ws()
        s, i = self.s, self.i
        if s.startswith("<<", i):
            self.i += 2
            out = []
            self.ws()
            if s.startswith(">>", self.i):
                self.i += 2
                return tuple(out)
            while True:
                out.append(self.value())
                self.ws()
                if s.startswith(",", self.i):
                    self.i += 1
                    continue
                if s.startswith(">>", self.i):
                    self.i += 2
                    return tuple(out)
                raise ValueError(f"expected , or >> at {self.i}")
        if s.startswith('"', i):
            j = i + 1
            buf = []
            while j < len(s) and s[j] != '"':
                if s[j] == "\\" and j + 1 < len(s):
                    nxt = s[j + 1]
                    buf.append({"n": "\n", "t": "\t", "r": "\r", "f": "\f"}.get(nxt, nxt))
                    j += 2
                else:
                    buf.append(s[j])
                    j += 1
            self.i = j + 1
            return "".join(buf)
        for word, val in (("TRUE", True), ("FALSE", False)):
            if s.startswith(word, i):
                self.i += len(word)
                return val
        j = i
        if j < len(s) and s[j] == "-":
            j += 1
        while j < len(s) and s[j].isdigit():
            j += 1
        if j > i:
            self.i = j
            return int(s[i:j])
        raise ValueError(f"unexpected {s[i:i + 20]!r}")


def parse_printed(text: str, start: int = 0) -> tuple[Any, int]:
    """Parse one printed tuple of strings/booleans/integers (what the generated modules emit
    via ``PrintT``) starting at ``start``; returns (value, end position)."""
    t = _Tok(text)
    t.i = start
    v = t.value()
    return v, t.i


# ---- deltas: a logged value as a change of the previous logged value ----------------------------
#
# Consecutive post-states of a trace differ in a few places (one log entry appended, one message
# added and one removed).  Writing each full state into the trace module makes it grow with
# (steps x state size), and SANY's parse time with it.  A delta is TLA+ data that the
# generated operator ``TrApply(old, d)`` turns back into the full value:
#
#   <<"set", v>>            the value v
#   <<"same">>              old                            (a composed step: unchanged since the last logged value)
#   <<"app", s>>            old \o s                       (sequences: records appended)
#   <<"cut", k>>            SubSeq(old, 1, k)              (truncated)
#   <<"cutapp", k, s>>      SubSeq(old, 1, k) \o s         (truncated, then appended)
#   <<"drop", k>>           SubSeq(old, k + 1, Len(old))   (its first k records removed)
#   <<"sdiff", add, del>>   (old \ del) \cup add           (sets)
#   <<"fn", (k :> d @@ ...)>>   old with old[k] replaced by TrApply(old[k], d) for the listed k
#
# Checking ``v' = TrApply(v, d)`` is equivalent to checking ``v' = <logged value>`` because the
# previous checked step already pinned ``v`` to the previous logged value.

TLA_APPLY = r"""RECURSIVE TrApply(_, _)
TrApply(old, d) ==
  CASE d[1] = "set" -> d[2]
    [] d[1] = "same" -> old
    [] d[1] = "app" -> old \o d[2]
    [] d[1] = "cut" -> SubSeq(old, 1, d[2])
    [] d[1] = "cutapp" -> SubSeq(old, 1, d[2]) \o d[3]
    [] d[1] = "drop" -> SubSeq(old, d[2] + 1, Len(old))
    [] d[1] = "sdiff" -> (old \ d[3]) \cup d[2]
    [] d[1] = "fn" -> [x \in DOMAIN old |-> IF x \in DOMAIN d[2] THEN TrApply(old[x], d[2][x]) ELSE old[x]]"""


def render_delta(t: T, old: Any, new: Any, where: str) -> str | None:
    """The delta from ``old`` to ``new`` (both JSON, ``old`` already validated), or None if equal."""
    if old == new:
        return None
    full = lambda: f'<<"set", {t.render(new, where)}>>'  # noqa: E731
    if isinstance(t, Fun) and isinstance(old, dict) and isinstance(new, dict) and old.keys() == new.keys():
        parts = []
        for k in new:
            d = render_delta(t.val, old[k], new[k], f"{where}[{k}]")
            if d is not None:
                parts.append((_parse_key(t.key, k, where), d))
        if not parts:
            return None
        parts.sort()
        return '<<"fn", (' + " @@ ".join(f"{k} :> {d}" for k, d in parts) + ")>>"
    if isinstance(t, Seq) and isinstance(old, list) and isinstance(new, list):
        c = 0
        for a, b in zip(old, new):
            if a != b:
                break
            c += 1
        tail = Seq(t.elem).render(new[c:], where)
        if c == len(old):
            return f'<<"app", {tail}>>'
        if c == len(new):
            return f'<<"cut", {c}>>'
        if c == 0:
            k = len(old) - len(new)  # a prefix removed (a log truncated at its front)
            return f'<<"drop", {k}>>' if 0 < k and old[k:] == new else full()
        return f'<<"cutapp", {c}, {tail}>>'
    if isinstance(t, Set) and isinstance(old, list) and isinstance(new, list):
        o = {t.elem.render(x, where) for x in old} if old else set()
        n = {t.elem.render(x, f"{where}[{k}]") for k, x in enumerate(new)}
        if o == n:
            return None
        add, rem = sorted(n - o), sorted(o - n)
        return '<<"sdiff", {' + ", ".join(add) + "}, {" + ", ".join(rem) + "}>>"
    return full()
