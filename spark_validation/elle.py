"""The names the Elle check had here; the check is :mod:`spark_validation.checks.elle`."""

from spark_validation.checks.elle.check import (check_rows, check_rows_ref, check_table, edges_rows, find_cycles,
                                               is_allowed)
from spark_validation.checks.elle.reference import EDGE_COLUMNS, CycleOptions, edges_ref, realtime_pairs
from spark_validation.checks.elle.rows import ROW_COLUMNS, input_table
from spark_validation.checks.elle.spark import check_spark, collect, cycle_input, edges_spark

__all__ = ["CycleOptions", "EDGE_COLUMNS", "ROW_COLUMNS", "check_rows", "check_rows_ref", "check_spark", "check_table",
           "collect", "cycle_input", "edges_ref", "edges_rows", "edges_spark", "find_cycles", "input_table",
           "is_allowed", "realtime_pairs"]
