"""Conformance checking: does some behaviour of the spec take exactly the logged steps?

Pipeline for a set of trace files:

1. read each file (``traces.schema``), pick the protocol glue from the header, translate every
   ``"spec": true`` step into micro-steps (``traces.generate.Micro``); ``"spec": false`` steps are
   counted as skipped.  The checkable prefix ends at the first unusable line (malformed JSON,
   truncated last line, unknown action, arguments the glue cannot render).
2. group traces that share a spec and CONSTANTS, cut the groups into batches, and run one TLC
   process per batch (``batch`` mode), several processes in parallel, each in its own run
   directory (own ``-metadir`` and ``java.io.tmpdir``).
3. every trace the batch did not accept is re-run alone (``single`` mode, witness invariant): the
   search depth names the first micro-step no behaviour matches; a third, relaxed run (``diag``)
   at that step tells "action not enabled" (with the glue's guards) from "state mismatch" (with the
   logged variables that disagree with every spec successor, and the spec's values).
4. a prefix that TLC accepts but that ended at an unusable line is rejected at that line.
"""

from __future__ import annotations

import concurrent.futures as cf
import json
import os
import re
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any, Iterable

import attrs

from kraft.inputs import collector_paused
from traces.generate import MODULE_PREFIX, Micro, declared_model_values, render_cfg, render_module
from traces.protocols import Glue, GlueError, SpecStep, UnknownAction, complete_constants, get_glue
from traces.schema import Event, Trace, read_trace
from traces.segment import segments
from traces.tla import RenderError, naming, parse_printed, render_delta, unname
from traces import tlcrun


@attrs.define
class TraceResult:
    """The verdict on one trace file (also one row of ``conform.json``)."""

    trace: str
    protocol: str | None = None
    spec: str | None = None
    seed: Any = None
    variant: str | None = None
    events: int = 0  # "spec": true steps read from the file
    skipped: int = 0  # "spec": false steps (no spec counterpart), counted and skipped
    checked: int = 0  # spec steps TLC matched before the verdict
    verdict: str = "error"  # "accepted" | "rejected" | "error" (kind "tool_error" or "timeout")
    kind: str | None = None  # why rejected: not_enabled | state_mismatch | init_mismatch |
    #                          unknown_action | bad_step | malformed_json | truncated | bad_header | empty
    line: int | None = None  # the first divergent step's line in the trace file (header = line 1)
    step: int | None = None  # its "i"
    action: str | None = None
    node: Any = None
    args: dict[str, Any] | None = None
    state: dict[str, Any] | None = None  # the logged post-state at that step
    part: str | None = None  # for a composed step: which spec action of it failed
    disagree: list[str] = attrs.field(factory=list)  # logged vars no successor agrees with
    mismatches: list[dict[str, Any]] = attrs.field(factory=list)  # closest successor: var, logged, spec
    successors: int | None = None  # spec successors of the logged action at that step
    spec_states: int | None = None  # spec states consistent with the trace before that step
    guards: dict[str, str] = attrs.field(factory=dict)
    message: str = ""
    warnings: list[str] = attrs.field(factory=list)
    seconds: float = 0.0
    tlc_runs: int = 0

    def as_dict(self) -> dict[str, Any]:
        return attrs.asdict(self)


@attrs.frozen
class Options:
    batch: int = 64  # traces per TLC run
    jobs: int = 1  # TLC processes in parallel
    timeout: float | None = None  # per TLC run
    heap: str = "2g"
    keep: Path | None = None  # keep run directories here (debugging)
    diagnose: bool = True
    witness: str = "exit"  # single runs: "exit" (TLCSet exit, no trace printed) or "invariant"
    segment: int = 4000  # cut traces of at least twice this many events into segments (0: never)


