"""``kraft zoo``: every named bug variant of every protocol through all four checks, side by side.

For each variant declared in ``kraft/<protocol>/protocol.py`` (and for each protocol without a
variant, the control row) the zoo runs:

  tlc         TLC on the spec variant          ``kraft check SPEC --variant V`` (counterexample steps)
  hypothesis  the Hypothesis machine on the    a pytest subprocess over the protocol's stateful test
              implementation variant           file with kraft/review/zoo_pytest.py (example steps)
  conform     the variant's simulated traces   ``kraft simulate --variant V`` then ``kraft conform``
              against the CORRECT spec         per protocol (the first rejected trace line)
  audit       the variant's client histories   one ``kraft audit`` over every variant's histories
                                               (the smallest invalid history's ops)

A cell is ``caught``, ``missed``, ``not observable`` (declared next to the variant, with why:
``Variant.unobservable``), ``not available`` (the check does not exist for this protocol yet, e.g.
no conformance glue), ``inconclusive`` (the budget ran out, or nothing could be decided) or
``error`` (a tool failed). Control cells are ``clean`` or ``fired``.

Exit code (kraft/outcome.py): 1 if a control cell fired or a variant was missed by every check
that could observe it; else 2 if a tool failed; else 3 if the budget ran out before every cell was
decided (or a variant or control cell stayed undecided); else 0.

Work is a list of tasks (the simulate -> conform -> audit chain, each TLC run, one Hypothesis run
per protocol) taken in order by two workers, since the machine has two cores (TLC runs with one
worker). ``--budget`` is one deadline for all of it: every subprocess is stopped at it, the
simulation seeds and Hypothesis examples are scaled down when the budget is small, and cells not
reached are inconclusive. ``--reuse-tlc`` takes TLC cells from earlier ``kraft check`` outputs
(``kraft review`` passes its own model-check and ``--all-variants`` results).

JSON (``OUT/zoo.json``, the shared header first): ``checks`` (id, title, unit), ``rows`` (one per
protocol and variant, the control row first, ``variant: null``), each with ``outcome``,
``caught_by`` and ``cells[check]`` = ``{status, seconds, size, unit, detail, evidence, budget}``.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable, Iterable

import attrs
import click

from kraft import interrupt
from kraft.core.declaration import Protocol, Variant, declarations
from kraft.outcome import EXIT_ERROR, Verdict, clear_documents, header, plural, write_document

ROOT = Path(__file__).resolve().parents[2]

CHECKS = ("tlc", "hypothesis", "conform", "audit")
CHECK_TITLES = {
    "tlc": "TLC (spec variant)",
    "hypothesis": "Hypothesis (implementation)",
    "conform": "Conformance (traces vs correct spec)",
    "audit": "Audit (client histories)",
}
# the unit of each check's counterexample size
UNITS = {"tlc": "steps", "hypothesis": "steps", "conform": "line", "audit": "ops"}

# cell statuses
CAUGHT, MISSED, UNOBSERVABLE, UNAVAILABLE, INCONCLUSIVE, ERROR = (
    "caught", "missed", "not observable", "not available", "inconclusive", "error")
CLEAN, FIRED = "clean", "fired"
VARIANT_STATUSES = (CAUGHT, MISSED, UNOBSERVABLE, UNAVAILABLE, INCONCLUSIVE, ERROR)
CONTROL_STATUSES = (CLEAN, FIRED, UNAVAILABLE, INCONCLUSIVE, ERROR)

# the Hypothesis stateful test file of each protocol (the test layout, not the protocol's vocabulary)
HYPOTHESIS_FILES = {
    "kraft": "tests/quorum/test_stateful.py",
    "groups": "tests/groups/test_group_stateful.py",
    "replication": "tests/replication/test_stateful.py",
}


@attrs.define
class Cell:
    check: str
    status: str
    seconds: float | None = None   # time to detection (caught/fired) or time spent (otherwise)
    size: int | None = None        # counterexample size in ``unit``
    unit: str = ""
    detail: str = ""               # what was found, or why not
    evidence: str | None = None    # a file a reader can open (check.json, trace, history, test id)
    budget: bool = False           # inconclusive because the budget ran out

    def to_json(self) -> dict[str, Any]:
        return attrs.asdict(self)


@attrs.define
class Row:
    protocol: str
    spec: str
    variant: str | None           # None: the control row (the correct protocol)
    violates: str | None = None
    doc: str = ""
    cells: dict[str, Cell] = attrs.field(factory=dict)

    @property
    def control(self) -> bool:
        return self.variant is None

    @property
    def caught_by(self) -> list[str]:
        return [c for c in CHECKS if c in self.cells and self.cells[c].status == CAUGHT]

    @property
    def outcome(self) -> str:
        """control: clean | fired | undecided | error; variant: caught | missed | undecided | error."""
        cells = [self.cells[c] for c in CHECKS if c in self.cells]
        st = {c.status for c in cells}
        if self.control:
            if FIRED in st:
                return FIRED
            if ERROR in st:
                return ERROR
            if INCONCLUSIVE in st or len(cells) < len(CHECKS) or CLEAN not in st:
                return "undecided"
            return CLEAN
        if CAUGHT in st:
            return CAUGHT
        if ERROR in st:
            return ERROR
        if INCONCLUSIVE in st or len(cells) < len(CHECKS) or MISSED not in st:
            return "undecided"
        return MISSED

    def to_json(self) -> dict[str, Any]:
        return {"protocol": self.protocol, "spec": self.spec, "variant": self.variant,
                "control": self.control, "violates": self.violates, "doc": self.doc,
                "outcome": self.outcome, "caught_by": self.caught_by,
                "cells": {c: self.cells[c].to_json() for c in CHECKS if c in self.cells}}


def zoo_verdict(rows: list[Row], budget_exhausted: bool) -> tuple[Verdict, str]:
    """The zoo's verdict and summary sentence from its rows (pure: the unit tests feed fake rows).

    1: a control cell fired, or a variant was missed by every check that could observe it
    (``not observable`` and ``not available`` cells do not count as misses); 2: a tool failed;
    3: the budget ran out, or a variant/control row stayed undecided; else 0."""
    parts: list[Verdict] = []
    variants = [r for r in rows if not r.control]
    controls = [r for r in rows if r.control]
    counts = {k: 0 for k in ("caught", "multi", "missed", "undecided", "error")}
    for r in variants:
        o = r.outcome
        if o == CAUGHT:
            counts["caught"] += 1
            counts["multi"] += len(r.caught_by) >= 2
        elif o == MISSED:
            counts["missed"] += 1
            parts.append(Verdict.VIOLATION)
        elif o == ERROR:
            counts["error"] += 1
        else:
            counts["undecided"] += 1
            parts.append(Verdict.INCONCLUSIVE)
    fired = [r for r in controls if r.outcome == FIRED]
    undecided_controls = [r for r in controls if r.outcome == "undecided"]
    parts += [Verdict.VIOLATION] * len(fired) + [Verdict.INCONCLUSIVE] * len(undecided_controls)
    errors = sum(c.status == ERROR for r in rows for c in r.cells.values())
    if errors:
        parts.append(Verdict.ERROR)
    if budget_exhausted:
        parts.append(Verdict.INCONCLUSIVE)
    verdict = Verdict.worst(parts, empty=Verdict.CLEAN) if rows else Verdict.INCONCLUSIVE

    bits = []
    if variants:
        n = len(variants)
        if counts["caught"] == n:
            bits.append(f"{plural(n, 'variant')}, all caught ({counts['multi']} by two or more checks)")
        else:
            s = f"{plural(n, 'variant')}: {counts['caught']} caught ({counts['multi']} by two or more checks)"
            if counts["missed"]:
                missed = ", ".join(str(r.variant) for r in variants if r.outcome == MISSED)
                s += f", {counts['missed']} missed by every check ({missed})"
            if counts["undecided"]:
                s += f", {counts['undecided']} undecided"
            if counts["error"]:
                s += f", {counts['error']} with a tool error"
            bits.append(s)
    if controls:
        def cells_of(status: str) -> str:
            return ", ".join(f"{r.protocol} {c}" for r in controls for c in CHECKS
                             if c in r.cells and r.cells[c].status == status)
        if fired:
            bits.append("control FIRED: " + cells_of(FIRED))
        elif undecided_controls or any(r.outcome == ERROR for r in controls):
            bits.append("control not fired but not all decided ("
                        + "; ".join(x for x in (cells_of(ERROR) and f"error: {cells_of(ERROR)}",
                                                cells_of(INCONCLUSIVE) and f"undecided: {cells_of(INCONCLUSIVE)}")
                                    if x) + ")")
        else:
            bits.append("control clean")
    if errors:
        by_check = sorted({c.check for r in rows for c in r.cells.values() if c.status == ERROR})
        bits.append(f"{plural(errors, 'tool error')} ({', '.join(by_check)})")
    if budget_exhausted:
        bits.append("budget ran out before every cell was checked")
    return verdict, "; ".join(bits) if bits else "nothing to check"


# --------------------------------------------------------------------------------------------
# running things


class Budget:
    """One deadline shared by every task (``None``: no limit)."""

    def __init__(self, seconds: float | None) -> None:
        self.seconds = seconds
        self.start = time.monotonic()
        self.deadline = None if seconds is None else self.start + seconds
        self.exhausted = False

    def remaining(self) -> float | None:
        if self.deadline is None:
            return None
        return max(0.0, self.deadline - time.monotonic())

    def out(self, reserve: float = 1.0) -> bool:
        r = self.remaining()
        if r is not None and r < reserve:
            self.exhausted = True
            return True
        return False

    def elapsed(self) -> float:
        return time.monotonic() - self.start


def _launcher() -> list[str]:
    """How a subprocess starts the kraft CLI (a seam for tests, as in pipeline.py)."""
    return [sys.executable, "-m", "kraft.cli"]


def run_process(argv: list[str], log: Path, budget: Budget, env: dict[str, str] | None = None,
                cwd: Path | None = None) -> tuple[int | None, float]:
    """Run ``argv`` with its output in ``log``; stop it (its whole process group: TLC's java too)
    at the budget's deadline, or when the zoo is interrupted (kraft/interrupt.py). Returns (exit
    code or None if stopped, seconds)."""
    log.parent.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    with log.open("w") as f:
        code = interrupt.run(argv, timeout=budget.remaining(), stdout=f, stderr=subprocess.STDOUT, cwd=cwd,
                             env={**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})})
    if code is None:
        budget.exhausted = True
    return code, time.monotonic() - start


def _tail(log: Path, n: int = 2) -> str:
    try:
        lines = [ln for ln in log.read_text(errors="replace").splitlines() if ln.strip()]
    except OSError:
        return ""
    return " | ".join(lines[-n:])[:300]


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def _budget_cell(check: str, what: str = "") -> Cell:
    return Cell(check, INCONCLUSIVE, detail=f"budget ran out{' ' + what if what else ''}", budget=True)


@attrs.define
class Plan:
    """What one zoo run does (derived from the budget)."""

    seeds: int = 2
    steps: int = 800
    after_violation: int = 200
    max_examples: int | None = None  # cap on Hypothesis examples (None: the tests' own budgets)
    shrink: bool = True              # False: report Hypothesis's first falsifying example unshrunk
    spark: bool = True
    # check.json documents of earlier `kraft check` runs whose runs stand in for the zoo's own TLC
    # runs (a run of variant V: V's cell; a run of a spec's ``small`` size without variant: its control)
    reuse_tlc: tuple[Path, ...] = ()
    workers: int = 2
    # seconds of linearizability search per history in the zoo's audit: a variant's history that
    # the search cannot refute quickly (an append-log with divergent offsets: minutes) is decided
    # by its Kafka anomalies, and the control's valid histories are decided in milliseconds
    lin_budget: float = 20.0

    @classmethod
    def for_budget(cls, budget: float | None, **kw: Any) -> "Plan":
        # measured on the shared 2-core machine: conformance costs about as much per trace event
        # as everything else together, so seeds and steps shrink first
        if budget is None:
            return cls(**kw)
        if budget >= 900:
            return cls(max_examples=1000, **kw)
        if budget >= 300:
            # 600 examples: StaleAlterPartitionRejoin's search needs about 550
            return cls(seeds=1, max_examples=600, shrink=False, **kw)
        return cls(seeds=1, steps=500, after_violation=100, max_examples=100, shrink=False, **kw)


class Zoo:
    def __init__(self, protocols: list[Protocol], out: Path, budget: Budget, plan: Plan,
                 progress: Callable[[str], None] = lambda s: None) -> None:
        self.protocols = protocols
        self.out = out
        self.budget = budget
        self.plan = plan
        self.progress = progress
        self.lock = threading.Lock()
        self.rows: list[Row] = []
        for p in protocols:
            self.rows.append(Row(p.name, p.spec_module, None, doc="the correct protocol (control)"))
            for v in p.variants:
                self.rows.append(Row(p.name, p.spec_module, v.name, v.violates, v.doc))
        self.errors: list[str] = []
        self.reused: dict[tuple[str, str | None], tuple[dict[str, Any], Path]] = {}

    # -- bookkeeping
    def row(self, protocol: str, variant: str | None) -> Row:
        for r in self.rows:
            if r.protocol == protocol and r.variant == variant:
                return r
        raise KeyError((protocol, variant))

    def set(self, protocol: str, variant: str | None, cell: Cell) -> None:
        with self.lock:
            self.row(protocol, variant).cells[cell.check] = cell
        who = f"{protocol} {variant or 'control'}"
        extra = f" ({cell.size} {cell.unit})" if cell.size is not None else ""
        secs = f" in {cell.seconds:.1f}s" if cell.seconds is not None else ""
        self.progress(f"{cell.check:<10} {who}: {cell.status}{secs}{extra}")

    def _declared_unobservable(self, p: Protocol, v: Variant | None, check: str) -> str:
        if v is None:
            return ""
        return str(getattr(v, "unobservable", {}).get(check, ""))

    # -- the whole run
    def tasks(self) -> list[tuple[str, Callable[[], None]]]:
        """Every unit of work, most cells per second first: the simulate -> conform -> audit chain
        (two checks of every row), the Hypothesis runs (one per protocol, seconds each when not
        shrinking), the TLC variants, the TLC controls last. Two workers take them in this order."""
        out: list[tuple[str, Callable[[], None]]] = [("simulate, conform, audit", self.chain)]
        for p in self.protocols:
            out.append((f"hypothesis {p.name}", lambda p=p: self.hypothesis(p)))
        for p in self.protocols:
            for v in p.variants:
                out.append((f"tlc {v.name}", lambda p=p, v=v: self.set(p.name, v.name, self.tlc_variant(p, v))))
        for p in self.protocols:
            out.append((f"tlc control {p.spec_module}", lambda p=p: self.set(p.name, None, self.tlc_control(p))))
        return out

    def run(self) -> None:
        self.reused = _reused_tlc(self.plan.reuse_tlc)
        queue = list(self.tasks())

        def worker() -> None:
            while True:
                with self.lock:
                    if not queue:
                        return
                    name, task = queue.pop(0)
                try:
                    task()
                except Exception as exc:  # noqa: BLE001 - a task's failure is reported, not a traceback
                    with self.lock:
                        self.errors.append(f"{name}: {type(exc).__name__}: {exc}")

        threads = [threading.Thread(target=worker, name=f"zoo-{i}") for i in range(max(1, self.plan.workers))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        # any cell not reached
        for r in self.rows:
            for c in CHECKS:
                if c not in r.cells:
                    r.cells[c] = _budget_cell(c, "before this cell") if self.budget.exhausted else \
                        Cell(c, ERROR, detail="not run (its task failed; see the errors in zoo.json)")

    # -- TLC
    def tlc_variant(self, p: Protocol, v: Variant) -> Cell:
        why = self._declared_unobservable(p, v, "tlc")
        if why:
            return Cell("tlc", UNOBSERVABLE, detail=why)
        if v.not_caught_by_tlc:
            return Cell("tlc", MISSED, detail=f"known gap (declared): {v.not_caught_by_tlc}")
        if (p.spec_module, v.name) in self.reused:
            doc, path = self.reused[(p.spec_module, v.name)]
            return self._tlc_judge(doc, path, variant=True, seconds=None)
        if self.budget.out():
            return _budget_cell("tlc")
        d = self.out / "tlc" / p.spec_module / v.name
        argv = [*_launcher(), "check", p.spec_module, "--variant", v.name, "--workers", "1", "--quiet-trace",
                "--out", str(d)]
        return self._tlc_cell(argv, d, variant=True)

    def tlc_control(self, p: Protocol) -> Cell:
        if (p.spec_module, None) in self.reused:
            doc, path = self.reused[(p.spec_module, None)]
            return self._tlc_judge(doc, path, variant=False, seconds=None)
        if self.budget.out():
            return _budget_cell("tlc")
        d = self.out / "tlc" / p.spec_module / "control"
        argv = [*_launcher(), "check", p.spec_module, "--size", "small", "--workers", "1", "--quiet-trace",
                "--out", str(d)]
        return self._tlc_cell(argv, d, variant=False)

    def _tlc_cell(self, argv: list[str], d: Path, variant: bool) -> Cell:
        json_path = d / "check.json"
        json_path.unlink(missing_ok=True)
        code, seconds = run_process(argv, d / "check.log", self.budget)
        if code is None:
            return Cell("tlc", INCONCLUSIVE, seconds, detail="budget ran out while TLC ran", budget=True)
        doc = _read_json(json_path)
        if not isinstance(doc, dict) or not doc.get("runs"):
            return Cell("tlc", ERROR, seconds, detail=f"exit {code}, no check.json: {_tail(d / 'check.log')}",
                        evidence=str(d / "check.log"))
        return self._tlc_judge(doc, json_path, variant, seconds)

    @staticmethod
    def _tlc_judge(doc: dict[str, Any], path: Path, variant: bool, seconds: float | None) -> Cell:
        run = doc["runs"][0]
        trace = run.get("counterexample") or []
        steps = max(0, len(trace) - 1) if trace else None  # states minus the initial one
        secs = run.get("seconds") if run.get("seconds") is not None else seconds
        where = f"{run.get('spec')}/{run.get('size')}"
        status = run.get("status")
        if variant:
            if status == "ok":
                return Cell("tlc", CAUGHT, secs, steps, "steps", f"{run.get('violated')} ({where})", str(path))
            if status == "missed" and run.get("violated"):
                return Cell("tlc", CAUGHT, secs, steps, "steps",
                            f"{run.get('violated')}, not the declared {run.get('expected')} ({where})", str(path))
            if status == "missed":
                return Cell("tlc", MISSED, secs, detail=f"no counterexample ({where}, {run.get('verdict')})",
                            evidence=str(path))
        else:
            if status == "ok":
                return Cell("tlc", CLEAN, secs, detail=f"{where}: {run.get('distinct', 0):,} distinct states",
                            evidence=str(path))
            if status == "violation":
                return Cell("tlc", FIRED, secs, steps, "steps", f"{run.get('violated')} ({where})", str(path))
        if status == "inconclusive":
            return Cell("tlc", INCONCLUSIVE, secs, detail=f"{run.get('verdict')} ({where})", evidence=str(path))
        return Cell("tlc", ERROR, secs, detail=f"{run.get('verdict')} ({where}) {run.get('note', '')}".strip(),
                    evidence=str(path))

    # -- the implementation
    def chain(self) -> None:
        """Simulate, then the one audit (seconds), then one conformance run per protocol (the
        costly part: a budget that runs out keeps the protocols already decided)."""
        sims = self.simulate_all()
        self.audit_all(sims)
        for p in self.protocols:
            self.conform_all(sims, [p])

    def _sim_dir(self, p: Protocol, variant: str | None) -> Path:
        return self.out / "sim" / p.name / (variant or "control")

    def simulate_all(self) -> dict[tuple[str, str | None], Path]:
        """Simulate every variant (and the correct protocol) with all faults, a variant with its first
        pinned run (``Variant.sim``) where it declares one; a run that violates an invariant keeps
        going (``--after-violation``) so its client history shows the damage."""
        sims: dict[tuple[str, str | None], Path] = {}
        after = _simulate_has_after_violation()
        for p in self.protocols:
            for v in (None, *p.variants):
                name = v.name if v is not None else None
                if self.budget.out():
                    break
                d = self._sim_dir(p, name)
                pins = tuple(getattr(v, "sim", ())) if v is not None else ()
                if pins and after:
                    # the variant's first pinned run (Variant.sim): a seed and fault mix in which the
                    # simulator reaches the bug and its client history shows it
                    argv = [*_launcher(), "simulate", "--protocol", p.name, *pins[0].argv(), "--count", "1",
                            "--out", str(d)]
                else:
                    argv = [*_launcher(), "simulate", "--protocol", p.name, "--faults", "all", "--seed", "1",
                            "--count", str(self.plan.seeds), "--steps", str(self.plan.steps), "--out", str(d)]
                    if after:
                        argv += ["--after-violation", str(self.plan.after_violation)]
                if name:
                    argv += ["--variant", name]
                code, secs = run_process(argv, d / "simulate.log", self.budget)
                if code in (0, 1):
                    sims[(p.name, name)] = d
                    summary = _read_json(d / "summary.json") or {}
                    self.progress(f"simulate   {p.name} {name or 'control'}: {summary.get('summary', code)}")
                else:
                    why = "budget ran out while simulating" if code is None else \
                        f"kraft simulate exit {code}: {_tail(d / 'simulate.log')}"
                    for check in ("conform", "audit"):
                        cell = (_budget_cell(check, "while simulating") if code is None
                                else Cell(check, ERROR, secs, detail=why, evidence=str(d / "simulate.log")))
                        self.set(p.name, name, cell)
        return sims

    def conform_all(self, sims: dict[tuple[str, str | None], Path], protocols: list[Protocol]) -> None:
        """One ``kraft conform`` over the simulated traces of ``protocols`` that have conformance glue."""
        todo: dict[tuple[str, str | None], Path] = {}
        for p in protocols:
            glue_missing = _glue_missing(p.name)
            for v in (None, *p.variants):
                key = (p.name, v.name if v else None)
                if glue_missing:
                    self.set(*key, Cell("conform", UNAVAILABLE, detail=glue_missing))
                elif key in sims:
                    todo[key] = sims[key]
        if not todo:
            return
        if self.budget.out():
            for key in todo:
                self.set(*key, _budget_cell("conform"))
            return
        d = self.out / "conform" / "-".join(p.name for p in protocols)
        (d / "conform.json").unlink(missing_ok=True)
        argv = [*_launcher(), "conform", *(str(x) for x in todo.values()), "--out", str(d), "--no-diagnose"]
        code, secs = run_process(argv, d / "conform.log", self.budget)
        doc = _read_json(d / "conform.json")
        if code is None or not isinstance(doc, dict):
            for key in todo:
                self.set(*key, _budget_cell("conform", "while TLC checked the traces") if code is None else
                         Cell("conform", ERROR, secs, detail=f"kraft conform exit {code}: {_tail(d / 'conform.log')}",
                              evidence=str(d / "conform.log")))
            return
        results = doc.get("results") or []
        for key, sim_dir in todo.items():
            p = next(x for x in self.protocols if x.name == key[0])
            v = p.variant(key[1]) if key[1] else None
            mine = [r for r in results if _under(r.get("trace"), sim_dir)]
            self.set(*key, self._conform_cell(p, v, mine))

    def _conform_cell(self, p: Protocol, v: Variant | None, results: list[dict[str, Any]]) -> Cell:
        if not results:
            return Cell("conform", INCONCLUSIVE, detail="no trace was checked")
        rejected = [r for r in results if r.get("verdict") == "rejected"]
        errors = [r for r in results if r.get("verdict") not in ("accepted", "rejected")]
        total = sum(float(r.get("seconds") or 0) for r in results)
        if rejected:
            first = min(rejected, key=lambda r: (r.get("line") or 10**9))
            where = f"{first.get('trace')}:{first.get('line')}"
            detail = (f"{first.get('action')} at {where} ({first.get('kind')}); "
                      f"{len(rejected)} of {len(results)} rejected")
            cell = Cell("conform", CAUGHT if v is not None else FIRED, float(first.get("seconds") or 0),
                        first.get("line"), "line", detail, where)
            why = self._declared_unobservable(p, v, "conform")
            if why:
                cell.detail += f" (declared not observable: {why})"
            return cell
        if errors:
            e = errors[0]
            if all(r.get("verdict") == "timeout" for r in errors):
                return Cell("conform", INCONCLUSIVE, total, detail=f"{len(errors)} trace(s) timed out",
                            evidence=e.get("trace"), budget=True)
            return Cell("conform", ERROR, total, detail=f"{e.get('verdict')}: {str(e.get('message', ''))[:200]}",
                        evidence=e.get("trace"))
        if v is None:
            return Cell("conform", CLEAN, total, detail=f"{plural(len(results), 'trace')} accepted")
        why = self._declared_unobservable(p, v, "conform")
        if why:
            return Cell("conform", UNOBSERVABLE, total, detail=why)
        return Cell("conform", MISSED, total, detail=f"all {plural(len(results), 'trace')} accepted")

    def audit_all(self, sims: dict[tuple[str, str | None], Path]) -> None:
        """One ``kraft audit`` over every protocol's client histories whose model the audit checks."""
        todo: dict[tuple[str, str | None], Path] = {}
        for p in self.protocols:
            for v in (None, *p.variants):
                key = (p.name, v.name if v else None)
                if p.history_model is None:
                    self.set(*key, Cell("audit", UNAVAILABLE, detail="the simulator records no client history"))
                elif key in sims:
                    todo[key] = sims[key]
        if not todo:
            return
        if self.budget.out():
            for key in todo:
                self.set(*key, _budget_cell("audit"))
            return
        d = self.out / "audit"
        (d / "summary.json").unlink(missing_ok=True)
        files = [str(h) for x in todo.values() for h in sorted(x.glob("*/history.ndjson"))]
        if not files:
            for key in todo:
                self.set(*key, Cell("audit", INCONCLUSIVE, detail="the simulator wrote no history"))
            return
        # client histories only (lin, kafka): the metadata check reads simulator traces, not clients
        argv = [*_launcher(), "audit", *files, "--checks", "lin,kafka", "--budget", str(self.plan.lin_budget),
                "--out", str(d)]
        if not self.plan.spark:
            argv.append("--no-spark")
        code, secs = run_process(argv, d / "audit.log", self.budget)
        summary = _read_json(d / "summary.json")
        results = _read_json(d / "results.json")
        if code is None or not isinstance(results, list):
            for key in todo:
                self.set(*key, _budget_cell("audit", "while auditing") if code is None else
                         Cell("audit", ERROR, secs, detail=f"kraft audit exit {code}: {_tail(d / 'audit.log')}",
                              evidence=str(d / "audit.log")))
            return
        informational = set((summary or {}).get("informational") or {})
        share = secs / max(1, len(files))
        for key, sim_dir in todo.items():
            p = next(x for x in self.protocols if x.name == key[0])
            v = p.variant(key[1]) if key[1] else None
            mine = [r for r in results if _under(r.get("history"), sim_dir)]
            self.set(*key, self._audit_cell(p, v, mine, informational, share))

    def _audit_cell(self, p: Protocol, v: Variant | None, results: list[dict[str, Any]],
                    informational: set[str], share: float) -> Cell:
        def kinds(r: dict[str, Any]) -> list[str]:
            return sorted({a.get("kind") for a in r.get("anomalies") or []} - informational - {None})

        bad = [r for r in results if r.get("valid") is False and kinds(r)]
        seconds = share * max(1, len(results))
        # the audit read every history and no check applied (no Kafka ops, a model it does not know)
        if results and all(not r.get("checks") and not r.get("malformed") for r in results):
            return Cell("audit", UNAVAILABLE, seconds,
                        detail=f"the audit has no check for {p.history_model} histories (no model, no Kafka ops)")
        if bad:
            first = min(bad, key=lambda r: r.get("ops") or 10**9)
            detail = f"{', '.join(kinds(first))} in {first.get('history')}; {len(bad)} of {len(results)} invalid"
            cell = Cell("audit", CAUGHT if v is not None else FIRED, seconds, first.get("ops"), "ops", detail,
                        first.get("history"))
            why = self._declared_unobservable(p, v, "audit")
            if why:
                cell.detail += f" (declared not observable: {why})"
            return cell
        undecided = [r for r in results if r.get("valid") not in (True, False)]
        why = self._declared_unobservable(p, v, "audit")
        if why:
            return Cell("audit", UNOBSERVABLE, seconds, detail=why)
        if not results or len(undecided) == len(results):
            reason = (undecided[0].get("malformed") or "unknown") if undecided else "no history"
            return Cell("audit", INCONCLUSIVE, seconds, detail=f"no history decided: {str(reason)[:200]}",
                        evidence=undecided[0].get("history") if undecided else None)
        ops = sum(int(r.get("ops") or 0) for r in results)
        tail = f" ({len(undecided)} undecided)" if undecided else ""
        if v is None:
            return Cell("audit", CLEAN, seconds, detail=f"{plural(len(results), 'history', 'histories')}, "
                                                        f"{ops:,} ops, no anomaly{tail}")
        return Cell("audit", MISSED, seconds, detail=f"{plural(len(results), 'history', 'histories')}, "
                                                     f"{ops:,} ops, no anomaly{tail}")

    def hypothesis(self, p: Protocol) -> None:
        """One pytest subprocess per protocol: its variant tests, then its control tests."""
        keys = [(p.name, v.name) for v in p.variants] + [(p.name, None)]
        rel = HYPOTHESIS_FILES.get(p.name)
        if rel is None or not (ROOT / rel).exists():
            for key in keys:
                self.set(*key, Cell("hypothesis", INCONCLUSIVE, detail=(
                    f"{rel or 'a stateful test file'} is not present (not a clone of the repository)")))
            return
        only = []
        for v in p.variants:
            why = self._declared_unobservable(p, v, "hypothesis")
            if why:
                self.set(p.name, v.name, Cell("hypothesis", UNOBSERVABLE, detail=why))
            else:
                only.append(v.name)
        if self.budget.out():
            for key in keys:
                if key[1] is None or key[1] in only:
                    self.set(*key, _budget_cell("hypothesis"))
            return
        d = self.out / "hypothesis" / p.name
        d.mkdir(parents=True, exist_ok=True)
        records = d / "tests.jsonl"
        records.unlink(missing_ok=True)
        env = {"KRAFT_ZOO_OUT": str(records), "KRAFT_ZOO_VARIANTS": ",".join(p.variant_names),
               "KRAFT_ZOO_ONLY": ",".join(only), "KRAFT_ZOO_CONTROL": "1"}
        if self.plan.max_examples:
            env["KRAFT_ZOO_MAX_EXAMPLES"] = str(self.plan.max_examples)
        if not self.plan.shrink:
            env["KRAFT_ZOO_NO_SHRINK"] = "1"
        argv = [sys.executable, "-m", "pytest", "-p", "kraft.review.zoo_pytest", "-p", "no:cacheprovider",
                "-m", "", "-q", "--durations=0", rel]
        code, secs = run_process(argv, d / "pytest.log", self.budget, env=env, cwd=ROOT)
        recs = []
        try:
            recs = [json.loads(ln) for ln in records.read_text().splitlines() if ln.strip()]
        except (OSError, ValueError):
            recs = []
        if code not in (None, 0, 1, 5) and not recs:
            for key in keys:
                if key[1] is None or key[1] in only:
                    self.set(*key, Cell("hypothesis", ERROR, secs,
                                        detail=f"pytest exit {code}: {_tail(d / 'pytest.log')}",
                                        evidence=str(d / "pytest.log")))
            return
        for name in only:
            mine = [r for r in recs if r.get("role") == "variant" and r.get("variant") == name]
            if not mine:
                self.set(p.name, name, _budget_cell("hypothesis", "before its test ran") if code is None else
                         Cell("hypothesis", ERROR, detail=f"pytest recorded nothing for it (exit {code})",
                              evidence=str(d / "pytest.log")))
            else:
                self.set(p.name, name, _hypothesis_variant_cell(mine[0], self.plan.max_examples))
        # control tests that ran a state machine (not the test file's checks of its own tables)
        controls = [r for r in recs if r.get("role") == "control"
                    and (r.get("machine", True) or r.get("outcome") == "failed")]
        self.set(p.name, None, _hypothesis_control_cell(controls, code, str(d / "pytest.log")))


