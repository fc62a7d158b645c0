"""The check kernels' input tables from a history's op rows (:mod:`.rows_reference`'s functions),
compiled where the install built the row loops.

The choice is made here, once, at import: :mod:`.rows_native` (the same functions over
``spark_validation/_rowkernel.c``) where it is built and ``KRAFT_COMPILED=off`` does not switch it
off, else :mod:`.rows_reference` itself. ``tests/spark_validation/test_rowkernel.py`` holds the two
equal function by function.
"""

from __future__ import annotations

from types import ModuleType

from spark_validation.checks.kafka import rows_reference
from spark_validation.ingest.native import extension

if extension("_rowkernel") is not None:
    from spark_validation.checks.kafka import rows_native as _chosen
else:
    _chosen = rows_reference

__all__ = list(rows_reference.__all__)

IMPLEMENTATION: ModuleType = _chosen
"""The module whose functions these are: :mod:`.rows_native` or :mod:`.rows_reference`."""

kernel_columns = _chosen.kernel_columns
kernel_table = _chosen.kernel_table
cycle_table = _chosen.cycle_table
row_schema = _chosen.row_schema
string_codes = _chosen.string_codes
int_values = _chosen.int_values
