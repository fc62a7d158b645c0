"""Parse (and print) TLC's value syntax.

TLC prints state variables in the syntax of its ``Value.toString``: integers, strings with
backslash escapes, ``TRUE``/``FALSE``, model values as bare identifiers, sequences ``<<a, b>>``,
sets ``{a, b}``, records ``[f |-> v, g |-> w]``, functions ``(k1 :> v1 @@ k2 :> v2)`` and
integer intervals ``1..3``. Long values are wrapped over several lines, so all whitespace between
tokens is insignificant.

Mapping to Python (docs/contracts.md section 7): int -> int, string -> str, boolean -> bool,
model value -> str, sequence -> tuple, set -> frozenset, record -> dict, function -> dict.
Records and functions become :class:`TLADict`, a ``dict`` that is also hashable (sets of records
are everywhere in protocol specs: the ``messages`` variable is one), and compares equal to a
plain ``dict`` with the same items.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["TLADict", "ValueParseError", "parse_value", "format_value", "to_json"]


class ValueParseError(ValueError):
    """The text is not a TLC value; ``position`` is the character offset of the problem."""

    def __init__(self, text: str, position: int, why: str) -> None:
        self.text = text
        self.position = position
        self.why = why
        snippet = text[max(0, position - 20) : position + 20].replace("\n", " ")
        super().__init__(f"cannot parse TLC value at character {position}: {why} (near {snippet!r})")


class TLADict(dict):
    """A TLA+ record or function: an immutable, hashable ``dict``."""

    __slots__ = ()

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(frozenset(self.items()))

    def _immutable(self, *args: Any, **kwargs: Any) -> None:
        raise TypeError("TLA+ values are immutable")

    __setitem__ = __delitem__ = clear = pop = popitem = setdefault = update = _immutable  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"TLADict({dict.__repr__(self)})"


_TOKEN = re.compile(
    r"""
    \s*(?:
      (?P<str>"(?:[^"\\]|\\.)*")
    | (?P<int>-?\d+)
    | (?P<punct><<|>>|\|->|:>|@@|\.\.|[\[\](){},])
    | (?P<ident>[A-Za-z_][A-Za-z0-9_]*)
    )""",
    re.VERBOSE | re.DOTALL,
)

_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "f": "\f", '"': '"', "\\": "\\"}


def _unescape(body: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(body):
        ch = body[i]
        if ch == "\\" and i + 1 < len(body):
            nxt = body[i + 1]
            out.append(_ESCAPES.get(nxt, nxt))
            i += 2
        else:
            out.append(ch)
            i += 1
    return "".join(out)


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens: list[tuple[str, str, int]] = []
        pos = 0
        n = len(text)
        while pos < n:
            m = _TOKEN.match(text, pos)
            if m is None or m.end() == pos:
                if text[pos:].strip() == "":
                    break
                bad = pos + (len(text[pos:]) - len(text[pos:].lstrip()))
                raise ValueParseError(text, bad, f"unexpected character {text[bad]!r}")
            kind = m.lastgroup
            assert kind is not None
            self.tokens.append((kind, m.group(kind), m.start(kind)))
            pos = m.end()
        self.i = 0

    def peek(self, k: int = 0) -> tuple[str, str, int] | None:
        j = self.i + k
        return self.tokens[j] if j < len(self.tokens) else None

    def next(self) -> tuple[str, str, int]:
        tok = self.peek()
        if tok is None:
            raise ValueParseError(self.text, len(self.text), "unexpected end of value")
        self.i += 1
        return tok

    def expect(self, value: str) -> None:
        kind, text, pos = self.next()
        if text != value or kind == "str":
            raise ValueParseError(self.text, pos, f"expected {value!r}, found {text!r}")

    def at(self, value: str) -> bool:
        tok = self.peek()
        return tok is not None and tok[0] == "punct" and tok[1] == value

    def value(self) -> Any:
        kind, text, pos = self.next()
        if kind == "int":
            lo = int(text)
            if self.at(".."):
                self.i += 1
                k2, t2, p2 = self.next()
                if k2 != "int":
                    raise ValueParseError(self.text, p2, "expected an integer after '..'")
                return frozenset(range(lo, int(t2) + 1))
            return lo
        if kind == "str":
            return _unescape(text[1:-1])
        if kind == "ident":
            if text == "TRUE":
                return True
            if text == "FALSE":
                return False
            return text  # a model value
        if text == "<<":
            items = self._items(">>")
            return tuple(items)
        if text == "{":
            try:
                return frozenset(self._items("}"))
            except TypeError as exc:  # pragma: no cover - all our values are hashable
                raise ValueParseError(self.text, pos, f"unhashable set element: {exc}") from None
        if text == "[":
            return self._record(pos)
        if text == "(":
            return self._function(pos)
        raise ValueParseError(self.text, pos, f"unexpected {text!r}")

    def _items(self, close: str) -> list[Any]:
        items: list[Any] = []
        if self.at(close):
            self.i += 1
            return items
        while True:
            items.append(self.value())
            kind, text, pos = self.next()
            if kind == "punct" and text == close:
                return items
            if not (kind == "punct" and text == ","):
                raise ValueParseError(self.text, pos, f"expected ',' or {close!r}, found {text!r}")

    def _record(self, start: int) -> TLADict:
        fields: dict[Any, Any] = {}
        if self.at("]"):
            self.i += 1
            return TLADict()
        while True:
            kind, name, pos = self.next()
            if kind != "ident":
                raise ValueParseError(self.text, pos, f"expected a record field name, found {name!r}")
            self.expect("|->")
            fields[name] = self.value()
            kind, text, pos = self.next()
            if kind == "punct" and text == "]":
                return TLADict(fields)
            if not (kind == "punct" and text == ","):
                raise ValueParseError(self.text, pos, f"expected ',' or ']', found {text!r}")

    def _function(self, start: int) -> TLADict:
        pairs: dict[Any, Any] = {}
        while True:
            key = self.value()
            self.expect(":>")
            pairs[key] = self.value()
            kind, text, pos = self.next()
            if kind == "punct" and text == ")":
                return TLADict(pairs)
            if not (kind == "punct" and text == "@@"):
                raise ValueParseError(self.text, pos, f"expected '@@' or ')', found {text!r}")


def parse_value(text: str) -> Any:
    """Parse one TLC value. Raises :class:`ValueParseError` on anything else."""
    p = _Parser(text)
    if not p.tokens:
        raise ValueParseError(text, 0, "empty value")
    v = p.value()
    if p.peek() is not None:
        raise ValueParseError(text, p.peek()[2], "trailing text after the value")  # type: ignore[index]
    return v


_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def _fmt_str(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t") + '"'


def _sort_key(v: Any) -> tuple[int, str]:
    return (0 if isinstance(v, bool) else 1 if isinstance(v, int) else 2, format_value(v))


def format_value(v: Any, *, model_values: frozenset[str] = frozenset()) -> str:
    """Print a Python value in TLC syntax (the inverse of :func:`parse_value`).

    Strings print quoted unless they are listed in ``model_values``. Dicts whose keys are all
    identifier strings print as records, other dicts as ``(k :> v @@ ...)`` functions.
    """
    f = lambda x: format_value(x, model_values=model_values)  # noqa: E731
    if isinstance(v, bool):
        return "TRUE" if v else "FALSE"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, str):
        return v if v in model_values else _fmt_str(v)
    if isinstance(v, (tuple, list)):
        return "<<" + ", ".join(f(x) for x in v) + ">>"
    if isinstance(v, (frozenset, set)):
        return "{" + ", ".join(f(x) for x in sorted(v, key=_sort_key)) + "}"
    if isinstance(v, dict):
        if not v:
            return "<<>>"
        if all(isinstance(k, str) and _IDENT.match(k) and k not in model_values for k in v):
            return "[" + ", ".join(f"{k} |-> {f(x)}" for k, x in v.items()) + "]"
        return "(" + " @@ ".join(f"{f(k)} :> {f(x)}" for k, x in v.items()) + ")"
    raise TypeError(f"no TLA+ form for {type(v).__name__}")


def to_json(v: Any) -> Any:
    """A JSON-friendly view: sets -> sorted lists, functions with non-string keys -> objects
    keyed by the key's TLC text (``1`` -> ``"1"``), tuples -> lists."""
    if isinstance(v, bool) or isinstance(v, (int, str)) or v is None:
        return v
    if isinstance(v, (tuple, list)):
        return [to_json(x) for x in v]
    if isinstance(v, (frozenset, set)):
        return [to_json(x) for x in sorted(v, key=_sort_key)]
    if isinstance(v, dict):
        return {(k if isinstance(k, str) else format_value(k)): to_json(x) for k, x in v.items()}
    return repr(v)
