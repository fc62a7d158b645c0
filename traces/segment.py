"""Cutting a long trace into segments that TLC checks independently (and in parallel).

A segment starts from the full state logged by the step before its cut: the trace module pins
``TrInit`` to that state (``traces.generate``: a *pinned* trace), so TLC judges every step of every
segment, and the segments' verdicts together are the whole trace's verdict. That holds only where
the pinned state *is* the spec's full state. A cut is therefore allowed only

* after a step that logs every variable the glue knows, and
* in a spec whose other variables are each either

  - *derived* by the glue (``Glue.ghosts``) from the logged steps before the cut. The derived value
    is a claim, not a fact: the segment that ends at the cut also checks it against the spec's own
    value after its last step, so a wrong derivation rejects that segment (and the trace is then
    checked whole), never pins a state the spec cannot reach; or
  - *bound counters* or *write-only ghosts*: variables read only in a bound ``x < MaxX`` (or
    ``<=``) whose constant the glue sets to at least ``BOUND`` (far above any trace), written only
    by ``x' = <expression over x>``, and set to ``0``, ``{}`` or ``<<>>`` in ``Init``. Such a
    variable's value changes nothing a trace can do, so a segment starts it at its ``Init`` value.

:func:`cut_counters` decides the second condition from the spec's text, conservatively: any other
occurrence of an unlogged, underived variable (a ghost read by a guard, a counter compared with
anything but a big bound) makes the spec uncuttable, and its traces are checked whole. Only the
text a trace step can evaluate is read: the spec up to the end of ``Next`` and of every operator
the glue's templates call (TLA+ defines before use, so nothing later is reachable from them) and
the templates themselves; ``Init`` is replaced by the pinned state, and the properties and type
invariants that follow ``Next`` are never evaluated by the trace spec.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

import attrs

from traces.protocols import Glue, GlueError, declared_variables, spec_text
from traces.tla import NAME_RE, RenderError, naming

if TYPE_CHECKING:
    from traces.check import Prepared
    from traces.generate import Micro

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
    m = re.search(rf"^{name}(\([^)]*\))?\s*==", text, flags=re.M)
    if not m:
        return 0, 0
    nxt = re.search(r"^[A-Za-z_]\w*(\([^)]*\))?\s*==|^-{4,}|^={4,}", text[m.end():], flags=re.M)
    return m.start(), (m.end() + nxt.start()) if nxt else len(text)


def _line_at(text: str, at: int) -> str:
    return text[text.rfind("\n", 0, at) + 1:text.find("\n", at)].strip()[:120]


_EMPTY = r"(0\b|\{\s*\}|<<\s*>>)"  # the Init values a counter or write-only ghost may start from


def initial_value(text: str, var: str) -> str | None:
    """The value ``Init`` gives ``var`` in the spec ``text`` when it is ``0``, ``{}`` or ``<<>>``."""
    lo, hi = _definition(text, "Init")
    m = re.search(rf"\b{var}\s*=\s*{_EMPTY}", text[lo:hi])
    return re.sub(r"\s+", "", m.group(1)) if m else None


def counter_problem(text: str, var: str, constants: dict[str, str]) -> str | None:
    """Why ``var`` is not a bound counter or a write-only ghost of the spec ``text`` (comments
    removed), or None."""
    body = _strip_unchanged(text)
    lo, hi = _definition(body, "Init")
    if initial_value(body, var) is None:
        return f"{var} is not set to 0 in Init (nor to {{}} or <<>>)"
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


def action_text(glue: Glue) -> str:
    """What a trace step of ``glue`` can evaluate: the spec text (comments removed) up to the end
    of ``Next``, of every top-level operator the templates name and of every ``RECURSIVE`` one,
    then the templates."""
    text = spec_text(glue)
    templates = "\n".join(glue.templates.values())
    names = {"Init", "Next"} | set(re.findall(r"[A-Za-z_]\w*", templates))
    names |= set(re.findall(r"^RECURSIVE\s+([A-Za-z_]\w*)", text, flags=re.M))  # may be defined after use
    end = 0
    for name in names:
        end = max(end, _definition(text, name)[1])
    return text[:end] + "\n" + templates


def cut_counters(glue: Glue, constants: dict[str, str]) -> tuple[dict[str, str] | None, str]:
    """The values a cut gives the spec variables the glue neither logs nor derives (their
    ``Init`` values), or None and the reason when one of them is not a bound counter or a
    write-only ghost."""
    key = (glue.protocol, repr(sorted(constants.items())))
    if key not in _CUTS:
        _CUTS[key] = _cut_counters(glue, constants)
    return _CUTS[key]


def _cut_counters(glue: Glue, constants: dict[str, str]) -> tuple[dict[str, str] | None, str]:
    try:
        text = action_text(glue)
        unlogged = [v for v in declared_variables(glue) if v not in glue.variables and v not in glue.ghosts]
    except GlueError as exc:
        return None, str(exc)
    out: dict[str, str] = {}
    for v in unlogged:
        why = counter_problem(text, v, constants)
        if why is not None:
            return None, f"spec {glue.module}: {why}"
        out[v] = initial_value(_strip_unchanged(text), v) or "0"
    return out, ""


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
    """The segments of ``p`` (each but the first a pinned ``Prepared``), or ``[]`` when ``p`` is
    not cut: it is short, its spec has unlogged variables the glue does not derive other than
    bound counters, no step logs every variable, or a state at a cut cannot be rendered."""
    counters, _ = cut_counters(p.glue, p.constants)
    if counters is None:
        return []
    cuts = plan_cuts(p, size)
    if not cuts:
        return []
    ghosts = _ghosts_at(p, cuts)
    if ghosts is None:
        return []
    bounds = [Cut(0, 0), *cuts, Cut(len(p.events), len(p.micros))]
    out: list[Prepared] = []
    for k in range(len(bounds) - 1):
        start, end = bounds[k], bounds[k + 1]
        micros = p.micros[start.micro:end.micro]
        if k < len(cuts):
            micros[-1] = _claiming(micros[-1], ghosts[k])
        if k == 0:
            out.append(attrs.evolve(p, micros=micros, events=p.events[:end.event], stop=None,
                                    names=_used(p.names, micros, {})))
            continue
        pinned = _pinned_state(p, p.events[start.event - 1].state, {**counters, **ghosts[k - 1]})
        if pinned is None:
            return []
        init, names = pinned
        out.append(attrs.evolve(p, micros=micros, events=p.events[start.event:end.event], init=init, stop=None,
                                names=_used({**p.names, **names}, micros, init), pinned=True))
    return out


def _used(names: dict[str, str], micros: list[Micro], init: dict[str, str]) -> dict[str, str]:
    """The named values a segment's module must define: those its records and initial state use
    (and those their definitions use)."""
    used = set(NAME_RE.findall(" ".join(init.values())))
    for m in micros:
        used.update(NAME_RE.findall(" ".join(m.params)))
        if m.check:
            used.update(NAME_RE.findall(" ".join(m.check.values())))
    todo = list(used)
    while todo:
        for n in NAME_RE.findall(names.get(todo.pop(), "")):
            if n not in used:
                used.add(n)
                todo.append(n)
    return {k: v for k, v in names.items() if k in used}


def _ghosts_at(p: Prepared, cuts: list[Cut]) -> list[dict[str, str]] | None:
    """The glue's derived ghost values at each cut, rendered (None if they cannot be derived)."""
    if not p.glue.ghosts:
        return [{} for _ in cuts]
    ops: dict[int, list[str]] = {}
    for m in p.micros:
        ops.setdefault(m.line, []).append(m.op)
    per_event = [ops.get(ev.line, []) for ev in p.events]
    ends = [c.event for c in cuts]
    out: list[dict[str, str]] = [{} for _ in cuts]
    try:
        with naming() as names:
            for var, (t, derive) in p.glue.ghosts.items():
                for k, value in enumerate(derive(p.events, per_event, ends)):
                    out[k][var] = t.render(value, f"{p.trace.path}: {var} derived at a cut")
    except (GlueError, RenderError, LookupError, TypeError, ValueError):  # not derivable: no cut
        return None
    if names:  # a ghost's value would need a named value of its own: not worth a cut
        return None
    return out


def _claiming(m: Micro, ghosts: dict[str, str]) -> Micro:
    """The last micro-step before a cut, also checking the derived ghosts against the spec's."""
    if not ghosts:
        return m
    assert m.check is not None  # the last part of a logged step
    return attrs.evolve(m, check={**m.check, **{v: f'<<"set", {x}>>' for v, x in ghosts.items()}})


def _pinned_state(p: Prepared, state: dict[str, Any], unlogged: dict[str, str]
                  ) -> tuple[dict[str, str], dict[str, str]] | None:
    try:
        with naming() as names:
            init = p.glue.render_state(state, f"{p.trace.path}: cut state")
    except (GlueError, RenderError):
        return None
    return {**init, **unlogged}, names
