"""Turning traces into a TLA+ module that EXTENDS the protocol spec (the "trace spec").

The generated module holds the traces as literal sequences of records, one record per line
(TLC 2.15 parses that far faster than one long line; it has no JSON module), and walks them with
two variables: ``trT`` (which trace, chosen in ``TrInit`` when several are batched into one run)
and ``trL`` (the cursor: index of the next step to match).  Every step is constrained to the
logged spec action with the logged arguments, then to the logged post-state.

One record per *micro-step*::

    [a |-> "Send", p |-> <<1, 2>>, s |-> [trNone |-> 0, val |-> ...], u |-> {"saved"}]

``a``/``p`` name the glue operator and its parameters; ``s`` holds logged post-state values to
compare, each as a delta of the previous logged value (``traces.tla.render_delta``, applied by
``TrApply``); ``u`` names logged variables whose value did not change since the previous checked step
(checked as ``v' = v``: equivalent, since the previous step already pinned ``v`` to the same
logged value, and it keeps the module small); each distinct set of such names is defined once
(``TrU1 == {"log", "role"}``) and the records refer to it by name.  A logged step that the spec splits in two becomes
two micro-steps; only the last one carries ``s``/``u``, so TLC existentially picks the
intermediate state (this is the composition ``A \\cdot B``, which TLC cannot evaluate directly).
Its deltas are of the previous logged state, which the first micro-step saves in the trace-only
variable ``trP`` (record fields ``k``, what a micro-step does with ``trP``, and ``w``, the names
saved; only in modules with such steps: ``_snapshot_ops``).

Modes:

* ``single``: one trace.  Acceptance is witnessed as soon as one behaviour consumes the whole
  trace, in one of two ways: ``witness="invariant"``: the invariant ``TrNotDone`` is violated
  exactly when the cursor has passed the end (violation = accepted; TLC then prints the matching
  behaviour, which costs as much as the check itself on long traces); ``witness="exit"`` (the
  default): the step that consumes the last record prints ``<<"TRACCEPT", 1>>`` and stops TLC with
  ``TLCSet("exit", TRUE)`` (TLC 2.15 supports it), so no behaviour is printed.  When TLC finishes
  without either, the search depth ``d`` means micro-steps ``1..d-1`` matched and micro-step ``d``
  is the first no behaviour can match.
* ``batch``: many traces, ``trT \\in 1..N`` in Init (``trT`` is a variable, so it is part of the
  default VIEW: the same spec state under two traces is two states).  No invariant (TLC would stop
  at the first accepted trace); instead the step that consumes the last record prints
  ``<<"TRACCEPT", t>>``.  A trace that never prints it is rejected.
  With ``diagnose``, the single run also explains a rejection: ``TrNext`` is
  ``IF ENABLED TrExact THEN TrExact ELSE TrDiag``, and ``TrDiag`` (reached only in dead ends) prints
  ``<<"TRPRE", l, guards>>`` for the state and ``<<"TRDIAG", l, per-variable <<name, matches,
  spec value>> ...>>`` for every successor the logged action has without the post-state check.
  Dead ends of abandoned branches print too; the rows at the deepest cursor are the diagnosis of
  the first unmatched step (every state at that depth is a dead end).
"""

from __future__ import annotations

import re

import attrs

from traces.protocols import Glue
from traces.tla import TLA_APPLY, Fun, Set, tla_string

MODULE_PREFIX = "TrRun"


@attrs.frozen
class Micro:
    op: str
    params: tuple[str, ...]
    check: dict[str, str] | None  # var -> rendered value to compare; None: intermediate (no check)
    unchanged: tuple[str, ...]  # vars checked as v' = v
    line: int  # trace file line of the logged step
    part: int  # 1-based index within the logged step (composed steps have several parts)
    parts: int
    save: tuple[str, ...] = ()  # first part of a composed step: the variables it snapshots in trP
    base: bool = False  # last part of a composed step: its deltas apply to the snapshot in trP


def _ident(op: str) -> str:
    return "TrOp_" + re.sub(r"[^A-Za-z0-9_]", "_", op)


def _unchanged_sets(traces: list[list[Micro]]) -> dict[tuple[str, ...], str]:
    """A name (``TrU1``, ...) for each distinct non-empty set of unchanged variables: a trace
    repeats few of them, and naming each once keeps the module SANY parses small."""
    names: dict[tuple[str, ...], str] = {}
    for tr in traces:
        for m in tr:
            for vs in (m.unchanged, m.save):
                if vs and vs not in names:
                    names[vs] = f"TrU{len(names) + 1}"
    return names


# the snapshot field ``k`` of a record (modules with composed steps only): what the step does with trP
KEEP, SAVE, BASE = 0, 1, 2


