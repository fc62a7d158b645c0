"""A safe EDN reader (no evaluation), for Jepsen histories.

EDN is specified at https://github.com/edn-format/edn. This reader implements the parts a Jepsen
history can contain and never evaluates anything: there is no ``#=`` reader eval, no tag handler
runs code, and unknown tags are kept as :class:`Tagged` values.

Mapping from EDN to Python (chosen once, used everywhere in the audit):

============================  ============================================================
EDN                           Python
============================  ============================================================
``nil``                       ``None``
``true`` / ``false``          ``True`` / ``False``
integer (``42``, ``-7``,      ``int`` (Python ints are unbounded, so ``N`` only marks it)
``123N``, ``0x1F``)
float (``1.5``, ``1e3``,      ``float``; with the ``M`` suffix ``decimal.Decimal``
``2.5M``), ``##Inf`` etc.
string                        ``str`` (escapes ``\\t \\r \\n \\\\ \\" \\b \\f \\uXXXX`` decoded)
character (``\\a``,           :class:`Char` (a ``str`` subclass of length 1, so it compares
``\\newline``, ``\\u0041``)   equal to the one-character string)
keyword ``:a``, ``:ns/a``     :class:`Keyword` (hashable; ``str(k) == ":ns/a"``)
symbol ``a``, ``ns/a``        :class:`Symbol`
vector ``[...]``              ``tuple``
list ``(...)``                :class:`EdnList` (a ``tuple`` subclass)
map ``{...}``                 ``dict``; a map used as a map key or set element is a
                              :class:`FrozenMap` (a hashable ``dict`` subclass)
set ``#{...}``                ``frozenset``
``#inst``, ``#uuid``, any     :class:`Tagged` ``(tag, value)`` -- kept, not interpreted
``#tag value``
============================  ============================================================

Vectors become tuples (immutable and hashable), so they can be map keys, set elements and model
states without copying. Comments (``;`` to end of line), the discard ``#_``, and commas (which
are whitespace) are handled. Every error is an :class:`EdnError` naming the source, line and
column (1-based).
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation
from typing import Any

from kraft.inputs import MAX_DEPTH  # deepest collection nesting a reader accepts (see Reader._read_seq)

__all__ = [
    "Char",
    "EdnError",
    "EdnList",
    "FrozenMap",
    "Keyword",
    "Symbol",
    "Tagged",
    "Reader",
    "loads",
]


class EdnError(ValueError):
    """Malformed EDN. ``source``, ``line`` and ``column`` (1-based) locate the problem."""

    def __init__(self, reason: str, source: str, line: int, column: int) -> None:
        super().__init__(f"{source}:{line}:{column}: {reason}")
        self.reason = reason
        self.source = source
        self.line = line
        self.column = column


class Keyword:
    """An EDN keyword. Interned-like: equal keywords compare and hash equal."""

    __slots__ = ("namespace", "name", "_hash")

    def __init__(self, name: str, namespace: str | None = None) -> None:
        self.name = name
        self.namespace = namespace
        self._hash = hash((Keyword, namespace, name))

    @property
    def qualified(self) -> str:
        """``ns/name`` or ``name`` -- the keyword without its colon."""
        return f"{self.namespace}/{self.name}" if self.namespace else self.name

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, Keyword)
            and other.name == self.name
            and other.namespace == self.namespace
        )

    def __hash__(self) -> int:
        return self._hash

    def __str__(self) -> str:
        return ":" + self.qualified

    def __repr__(self) -> str:
        return f"Keyword({self.qualified!r})"


class Symbol:
    """An EDN symbol (``foo``, ``ns/foo``). Never resolved or evaluated."""

    __slots__ = ("namespace", "name", "_hash")

    def __init__(self, name: str, namespace: str | None = None) -> None:
        self.name = name
        self.namespace = namespace
        self._hash = hash((Symbol, namespace, name))

    @property
    def qualified(self) -> str:
        return f"{self.namespace}/{self.name}" if self.namespace else self.name

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, Symbol)
            and other.name == self.name
            and other.namespace == self.namespace
        )

    def __hash__(self) -> int:
        return self._hash

    def __str__(self) -> str:
        return self.qualified

    def __repr__(self) -> str:
        return f"Symbol({self.qualified!r})"


class Char(str):
    """An EDN character literal; a one-character ``str``."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"Char({str.__repr__(self)})"