@attrs.define
class Prepared:
    trace: Trace
    glue: Glue
    micros: list[Micro]
    init: dict[str, str]
    constants: dict[str, str]
    stop: TraceResult | None  # the verdict if the TLC-checked prefix is accepted (bad line), else None
    events: list[Event]  # the spec events that became micro-steps (index = event order)
    names: dict[str, str] = attrs.field(factory=dict)  # named values of the micro-steps (traces.tla.Named)
    pinned: bool = False  # a segment of a cut trace: its initial state is ``init``, every variable given
    parts: list[Prepared] = attrs.field(factory=list)  # its segments, when it is cut (see plan)

    @property
    def key(self) -> str:
        return json.dumps([self.glue.protocol, self.glue.module, self.constants], sort_keys=True)


def _base(trace: Trace) -> TraceResult:
    h = trace.header
    return TraceResult(trace=trace.path, protocol=trace.protocol, spec=trace.spec_module,
                       seed=h.get("seed"), variant=h.get("variant"),
                       events=len(trace.spec_events), skipped=trace.skipped,
                       warnings=list(trace.warnings))


def _event_fields(r: TraceResult, ev: Event) -> None:
    r.line, r.step, r.action, r.node, r.args, r.state = ev.line, ev.i, ev.action, ev.node, ev.args, ev.state


def prepare(trace: Trace, glue: Glue | None = None) -> Prepared | TraceResult:
    """Translate a read trace for TLC, or return the final verdict if nothing can be checked."""
    with collector_paused(), naming() as names:  # the read trace is large and acyclic: see collector_paused
        p = _prepare(trace, glue)
    if isinstance(p, Prepared):
        p.names = names
    return p


def _prepare(trace: Trace, glue: Glue | None) -> Prepared | TraceResult:
    if trace.problem is not None and trace.problem.kind in ("bad_header", "empty") or not trace.header:
        r = _base(trace)
        p = trace.problem
        r.verdict, r.kind = "rejected", (p.kind if p else "bad_header")
        r.line = p.line if p else 1
        r.message = p.message if p else f"{trace.path}: no header"
        return r
    if glue is None:
        glue = get_glue(trace.protocol or "")
    if glue is None:
        r = _base(trace)
        r.verdict, r.kind, r.line = "error", "no_glue", 1
        r.message = (f"{trace.path}:1: no conformance glue for protocol {trace.protocol!r} "
                     f"(spec {trace.spec_module!r})")
        return r
    if trace.spec_module != glue.module:
        r = _base(trace)
        r.verdict, r.kind, r.line = "error", "no_glue", 1
        r.message = (f"{trace.path}:1: header names spec {trace.spec_module!r} but the "
                     f"{glue.protocol!r} glue checks against {glue.module!r}")
        return r
    try:
        constants = complete_constants(glue, glue.constants(trace.header))
    except Exception as exc:  # the header's constants do not fit: bad input, say which
        r = _base(trace)
        r.verdict, r.kind, r.line = "rejected", "bad_header", 1
        r.message = f"{trace.path}:1: constants: {exc}"
        return r
    init: dict[str, str] = {}
    stop: TraceResult | None = None
    if "init" in trace.header:
        try:
            init = glue.render_state(trace.header["init"], f"{trace.path}:1 init")
        except (GlueError, RenderError) as exc:
            r = _base(trace)
            r.verdict, r.kind, r.line, r.message = "rejected", "bad_header", 1, str(exc)
            return r
    micros: list[Micro] = []
    events: list[Event] = []
    prev: dict[str, Any] | None = None  # the previous checked step's logged state (JSON)
    for ev in trace.events:
        if not ev.spec:
            continue
        try:
            steps: list[SpecStep] = glue.translate(ev)
            for st in steps:
                if st.op not in glue.templates:
                    raise GlueError(f"glue maps {ev.action} to unknown spec operator {st.op}")
            n = len(steps)
            check, same, saved = _post_state(glue, trace.path, ev, prev, composed=n > 1)
        except UnknownAction:
            stop = _base(trace)
            stop.verdict, stop.kind = "rejected", "unknown_action"
            _event_fields(stop, ev)
            stop.message = (f"{trace.path}:{ev.line}: unknown action {ev.action!r}: not an action of spec "
                            f"{glue.module} (mark implementation-only steps \"spec\": false)")
            break
        except (GlueError, RenderError) as exc:
            stop = _base(trace)
            stop.verdict, stop.kind = "rejected", "bad_step"
            _event_fields(stop, ev)
            msg = str(exc)
            stop.message = msg if msg.startswith(trace.path) else f"{trace.path}:{ev.line}: {msg}"
            break
        for j, st in enumerate(steps, 1):
            if j < n:
                micros.append(Micro(st.op, st.params, None, (), ev.line, j, n, save=saved if j == 1 else ()))
            else:
                micros.append(Micro(st.op, st.params, check, tuple(same), ev.line, j, n, base=bool(saved)))
        prev = ev.state
        events.append(ev)
    if stop is None and trace.problem is not None:
        p = trace.problem
        stop = _base(trace)
        stop.verdict, stop.kind, stop.line = "rejected", p.kind, p.line
        stop.message = p.message
    return Prepared(trace, glue, micros, init, constants, stop, events)