def _record(m: Micro, unchanged: dict[tuple[str, ...], str], snap: bool) -> str:
    params = "<<" + ", ".join(m.params) + ">>"
    check = m.check or {}
    s = "[" + ", ".join(["trNone |-> 0"] + [f"{k} |-> {v}" for k, v in check.items()]) + "]"
    u = unchanged[m.unchanged] if m.unchanged else "{}"
    rec = f"[a |-> {tla_string(m.op)}, p |-> {params}, s |-> {s}, u |-> {u}"
    if not snap:
        return rec + "]"
    if m.save:
        return rec + f", k |-> {SAVE}, w |-> {unchanged[m.save]}]"
    return rec + f", k |-> {BASE if m.base else KEEP}]"


def _snapshot_ops(variables: list[str]) -> list[str]:
    """The operators of a module with composed steps.  The first part of a composed step saves the
    logged variables (``e.w``) in ``trP``: their values there are the previous step's logged ones
    (that step pinned them).  The last part checks its deltas against that snapshot, since its own
    pre-state is an unchecked intermediate state, and clears ``trP`` again, so ``trP`` holds the
    same value in every state reached at the same cursor and splits no state."""
    var_of = "\n    [] ".join(f'x = "{v}" -> {v}' for v in variables)
    out = [f"TrVar(x) ==\n  CASE {var_of}",
           f"TrSnap(e) == CASE e.k = {SAVE} -> [x \\in e.w |-> TrVar(x)] [] e.k = {BASE} -> <<>> [] OTHER -> trP",
           f'TrOld(e, x, v) == IF e.k = {BASE} /\\ x \\in DOMAIN trP THEN trP[x] ELSE v',
           "TrCheckBase(e) =="]
    for v in variables:
        out.append(f'  /\\ ("{v}" \\in DOMAIN e.s => {v}\' = TrApply(TrOld(e, "{v}", {v}), e.s.{v}))')
    out += ["  /\\ TRUE",
            f"TrCheckAt(e) == IF e.k = {BASE} THEN TrCheckBase(e) ELSE TrCheck(e)",
            ""]
    return out


def _claimed(glue: Glue, traces: list[list[Micro]]) -> list[str]:
    """The spec variables the glue does not log that some micro-step checks: ghosts the glue
    derived at a cut (``traces.segment``)."""
    return sorted({v for tr in traces for m in tr if m.check for v in m.check} - set(glue.variables))


def _pin_ops(pinned: list[bool], variables: list[str]) -> list[str]:
    """``TrPin(s)``: the initial state of a pinned trace is ``s`` itself, every spec variable
    given (``TrPinned[t]`` says which traces of the module are pinned)."""
    flags = ", ".join("TRUE" if x else "FALSE" for x in pinned)
    out = [f"TrPinned == <<{flags}>>", "TrPin(s) =="]
    out += [f"  /\\ {v} = s.{v}" for v in variables]
    return out + [""]


