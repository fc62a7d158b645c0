"""The compiled row loops (spark_validation/_rowkernel.c) against the Python ones in
spark_validation/ingest/rows.py and spark_validation/checks/kafka/rows.py.

``kernel_columns`` must give the same rows, value for value and type for type (``True`` is not
``1``, ``"1"`` is not ``1``), on the bench's Kafka corpus and on rows whose values are anything JSON
or EDN can carry, decoded by the reader or left as text. (tests/spark_validation/test_oprows.py
checks them against the reference checks, on whichever loop is built.)
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given
from hypothesis import strategies as st

from spark_validation.checks.kafka import rows_reference
from spark_validation.checks.kafka.rules import KAFKA_FS
from spark_validation.ingest import rows as oprows
from spark_validation.ingest import uniform
from spark_validation.ingest.native import built
from spark_validation.ingest.rows import Rows
from tests import examples
from tests.spark_validation.test_oprows import uniform_file

KERNEL: Any = built("_rowkernel")
pytestmark = pytest.mark.skipif(KERNEL is None, reason="the compiled row loops are not built (setup.py)")
if KERNEL is not None:
    from spark_validation.checks.kafka import rows_native
    from spark_validation.ingest import uniform_native


def _typed(xs: list) -> list:
    return [(type(x).__name__, x) for x in xs]


def _both(rows: Rows) -> tuple[dict, dict]:
    return rows_native.kernel_columns(rows), rows_reference.kernel_columns(rows)


def _assert_same(rows: Rows) -> int:
    fast, slow = _both(rows)
    for name in ("row", "mop", "key", "offset", "value", "pos"):
        assert _typed(fast[name]) == _typed(slow[name]), name
    return len(fast["row"])


def test_kernel_columns_on_the_bench_corpus(tmp_path: Path) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
    try:
        from audit_speed import edn_line, kafka_ops
    finally:
        sys.path.pop(0)
    rng = random.Random(3)
    total = 0
    for i, anomaly in enumerate((None, "skip", "inconsistent")):
        h = kafka_ops(2000, rng, anomaly)
        nd = tmp_path / f"h{i}.ndjson"
        nd.write_text("".join(json.dumps(o) + "\n" for o in h))
        ed = tmp_path / f"h{i}.edn"
        ed.write_text("".join(edn_line(o) + "\n" for o in h))
        for p in (nd, ed):
            rows = oprows.read_rows(str(p))[0]
            total += _assert_same(rows)
            rows.parsed = []  # nothing decoded by the reader: every value parsed from its text
            total += _assert_same(rows)
    assert total > 10_000


scalar = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.integers(2**63 - 2, 2**64),
                   st.floats(allow_nan=False, allow_infinity=False, width=32),
                   st.sampled_from(["a", "1", "", "k0", 'q"', "b\\", "\n", "é", "-0"]), st.integers(-(10**18), 10**18))
value = st.recursive(scalar, lambda inner: st.one_of(
    st.lists(inner, max_size=4),
    st.dictionaries(st.sampled_from(["k0", "1", "x"]), inner, max_size=3)), max_leaves=12)
micro = st.one_of(
    st.tuples(st.sampled_from(["send", "poll", 1, None, "x"]), value, value).map(list),
    st.tuples(st.just("poll"), st.dictionaries(st.sampled_from(["k0", "1"]), value, max_size=3)).map(list),
    st.tuples(st.just("send"), scalar, st.tuples(scalar, scalar).map(list)).map(list),
    value,
)
row_value = st.one_of(value, st.lists(micro, max_size=4), st.lists(st.tuples(scalar, scalar).map(list), max_size=3))


@st.composite
def odd_rows(draw: Any) -> Rows:
    rows = Rows("h")
    for n in range(draw(st.integers(0, 12))):
        v = draw(row_value)
        # compact (what the readers keep, walked from its text where plain: _rowkernel.text_row) or not
        text = None if v is None else json.dumps(v, separators=draw(st.sampled_from([(",", ":"), (", ", ": ")])))
        rows.line.append(n + 1)
        rows.index.append(n)
        rows.process.append(draw(st.sampled_from(["0", "1", "nemesis", None])))
        rows.type.append(draw(st.sampled_from(["invoke", "ok", "fail", "info", "odd"])))
        rows.f.append(draw(st.sampled_from(["send", "poll", "txn", "assign", "subscribe", "read", None])))
        rows.key.append(draw(st.sampled_from([None, "k0", "1"])))
        rows.value.append(text)
        rows.time.append(None)
        decoded = draw(st.booleans()) and type(v) in (list, dict)
        rows.parsed.append(v if decoded else oprows._UNPARSED)
    if draw(st.booleans()):
        rows.parsed = []
    return rows


@examples.MODEL(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(odd_rows())
def test_kernel_columns_on_odd_values(rows: Rows) -> None:
    _assert_same(rows)


def test_compiled_loops_reject_ragged_columns() -> None:
    k = KERNEL
    with pytest.raises(ValueError):
        k.kernel_columns(["ok"], [], [None], [None], None, oprows._UNPARSED, 1)


@examples.PURE(deadline=None)
@given(st.lists(st.sampled_from(["send", "poll", "txn", "read", "sen", "", None, "assign"]), max_size=30))
def test_rows_with_f_compiled_equals_python(fs: list) -> None:
    import numpy as np

    got = np.frombuffer(KERNEL.rows_with_f(fs, KAFKA_FS), dtype=np.int64).tolist()
    assert got == [n for n, f in enumerate(fs) if f in KAFKA_FS]


def _table_or_error(rows: Rows, impl: Any) -> Any:
    try:
        return impl.kernel_table(rows).to_pylist()
    except (OverflowError, ValueError, TypeError) as exc:  # what check_rows hands to the reference
        return type(exc)


@examples.MODEL(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(odd_rows())
def test_kernel_table_from_arrow_buffers_equals_python(rows: Rows) -> None:
    """The Arrow buffers of ``kernel_arrays`` make the table the Python lists make, and fail the
    way pyarrow fails on them (an offset beyond 64 bits: OverflowError)."""
    fast = _table_or_error(rows, rows_native)
    slow = _table_or_error(rows, rows_reference)
    assert fast == slow


def test_kernel_table_from_arrow_buffers_on_the_bench_corpus(tmp_path: Path) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
    try:
        from audit_speed import kafka_ops
    finally:
        sys.path.pop(0)
    p = tmp_path / "h.ndjson"
    p.write_text("".join(json.dumps(o) + "\n" for o in kafka_ops(3000, random.Random(5), "inconsistent")))
    rows = oprows.read_rows(str(p))[0]
    fast = rows_native.kernel_table(rows)
    slow = rows_reference.kernel_table(rows)
    assert fast.num_rows > 3000 and fast.equals(slow)
    fast.validate(full=True)


@pytest.mark.parametrize("mops", [
    [["send", "k", [2**63, "v"]]],  # an offset beyond int64
    [["poll", {"k": [[2**64, "v"]]}]],
    [["send", "k", [1, "\ud800"]]],  # a lone surrogate: not UTF-8
])
def test_kernel_table_fails_as_pyarrow_fails(mops: list) -> None:
    rows = Rows("h")
    for n, t in enumerate(("invoke", "ok")):
        rows.line.append(n + 1)
        rows.index.append(n)
        rows.process.append("0")
        rows.type.append(t)
        rows.f.append("txn")
        rows.key.append(None)
        rows.value.append(None)
        rows.time.append(None)
        rows.parsed.append(mops)
    fast = _table_or_error(rows, rows_native)
    slow = _table_or_error(rows, rows_reference)
    assert isinstance(fast, type) and fast is slow


def _scan_both(text: str) -> tuple[Any, Any]:
    start = len(text) - len(text.lstrip("\n"))
    end = text.find("\n", start)
    try:
        keys = tuple(json.loads(text[start: end if end >= 0 else len(text)]))
    except (ValueError, TypeError):
        return None, None
    if not set(keys) <= uniform.FIELD.keys() or "type" not in keys or "process" not in keys:
        return None, None
    if "value" in keys and keys[-1] != "value":
        return None, None
    fast = KERNEL.scan_uniform(text, keys, tuple(uniform.KIND[k] for k in keys), 7)
    slow = uniform.columns(text, keys, 7)
    if slow is not None:
        n, linenos, col = slow
        slow = (list(linenos), *[_typed(list(col[k])) for k in keys])
    if fast is not None:
        fast = (fast[0], *[_typed(c) for c in fast[1:]])
    return fast, slow


_GOOD = {"index": st.integers(0, 10**17).map(str), "time": st.integers(-(10**17), 10**17).map(str),
         "type": st.sampled_from(['"invoke"', '"ok"', '"fail"', '"info"']),
         "process": st.sampled_from(["0", "3", "-2", '"p1"', '"nemesis"', '""']),
         "f": st.sampled_from(['"send"', '"poll"', '"txn"', "null", "3"]), "key": st.sampled_from(['"k1"', "null", "12"]),
         "value": st.sampled_from(["[1]", '[["send",1,[0,5]]]', "{}", "null", '"v"', "7", "[[1,2],[3]]"])}
_ODD = st.sampled_from(["01", "-0", "1.5", "1e3", "+1", "1234567890123456789", '"a\\"', '"a\tb"', '"\x01"', "nul",
                        "NULL", "true", '"ok', "ok", "", " 1", "1 ", '"invoke" ', "[1", "}", "{", '"ok","x":1', "\r"])


@st.composite
def ascii_uniform_text(draw: Any) -> str:
    keys = draw(st.permutations(["index", "time", "type", "process", "f", "key"]))
    keys = [k for k in keys if k in ("type", "process") or draw(st.booleans())]
    if draw(st.booleans()):
        keys.append("value")
    lines = []
    for _ in range(draw(st.integers(1, 6))):
        fields = []
        for k in keys:
            t = draw(_ODD) if draw(st.integers(0, 14)) == 0 else draw(_GOOD[k])
            fields.append(f'"{k}":{t}')
        line = "{" + ",".join(fields) + "}"
        if draw(st.integers(0, 19)) == 0:
            line = draw(st.sampled_from([line + " ", line + "\r", " " + line, line[:-1], line + "}", ""]))
        lines.append(line)
    return "\n" * draw(st.integers(0, 1)) + "\n".join(lines) + "\n" * draw(st.integers(0, 2))


@examples.PURE(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ascii_uniform_text())
def test_scan_uniform_takes_the_lines_the_expression_takes(text: str) -> None:
    """The C scan of the uniform NDJSON subset against the regular expression it replaces, on
    files of one key order with an odd field text or line now and then."""
    fast, slow = _scan_both(text)
    assert fast == slow


@examples.MODEL(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(uniform_file())
def test_scan_uniform_on_the_reader_tests_files(data: bytes) -> None:
    """tests/spark_validation/test_oprows.py's hostile uniform files: the same answer as the expression
    (text that is not ASCII is left to the expression)."""
    text = data.decode()
    if not text.isascii():
        assert KERNEL.scan_uniform(text, ("type", "process"), (1, 2), 1) is None
        return
    fast, slow = _scan_both(text)
    assert fast == slow


@pytest.mark.parametrize("text", [
    '{"type":"ok","process":1}\n', '{"type":"ok","process":1}', '{"type":"ok","process":1}\n\n\n',
    '\n{"type":"ok","process":1}\n\n{"type":"ok","process":"a"}\n', '{"type":"ok","process":01}\n',
    '{"type":"ok","process":-0}\n', '{"type":"ok","process":-1}\n', '{"type":"oki","process":1}\n',
    '{"type":"ok","process":1}\r\n', '{"type":"ok","process":1} \n', ' \n{"type":"ok","process":1}\n',
    '{"type":"ok","process":1234567890123456789}\n', '{"type":"ok","process":123456789012345678}\n',
    '{"type":"ok","process":"a\\"b"}\n', '{"type":"ok","process":"a\tb"}\n', '{"type":"ok","process":null}\n',
    '{"type":"ok","process":1,"f":null,"key":"k","value":[1,{"a":"}"}]}\n', '{"type":"ok","process":1,"value":}\n',
    '{"type":"ok","process":1,"value":1}}\n', '{"type":"ok","process":1,"value":\n',
    '{"index":0,"type":"ok","process":1,"time":-5}\n', '{"index":00,"type":"ok","process":1}\n',
])
def test_scan_uniform_edge_lines(text: str) -> None:
    fast, slow = _scan_both(text)
    assert fast == slow


texts_st = st.lists(st.one_of(
    st.sampled_from(["1", "1.5", "1e3", "2E", "e1", "[1]", "[[2]]", '"a]"', '"[["', "{}", '{"a":[1,{"b":{}}]}', "[1.0]",
                     "0.", '"x.5"', '"5e"', "[" * 49 + "]" * 49, "[" * 50 + "]" * 50, "{" * 30 + "}" * 30, "[}", "]["]),
    value.map(lambda v: json.dumps(v, separators=(",", ":")))), max_size=6)


@examples.PURE(deadline=None)
@given(texts_st, st.sampled_from([2, 5, 100, 101]))
def test_value_checks_compiled_equals_python(texts: list, max_depth: int) -> None:
    joined = "[" + ",".join(texts) + "]"
    got = KERNEL.value_checks(texts, max_depth)
    assert got == (uniform.FLOAT_MARK.search(joined) is not None, uniform.too_deep(joined, max_depth))


def test_value_checks_leave_other_text_to_python() -> None:
    assert KERNEL.value_checks(["1", '"é"'], 100) is None


def _plain(text: str, max_depth: int = 100) -> bool:
    return KERNEL.plain_values([text], max_depth)


plain_leaf = st.one_of(st.none(), st.booleans(), st.integers(-(10**18) + 1, 10**18 - 1),
                       st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E, blacklist_characters='"\\'),
                               max_size=5))
plain_value = st.recursive(plain_leaf, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.text("abk0", max_size=2), inner, max_size=4)), max_leaves=15)


@examples.PURE(deadline=None)
@given(st.one_of(st.lists(plain_value, max_size=4), st.dictionaries(st.text("ab", max_size=2), plain_value, max_size=3)))
def test_plain_values_take_what_orjson_prints(v: Any) -> None:
    """Every array or object of plain values, as orjson prints it, is plain (and so left as text
    by the reader), and reads back as the value (the texts that are not plain: below)."""
    import orjson

    text = orjson.dumps(v).decode()
    assert _plain(text)
    assert oprows.fast_parse_text(text) == v


@pytest.mark.parametrize("text", [
    "[1, 2]", " [1]", "[1] ", '["a\\"b"]', '["a\\n"]', '["\\u0041"]', "[1.5]", "[1e3]", "[1E3]", "[-0]", "[01]",
    "[1234567890123456789]", '{"a":1,"a":2}', '{"a":1,"b":{"a":1},"a":3}', '["é"]', '["\t"]', "[tru]", "[nul]",
    "[1,]", "[,1]", "[1 2]", "[1][2]", '{"a"}', '{"a":}', "{1:2}", "[", "]", "", "1", '"a"', "null", "[1]]",
    "[" * 100 + "]" * 100, "[--1]", "[-]", "[+1]", "[0x1]",
])
def test_plain_values_refuse(text: str) -> None:
    """Texts the reader must decode: whitespace, an escape, a float, a repeated key, "-0", a
    leading zero, a 19-digit integer, not ASCII, not one value, too deep."""
    assert not _plain(text)


def test_plain_values_depth_counts_the_line() -> None:
    text = "[" * 99 + "]" * 99  # 99 deep in a line's object: 100, the readers' limit
    assert _plain(text, 100) and not _plain(text, 99)
    assert _plain('[{"a":[1]}]', 4) and not _plain('[{"a":[1]}]', 3)
    keys = "{" + ",".join(f'"k{i}":{i}' for i in range(33)) + "}"  # more keys than the walker compares
    assert not _plain(keys) and _plain(keys.replace(',"k32":32', ""))


def test_the_reader_leaves_plain_values_as_text(tmp_path: Path) -> None:
    """The uniform NDJSON reader decodes no plain value (kernel_arrays walks them from the text),
    and the kernel rows are the Python loop's (which decodes each)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
    try:
        from audit_speed import kafka_ops
    finally:
        sys.path.pop(0)
    p = tmp_path / "h.ndjson"
    p.write_text("".join(json.dumps(o, separators=(",", ":")) + "\n" for o in kafka_ops(2000, random.Random(8), "skip")))
    rows = oprows.read_rows(str(p))[0]
    assert all(x is oprows._UNPARSED for x in rows.parsed) and len(rows.parsed) == len(rows) == 2000
    with pytest.MonkeyPatch.context() as mp:
        assert _assert_same(rows) > 2000
        fast = rows_native.kernel_table(rows)
        mp.setattr(oprows, "UNIFORM", uniform)
        slow_rows = oprows.read_rows(str(p))[0]
        assert any(type(x) is list for x in slow_rows.parsed)  # the Python reader decodes them
        assert fast.equals(rows_reference.kernel_table(slow_rows))


