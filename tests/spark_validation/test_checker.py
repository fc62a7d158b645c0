"""The checker's interface and limits: budgets, bad input, partitions, model semantics."""

from __future__ import annotations

import json


from spark_validation.ingest.history import Op, pair_ops
from tests.spark_validation.readers import history_from_ops
from spark_validation.linearizability import LinResult, check_history
from spark_validation.checks.linearizable.models import MODELS, UNKNOWN, AppendLogModel, Call, Model


def op(i: int, p: object, t: str, f: str, v: object = None, key: object = None) -> Op:
    return Op(i, p, t, f, key, v)


def seq(*specs: tuple) -> list[Op]:
    """Build a history from (process, type, f, value[, key]) tuples, indexed in order."""
    return [op(i, *s) for i, s in enumerate(specs)]


def explosive(n: int) -> list[Op]:
    """n fully concurrent writes of distinct values, then reads of 0 and then 1: not
    linearizable, and the search must visit about n * 2^(n-1) configurations to say so."""
    ops = [op(i, i, "invoke", "write", i) for i in range(n)]
    ops += [op(n + i, i, "ok", "write", i) for i in range(n)]
    ops += [op(2 * n, n, "invoke", "read"), op(2 * n + 1, n, "ok", "read", 0)]
    ops += [op(2 * n + 2, n, "invoke", "read"), op(2 * n + 3, n, "ok", "read", 1)]
    return ops


def test_time_budget_gives_unknown_with_progress() -> None:
    r = check_history(explosive(20), "register", budget_seconds=0.2)
    assert r.valid == "unknown"
    (u,) = r.info.unknown_partitions
    assert u.reason == "time budget exhausted"
    assert 0 < u.best_prefix <= 22 and u.explored > 1000
    assert r.seconds < 5


def test_cache_cap_gives_unknown() -> None:
    r = check_history(explosive(20), "register", max_cache=5000)
    assert r.valid == "unknown"
    assert "cache limit" in r.info.unknown_partitions[0].reason


def test_small_explosive_history_is_decided() -> None:
    r = check_history(explosive(8), "register")
    assert r.valid is False
    ev = r.anomalies[0].to_json()["evidence"]
    # the deepest the search gets: all 8 writes with 0 last, then the read of 0
    assert ev["prefix_length"] == 9 and ev["stuck_op"]["output"] == 1
    assert ev["state"] == "value=0" and ev["states"] == ["value=0"]
    assert [p["f"] for p in ev["linearized_prefix"]][-2:] == ["write", "read"]


def test_values_nobody_wrote_are_reported_without_search() -> None:
    ops = explosive(30)[:-4] + [op(60, 30, "invoke", "read"), op(61, 30, "ok", "read", 99)]
    r = check_history(ops, "register", budget_seconds=5)
    assert r.valid is False and r.seconds < 1 and r.info.explored == 0
    ev = r.anomalies[0].to_json()["evidence"]
    assert ev["stuck_op"]["index"] == 60
    assert "no write or cas ever wrote" in ev["impossible_ops"][0]["reason"]
    s = seq((0, "invoke", "add", 1), (0, "ok", "add", 1), (1, "invoke", "read"), (1, "ok", "read", (1, 2)))
    assert "no add ever added" in check_history(s, "set").anomalies[0].to_json()["evidence"]["explanation"]
    log = seq((0, "invoke", "send", "a"), (0, "ok", "send", 0), (1, "invoke", "poll"), (1, "ok", "poll", ((0, "b"),)))
    assert "no send ever sent" in check_history(log, "append-log").anomalies[0].to_json()["evidence"]["explanation"]
    # an initial value counts as written
    r0 = seq((0, "invoke", "read"), (0, "ok", "read", 7))
    assert check_history(r0, "register", initial=7).valid is True


def test_bad_input_never_raises() -> None:
    h = seq((0, "invoke", "write", 1), (0, "ok", "write", 1))
    assert "unknown model" in check_history(h, "no-such-model").info.error
    assert "no model" in check_history(h).info.error
    bad = seq((0, "invoke", "frobnicate", 1), (0, "ok", "frobnicate", 1))
    r = check_history(bad, "register")
    assert r.valid == "unknown" and "no operation 'frobnicate'" in r.info.error
    bad_cas = seq((0, "invoke", "cas", 5), (0, "ok", "cas", 5))
    assert "[old new]" in check_history(bad_cas, "cas-register").info.error


