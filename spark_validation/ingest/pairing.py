"""Jepsen's invoke/complete pairing rule: the one place the audit writes it.

A history is a sequence of events; each client operation is an ``invoke`` followed later by its
completion (``ok``, ``fail`` or ``info``) from the same process. Jepsen pairs them by process:
an invocation's completion is the next event of the same process (``jepsen.history``'s
``pair-index``, knossos's ``history/pair-index`` before it). The rule, as every reader, check and
the Spark path of the audit apply it (they all call :func:`pair`):

* the nemesis (``"nemesis"``, Jepsen's ``:nemesis``) is no client: its events are counted and
  skipped; every other process is a client (an integer or not);
* per client process, invocations and completions alternate, starting with an invocation. A
  completion with no open invocation (:data:`UNOPENED`) or a second invocation while one is open
  (:data:`REINVOKED`, the new one then replaces it) is a problem;
* a completion has its invocation's ``f`` (:data:`F_MISMATCH` otherwise; the two are paired
  anyway);
* an ``info`` completion closes its invocation like the others (Jepsen then moves on to a new
  process id, but reusing one is no error); an invocation never completed stays open to the end.

The rule is written here once, in :func:`pair_reference`; :func:`pair` runs it, or its compiled
loop (spark_validation/_rowkernel.c, ``pair_events``) where the install built it, held to it by a
differential test.

A history with any problem is not checked: the checks refuse to guess (verdict ``"unknown"``),
and :func:`describe` gives the reason the results and the malformed list show.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable

import attrs

from spark_validation.ingest.native import built, extension

_compiled_pair = getattr(built("_rowkernel"), "pair_events", None)
"""The compiled loop of :func:`pair_reference` where the install built it (``_rowkernel``), else None."""

NEMESIS = "nemesis"

REINVOKED = "reinvoked"
"""An invocation by a process whose previous invocation is still open."""
UNOPENED = "unopened"
"""A completion by a process with no open invocation."""
F_MISMATCH = "f-mismatch"
"""A completion whose ``f`` is not its invocation's."""


@attrs.frozen
class Problem:
    """An event that breaks the rule: its place in the history, what is wrong (:data:`REINVOKED`,
    :data:`UNOPENED`, :data:`F_MISMATCH`) and the invocation concerned (its number in
    ``Pairing.invokes``; -1 for :data:`UNOPENED`)."""

    position: int
    kind: str
    invocation: int


@attrs.frozen
class Pairing:
    """The client operations of a history: ``invokes[j]`` is the place of the ``j``-th client
    invocation in the history, ``completions[j]`` the place of its completion (-1: it never
    completed). ``problems`` are in history order; ``nemesis`` counts the nemesis's events."""

    invokes: list[int]
    completions: list[int]
    problems: list[Problem]
    nemesis: int


def pair_reference(events: Iterable[Any], *, first_only: bool = False) -> Pairing:
    """Pair a history's events, given in history order as ``(process, type, f)`` tuples or as ops
    with those attributes (see the module doc). With ``first_only`` it stops at the first problem
    (the rest of the pairing is then partial). :func:`pair` is this function, or its compiled loop
    where the install built it."""
    open_: dict[Any, int] = {}
    invokes: list[int] = []
    completions: list[int] = []
    inv_f: list[Any] = []
    problems: list[Problem] = []
    nemesis = 0
    for pos, ev in enumerate(events):
        process, type_, f = ev if type(ev) is tuple else (ev.process, ev.type, ev.f)
        if type(process) is not int and process == NEMESIS:  # (an int is never the nemesis)
            nemesis += 1
            continue
        if type_ == "invoke":
            j = open_.get(process)
            if j is not None:
                problems.append(Problem(pos, REINVOKED, j))
                if first_only:
                    break
            open_[process] = len(invokes)
            invokes.append(pos)
            completions.append(-1)
            inv_f.append(f)
            continue
        j = open_.pop(process, None)
        if j is None:
            problems.append(Problem(pos, UNOPENED, -1))
            if first_only:
                break
            continue
        if inv_f[j] != f:
            problems.append(Problem(pos, F_MISMATCH, j))
            if first_only:
                break
        completions[j] = pos
    return Pairing(invokes, completions, problems, nemesis)


def describe(kind: str, process: Any, index: Any, type_: str, f: Any, inv_index: Any, inv_f: Any) -> str:
    """The reason a problem of ``kind`` gives, from the event (``process``, ``index``, ``type_``,
    ``f``) and the invocation concerned (``inv_index``, ``inv_f``; unused for :data:`UNOPENED`)."""
    if kind == REINVOKED:
        return f"process {process} invoked op index {index} while its op index {inv_index} is still open"
    if kind == UNOPENED:
        return f"{type_} completion (f={f!r}) of process {process} has no open invocation"
    return f"completion f={f!r} does not match its invocation's f={inv_f!r} (invocation index {inv_index})"


_KINDS = (REINVOKED, UNOPENED, F_MISMATCH)  # the problem codes of _rowkernel.pair_events


def _pair_compiled(events: Iterable[Any], *, first_only: bool = False) -> Pairing:
    """:func:`pair_reference` by its compiled loop (spark_validation/_rowkernel.c), with the same
    result (``tests/spark_validation/test_pairing.py`` compares them)."""
    invokes, completions, problems, nemesis = _compiled_pair(events, first_only)
    return Pairing(invokes, completions, [Problem(pos, _KINDS[code], j) for pos, code, j in problems], nemesis)


pair: Callable[..., Pairing] = pair_reference if extension("_rowkernel") is None else _pair_compiled
"""Jepsen's pairing of a history's events (:func:`pair_reference`'s contract): the compiled loop
where the install built it and ``KRAFT_COMPILED=off`` does not switch it off, else the reference."""