class EdnList(tuple):
    """An EDN list ``( ... )``; behaves as a tuple, keeps the list-ness for round trips."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"EdnList({tuple.__repr__(self)})"


class FrozenMap(dict):
    """A hashable map, used only where EDN puts a map inside a set or as a map key."""

    __slots__ = ()

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(frozenset(self.items()))

    def _immutable(self, *args: Any, **kwargs: Any) -> None:
        raise TypeError("FrozenMap is immutable")

    __setitem__ = __delitem__ = clear = pop = popitem = setdefault = update = _immutable  # type: ignore[assignment]


class Tagged:
    """A tagged literal ``#tag value`` kept uninterpreted (``#inst``, ``#uuid``, others)."""

    __slots__ = ("tag", "value")

    def __init__(self, tag: str, value: Any) -> None:
        self.tag = tag
        self.value = value

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Tagged) and other.tag == self.tag and other.value == self.value

    def __hash__(self) -> int:
        return hash((Tagged, self.tag, _hashable(self.value)))

    def __repr__(self) -> str:
        return f"Tagged({self.tag!r}, {self.value!r})"


def _hashable(value: Any) -> Any:
    if isinstance(value, dict) and not isinstance(value, FrozenMap):
        return FrozenMap(value)
    return value


# Possessive quantifiers (Python 3.11+): whitespace and comments are never given back, so a long
# run of blanks before a token that does not match costs linear time, not exponential (atheris
# found 62 tabs that took seconds with the nested ``(?:[\s,]+|;[^\n]*)*``).
_WS = re.compile(r"(?:[\s,]++|;[^\n]*+)*+")
_STRING = re.compile(r'"((?:[^"\\]|\\.)*)"', re.S)
_WS_ATOM = re.compile(r"(?:[\s,]++|;[^\n]*+)*+([^\s,()\[\]{}\"';@^`~\\#][^\s,()\[\]{}\"';@^`~\\]*)")
_TOKEN = re.compile(r"[^\s,()\[\]{}\"';@^`~\\]+")
# Token-level grammars (applied to a token already cut at delimiters).
_INT = re.compile(r"[+-]?(?:0|[1-9][0-9]*)N?\Z")
_HEX = re.compile(r"([+-]?)0[xX]([0-9a-fA-F]+)N?\Z")
_FLOAT = re.compile(r"[+-]?(?:0|[1-9][0-9]*)(?:\.[0-9]*)?(?:[eE][+-]?[0-9]+)?M?\Z")
_SYMBOL_CHARS = re.compile(r"[A-Za-z0-9.*+!\-_?$%&=<>/:#'|]+\Z")
_ESCAPE = re.compile(r"\\(u[0-9a-fA-F]{4}|.)", re.S)
_SIMPLE_ESCAPES = {"t": "\t", "r": "\r", "n": "\n", "\\": "\\", '"': '"', "b": "\b", "f": "\f", "/": "/"}
_NAMED_CHARS = {
    "newline": "\n",
    "return": "\r",
    "space": " ",
    "tab": "\t",
    "backspace": "\b",
    "formfeed": "\f",
}
# Atoms (numbers, keywords, symbols, nil/true/false) parse to immutable values, and a history
# repeats the same few (:type, :invoke, :f, small integers) on every line: memoise them.
_ATOMS: dict[str, Any] = {}
_ATOM_CACHE_SIZE = 200_000
_MISSING = object()
_SYMBOLIC = {"Inf": float("inf"), "-Inf": float("-inf"), "NaN": float("nan")}



