"""The Kafka anomaly check of Jepsen's Kafka workload (``jepsen.tests.kafka``).

* :mod:`.anomaly` -- the anomalies as typed values (:class:`KafkaAnomaly`, one evidence class per
  case shape), JSON only through ``to_json``;
* :mod:`.rules` -- the reference: the micro-ops of an op row and one plain function per anomaly
  rule, the definition every other path is held to;
* :mod:`.kernel` -- the same rules as a numpy kernel over Arrow tables of kernel rows;
* :mod:`.rows` -- the kernel rows of a history's op rows: :mod:`.rows_reference`'s Python loops, or
  :mod:`.rows_native`'s compiled ones with the same functions, picked once at import;
* :mod:`.fast` -- :func:`check_rows` with the reference's signature: the kernel, or the reference
  with ``KRAFT_COMPILED=off``;
* :mod:`.spark_rows`, :mod:`.spark` -- the kernel rows of a Spark op table and the kernel run per
  Spark partition, verified to have seen whole histories.

Nothing here imports the audit above it, only :mod:`spark_validation.ingest` (an import-linter
contract in pyproject.toml).
"""

from spark_validation.checks.kafka.anomaly import KafkaAnomaly, sorted_anomalies
from spark_validation.checks.kafka.fast import check_rows
from spark_validation.checks.kafka.rules import (
    EMPTY_GRAPH, INFORMATIONAL, KAFKA_FS, KINDS, VIOLATIONS, has_data, is_violation,
)

__all__ = ["KafkaAnomaly", "sorted_anomalies", "check_rows", "EMPTY_GRAPH", "INFORMATIONAL", "KAFKA_FS", "KINDS", "VIOLATIONS", "has_data",
           "is_violation"]
