"""The linearizability search of one partition: the definition the compiled search follows.

The algorithm is Wing & Gong's search (J. Parallel Distrib. Comput. 1993) with Lowe's memoisation
("Testing for linearizability", Concurrency and Computation 2017), as Porcupine implements it
(github.com/anishathalye/porcupine, ``checker.go``, ``checkSingle``): the history becomes a doubly
linked list of call and return entries in real-time order; the search walks the list, *lifts* a
call (and its return) out of the list when the model accepts it as the next linearized op, and
backtracks (*unlifts*) when it meets the return of an op it has not linearized. A cache of the
configurations already explored -- the set of linearized calls plus the (hashable) model state --
prunes the search.

Outcomes follow Knossos (``knossos.wgl``, ``knossos.linear``): an op with no observed outcome
(``info`` or never completed) has no return entry, may take effect at any time after its
invocation and need not be linearized; the search succeeds once every op with an observed outcome
is.

Three sound prunings come on top, each argued where it is prepared: read-only calls accepted in a
configuration are lifted first and alone (:func:`_forced_read`); among optional calls with the
same input only a prefix in invocation order is tried (:func:`_symmetry`); a blind write is never
placed right after an optional call (:meth:`_Walk.run`). The set of linearized calls is kept
compressed as counts plus windows (:func:`_ranks`), so a memo entry is as small as the
concurrency. A time budget and a cap on the cache turn an explosive search into ``"unknown"``.
"""

from __future__ import annotations

import time
from typing import Any, Callable, Sequence

import attrs

from spark_validation.checks.linearizable.models import UNKNOWN, Call, Model

DEFAULT_MAX_CACHE = 8_000_000
"""Cache entries per partition before giving up with ``"unknown"``. The effective cap is also
bounded by :data:`CACHE_BYTES` (entries carry the windows of open ops, as wide as the concurrency)."""

CACHE_BYTES = 2 << 30
"""Approximate memory the cache of one partition may use before the search gives up."""

ENTRY_OVERHEAD = 280  # bytes per cache entry besides its windows (6-tuple, set slot, ints)
STATES_CAP = 8  # distinct stuck states kept for the evidence
_CHECK_EVERY = 2048  # search steps between two looks at the clock and the cache size
_INF = float("inf")


@attrs.frozen
class Stuck:
    """Where a failed search got stuck, as call ids of the partition: the deepest linearized
    prefix (in order), the model state after it, the call whose return it could not pass (-1:
    the end of the history), the calls that could have come next and the distinct stuck states."""

    prefix: list
    state: Any
    stuck: int
    candidates: list
    states: list


@attrs.frozen
class Search:
    """The outcome of :func:`check_calls`: ``valid`` is True, False or ``"unknown"``; ``explored``
    counts search steps, ``cache`` the configurations memoised. ``reason`` and ``best_prefix``
    say why and how far an undecided search got; ``stuck`` is the evidence of a failed one."""

    valid: Any
    explored: int
    cache: int
    calls: int
    reason: str = ""
    best_prefix: int = 0
    stuck: Stuck | None = None


@attrs.define
class _Plan:
    """A partition laid out for the search: per call id (``inputs`` ... ``rank``), per list node
    (``is_call`` ... ``node_ro``: the events in real-time order, then the head and tail
    sentinels) and the linked list itself (``nxt``/``prv``)."""

    inputs: list
    outputs: list
    must: list
    blind: list
    prev_same: list
    rank: list
    events: list
    is_call: list
    node_cid: list
    node_ret: list
    node_ro: list
    nxt: list
    prv: list
    head: int
    tail: int


def check_calls(
    model: Model,
    calls: Sequence[Call],
    initial_state: Any,
    *,
    deadline: float | None = None,
    max_cache: int = DEFAULT_MAX_CACHE,
    order: str = "deadline",
    cache_bytes: int | None = None,
) -> Search:
    """Search for a linearization of one partition's calls from ``initial_state``.

    ``order`` is the order in which available calls are tried: ``"deadline"`` (default) or
    ``"call"`` (Porcupine's: by invocation); the verdict does not depend on it, the time and the
    evidence may. ``cache_bytes`` defaults to :data:`CACHE_BYTES`.
    """
    plan = _plan(model, calls, order)
    return _Walk(model, plan, deadline, max_cache, CACHE_BYTES if cache_bytes is None else cache_bytes).run(
        initial_state
    )


