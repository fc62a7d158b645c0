""":mod:`.uniform`'s functions, same signatures and results, over the compiled loops of
``spark_validation/_rowkernel.c`` (importing this module fails where the install did not build
them; :mod:`.rows` then picks the reference).

``scan_uniform`` is :func:`.uniform.columns`'s pass over ASCII text; ``plain_values`` tells value
texts that are arrays and objects of plain JSON (compact, printed as orjson prints them, no float,
not too deep: the reference's checks would pass), which are then left as text, with nothing
decoded (``_rowkernel.kernel_arrays`` walks them from it); ``value_checks`` is
:func:`.uniform.floaty_or_deep` in one pass. ``tests/spark_validation/test_rowkernel.py`` holds
each to the reference.
"""

from __future__ import annotations

from itertools import repeat
from typing import Any

from spark_validation import _rowkernel
from spark_validation.ingest import uniform as reference
from spark_validation.ingest.jsontext import UNPARSED
from spark_validation.ingest.uniform import KIND, decoded_values

__all__ = ["columns", "values"]


def columns(text: str, keys: tuple[str, ...], first_lineno: int) -> tuple[int, Any, dict] | None:
    """:func:`.uniform.columns`, scanned by ``_rowkernel.scan_uniform`` where the text is ASCII."""
    if not text.isascii():
        return reference.columns(text, keys, first_lineno)
    got = _rowkernel.scan_uniform(text, keys, tuple(KIND[k] for k in keys), first_lineno)
    if got is None:
        return None
    linenos, *fields = got
    return len(linenos), linenos, dict(zip(keys, fields))


def values(texts: Any, n: int, max_depth: int) -> tuple[Any, Any] | None:
    """:func:`.uniform.values`; plain values (``_rowkernel.plain_values``) stay text, undecoded."""
    if type(texts) is list and _rowkernel.plain_values(texts, max_depth):
        return texts, repeat(UNPARSED, n)
    return decoded_values(texts, n, max_depth, _floaty_or_deep)


def _floaty_or_deep(texts: Any, joined: str, max_depth: int) -> bool:
    """:func:`.uniform.floaty_or_deep` in one compiled pass (``_rowkernel.value_checks``) where the
    texts are ASCII."""
    if type(texts) is list:
        checks = _rowkernel.value_checks(texts, max_depth)
        if checks is not None:
            return checks[0] or checks[1]
    return reference.floaty_or_deep(texts, joined, max_depth)
