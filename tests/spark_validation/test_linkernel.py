"""The compiled register search (spark_validation/_linkernel.c) against the Python search.

The kernel promises more than the same verdict: the same result, field for field (step counts,
cache sizes, partitions, evidence down to the candidates and stuck states), because it runs the
same search in the same order. These tests compare the two on random concurrent register histories
of up to a few hundred ops (keys, timeouts, failures, never-completed ops, nemesis ops, corrupted
reads), on budgets and cache caps that stop the search, and check that the kernel declines (and
the Python path then decides, as before) every history outside its common case.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from spark_validation.checks.linearizable import check_history, register
from spark_validation.checks.linearizable import fast as fast_path
from spark_validation.ingest.history import Op, pairing_of
from spark_validation.ingest.pairing import pair_reference

pytestmark = pytest.mark.skipif(fast_path.COMPILED is None, reason="the compiled search is not built (setup.py)")
COMPILED: Any = fast_path.COMPILED


def _history(rng: random.Random, n_ops: int, *, cas: bool, keys: int, values: int = 4) -> list[Op]:
    """A concurrent execution of registers: each op takes effect at a random moment between its
    invocation and completion; some complete ``info`` (timed out) or never, some ``fail``, and
    some reads are corrupted, so both verdicts come up."""
    nproc = rng.randint(2, 6)
    pid = list(range(nproc))  # a worker's current process id (a timed-out one gets a new id)
    state: dict[Any, Any] = {}
    ops: list[Op] = []
    active: dict[int, list[Any]] = {}  # worker -> [f, key, arg, (took effect, output) or None]
    started = 0

    def emit(process: Any, typ: str, f: str, key: Any, value: Any) -> None:
        ops.append(Op(len(ops), process, typ, f, key, value))

    while started < n_ops or active:
        if rng.random() < 0.02:
            emit("nemesis", "info", "start", None, None)
            continue
        idle = [w for w in range(nproc) if w not in active]
        if started < n_ops and idle and (not active or rng.random() < 0.5):
            w = rng.choice(idle)
            f = rng.choice(("read", "write", "cas") if cas else ("read", "write"))
            key = rng.randrange(keys) if keys > 1 else None
            arg: Any = None
            if f == "write":
                arg = rng.randrange(values)
            elif f == "cas":
                arg = (rng.randrange(values), rng.randrange(values))
            active[w] = [f, key, arg, None]
            emit(pid[w], "invoke", f, key, arg)
            started += 1
            continue
        w = rng.choice(sorted(active))
        a = active[w]
        f, key, arg, done = a
        if done is None:  # the op takes effect now
            cur = state.get(key)
            if f == "read":
                a[3] = (True, cur)
            elif f == "write":
                state[key] = arg
                a[3] = (True, None)
            else:
                ok = cur == arg[0]
                if ok:
                    state[key] = arg[1]
                a[3] = (ok, None)
            continue
        effected, out = done
        roll = rng.random()
        del active[w]
        if roll < 0.03 and started >= n_ops:
            pid[w] = max(pid) + 1  # never completes; the worker goes on as a new process
            continue
        if roll < 0.15:
            emit(pid[w], "info", f, key, arg)
            pid[w] = max(pid) + 1
            continue
        if not effected or (f == "read" and roll < 0.2):
            emit(pid[w], "fail", f, key, arg)
            continue
        if f == "read":
            if rng.random() < 0.08:
                out = rng.randrange(values + 1)  # sometimes a value nobody wrote
            emit(pid[w], "ok", f, key, out)
        else:
            emit(pid[w], "ok", f, key, arg)
    return ops


def _both(ops: list[Op], monkeypatch: pytest.MonkeyPatch, **kw: Any) -> tuple[dict, dict]:
    kw.setdefault("history_id", "h")
    compiled = check_history(ops, **kw).to_dict()
    with monkeypatch.context() as m:
        m.setattr(fast_path, "check_register_ops", register.check_register_ops)
        reference = check_history(ops, **kw).to_dict()
    compiled.pop("seconds")
    reference.pop("seconds")
    return compiled, reference


@pytest.mark.parametrize("model", ["register", "cas-register"])
@pytest.mark.parametrize("nil_reads", ["strict", "knossos"])
def test_kernel_equals_python_search(model: str, nil_reads: str, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(f"{model}/{nil_reads}")
    verdicts = {True: 0, False: 0}
    for i in range(400):
        n = rng.choice((1, 3, 8, 20, 60, 200))
        ops = _history(rng, n, cas=model == "cas-register", keys=rng.choice((1, 1, 3)))
        fast, slow = _both(ops, monkeypatch, model=model, nil_reads=nil_reads)
        assert fast == slow, (i, ops)
        verdicts[fast["valid"]] += 1
    # both verdicts, in numbers, or the comparison says little
    assert verdicts[True] >= 40 and verdicts[False] >= 40, verdicts


@pytest.mark.parametrize("cas", [False, True])
@pytest.mark.parametrize("knossos_nil", [False, True])
def test_compiled_check_register_ops_equals_the_reference(cas: bool, knossos_nil: bool) -> None:
    """The compiled function against :func:`register.check_register_ops`, whole results compared:
    header, per partition the verdict, steps, cache size and payload (or both decline)."""
    rng = random.Random(f"ops/{cas}/{knossos_nil}")
    verdicts: dict[Any, int] = {2: 0}
    for i in range(300):
        ops = _history(rng, rng.choice((1, 3, 8, 20, 60, 200, 300)), cas=cas, keys=rng.choice((1, 1, 3)),
                       values=rng.choice((3, 4)))
        if i % 8 == 0:
            del ops[rng.randrange(len(ops))]  # sometimes a history the pairing rule rejects
        args = (ops, pairing_of(ops), cas, knossos_nil, rng.choice((None, 0, 1)), -1.0, rng.choice((3, 10**6)), 1 << 30)
        want = register.check_register_ops(*args)
        assert COMPILED.check_register_ops(*args) == want, (i, ops)
        for part in want[1] if want is not None else [(None, None)]:
            verdicts[part[1]] = verdicts.get(part[1], 0) + 1
    # searches stopped by the cache cap or the clock: a history whose search passes 2,048 steps
    ops = _history(random.Random(3), 300, cas=True, keys=1, values=3)
    for deadline, max_cache in ((-1.0, 50), (0.0, 10**6)):
        args = (ops, pairing_of(ops), True, knossos_nil, None, deadline, max_cache, 1 << 30)
        want = register.check_register_ops(*args)
        assert COMPILED.check_register_ops(*args) == want
        verdicts[want[1][0][1]] += 1  # type: ignore[index]
    # every verdict (and declines), in numbers, or the comparison says little
    assert verdicts[2] >= 2 and all(verdicts.get(v, 0) >= 15 for v in (None, 0, 1, 3)), \
        sorted(verdicts.items(), key=str)


@pytest.mark.parametrize("model", ["register", "cas-register"])
def test_register_reference_equals_the_general_check(model: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The register reference gives check_history the result its general path gives (the path of
    every other model, and of histories the register check declines)."""
    rng = random.Random(f"general/{model}")
    for i in range(150):
        ops = _history(rng, rng.choice((1, 3, 8, 20, 60)), cas=model == "cas-register", keys=rng.choice((1, 3)))
        nil_reads = rng.choice(("strict", "knossos"))
        with monkeypatch.context() as m:
            m.setattr(fast_path, "check_register_ops", register.check_register_ops)
            want = check_history(ops, model, nil_reads=nil_reads).to_dict()
            m.setattr(fast_path, "check_register_ops", lambda *args: None)
            got = check_history(ops, model, nil_reads=nil_reads).to_dict()
        want.pop("seconds")
        got.pop("seconds")
        assert got == want, (i, ops)


