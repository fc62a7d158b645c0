"""The zoo's verdict: the checks, the cell statuses, a cell and a row of the matrix, and the verdict
and summary sentence of a whole matrix (the meaning of each is in the package's description)."""

from __future__ import annotations

from typing import Any

import attrs

from kraft.outcome import Verdict, plural

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
# a row's outcome besides a status: not every cell that could decide it did
UNDECIDED = "undecided"


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


def budget_cell(check: str, what: str = "") -> Cell:
    """The cell of a check the budget stopped (``what``: when, e.g. "while simulating")."""
    return Cell(check, INCONCLUSIVE, detail=f"budget ran out{' ' + what if what else ''}", budget=True)


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
        found, decided = (FIRED, CLEAN) if self.control else (CAUGHT, MISSED)
        if found in st:
            return found
        if ERROR in st:
            return ERROR
        if INCONCLUSIVE in st or len(cells) < len(CHECKS) or decided not in st:
            return UNDECIDED
        return decided

    def to_json(self) -> dict[str, Any]:
        return {"protocol": self.protocol, "spec": self.spec, "variant": self.variant,
                "control": self.control, "violates": self.violates, "doc": self.doc,
                "outcome": self.outcome, "caught_by": self.caught_by,
                "cells": {c: self.cells[c].to_json() for c in CHECKS if c in self.cells}}


# what a row's outcome makes of the zoo's verdict (an outcome not named adds nothing: a caught
# variant, a clean control, and a tool error, which its error cell reports)
_ROW_VERDICT = {MISSED: Verdict.VIOLATION, FIRED: Verdict.VIOLATION, UNDECIDED: Verdict.INCONCLUSIVE}


def zoo_verdict(rows: list[Row], budget_exhausted: bool) -> tuple[Verdict, str]:
    """The zoo's verdict and summary sentence from its rows (pure: the unit tests feed fake rows).

    1: a control cell fired, or a variant was missed by every check that could observe it
    (``not observable`` and ``not available`` cells do not count as misses); 2: a tool failed;
    3: the budget ran out, or a variant/control row stayed undecided; else 0."""
    variants = [r for r in rows if not r.control]
    controls = [r for r in rows if r.control]
    errors = [c for r in rows for c in r.cells.values() if c.status == ERROR]
    parts = [_ROW_VERDICT[r.outcome] for r in rows if r.outcome in _ROW_VERDICT]
    parts += [Verdict.ERROR] * bool(errors) + [Verdict.INCONCLUSIVE] * budget_exhausted
    verdict = Verdict.worst(parts, empty=Verdict.CLEAN) if rows else Verdict.INCONCLUSIVE
    bits = []
    if variants:
        bits.append(_variants_summary(variants))
    if controls:
        bits.append(_controls_summary(controls))
    if errors:
        by_check = sorted({c.check for c in errors})
        bits.append(f"{plural(len(errors), 'tool error')} ({', '.join(by_check)})")
    if budget_exhausted:
        bits.append("budget ran out before every cell was checked")
    return verdict, "; ".join(bits) if bits else "nothing to check"


def _variants_summary(variants: list[Row]) -> str:
    n = len(variants)
    outcomes = [r.outcome for r in variants]
    caught = outcomes.count(CAUGHT)
    multi = sum(len(r.caught_by) >= 2 for r in variants if r.outcome == CAUGHT)
    if caught == n:
        return f"{plural(n, 'variant')}, all caught ({multi} by two or more checks)"
    s = f"{plural(n, 'variant')}: {caught} caught ({multi} by two or more checks)"
    missed = [str(r.variant) for r in variants if r.outcome == MISSED]
    if missed:
        s += f", {len(missed)} missed by every check ({', '.join(missed)})"
    undecided = n - caught - len(missed) - outcomes.count(ERROR)
    if undecided:
        s += f", {undecided} undecided"
    if outcomes.count(ERROR):
        s += f", {outcomes.count(ERROR)} with a tool error"
    return s


def _controls_summary(controls: list[Row]) -> str:
    def cells_of(status: str) -> str:
        return ", ".join(f"{r.protocol} {c}" for r in controls for c in CHECKS
                         if c in r.cells and r.cells[c].status == status)

    outcomes = {r.outcome for r in controls}
    if FIRED in outcomes:
        return "control FIRED: " + cells_of(FIRED)
    if outcomes & {UNDECIDED, ERROR}:
        said = [f"{label}: {cells_of(status)}" for label, status in (("error", ERROR), ("undecided", INCONCLUSIVE))
                if cells_of(status)]
        return "control not fired but not all decided (" + "; ".join(said) + ")"
    return "control clean"
