"""Small helpers every reader of untrusted files shares (histories, traces, manifests).

Imports nothing from the project, so any package can use it."""

from __future__ import annotations

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