def _post_state(glue: Glue, path: str, ev: Event, prev: dict[str, Any] | None, composed: bool
                ) -> tuple[dict[str, str], list[str], tuple[str, ...]]:
    """The logged post-state of one step as TLA+: ``check`` (variable -> delta of its previous
    logged value), ``same`` (variables checked as unchanged) and, for a composed step, ``saved``
    (the variables its first part snapshots, the base of the last part's deltas).  A variable
    the previous step did not log is written in full (``<<"set", v>>``).  In a composed step the
    deltas are taken against the snapshot, and an unchanged variable is checked against it too
    (``<<"same">>``): the spec's state before the last part is an unchecked intermediate one."""
    check: dict[str, str] = {}
    same: list[str] = []
    saved: list[str] = []
    for k, v in ev.state.items():
        t = glue.variables.get(k)
        if t is None:
            raise GlueError(f"{path}:{ev.line} state: {k!r} is not a variable of spec "
                            f"{glue.module} (known: {', '.join(sorted(glue.variables))})")
        where = f"{path}:{ev.line} state.{k}"
        if prev is None or k not in prev:  # the first step, or a variable not logged before
            check[k] = f'<<"set", {t.render(v, where)}>>'
            continue
        d = render_delta(t, prev[k], v, where)
        if composed:
            saved.append(k)
            check[k] = '<<"same">>' if d is None else d
        elif d is None:
            same.append(k)
        else:
            check[k] = d
    return check, same, tuple(saved)


# ---- running ----------------------------------------------------------------------------------


class _RunDir:
    def __init__(self, opts: Options, tag: str) -> None:
        base = opts.keep
        if base is not None:
            base.mkdir(parents=True, exist_ok=True)
        self.path = Path(tempfile.mkdtemp(prefix=f"conform-{tag}-", dir=base))
        self.keep = base is not None

    def __enter__(self) -> Path:
        return self.path

    def __exit__(self, *exc: object) -> None:
        if not self.keep:
            shutil.rmtree(self.path, ignore_errors=True)


def _setup(run: Path, glue: Glue) -> None:
    for f in glue.spec_dir.glob("*.tla"):
        shutil.copy(f, run / f.name)


def _run(batch: list[Prepared], mode: str, opts: Options) -> tlcrun.RunResult:
    glue, constants = batch[0].glue, batch[0].constants
    names = {k: v for p in batch for k, v in p.names.items()}
    with _RunDir(opts, mode) as run:
        _setup(run, glue)
        name = f"{MODULE_PREFIX}_{glue.module}"
        text = render_module(glue, name, [p.micros for p in batch], [p.init for p in batch], mode,
                             witness=opts.witness, diagnose=opts.diagnose, names=names,
                             pinned=[p.pinned for p in batch])
        (run / f"{name}.tla").write_text(text)
        mvs = declared_model_values(text)
        (run / f"{name}.cfg").write_text(render_cfg(constants, mode, opts.witness, mvs))
        return tlcrun.run_trace_module(run, name, f"{name}.cfg", timeout=opts.timeout, heap=opts.heap)