def _hypothesis_variant_cell(rec: dict[str, Any], cap: int | None) -> Cell:
    test = rec.get("test")
    if rec.get("outcome") == "absent":
        return Cell("hypothesis", UNAVAILABLE, detail="no Hypothesis test is named for this variant")
    secs = rec.get("seconds")
    if rec.get("found"):
        detail = str(rec.get("violation") or "")
        if rec.get("shrunk") is False:
            detail += " (first example, not shrunk)"
        if rec.get("outcome") == "failed":
            detail += f" (the test itself failed: {rec.get('longrepr')})"
        return Cell("hypothesis", CAUGHT, secs, rec.get("steps"), "steps", detail, test)
    if rec.get("outcome") == "passed":
        return Cell("hypothesis", CAUGHT, secs, detail="the test passed (no example size recorded)", evidence=test)
    if rec.get("outcome") == "skipped":
        return Cell("hypothesis", INCONCLUSIVE, secs, detail="test skipped", evidence=test)
    if rec.get("capped"):
        return Cell("hypothesis", INCONCLUSIVE, secs, detail=f"no falsifying example within the budget's cap "
                                                             f"of {cap} examples", evidence=test, budget=True)
    return Cell("hypothesis", MISSED, secs, detail=f"no falsifying example: {rec.get('longrepr')}", evidence=test)


