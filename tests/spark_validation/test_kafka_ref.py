"""Kafka anomalies, reference implementation: every kind on a labelled history, exact evidence."""

from __future__ import annotations

import json

import pytest
from hypothesis import given

from spark_validation.checks.kafka import rules
from spark_validation.checks.kafka.anomaly import KafkaAnomaly, Unseen
from spark_validation.checks.kafka.rules import KINDS, micro_ops
from spark_validation.ingest.records import OpRow, op_row
from tests import examples
from tests.spark_validation.cases import CASES, H, expected_anomalies
from tests.spark_validation.strategies import kafka_corpus


@pytest.mark.parametrize("name", sorted(CASES))
def test_labelled_case(name: str) -> None:
    h, expected = CASES[name]
    got = [a.to_json() for a in rules.check_rows(h.rows(name))]
    assert [(a["kind"], a["key"], a["evidence"]) for a in got] == sorted(
        expected, key=lambda t: (t[0], t[1], json.dumps(t[2], sort_keys=True)))


def test_every_kind_is_labelled() -> None:
    kinds = {a.kind for a in expected_anomalies()}
    assert kinds == set(KINDS)


def test_valid_cases_exist_and_are_clean() -> None:
    clean = [n for n, (_, exp) in CASES.items() if not exp]
    assert len(clean) >= 3
    for n in clean:
        assert rules.check_rows(CASES[n][0].rows(n)) == []


def test_both_encodings_give_the_same_micro_ops() -> None:
    flat = op_row("h", 1, index=0, process=0, type="ok", f="poll", key=1, value=[[0, 5], [1, 6]])
    jepsen = op_row("h", 1, index=0, process=0, type="ok", f="poll", value=[["poll", {"1": [[0, 5], [1, 6]]}]])
    strip = lambda ms: [(m.key, m.offset, m.value) for m in ms]  # noqa: E731
    assert strip(micro_ops(flat)) == strip(micro_ops(jepsen)) == [("1", 0, "5"), ("1", 1, "6")]
    s_flat = op_row("h", 1, index=0, process=0, type="ok", f="send", key="k", value=[3, "v"])
    s_jep = op_row("h", 1, index=0, process=0, type="ok", f="send", value=[["send", "k", [3, "v"]]])
    assert strip(micro_ops(s_flat)) == strip(micro_ops(s_jep)) == [("k", 3, "v")]


def test_invocations_carry_no_micro_ops() -> None:
    inv = op_row("h", 1, index=0, process=0, type="invoke", f="send", key=1, value=[0, 5])
    assert micro_ops(inv) == []


def test_unseen_is_a_violation_as_in_jepsen() -> None:
    # jepsen.tests.kafka/analysis: (seq (:unseen last-unseen)) -> :unseen in :errors -> valid? false
    assert "unseen" in rules.VIOLATIONS and "unseen" not in rules.INFORMATIONAL
    unseen = {"kind": "unseen", "key": "x", "evidence": {"count": 1, "values": ["1"]}}
    assert rules.is_violation(KafkaAnomaly.from_json({"history": "h", **unseen}))
    assert not rules.is_violation(KafkaAnomaly.from_json(
        {"history": "h", **unseen, "evidence": {**unseen["evidence"], "allowed": True}}))
    typed = KafkaAnomaly("h", "unseen", "x", Unseen(1, ["1"]))
    assert rules.is_violation(typed)
    assert not rules.is_violation(KafkaAnomaly("h", "unseen", "x", Unseen(1, ["1"]), allowed=True))


def test_breaking_a_valid_history_is_caught() -> None:
    """Mutate the clean history: drop the read of offset 0 -> the checker must now complain."""
    h = H()
    h.send(0, "x", 1, 0)
    h.send(0, "x", 2, 1)
    h.poll(1, "x", [(0, 1), (1, 2)])
    assert rules.check_rows(h.rows("ok")) == []
    h.ops[-1]["value"] = [[1, 2]]
    kinds = {a.kind for a in rules.check_rows(h.rows("broken"))}
    assert "lost-write" in kinds


@examples.HEAVY()
@given(kafka_corpus(max_size=4))
def test_reference_is_total_and_deterministic(rows: list[OpRow]) -> None:
    a = rules.check_rows(rows)
    b = rules.check_rows(list(reversed(rows)))
    assert a == b
    for x in a:
        assert x.kind in KINDS
        assert KafkaAnomaly.from_json(json.loads(json.dumps(x.to_json()))) == x
