"""The names other code imports from here; the kernel rows are
:mod:`spark_validation.checks.kafka.rows`."""

from spark_validation.checks.kafka.rows import (
    cycle_table, int_values, kernel_columns, kernel_table, row_schema, small_codes, string_codes,
)

__all__ = ["kernel_columns", "kernel_table", "cycle_table", "row_schema", "string_codes", "int_values", "small_codes"]
