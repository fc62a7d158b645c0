"""Elle's transactional cycle check of Kafka histories (``jepsen.tests.kafka/cycles!`` hands the
history to ``elle.txn/cycles!`` with ``:consistency-models [:strict-serializable]``).

* :mod:`.reference` -- the dependency graph in plain Python: the definition of every edge;
* :mod:`.rows` and :mod:`.graph` -- the same graph from Arrow columns with whole-array
  operations, for many histories at once;
* :mod:`.search` -- strongly connected components and, in each, the cycles Elle names
  (G0, G1c, G-single-item, G-nonadjacent-item, G2-item and their -process/-realtime variants);
* :mod:`.explain` -- the cycles as typed anomalies with Elle's explanation;
* :mod:`.check` -- op rows to anomalies; :mod:`.fast` picks the vectorised build or the reference
  once (:func:`check_rows` here is its choice); :mod:`.spark` runs the vectorised check per Spark
  partition.

Nothing here imports the audit above it (an import-linter contract in pyproject.toml).
"""

from spark_validation.checks.elle.check import check_rows_ref, check_table, find_cycles, is_allowed
from spark_validation.checks.elle.fast import check_rows
from spark_validation.checks.elle.reference import CycleOptions, edges_ref

__all__ = ["CycleOptions", "check_rows", "check_rows_ref", "check_table", "edges_ref", "find_cycles", "is_allowed"]
