"""Linearizability checking of client histories.

The algorithm is Wing & Gong's search (J. Parallel Distrib. Comput. 1993) with Lowe's memoisation
("Testing for linearizability", Concurrency and Computation 2017), as Porcupine implements it
(github.com/anishathalye/porcupine, ``checker.go``): the history becomes a doubly linked list of
call and return entries in real-time order; the search walks the list, *lifts* a call (and its
return) out of the list when the model accepts it as the next linearized op, and backtracks
(*unlifts*) when it meets the return of an op it has not linearized. A cache of the configurations
already explored -- the set of linearized calls plus the (hashable) model state -- prunes the
search. The set is kept compressed, as a count of the linearized prefix plus a bitset of the window
of open ops (see ``check_calls``), so memo entries are as small as the concurrency and a
1,000,000-op history is decided in the memory a 1,000-op one needs per entry. Histories are first split by key (P-compositionality: a history of
independent objects is linearizable iff each object's sub-history is, Herlihy & Wing 1990) and
each partition is checked on its own.

Jepsen/Knossos semantics for outcomes: ``fail`` ops are dropped; ``info`` and never-completed ops
have no return entry (they may take effect at any time after their invocation) and need not be
linearized at all; the search succeeds once every op with an observed outcome is linearized.

Python-specific choices for speed: the linked list is two integer arrays (``nxt``/``prv``) with
head and tail sentinels, bitsets are Python ints, each partition's calls are pre-split into
parallel lists, and the inner loop binds everything to locals. A time budget and a cap on the
cache size turn an explosive search into ``valid = "unknown"`` with how far it got.

Result (docs/contracts.md section 6)::

    LinResult(valid: True | False | "unknown", ops, seconds, anomalies, info)

An anomaly is ``{"kind": "nonlinearizable", "key": k, "evidence": {...}}`` per failing partition;
the evidence holds the longest linearizable prefix the search found, the model state after it, the
op whose return the search could not get past (``stuck_op``), and for every op that could have
come next, whether the model accepted it from that state (``candidates``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any, Callable, Sequence

import attrs

from spark_validation.ingest.history import (
    History,
    Op,
    Operation,
    iter_corpus,
    make_operation,
    pair_ops,
    pairing_of,
    to_jsonable,
)
from spark_validation.ingest.pairing import Pairing, pair, pair_reference
from spark_validation.models import (
    NIL_READS,
    READ,
    UNKNOWN,
    Call,
    CasRegisterModel,
    Model,
    ModelError,
    RegisterModel,
    describe_io,
    freeze,
    get_model,
    with_nil_reads,
)

try:  # the compiled search for register histories (setup.py builds it; optional)
    from spark_validation import _linkernel as _compiled
except ImportError:  # not built: the Python search decides every history
    _compiled = None
KERNEL: Any = None if os.environ.get("KRAFT_COMPILED", "").lower() in ("off", "0", "no") else _compiled
"""The compiled search in use (``None``: the Python search decides everything).
``KRAFT_COMPILED=off`` does without every compiled part."""

__all__ = ["LinResult", "check_history", "check_calls", "default_nil_reads", "DEFAULT_MAX_CACHE", "CACHE_BYTES"]


def default_nil_reads(history_id: Any, nil_reads: str | None = "auto") -> str:
    """The nil-read semantics for a history: ``nil_reads`` when it is ``"knossos"`` or ``"strict"``;
    for ``"auto"``/``None``, Knossos's (a ``nil`` read is unknown) for EDN histories -- the files
    Jepsen and Knossos write -- and strict (``nil`` is a value) for everything else."""
    if nil_reads in NIL_READS:
        return nil_reads  # type: ignore[return-value]
    if nil_reads not in (None, "auto"):
        raise ValueError(f"nil_reads must be auto, {' or '.join(NIL_READS)}, got {nil_reads!r}")
    return "knossos" if str(history_id or "").lower().endswith(".edn") else "strict"

DEFAULT_MAX_CACHE = 8_000_000
"""Cache entries per partition before giving up with ``"unknown"``. The effective cap is also
bounded by :data:`CACHE_BYTES` (entries carry the windows of open ops, as wide as the concurrency)."""

CACHE_BYTES = 2 << 30
"""Approximate memory the cache of one partition may use before the search gives up."""
_ENTRY_OVERHEAD = 280  # bytes per cache entry besides its windows (6-tuple, set slot, ints)
_INF = float("inf")
_PREFIX_CAP = 200  # ops of the linearized prefix listed in evidence (the length is always given)
_STATES_CAP = 8  # distinct stuck states listed in evidence


@attrs.frozen
class LinResult:
    """The verdict for one history (contract section 6)."""

    valid: Any  # True | False | "unknown"
    ops: int
    seconds: float
    anomalies: list = attrs.field(factory=list)
    info: dict = attrs.field(factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "valid": self.valid,
            "ops": self.ops,
            "seconds": self.seconds,
            "anomalies": to_jsonable(self.anomalies),
            "info": to_jsonable(self.info),
        }


_PLAIN = frozenset((int, str, bool, type(None)))


def _op_json(inv: Op, c: Op | None) -> dict[str, Any]:
    """An operation (invocation ``inv``, completion ``c`` or None) as evidence lists it."""
    v = inv.value
    d: dict[str, Any] = {
        "index": inv.index,
        "process": inv.process,
        "f": inv.f,
        "value": v if type(v) in _PLAIN else to_jsonable(v),
        "type": c.type if c is not None else "pending",
    }
    if inv.key is not None:
        d["key"] = to_jsonable(inv.key)
    if c is not None:
        d["completion_index"] = c.index
        if c.type == "ok":
            v = c.value
            d["output"] = v if type(v) in _PLAIN else to_jsonable(v)
    return d


def _call_json(model: Model, call: Call) -> dict[str, Any]:
    d = _op_json(call.operation.invoke, call.operation.complete)
    d["call"] = model.describe_call(call)
    return d


def _register_call_json(inv: Op, c: Op | None) -> dict[str, Any]:
    """:func:`_call_json` of the register call an operation makes (``RegisterModel.calls``),
    straight from its ops: the compiled search's evidence, without Call objects."""
    d = _op_json(inv, c)
    if inv.f == READ:
        d["call"] = describe_io(READ, None, c.value)  # type: ignore[union-attr]
    else:
        d["call"] = describe_io(inv.f, inv.value, None if c is not None and c.type == "ok" else UNKNOWN)
    return d


