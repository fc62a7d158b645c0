"""The register check of a whole history, in the form the compiled search takes it.

:func:`check_register_ops` is what ``spark_validation/_linkernel.c`` computes, written with the
pieces the general check uses (Jepsen's pairing, :meth:`RegisterModel.calls`, the partition by
key, the impossible-read pre-check, :func:`.search.check_calls`), so the result the compiled
search must give is defined here. It takes the common case only -- a pairing without problems, values
and keys that are ``None``, ``int`` or ``str``, no partition longer than :data:`MAX_PART` calls --
and returns ``None`` for anything else: the general check then decides, with its errors.

The result is ``(header, parts)``: ``header`` is ``(nemesis ops, failed ops dropped, calls,
partitions, partitions left unchecked, invocation position per call, completion position per call
(-1: none))``; each part is ``(key, verdict, steps, cache size, calls, payload)`` in partition
order, call ids indexing the header's positions. Verdicts and payloads:

* :data:`IMPOSSIBLE`: the reads whose values nobody wrote (call ids), no search;
* :data:`LINEARIZABLE`: ``None``;
* :data:`NOT_LINEARIZABLE`: ``(prefix, state, stuck call or -1, candidates, stuck states)``,
  :class:`.search.Stuck` in call ids;
* :data:`UNDECIDED`: ``(reason, deepest prefix)``; a search stopped by the clock leaves the
  partitions after it unchecked.
"""

from __future__ import annotations

import time
from typing import Any, Sequence

from spark_validation.checks.linearizable.models import (
    CAS,
    UNKNOWN,
    CasRegisterModel,
    Call,
    RegisterModel,
    with_nil_reads,
)
from spark_validation.checks.linearizable.search import Search, check_calls
from spark_validation.ingest.history import Op, make_operation
from spark_validation.ingest.pairing import Pairing, pair

MAX_PART = 2048
"""Calls of one key the compiled search takes (its configurations are plain bitsets)."""

NOT_LINEARIZABLE, LINEARIZABLE, UNDECIDED, IMPOSSIBLE = 0, 1, 2, 3

_ATOM = frozenset((type(None), int, str))


def check_register_ops(
    ops: Sequence[Op], pairing: Pairing | None, cas: bool, knossos_nil: bool, initial: Any,
    deadline: float, max_cache: int, cache_bytes: int,
) -> tuple[tuple, list] | None:
    """The register (``cas``: cas-register) check of ``ops`` paired by ``pairing`` (None: by
    :func:`.pairing.pair`), reading a ``nil`` read as Knossos does when ``knossos_nil``; the
    search stops at ``deadline`` (``time.perf_counter()``; negative: never) or when its cache
    passes ``max_cache`` entries or ``cache_bytes``. Module doc: the result, or None."""
    p = pairing if pairing is not None else pair(ops)
    if p.problems or type(initial) not in _ATOM:
        return None
    model = with_nil_reads(CasRegisterModel() if cas else RegisterModel(), "knossos" if knossos_nil else "strict")
    operations = [make_operation(ops[i], ops[c] if c >= 0 else None, i, c if c >= 0 else None)
                  for i, c in zip(p.invokes, p.completions)]
    live = [o for o in operations if o.complete is None or o.complete.type != "fail"]
    try:
        calls = model.calls(live)
    except (TypeError, ValueError):  # an f the model does not have, a cas value that is not a pair
        return None
    if not _atomic(calls):
        return None
    parts = model.partition(calls)
    if any(len(part) > MAX_PART for _, part in parts):
        return None
    ids = {id(c): cid for cid, c in enumerate(calls)}
    out, unchecked = _check_parts(model, parts, ids, initial, None if deadline < 0 else deadline, max_cache,
                                  cache_bytes)
    header = (p.nemesis, len(operations) - len(live), len(calls), len(parts), unchecked,
              [c.operation.invoke_pos for c in calls],
              [-1 if c.operation.complete_pos is None else c.operation.complete_pos for c in calls])
    return header, out


def _atomic(calls: list[Call]) -> bool:
    """Whether every key, argument and observed output is ``None``, an ``int`` or a ``str``."""
    for c in calls:
        f, arg = c.input
        if type(c.key) not in _ATOM or (type(c.output) not in _ATOM and c.output is not UNKNOWN):
            return False
        if (type(arg[0]) not in _ATOM or type(arg[1]) not in _ATOM) if f == CAS else type(arg) not in _ATOM:
            return False
    return True


def _check_parts(
    model: RegisterModel, parts: list[tuple[Any, list[Call]]], ids: dict[int, int], initial: Any,
    deadline: float | None, max_cache: int, cache_bytes: int,
) -> tuple[list, int]:
    """The parts of the result (module doc), and how many partitions the clock left unchecked."""
    out = []
    for done, (key, part) in enumerate(parts, 1):
        gid = [ids[id(c)] for c in part]
        impossible = model.impossible(part, initial)
        if impossible:
            out.append((key, IMPOSSIBLE, 0, 0, len(part), [ids[id(c)] for c, _ in impossible]))
            continue
        s = check_calls(model, part, initial, deadline=deadline, max_cache=max_cache, cache_bytes=cache_bytes)
        out.append((key, _VERDICT[s.valid], s.explored, s.cache, len(part), _payload(s, gid)))
        if s.valid == "unknown" and deadline is not None and time.perf_counter() > deadline:
            return out, len(parts) - done
    return out, 0


_VERDICT = {True: LINEARIZABLE, False: NOT_LINEARIZABLE, "unknown": UNDECIDED}


def _payload(s: Search, gid: list[int]) -> Any:
    if s.valid is True:
        return None
    if s.stuck is None:
        return s.reason, s.best_prefix
    st = s.stuck
    return ([gid[c] for c in st.prefix], st.state, gid[st.stuck] if st.stuck >= 0 else -1,
            [gid[c] for c in st.candidates], st.states)
