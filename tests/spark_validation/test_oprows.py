"""The fast row readers (spark_validation/ingest/rows.py) against the history reader: same rows, same
malformed lines (file, line, reason, text), same files rejected whole, on random and hostile
lines; the kernel rows and pairing errors computed from rows against their references."""

from __future__ import annotations

import json
from pathlib import Path

import attrs
import pyarrow as pa
from hypothesis import HealthCheck, given
from hypothesis import strategies as st

from spark_validation.ingest.history import HistoryFormatError, pair_ops
from spark_validation.ingest.records import OpRow, rows_to_ops
from spark_validation.ingest.rows import Rows, _edn_to_json, read_rows, read_table, structure_problem
from spark_validation.checks.kafka.rows import cycle_table, kernel_columns, kernel_table
from tests import examples

FIX = Path(__file__).parent / "fixtures"

SETTINGS = examples.HEAVY(deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def _read(path: Path, fast: bool):
    try:
        rows, bad, model, initial = read_rows(path, None, fast=fast)
    except HistoryFormatError as exc:
        return ("error", exc.line, exc.reason)
    return [attrs.asdict(r) for r in rows.ops()], [(b.path, b.line, b.reason, b.text) for b in bad], model, initial


def _same(path: Path) -> None:
    assert _read(path, True) == _read(path, False), path


# -------------------------------------------------------------------------------- NDJSON

SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.integers(-2**70, 2**70),
                    st.floats(allow_nan=False), st.text(max_size=4),
                    st.sampled_from(["invoke", "ok", "fail", "info", ":ok", "send", "poll", "nemesis", "[1, 2]",
                                     "\u2028", "\x7f", "é", "\\", '"', 1e16, 1e-7, 2.5, -0.0, 2**64, 2**63, -2**63 - 1,
                                     10**30]))
VALUES = st.recursive(SCALARS, lambda c: st.one_of(st.lists(c, max_size=3),
                                                     st.dictionaries(st.text(max_size=3), c, max_size=3)),
                      max_leaves=8)


@st.composite
def ndjson_op(draw) -> str:
    o: dict = {}
    for k, s in (("index", st.one_of(st.integers(0, 50), SCALARS)), ("process", st.one_of(st.integers(0, 3), SCALARS)),
                 ("type", st.one_of(st.sampled_from(["invoke", "ok", "fail", "info"]), SCALARS)),
                 ("f", st.one_of(st.sampled_from(["send", "poll", "txn", "read", "write"]), SCALARS)),
                 ("key", SCALARS), ("value", VALUES), ("time", st.one_of(st.integers(0, 10**12), SCALARS)),
                 ("error", VALUES)):
        if draw(st.integers(0, 5)):
            o[k] = draw(s)
    text = json.dumps(o, ensure_ascii=draw(st.booleans()), separators=draw(st.sampled_from([(",", ":"), (", ", ": ")])))
    return draw(st.sampled_from([text, text, text, " " + text + "\t", text[:-1], "[1]", "", "nul", text + "x",
                                 '{"type": "ok", "process": 1, "f": "r", "value": ' + "[" * 120 + "]" * 120 + "}",
                                 '{"type": "ok", "process": 1, "f": "r", "value": NaN}']))


@SETTINGS
@given(st.lists(ndjson_op(), min_size=0, max_size=12), st.sampled_from(["\n", "\r\n", "\r"]),
       st.sampled_from([None, '{"v": 1, "kind": "history", "model": "register"}', '{"v": 2, "kind": "history"}',
                        '{"kind": "trace", "v": 1}']), st.booleans(), st.binary(max_size=3))
def test_ndjson_fast_reader_equals_history_reader(tmp_path, lines, eol, header, bom, junk) -> None:
    body = ([header] if header else []) + lines
    data = ("\ufeff" if bom else "").encode() + eol.join(body).encode() + eol.encode()
    if junk:
        data += b'{"type": "ok", "process": 1, "f": "x", "value": "' + junk + b'"}\n'
    p = tmp_path / "h.ndjson"
    p.write_bytes(data)
    _same(p)


def test_ndjson_fast_reader_on_fixtures_and_hostile_files(tmp_path) -> None:
    from tests.hostile.test_differential import build

    build(tmp_path)
    for p in sorted([*FIX.glob("*.ndjson"), *FIX.glob("*.edn"), *tmp_path.glob("*.ndjson"), *tmp_path.glob("*.edn")]):
        _same(p)