def _tool_error(r: TraceResult, res: tlcrun.RunResult, what: str) -> TraceResult:
    # a run stopped by --timeout decided nothing (kraft conform: inconclusive); anything else is broken
    r.verdict, r.kind = "error", ("timeout" if res.outcome == "timeout" else "tool_error")
    detail = "; ".join(res.errors) if res.errors else res.output[-1500:]
    printed = res.printed.strip()
    if printed and res.outcome == "error":
        detail += "\n" + printed[-1500:]
    r.message = f"{what}: TLC {res.outcome}: {detail}"
    return r


def check_batch(batch: list[Prepared], opts: Options) -> list[TraceResult]:
    """Check traces sharing one glue and CONSTANTS: one TLC run, then localise the rejected."""
    if not batch:
        return []
    t0 = time.monotonic()
    results: list[TraceResult] = []
    if len(batch) == 1:
        results.append(localise(batch[0], opts))
    else:
        res = _run(batch, "batch", opts)
        share = res.seconds / len(batch)
        if res.outcome != "ok":  # e.g. out of memory on a huge batch: check each trace alone
            why = "; ".join(res.errors)[:300] or res.outcome
            for p in batch:
                r = localise(p, opts)
                r.warnings.append(f"the batch run of {len(batch)} traces failed ({why}); checked alone")
                r.seconds += share
                r.tlc_runs += 1
                results.append(r)
            return results
        accepted = {int(t) for t in _markers(res.printed, "TRACCEPT")}
        for t, p in enumerate(batch, 1):
            if t in accepted:
                r = _accept(p)
                r.seconds, r.tlc_runs = share, 1
                results.append(r)
            else:
                r = localise(p, opts, rejected=True)
                r.seconds += share
                r.tlc_runs += 1
                results.append(r)
    if len(batch) == 1:
        results[0].seconds = time.monotonic() - t0
    return results


def _marker_rows(printed: str, tag: str) -> list[tuple[Any, ...]]:
    """Every ``<<"TAG", ...>>`` tuple the run printed (TLC may break long ones over lines)."""
    out = []
    for m in re.finditer(r'<<\s*"' + re.escape(tag) + '"', printed):
        try:
            val, _ = parse_printed(printed, m.start())
        except ValueError:
            continue
        out.append(tuple(val[1:]))
    return out


def _markers(printed: str, tag: str) -> list[Any]:
    return [row[0] for row in _marker_rows(printed, tag) if row]


def _all_markers(printed: str, tag: str) -> list[tuple[Any, ...]]:
    return _marker_rows(printed, tag)


def _accept(p: Prepared) -> TraceResult:
    if p.stop is not None:
        r = p.stop
        r.checked = len(p.events)
        r.message += f" (the {len(p.events)} spec steps before it conform)"
        return r
    r = _base(p.trace)
    r.verdict, r.checked = "accepted", len(p.events)
    r.message = f"{r.events} spec steps conform ({r.skipped} non-spec steps skipped)"
    return r


def _accepted(res: tlcrun.RunResult) -> bool:
    return res.outcome == "invariant" or (res.outcome == "ok" and bool(_markers(res.printed, "TRACCEPT")))


