"""The conformance cells: one ``kraft conform`` over a protocol's simulated traces against the
CORRECT spec; a variant is caught by its first rejected trace line, the control fires on any."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kraft.core.declaration import Protocol, Variant
from kraft.outcome import plural
from kraft.review.zoo.plan import declared_unobservable
from kraft.review.zoo.process import launcher, read_json, run_process, under
from kraft.review.zoo.state import Sims, Zoo
from kraft.review.zoo.verdict import (CAUGHT, CLEAN, ERROR, FIRED, INCONCLUSIVE, MISSED, UNAVAILABLE,
                                      UNOBSERVABLE, Cell)


def conform_all(zoo: Zoo, sims: Sims, protocols: list[Protocol]) -> None:
    """One ``kraft conform`` over the simulated traces of ``protocols`` that have conformance glue."""
    todo: Sims = {}
    for p in protocols:
        glue_missing = _glue_missing(p.name)
        for v in zoo.members(p):
            key = (p.name, v.name if v else None)
            if glue_missing:
                zoo.set(*key, Cell("conform", UNAVAILABLE, detail=glue_missing))
            elif key in sims:
                todo[key] = sims[key]
    if not todo or zoo.out_of_budget(todo, "conform"):
        return
    d = zoo.run_dir("conform", "-".join(p.name for p in protocols))
    (d / "conform.json").unlink(missing_ok=True)
    argv = [*launcher(), "conform", *(str(x) for x in todo.values()), "--out", str(d), "--no-diagnose"]
    ran = run_process(argv, d / "conform.log", zoo.budget)
    doc = read_json(d / "conform.json")

    def judge(p: Protocol, v: Variant | None, sim_dir: Path) -> Cell:
        return cell(v, [r for r in doc.get("results") or [] if under(r.get("trace"), sim_dir)])

    zoo.judge_each(todo, "conform", ran, d / "conform.log", "while TLC checked the traces",
                   judge if isinstance(doc, dict) else None)


def cell(v: Variant | None, results: list[dict[str, Any]]) -> Cell:
    """The conformance cell of variant ``v`` (None: the control) from its traces' results."""
    if not results:
        return Cell("conform", INCONCLUSIVE, detail="no trace was checked")
    rejected = [r for r in results if r.get("verdict") == "rejected"]
    errors = [r for r in results if r.get("verdict") not in ("accepted", "rejected")]
    total = sum(float(r.get("seconds") or 0) for r in results)
    why = declared_unobservable(v, "conform")
    if rejected:
        return _rejected(v, rejected, len(results), why)
    if errors:
        e = errors[0]
        if all(r.get("verdict") == "timeout" for r in errors):
            return Cell("conform", INCONCLUSIVE, total, detail=f"{len(errors)} trace(s) timed out",
                        evidence=e.get("trace"), budget=True)
        return Cell("conform", ERROR, total, detail=f"{e.get('verdict')}: {str(e.get('message', ''))[:200]}",
                    evidence=e.get("trace"))
    if v is None:
        return Cell("conform", CLEAN, total, detail=f"{plural(len(results), 'trace')} accepted")
    if why:
        return Cell("conform", UNOBSERVABLE, total, detail=why)
    return Cell("conform", MISSED, total, detail=f"all {plural(len(results), 'trace')} accepted")


def _rejected(v: Variant | None, rejected: list[dict[str, Any]], of: int, why: str) -> Cell:
    """Caught (fired, for the control) at the earliest rejected line; a rejection of a variant
    declared not observable here is still shown, with the declaration."""
    first = min(rejected, key=lambda r: (r.get("line") or 10**9))
    where = f"{first.get('trace')}:{first.get('line')}"
    detail = f"{first.get('action')} at {where} ({first.get('kind')}); {len(rejected)} of {of} rejected"
    if why:
        detail += f" (declared not observable: {why})"
    return Cell("conform", CAUGHT if v is not None else FIRED, float(first.get("seconds") or 0),
                first.get("line"), "line", detail, where)


def _glue_missing(protocol: str) -> str:
    """Why conformance is not available for ``protocol`` ("" when its glue loads)."""
    try:  # optional: a build without traces/ has no conformance check
        from traces.protocols import get_glue
    except ImportError:
        return "conformance (traces/) is not part of this build"
    try:
        glue = get_glue(protocol)
    except ModuleNotFoundError as exc:
        return f"no conformance glue for {protocol} yet ({exc.name} not found)"
    return "" if glue is not None else f"no conformance glue for {protocol} yet"