def _hypothesis_control_cell(recs: list[dict[str, Any]], code: int | None, log: str) -> Cell:
    if not recs:
        if code is None:
            return _budget_cell("hypothesis", "before the control tests ran")
        return Cell("hypothesis", INCONCLUSIVE, detail="no control test selected", evidence=log)
    secs = sum(float(r.get("seconds") or 0) for r in recs)
    failed = [r for r in recs if r.get("outcome") == "failed"]
    if failed:
        f = failed[0]
        return Cell("hypothesis", FIRED, f.get("seconds"), f.get("steps"), "steps",
                    f"{f.get('test')}: {f.get('violation') or f.get('longrepr')}", f.get("test"))
    capped = any(r.get("capped") for r in recs)
    detail = f"{plural(len(recs), 'test')} passed" + (" (examples capped by the budget)" if capped else "")
    if code is None:
        return Cell("hypothesis", INCONCLUSIVE, secs, detail=detail + "; budget ran out before the rest", budget=True)
    return Cell("hypothesis", CLEAN, secs, detail=detail, evidence=log)


def _reused_tlc(paths: Iterable[Path]) -> dict[tuple[str, str | None], tuple[dict[str, Any], Path]]:
    """(spec, variant or None) -> a one-run document, from earlier ``kraft check`` outputs: each run
    with a variant, and each run of a spec's ``small`` size without one (the control). Unreadable
    files are skipped (the zoo then runs TLC itself)."""
    out: dict[tuple[str, str | None], tuple[dict[str, Any], Path]] = {}
    for path in paths:
        doc = _read_json(path)
        if not isinstance(doc, dict):
            continue
        for run in doc.get("runs") or []:
            if not isinstance(run, dict) or run.get("status") == "skipped":
                continue
            if run.get("variant"):
                out[(str(run.get("spec")), str(run["variant"]))] = ({"runs": [run]}, path)
            elif run.get("size") == "small":
                out[(str(run.get("spec")), None)] = ({"runs": [run]}, path)
    return out


