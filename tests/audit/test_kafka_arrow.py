"""The vectorised Kafka kernel (spark_validation.kafka_arrow) in this process, without Spark:
exactly the reference's anomalies and evidence on the labelled cases and on random corpora
(many histories per kernel call, as a Spark task checks them)."""

from __future__ import annotations

import random

from hypothesis import given, settings

from spark_validation import kafka_arrow, kafka_ref
from tests.audit.cases import CASES, case_rows, expected_anomalies
from tests.audit.strategies import kafka_corpus


def test_labelled_cases_kernel() -> None:
    assert kafka_arrow.check_rows(case_rows()) == expected_anomalies()


def test_labelled_cases_one_at_a_time() -> None:
    for name, (h, _) in CASES.items():
        rows = h.rows(name)
        assert kafka_arrow.check_rows(rows) == kafka_ref.check_rows(rows), name


@settings(max_examples=150)
@given(kafka_corpus(min_size=1, max_size=30))
def test_kernel_matches_reference(rows: list[dict]) -> None:
    assert kafka_arrow.check_rows(rows) == kafka_ref.check_rows(rows)


def test_row_order_does_not_matter() -> None:
    """The kernel sorts for itself: shuffled kernel rows give the same anomalies."""
    import pyarrow as pa

    t = kafka_arrow.input_table(case_rows())
    perm = list(range(t.num_rows))
    random.Random(7).shuffle(perm)
    got = kafka_ref.sort_anomalies(kafka_arrow.check_table(t.take(pa.array(perm))))
    assert got == expected_anomalies()