# -------------------------------------------------------------------------------- EDN

KW = st.sampled_from([":invoke", ":ok", ":fail", ":info", ":send", ":poll", ":txn", ":nemesis", ":a/b", ":x-y?",
                      ":nil", ":1a", ":a:b", ":a$b", ":-"])
EDN_SCALAR = st.one_of(KW, st.sampled_from(["nil", "true", "false", "0", "-0", "01", "+5", "5N", "1.5", "1e3",
                                            "18446744073709551616", "9223372036854775808", "null", "sym", '"s"',
                                            '"a b, c"', "\\a", "#{1 2}", "#inst \"2020\"", "##NaN"]),
                       st.integers(-5, 99).map(str))


def _edn_vec(items: list[str], sep: str) -> str:
    return "[" + sep.join(items) + "]"


EDN_VALUE = st.recursive(EDN_SCALAR, lambda c: st.one_of(
    st.builds(_edn_vec, st.lists(c, max_size=3), st.sampled_from([" ", ", ", "  "])),
    st.builds(lambda kv, sep: "{" + sep.join(f"{k} {v}" for k, v in kv) + "}",
              st.lists(st.tuples(st.one_of(KW, st.integers(0, 3).map(str), st.just("nil"), st.just("[1]")), c),
                       max_size=3), st.sampled_from([", ", " "]))), max_leaves=8)


@st.composite
def edn_op(draw) -> str:
    parts = []
    for k, s in ((":index", st.one_of(st.integers(0, 50).map(str), EDN_SCALAR)),
                 (":time", st.one_of(st.integers(0, 10**12).map(str), EDN_SCALAR)),
                 (":type", st.one_of(st.sampled_from([":invoke", ":ok", ":fail", ":info"]), EDN_SCALAR)),
                 (":process", st.one_of(st.integers(0, 3).map(str), EDN_SCALAR)),
                 (":f", st.one_of(st.sampled_from([":send", ":poll", ":txn", ":read"]), EDN_SCALAR)),
                 (":value", EDN_VALUE), (":key", EDN_SCALAR)):
        if draw(st.integers(0, 5)):
            parts.append(f"{k} {draw(s)}")
    if draw(st.integers(0, 9)) == 0 and parts:
        parts.append(parts[0])  # a duplicate key
    text = "{" + draw(st.sampled_from([", ", " "])).join(parts) + "}"
    if draw(st.integers(0, 9)):  # mostly lines the fast path may take (the others send the file to the reader)
        return draw(st.sampled_from([text, "#jepsen.history.Op" + text, "", ","]))
    return draw(st.sampled_from(["  " + text, text + " ; c", text[:-1], text + " {}", "; only a comment",
                                 "#_ " + text]))


@SETTINGS
@given(st.lists(edn_op(), min_size=0, max_size=10), st.sampled_from(["", "[", "("]))
def test_edn_fast_reader_equals_history_reader(tmp_path, lines, opener) -> None:
    text = "\n".join(lines) + "\n"
    if opener:
        text = opener + text + ("]" if opener == "[" else ")") + "\n"
    p = tmp_path / "h.edn"
    p.write_text(text)
    _same(p)


# values as Clojure prints them: mostly what a Jepsen history holds, sometimes a trap
_EDN_CLEAN_SCALAR = st.one_of(st.sampled_from([":send", ":poll", ":sender", ":r", ":append", ":a/b", ":x-y?", "true",
                                                "false"]), st.integers(-5, 2**62).map(str))
_EDN_CLEAN = st.recursive(_EDN_CLEAN_SCALAR, lambda c: st.one_of(
    st.builds(_edn_vec, st.lists(c, max_size=3), st.just(" ")),
    st.builds(lambda kv: "{" + ", ".join(f"{k} {v}" for k, v in kv) + "}",
              st.lists(st.tuples(st.one_of(st.integers(-3, 30).map(str), st.sampled_from([":k", ":send", ":a/b"])), c),
                       max_size=3, unique_by=lambda kv: kv[0]))), max_leaves=8)


