"""History ingest: formats, normalisation, model selection, malformed input, corpus walking."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from spark_validation.ingest.edn import Tagged
from spark_validation.ingest.history import (
    History,
    HistoryFormatError,
    Op,
    iter_corpus,
    pair_ops,
    read_history,
    to_jsonable,
)
from spark_validation.linearizability import check_history
from tests.spark_validation.readers import history_from_ops

JEPSEN_LINES = """\
{:type :invoke, :f :read, :value nil, :process 0, :time 5, :index 0}
{:type :invoke, :f :write, :value 3, :process 1, :time 6, :index 1}
{:type :info, :f :kill, :value :all, :process :nemesis, :time 7, :index 2}
{:type :ok, :f :read, :value nil, :process 0, :time 8, :index 3}
{:type :info, :f :write, :value 3, :process 1, :time 9, :index 4, :error [:timeout "no reply"]}
"""


def test_jepsen_one_map_per_line(tmp_path: Path) -> None:
    p = tmp_path / "history.edn"
    p.write_text(JEPSEN_LINES)
    h = read_history(p)
    assert [(o.index, o.process, o.type, o.f, o.value) for o in h.ops] == [
        (0, 0, "invoke", "read", None),
        (1, 1, "invoke", "write", 3),
        (2, "nemesis", "info", "kill", "all"),
        (3, 0, "ok", "read", None),
        (4, 1, "info", "write", 3),
    ]
    assert h.ops[4].extra == {"error": ("timeout", "no reply")}
    assert h.ops[0].time == 5
    assert h.nemesis_ops == 1
    assert h.malformed == [] and h.structure_errors == []
    assert h.summary()["types"] == {"invoke": 2, "ok": 1, "fail": 0, "info": 1}


def test_jepsen_record_literals(tmp_path: Path) -> None:
    """Jepsen 0.3+ writes history.edn ops as #jepsen.history.Op{...} records."""
    p = tmp_path / "history.edn"
    p.write_text(
        "\n".join("#jepsen.history.Op" + line for line in JEPSEN_LINES.splitlines())
        + "\n#jepsen.history.Op{:type :ok, :f :read :value\n"  # broken: resync at the next record
        + "#jepsen.history.Op{:index 9, :type :invoke, :f :read, :value nil, :process 5}\n"
    )
    a = read_history(p)
    b = tmp_path / "plain.edn"
    b.write_text(JEPSEN_LINES + "{:index 9, :type :invoke, :f :read, :value nil, :process 5}\n")
    assert a.ops == read_history(b).ops
    assert [m.line for m in a.malformed] == [6]


def test_jepsen_single_vector_same_as_lines(tmp_path: Path) -> None:
    a = tmp_path / "a.edn"
    a.write_text(JEPSEN_LINES)
    b = tmp_path / "b.edn"
    b.write_text("[" + JEPSEN_LINES + "]\n")
    assert read_history(a).ops == read_history(b).ops


def test_kafka_values_survive(tmp_path: Path) -> None:
    p = tmp_path / "k.edn"
    p.write_text(
        '{:type :ok, :f :poll, :value [[:poll {"t-0" [[0 5] [1 6]], 7 [[3 :x]]}]], :process 0}\n'
        '{:type :ok, :f :send, :value [[:send 3 [12 5]]], :process 0, :ts #inst "2024-01-01"}\n'
    )
    h = read_history(p)  # (unpaired completions: structure errors, but values intact)
    assert h.ops[0].value == (("poll", {"t-0": ((0, 5), (1, 6)), 7: ((3, "x"),)}),)
    assert h.ops[1].value == (("send", 3, (12, 5)),)
    assert h.ops[1].extra["ts"] == Tagged("inst", "2024-01-01")
    assert h.ops[0].index == 0 and h.ops[1].index == 1  # positions when no :index
    assert json.dumps(h.ops[1].to_dict())  # JSON-able


def test_ndjson_roundtrip_through_to_dict(tmp_path: Path) -> None:
    src = tmp_path / "h.edn"
    src.write_text(JEPSEN_LINES)
    h = read_history(src)
    out = tmp_path / "h.ndjson"
    out.write_text(
        json.dumps({"v": 1, "kind": "history", "model": "register"})
        + "\n"
        + "\n".join(json.dumps(op.to_dict()) for op in h.ops)
        + "\n"
    )
    h2 = read_history(out)
    assert h2.ops == h.ops
    assert h2.model == "register"
    assert h2.header["kind"] == "history"


