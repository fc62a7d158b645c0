"""The vectorised Kafka kernel (spark_validation.kafka_arrow) in this process, without Spark:
exactly the reference's anomalies and evidence on the labelled cases and on random corpora
(many histories per kernel call, as a Spark task checks them)."""

from __future__ import annotations

import json
import random

from hypothesis import given

from spark_validation import kafka_arrow, kafka_ref
from tests import examples
from tests.spark_validation.cases import CASES, case_rows, expected_anomalies
from tests.spark_validation.strategies import kafka_corpus


def test_labelled_cases_kernel() -> None:
    assert kafka_arrow.check_rows(case_rows()) == expected_anomalies()


def test_labelled_cases_one_at_a_time() -> None:
    for name, (h, _) in CASES.items():
        rows = h.rows(name)
        assert kafka_arrow.check_rows(rows) == kafka_ref.check_rows(rows), name


@examples.CORPUS()
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


def _run_chunks(t, batch: int, chunk_rows: int):
    """The per-task chunking of kafka_arrow over ``t`` in batches of ``batch`` rows: (anomalies,
    {history: set of chunks that saw it})."""
    out = list(kafka_arrow._chunks(t.to_batches(max_chunksize=batch), 0, chunk_rows))
    anoms, seen = [], {}
    for b in out:
        for r in b.to_pylist():
            if r["kind"] is None:
                seen.setdefault(r["history"], set()).add(r["chunk"])
            else:
                anoms.append({**r, "evidence": json.loads(r["evidence"])})
    anoms = kafka_ref.sort_anomalies([{k: a[k] for k in ("history", "kind", "key", "evidence")} for a in anoms])
    return anoms, seen


def test_chunks_cut_at_history_boundaries() -> None:
    """Sorted rows in small batches: many chunks, each history seen by exactly one, and the
    anomalies of the whole."""
    t = kafka_arrow.input_table(case_rows())
    anoms, seen = _run_chunks(t, 3, 4)
    assert anoms == expected_anomalies()
    assert len({c for cs in seen.values() for c in cs}) > 3
    assert all(len(cs) == 1 for cs in seen.values())


def test_chunks_report_split_histories() -> None:
    """Rows not grouped by history: some history is seen by several chunks, which is what makes
    the driver re-check it after a shuffle (the chunks' own findings for it are then dropped)."""
    import pyarrow as pa

    t = kafka_arrow.input_table(case_rows())
    perm = list(range(t.num_rows))
    random.Random(3).shuffle(perm)
    _, seen = _run_chunks(t.take(pa.array(perm)), 3, 4)
    assert any(len(cs) > 1 for cs in seen.values())
    assert set(seen) == {r["history"] for r in case_rows()}
