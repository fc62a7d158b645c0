"""The typed details of a history (``LinInfo``, ``HistoryInfo``) write the ``info`` entry the
checks wrote as dicts: the keys in the order the check reaches them, unset keys absent."""

from __future__ import annotations

import json

from spark_validation.checks.linearizable import LinInfo, LinResult, Undecided, check_history
from spark_validation.engine.result import HistoryInfo, HistoryResult, build_result
from spark_validation.ingest.history import Op
from tests.spark_validation.readers import history_from_ops


def _op(index: int, process, type_: str, f: str, value=None) -> Op:
    return Op(index=index, process=process, type=type_, f=f, value=value)


def test_structure_errors_follow_the_error_and_round_trip() -> None:
    ops = [_op(0, 0, "invoke", "write", 1), _op(1, 0, "invoke", "write", 2), _op(2, 0, "ok", "write", 2),
           _op(3, "nemesis", "info", "start")]
    r = check_history(history_from_ops(ops, model="register"))
    d = r.info.to_json()
    assert list(d) == ["nemesis_ops", "history", "model", "nil_reads", "error", "structure_errors"]
    assert d["structure_errors"] == [{"position": 1, "index": 1, "process": 0, "reason": d["structure_errors"][0]["reason"]}]
    assert LinInfo.from_json(json.loads(json.dumps(d))) == r.info


def test_a_checked_history_lists_its_counts_in_check_order() -> None:
    ops = [_op(0, 0, "invoke", "write", 1), _op(1, 0, "ok", "write", 1), _op(2, 1, "invoke", "read"),
           _op(3, 1, "fail", "read")]
    r = check_history(history_from_ops(ops, model="register"))
    assert list(r.info.to_json()) == ["nemesis_ops", "history", "model", "nil_reads", "failed_ops_dropped", "calls",
                                      "partitions", "explored"]
    assert r.info.failed_ops_dropped == 1 and r.info.calls == 1


def test_undecided_partitions_round_trip() -> None:
    info = LinInfo(nemesis_ops=0, model="register", unknown_partitions=[Undecided(None, "time budget exhausted", 3, 1, 9)])
    d = info.to_json()
    assert d == {"nemesis_ops": 0, "model": "register", "unknown_partitions": [
        {"key": None, "reason": "time budget exhausted", "calls": 3, "best_prefix": 1, "explored": 9}]}
    assert LinInfo.from_json(d) == info and isinstance(info.unknown_partitions, tuple)


def test_history_info_merges_kafka_lin_and_lost_lines_like_the_dicts_did() -> None:
    lin = LinInfo(nemesis_ops=0, history="h", malformed_lines=1, scope="readable ops", model="register")
    r = HistoryResult("h", "register", True, 4, info=HistoryInfo(kafka="empty", lin=lin))
    r.mark_lost_lines(2)
    # the lost-lines values replace the check's own in place; the Kafka reason comes first
    assert list(r.info.to_json().items()) == [
        ("kafka", "empty"), ("nemesis_ops", 0), ("history", "h"), ("malformed_lines", 2),
        ("scope", "the 4 op(s) read; 2 line(s) could not be read (malformed.json)"), ("model", "register")]
    assert r.malformed_lines == 2


def test_no_check_gives_the_error_alone_and_an_empty_check_no_info() -> None:
    none = build_result("h", None, 3, False, None, None, 0.0, None, frozenset({"lin", "kafka"}))
    assert none.info is not None and list(none.info.to_json()) == ["error"]
    assert "no check applies" in none.info.error
    quiet = build_result("h", "register", 0, False, None, None, 0.0, LinResult(True, 0, 0.0), frozenset({"lin"}))
    assert quiet.info is None