def render_module(glue: Glue, name: str, traces: list[list[Micro]], inits: list[dict[str, str]],
                  mode: str, *,
                  witness: str = "exit", diagnose: bool = True, names: dict[str, str] | None = None,
                  pinned: list[bool] | None = None) -> str:
    """The trace-spec module text. ``traces``: micro-steps per trace; ``inits``: the logged
    initial state per trace (may be empty dicts); ``names``: the definitions of the named values
    the micro-steps use (``traces.tla.Named``), stated once each; ``pinned``: per trace, whether
    its initial state is ``inits`` itself (a segment of a cut trace: every spec variable given)
    rather than a state of the spec's ``Init`` that agrees with ``inits``."""
    assert mode in ("single", "batch")
    used_ops = sorted({m.op for tr in traces for m in tr})
    snap = any(m.save for tr in traces for m in tr)
    out = [f"---- MODULE {name} ----",
           "\\* Generated by traces/ (kraft conform). Do not edit; regenerated on every run.",
           f"EXTENDS {', '.join((glue.module,) + glue.extra_modules + ('TLC', 'Naturals', 'Sequences'))}",
           "",
           "VARIABLES trL, trT" + (", trP" if snap else ""),
           ""]
    unchanged = _unchanged_sets(traces)
    for vs, ident in unchanged.items():
        out.append(f"{ident} == {{{', '.join(tla_string(v) for v in vs)}}}")
    for ident, text in sorted((names or {}).items()):
        out.append(f"{ident} == {text}")
    for t, tr in enumerate(traces, 1):
        out.append(f"TrE{t} == <<")
        last = len(tr) - 1
        for j, m in enumerate(tr):
            rec = _record(m, unchanged, snap)
            out.append(rec + ("," if j < last else ""))
        out.append(">>")
    out.append("TrTraces == <<" + ", ".join(f"TrE{t}" for t in range(1, len(traces) + 1)) + ">>")
    out.append("TrInits == <<")
    for t, init in enumerate(inits, 1):
        rec = "[" + ", ".join(["trNone |-> 0"] + [f"{k} |-> {v}" for k, v in init.items()]) + "]"
        out.append(rec + ("," if t < len(inits) else ""))
    out.append(">>")
    out.append("")
    for op in used_ops:
        out.append(f"{_ident(op)}(p) == {glue.templates[op]}")
    out.append("")
    out.append(TLA_APPLY)
    out.append("")
    out.append("TrDo(e) ==")
    if used_ops:
        for op in used_ops:
            out.append(f"  \\/ e.a = {tla_string(op)} /\\ {_ident(op)}(e.p)")
    else:
        out.append("  FALSE")
    variables = list(glue.variables) + _claimed(glue, traces)
    out.append("")
    out.append("TrCheck(e) ==")
    for v in variables:
        out.append(f'  /\\ ("{v}" \\in DOMAIN e.s => {v}\' = TrApply({v}, e.s.{v}))')
        out.append(f'  /\\ ("{v}" \\in e.u => {v}\' = {v})')
    out.append("  /\\ TRUE")
    out.append("")
    if snap:
        out += _snapshot_ops(variables)
    if pinned and any(pinned):
        out += _pin_ops(pinned, list(inits[pinned.index(True)]))
    out.append("TrInitCheck(s) ==")
    for v in variables:
        out.append(f'  /\\ ("{v}" \\in DOMAIN s => {v} = s.{v})')
    out.append("  /\\ TRUE")
    out.append("")
    n = len(traces)
    out.append(f"TrInit == /\\ trT \\in 1..{n}")
    out.append("          /\\ trL = 1")
    if snap:
        out.append("          /\\ trP = <<>>")
    if pinned and any(pinned):
        out.append("          /\\ IF TrPinned[trT] THEN TrPin(TrInits[trT])")
        out.append("             ELSE Init /\\ TrInitCheck(TrInits[trT])")
    else:
        out.append("          /\\ Init")
        out.append("          /\\ TrInitCheck(TrInits[trT])")
    if mode == "batch" or (mode == "single" and witness == "exit"):
        out.append('          /\\ IF Len(TrTraces[trT]) = 0 THEN PrintT(<<"TRACCEPT", trT>>) ELSE TRUE')
    out.append("")
    out.append("TrExact ==")
    out.append("  /\\ trL <= Len(TrTraces[trT])")
    if snap:
        out.append("  /\\ LET e == TrTraces[trT][trL] IN TrDo(e) /\\ TrCheckAt(e) /\\ trP' = TrSnap(e)")
    else:
        out.append("  /\\ LET e == TrTraces[trT][trL] IN TrDo(e) /\\ TrCheck(e)")
    out.append("  /\\ trL' = trL + 1")
    out.append("  /\\ trT' = trT")
    out.append("")
    if mode == "batch":
        accept = 'IF trL = Len(TrTraces[trT]) THEN PrintT(<<"TRACCEPT", trT>>) ELSE TRUE'
    elif witness == "exit":
        accept = ('IF trL = Len(TrTraces[trT]) THEN PrintT(<<"TRACCEPT", trT>>) /\\ TLCSet("exit", TRUE) '
                  'ELSE TRUE')
    else:
        accept = "TRUE"
    if mode == "single" and diagnose:
        ops_with_guards = [op for op in used_ops if glue.guards.get(op)]
        out.append("TrGuards(e) ==")
        if ops_with_guards:
            arms = []
            for op in ops_with_guards:
                g = ", ".join(f"<<{tla_string(label)}, ({expr})>>" for label, expr in glue.guards[op].items())
                arms.append(f"e.a = {tla_string(op)} -> LET p == e.p IN <<{g}>>")
            out.append("  CASE " + "\n    [] ".join(arms) + "\n    [] OTHER -> <<>>")
        else:
            out.append("  <<>>")
        cmp_parts = []
        for v in variables:
            old = f"TrOld(e, \"{v}\", {v})" if snap else v
            cmp_parts.append(f'IF "{v}" \\in DOMAIN e.s THEN TrCmp_{v}(TrApply({old}, e.s.{v})) '
                             f'ELSE IF "{v}" \\in e.u THEN TrCmp_{v}({v}) ELSE <<>>')
            t = glue.variables.get(v)
            if isinstance(t, Set):  # the elements on one side only
                extra = f", ToString({v}' \\ L), ToString(L \\ {v}')"
            elif isinstance(t, Fun):  # the arguments where they differ, and both sides there
                extra = (f", LET D == {{k \\in DOMAIN {v}' \\cap DOMAIN L : {v}'[k] # L[k]}} IN "
                         f"<<ToString(D), ToString([k \\in D |-> {v}'[k]]), ToString([k \\in D |-> L[k]])>>")
            else:
                extra = ""
            out.append(f"TrCmp_{v}(L) == <<\"{v}\", {v}' = L, ToString({v}'){extra}>>")
        out.append("")
        out.append("\\* Diagnosis: only reached in states where TrExact is not enabled (a dead end).")
        out.append("TrDiag ==")
        out.append("  /\\ trL <= Len(TrTraces[trT])")
        out.append("  /\\ LET e == TrTraces[trT][trL] IN")
        out.append('       \\/ PrintT(<<"TRPRE", trL, TrGuards(e)>>) /\\ FALSE')
        out.append('       \\/ TrDo(e) /\\ PrintT(<<"TRDIAG", trL,')
        out.append("              " + ",\n              ".join(cmp_parts) + ">>) /\\ FALSE")
        out.append("")
        out.append("TrNext == IF ENABLED TrExact THEN TrExact /\\ " + accept + " ELSE TrDiag")
    else:
        out.append("TrNext == TrExact /\\ " + accept)
    out.append("")
    out.append("TrNotDone == trL <= Len(TrTraces[trT])")
    out.append("====")
    mvs = model_values_in(out)
    if mvs:  # opaque values of the trace (glue renders them as TrMV_...): model values from the cfg
        out.insert(out.index("VARIABLES trL, trT") + 1, "CONSTANTS " + ", ".join(mvs))
    return "\n".join(x for line in out for x in (wrap(line) if line.startswith(_DATA) else (line,))) + "\n"


