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

from spark_validation import linearizability as lin
from spark_validation.ingest.history import Op, pairing_of
from spark_validation.ingest.pairing import pair_reference

pytestmark = pytest.mark.skipif(lin._compiled is None, reason="the compiled search is not built (setup.py)")


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
    fast = lin.check_history(ops, **kw).to_dict()
    monkeypatch.setattr(lin, "KERNEL", None)
    slow = lin.check_history(ops, **kw).to_dict()
    monkeypatch.setattr(lin, "KERNEL", lin._compiled)
    fast.pop("seconds")
    slow.pop("seconds")
    return fast, slow


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
        want = lin._compiled.check_register_ops(ops, pair_reference(ops), *args)
        assert lin._compiled.check_register_ops(ops, None, *args) == want, (i, ops)
        taken += want is not None
        broken += bool(pair_reference(ops).problems)
    assert taken >= 150 and broken >= 30, (taken, broken)


def test_kernel_is_used(monkeypatch: pytest.MonkeyPatch) -> None:
    """The fast path really runs the compiled search (not a silent fallback to Python)."""
    calls: list[Any] = []
    real = lin._compiled

    class Spy:
        def check_register_ops(self, *args: Any) -> Any:
            r = real.check_register_ops(*args)
            calls.append(r)
            return r

    monkeypatch.setattr(lin, "KERNEL", Spy())
    ops = _history(random.Random(1), 50, cas=True, keys=1)
    lin.check_history(ops, "cas-register", history_id="h")
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
    assert lin._compiled.check_register_ops(ops, pairing_of(ops), True, False, None, -1.0, 1000, 1 << 30) is None
    fast, slow = _both(ops, monkeypatch, model="cas-register")
    assert fast == slow


def test_kernel_declines_long_partitions(monkeypatch: pytest.MonkeyPatch) -> None:
    """A key with more calls than the kernel's bitsets hold goes to the Python search (which
    compresses the set of linearized calls into windows)."""
    n = lin._compiled.MAX_PART + 1
    ops = []
    for i in range(n):
        ops.append(Op(2 * i, 0, "invoke", "write", None, i))
        ops.append(Op(2 * i + 1, 0, "ok", "write", None, i))
    assert lin._compiled.check_register_ops(ops, pairing_of(ops), True, False, None, -1.0, 1000, 1 << 30) is None
    assert lin.check_history(ops, "cas-register").valid is True


def test_kernel_register_model_has_no_cas(monkeypatch: pytest.MonkeyPatch) -> None:
    ops = [Op(0, 1, "invoke", "cas", None, (None, 1)), Op(1, 1, "ok", "cas", None, (None, 1))]
    fast, slow = _both(ops, monkeypatch, model="register")
    assert fast == slow and fast["valid"] == "unknown" and "has no operation 'cas'" in fast["info"]["error"]