def localise(p: Prepared, opts: Options, rejected: bool = False) -> TraceResult:
    """Check one trace alone with the witness; on rejection find and explain the first step that
    no behaviour of the spec can match. The diagnosis evaluates ``ENABLED TrExact`` in every state,
    which costs TLC several times the check itself, so it runs only once the trace is rejected
    (``rejected``: a batch run has rejected it already)."""
    t0 = time.monotonic()
    runs = 0
    res = None
    if not (rejected and opts.diagnose):
        res = _run([p], "single", attrs.evolve(opts, diagnose=False))
        runs += 1
    if res is None or (res.outcome == "ok" and not _accepted(res) and opts.diagnose):
        res = _run([p], "single", opts)
        runs += 1
    if _accepted(res):
        r = _accept(p)
        r.seconds, r.tlc_runs = time.monotonic() - t0, runs
        return r
    if res.outcome != "ok":
        r = _tool_error(_base(p.trace), res, "single-trace run")
        r.seconds, r.tlc_runs = time.monotonic() - t0, runs
        return r
    r = _base(p.trace)
    r.verdict, r.tlc_runs = "rejected", runs
    if p.stop is not None:
        r.warnings.append(f"the trace also has an unusable line: {p.stop.message}")
    if res.depth == 0 or res.states == 0 or not p.micros:
        r.kind, r.line = "init_mismatch", 1
        r.state = p.trace.header.get("init")
        r.message = (f"{p.trace.path}:1: no initial state of {p.glue.module} matches the trace "
                     + ("(header 'init')" if p.init else "(spec Init is unsatisfiable with these constants)"))
        r.seconds = time.monotonic() - t0
        return r
    k = res.depth  # micro-steps 1..k-1 matched; micro-step k is the first unmatched
    if k > len(p.micros):  # cannot happen: TLC would have violated the witness invariant
        r.verdict, r.kind = "error", "tool_error"
        r.message = f"TLC search depth {res.depth} beyond the trace ({len(p.micros)} steps) without acceptance"
        return r
    m = p.micros[k - 1]
    ev = next(e for e in p.events if e.line == m.line)
    _event_fields(r, ev)
    r.checked = sum(1 for e in p.events if e.line < m.line)
    if m.parts > 1:
        r.part = f"{m.op} (spec action {m.part} of {m.parts} composing {ev.action})"
    if opts.diagnose:
        _explain(p, k, m, ev, res, r)
    if not r.message:
        r.kind = r.kind or "no_match"
        r.message = f"{p.trace.path}:{m.line}: no behaviour of {p.glue.module} can take step {ev.action}"
    r.seconds = time.monotonic() - t0
    return r


def _explain(p: Prepared, k: int, m: Micro, ev: Event, res: tlcrun.RunResult, r: TraceResult) -> None:
    """Read the diagnosis rows of the single run at the deepest cursor ``k``."""
    pre = [row for row in _all_markers(res.printed, "TRPRE") if row and row[0] == k]
    succ = [row for row in _all_markers(res.printed, "TRDIAG") if row and row[0] == k]
    where = f"{p.trace.path}:{m.line}"
    call = f"{m.op}({', '.join(unname(x, p.names) for x in m.params)})"
    comp = f" (part {m.part} of {m.parts} of {ev.action})" if m.parts > 1 else ""
    r.spec_states = len(pre)
    r.successors = len(succ)
    guard_vals: dict[str, list[bool]] = {}
    for row in pre:
        for g in (row[1] if len(row) > 1 else ()):
            guard_vals.setdefault(g[0], []).append(g[1] is True)
    for label, vals in guard_vals.items():
        t = sum(vals)
        r.guards[label] = "true" if t == len(vals) else ("false" if t == 0 else f"true in {t} of {len(vals)} states")
    if not succ:
        r.kind = "not_enabled"
        failing = [f"{g} is {v}" for g, v in r.guards.items() if v != "true"]
        r.message = (f"{where}: action {call}{comp} is not enabled in any of the {len(pre)} spec "
                     f"state(s) consistent with the trace so far"
                     + (f" ({'; '.join(failing)})" if failing else ""))
        return
    r.kind = "state_mismatch"
    rows = [{c[0]: c[1:] for c in row[1:] if c} for row in succ]
    logged = [v for v in p.glue.variables if any(v in row for row in rows)]
    r.disagree = [v for v in logged if all(not row[v][0] for row in rows)]
    best = min(rows, key=lambda row: sum(1 for v in logged if not row[v][0]))
    r.mismatches = [_mismatch(v, ev.state.get(v), best[v]) for v in logged if not best[v][0]]
    if r.disagree:
        what = (f"logged {', '.join(r.disagree)} disagree(s) with every one of the {len(rows)} spec "
                f"successor(s)")
    else:
        what = (f"each logged variable matches some of the {len(rows)} spec successor(s) but no "
                f"single one matches all (the closest differs in {', '.join(x['var'] for x in r.mismatches)})")
    r.message = f"{where}: {call}{comp} is enabled but {what}: " + "; ".join(x["summary"] for x in r.mismatches)


