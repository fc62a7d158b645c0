"""The names other code imports from here; the Kafka check is :mod:`spark_validation.checks.kafka`
(its reference: :mod:`spark_validation.checks.kafka.rules`)."""

from spark_validation.checks.kafka.rules import (
    EMPTY_GRAPH, INFORMATIONAL, KAFKA_FS, KINDS, POS_STRIDE, UNSEEN_SAMPLE, VIOLATIONS, assignments, check_rows,
    has_data, has_data_column, is_violation, micro_ops, op_count, sort_anomalies,
)

__all__ = ["EMPTY_GRAPH", "INFORMATIONAL", "KAFKA_FS", "KINDS", "POS_STRIDE", "UNSEEN_SAMPLE", "VIOLATIONS",
           "assignments", "check_rows", "has_data", "has_data_column", "is_violation", "micro_ops", "op_count",
           "sort_anomalies"]
