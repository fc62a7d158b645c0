"""The register check, compiled where the install built it.

Exports :func:`check_register_ops` with :func:`.register.check_register_ops`'s signature and
result: the compiled search (``spark_validation/_linkernel.c``, an optional extension setup.py
builds) when it is there and ``KRAFT_COMPILED=off`` does not switch it off, else the reference
itself. The choice is made here, once; tests/spark_validation/test_linkernel.py holds the two
equal.
"""

from __future__ import annotations

import os
from typing import Any, Callable

from spark_validation.checks.linearizable import register
from spark_validation.ingest.pairing import pair, pair_reference

try:  # optional: setup.py builds it; without it the reference runs
    from spark_validation import _linkernel as COMPILED
except ImportError:
    COMPILED = None
if os.environ.get("KRAFT_COMPILED", "").lower() in ("off", "0", "no"):
    COMPILED = None

__all__ = ["check_register_ops"]


def _paired(compiled: Callable[..., Any]) -> Callable[..., Any]:
    """The compiled check given a pairing always: it pairs by the compiled loop of the pairing
    rule, and without that loop (not built) it would decline every unpaired history."""

    def check_register_ops(ops: Any, pairing: Any, *args: Any) -> Any:
        return compiled(ops, pairing if pairing is not None else pair(ops), *args)

    return check_register_ops


check_register_ops: Callable[..., Any] = (
    register.check_register_ops if COMPILED is None
    else _paired(COMPILED.check_register_ops) if pair is pair_reference
    else COMPILED.check_register_ops)