def _plan(model: Model, calls: Sequence[Call], order: str) -> _Plan:
    inputs = [c.input for c in calls]
    must = [c.output is not UNKNOWN for c in calls]
    events = _events(calls, must, order)
    m = len(events)
    nxt = list(range(1, m + 1)) + [0, -1]
    prv = [m] + list(range(0, m - 1)) + [-1, m - 1]
    nxt[m] = 0 if m else m + 1
    prv[m + 1] = m - 1 if m else m
    is_call = [e[1] == 0 for e in events]
    node_cid = [e[2] for e in events]
    ret_node = [-1] * len(calls)  # call id -> return node (or -1: returns "at infinity")
    for node, (_, kind, cid) in enumerate(events):
        if kind:
            ret_node[cid] = node
    read_only = [model.read_only(x) for x in inputs]
    return _Plan(
        inputs=inputs,
        outputs=[c.output for c in calls],
        must=must,
        blind=[model.overwrites(x) for x in inputs],
        prev_same=_symmetry(calls, events, must),
        rank=_ranks(calls, must),
        events=events,
        is_call=is_call,
        node_cid=node_cid,
        node_ret=[ret_node[cid] if call else -1 for cid, call in zip(node_cid, is_call)],
        node_ro=[call and read_only[cid] for cid, call in zip(node_cid, is_call)] + [False, False],
        nxt=nxt,
        prv=prv,
        head=m,
        tail=m + 1,
    )


def _events(calls: Sequence[Call], must: list, order: str) -> list[tuple[int, int, int]]:
    """The calls and observed returns as (history position, 0 = call / 1 = return, call id), in
    real-time order; with ``order="deadline"`` each run of calls between two returns is sorted
    by :func:`_by_deadline`."""
    events = [(c.operation.invoke_pos, 0, cid) for cid, c in enumerate(calls)]
    events += [(c.operation.complete_pos, 1, cid) for cid, c in enumerate(calls)
               if must[cid] and c.operation.complete is not None and c.operation.complete.type == "ok"]
    events.sort()
    return _by_deadline(events, len(calls)) if order == "deadline" else events


def _by_deadline(events: list[tuple[int, int, int]], n: int) -> list[tuple[int, int, int]]:
    """Calls between two consecutive returns can be permuted freely: which calls are available
    depends only on which returns precede them. Within each such run, the call that must return
    first is tried first (earliest deadline; unknown outcomes last)."""
    ret_at: list[float] = [_INF] * n
    for pos, kind, cid in events:
        if kind:
            ret_at[cid] = pos
    reordered: list[tuple[int, int, int]] = []
    run: list[tuple[int, int, int]] = []
    deadline_of = lambda e: ret_at[e[2]]  # noqa: E731
    for ev in events:
        if ev[1] == 0:
            run.append(ev)
        else:
            if len(run) > 1:
                run.sort(key=deadline_of)
            reordered.extend(run)
            reordered.append(ev)
            run = []
    run.sort(key=deadline_of)
    reordered.extend(run)
    return reordered


def _symmetry(calls: Sequence[Call], events: list[tuple[int, int, int]], must: list) -> list[int]:
    """Per call, the optional call with the same input invoked just before it (-1: none).

    Two calls with unknown outcome and the same input are interchangeable, except that the one
    invoked earlier can go anywhere the later one can (its real-time predecessors are a subset, and
    neither has a deadline). So any linearization can be rewritten to use a prefix of each such
    group, in invocation order: an optional call is only tried once its predecessor in its group
    is linearized. (Jepsen histories with many timed-out writes of a few values shrink from 2^k
    subsets to k+1.)"""
    prev_same = [-1] * len(calls)
    last_of: dict[Any, int] = {}
    for _, kind, cid in events:
        if kind == 0 and not must[cid]:
            try:
                k = calls[cid].input
                hash(k)
            except TypeError:
                continue
            if k in last_of:
                prev_same[cid] = last_of[k]
            last_of[k] = cid
    return prev_same


def _ranks(calls: Sequence[Call], must: list) -> list[int]:
    """Per call, its rank in invocation order among the calls of its kind (must / optional).

    The set of linearized calls is kept, per kind, as a count ``lo`` (every call of rank < lo is
    linearized) plus a bitset ``win`` of the ranks from ``lo`` on. Linearizations follow real time
    closely, so the window stays about as wide as the concurrency: memo entries are as small as the
    concurrency, not as long as the history. Optional calls (info/pending) that stay out pin only
    their own window, not the must window."""
    inv_pos = [c.operation.invoke_pos for c in calls]
    n = len(calls)
    by_invocation = (range(n) if all(a <= b for a, b in zip(inv_pos, inv_pos[1:]))
                     else sorted(range(n), key=inv_pos.__getitem__))
    rank = [0] * n
    counts = [0, 0]  # optional, must
    for cid in by_invocation:
        kind = must[cid]
        rank[cid] = counts[kind]
        counts[kind] += 1
    return rank