def _under(path: Any, root: Path) -> bool:
    if not isinstance(path, str):
        return False
    try:
        Path(path).resolve().relative_to(root.resolve())
        return True
    except ValueError:
        return False


def _glue_missing(protocol: str) -> str:
    """Why conformance is not available for ``protocol`` ("" when its glue loads)."""
    try:
        from traces.protocols import get_glue
    except ImportError:
        return "conformance (traces/) is not part of this build"
    try:
        glue = get_glue(protocol)
    except ModuleNotFoundError as exc:
        return f"no conformance glue for {protocol} yet ({exc.name} not found)"
    return "" if glue is not None else f"no conformance glue for {protocol} yet"


def _simulate_has_after_violation() -> bool:
    try:
        from kraft.sim.cli import simulate
    except ImportError:
        return False
    return any(getattr(p, "name", None) == "after_violation" for p in simulate.params)


# --------------------------------------------------------------------------------------------
# output

_STYLE = {CAUGHT: "green", CLEAN: "green", MISSED: "bold red", FIRED: "bold red", UNOBSERVABLE: "cyan",
          UNAVAILABLE: "dim", INCONCLUSIVE: "yellow", ERROR: "magenta"}


def cell_text(c: Cell) -> str:
    bits = [c.status]
    if c.seconds is not None and c.status in (CAUGHT, FIRED, CLEAN, MISSED):
        bits.append(f"{c.seconds:.1f}s")
    text = " ".join(bits)
    if c.size is not None:
        text += f"\n{c.size} {c.unit}" if c.unit != "line" else f"\nline {c.size}"
    return text