@st.composite
def edn_uniform_file(draw) -> str:
    keys = draw(st.permutations([":index", ":time", ":type", ":process", ":f", ":key"]))
    keys = [k for k in keys if k in (":type", ":process") or draw(st.integers(0, 3))] + \
        ([":value"] if draw(st.integers(0, 5)) else [])
    good = {":type": st.sampled_from([":invoke", ":ok", ":fail", ":info"]), ":process": st.integers(0, 3).map(str),
            ":f": st.sampled_from([":send", ":poll", ":txn"]), ":key": st.sampled_from([":k1", "3", ":x/y"]),
            ":value": _EDN_CLEAN}
    lines = []
    for line in _uniform_ops(draw, keys, good, lambda k: EDN_VALUE if k == ":value" else EDN_SCALAR, "{} {}", ", "):
        lines.append(draw(st.sampled_from([line, line, line, "#jepsen.history.Op" + line])))
        if draw(st.integers(0, 9)) == 0:
            lines.append("")
    return "\n" * draw(st.integers(0, 1)) + "\n".join(lines) + "\n" * draw(st.integers(0, 2))


@SETTINGS
@given(edn_uniform_file())
def test_edn_uniform_files_read_as_the_history_reader_reads_them(tmp_path, text) -> None:
    """EDN files of one key order (the uniform path's case, after the quick rewrite to JSON),
    with traps among the values: the same rows and malformed lines as the history reader."""
    p = tmp_path / "h.edn"
    p.write_text(text)
    _same(p)


TRAPS = ["{:index -0, :type :ok, :process 0, :f :w}", "{:index 1, :index 2, :type :ok, :process 0, :f :w}",
         "{:type :ok, :process 0, :f :w, :value [1e16 1.5 2.0]}", "{:type :ok, :process 0, :f :w, :value null}",
         "{:type :ok, :process 0, :f :w, :value 18446744073709551616}", "{:type :ok, :process 0, :f :w, :value :a:b}",
         "{:type :ok, :process 0, :f :w, :value {1 2, 1 3}}", "{:type :ok, :process 0, :f :w, :value {:a 1 :b 2}}",
         "{:type :ok, :process 0, :f :w, :value [1, 2 3]}", "{:type :ok, :process nil, :f :w}",
         "{:type :ok, :process 0, :f :w, :value {nil 1}}", "{:type :ok, :process 0, :f :w, :value #{1}}",
         "{:type :ok, :process 0, :f :w, :value 5N}", "{:type :ok, :process 0, :f :w, :value 1.50}"]


def test_edn_traps_each_read_as_the_history_reader_reads_them(tmp_path) -> None:
    good = "{:index 0, :type :invoke, :process 0, :f :w, :value 1}"
    for trap in TRAPS:
        p = tmp_path / "h.edn"
        p.write_text(good + "\n" + trap + "\n")
        _same(p)


def test_edn_key_spellings_past_the_head_are_not_missed(tmp_path) -> None:
    """The quick EDN rewrite looks for each op-key spelling only if the first 4 kB have it: a
    line further down that spells a key otherwise (another order, so another lead) is read as
    the history reader reads it, and the uniform path declines the file."""
    from spark_validation.ingest.rows import _edn_to_json_quick, _uniform

    good = "{:index %d, :time 5, :type :ok, :process 0, :f :send, :value [[:send 1 [%d 7]]]}"
    lines = [good % (i, i) for i in range(200)]
    assert len("\n".join(lines)) > 4096
    odd = "{:time 9, :index 200, :type :ok, :process 1, :f :poll, :value [[:poll {1 [[0 7]]}]]}"
    text = "\n".join(lines + [odd, good % (201, 201)]) + "\n"
    assert _uniform(_edn_to_json_quick(text), 1, 30) is None
    p = tmp_path / "h.edn"
    p.write_text(text)
    _same(p)
    rows = _read(p, True)[0]
    assert len(rows) == 202 and rows[200]["process"] == "1" and rows[200]["index"] == 200


def test_ndjson_traps(tmp_path) -> None:
    base = '{"type": "ok", "process": 0, "f": "w", "value": %s}'
    for v in ["1e16", "[1e16]", "[1.0e-7]", "18446744073709551616", "[18446744073709551616]", "[9223372036854775808]",
              '"\\ud800"', "[NaN]", '{"a": 1, "a": 2}', '["\\u0001\\n\\"é\u2028"]', "[-0]", "-0.0"]:
        p = tmp_path / "h.ndjson"
        p.write_text('{"type": "invoke", "process": 0, "f": "w"}\n' + base % v + "\n")
        _same(p)


# the uniform fast path: every op line with the same keys in the same order, compact

