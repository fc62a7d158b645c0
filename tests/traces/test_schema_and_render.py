"""Reading traces and rendering values: no TLC needed."""

from __future__ import annotations

import json

import pytest

from traces.check import TraceResult, prepare
from traces.schema import parse_trace
from traces.tla import INT, STR, Fun, Nullable, Rec, RenderError, Seq, Set, parse_printed

HDR = {"v": 1, "kind": "trace", "protocol": "relay", "spec": "Relay", "constants": {"Nodes": [1, 2]},
       "seed": 1, "variant": None}


def _lines(*objs: object) -> bytes:
    return "".join(json.dumps(o) + "\n" for o in objs).encode()


def step(i: int, action: str, node: object = 1, spec: bool = True, **kw: object) -> dict:
    return {"i": i, "action": action, "node": node, "spec": spec, "args": kw.pop("args", {}),
            "state": kw.pop("state", {})}


def test_malformed_json_names_line_and_column():
    data = _lines(HDR, step(1, "Save")) + b'{"i": 2, "action": "Save",, }\n' + _lines(step(3, "Save"))
    tr = parse_trace(data, "t.ndjson")
    assert tr.problem is not None and tr.problem.kind == "malformed_json"
    assert tr.problem.line == 3
    assert tr.problem.message.startswith("t.ndjson:3:27: malformed JSON")
    assert len(tr.events) == 1  # the good prefix is kept


def test_truncated_last_line():
    data = _lines(HDR, step(1, "Save")) + b'{"i": 2, "action": "Sa'
    tr = parse_trace(data, "t.ndjson")
    assert tr.problem.kind == "truncated" and tr.problem.line == 3
    assert "no final newline" in tr.problem.message


def test_header_problems():
    assert parse_trace(b"", "e").problem.kind == "empty"
    assert parse_trace(_lines({"v": 1, "kind": "history"}), "h").problem.kind == "bad_header"
    assert "unsupported trace version" in parse_trace(_lines({**HDR, "v": 9}), "x").problem.message
    assert "'protocol'" in parse_trace(_lines({**HDR, "protocol": None}), "x").problem.message
    assert parse_trace(b"[1, 2]\n", "x").problem.message == "x:1: the header must be a JSON object"


def test_bad_steps():
    tr = parse_trace(_lines(HDR, {"i": 1, "node": 1}), "x")
    assert tr.problem.kind == "bad_step" and tr.problem.line == 2 and "'action'" in tr.problem.message
    tr = parse_trace(_lines(HDR, {**step(1, "Save"), "spec": "yes"}), "x")
    assert "'spec' must be true or false" in tr.problem.message
    tr = parse_trace(_lines(HDR, {**step(1, "Save"), "state": [1]}), "x")
    assert "'state' must be an object" in tr.problem.message


def test_index_gap_and_blank_line_warn():
    data = _lines(HDR, step(1, "Save")) + b"\n" + _lines(step(3, "Save"))
    tr = parse_trace(data, "x")
    assert tr.problem is None and len(tr.events) == 2
    assert tr.warnings == ("x:3: blank line ignored", "x:4: step index jumps from 1 to 3")


def test_non_spec_steps_are_counted_not_dropped():
    tr = parse_trace(_lines(HDR, step(1, "Tick", spec=False), step(2, "Save"), step(3, "Down", spec=False)), "x")
    assert tr.skipped == 2 and len(tr.spec_events) == 1 and len(tr.events) == 3


def test_render_types():
    assert Fun(INT, INT).render({"1": 3, "2": 0, "3": 1}, "w") == "<<3, 0, 1>>"  # domain 1..n
    assert Fun(INT, INT).render({"2": 3, "5": 0}, "w") == "(2 :> 3 @@ 5 :> 0)"
    assert Fun(INT, INT).render({}, "w") == "<<>>"
    assert Set(INT).render([3, 1, 3], "w") == "{1, 3}"
    assert Seq(STR).render(['a"b', "c\\d"], "w") == '<<"a\\"b", "c\\\\d">>'
    assert Rec({"x": INT}).render({"x": -2}, "w") == "[x |-> (-2)]"
    assert Nullable(INT).render(None, "w") == "Nil"
    with pytest.raises(RenderError, match=r"w\.y: unexpected|unexpected field"):
        Rec({"x": INT}).render({"x": 1, "y": 2}, "w")
    with pytest.raises(RenderError, match="w.x: expected an integer"):
        Rec({"x": INT}).render({"x": "1"}, "w")
    with pytest.raises(RenderError, match="key 'a' is not an integer"):
        Fun(INT, INT).render({"a": 1}, "w")


def test_parse_printed_reads_what_tlc_prints():
    text = '<< "TRDIAG",\n   "val",\n   FALSE,\n   "<<4, 4, 1>>", -3, "a\\"b" >>'
    v, end = parse_printed(text)
    assert v == ("TRDIAG", "val", False, "<<4, 4, 1>>", -3, 'a"b') and end == len(text)


