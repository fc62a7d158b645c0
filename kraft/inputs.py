"""Small helpers every reader of untrusted files shares (histories, traces, manifests).

Imports nothing from the project, so any package can use it."""

from __future__ import annotations

import contextlib
import gc
import re
from typing import Any, Iterator

MAX_DEPTH = 100  # deeper JSON/EDN nesting is a malformed line, not a RecursionError


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off while a reader builds a large acyclic value: every
    full collection walks every container allocated so far, so reading a long file with it on
    costs time quadratic in the file; reference counting still frees everything."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def nesting(value: Any) -> int:
    """Deepest list/dict nesting of a decoded JSON value (iterative: the value may be hostile)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        v, d = stack.pop()
        if isinstance(v, (list, dict)):
            deepest = max(deepest, d)
            stack.extend((c, d + 1) for c in (v.values() if isinstance(v, dict) else v))
    return deepest


_ESCAPE = re.compile(r"\\.", re.S)  # a backslash and the character it escapes
_NOT_STRUCTURE = bytes(c for c in range(256) if c not in b'"[]{}')  # deleted before the passes
_INNERMOST = re.compile(rb"\[\]|\{\}")


def text_nesting(text: str, limit: int = MAX_DEPTH) -> int:
    """:func:`nesting` of the value a line of *valid* JSON decodes to, read from its text: escapes
    removed (a backslash occurs only inside strings, where each starts a pair), every byte but
    quotes and brackets deleted, strings removed, then the innermost ``[]``/``{}`` removed once per
    level, at most ``limit + 1`` times. Each step is one C-level pass over a shrinking text, much
    cheaper than walking a large decoded value."""
    if "\\" in text:
        text = _ESCAPE.sub("", text)
    rest = text.encode("utf-8", "surrogatepass").translate(None, _NOT_STRUCTURE)
    # a byte is inside a string when an odd number of quotes precede it; removing two adjacent
    # quotes keeps that parity for every other byte, and most strings hold no bracket
    rest = rest.replace(b'""', b"")
    if b'"' in rest:
        rest = b"".join(rest.split(b'"')[::2])
    depth = 0
    while depth <= limit:
        rest, n = _INNERMOST.subn(b"", rest)
        if n == 0:
            break
        depth += 1
    return depth