def test_kernel_pairs_as_the_python_rule() -> None:
    """Given no pairing, the kernel pairs the ops itself by the compiled loop of ingest.pairing's
    rule: the result is the one it gives with the Python rule's pairing, on histories with nemesis
    events and on histories the rule rejects (an op dropped: the kernel declines either way)."""
    rng = random.Random(11)
    args = (True, False, None, -1.0, 1000, 1 << 30)
    taken = broken = 0
    for i in range(300):
        ops = _history(rng, rng.choice((1, 3, 8, 20, 60)), cas=True, keys=rng.choice((1, 3)))
        if i % 3 == 0:
            del ops[rng.randrange(len(ops))]
        want = COMPILED.check_register_ops(ops, pair_reference(ops), *args)
        assert COMPILED.check_register_ops(ops, None, *args) == want, (i, ops)
        taken += want is not None
        broken += bool(pair_reference(ops).problems)
    assert taken >= 150 and broken >= 30, (taken, broken)


def test_kernel_is_used(monkeypatch: pytest.MonkeyPatch) -> None:
    """The fast path really runs the compiled search (not a silent fallback to Python)."""
    calls: list[Any] = []

    def spy(*args: Any) -> Any:
        r = COMPILED.check_register_ops(*args)
        calls.append(r)
        return r

    monkeypatch.setattr(fast_path, "check_register_ops", spy)
    ops = _history(random.Random(1), 50, cas=True, keys=1)
    check_history(ops, "cas-register", history_id="h")
    assert len(calls) == 1 and calls[0] is not None