def test_json_array_with_malformed_element(tmp_path: Path) -> None:
    p = tmp_path / "h.json"
    p.write_text(
        '[{"process": 0, "type": "invoke", "f": "write", "value": 1},\n'
        ' {"process": 0, "type": "ok", "f": "write", "value": 1,,},\n'
        ' {"process": 0, "type": "ok", "f": "write", "value": 1},\n'
        ' 17,\n'
        ' {"process": 0, "type": "invoke", "f": "read"}]\n'
    )
    h = read_history(p)
    assert len(h.ops) == 3
    assert [(m.line, m.reason.split(":")[0]) for m in h.malformed] == [
        (2, "JSON error at line 2, column 56"),
        (4, "not an op map but int"),
    ]
    assert h.malformed[0].text.startswith(' {"process": 0')


def test_ndjson_malformed_lines_are_counted_not_dropped(tmp_path: Path) -> None:
    p = tmp_path / "h.ndjson"
    p.write_text(
        '{"v": 1, "kind": "history", "model": "register"}\n'
        '{"process": 0, "type": "invoke", "f": "write", "value": 1}\n'
        "garbage\n"
        '{"process": 0, "type": "ok", "f": "write", "value": 1}\n'
        '{"process": 0, "type": "banana", "f": "write"}\n'
        '{"type": "invoke", "f": "write"}\n'
        "\n"
    )
    h = read_history(p)
    assert len(h.ops) == 2
    assert [(m.line, m.reason) for m in h.malformed] == [
        (3, "JSON error at column 1: Expecting value"),
        (5, "unknown op type 'banana'"),
        (6, "op has no process"),
    ]
    r = check_history(h)
    assert r.valid is True
    assert r.info.malformed_lines == 3
    assert "readable ops only" in r.info.scope


def test_edn_vector_resynchronises_after_a_broken_op(tmp_path: Path) -> None:
    p = tmp_path / "h.edn"
    p.write_text(
        "[{:type :invoke, :f :write, :value 1, :process 0}\n"
        ' {:type :ok, :f :write, :value "oops, :process 0}\n'
        " {:type :ok, :f :write, :value 1, :process 0}\n"
        " {:type :invoke, :f :read, :value nil, :process 0}"
    )  # and no closing ]
    h = read_history(p)
    assert len(h.ops) == 3
    assert [m.line for m in h.malformed] == [2, 4]
    assert "unterminated string" in h.malformed[0].reason
    assert "not closed" in h.malformed[1].reason


def test_header_of_another_kind_is_not_a_history(tmp_path: Path) -> None:
    p = tmp_path / "t.ndjson"
    p.write_text('{"v": 1, "kind": "trace", "protocol": "kraft"}\n{"i": 0}\n')
    with pytest.raises(HistoryFormatError) as exc:
        read_history(p)
    assert exc.value.line == 1 and "kind is 'trace'" in str(exc.value)
    p.write_text('{"v": 2, "kind": "history"}\n')
    with pytest.raises(HistoryFormatError, match="version"):
        read_history(p)


def test_one_json_object_is_not_a_history(tmp_path: Path) -> None:
    """A simulator's pretty-printed summary.json is skipped as "not a history" (with its keys),
    not reported as dozens of malformed lines; one op object on one line is still read."""
    p = tmp_path / "summary.json"
    p.write_text(json.dumps({"protocol": "kraft", "seed": 1, "events": 3000}, indent=2) + "\n")
    with pytest.raises(HistoryFormatError) as exc:
        read_history(p)
    assert exc.value.line == 1
    assert "not a history: one JSON object (keys: events, protocol, seed)" in str(exc.value)
    p.write_text('{"process": 0, "type": "invoke", "f": "read", "value": null}\n')
    assert len(read_history(p).ops) == 1


def test_binary_and_missing_files(tmp_path: Path) -> None:
    p = tmp_path / "b.edn"
    p.write_bytes(b"{:type :invoke}\n\xff\xfe\n")
    with pytest.raises(HistoryFormatError) as exc:
        read_history(p)
    assert exc.value.line == 2 and "UTF-8" in str(exc.value)
    with pytest.raises(HistoryFormatError, match="cannot read"):
        read_history(tmp_path / "missing.edn")


def test_model_selection_priority(tmp_path: Path) -> None:
    d = tmp_path / "corpus"
    d.mkdir()
    (d / "model.txt").write_text("# directory default\ncas-register\n")
    (d / "a.edn").write_text(JEPSEN_LINES)
    (d / "b.edn").write_text(JEPSEN_LINES)
    (d / "b.edn.model").write_text('{"model": "register", "initial": 0}')
    op = '{"process": 0, "type": "invoke", "f": "add", "value": 1}\n'  # a header alone is not a history
    (d / "c.ndjson").write_text('{"v": 1, "kind": "history", "model": "set"}\n' + op)
    (d / "d.ndjson").write_text('{"v": 1, "kind": "history", "model": "set"}\n' + op)
    (d / "d.ndjson.model").write_text("kv\n")
    got = {h.id: (h.model, h.initial) for h in iter_corpus(d, default_model="append-log")}
    assert got == {
        "a.edn": ("cas-register", None),  # model.txt
        "b.edn": ("register", 0),  # sidecar beats model.txt
        "c.ndjson": ("set", None),  # header beats model.txt
        "d.ndjson": ("kv", None),  # sidecar beats header
    }
    (d / "model.txt").unlink()
    assert read_history(d / "a.edn", default_model="append-log").model == "append-log"


