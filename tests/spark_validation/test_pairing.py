"""Jepsen's pairing rule (spark_validation/ingest/pairing.py) against the rule stated per process,
and the places that pair through it: the history reader's structure errors, the row reader's first
problem and the Spark path's per-history function (run here on an Arrow table, as the executors
run it)."""

from __future__ import annotations

import random
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from spark_validation.ingest.history import Op, pair_ops
from spark_validation.ingest import pairing
from spark_validation.ingest.pairing import F_MISMATCH, REINVOKED, UNOPENED, pair, pair_reference
from spark_validation.ingest.records import OpRow
from spark_validation.ingest.rows import Rows, structure_problem
from spark_validation.ingest.spark import first_problem
from tests import examples

events = st.lists(st.tuples(st.sampled_from([0, 1, 2, "c1", "nemesis"]), st.sampled_from(["invoke", "ok", "fail", "info"]),
                            st.sampled_from(["r", "w"])), max_size=16)


def per_process(evs: list[tuple[Any, str, Any]]) -> tuple[dict[int, int], dict[int, str], int]:
    """The rule read process by process: each client process's own events must read invoke,
    completion, invoke, ..., each completion with its invocation's f. (invocation -> completion
    or -1, position -> problem, nemesis events)."""
    mine: dict[Any, list[tuple[int, str, Any]]] = {}
    nemesis = 0
    for pos, (p, t, f) in enumerate(evs):
        if p == "nemesis":
            nemesis += 1
        else:
            mine.setdefault(p, []).append((pos, t, f))
    pairs: dict[int, int] = {}
    problems: dict[int, str] = {}
    for own in mine.values():
        open_: tuple[int, Any] | None = None
        for pos, t, f in own:
            if t == "invoke":
                if open_ is not None:
                    problems[pos] = REINVOKED
                open_ = (pos, f)
                pairs[pos] = -1
            elif open_ is None:
                problems[pos] = UNOPENED
            else:
                if open_[1] != f:
                    problems[pos] = F_MISMATCH
                pairs[open_[0]] = pos
                open_ = None
    return pairs, problems, nemesis


@examples.PURE(deadline=None)
@given(events)
def test_pair_is_the_rule_per_process(evs: list) -> None:
    got = pair_reference(evs)
    pairs, problems, nemesis = per_process(evs)
    assert got.invokes == sorted(pairs) and dict(zip(got.invokes, got.completions)) == pairs
    assert [(p.position, p.kind) for p in got.problems] == sorted(problems.items())
    assert got.nemesis == nemesis
    for p in got.problems:  # the invocation a problem names is the process's open one
        if p.kind == UNOPENED:
            assert p.invocation == -1
        else:
            assert evs[got.invokes[p.invocation]][0] == evs[p.position][0]
    first = pair_reference(evs, first_only=True).problems
    assert first == got.problems[:1]


odd_events = st.lists(st.tuples(
    st.sampled_from([0, 1, True, 1.0, None, "1", "nemesis", -5]),
    st.sampled_from(["invoke", "ok", "fail", "info"]),
    st.sampled_from(["r", "w", None, 1, 1.0, float("nan"), ("a", 1)])), max_size=20)


@pytest.mark.skipif(pairing._compiled_pair is None, reason="the compiled loops are not built (setup.py)")
@examples.PURE(deadline=None)
@given(odd_events)
def test_compiled_pairing_equals_the_reference(evs: list) -> None:
    """The compiled loop pairs as the reference does, with Python's equality (True is 1, 1.0 is
    1, NaN differs from itself), fed as the callers feed it (an iterator of tuples, or ops)."""
    ops = [Op(n, p, t, f) for n, (p, t, f) in enumerate(evs)]
    for first_only in (False, True):
        want = pair_reference(iter(evs), first_only=first_only)
        assert pairing._pair_compiled(iter(evs), first_only=first_only) == want
        assert pairing._pair_compiled(ops, first_only=first_only) == want == pair_reference(ops, first_only=first_only)


# small ints first (the compiled loop's table), then a process only the dict can hold: a bool or
# float equal to a small int, an int outside the table, a string
switching_events = st.lists(st.tuples(st.sampled_from([0, 1, 2, 65535]), st.sampled_from(["invoke", "ok"]),
                                      st.sampled_from(["r", "w"])), max_size=12).flatmap(
    lambda head: st.lists(st.tuples(st.sampled_from([0, 1, True, 1.0, 65535, 65536, 2**70, -1, "c", "nemesis"]),
                                    st.sampled_from(["invoke", "ok", "info"]), st.sampled_from(["r", "w"])),
                          max_size=12).map(lambda tail: head + tail))


@pytest.mark.skipif(pairing._compiled_pair is None, reason="the compiled loops are not built (setup.py)")
@examples.PURE(deadline=None)
@given(switching_events)
def test_compiled_pairing_keeps_open_ops_across_process_kinds(evs: list) -> None:
    """Invocations left open by small-int processes are found again by an equal process of
    another kind (True is 1, 1.0 is 1) or by the same int after processes of other kinds."""
    ops = [Op(n, p, t, f) for n, (p, t, f) in enumerate(evs)]
    assert pairing._pair_compiled(ops) == pair_reference(ops)
    assert pairing._pair_compiled(iter(evs), first_only=True) == pair_reference(iter(evs), first_only=True)


@examples.PURE(deadline=None)
@given(events)
def test_the_readers_report_the_rule(evs: list) -> None:
    """The history reader's structure errors and the row reader's first problem are the rule's
    problems, at the same places."""
    ops = [Op(n, p, t, f) for n, (p, t, f) in enumerate(evs)]
    operations, errors = pair_ops(ops)
    got = pair(evs)
    assert [e.position for e in errors] == [p.position for p in got.problems]
    assert [(o.invoke_pos, -1 if o.complete_pos is None else o.complete_pos) for o in operations] == \
        list(zip(got.invokes, got.completions))
    rows = Rows("h")
    for n, (p, t, f) in enumerate(evs):
        rows.add_row(OpRow("h", n + 1, n, str(p), t, f))
    assert structure_problem(rows) == ((errors[0].position, errors[0].reason) if errors else None)


@examples.PURE(deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["0", "1", " 1", "01", "nemesis", "c", None]),
                          st.sampled_from(["invoke", "ok", "fail", "info"]), st.sampled_from(["r", "w", None])),
                max_size=14), st.randoms(use_true_random=False))
def test_the_spark_path_finds_the_row_readers_problem(evs: list, rng: random.Random) -> None:
    """``first_problem`` (what each Spark group runs) on the rows of a history in any order, with
    lines that are not positions: the row reader's first problem, at its file line."""
    lines = sorted(rng.sample(range(1, 100), len(evs)))
    rows = Rows("h")
    for line, (p, t, f) in zip(lines, evs):
        rows.add_row(OpRow("h", line, line - 1, p, t, f))
    want = structure_problem(rows)
    order = list(range(len(evs)))
    rng.shuffle(order)
    table = pa.table({"history": ["h"] * len(evs), "line": [rows.line[i] for i in order],
                      "index": [rows.index[i] for i in order], "process": [rows.process[i] for i in order],
                      "type": [rows.type[i] for i in order], "f": [rows.f[i] for i in order]},
                     schema=pa.schema([("history", pa.string()), ("line", pa.int64()), ("index", pa.int64()),
                                       ("process", pa.string()), ("type", pa.string()), ("f", pa.string())]))
    got = first_problem(table).to_pylist()
    assert got == ([] if want is None else [{"history": "h", "line": rows.line[want[0]], "reason": want[1]}])
