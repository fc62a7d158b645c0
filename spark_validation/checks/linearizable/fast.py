"""The register check, compiled where the install built it.

Exports :func:`check_register_ops` with :func:`.register.check_register_ops`'s signature and
result: the compiled search (``spark_validation/_linkernel.c``, an optional extension setup.py
builds) when it is there and ``KRAFT_COMPILED=off`` does not switch it off, else the reference
itself. The choice is made here, once; tests/spark_validation/test_linkernel.py holds the two
equal.
"""

from __future__ import annotations

from typing import Any, Callable

from spark_validation.checks.linearizable import register
from spark_validation.ingest.native import extension
from spark_validation.ingest.pairing import pair, pair_reference

COMPILED: Any = extension("_linkernel")
"""The compiled search (``_linkernel``), or None: not built, or ``KRAFT_COMPILED=off``."""

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
