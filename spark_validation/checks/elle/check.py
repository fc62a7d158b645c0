"""The Elle check of op rows: the dependency graph (:mod:`.reference` in plain Python, or
:mod:`.graph` vectorised), then the cycle search and its explanation (:mod:`.explain`).

The functions here return the anomalies typed (:class:`.explain.CycleAnomaly`), in the report's
order (:func:`spark_validation.checks.anomaly.in_report_order`).
"""

from __future__ import annotations

from typing import Any, Iterable

from spark_validation.checks.anomaly import in_report_order
from spark_validation.checks.elle.explain import CycleAnomaly, anomalies
from spark_validation.checks.elle.graph import graph_of_table, graph_of_tuples
from spark_validation.checks.elle.reference import CycleOptions, edges_ref
from spark_validation.checks.elle.rows import input_table
from spark_validation.ingest.records import OpRow

__all__ = ["find_cycles", "check_rows_ref", "check_table", "check_rows", "edges_rows", "is_allowed"]


def find_cycles(edges: Iterable[tuple], opts: CycleOptions, **budgets: int) -> list[CycleAnomaly]:
    """Cycle anomalies of one or more histories' edges (tuples in ``EDGE_COLUMNS`` order)."""
    return in_report_order(anomalies(graph_of_tuples(edges), opts, **budgets))


def check_rows_ref(rows: list[OpRow], opts: CycleOptions) -> list[CycleAnomaly]:
    """Cycle anomalies of op rows with the reference edges (plain Python) and the search."""
    return find_cycles(edges_ref(rows, opts), opts)


def check_table(t: Any, opts: CycleOptions) -> list[CycleAnomaly]:
    """Cycle anomalies of cycle rows (any number of whole histories): the vectorised build."""
    if t.num_rows == 0:
        return []
    return in_report_order(anomalies(graph_of_table(t, opts), opts))


def check_rows(rows: list[OpRow], opts: CycleOptions) -> list[CycleAnomaly]:
    """Cycle anomalies of op rows in this process by the vectorised build; the reference decides
    a history the build's 64-bit columns cannot hold (an offset beyond 64 bits, a process that is
    not text)."""
    try:
        return check_table(input_table(rows), opts)
    except (OverflowError, ValueError, TypeError):
        return check_rows_ref(rows, opts)


def edges_rows(rows: list[OpRow], opts: CycleOptions) -> list[tuple]:
    """The vectorised build's edges of op rows, as :func:`.reference.edges_ref` gives them."""
    t = input_table(rows)
    return graph_of_table(t, opts).tuples() if t.num_rows else []


def is_allowed(anomaly: CycleAnomaly) -> bool:
    """An anomaly Jepsen's checker allows (``allowed-error-types``): reported, not a violation."""
    return anomaly.allowed
