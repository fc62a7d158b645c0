"""JSON text as the fast readers read and print it: ``orjson`` (a dependency; the plain json module
keeps the readers correct without it), the float marks that send a line to the safe path, and
:func:`scalar_text`, a decoded value's text as :func:`records.to_text` writes it."""

from __future__ import annotations

import re
from typing import Any

try:
    import orjson

    loads = orjson.loads
    dumps = orjson.dumps
except ImportError:  # pragma: no cover
    import json as _json

    orjson = None  # type: ignore[assignment]

    def loads(b):  # type: ignore[no-redef]
        return _json.loads(b)

    def dumps(v):  # type: ignore[no-redef]
        return _json.dumps(v, separators=(",", ":"), ensure_ascii=False).encode()

__all__ = ["orjson", "loads", "dumps", "FLOATY", "FLOAT_MARK", "SLOW", "UNPARSED", "scalar_text"]

# a float in compact JSON text: a digit followed by '.', 'e' or 'E' (a string holding such text
# also matches: that line then takes the safe path, which is only slower); the rarer character
# is searched for first. Bytes (one value's text) and str (a whole file's values) forms.
_FLOAT_MARK_PATTERN = r"[.eE](?<=[0-9][.eE])"
FLOATY = re.compile(_FLOAT_MARK_PATTERN.encode())
FLOAT_MARK = re.compile(_FLOAT_MARK_PATTERN)

SLOW: Any = object()
"""What :func:`scalar_text` gives for a value the fast path does not take."""
UNPARSED: Any = object()
"""``Rows.parsed``'s mark of a row whose value the reader left as text."""


def scalar_text(v: Any) -> Any:
    """``to_text`` of a value decoded from JSON, for the fast path; :data:`SLOW` when the line must
    take the safe path instead."""
    t = type(v)
    if t is str:
        return v
    if v is None:
        return None
    if t is int:
        return str(v)
    if t is bool:
        return "true" if v else "false"
    if t is list or t is dict:
        b = dumps(v)
        if FLOATY.search(b):
            return SLOW
        return b.decode()
    return SLOW