_U_KEYS = ["index", "time", "type", "process", "f", "key"]
# a field's text: mostly what a writer prints, sometimes what only a hostile file holds
_U_TEXT = st.one_of(
    st.integers(-3, 60).map(str), st.integers(-2**70, 2**70).map(str),
    st.sampled_from(['"invoke"', '"ok"', '"fail"', '"info"', '"send"', '"x"', '""', "null", "true", "1.5", "-0",
                     "007", '"\\u0041"', '"a\\"b"', '"é"', '"\t"', "[1]", "{}", '"\x01"']))
_U_VALUE = st.one_of(
    VALUES.map(lambda v: json.dumps(v, separators=(",", ":"), ensure_ascii=False)),
    st.sampled_from(["[1", "2],3", "[[1", "[2]]],[3", "1,2", "[1,2] ", "[1 ,2]", "[1.0]", "[1e5]", '["\\u00e9"]',
                     "[18446744073709551616]", "[9223372036854775808]", "[-0]", '{"a":1,"a":2}', "[NaN]", "",
                     "[" * 99 + "]" * 99, "[" * 100 + "]" * 100, "{\"k\":" * 60 + "1" + "}" * 60,
                     '[["send",1,[0,5]],["poll",{"1":[[0,5]]}]]', "null", '"v"', "7", "false"]))


def _uniform_ops(draw, keys: list[str], good: dict, odd, field: str, sep: str) -> list[str]:
    """1-8 op lines with ``keys`` in that order: each field's text drawn from ``good[key]``
    (an integer if absent), except up to 0, 1 or 3 fields in the file drawn from ``odd(key)``;
    ``field`` formats a key and its text, ``sep`` joins the fields."""
    hostile = draw(st.sampled_from([0, 0, 1, 3]))
    ops = []
    for _ in range(draw(st.integers(1, 8))):
        fields = []
        for k in keys:
            if hostile and draw(st.integers(0, 9)) == 0:
                hostile -= 1
                t = draw(odd(k))
            else:
                t = draw(good.get(k, st.integers(0, 2**62).map(str)))
            fields.append(field.format(k, t))
        ops.append("{" + sep.join(fields) + "}")
    return ops


@st.composite
def uniform_file(draw) -> bytes:
    keys = draw(st.permutations(_U_KEYS).flatmap(lambda ks: st.integers(1, 6).map(lambda n: ks[:n])))
    keys = [k for k in keys if draw(st.integers(0, 4))] + (["value"] if draw(st.integers(0, 5)) else [])
    good = {"type": st.sampled_from(['"invoke"', '"ok"', '"fail"', '"info"']),
            "process": st.one_of(st.integers(0, 3).map(str), st.sampled_from(['"p1"', '"nemesis"'])),
            "f": st.sampled_from(['"send"', '"poll"', '"txn"', "null", "3"]),
            "key": st.sampled_from(['"k1"', "null", "12", '"é"']),
            "value": VALUES.filter(lambda v: "1e" not in repr(v)).map(
                lambda v: json.dumps(v, separators=(",", ":"), ensure_ascii=False))}
    ops = _uniform_ops(draw, keys, good, lambda k: _U_VALUE if k == "value" else _U_TEXT, '"{}":{}', ",")
    lines = [draw(st.sampled_from(['{"v":1,"kind":"history","model":"append-log"}', ops[0]]))] + ops
    lines = [ln for ln in lines for ln in ([ln, ""] if draw(st.integers(0, 9)) == 0 else [ln])]
    return ("\n" * draw(st.integers(0, 1)) + "\n".join(lines) + "\n" * draw(st.integers(0, 2))).encode()


@SETTINGS
@given(uniform_file())
def test_ndjson_uniform_files_read_as_the_history_reader_reads_them(tmp_path, data) -> None:
    """Files whose lines share one key order (the uniform path's case), with hostile field texts
    and values among them (a value split over two lines' texts, floats, escapes, deep nesting):
    the same rows and malformed lines as the history reader."""
    p = tmp_path / "h.ndjson"
    p.write_bytes(data)
    _same(p)