def test_kernel_budget_and_cache_cap_match(monkeypatch: pytest.MonkeyPatch) -> None:
    """Searches stopped by the cache cap or the time budget give ``unknown`` the same way."""
    # a 300-op history whose search passes 2,048 steps and 50 configurations (found by seed)
    ops = _history(random.Random(3), 300, cas=True, keys=1, values=3)
    fast, slow = _both(ops, monkeypatch, model="cas-register", max_cache=50)
    assert fast == slow
    assert fast["valid"] == "unknown" and "cache limit of 50" in fast["info"]["unknown_partitions"][0]["reason"]
    fast, slow = _both(ops, monkeypatch, model="cas-register", budget_seconds=0.0)
    assert fast["valid"] == slow["valid"] == "unknown"
    assert fast["info"]["unknown_partitions"][0]["reason"] == "time budget exhausted"


@pytest.mark.parametrize(
    "ops",
    [
        # a structure error: the process invokes while its op is open
        [Op(0, 1, "invoke", "write", None, 1), Op(1, 1, "invoke", "write", None, 2)],
        # a completion with no invocation
        [Op(0, 1, "ok", "write", None, 1)],
        # completion f differs from the invocation's
        [Op(0, 1, "invoke", "write", None, 1), Op(1, 1, "ok", "read", None, 1)],
        # values the kernel does not intern (floats, bools, tuples): Python's equality decides
        [Op(0, 1, "invoke", "write", None, 1.0), Op(1, 1, "ok", "write", None, 1.0),
         Op(2, 1, "invoke", "read", None, None), Op(3, 1, "ok", "read", None, 1)],
        [Op(0, 1, "invoke", "write", None, True), Op(1, 1, "ok", "write", None, True),
         Op(2, 1, "invoke", "read", None, None), Op(3, 1, "ok", "read", None, 1)],
        [Op(0, 1, "invoke", "write", None, (1, 2)), Op(1, 1, "ok", "write", None, (1, 2)),
         Op(2, 1, "invoke", "read", None, None), Op(3, 1, "ok", "read", None, (1, 2))],
        # an op the model does not know, and a malformed cas
        [Op(0, 1, "invoke", "add", None, 1), Op(1, 1, "ok", "add", None, 1)],
        [Op(0, 1, "invoke", "cas", None, 1), Op(1, 1, "ok", "cas", None, 1)],
    ],
)
def test_kernel_declines_what_python_decides(ops: list[Op], monkeypatch: pytest.MonkeyPatch) -> None:
    assert COMPILED.check_register_ops(ops, pairing_of(ops), True, False, None, -1.0, 1000, 1 << 30) is None
    fast, slow = _both(ops, monkeypatch, model="cas-register")
    assert fast == slow


def test_kernel_declines_long_partitions(monkeypatch: pytest.MonkeyPatch) -> None:
    """A key with more calls than the kernel's bitsets hold goes to the Python search (which
    compresses the set of linearized calls into windows)."""
    n = COMPILED.MAX_PART + 1
    ops = []
    for i in range(n):
        ops.append(Op(2 * i, 0, "invoke", "write", None, i))
        ops.append(Op(2 * i + 1, 0, "ok", "write", None, i))
    assert COMPILED.check_register_ops(ops, pairing_of(ops), True, False, None, -1.0, 1000, 1 << 30) is None
    assert check_history(ops, "cas-register").valid is True


def test_kernel_register_model_has_no_cas(monkeypatch: pytest.MonkeyPatch) -> None:
    ops = [Op(0, 1, "invoke", "cas", None, (None, 1)), Op(1, 1, "ok", "cas", None, (None, 1))]
    fast, slow = _both(ops, monkeypatch, model="register")
    assert fast == slow and fast["valid"] == "unknown" and "has no operation 'cas'" in fast["info"]["error"]
