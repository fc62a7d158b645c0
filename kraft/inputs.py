"""Small helpers every reader of untrusted files shares (histories, traces, manifests).

Imports nothing from the project, so any package can use it."""

from __future__ import annotations

import re
from typing import Any

MAX_DEPTH = 100  # deeper JSON/EDN nesting is a malformed line, not a RecursionError


def nesting(value: Any) -> int:
    """Deepest list/dict nesting of a decoded JSON value (iterative: the value may be hostile)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        v, d = stack.pop()
        if isinstance(v, (list, dict)):
            deepest = max(deepest, d)
            stack.extend((c, d + 1) for c in (v.values() if isinstance(v, dict) else v))
    return deepest


_JSON_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"')
_INNERMOST = re.compile(r"\[[^\[\]{}]*\]|\{[^\[\]{}]*\}")


def text_nesting(text: str, limit: int = MAX_DEPTH) -> int:
    """:func:`nesting` of the value a line of *valid* JSON decodes to, read from its text: strings
    removed, then the innermost ``[...]``/``{...}`` removed once per level, at most ``limit + 1``
    times. Each round is one regular-expression pass, much cheaper than walking a large value."""
    rest, depth = _JSON_STRING.sub("", text), 0
    while depth <= limit:
        rest, n = _INNERMOST.subn("", rest)
        if n == 0:
            break
        depth += 1
    return depth