def test_every_failing_partition_is_reported() -> None:
    h = seq(
        (0, "invoke", "write", 1, "a"),
        (0, "ok", "write", 1, "a"),
        (1, "invoke", "write", 1, "b"),
        (1, "ok", "write", 1, "b"),
        (0, "invoke", "read", None, "a"),
        (0, "ok", "read", 2, "a"),
        (1, "invoke", "read", None, "b"),
        (1, "ok", "read", 0, "b"),
        (2, "invoke", "read", None, "c"),
        (2, "ok", "read", None, "c"),
    )
    for model in ("register", "kv"):
        r = check_history(h, model)
        assert r.valid is False
        assert [a.key for a in r.anomalies] == ["a", "b"]
        assert r.info.partitions == 3


def test_kv_initial_per_key_and_model_instances() -> None:
    h = seq((0, "invoke", "read", ("x", None)), (0, "ok", "read", ("x", 5)))
    assert check_history(h, "kv").valid is False
    assert check_history(h, "kv", initial={"x": 5}).valid is True
    assert check_history(h, MODELS["kv"], initial=5).valid is True
    operations, _ = pair_ops(h)
    assert check_history(operations, "kv", initial={"x": 5}).valid is True


def test_result_contract_and_json() -> None:
    r = check_history(explosive(3), "register")
    assert isinstance(r, LinResult)
    assert (r.valid, r.ops) == (False, 10)
    d = json.loads(json.dumps(r.to_dict()))
    assert d["anomalies"][0]["kind"] == "nonlinearizable"
    assert set(d["anomalies"][0]["evidence"]) >= {
        "linearized_prefix",
        "prefix_length",
        "state",
        "states",
        "stuck_op",
        "candidates",
        "explanation",
    }


def test_history_initial_and_budget_defaults() -> None:
    h = history_from_ops(seq((0, "invoke", "read"), (0, "ok", "read", 7)), model="register", initial=7)
    assert check_history(h).valid is True
    assert check_history(h, initial=6).valid is False


def test_info_and_pending_reads_constrain_nothing() -> None:
    h = seq(
        (0, "invoke", "read"),
        (0, "info", "read"),
        (1, "invoke", "read"),  # never completes
        (2, "invoke", "read"),
        (2, "fail", "read"),
    )
    r = check_history(h, "register")
    assert r.valid is True and r.info.calls == 0 and r.info.failed_ops_dropped == 1


# --- the Model interface, model by model ------------------------------------------------------


def test_model_interface_register_family() -> None:
    reg, cas = MODELS["register"], MODELS["cas-register"]
    assert isinstance(reg, Model)
    assert reg.step(reg.init(0), ("write", 3), None) == (True, 3)
    assert reg.step(3, ("read", None), 3) == (True, 3)
    assert reg.step(3, ("read", None), 4) == (False, 3)
    assert cas.step(1, ("cas", (1, 2)), None) == (True, 2)
    assert cas.step(1, ("cas", (0, 2)), None)[0] is False
    assert reg.describe(3) == "value=3"


def test_model_interface_set() -> None:
    s = MODELS["set"]
    st = s.init()
    ok, st = s.step(st, ("add", 1), None)
    assert ok and st == frozenset({1})
    assert s.step(st, ("read", None), frozenset({1}))[0]
    assert not s.step(st, ("read", None), frozenset())[0]
    assert s.describe(frozenset({2, 1})) == "{1, 2}"


def test_model_interface_append_log() -> None:
    m = MODELS["append-log"]
    st = m.init()
    ok, st = m.step(st, ("send", "a"), 0)
    assert ok
    ok, st = m.step(st, ("send", "b"), 5)  # gaps allowed
    assert ok and st == ((0, "a"), (5, "b"))
    assert not m.step(st, ("send", "c"), 5)[0]  # offsets strictly increase
    assert m.step(st, ("poll", None), ((0, "a"), (5, "b")))[0]
    assert m.step(st, ("poll", None), ((5, "b"),))[0]
    assert not m.step(st, ("poll", None), ((0, "a"), (6, "b")))[0]
    assert not m.step(st, ("poll", None), ((5, "b"), (6, "c")))[0]  # not (yet) in the log
    assert not m.step(st, ("poll", None), ((5, "b"), (0, "a")))[0]  # not increasing
    assert m.describe(st) == "log=[0:'a' 5:'b']"


def _log_calls(ops: list[Op]) -> list[Call]:
    operations, errors = pair_ops(ops)
    assert not errors
    return AppendLogModel().calls([o for o in operations if o.outcome != "fail"])