def _grow(must: list, rank: list, cid: int, lo_m: int, win_m: int, lo_o: int, win_o: int) -> tuple[int, int, int, int]:
    """The compressed set of linearized calls (:func:`_ranks`) with call ``cid`` added."""
    if must[cid]:
        d = rank[cid] - lo_m
        win_m |= 1 << d
        if not d:
            t = (~win_m & (win_m + 1)).bit_length() - 1  # trailing ones: the prefix grew
            win_m >>= t
            lo_m += t
    else:
        d = rank[cid] - lo_o
        win_o |= 1 << d
        if not d:
            t = (~win_o & (win_o + 1)).bit_length() - 1
            win_o >>= t
            lo_o += t
    return lo_m, win_m, lo_o, win_o


def _lift(nxt: list, prv: list, node: int, ret: int) -> None:
    """Take a call's node (and its return's, if it has one) out of the list."""
    p, q = prv[node], nxt[node]
    nxt[p] = q
    prv[q] = p
    if ret >= 0:
        p, q = prv[ret], nxt[ret]
        nxt[p] = q
        prv[q] = p


def _unlift(nxt: list, prv: list, node: int, ret: int) -> None:
    """Put a lifted call's node (and its return's) back where it was."""
    if ret >= 0:
        nxt[prv[ret]] = ret
        prv[nxt[ret]] = ret
    nxt[prv[node]] = node
    prv[nxt[node]] = node


def _forced_read(plan: _Plan, model: Model) -> Callable[[Any], int]:
    """A scan for the first available read-only call the model accepts in a state (its node, or -1).

    In a configuration where some read-only op (it changes no state) is available -- its call
    precedes every pending return, so all its real-time predecessors are linearized -- and the
    model accepts it, the configuration is linearizable iff the one with that op linearized next
    is: take any linearization of the rest, move the op to the front; the states along it are
    unchanged and no real-time order is broken. So that op is the only branch tried (a "forced"
    lift, undone together with its parent on backtracking); when there is none, read-only ops are
    skipped (all were rejected here)."""
    nxt, is_call, node_ro, node_cid = plan.nxt, plan.is_call, plan.node_ro, plan.node_cid
    inputs, outputs, head, tail = plan.inputs, plan.outputs, plan.head, plan.tail
    # a model whose reads are accepted exactly when their output equals the state (the registers)
    # lets the scan compare instead of calling step
    read_eq = getattr(model, "read_is_equality", False)
    step = model.step

    def scan(state: Any) -> int:
        e = nxt[head]
        while e != tail and is_call[e]:
            if node_ro[e]:
                cid = node_cid[e]
                if (outputs[cid] == state) if read_eq else step(state, inputs[cid], outputs[cid])[0]:
                    return e
            e = nxt[e]
        return -1

    return scan


