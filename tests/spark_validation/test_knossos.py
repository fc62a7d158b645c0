"""Knossos's model semantics (knossos.model, src/knossos/model.clj) and the EDN forms Jepsen and
Knossos write.

* ``Register``/``CASRegister``/``MultiRegister``: an ``ok`` read whose value is ``nil`` is a read of
  an unknown value and matches every state ("We don't know what the read was"). The default for
  EDN histories; ``nil_reads="strict"`` (``--nil-reads strict``) makes ``nil`` a value.
* ``multi-register``: ``:txn`` ops of ``[f k v]`` micro-ops over a map of registers.
* EDN top-level forms: a vector, a list, one map per line, ``#jepsen.history.Op{...}`` records.

The differential tests compare the checker with ``brute.py`` (an exhaustive search sharing no
code with the checker) on random histories that include nil reads.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given
from hypothesis import strategies as st

from spark_validation.ingest.history import Op, read_history
from spark_validation.linearizability import check_history, main as lin_main
from tests.spark_validation.brute import (
    INF,
    BOp,
    knossos_register_spec,
    linearizable,
    multi_register_spec,
    register_spec,
)
from tests import examples
from tests.spark_validation.test_differential import histories

FIX = Path(__file__).parent / "fixtures"


def _assert_both_verdicts(verdicts: list[bool]) -> None:
    """The comparison means something only if the generator yields both verdicts, in some number:
    one in forty examples each (5 of 200)."""
    need = max(1, examples.MODEL.count // 40)
    assert verdicts.count(True) >= need and verdicts.count(False) >= need, (verdicts.count(True), verdicts.count(False))


def _ops(rows: list[tuple]) -> list[Op]:
    return [Op(i, p, t, f, None, v) for i, (p, t, f, v) in enumerate(rows)]


# a read of nil after a completed write of 1, initial value 0 (the example)
NIL_READ = [(0, "invoke", "write", 1), (0, "ok", "write", 1), (1, "invoke", "read", None), (1, "ok", "read", None)]


@pytest.mark.parametrize("model", ["register", "cas-register"])
def test_nil_read_is_unknown_under_knossos_and_a_value_when_strict(model: str) -> None:
    ops = _ops(NIL_READ)
    k = check_history(ops, model, initial=0, nil_reads="knossos")
    assert k.valid is True and k.info.nil_reads == "knossos"
    s = check_history(ops, model, initial=0, nil_reads="strict")
    assert s.valid is False
    assert "None, which no write or cas ever wrote" in s.anomalies[0].to_json()["evidence"]["explanation"]
    # strict: nil is a real value, so a register that starts at nil may be read as nil
    assert check_history(_ops(NIL_READ[2:]), model, initial=None, nil_reads="strict").valid is True
    # knossos: a non-nil stale read is still caught
    stale = NIL_READ[:2] + [(1, "invoke", "read", None), (1, "ok", "read", 0)]
    assert check_history(_ops(stale), model, initial=0, nil_reads="knossos").valid is False


def test_kv_independent_nil_read_is_unknown() -> None:
    rows = [(0, "invoke", "write", ("x", 1)), (0, "ok", "write", ("x", 1)),
            (1, "invoke", "read", ("x", None)), (1, "ok", "read", ("x", None))]
    assert check_history(_ops(rows), "kv", initial=0, nil_reads="knossos").valid is True
    assert check_history(_ops(rows), "kv", initial=0, nil_reads="strict").valid is False


def test_auto_is_knossos_for_edn_and_strict_otherwise(tmp_path: Path) -> None:
    h = read_history(FIX / "reg_nil_read_knossos.edn")
    assert h.initial == 0 and len(h.ops) == 6  # a top-level list, read whole
    r = check_history(h)
    assert r.valid is True and r.info.nil_reads == "knossos"
    assert check_history(h, nil_reads="strict").valid is False
    # the same events as NDJSON: strict by default
    nd = tmp_path / "h.ndjson"
    nd.write_text('{"v": 1, "kind": "history", "model": "register", "initial": 0}\n'
                  + "\n".join(__import__("json").dumps(o.to_dict()) for o in h.ops) + "\n")
    r2 = check_history(read_history(nd))
    assert r2.valid is False and r2.info.nil_reads == "strict"
    assert check_history(read_history(nd), nil_reads="knossos").valid is True


def test_command_lines_take_nil_reads(tmp_path: Path, capsys: Any) -> None:
    f = str(FIX / "reg_nil_read_knossos.edn")
    assert lin_main([f]) == 0
    assert lin_main([f, "--nil-reads", "strict"]) == 1
    from spark_validation.cli import audit

    runner = CliRunner()
    ok = runner.invoke(audit, [f, "--no-spark", "--out", str(tmp_path / "a")])
    assert ok.exit_code == 0, ok.output
    bad = runner.invoke(audit, [f, "--no-spark", "--nil-reads", "strict", "--out", str(tmp_path / "b")])
    assert bad.exit_code == 1, bad.output
    assert "nonlinearizable" in bad.output
    usage = runner.invoke(audit, [f, "--no-spark", "--nil-reads", "maybe", "--out", str(tmp_path / "c")])
    assert usage.exit_code == 2


# -- multi-register -------------------------------------------------------------------------


def test_multi_register_fixture_and_a_stale_read() -> None:
    h = read_history(FIX / "multi_register_valid.edn")
    assert check_history(h).valid is True
    # strict: txn 1 read x absent but y=2, which txn 0 wrote together with x=1: a torn read
    assert check_history(h, nil_reads="strict").valid is False
    W = ("txn", (("write", "x", 1), ("write", "y", 2)))
    stale = _ops([(0, "invoke", *W), (0, "ok", *W),
                  (1, "invoke", "txn", (("read", "x", None), ("read", "y", None))),
                  (1, "ok", "txn", (("read", "x", 1), ("read", "y", None)))])
    # y read as nil after x=1,y=2 committed together: Knossos accepts it (unknown read),
    # strict does not (a torn read: x new, y absent)
    assert check_history(stale, "multi-register", nil_reads="knossos").valid is True
    r = check_history(stale, "multi-register", nil_reads="strict")
    assert r.valid is False and r.anomalies[0].to_json()["evidence"]["stuck_op"]["index"] == 2
    # with an initial map (knossos.model/multi-register {:y 0}), reading y=0 after y=2 is stale
    stale0 = _ops([(0, "invoke", *W), (0, "ok", *W),
                   (1, "invoke", "txn", (("read", "y", None),)), (1, "ok", "txn", (("read", "y", 0),))])
    assert check_history(stale0, "multi-register", initial={"y": 0}).valid is False
    assert check_history(stale0[2:], "multi-register", initial={"y": 0}).valid is True


def test_multi_register_rejects_bad_txns() -> None:
    bad = _ops([(0, "invoke", "txn", (("inc", "x", 1),)), (0, "ok", "txn", (("inc", "x", 1),))])
    r = check_history(bad, "multi-register")
    assert r.valid == "unknown" and "read/write" in r.info.error
    mismatch = _ops([(0, "invoke", "txn", (("write", "x", 1),)), (0, "ok", "txn", (("write", "x", 2),))])
    assert "does not match" in check_history(mismatch, "multi-register").info.error


# -- EDN top-level forms -------------------------------------------------------------------------

OPS_EDN = ["{:type :invoke, :f :write, :value 1, :process 0}", "{:type :ok, :f :write, :value 1, :process 0}",
           "{:type :invoke, :f :read, :value nil, :process 1}", "{:type :ok, :f :read, :value 2, :process 1}"]


@pytest.mark.parametrize("form", ["vector", "list", "lines", "records-in-list", "records-per-line"])
def test_every_edn_top_level_form(tmp_path: Path, form: str) -> None:
    ops = OPS_EDN
    if form.startswith("records"):
        ops = ["#jepsen.history.Op" + o for o in ops]
    text = {"vector": "[" + "\n ".join(ops) + "]", "list": "(" + "\n ".join(ops) + ")",
            "lines": "\n".join(ops), "records-in-list": "(" + "\n".join(ops) + ")",
            "records-per-line": "\n".join(ops)}[form]
    p = tmp_path / "h.edn"
    p.write_text(text + "\n")
    h = read_history(p, default_model="register")
    assert not h.malformed and [o.type for o in h.ops] == ["invoke", "ok", "invoke", "ok"]
    assert check_history(h).valid is False  # read 2, never written: the file really was read


def test_unclosed_list_is_named() -> None:
    import tempfile

    with tempfile.NamedTemporaryFile("w", suffix=".edn", delete=False) as f:
        f.write("(" + "\n".join(OPS_EDN) + "\n")
    h = read_history(f.name, default_model="register")
    assert len(h.ops) == 4
    assert h.malformed and "history list is not closed with ')'" in h.malformed[-1].reason


# -- differential: checker vs brute force, with nil reads -----------------------------------------


def _nil_reads(draw: Any, data: tuple[list[Op], list[BOp]]) -> tuple[list[Op], list[BOp]]:
    """Turn some ok reads into reads of nil (both in the ops and the oracle's view)."""
    ops, bops = data
    ops, bops = list(ops), list(bops)
    for i, op in enumerate(ops):
        if op.type == "ok" and op.f == "read" and draw(st.integers(0, 2)) == 0:
            ops[i] = Op(op.index, op.process, "ok", "read", None, None)
            bops = [BOp(b.inv, b.ret, b.f, b.arg, None, b.known) if b.ret == i else b for b in bops]
    return ops, bops


@pytest.mark.parametrize("model", ["register", "cas-register"])
@pytest.mark.parametrize("mode", ["knossos", "strict"])
def test_register_nil_reads_match_brute_force(model: str, mode: str) -> None:
    verdicts: list[bool] = []
    spec = knossos_register_spec if mode == "knossos" else register_spec

    @examples.MODEL(database=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
    @given(st.data())
    def run(data: Any) -> None:
        ops, bops = _nil_reads(data.draw, data.draw(histories(model)))
        expected = linearizable(bops, 0, spec)
        r = check_history(ops, model, initial=0, nil_reads=mode)
        assert r.valid == expected, (ops, r)
        verdicts.append(expected)

    run()
    _assert_both_verdicts(verdicts)


@st.composite
def multi_histories(draw: Any) -> tuple[list[Op], list[BOp]]:
    """Concurrent txns over keys x, y: each takes effect atomically between invoke and complete;
    some reads are then mutated (to a wrong value or to nil), some outcomes are info."""
    nproc, nops = draw(st.integers(2, 3)), draw(st.integers(1, 6))
    state: dict = {}
    active: dict[int, list] = {}
    ops: list[Op] = []
    bops: list[BOp] = []
    started = 0
    while started < nops or active:
        choices = ([p for p in range(nproc) if p not in active] if started < nops else []) + list(active)
        p = draw(st.sampled_from(sorted(set(choices))))
        if p not in active:
            txn = tuple(
                (f, draw(st.sampled_from(("x", "y"))), draw(st.integers(0, 2)) if f == "write" else None)
                for f in draw(st.lists(st.sampled_from(("read", "write")), min_size=1, max_size=3))
            )
            active[p] = [txn, None, len(ops)]
            ops.append(Op(len(ops), p, "invoke", "txn", None, txn))
            started += 1
            continue
        a = active[p]
        if a[1] is None:  # take effect now
            done = []
            for f, k, v in a[0]:
                if f == "write":
                    state[k] = v
                    done.append((f, k, v))
                else:
                    done.append((f, k, state.get(k)))
            a[1] = tuple(done)
            continue
        kind = draw(st.sampled_from(("ok", "ok", "ok", "info")))
        out = a[1]
        if kind == "ok" and draw(st.integers(0, 3)) == 0:
            reads = [i for i, m in enumerate(out) if m[0] == "read"]
            if reads:
                i = draw(st.sampled_from(reads))
                out = out[:i] + (("read", out[i][1], draw(st.sampled_from((None, 0, 1, 2)))),) + out[i + 1:]
        ops.append(Op(len(ops), p, kind, "txn", None, out if kind == "ok" else a[0]))
        if kind == "ok":
            bops.append(BOp(a[2], len(ops) - 1, "txn", out, None, True))
        else:
            bops.append(BOp(a[2], INF, "txn", a[0], None, False))
        del active[p]
    return ops, bops


@pytest.mark.parametrize("mode", ["knossos", "strict"])
def test_multi_register_matches_brute_force(mode: str) -> None:
    verdicts: list[bool] = []

    @examples.MODEL(database=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
    @given(multi_histories())
    def run(data: Any) -> None:
        ops, bops = data
        expected = linearizable(bops, (), lambda s, op: multi_register_spec(s, op, nil_is_unknown=mode == "knossos"))
        r = check_history(ops, "multi-register", nil_reads=mode)
        assert r.valid == expected, (ops, r)
        verdicts.append(expected)

    run()
    _assert_both_verdicts(verdicts)