def test_prepare_composes_and_compresses(glue, relay):
    recs = list(relay.simulate(3, 80))
    data = "".join(json.dumps(r) + "\n" for r in recs).encode()
    p = prepare(parse_trace(data, "x"), glue)
    assert not isinstance(p, TraceResult)
    composed = [m for m in p.micros if m.parts == 2]
    assert composed and all(m.check is None for m in composed if m.part == 1)
    assert all(m.check is not None and set(m.check) == {"val", "saved", "net"} for m in composed if m.part == 2)
    # a step that changes one variable carries only that one; the others are "unchanged"
    saves = [m for m in p.micros if m.op == "Save" and m.check is not None and m is not p.micros[0]]
    assert any(set(m.check) <= {"saved"} and "val" in m.unchanged for m in saves)
    assert len(p.events) == len(parse_trace(data, "x").spec_events)


def test_prepare_unknown_action_stops_the_prefix(glue):
    data = _lines(HDR, step(1, "Save", state={"val": {"1": 0, "2": 0}}), step(2, "Teleport"), step(3, "Save"))
    p = prepare(parse_trace(data, "x"), glue)
    assert p.stop.kind == "unknown_action" and p.stop.line == 3 and len(p.micros) == 1
    assert "x:3: unknown action 'Teleport'" in p.stop.message


def test_prepare_unknown_variable_and_bad_args(glue):
    p = prepare(parse_trace(_lines(HDR, step(1, "Save", state={"vall": {}})), "x"), glue)
    assert p.stop.kind == "bad_step" and "'vall' is not a variable of spec Relay" in p.stop.message
    p = prepare(parse_trace(_lines(HDR, step(1, "Send")), "x"), glue)
    assert p.stop.kind == "bad_step" and "needs args.dst" in p.stop.message


def test_prepare_without_glue():
    p = prepare(parse_trace(_lines({**HDR, "protocol": "nope"}), "x"))
    assert isinstance(p, TraceResult) and p.verdict == "error" and p.kind == "no_glue"


def test_each_message_is_stated_once_in_the_module():
    """A message is sent, handled (a parameter) and removed from the network: the module states it
    once, as a definition the records name (traces.tla.Named)."""
    from pathlib import Path

    from traces.generate import render_module
    from traces.protocols.kraft import MESSAGE
    from traces.schema import read_trace

    path = Path(__file__).parent / "fixtures" / "kraft_fetch_resent_while_outstanding.ndjson"
    p = prepare(read_trace(path))
    assert not isinstance(p, TraceResult) and p.names
    text = render_module(p.glue, "M", [p.micros], [p.init], "single", names=p.names)
    handled = [ev.args["m"] for ev in p.events if "m" in ev.args]
    assert len(handled) > 10
    for m in handled:
        assert text.count(MESSAGE.inner.render(m, "m")) == 1, m
    assert all(text.count(f"{name} == ") == 1 for name in p.names)


def test_long_module_lines_are_wrapped_between_items():
    """TLC's PlusCal check costs the square of a line's length, so data lines are broken after
    list separators: never inside a string, and joining the pieces gives the line back."""
    from traces.generate import wrap

    line = "[a |-> \"x, y\", p |-> <<" + ", ".join(str(i) for i in range(400)) + ">>]"
    parts = wrap(line, 100)
    assert len(parts) > 10 and all(len(x) <= 102 for x in parts)
    assert parts[0].startswith('[a |-> "x, y", ') and all(x.startswith("  ") for x in parts[1:])
    assert " ".join([parts[0]] + [x[2:] for x in parts[1:]]) == line
    assert wrap("<<1, 2>>", 100) == ["<<1, 2>>"]


def test_wrapped_model_value_declarations_are_all_read(glue):
    from traces.generate import Micro, declared_model_values, render_module

    values = ", ".join(f"TrMV_v{i}" for i in range(300))
    m = Micro("Send", ("1", f"<<{values}>>"), None, (), 2, 1, 1)
    text = render_module(glue, "M", [[m]], [{}], "single")
    assert max(len(x) for x in text.splitlines()) < 500
    assert declared_model_values(text) == sorted(f"TrMV_v{i}" for i in range(300))


def test_sequence_deltas_name_what_changed():
    """A log truncated at its front (after a snapshot) is written as the number of records
    dropped, not in full; a sequence that changed otherwise from its start is written in full."""
    from traces.tla import render_delta

    log = Seq(INT)
    assert render_delta(log, [1, 2, 3, 4], [3, 4], "w") == '<<"drop", 2>>'
    assert render_delta(log, [1, 2, 3, 4], [1, 2, 3, 4, 5], "w") == '<<"app", <<5>>>>'
    assert render_delta(log, [1, 2, 3, 4], [1, 2], "w") == '<<"cut", 2>>'
    assert render_delta(log, [1, 2, 3, 4], [9, 3, 4], "w") == '<<"set", <<9, 3, 4>>>>'
    assert render_delta(log, [1, 2, 3, 4], [4, 5], "w") == '<<"set", <<4, 5>>>>'
