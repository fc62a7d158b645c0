"""An independent, deliberately naive linearizability oracle for the differential tests.

No memoisation, no linked lists, no shared code with ``spark_validation``: it enumerates every
order of the operations that respects real time (op a must precede op b when a returned before b
was invoked), with every choice of which indeterminate (info / never completed) ops took effect,
and runs each order through a sequential specification written here from scratch.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

INF = float("inf")


@dataclass(frozen=True)
class BOp:
    """One operation: invocation time, return time (INF if unknown), f, argument, outcome."""

    inv: int
    ret: float
    f: str
    arg: Any
    out: Any
    known: bool  # outcome observed (ok)


# -- sequential specifications: spec(state, f, arg, out, known) -> list of possible next states


def register_spec(state: Any, op: BOp) -> list[Any]:
    if op.f == "write":
        return [op.arg]
    if op.f == "cas":
        return [op.arg[1]] if state == op.arg[0] else []
    if not op.known:  # a read whose result nobody saw
        return [state]
    return [state] if op.out == state else []


def kv_spec(state: tuple, op: BOp) -> list[Any]:
    """The whole map as one object: state is a sorted tuple of (key, value)."""
    key, arg = op.arg
    current = dict(state)
    nexts = register_spec(current[key], BOp(op.inv, op.ret, op.f, arg, op.out, op.known))
    return [tuple(sorted({**current, key: v}.items())) for v in nexts]


def set_spec(state: frozenset, op: BOp) -> list[Any]:
    if op.f == "add":
        return [state | {op.arg}]
    if not op.known:
        return [state]
    return [state] if frozenset(op.out) == state else []


def log_spec(state: tuple, op: BOp, observed: dict) -> list[Any]:
    """state: tuple of (offset, value). A send with unknown offset may take any offset some read
    saw its value at (taking an unobserved offset is never better than not happening)."""
    last = state[-1][0] if state else -1
    if op.f == "send":
        offsets = [op.out] if op.known else sorted(observed.get(op.arg, ()))
        return [state + ((o, op.arg),) for o in offsets if o > last]
    if not op.known:
        return [state]
    # poll: the returned pairs must be a run of consecutive entries of the log
    pairs = tuple(op.out)
    if not pairs:
        return [state]
    for i in range(len(state)):
        if state[i : i + len(pairs)] == pairs:
            return [state]
    return []


def linearizable(ops: list[BOp], init: Any, spec) -> bool:
    """Exhaustive search over real-time-respecting orders (ops with known=False are optional)."""

    def rec(state: Any, remaining: frozenset) -> bool:
        if not any(ops[i].known for i in remaining):
            return True
        for i in remaining:
            x = ops[i]
            # x may go next only if no other remaining must-op returned before x was invoked
            if any(ops[j].known and ops[j].ret < x.inv for j in remaining if j != i):
                continue
            for nxt in spec(state, x):
                if rec(nxt, remaining - {i}):
                    return True
            if not x.known:
                # x may also never take effect: drop it
                if rec(state, remaining - {i}):
                    return True
        return False

    return rec(init, frozenset(range(len(ops))))


# -- Knossos semantics (knossos.model), written again from its text: a read that returned nil is a
# read of an unknown value and is legal in every state (Register, CASRegister, MultiRegister).


def knossos_register_spec(state: Any, op: BOp) -> list[Any]:
    if op.f == "read" and op.known and op.out is None:
        return [state]
    return register_spec(state, op)


def multi_register_spec(state: tuple, op: BOp, *, nil_is_unknown: bool) -> list[Any]:
    """state: sorted tuple of (key, value); op.arg: the txn's micro-ops [(f, k, v)], with the
    values read on an observed (known) txn. Writes apply in order; a read sees the txn's own
    earlier writes. An unobserved txn's reads constrain nothing."""
    current = dict(state)
    for f, k, v in op.arg:
        if f == "write":
            current[k] = v
        elif op.known and not (nil_is_unknown and v is None):
            if current.get(k) != v:
                return []
    return [tuple(sorted(current.items()))]
