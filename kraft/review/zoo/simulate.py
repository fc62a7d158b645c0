"""The first link of the chain: ``kraft simulate`` for every row, whose traces the conformance
cells and whose client histories the audit cells judge."""

from __future__ import annotations

from pathlib import Path

from kraft.core.declaration import Protocol, Variant
from kraft.review.zoo.process import launcher, read_json, run_process, tail
from kraft.review.zoo.state import Sims, Zoo
from kraft.review.zoo.verdict import ERROR, Cell, budget_cell


def simulate_all(zoo: Zoo) -> Sims:
    """Simulate every variant (and the correct protocol) with all faults, a variant with its first
    pinned run (``Variant.sim``) where it declares one; a run that violates an invariant keeps
    going (``--after-violation``) so its client history shows the damage. A row whose simulation
    fails gets its conformance and audit cells here."""
    sims: Sims = {}
    for p in zoo.protocols:
        for v in zoo.members(p):
            if zoo.budget.out():
                break
            name = v.name if v is not None else None
            d = zoo.out / "sim" / p.name / (name or "control")
            code, secs = run_process(_argv(zoo, p, v, d), d / "simulate.log", zoo.budget)
            if code in (0, 1):
                sims[(p.name, name)] = d
                summary = read_json(d / "summary.json") or {}
                zoo.progress(f"simulate   {p.name} {name or 'control'}: {summary.get('summary', code)}")
            else:
                for check in ("conform", "audit"):
                    zoo.set(p.name, name, _failed(check, code, secs, d / "simulate.log"))
    return sims


def _argv(zoo: Zoo, p: Protocol, v: Variant | None, d: Path) -> list[str]:
    pins = v.sim if v is not None else ()
    if pins:
        # the variant's first pinned run (Variant.sim): a seed and fault mix in which the
        # simulator reaches the bug and its client history shows it
        argv = [*launcher(), "simulate", "--protocol", p.name, *pins[0].argv(), "--count", "1", "--out", str(d)]
    else:
        argv = [*launcher(), "simulate", "--protocol", p.name, "--faults", "all", "--seed", "1",
                "--count", str(zoo.plan.seeds), "--steps", str(zoo.plan.steps), "--out", str(d),
                "--after-violation", str(zoo.plan.after_violation)]
    return argv + (["--variant", v.name] if v is not None else [])


def _failed(check: str, code: int | None, secs: float, log: Path) -> Cell:
    if code is None:
        return budget_cell(check, "while simulating")
    return Cell(check, ERROR, secs, detail=f"kraft simulate exit {code}: {tail(log)}", evidence=str(log))