plain_micro = st.one_of(
    st.tuples(st.sampled_from(["send", "poll", 1, None, True]), plain_value, plain_value).map(list),
    st.tuples(st.just("send"), plain_leaf, st.tuples(plain_leaf, plain_leaf).map(list)).map(list),
    st.tuples(st.just("poll"), st.dictionaries(st.sampled_from(["k0", "1", ""]), st.lists(
        st.one_of(st.tuples(plain_leaf, plain_leaf).map(list), plain_value), max_size=3), max_size=3)).map(list),
    plain_value)
plain_row_value = st.one_of(st.lists(plain_micro, max_size=4), st.tuples(plain_leaf, plain_leaf).map(list),
                            st.lists(st.one_of(st.tuples(plain_leaf, plain_leaf).map(list), plain_value), max_size=3),
                            plain_value)


@examples.PURE(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.sampled_from(["send", "poll", "txn"]), st.sampled_from([None, "k0"]), plain_row_value),
                max_size=8))
def test_values_walked_from_their_text(ops: list) -> None:
    """Plain values walked from their text give the rows their decoded form gives, through the
    compiled loop and the Python one, as lists and as the Arrow table."""
    import orjson

    rows = Rows("h")
    for n, (f, k, v) in enumerate(ops):
        rows.line.append(n + 1)
        rows.index.append(n)
        rows.process.append("0")
        rows.type.append("ok")
        rows.f.append(f)
        rows.key.append(k)
        rows.value.append(orjson.dumps(v).decode())
        rows.time.append(None)
        rows.parsed.append(oprows._UNPARSED)
    _assert_same(rows)
    from_text = _table_or_error(rows, rows_native)
    rows.parsed = [oprows.fast_parse_text(t) for t in rows.value]
    assert from_text == _table_or_error(rows, rows_native)
    _assert_same(rows)


