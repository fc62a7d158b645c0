"""The Elle check of op rows, vectorised where it may be.

Exports :func:`check_rows` and :func:`edges` with the signatures and results of the reference's
:func:`.check.check_rows_ref` and :func:`.reference.edges_ref`: the vectorised graph build
(:mod:`.graph`, numpy over Arrow columns) unless ``KRAFT_COMPILED=off`` switches it off, then the
reference itself. The choice is made here, once; tests/spark_validation/test_elle.py holds the two
equal on random histories.
"""

from __future__ import annotations

from typing import Any, Callable

from spark_validation.checks.elle import check, reference
from spark_validation.ingest.native import compiled_off

__all__ = ["check_rows", "edges"]

_OFF = compiled_off()

check_rows: Callable[..., Any] = check.check_rows_ref if _OFF else check.check_rows
edges: Callable[..., Any] = reference.edges_ref if _OFF else check.edges_rows