def _abbrev_pair(a: str, b: str, keep: int = 40) -> tuple[str, str]:
    """Elide the long common prefix and suffix of two printed values (a 300-record log that differs
    in its last record reads as '... [epoch |-> 1, value |-> TrMV_v45]>>)')."""
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    cut = a.rfind(", ", 0, n)
    if cut > keep:
        a, b = "..." + a[cut + 1:], "..." + b[cut + 1:]
    m = 0
    while m < min(len(a), len(b)) - 3 and a[-1 - m] == b[-1 - m]:
        m += 1
    if m > keep + 10:
        tail = a[len(a) - m:]
        j = tail.find(", ")
        if 0 <= j < m - keep:
            a, b = a[:len(a) - m + j] + ", ...", b[:len(b) - m + j] + ", ..."
    return a, b


def _mismatch(var: str, logged: Any, cols: tuple[Any, ...]) -> dict[str, Any]:
    """One variable of the closest spec successor that differs from the trace, with the part that
    differs (set elements on one side only; function arguments where the two differ)."""
    out: dict[str, Any] = {"var": var, "logged": logged, "spec": cols[1]}
    if len(cols) == 4:  # a set
        out["only_in_spec"], out["only_in_trace"] = cols[2], cols[3]
        out["summary"] = f"{var}: the spec has {cols[2]} that the trace lacks, the trace has {cols[3]} that the spec lacks"
    elif len(cols) == 3 and isinstance(cols[2], tuple) and len(cols[2]) == 3:  # a function
        keys, spec_at, trace_at = cols[2]
        out["differs_at"], out["spec_at"], out["trace_at"] = keys, spec_at, trace_at
        a, b = _abbrev_pair(spec_at, trace_at)
        out["summary"] = f"{var} differs at {keys}: spec {a}, trace {b}"
    else:
        out["summary"] = f"{var}: trace {json.dumps(logged, separators=(',', ':'))}, spec {cols[1]}"
    return out


# ---- whole runs -------------------------------------------------------------------------------


def plan(paths: Iterable[str | Path], opts: Options, glue: Glue | None = None
         ) -> tuple[list[list[Prepared]], list[TraceResult]]:
    """Read and translate traces; return TLC batches and the verdicts decided without TLC."""
    groups: dict[str, list[Prepared]] = {}
    done: list[TraceResult] = []
    for path in paths:
        try:
            tr = read_trace(path)
        except OSError as exc:
            done.append(TraceResult(trace=str(path), verdict="error", kind="io", message=f"{path}: {exc}"))
            continue
        p = prepare(tr, glue)
        if isinstance(p, TraceResult):
            done.append(p)
        else:
            # cut now: a glue may render values by the trace just translated (replication's renaming)
            p.parts = segments(p, opts.segment)
            groups.setdefault(p.key, []).append(p)
    batches = []
    for g in groups.values():
        for i in range(0, len(g), max(1, opts.batch)):
            batches.append(g[i:i + opts.batch])
    return batches, done


