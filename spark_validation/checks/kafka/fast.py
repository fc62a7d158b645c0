"""The Kafka check, fast where it can be.

Exports :func:`check_rows` with :func:`.rules.check_rows`'s signature and result: the numpy
kernel (:mod:`.kernel`) unless ``KRAFT_COMPILED=off`` switches the fast paths off, else the
reference itself. The choice is made here, once. Where the kernel cannot take a history (an
offset beyond 64 bits), the reference decides it. tests/spark_validation/test_kafka_arrow.py
holds the two equal.
"""

from __future__ import annotations

from typing import Callable

from spark_validation.checks.kafka import kernel, rules
from spark_validation.checks.kafka.anomaly import KafkaAnomaly
from spark_validation.ingest.native import compiled_off
from spark_validation.ingest.records import OpRow

__all__ = ["check_rows", "KERNEL_LIMITS"]

KERNEL_LIMITS = (OverflowError, ValueError, TypeError)
"""What the kernel raises on a history it cannot represent (e.g. an offset beyond 64 bits)."""

OFF = compiled_off()


def _kernel_check_rows(rows: list[OpRow]) -> list[KafkaAnomaly]:
    try:
        return kernel.check_rows(rows)
    except KERNEL_LIMITS:
        return rules.check_rows(rows)


check_rows: Callable[[list[OpRow]], list[KafkaAnomaly]] = rules.check_rows if OFF else _kernel_check_rows