def test_ndjson_uniform_path_reads_a_writers_file_and_declines_the_rest(tmp_path) -> None:
    from spark_validation.ingest.rows import _RowSink, _ndjson_uniform

    def uniform(text: str) -> bool:
        rows = Rows("h")
        return _ndjson_uniform(text.encode(), "h", rows, _RowSink("h", rows)) is not None

    head = '{"v":1,"kind":"history","model":"append-log"}\n'
    op = '{"index":%d,"time":5,"type":"ok","process":1,"f":"txn","value":%s}\n'
    good = head + "".join(op % (i, '[["send",1,[0,%d]]]' % i) for i in range(5))
    assert uniform(good) and uniform(good + "\n\n") and uniform(good.replace("\n{", "\n\n{", 2))
    for bad in ('[1', '[["send",1.5,[0,1]]]', '[["send",1,[0,1]]] ', '["\\u00e9"]', "[" * 100 + "]" * 100):
        assert not uniform(good + op % (9, bad)), bad
    # a value split over two lines is not two values
    assert not uniform(head + op % (0, "[[1") + op % (1, "[2]]],[3"))
    assert not uniform(good.replace('"process":1,"f"', '"f"', 1))  # another key order on one line
    for text in (good, good + op % (9, "[1"), head + op % (0, "[[1") + op % (1, "[2]]],[3")):
        p = tmp_path / "h.ndjson"
        p.write_text(text)
        _same(p)


def test_edn_clojure_shape_is_rewritten_to_json() -> None:
    line = "{:index 3, :type :ok, :process 0, :f :txn, :value [[:send 1 [0 5]] [:poll {1 [[0 5]], 2 []}]], :x nil}"
    assert json.loads(_edn_to_json(line)) == {
        "index": 3, "type": "ok", "process": 0, "f": "txn",
        "value": [["send", 1, [0, 5]], ["poll", {"1": [[0, 5]], "2": []}]], "x": None}


# -------------------------------------------------------------------------------- kernel rows, pairing


@examples.HEAVY(deadline=None)
@given(st.data())
def test_kernel_rows_equal_input_table(data) -> None:
    from spark_validation.checks.kafka import kernel
    from tests.spark_validation.strategies import kafka_corpus

    rows = data.draw(kafka_corpus(max_size=3))
    by: dict[str, list[OpRow]] = {}
    for r in rows:
        by.setdefault(r.history, []).append(r)
    for hid, hrows in by.items():
        assert kernel_table(Rows.from_ops(hid, hrows)).to_pylist() == kernel.input_table(hrows).to_pylist()


@examples.LARGE(deadline=None)
@given(st.data())
def test_cycle_rows_give_the_reference_cycles(data) -> None:
    from spark_validation.checks.elle import check as elle
    from spark_validation.checks.elle.reference import CycleOptions
    from tests.spark_validation.strategies import kafka_corpus

    rows = data.draw(kafka_corpus(max_size=3))
    by: dict[str, list[OpRow]] = {}
    for r in rows:
        by.setdefault(r.history, []).append(r)
    for hid, hrows in by.items():
        cols = kernel_columns(Rows.from_ops(hid, hrows))
        for opts in (CycleOptions(), CycleOptions(realtime=True), CycleOptions(True, True, True, True)):
            assert elle.check_table(cycle_table(cols), opts) == elle.check_rows_ref(hrows, opts)


@examples.PURE(deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["0", "1", " 1", "nemesis", "c"]),
                          st.sampled_from(["invoke", "ok", "fail", "info"]), st.sampled_from(["r", "w", None])),
                max_size=12))
def test_structure_problem_equals_pair_ops(ops) -> None:
    rows = [OpRow("h", n + 1, n, p, t, f) for n, (p, t, f) in enumerate(ops)]
    _, errors = pair_ops(rows_to_ops(rows))
    got = structure_problem(Rows.from_ops("h", rows))
    assert got == ((errors[0].position, errors[0].reason) if errors else None)


def test_a_parquet_table_fills_line_index_and_model() -> None:
    """An op table without ``line`` takes each op's ``index`` as its line, one without ``index``
    its line; a history with no model of its own takes the command's (``OpRow.of_mapping``)."""
    t = pa.table({"history": ["h", "h", "g"], "index": [4, 5, 0], "process": ["0", "0", "1"],
                  "type": ["invoke", "ok", "invoke"], "f": ["read"] * 3, "value": [None, "1", None]})
    h, g = read_table(t, "t.parquet", "register")
    assert (h.history, h.line, h.index, h.model, g.line) == ("h", [4, 5], [4, 5], "register", [0])
    t = pa.table({"history": ["h"], "line": [7], "type": ["invoke"], "f": ["read"], "model": ["cas-register"]})
    (r,) = read_table(t, "t.parquet", "register")
    assert (r.line, r.index, r.model) == ([7], [7], "cas-register")