class _Walk:
    """One search over a :class:`_Plan` (module doc): :meth:`run` walks the list, lifting and
    backtracking; the rest keeps the budget and the deepest dead end."""

    def __init__(self, model: Model, plan: _Plan, deadline: float | None, max_cache: int, cache_bytes: int) -> None:
        self.model, self.plan = model, plan
        self.deadline, self.max_cache, self.cache_bytes = deadline, max_cache, cache_bytes
        self.cache: set[tuple[Any, ...]] = set()
        self.reason = ""
        self.best_len = -1
        self.best: tuple[Any, Any, int] | None = None  # (lifted-call stack, state, stuck node)
        self.stuck_states: list[Any] = []

    def run(self, state: Any) -> Search:
        """The search from ``state``. The lifted calls form a linked stack of (call node, state
        before it, lo_m, win_m, lo_o, win_o, rest): pushing and popping allocate no lists, and
        remembering the deepest prefix is O(1). The loop binds everything it touches to locals."""
        plan, model, cache = self.plan, self.model, self.cache
        nxt, prv, is_call, node_cid, node_ret, node_ro = (
            plan.nxt, plan.prv, plan.is_call, plan.node_cid, plan.node_ret, plan.node_ro)
        inputs, outputs, must, prev_same, blind, rank = (
            plan.inputs, plan.outputs, plan.must, plan.prev_same, plan.blind, plan.rank)
        step, head, tail, forced_read = model.step, plan.head, plan.tail, _forced_read(plan, model)
        lo_m = win_m = lo_o = win_o = depth = explored = 0
        stack: Any = None
        remaining, countdown, entry = sum(must), _CHECK_EVERY, nxt[head]
        valid: Any = True
        fresh = True  # at a configuration not yet scanned for read-only ops
        while remaining:
            explored += 1
            countdown -= 1
            if not countdown:
                countdown = _CHECK_EVERY
                if self._stopped(win_m, win_o):
                    valid = "unknown"
                    break
            node, new_state = -1, state
            if fresh:
                fresh = False
                node = forced_read(state)
                entry = -1 if node >= 0 else nxt[head]
            if entry >= 0:
                if entry == tail or not is_call[entry]:  # a return of an op not linearized yet
                    self._dead_end(depth, stack, state, entry)
                else:
                    cid = node_cid[entry]
                    # not now: a read-only call (_forced_read), an optional call whose symmetric
                    # predecessor is out (_symmetry), or a blind write (the model's ``overwrites``)
                    # right after an optional call: that call then has no effect anyone can
                    # observe, and the branch without it covers this one
                    ps = prev_same[cid]
                    if node_ro[entry] or (ps >= 0 and rank[ps] >= lo_o and not (win_o >> (rank[ps] - lo_o)) & 1) or (
                            blind[cid] and stack is not None and not must[node_cid[stack[0]]]):
                        entry = nxt[entry]
                        continue
                    ok, new_state = step(state, inputs[cid], outputs[cid])
                    if not ok:
                        entry = nxt[entry]
                        continue
                    node = entry
            if node >= 0:
                cid = node_cid[node]
                g = _grow(must, rank, cid, lo_m, win_m, lo_o, win_o)
                # the key carries whether the call is optional: the search from a configuration
                # depends on it (the blind-write rule above)
                ck = (*g, new_state, not must[cid])
                if ck not in cache:
                    cache.add(ck)
                    stack = (node, state, lo_m, win_m, lo_o, win_o, stack)
                    depth += 1
                    state = new_state
                    lo_m, win_m, lo_o, win_o = g
                    remaining -= must[cid]
                    _lift(nxt, prv, node, node_ret[node])
                    fresh = True
                    continue
                if entry >= 0:  # explored before from here: try the next call
                    entry = nxt[entry]
                    continue
            # backtrack; a forced (read-only) lift fails together with its parent configuration
            while stack is not None:
                entry, state, lo_m, win_m, lo_o, win_o, stack = stack
                depth -= 1
                remaining += must[node_cid[entry]]
                _unlift(nxt, prv, entry, node_ret[entry])
                if not node_ro[entry]:
                    break
            else:
                valid = False
                break
            entry = nxt[entry]
        return self._result(valid, explored, depth)

    def _stopped(self, win_m: int, win_o: int) -> bool:
        """Whether the time budget or the cache cap ends the search (``reason`` says which). The
        cap bounds the entries by memory as well as by count: an entry holds both windows."""
        if self.deadline is not None and time.perf_counter() > self.deadline:
            self.reason = "time budget exhausted"
            return True
        cap = min(self.max_cache,
                  self.cache_bytes // (ENTRY_OVERHEAD + (win_m.bit_length() + win_o.bit_length()) // 8))
        if len(self.cache) > cap:
            self.reason = f"cache limit of {cap} configurations reached"
            return True
        return False

    def _dead_end(self, depth: int, stack: Any, state: Any, node: int) -> None:
        """Remember the deepest configurations the search could not get past."""
        if depth >= self.best_len:
            if depth > self.best_len:
                self.best_len = depth
                self.best = (stack, state, node)
                self.stuck_states = []
            if len(self.stuck_states) < STATES_CAP and state not in self.stuck_states:
                self.stuck_states.append(state)

    def _result(self, valid: Any, explored: int, depth: int) -> Search:
        n = len(self.plan.inputs)
        if valid is True:
            return Search(True, explored, len(self.cache), n)
        if valid == "unknown":
            return Search("unknown", explored, len(self.cache), n, self.reason, max(self.best_len, depth))
        assert self.best is not None
        return Search(False, explored, len(self.cache), n, stuck=self._stuck())

    def _stuck(self) -> Stuck:
        """The deepest dead end as call ids: the prefix lifted then, and every call invoked
        before the return it could not pass and not in that prefix."""
        top, state, stuck = self.best  # type: ignore[misc]
        events = self.plan.events
        nodes: list[int] = []
        while top is not None:
            nodes.append(top[0])
            top = top[-1]
        nodes.reverse()
        prefix = [events[node][2] for node in nodes]
        done = set(prefix)
        limit = len(events) if stuck >= len(events) else stuck
        candidates = [cid for pos, kind, cid in events[:limit] if kind == 0 and cid not in done]
        stuck_cid = events[stuck][2] if stuck < len(events) else -1
        return Stuck(prefix, state, stuck_cid, candidates, list(self.stuck_states))