def test_append_log_info_send_resolution() -> None:
    ops = seq(
        (0, "invoke", "send", "a"),
        (0, "info", "send", "a"),  # seen by the poll at offset 3: happened, offset 3
        (1, "invoke", "send", "b"),
        (1, "info", "send", "b"),  # never seen: dropped
        (2, "invoke", "send", "c"),
        (2, "ok", "send", -1),  # acks=0 style unknown offset, never seen: dropped
        (2, "invoke", "send", "d"),
        (2, "ok", "send", (None, "d")),  # no offset reported, never seen: dropped
        (3, "invoke", "poll"),
        (3, "ok", "poll", ((3, "a"),)),
        (3, "invoke", "poll"),
        (3, "ok", "poll", ()),  # empty poll: dropped
        (3, "invoke", "subscribe", ("t",)),
        (3, "ok", "subscribe", ("t",)),
    )
    calls = _log_calls(ops)
    assert [(c.input, c.output) for c in calls] == [(("send", "a"), 3), (("poll", None), ((3, "a"),))]
    assert all(c.must for c in calls)
    assert check_history(ops, "append-log").valid is True


def test_append_log_multi_key_poll_is_split() -> None:
    ops = seq(
        (0, "invoke", "send", "a", "t-0"),
        (0, "ok", "send", (0, "a"), "t-0"),
        (1, "invoke", "send", "b", "t-1"),
        (1, "ok", "send", (0, "b"), "t-1"),
        (2, "invoke", "poll"),
        (2, "ok", "poll", {"t-0": ((0, "a"),), "t-1": ((0, "x"),)}),
    )
    r = check_history(ops, "append-log")
    assert r.valid is False
    assert [a.key for a in r.anomalies] == ["t-1"]
    assert r.info.partitions == 2


def test_append_log_bad_shapes_are_errors() -> None:
    r = check_history(seq((0, "invoke", "send", "a"), (0, "ok", "send", "zero")), "append-log")
    assert r.valid == "unknown" and "offset" in r.info.error
    r = check_history(seq((0, "invoke", "poll"), (0, "ok", "poll", ((0,),))), "append-log")
    assert r.valid == "unknown" and "[[offset value]" in r.info.error


def test_unknown_output_marker() -> None:
    ops = seq((0, "invoke", "write", 1), (0, "info", "write", 1))
    operations, _ = pair_ops(ops)
    (c,) = MODELS["register"].calls(operations)
    assert c.output is UNKNOWN and not c.must


# --- the command line ---------------------------------------------------------------------------


def test_command_line_exit_codes_and_output(capsys, tmp_path) -> None:  # type: ignore[no-untyped-def]
    from pathlib import Path

    from spark_validation.linearizability import main

    fx = Path(__file__).parent / "fixtures"
    assert main([str(fx / "reg_valid_concurrent.edn")]) == 0
    assert "linearizable" in capsys.readouterr().out
    assert main([str(fx / "reg_stale_read.edn"), str(fx / "reg_valid_concurrent.edn")]) == 1
    out = capsys.readouterr().out
    assert "NOT linearizable" in out and "stuck on: #2 p1 read() -> 0" in out
    assert main([str(fx / "malformed_unmatched.edn")]) == 2
    assert "no open invocation" in capsys.readouterr().out
    assert main(["--json", str(fx / "set_lost_add.ndjson")]) == 1
    first = capsys.readouterr().out.splitlines()[0]
    assert json.loads(first)["anomalies"][0]["evidence"]["stuck_op"]["index"] == 4
    (tmp_path / "notes.txt").write_text("x")
    assert main([str(tmp_path)]) == 2  # nothing read, one file skipped
    assert "skipped" in capsys.readouterr().err


def test_map_values_are_hashable_states() -> None:
    w = {"a": (1, 2)}
    h = seq((0, "invoke", "write", w), (0, "ok", "write", w), (1, "invoke", "read"), (1, "ok", "read", {"a": (1, 2)}))
    assert check_history(h, "register").valid is True
    h2 = h[:3] + [op(3, 1, "ok", "read", {"a": (9,)})]
    assert check_history(h2, "register").valid is False
    s = seq((0, "invoke", "add", {"k": 1}), (0, "ok", "add", {"k": 1}), (1, "invoke", "read"), (1, "ok", "read", ({"k": 1},)))
    assert check_history(s, "set").valid is True
    r = check_history(seq((0, "invoke", "write", 1, {"k": 1}), (0, "ok", "write", 1, {"k": 1})), "kv")
    assert r.valid is True  # a map as a key


def test_model_failures_become_unknown_not_tracebacks() -> None:
    class Broken(type(MODELS["register"])):  # type: ignore[misc]
        name = "broken"

        def step(self, state, op_input, op_output):  # type: ignore[no-untyped-def]
            raise RuntimeError("boom")

    h = seq((0, "invoke", "write", 1), (0, "ok", "write", 1))
    r = check_history(h, Broken())
    assert r.valid == "unknown" and "RuntimeError: boom" in r.info.error