class Reader:
    """Reads EDN values from one text; positions are tracked for error messages.

    ``Reader(text, source).read()`` reads the next value (raising :class:`EdnError`), ``at_end()``
    says whether only whitespace/comments remain. The cursor ``pos`` may be moved by callers that
    want to resynchronise after an error (see :mod:`spark_validation.ingest.history`).
    """

    def __init__(self, text: str, source: str = "<string>") -> None:
        self.text = text
        self.source = source
        self.pos = 0
        self._n = len(text)

    # -- positions ---------------------------------------------------------------------------

    def line_col(self, pos: int) -> tuple[int, int]:
        """1-based line and column of character offset ``pos``."""
        line = self.text.count("\n", 0, pos) + 1
        start = self.text.rfind("\n", 0, pos) + 1
        return line, pos - start + 1

    def error(self, reason: str, pos: int | None = None) -> EdnError:
        line, col = self.line_col(self.pos if pos is None else pos)
        return EdnError(reason, self.source, line, col)

    # -- public ------------------------------------------------------------------------------

    def skip_ws(self) -> None:
        self.pos = _WS.match(self.text, self.pos).end()

    def at_end(self) -> bool:
        self.skip_ws()
        return self.pos >= self._n

    def read(self) -> Any:
        """Read one value; raises :class:`EdnError` at end of input or on malformed text."""
        start = self.pos
        self._depth = 0
        try:
            value = self._read(None)
        except RecursionError:  # a chain of tags or discards (``#a #a ...``) too long for the stack
            raise self.error(f"value nested deeper than {MAX_DEPTH} levels", start) from None
        if value is _CLOSE:
            raise self.error(f"unexpected {self.text[self.pos - 1]!r}", self.pos - 1)
        return value

    # -- internals ---------------------------------------------------------------------------

    def _read(self, closer: str | None) -> Any:
        """Read a value. Returns ``_CLOSE`` if the next token is ``closer`` (consumed)."""
        text = self.text
        while True:
            self.pos = _WS.match(text, self.pos).end()
            pos = self.pos
            if pos >= self._n:
                if closer is not None:
                    raise self.error(f"end of input: missing {closer!r}")
                raise self.error("end of input: expected a value")
            c = text[pos]
            if c == "{":
                self.pos = pos + 1
                return self._read_map(pos)
            if c == "[":
                self.pos = pos + 1
                return tuple(self._read_seq("]", pos))
            if c == "(":
                self.pos = pos + 1
                return EdnList(self._read_seq(")", pos))
            if c in ")]}":
                if c == closer:
                    self.pos = pos + 1
                    return _CLOSE
                raise self.error(f"unexpected {c!r}" + (f", expected {closer!r}" if closer else ""))
            if c == '"':
                return self._read_string()
            if c == "\\":
                return self._read_char()
            if c == "#":
                nxt = text[pos + 1 : pos + 2]
                if nxt == "_":
                    self.pos = pos + 2
                    discarded = self._read(closer)
                    if discarded is _CLOSE:
                        raise self.error("#_ with nothing to discard", pos)
                    continue
                if nxt == "{":
                    self.pos = pos + 2
                    items = self._read_seq("}", pos)
                    try:
                        result = frozenset(_hashable(x) for x in items)
                    except TypeError as exc:
                        raise self.error(f"unhashable set element: {exc}", pos) from None
                    if len(result) != len(items):
                        raise self.error("duplicate element in set", pos)
                    return result
                if nxt == "#":
                    self.pos = pos + 2
                    m = _TOKEN.match(text, self.pos)
                    name = m.group(0) if m else ""
                    if name not in _SYMBOLIC:
                        raise self.error(f"unknown symbolic value ##{name}", pos)
                    self.pos = m.end()  # type: ignore[union-attr]
                    return _SYMBOLIC[name]
                m = _TOKEN.match(text, pos + 1)
                if not m or not m.group(0)[0].isalpha():
                    raise self.error("bad dispatch: '#' must be followed by a tag, '{', '_' or '#'", pos)
                tag = m.group(0)
                self.pos = m.end()
                value = self._read(closer)
                if value is _CLOSE:
                    raise self.error(f"#{tag} with no value", pos)
                return Tagged(tag, value)
            m = _TOKEN.match(text, pos)
            if not m:
                raise self.error(f"unexpected character {c!r}")
            self.pos = m.end()
            token = m.group(0)
            value = _ATOMS.get(token, _MISSING)
            if value is _MISSING:
                value = self._atom(token, pos)
                if len(_ATOMS) < _ATOM_CACHE_SIZE:
                    _ATOMS[token] = value
            return value

    def _read_seq(self, closer: str, start: int) -> list[Any]:
        # Hostile input: a value nested thousands deep would exhaust Python's stack (a
        # RecursionError, not an EdnError); no history value needs more than MAX_DEPTH levels.
        self._depth = getattr(self, "_depth", 0) + 1
        if self._depth > MAX_DEPTH:
            raise self.error(f"value nested deeper than {MAX_DEPTH} levels", start)
        try:
            return self._read_seq_items(closer, start)
        finally:
            self._depth -= 1

    def _read_seq_items(self, closer: str, start: int) -> list[Any]:
        items: list[Any] = []
        append = items.append
        text = self.text
        fast = _WS_ATOM.match
        atoms = _ATOMS
        while True:
            # fast path: whitespace then an atom already seen (most tokens of a history)
            m = fast(text, self.pos)
            if m is not None:
                value = atoms.get(m.group(1), _MISSING)
                if value is not _MISSING:
                    self.pos = m.end()
                    append(value)
                    continue
            try:
                value = self._read(closer)
            except EdnError as exc:
                if exc.reason.startswith("end of input") and not getattr(exc, "_opener", False):
                    line, col = self.line_col(start)
                    opener = self.text[start : start + 2] if self.text[start] == "#" else self.text[start]
                    err = EdnError(
                        f"{opener!r} opened at line {line}, column {col} is not closed (end of input)",
                        self.source,
                        line,
                        col,
                    )
                    err._opener = True  # type: ignore[attr-defined]
                    raise err from None
                raise
            if value is _CLOSE:
                return items
            append(value)

    def _read_map(self, start: int) -> dict[Any, Any]:
        items = self._read_seq("}", start)
        if len(items) % 2:
            raise self.error("map literal has an odd number of forms", start)
        result: dict[Any, Any] = {}
        for i in range(0, len(items), 2):
            try:
                key = _hashable(items[i])
                if key in result:
                    raise self.error(f"duplicate map key {items[i]!r}", start)
                result[key] = items[i + 1]
            except TypeError as exc:
                raise self.error(f"unhashable map key: {exc}", start) from None
        return result

    def _read_string(self) -> str:
        m = _STRING.match(self.text, self.pos)
        if not m:
            raise self.error("unterminated string")
        start = self.pos
        self.pos = m.end()
        body = m.group(1)
        if "\\" not in body:
            return body

        def unescape(e: re.Match[str]) -> str:
            s = e.group(1)
            if s in _SIMPLE_ESCAPES:
                return _SIMPLE_ESCAPES[s]
            if s[0] == "u" and len(s) == 5:
                return chr(int(s[1:], 16))
            raise self.error(f"bad string escape \\{s}", start + 1 + e.start())

        return _ESCAPE.sub(unescape, body)

    def _read_char(self) -> Char:
        pos = self.pos
        # A character literal is a backslash then one char, or a name up to a delimiter.
        if pos + 1 >= self._n:
            raise self.error("end of input after '\\'")
        m = _TOKEN.match(self.text, pos + 1)
        token = m.group(0) if m else ""
        if len(token) <= 1:
            self.pos = pos + 2
            return Char(self.text[pos + 1])
        self.pos = m.end()  # type: ignore[union-attr]
        if token in _NAMED_CHARS:
            return Char(_NAMED_CHARS[token])
        if token[0] == "u" and len(token) == 5:
            try:
                return Char(chr(int(token[1:], 16)))
            except ValueError:
                pass
        raise self.error(f"bad character literal \\{token}", pos)

    def _atom(self, token: str, pos: int) -> Any:
        c = token[0]
        if c.isdigit() or (c in "+-" and len(token) > 1 and token[1].isdigit()):
            if _INT.match(token):
                return int(token.rstrip("N"))
            m = _HEX.match(token)
            if m:
                return int(m.group(1) + m.group(2), 16)
            if _FLOAT.match(token):
                if token.endswith("M"):
                    try:
                        return Decimal(token[:-1])
                    except InvalidOperation:  # pragma: no cover - regex already validated
                        raise self.error(f"bad decimal {token!r}", pos) from None
                return float(token)
            raise self.error(f"bad number {token!r}", pos)
        if token == "nil":
            return None
        if token == "true":
            return True
        if token == "false":
            return False
        if not _SYMBOL_CHARS.match(token):
            raise self.error(f"bad symbol or keyword {token!r}", pos)
        if c == ":":
            body = token[1:]
            if not body or body.startswith(":") or body.endswith("/"):
                raise self.error(f"bad keyword {token!r}", pos)
            ns, name = _split_ns(body)
            if ns == "" or name == "":
                raise self.error(f"bad keyword {token!r}", pos)
            return Keyword(name, ns)
        if c == "#":
            raise self.error(f"bad symbol {token!r}", pos)
        if token == "/":
            return Symbol("/")
        ns, name = _split_ns(token)
        if ns == "" or name == "":
            raise self.error(f"bad symbol {token!r}", pos)
        return Symbol(name, ns)


def _split_ns(body: str) -> tuple[str | None, str]:
    if "/" in body and body != "/":
        ns, _, name = body.partition("/")
        return ns, name
    return None, body


class _Close:
    __slots__ = ()


_CLOSE = _Close()


def loads(text: str, source: str = "<string>") -> Any:
    """Parse exactly one EDN value from ``text`` (trailing whitespace/comments allowed)."""
    reader = Reader(text, source)
    value = reader.read()
    if not reader.at_end():
        raise reader.error("unexpected data after the value")
    return value