# lines that hold only data (the trace's records, named values, declarations of model values): they
# may be broken anywhere between list items, unlike a bulleted conjunction whose layout is syntax
_DATA = ("[", "TrM_", "TrU", "CONSTANTS TrMV_", "TrPinned")
WIDTH = 400
_ITEM_RE = re.compile(r'"(?:[^"\\]|\\.)*"|, ')


def wrap(line: str, width: int = WIDTH) -> list[str]:
    """``line`` broken after list separators (``, `` outside string literals) into lines of about
    ``width`` characters, the continuations indented.  TLC checks every module it parses for a
    PlusCal algorithm (``pcal.Validator``, via ``SpecObj.loadSpec``), and TLC 2.15's check copies
    each line character by character, a cost that grows with the square of the line's length: a
    trace module with long lines (a snapshot of a few hundred values, a message carrying many log
    records) spends most of its parse time there."""
    if len(line) <= width:
        return [line]
    out: list[str] = []
    start = prev = 0
    for m in _ITEM_RE.finditer(line):
        if m.group() != ", ":
            continue
        end = m.end()
        if end - start > width and prev > start:
            out.append(line[start:prev])
            start = prev
        prev = end
    if len(line) - start > width and prev > start:
        out.append(line[start:prev])
        start = prev
    out.append(line[start:])
    return [out[0].rstrip()] + ["  " + x.rstrip() for x in out[1:]]


def declared_model_values(text: str) -> list[str]:
    """The model values a module from :func:`render_module` declares: its ``CONSTANTS TrMV_...``
    line near the top and that line's continuations (``wrap``)."""
    lines = text.splitlines()
    for i, line in enumerate(lines[:12]):
        if line.startswith("CONSTANTS TrMV_"):
            j = i + 1
            while j < len(lines) and lines[j].startswith("  TrMV_"):
                j += 1
            return model_values_in(lines[i:j])
    return []


_MV_RE = re.compile(r"\bTrMV_[A-Za-z0-9_]+\b")


def model_values_in(lines: list[str]) -> list[str]:
    names: set[str] = set()
    for line in lines:
        if "TrMV_" in line:
            names.update(_MV_RE.findall(line))
    return sorted(names)


def render_cfg(constants: dict[str, str], mode: str, witness: str = "exit",
               model_values: list[str] = ()) -> str:
    """A value ``"<- Op"`` substitutes a definition (``MaxFaults <- Unbounded``)."""
    lines = ["CONSTANTS"]
    lines += [f"  {k} {v}" if v.startswith("<-") else f"  {k} = {v}" for k, v in constants.items()]
    lines += [f"  {m} = {m}" for m in model_values]
    lines += ["INIT TrInit", "NEXT TrNext"]
    if mode == "single" and witness == "invariant":
        lines.append("INVARIANT TrNotDone")
    return "\n".join(lines) + "\n"