def print_matrix(rows: list[Row], console: Any) -> None:
    from rich.markup import escape
    from rich.table import Table

    table = Table(title="kraft zoo", show_lines=False)
    table.add_column("protocol")
    table.add_column("variant")
    for c in CHECKS:
        table.add_column(CHECK_TITLES[c].split(" (")[0])
    table.add_column("outcome")
    last = None
    for r in rows:
        if last is not None and r.protocol != last:
            table.add_section()
        last = r.protocol
        cells = []
        for c in CHECKS:
            cell = r.cells.get(c)
            cells.append("" if cell is None else f"[{_STYLE.get(cell.status, '')}]{escape(cell_text(cell))}[/]")
        o = r.outcome
        style = _STYLE.get(o, "yellow")
        table.add_row(escape(r.spec), escape(r.variant or "(control)"), *cells, f"[{style}]{escape(o)}[/]")
    console.print(table)


def matrix_markdown(rows: list[Row]) -> str:
    """The matrix as a Markdown table (for the README)."""
    head = "| protocol | variant | " + " | ".join(CHECK_TITLES[c].split(" (")[0] for c in CHECKS) + " |"
    lines = [head, "| --- | --- | " + " | ".join("---" for _ in CHECKS) + " |"]
    for r in rows:
        cells = [cell_text(r.cells[c]).replace("\n", ", ") if c in r.cells else "" for c in CHECKS]
        lines.append(f"| {r.spec} | {r.variant or '(control)'} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def zoo_document(rows: list[Row], verdict: Verdict, summary: str, budget: Budget, plan: Plan,
                 errors: list[str]) -> dict[str, Any]:
    return header("zoo", verdict, summary, {
        "v": 1,
        "generated": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "seconds": round(budget.elapsed(), 1),
        "budget": budget.seconds,
        "budget_exhausted": budget.exhausted,
        "plan": {"seeds": plan.seeds, "steps": plan.steps, "after_violation": plan.after_violation, "lin_budget": plan.lin_budget,
                 "max_examples": plan.max_examples, "shrink": plan.shrink, "spark": plan.spark},
        "checks": [{"id": c, "title": CHECK_TITLES[c], "unit": UNITS[c]} for c in CHECKS],
        "statuses": {"variant": list(VARIANT_STATUSES), "control": list(CONTROL_STATUSES)},
        "rows": [r.to_json() for r in rows],
        "errors": errors,
    })


