"""The vectorised Kafka kernel (spark_validation.checks.kafka.kernel) in this process, without Spark:
exactly the reference's anomalies and evidence on the labelled cases and on random corpora
(many histories per kernel call, as a Spark task checks them)."""

from __future__ import annotations

import importlib
import random

import pytest
from hypothesis import given

from spark_validation.checks.kafka import fast, kernel, rules
from spark_validation.checks.kafka import spark as kspark
from spark_validation.checks.kafka.anomaly import KafkaAnomaly, sorted_anomalies
from spark_validation.ingest.records import OpRow, op_row
from tests import examples
from tests.spark_validation.cases import CASES, H, case_rows, expected_anomalies
from tests.spark_validation.strategies import kafka_corpus


def test_labelled_cases_kernel() -> None:
    assert kernel.check_rows(case_rows()) == expected_anomalies()


def test_labelled_cases_one_at_a_time() -> None:
    for name, (h, _) in CASES.items():
        rows = h.rows(name)
        assert kernel.check_rows(rows) == rules.check_rows(rows), name


@examples.CORPUS()
@given(kafka_corpus(min_size=1, max_size=30))
def test_kernel_matches_reference(rows: list[OpRow]) -> None:
    assert kernel.check_rows(rows) == rules.check_rows(rows)


def test_a_table_of_assignments_only_has_no_anomaly() -> None:
    """A history (or a stored chunk of one) whose only Kafka ops are assignments: kernel rows, no
    send or poll among them."""
    rows = [op_row("h", 1, index=0, process=0, type="invoke", f="subscribe", key=None, value=["x"]),
            op_row("h", 2, index=1, process=0, type="ok", f="subscribe", key=None, value=["x", "y"])]
    t = kernel.input_table(rows)
    assert t.num_rows == 3 and set(t.column("mop").to_pylist()) == {"assign"}
    assert kernel.check_table(t) == rules.check_rows(rows) == []


def test_row_order_does_not_matter() -> None:
    """The kernel sorts for itself: shuffled kernel rows give the same anomalies."""
    import pyarrow as pa

    t = kernel.input_table(case_rows())
    perm = list(range(t.num_rows))
    random.Random(7).shuffle(perm)
    got = sorted_anomalies(kernel.check_table(t.take(pa.array(perm))))
    assert got == expected_anomalies()


def _run_chunks(t, batch: int, chunk_rows: int):
    """The per-task chunking of checks.kafka.spark over ``t`` in batches of ``batch`` rows: (anomalies,
    {history: set of chunks that saw it})."""
    out = list(kspark._chunks(t.to_batches(max_chunksize=batch), 0, chunk_rows))
    anoms, seen = [], {}
    for b in out:
        for r in b.to_pylist():
            if r["kind"] is None:
                seen.setdefault(r["history"], set()).add(r["chunk"])
            else:
                anoms.append(KafkaAnomaly.from_json(r))
    anoms = sorted_anomalies(anoms)
    return anoms, seen


def test_chunks_cut_at_history_boundaries() -> None:
    """Sorted rows in small batches: many chunks, each history seen by exactly one, and the
    anomalies of the whole."""
    t = kernel.input_table(case_rows())
    anoms, seen = _run_chunks(t, 3, 4)
    assert anoms == expected_anomalies()
    assert len({c for cs in seen.values() for c in cs}) > 3
    assert all(len(cs) == 1 for cs in seen.values())


def test_chunks_report_split_histories() -> None:
    """Rows not grouped by history: some history is seen by several chunks, which is what makes
    the driver re-check it after a shuffle (the chunks' own findings for it are then dropped)."""
    import pyarrow as pa

    t = kernel.input_table(case_rows())
    perm = list(range(t.num_rows))
    random.Random(3).shuffle(perm)
    _, seen = _run_chunks(t.take(pa.array(perm)), 3, 4)
    assert any(len(cs) > 1 for cs in seen.values())
    assert set(seen) == {r.history for r in case_rows()}


def _huge_offset_rows() -> list[OpRow]:
    """A history whose polls read offsets beyond 64 bits (the kernel's int64 columns cannot hold
    them), one poll skipping an offset another read."""
    h = H()
    h.poll(0, "x", [(2**70, "a"), (2**70 + 2, "c")])
    h.poll(1, "x", [(2**70 + 1, "b")])
    return h.rows("huge")


def test_fast_check_rows_falls_back_to_the_reference() -> None:
    """Where the kernel cannot take a history it raises one of fast.KERNEL_LIMITS, and the
    exported check_rows gives the reference's anomalies instead."""
    rows = _huge_offset_rows()
    expected = rules.check_rows(rows)
    assert expected, "the history must have something to report"
    with pytest.raises(fast.KERNEL_LIMITS):
        kernel.check_rows(rows)
    assert fast.check_rows(rows) == expected


def test_compiled_off_chooses_the_reference(monkeypatch) -> None:
    """The choice between kernel and reference is made once, when fast is imported."""
    monkeypatch.setenv("KRAFT_COMPILED", "off")
    off = importlib.reload(fast)
    try:
        assert off.check_rows is rules.check_rows
    finally:
        monkeypatch.delenv("KRAFT_COMPILED")
        on = importlib.reload(fast)
    assert on.check_rows is not rules.check_rows
    assert on.check_rows(case_rows()) == expected_anomalies()