def test_corpus_walk_is_sorted_recursive_and_counts_skips(tmp_path: Path) -> None:
    (tmp_path / "z").mkdir()
    (tmp_path / "a").mkdir()
    (tmp_path / "z" / "1.edn").write_text(JEPSEN_LINES)
    (tmp_path / "a" / "2.ndjson").write_text('{"process": 0, "type": "invoke", "f": "read"}\n')
    (tmp_path / "a" / "notes.txt").write_text("hello")
    (tmp_path / "a" / "results.edn").write_text("{:valid? true, :count 3}\n")
    (tmp_path / "a" / "trace.ndjson").write_text('{"v": 1, "kind": "trace"}\n')
    scan = iter_corpus([tmp_path, tmp_path / "nope"])
    ids = [Path(h.id).relative_to(tmp_path).as_posix() for h in scan]
    assert ids == ["a/2.ndjson", "z/1.edn"]
    skipped = {Path(s.path).name: s.reason for s in scan.skipped}
    assert set(skipped) == {"notes.txt", "results.edn", "trace.ndjson", "nope"}
    assert "no operation could be read" in skipped["results.edn"]
    assert "kind is 'trace'" in skipped["trace.ndjson"]
    assert skipped["nope"] == "no such file or directory"
    assert scan.read == 2


def _op(i: int, p: object, t: str, f: str, v: object = None) -> Op:
    return Op(i, p, t, f, None, v)


def test_structure_errors_are_reported_and_block_the_verdict() -> None:
    ops = [
        _op(0, 0, "invoke", "write", 1),
        _op(1, 0, "invoke", "write", 2),  # double invocation
        _op(2, 0, "ok", "write", 2),
        _op(3, 1, "ok", "read", 1),  # unmatched completion
        _op(4, 2, "invoke", "write", 3),
        _op(5, 2, "ok", "read", 3),  # f mismatch
        _op(6, "nemesis", "info", "start"),  # not a client: ignored, counted
    ]
    h = history_from_ops(ops, model="register")
    assert [(e.position, e.index) for e in h.structure_errors] == [(1, 1), (3, 3), (5, 5)]
    r = check_history(h)
    assert r.valid == "unknown"
    assert len(r.info.structure_errors) == 3
    assert r.info.nemesis_ops == 1


def test_pairing_info_frees_the_process_and_pending_ops() -> None:
    ops = [
        _op(0, 0, "invoke", "write", 1),
        _op(1, 0, "info", "write", 1),
        _op(2, 0, "invoke", "write", 2),  # reuse after info: allowed
        _op(3, 1, "invoke", "read"),  # never completes
    ]
    operations, errors = pair_ops(ops)
    assert errors == []
    assert [o.outcome for o in operations] == ["info", "pending", "pending"]


def test_string_processes_are_clients_and_bad_processes_malformed(tmp_path: Path) -> None:
    p = tmp_path / "h.ndjson"
    p.write_text(
        '{"process": "c1", "type": "invoke", "f": "write", "value": 1}\n'
        '{"process": "c1", "type": "ok", "f": "write", "value": 1}\n'
        '{"process": "nemesis", "type": "info", "f": "partition"}\n'
        '{"process": null, "type": "info", "f": "partition"}\n'
        '{"process": [1], "type": "info", "f": "partition"}\n'
        '{"process": "c2", "type": "invoke", "f": "read"}\n'
        '{"process": "c2", "type": "ok", "f": "read", "value": 0}\n'
    )
    h = read_history(p)
    assert h.nemesis_ops == 1
    assert [m.reason for m in h.malformed] == ["bad process None", "bad process (1,)"]
    r = check_history(h, "register", initial=0)
    assert r.valid is False  # the clients' ops were checked, not ignored
    assert r.anomalies[0].to_json()["evidence"]["stuck_op"]["process"] == "c2"


def test_to_jsonable() -> None:
    assert to_jsonable({(1, 2): frozenset({3, 1}), "t": Tagged("inst", "x")}) == {
        "[1, 2]": [1, 3],
        "t": {"#inst": "x"},
    }


def test_history_contract_fields() -> None:
    h = History(id="x", ops=[], model="register", malformed=[])
    assert (h.id, h.ops, h.model, h.malformed) == ("x", [], "register", [])