def select_protocols(names: Iterable[str]) -> list[Protocol]:
    all_ = declarations()
    names = list(names)
    if not names:
        return all_
    out = []
    for n in names:
        match = [p for p in all_ if n in (p.name, p.spec_module)]
        if not match:
            raise click.UsageError(f"unknown protocol {n!r} (known: {', '.join(p.name for p in all_)})")
        out.extend(m for m in match if m not in out)
    return out


@click.command()
@click.option("--protocol", "protocols", multiple=True,
              help="Protocol to run (kraft, groups, replication; or the spec name); repeatable. Default: all.")
@click.option("--budget", type=click.FloatRange(min=1), default=None,
              help="Seconds for the whole zoo: seeds and examples are scaled down, cells not reached are "
                   "inconclusive (exit 3).")
@click.option("--out", "out_dir", type=click.Path(file_okay=False), default="results/zoo", show_default=True,
              help="Directory for OUT/zoo.json and every check's output.")
@click.option("--json", "as_json", is_flag=True, help="Print zoo.json to stdout instead of the matrix.")
@click.option("--no-spark", is_flag=True, help="Audit in-process instead of with local Spark (small runs).")
@click.option("--reuse-tlc", "reuse_tlc", multiple=True, type=click.Path(dir_okay=False),
              help="check.json of an earlier `kraft check` whose runs stand in for the zoo's TLC runs (a "
                   "variant's run; a spec's small run as its control); repeatable. kraft review passes its own.")
