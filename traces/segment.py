"""Cutting a long trace into segments that TLC checks independently (and in parallel).

A segment starts from the full state logged by the step before its cut: the trace module pins
``TrInit`` to that state (``traces.generate``: a *pinned* trace), so TLC judges every step of every
segment, and the segments' verdicts together are the whole trace's verdict. That holds only where
the logged state *is* the spec's full state. A cut is therefore allowed only

* after a step that logs every variable the glue knows, and
* in a spec whose other variables are all *bound counters*: variables read only in a bound
  ``x < MaxX`` (or ``<=``) whose constant the glue sets to at least ``BOUND`` (far above any trace),
  written only by ``x' = <expression over x>``, and set to ``0`` in ``Init``. A counter's value
  then changes nothing a trace can do, so a segment starts it at ``0``.

:func:`cut_counters` decides the second condition from the spec's text, conservatively: any
other occurrence of an unlogged variable (a ghost read by a guard, a counter compared with
anything but a big bound) makes the spec uncuttable, and its traces are checked whole.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

import attrs

from traces.protocols import Glue, GlueError, declared_variables, spec_text
from traces.tla import RenderError, naming

if TYPE_CHECKING:
    from traces.check import Prepared

BOUND = 1_000_000  # a counter's bound must be set at least this high for a cut to reset it
_CUTS: dict[tuple[str, str], tuple[dict[str, str] | None, str]] = {}


def _strip_unchanged(text: str) -> str:
    """Drop the VARIABLES declaration, ``UNCHANGED <<...>>`` and definitions that only list variables (``vars == <<a, b>>``):
    naming a variable there reads nothing."""
    text = re.sub(r"^VARIABLES?\b.*?(?=^\S)", "\n", text, flags=re.S | re.M)
    text = re.sub(r"UNCHANGED\s*<<[^>]*>>", " ", text)
    text = re.sub(r"UNCHANGED\s+[A-Za-z_]\w*", " ", text)
    return re.sub(r"^[A-Za-z_]\w*\s*==\s*<<[\w\s,]*>>", " ", text, flags=re.M)


def _definition(text: str, name: str) -> tuple[int, int]:
    """Where the top-level definition ``name == ...`` starts and ends in ``text`` ((0, 0) if absent)."""
    m = re.search(rf"^{name}\s*==", text, flags=re.M)
    if not m:
        return 0, 0
    nxt = re.search(r"^[A-Za-z_]\w*(\([^)]*\))?\s*==|^-{4,}|^={4,}", text[m.end():], flags=re.M)
    return m.start(), (m.end() + nxt.start()) if nxt else len(text)


def _line_at(text: str, at: int) -> str:
    return text[text.rfind("\n", 0, at) + 1:text.find("\n", at)].strip()[:120]


def counter_problem(text: str, var: str, constants: dict[str, str]) -> str | None:
    """Why ``var`` is not a bound counter of the spec ``text`` (comments removed), or None."""
    body = _strip_unchanged(text)
    lo, hi = _definition(body, "Init")
    if not re.search(rf"\b{var}\s*=\s*0\b", body[lo:hi]):
        return f"{var} is not set to 0 in Init"
    for m in re.finditer(rf"\b{var}'", body):
        if not re.match(r"\s*=[^=]", body[m.end():]):
            return f"{var}' is read: {_line_at(body, m.start())}"
    for m in re.finditer(rf"\b{var}\b(?!\s*')", body):
        at = m.start()
        if lo <= at < hi:
            continue
        before = body[body.rfind("\n", 0, at) + 1:at]
        if re.search(rf"\b{var}'\s*=(?:(?!/\\).)*$", before):  # right of var' = ..., same conjunct
            continue
        bound = re.match(rf"{var}\s*<=?\s*([A-Za-z_]\w*)", body[at:])
        if bound is None:
            return f"{var} is read outside a bound: {_line_at(body, at)}"
        value = constants.get(bound.group(1), "")
        if not (value.isdigit() and int(value) >= BOUND):
            return f"{var} is bounded by {bound.group(1)} = {value or '?'}, not set far above any trace"
    return None


def cut_counters(glue: Glue, constants: dict[str, str]) -> tuple[dict[str, str] | None, str]:
    """The values a cut gives the spec variables the glue does not log (``{counter: "0"}``), or
    None and the reason when some unlogged variable is not a bound counter."""
    key = (glue.protocol, repr(sorted(constants.items())))
    if key not in _CUTS:
        _CUTS[key] = _cut_counters(glue, constants)
    return _CUTS[key]


def _cut_counters(glue: Glue, constants: dict[str, str]) -> tuple[dict[str, str] | None, str]:
    try:
        text = spec_text(glue)
        unlogged = [v for v in declared_variables(glue) if v not in glue.variables]
    except GlueError as exc:
        return None, str(exc)
    for v in unlogged:
        why = counter_problem(text, v, constants)
        if why is not None:
            return None, f"spec {glue.module}: {why}"
    return {v: "0" for v in unlogged}, ""


@attrs.frozen
class Cut:
    """Where a trace is cut: before event ``event`` (index into ``Prepared.events``), which is
    micro-step ``micro`` (index into ``Prepared.micros``)."""

    event: int
    micro: int


def plan_cuts(p: Prepared, size: int) -> list[Cut]:
    """Cuts about every ``size`` events, each after a step that logs every variable the glue knows
    (moved forward to the next such step when needed); no cut leaves a segment shorter than
    ``size // 2``."""
    n = len(p.events)
    if size <= 0 or n < 2 * size:
        return []
    need = set(p.glue.variables)
    first_micro: dict[int, int] = {}
    for j, m in enumerate(p.micros):
        first_micro.setdefault(m.line, j)
    cuts: list[Cut] = []
    i = size
    while i <= n - size // 2:
        while i < n and not need <= set(p.events[i - 1].state):
            i += 1
        if i > n - size // 2:
            break
        cuts.append(Cut(i, first_micro[p.events[i].line]))
        i += size
    return cuts


def segments(p: Prepared, size: int) -> list[Prepared]:
    """The segments of ``p`` (each a pinned ``Prepared``), or ``[]`` when ``p`` is not cut: it is
    short, its spec has unlogged variables other than bound counters, or no step logs them all."""
    counters, _ = cut_counters(p.glue, p.constants)
    if counters is None:
        return []
    cuts = plan_cuts(p, size)
    if not cuts:
        return []
    out = [attrs.evolve(p, micros=p.micros[:cuts[0].micro], events=p.events[:cuts[0].event], stop=None)]
    for k, c in enumerate(cuts):
        end = cuts[k + 1] if k + 1 < len(cuts) else Cut(len(p.events), len(p.micros))
        pinned = _pinned_state(p, p.events[c.event - 1].state, counters)
        if pinned is None:
            return []
        init, names = pinned
        out.append(attrs.evolve(p, micros=p.micros[c.micro:end.micro], events=p.events[c.event:end.event],
                                init=init, stop=None, names={**p.names, **names}, pinned=True))
    return out


def _pinned_state(p: Prepared, state: dict[str, Any], counters: dict[str, str]
                  ) -> tuple[dict[str, str], dict[str, str]] | None:
    try:
        with naming() as names:
            init = p.glue.render_state(state, f"{p.trace.path}: cut state")
    except (GlueError, RenderError):
        return None
    return {**init, **counters}, names