def check_paths(paths: Iterable[str | Path], opts: Options = Options(), glue: Glue | None = None,
                progress: Any = None) -> list[TraceResult]:
    """Check trace files; results in the order of ``paths``.  A long trace whose spec allows it is
    cut into segments (``traces.segment``) that run as TLC processes of their own; ``opts.jobs``
    0 means one process per core when some trace is cut, else one."""
    paths = [str(p) for p in paths]
    batches, done = plan(paths, opts, glue)
    batches, cut = _cut_long(batches, opts)
    results = list(done)
    jobs = opts.jobs if opts.jobs > 0 else ((os.cpu_count() or 1) if cut else 1)
    with cf.ThreadPoolExecutor(max_workers=max(1, jobs)) as ex:
        futs = [ex.submit(check_batch, b, opts) for b in batches]
        seg_futs = [(p, [ex.submit(_check_segment, s, opts) for s in segs]) for p, segs in cut]
        for f in cf.as_completed(futs):
            out = f.result()
            results.extend(out)
            if progress:
                progress(len(out))
        for p, fs in seg_futs:
            results.append(_segmented_verdict(p, [f.result() for f in fs], opts))
            if progress:
                progress(1)
    order = {p: i for i, p in enumerate(paths)}
    results.sort(key=lambda r: order.get(r.trace, len(order)))
    return results


def _cut_long(batches: list[list[Prepared]], opts: Options
              ) -> tuple[list[list[Prepared]], list[tuple[Prepared, list[Prepared]]]]:
    """Take the traces that are cut into segments out of their batches."""
    kept: list[list[Prepared]] = []
    cut: list[tuple[Prepared, list[Prepared]]] = []
    for b in batches:
        rest = []
        for p in b:
            if p.parts:
                cut.append((p, p.parts))
            else:
                rest.append(p)
        if rest:
            kept.append(rest)
    return kept, cut


def _check_segment(seg: Prepared, opts: Options) -> tuple[bool, float]:
    """Does TLC accept this segment from its pinned initial state? (and the run's seconds)"""
    res = _run([seg], "single", attrs.evolve(opts, diagnose=False))
    return _accepted(res), res.seconds


def _segmented_verdict(p: Prepared, runs: list[tuple[bool, float]], opts: Options) -> TraceResult:
    """The verdict on a cut trace: accepted when every segment is; otherwise the trace is checked
    and explained whole, exactly as an uncut trace (same line, kind and diagnosis)."""
    seconds = sum(t for _, t in runs)
    if all(ok for ok, _ in runs):
        r = _accept(p)
        r.seconds, r.tlc_runs = seconds, len(runs)
        return r
    r = localise(p, opts)
    r.seconds += seconds
    r.tlc_runs += len(runs)
    return r


def expand_inputs(inputs: Iterable[str | Path]) -> tuple[list[Path], list[tuple[Path, str]]]:
    """Files as given (always checked); directories searched recursively for ``*.ndjson`` /
    ``*.jsonl`` files whose header says ``"kind": "trace"``.  Other NDJSON files in a directory
    (client histories next to traces) are returned as ignored, with the reason, so the caller can
    report them; a file whose first line is not JSON is kept (and rejected as malformed)."""
    out: list[Path] = []
    ignored: list[tuple[Path, str]] = []
    for x in inputs:
        p = Path(x)
        if not p.is_dir():
            out.append(p)
            continue
        for q in sorted(p.rglob("*")):
            if q.suffix not in (".ndjson", ".jsonl") or not q.is_file():
                continue
            try:
                with open(q, "rb") as f:
                    first = f.readline()
                kind = json.loads(first).get("kind")
            except (OSError, ValueError, AttributeError, RecursionError):
                out.append(q)
                continue
            if kind == "trace":
                out.append(q)
            else:
                ignored.append((q, f"header kind is {kind!r}, not 'trace'"))
    return out, ignored