@click.option("--workers", type=click.IntRange(min=1), default=2, show_default=True,
              help="Checks run at once (each TLC run uses one worker).")
def zoo(protocols: tuple[str, ...], budget: float | None, out_dir: str, as_json: bool, no_spark: bool,
        reuse_tlc: tuple[str, ...], workers: int) -> None:
    """Every bug variant of every protocol through all four checks (TLC, Hypothesis, conformance,
    audit), with the correct protocols as a control row.

    Exit 1 if a control cell fired or a variant was missed by every check; 2 on a tool or usage
    error; 3 if the budget ran out before everything was checked; else 0."""
    from rich.console import Console

    try:
        selected = select_protocols(protocols)
    except click.UsageError as exc:
        click.echo(f"kraft zoo: {exc.message}", err=True)
        sys.exit(EXIT_ERROR)
    out = Path(out_dir)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        click.echo(f"kraft zoo: cannot create {out}: {exc.strerror or exc}", err=True)
        sys.exit(EXIT_ERROR)
    err = Console(stderr=True)
    live = err.is_terminal and not os.environ.get("CI") and not as_json
    b = Budget(budget)
    plan = Plan.for_budget(budget, spark=not no_spark, reuse_tlc=tuple(Path(x) for x in reuse_tlc),
                           workers=workers)

    def progress(line: str) -> None:
        if live:
            from rich.markup import escape

            err.print(f"[dim]{b.elapsed():6.1f}s[/] {escape(line)}")

    z = Zoo(selected, out, b, plan, progress)
    clear_documents(out / "zoo.json")  # written again once every cell is decided
    z.run()
    verdict, summary = zoo_verdict(z.rows, b.exhausted)
    if z.errors:
        verdict = Verdict.worst([verdict, Verdict.ERROR])
        summary += "; " + "; ".join(z.errors)
    doc = zoo_document(z.rows, verdict, summary, b, plan, z.errors)
    write_document(out / "zoo.json", json.dumps(doc, indent=2))
    if as_json:
        click.echo(json.dumps(doc, indent=2))
    else:
        console = Console(width=None if sys.stdout.isatty() else 200)
        print_matrix(z.rows, console)
        from rich.markup import escape

        console.print(escape(summary))
        console.print(f"wrote {escape(str(out / 'zoo.json'))} ({b.elapsed():.0f}s)")
    sys.exit(verdict.exit_code)