@examples.PURE(deadline=None)
@given(st.lists(st.one_of(st.none(), st.sampled_from(["ok", "invoke", "", "é", "k1", "nemesis"]),
                          st.text(max_size=3)), max_size=40), st.integers(0, 5), st.booleans())
def test_small_codes_are_dictionary_encode_codes(xs: list, cut: int, chunked: bool) -> None:
    """The compiled codes of a string column with a few distinct strings are pyarrow's
    dictionary_encode codes (slices and nulls included); with more strings it declines."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    col = pa.array(xs, pa.string())[cut:]
    if chunked:
        col = pa.chunked_array([col[:len(col) // 2], col[len(col) // 2:]], pa.string()).combine_chunks()
    d = pc.dictionary_encode(col)
    want = (d.indices.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64).tolist(), d.dictionary.to_pylist())
    got = rows_native.small_codes(col)
    if len(want[1]) > 16:
        assert got is None
    else:
        assert got is not None and (got[0].tolist(), got[1]) == want
    from spark_validation.checks.elle import graph as elle

    assert (elle._codes(col)[0].tolist(), elle._codes(col)[1]) == want
    k = rows_native.string_codes(col)
    assert (k[0].tolist(), k[1].to_pylist()) == want


def test_small_codes_decline_other_types() -> None:
    import pyarrow as pa

    assert rows_native.small_codes(pa.array(["a"], pa.large_string())) is None
    assert rows_native.small_codes(pa.array([1, 2])) is None
    assert rows_native.small_codes(pa.nulls(3, pa.string()))[0].tolist() == [-1, -1, -1]


@pytest.mark.parametrize("xs", [
    ["h0"] * 5, [""] * 3, ["x"], ["ab", "ab", "ab", "ba"], ["ab", "ab", "abab"], ["ab", "ab", ""], ["a", "a", None],
    ["é/h", "é/h"], ["abc", "abc", "abd"], ["aa", "aa", "a", "a"],
])
def test_small_codes_of_one_repeated_string(xs: list) -> None:
    """A column of one repeated string is told by one comparison of its data; what only looks
    like one (same lengths, a different last row, a null) is coded row by row."""
    import pyarrow as pa
    import pyarrow.compute as pc

    for col in (pa.array(xs, pa.string()), pa.array(["z", *xs], pa.string())[1:]):
        d = pc.dictionary_encode(col)
        got = rows_native.small_codes(col)
        assert (got[0].tolist(), got[1]) == (d.indices.fill_null(-1).to_pylist(), d.dictionary.to_pylist())


@pytest.mark.parametrize("pair", ["rows", "uniform"])
def test_native_modules_export_the_references_functions(pair: str) -> None:
    """Each native module is a drop-in for its reference: the same names, each with the same
    signature."""
    import inspect

    native, ref = (rows_native, rows_reference) if pair == "rows" else (uniform_native, uniform)
    assert native.__all__ == ref.__all__
    for name in ref.__all__:
        assert inspect.signature(getattr(native, name)) == inspect.signature(getattr(ref, name)), name


@pytest.mark.parametrize("setting, native", [("", True), ("off", False)])
def test_rows_picks_once_at_import(monkeypatch: pytest.MonkeyPatch, setting: str, native: bool) -> None:
    import importlib

    from spark_validation.checks.kafka import rows

    monkeypatch.setenv("KRAFT_COMPILED", setting)
    try:
        importlib.reload(rows)
        want = rows_native if native else rows_reference
        assert rows.IMPLEMENTATION is want
        assert all(getattr(rows, name) is getattr(want, name) for name in rows.__all__)
    finally:
        monkeypatch.delenv("KRAFT_COMPILED")
        importlib.reload(rows)


@pytest.mark.parametrize("setting, picked", [("", "uniform_native"), ("off", "uniform")])
def test_row_readers_pick_once_at_import(setting: str, picked: str) -> None:
    """The readers' uniform loops are picked when ingest.rows is imported (in a fresh process:
    reloading it would make a second Rows class)."""
    import os
    import subprocess

    code = "from spark_validation.ingest import rows; print(rows.UNIFORM.__name__)"
    env = {**os.environ, "KRAFT_COMPILED": setting}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == f"spark_validation.ingest.{picked}"