def check_calls(
    model: Model,
    calls: Sequence[Call],
    initial_state: Any,
    *,
    deadline: float | None = None,
    max_cache: int = DEFAULT_MAX_CACHE,
    order: str = "deadline",
) -> tuple[Any, dict[str, Any]]:
    """Check one partition. Returns (True | False | "unknown", details).

    ``details`` has ``explored`` (search steps), ``cache`` (configurations memoised) and, when not
    linearizable, ``evidence``; when unknown, ``reason`` and ``best_prefix``. ``order`` is the order
    in which available calls are tried: ``"deadline"`` (default) or ``"call"`` (Porcupine's: by
    invocation); the verdict does not depend on it, the time and the evidence may.
    """
    n = len(calls)
    inputs = [c.input for c in calls]
    outputs = [c.output for c in calls]
    opers = [c.operation for c in calls]
    must = [o is not UNKNOWN for o in outputs]
    # --- events in real-time order: (history position, 0=call/1=return, call id) -----------
    inv_pos = [o.invoke_pos for o in opers]
    events: list[tuple[int, int, int]] = [(pos, 0, cid) for cid, pos in enumerate(inv_pos)]
    events += [(o.complete_pos, 1, cid) for cid, o in enumerate(opers)
               if must[cid] and o.complete is not None and o.complete.type == "ok"]
    events.sort()
    if order == "deadline":
        # Calls between two consecutive returns can be permuted freely: which calls are available
        # depends only on which returns precede them. Within each such run, try the call that
        # must return first first (earliest deadline; unknown outcomes last).
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
        events = reordered
    m = len(events)
    HEAD, TAIL = m, m + 1
    nxt = list(range(1, m + 1)) + [0, -1]
    prv = [HEAD] + list(range(0, m - 1)) + [-1, m - 1]
    nxt[HEAD] = 0 if m else TAIL
    prv[TAIL] = m - 1 if m else HEAD
    is_call = [e[1] == 0 for e in events]
    node_cid = [e[2] for e in events]
    ret_node = [-1] * n  # call id -> return node (or -1: returns "at infinity")
    for node, (_, kind, cid) in enumerate(events):
        if kind:
            ret_node[cid] = node
    node_ret = [ret_node[cid] if call else -1 for cid, call in zip(node_cid, is_call)]
    ro = model.read_only
    read_only = [ro(x) for x in inputs]
    remaining = sum(must)

    node_ro = [call and read_only[cid] for cid, call in zip(node_cid, is_call)] + [False, False]
    # Symmetry among optional calls: two calls with unknown outcome and the same input are
    # interchangeable, except that the one invoked earlier can go anywhere the later one can (its
    # real-time predecessors are a subset, and neither has a deadline). So any linearization can be
    # rewritten to use a prefix of each such group, in invocation order: an optional call is only
    # tried once its predecessor in its group is linearized. (Jepsen histories with many timed-out
    # writes of a few values shrink from 2^k subsets to k+1.)
    # Blind writes (the model's ``overwrites``: the new state does not depend on the old one):
    # an optional call immediately followed by a blind write has no effect anyone can observe,
    # so a linearization without it exists; the search never puts a blind write right after an
    # optional call (the branch that skips the optional call covers it).
    ow = model.overwrites
    blind = [ow(x) for x in inputs]
    prev_same = [-1] * n
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

    # The set of linearized calls, compressed (what makes long histories decidable): calls are
    # ranked in invocation order, separately for calls that must be linearized and for optional
    # ones, and each kind is kept as a count ``lo`` (every call of rank < lo is linearized) plus a
    # bitset ``win`` of the ranks from ``lo`` on. Linearizations follow real time closely, so the
    # window stays about as wide as the concurrency: memo entries are as small as the concurrency,
    # not as long as the history (a plain n-bit set makes every entry of a 200,000-op history 25 kB).
    # Optional calls (info/pending) that stay out pin only their own window, not the must window.
    rank = [0] * n
    n_must = n_opt = 0
    by_invocation = (range(n) if all(a <= b for a, b in zip(inv_pos, inv_pos[1:]))
                     else sorted(range(n), key=inv_pos.__getitem__))  # (position, call id) order
    for cid in by_invocation:
        if must[cid]:
            rank[cid] = n_must
            n_must += 1
        else:
            rank[cid] = n_opt
            n_opt += 1
    lo_m = win_m = lo_o = win_o = 0

    def grow(cid: int, lo_m: int, win_m: int, lo_o: int, win_o: int) -> tuple[int, int, int, int]:
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

    cache_cap = max_cache
    step = model.step
    # a model whose read-only calls are accepted exactly when their output equals the state (the
    # registers) lets the scan below compare instead of calling step
    read_eq = getattr(model, "read_is_equality", False)
    state = initial_state
    cache: set[tuple[Any, ...]] = set()
    # the lifted calls as a linked stack of (call node, state before it, lo_m, win_m, lo_o, win_o,
    # rest): pushing and popping allocate no lists, and remembering the deepest prefix is O(1)
    stack: Any = None
    depth = 0
    best_len = -1
    best: tuple[Any, Any, int] | None = None  # (lifted-call stack, state, stuck node)
    stuck_states: list[Any] = []
    explored = 0
    check_every = 2048
    countdown = check_every
    entry = nxt[HEAD]
    fresh = True  # at a configuration not yet scanned for read-only ops
    result: Any = True
    reason = ""

    # Read-only rule (sound pruning on top of Wing-Gong/Lowe): in a configuration where some
    # read-only op (it changes no state) is available -- its call precedes every pending return,
    # so all its real-time predecessors are linearized -- and the model accepts it, the
    # configuration is linearizable iff the one with that op linearized next is: take any
    # linearization of the rest, move the op to the front; the states along it are unchanged and
    # no real-time order is broken. So each new configuration is first scanned for such an op;
    # if one exists it is the only branch tried (a "forced" lift, undone together with its
    # parent on backtracking), and otherwise read-only ops are skipped (all were rejected here).
    while remaining:
        explored += 1
        countdown -= 1
        if not countdown:
            countdown = check_every
            if deadline is not None and time.perf_counter() > deadline:
                result = "unknown"
                reason = "time budget exhausted"
                break
            # bound the entries by memory as well as by count (an entry holds both windows)
            cache_cap = min(max_cache, CACHE_BYTES // (_ENTRY_OVERHEAD + (win_m.bit_length() + win_o.bit_length()) // 8))
            if len(cache) > cache_cap:
                result = "unknown"
                reason = f"cache limit of {cache_cap} configurations reached"
                break
        if fresh:
            fresh = False
            e = nxt[HEAD]
            while e != TAIL and is_call[e]:
                if node_ro[e]:
                    cid = node_cid[e]
                    if (outputs[cid] == state) if read_eq else step(state, inputs[cid], outputs[cid])[0]:
                        break
                e = nxt[e]
            else:
                e = -1
            if e >= 0:
                g = grow(cid, lo_m, win_m, lo_o, win_o)
                ck = (*g, state, not must[cid])
                if ck not in cache:
                    cache.add(ck)
                    stack = (e, state, lo_m, win_m, lo_o, win_o, stack)
                    depth += 1
                    lo_m, win_m, lo_o, win_o = g
                    if must[cid]:
                        remaining -= 1
                    p, q = prv[e], nxt[e]
                    nxt[p] = q
                    prv[q] = p
                    r = node_ret[e]
                    if r >= 0:
                        p, q = prv[r], nxt[r]
                        nxt[p] = q
                        prv[q] = p
                    fresh = True
                    continue
                entry = -1  # explored before and failed: so does this configuration
            else:
                entry = nxt[HEAD]
        if entry >= 0:
            if entry != TAIL and is_call[entry]:
                if node_ro[entry]:
                    entry = nxt[entry]
                    continue
                cid = node_cid[entry]
                ps = prev_same[cid]
                if (ps >= 0 and rank[ps] >= lo_o and not (win_o >> (rank[ps] - lo_o)) & 1) or (
                    blind[cid] and stack is not None and not must[node_cid[stack[0]]]
                ):
                    entry = nxt[entry]
                    continue
                ok, new_state = step(state, inputs[cid], outputs[cid])
                if ok:
                    g = grow(cid, lo_m, win_m, lo_o, win_o)
                    # the cache key carries whether this call is optional, because the search
                    # from a configuration depends on it (the blind-write rule above)
                    ck = (*g, new_state, not must[cid])
                    if ck not in cache:
                        cache.add(ck)
                        stack = (entry, state, lo_m, win_m, lo_o, win_o, stack)
                        depth += 1
                        state = new_state
                        lo_m, win_m, lo_o, win_o = g
                        if must[cid]:
                            remaining -= 1
                        # lift the call and its return out of the list
                        p, q = prv[entry], nxt[entry]
                        nxt[p] = q
                        prv[q] = p
                        r = node_ret[entry]
                        if r >= 0:
                            p, q = prv[r], nxt[r]
                            nxt[p] = q
                            prv[q] = p
                        fresh = True
                        continue
                entry = nxt[entry]
                continue
            # a return of an op not linearized yet (or the end of the list with ops left)
            if depth >= best_len:
                if depth > best_len:
                    best_len = depth
                    best = (stack, state, entry)
                    stuck_states = []
                if len(stuck_states) < _STATES_CAP and state not in stuck_states:
                    stuck_states.append(state)
        # backtrack; a forced (read-only) lift fails together with its parent configuration
        while True:
            if stack is None:
                result = False
                break
            entry, state, lo_m, win_m, lo_o, win_o, stack = stack
            depth -= 1
            cid = node_cid[entry]
            if must[cid]:
                remaining += 1
            r = node_ret[entry]
            if r >= 0:
                nxt[prv[r]] = r
                prv[nxt[r]] = r
            nxt[prv[entry]] = entry
            prv[nxt[entry]] = entry
            if not node_ro[entry]:
                break
        if result is False:
            break
        entry = nxt[entry]

    details: dict[str, Any] = {"explored": explored, "cache": len(cache), "calls": n}
    if result is True:
        return True, details
    if result == "unknown":
        details["reason"] = reason
        details["best_prefix"] = max(best_len, depth)
        return "unknown", details
    assert best is not None
    details["evidence"] = _evidence(model, calls, events, best, stuck_states)
    return False, details


def _evidence(
    model: Model,
    calls: Sequence[Call],
    events: list[tuple[int, int, int]],
    best: tuple[Any, Any, int],
    stuck_states: list[Any],
) -> dict[str, Any]:
    top, state, stuck = best
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
    return _build_evidence(
        model, calls.__getitem__, lambda cid: _call_json(model, calls[cid]), prefix, state, stuck_cid, candidates, stuck_states
    )


def _build_evidence(
    model: Model,
    call_of: Callable[[int], Call],
    call_json: Callable[[int], dict[str, Any]],
    prefix_ids: list[int],
    state: Any,
    stuck_id: int,
    candidate_ids: list[int],
    stuck_states: list[Any],
) -> dict[str, Any]:
    """The evidence of a failed search (module doc): the deepest linearized prefix (call ids, in
    order), the model state after it, the call whose return the search could not pass (-1: the
    end of the history), the calls that could have come next, and the distinct stuck states.
    ``call_of`` gives a call by id, ``call_json`` its :func:`_call_json`."""
    candidates = []
    for cid in candidate_ids:
        call = call_of(cid)
        ok, new_state = model.step(state, call.input, call.output)
        d = call_json(cid)
        d["accepted"] = ok
        if ok:
            d["state_after"] = model.describe(new_state)
        candidates.append(d)
    n = len(prefix_ids)
    evidence: dict[str, Any] = {
        "prefix_length": n,
        "linearized_prefix": [call_json(c) for c in prefix_ids[-_PREFIX_CAP:]],
        "state": model.describe(state),
        "state_value": model.state_json(state),
        "states": [model.describe(s) for s in stuck_states],
        "candidates": candidates,
    }
    if stuck_id >= 0:
        stuck_op = evidence["stuck_op"] = call_json(stuck_id)
        evidence["explanation"] = (
            f"after the {n} ops of linearized_prefix the model is in {model.describe(state)}; "
            f"op index {stuck_op['index']} must take effect before it "
            f"returned, but no order of the ops that could come next lets it"
        )
    else:
        evidence["explanation"] = (
            f"after the {n} ops of linearized_prefix the model is in {model.describe(state)}; "
            f"the remaining ops with observed outcomes cannot be linearized in any order"
        )
    return evidence


def _impossible_evidence(model: Model, impossible: list[tuple[Call, str]]) -> dict[str, Any]:
    call, why = impossible[0]
    return {
        "prefix_length": 0,
        "linearized_prefix": [],
        "state": None,
        "state_value": None,
        "states": [],
        "candidates": [],
        "stuck_op": _call_json(model, call),
        "impossible_ops": [dict(_call_json(model, c), reason=r) for c, r in impossible],
        "explanation": f"op index {call.operation.invoke.index} observed {why}: no order of the ops explains it",
    }


def _known_pairing(history_or_ops: Any) -> Pairing | None:
    """The pairing the history reader made of these ops, if it made one."""
    return history_or_ops.pairing if isinstance(history_or_ops, History) else None


def _pairing(history_or_ops: Any, raw: Sequence[Any]) -> Pairing | None:
    """Jepsen's pairing of a history's ops (the one the reader made, when it made one); None for
    operations paired already."""
    if raw and isinstance(raw[0], Operation):
        return None
    return _known_pairing(history_or_ops) or pairing_of(raw)


def _to_operations(ops: Sequence[Any], pairing: Pairing | None) -> tuple[list[Operation], list, int, int]:
    """(operations, structure errors, op count, nemesis ops) of a history's ops."""
    if pairing is None:
        return list(ops), [], len(ops), 0  # already paired
    operations, errors = pair_ops(ops, pairing)
    return operations, errors, len(ops), pairing.nemesis


def _kernel_check(
    ops: Sequence[Any], pairing: Pairing | None, m: Model, initial: Any, deadline: float | None, max_cache: int,
    info: dict[str, Any],
) -> tuple[Any, list] | None:
    """(verdict, anomalies) of a register history by the compiled search (spark_validation/
    _linkernel.c), filling ``info`` as the Python path does; ``None`` when the kernel is not built,
    is switched off (``KRAFT_COMPILED=off``), or declines the history (ops that do not pair up, a
    value that is not None/int/str, a key with too many calls): the Python path then decides it.
    ``pairing``: the reader's pairing of ``ops``, or None: the kernel pairs them by the compiled
    loop of the same rule (``ingest.pairing.pair``'s), with no Python loop."""
    if KERNEL is None or type(m) not in (RegisterModel, CasRegisterModel) or (ops and type(ops[0]) is not Op):
        return None
    if pairing is None and pair is pair_reference:  # no compiled pairing loop for the kernel to use
        pairing = pairing_of(ops)
    r = KERNEL.check_register_ops(
        ops, pairing, type(m) is CasRegisterModel, m.nil_reads == "knossos", initial,
        -1.0 if deadline is None else deadline, max_cache, CACHE_BYTES,
    )
    if r is None:
        return None
    (nemesis, failed, n_calls, n_parts, unchecked, inv_pos, comp_pos), parts = r
    info["nemesis_ops"] = nemesis
    info["failed_ops_dropped"] = failed
    info["calls"] = n_calls
    info["partitions"] = n_parts

    def call_of(cid: int) -> Call:  # the model's own call for the operation (one per register op)
        ip, cp = inv_pos[cid], comp_pos[cid]
        return m.calls_for(make_operation(ops[ip], ops[cp] if cp >= 0 else None, ip, cp if cp >= 0 else None))[0]

    def call_json(cid: int) -> dict[str, Any]:
        cp = comp_pos[cid]
        return _register_call_json(ops[inv_pos[cid]], ops[cp] if cp >= 0 else None)

    anomalies: list[dict[str, Any]] = []
    unknown: list[dict[str, Any]] = []
    explored = 0
    for key, verdict, steps, _cache, n_part, payload in parts:
        if verdict == 3:  # impossible reads: no search
            impossible = [(c, m.impossible_reason(c)) for c in map(call_of, payload)]
            anomalies.append(
                {"kind": "nonlinearizable", "key": to_jsonable(key), "evidence": _impossible_evidence(m, impossible)}
            )
            continue
        explored += steps
        if verdict == 0:
            evidence = _build_evidence(m, call_of, call_json, *payload)
            anomalies.append({"kind": "nonlinearizable", "key": to_jsonable(key), "evidence": evidence})
        elif verdict == 2:
            reason, best_prefix = payload
            unknown.append(
                {"key": to_jsonable(key), "reason": reason, "calls": n_part, "best_prefix": best_prefix, "explored": steps}
            )
    if unchecked:
        info["unchecked_partitions"] = unchecked
    info["explored"] = explored
    if unknown:
        info["unknown_partitions"] = unknown
    if anomalies:
        return False, anomalies
    return ("unknown", []) if unknown else (True, [])


def check_history(
    history_or_ops: History | Sequence[Op] | Sequence[Operation],
    model: str | Model | None = None,
    *,
    initial: Any = None,
    budget_seconds: float | None = None,
    max_cache: int = DEFAULT_MAX_CACHE,
    nil_reads: str | None = "auto",
    history_id: str | None = None,
) -> LinResult:
    """Is the history linearizable with respect to ``model``?

    ``model`` defaults to the history's own model. ``initial`` defaults to the history's initial
    value (from its header or model file), else the model's default. ``budget_seconds`` bounds the
    whole check; ``max_cache`` bounds memoised configurations per partition. Never raises for bad
    input: a malformed history (ops that do not pair up), an unknown model or an op the model
    cannot interpret give ``valid = "unknown"`` with ``info["error"]``.

    ``nil_reads`` is ``"knossos"``, ``"strict"`` or ``"auto"`` (:func:`default_nil_reads` of the
    history's path or ``history_id``: Knossos's semantics for ``.edn`` files).
    """
    t0 = time.perf_counter()
    deadline = t0 + budget_seconds if budget_seconds is not None else None
    if isinstance(history_or_ops, History):
        raw: Sequence[Any] = history_or_ops.ops
        h_model, h_initial = history_or_ops.model, history_or_ops.initial
    else:
        raw = history_or_ops if isinstance(history_or_ops, list) else list(history_or_ops)
        h_model = h_initial = None
    info: dict[str, Any] = {"nemesis_ops": 0}
    if isinstance(history_or_ops, History):
        info["history"] = history_or_ops.id
        if history_or_ops.malformed:
            info["malformed_lines"] = len(history_or_ops.malformed)
            info["scope"] = "verdict covers the readable ops only"

    n_ops = len(raw)

    def done(valid: Any, anomalies: list | None = None) -> LinResult:
        return LinResult(valid, n_ops, time.perf_counter() - t0, anomalies or [], info)

    model = model if model is not None else h_model
    if model is None:
        info["error"] = "no model given and the history names none"
        return done("unknown")
    try:
        m = get_model(model)
    except KeyError as exc:
        info["error"] = str(exc.args[0])
        return done("unknown")
    if history_id is None and isinstance(history_or_ops, History):
        history_id = history_or_ops.path or history_or_ops.id
    try:
        mode = default_nil_reads(history_id, nil_reads)
    except ValueError as exc:
        info["error"] = str(exc)
        return done("unknown")
    m = with_nil_reads(m, mode)
    info["model"] = m.name
    if hasattr(m, "nil_reads"):
        info["nil_reads"] = mode
    if initial is None:
        initial = h_initial
    fast = _kernel_check(raw, _known_pairing(history_or_ops), m, initial, deadline, max_cache, info)
    if fast is not None:
        return done(*fast)
    operations, errors, n_ops, info["nemesis_ops"] = _to_operations(raw, _pairing(history_or_ops, raw))
    if errors:
        info["error"] = "malformed history: operations do not pair up"
        info["structure_errors"] = [e.to_dict() for e in errors]
        return done("unknown")
    live = [o for o in operations if o.complete is None or o.complete.type != "fail"]
    info["failed_ops_dropped"] = len(operations) - len(live)
    try:
        calls = m.calls(live)
    except ModelError as exc:
        info["error"] = str(exc)
        return done("unknown")
    except (TypeError, ValueError) as exc:
        info["error"] = f"model {m.name} cannot read these ops: {type(exc).__name__}: {exc}"
        return done("unknown")
    info["calls"] = len(calls)
    parts = m.partition(calls)
    info["partitions"] = len(parts)
    anomalies: list[dict[str, Any]] = []
    unknown: list[dict[str, Any]] = []
    explored = 0
    for done_parts, (key, part) in enumerate(parts, 1):
        try:
            init_state = freeze(m.init(initial, key))
            impossible = m.impossible(part, init_state)
        except Exception as exc:
            info["error"] = f"model {m.name} failed on key {key!r}: {type(exc).__name__}: {exc}"
            return done("unknown")
        if impossible:
            # an observed value no op in this partition could have produced: no order can explain
            # it, so the search (which would have to exhaust every order first) is skipped
            anomalies.append(
                {"kind": "nonlinearizable", "key": to_jsonable(key), "evidence": _impossible_evidence(m, impossible)}
            )
            continue
        try:
            verdict, details = check_calls(m, part, init_state, deadline=deadline, max_cache=max_cache)
        except Exception as exc:  # a model that cannot handle some value: no verdict, no traceback
            info["error"] = f"model {m.name} failed on key {key!r}: {type(exc).__name__}: {exc}"
            return done("unknown")
        explored += details["explored"]
        if verdict is False:
            anomalies.append({"kind": "nonlinearizable", "key": to_jsonable(key), "evidence": details["evidence"]})
        elif verdict == "unknown":
            unknown.append(
                {
                    "key": to_jsonable(key),
                    "reason": details["reason"],
                    "calls": details["calls"],
                    "best_prefix": details["best_prefix"],
                    "explored": details["explored"],
                }
            )
            if deadline is not None and time.perf_counter() > deadline:
                info["unchecked_partitions"] = len(parts) - done_parts
                break
    info["explored"] = explored
    if unknown:
        info["unknown_partitions"] = unknown
    if anomalies:
        return done(False, anomalies)
    if unknown:
        return done("unknown")
    return done(True)


# --------------------------------------------------------------------------------------------
# command line: python -m spark_validation.linearizability HISTORY_OR_DIR ...


def render(result: LinResult, history: History | None = None, *, context: int = 6) -> str:
    """A human-readable report of one result: verdict line, then per anomaly the explanation,
    the tail of the linearized prefix, the op it got stuck on and the candidates."""
    name = history.id if history is not None else "<ops>"
    verdict = {True: "linearizable", False: "NOT linearizable"}.get(result.valid, "unknown")  # type: ignore[call-overload]
    lines = [
        f"{name}: {verdict} ({result.info.get('model', '?')}, {result.ops} ops, "
        f"{result.info.get('partitions', 0)} partition(s), {result.seconds * 1e3:.1f} ms)"
    ]
    if "error" in result.info:
        lines.append(f"  error: {result.info['error']}")
        for e in result.info.get("structure_errors", [])[:context]:
            lines.append(f"    op index {e['index']} (process {e['process']}): {e['reason']}")
    for u in result.info.get("unknown_partitions", []):
        lines.append(
            f"  key {u['key']!r}: undecided ({u['reason']}; {u['explored']} steps, deepest prefix "
            f"{u['best_prefix']} of {u['calls']} calls)"
        )
    for a in result.anomalies:
        ev = a["evidence"]
        lines.append(f"  key {a['key']!r}: {ev['explanation']}")
        prefix = ev["linearized_prefix"]
        if prefix:
            shown = prefix[-context:]
            lines.append(f"    linearized prefix ({ev['prefix_length']} ops; last {len(shown)}):")
            for p in shown:
                lines.append(f"      #{p['index']:<6} p{p['process']!s:<4} {p['call']}")
        if ev.get("state") is not None:
            lines.append(f"    state then: {ev['state']}" + (f"  (all stuck states: {', '.join(ev['states'])})" if len(ev["states"]) > 1 else ""))
        so = ev.get("stuck_op")
        if so:
            lines.append(f"    stuck on: #{so['index']} p{so['process']} {so['call']}")
        for c in ev["candidates"][:context]:
            mark = "accepted, dead end later" if c["accepted"] else "rejected"
            lines.append(f"      could come next: #{c['index']} p{c['process']} {c['call']}: {mark}")
        for c in ev.get("impossible_ops", [])[:context]:
            lines.append(f"      #{c['index']} p{c['process']} {c['call']}: {c['reason']}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Check history files or directories; print a report per history and a JSON summary line.

    Exit code: 0 all linearizable, 1 some history is not, 2 bad input or undecided (unknown).
    """
    ap = argparse.ArgumentParser(
        prog="python -m spark_validation.linearizability",
        description="Linearizability check of Jepsen/kraft histories (no Spark).",
    )
    ap.add_argument("paths", nargs="+", help="history files or directories")
    ap.add_argument("--model", help="model when a file names none (register, cas-register, kv, set, append-log)")
    ap.add_argument("--budget", type=float, default=None, help="seconds per history before 'unknown'")
    ap.add_argument("--json", action="store_true", help="print one JSON result per line instead")
    ap.add_argument("--nil-reads", choices=("auto", *NIL_READS), default="auto",
                    help="a read of nil: knossos = unknown value (Knossos), strict = the value nil; "
                         "auto = knossos for .edn files, strict otherwise")
    args = ap.parse_args(argv)
    scan = iter_corpus(args.paths, default_model=args.model)
    counts = {"valid": 0, "invalid": 0, "unknown": 0}
    for h in scan:
        r = check_history(h, budget_seconds=args.budget, nil_reads=args.nil_reads)
        counts[{True: "valid", False: "invalid"}.get(r.valid, "unknown")] += 1  # type: ignore[call-overload]
        if args.json:
            print(json.dumps({"history": h.id, **r.to_dict()}))
        else:
            print(render(r, h))
            if h.malformed:
                print(f"  {len(h.malformed)} malformed line(s), first: line {h.malformed[0].line}: {h.malformed[0].reason}")
    for s in scan.skipped:
        print(f"skipped {s.path}: {s.reason}", file=sys.stderr)
    summary = {**counts, "read": scan.read, "skipped": len(scan.skipped)}
    print(json.dumps({"summary": summary}) if args.json else f"summary: {summary}")
    if counts["invalid"]:
        return 1
    if counts["unknown"] or scan.skipped or scan.read == 0:
        return 2
    return 0


if __name__ == "__main__":
    from kraft.interrupt import guard

    with guard("python -m spark_validation.linearizability"):
        raise SystemExit(main())
