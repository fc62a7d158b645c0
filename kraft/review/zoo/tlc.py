"""The TLC cells: ``kraft check SPEC --variant V`` for a variant (caught when TLC reports a
counterexample), ``kraft check SPEC --size small`` for the control (clean when it reports none), or
the same run taken from an earlier ``kraft check`` output (``--reuse-tlc``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable

from kraft.core.declaration import Protocol, Variant
from kraft.review.zoo.plan import declared_unobservable
from kraft.review.zoo.process import launcher, read_json, run_process, tail
from kraft.review.zoo.state import Reused, Zoo
from kraft.review.zoo.verdict import (CAUGHT, CLEAN, ERROR, FIRED, INCONCLUSIVE, MISSED, UNOBSERVABLE, Cell,
                                      budget_cell)


def variant_cell(zoo: Zoo, p: Protocol, v: Variant) -> Cell:
    why = declared_unobservable(v, "tlc")
    if why:
        return Cell("tlc", UNOBSERVABLE, detail=why)
    if v.not_caught_by_tlc:
        return Cell("tlc", MISSED, detail=f"known gap (declared): {v.not_caught_by_tlc}")
    if (p.spec_module, v.name) in zoo.reused:
        doc, path = zoo.reused[(p.spec_module, v.name)]
        return judge(doc, path, variant=True, seconds=None)
    return _run(zoo, p.spec_module, v.name, ["--variant", v.name])


def control_cell(zoo: Zoo, p: Protocol) -> Cell:
    if (p.spec_module, None) in zoo.reused:
        doc, path = zoo.reused[(p.spec_module, None)]
        return judge(doc, path, variant=False, seconds=None)
    return _run(zoo, p.spec_module, None, ["--size", "small"])


def _run(zoo: Zoo, spec: str, variant: str | None, which: list[str]) -> Cell:
    if zoo.budget.out():
        return budget_cell("tlc")
    d = zoo.out / "tlc" / spec / (variant or "control")
    argv = [*launcher(), "check", spec, *which, "--workers", "1", "--quiet-trace", "--out", str(d)]
    json_path = d / "check.json"
    json_path.unlink(missing_ok=True)
    code, seconds = run_process(argv, d / "check.log", zoo.budget)
    if code is None:
        return Cell("tlc", INCONCLUSIVE, seconds, detail="budget ran out while TLC ran", budget=True)
    doc = read_json(json_path)
    if not isinstance(doc, dict) or not doc.get("runs"):
        return Cell("tlc", ERROR, seconds, detail=f"exit {code}, no check.json: {tail(d / 'check.log')}",
                    evidence=str(d / "check.log"))
    return judge(doc, json_path, variant is not None, seconds)


def judge(doc: dict[str, Any], path: Path, variant: bool, seconds: float | None) -> Cell:
    """The cell of a one-run check.json document (a variant's run, or the control's)."""
    run = doc["runs"][0]
    status = run.get("status")
    where = f"{run.get('spec')}/{run.get('size')}"
    cell = (_variant_judged if variant else _control_judged)(run, str(path), where, seconds)
    if cell is not None:
        return cell
    secs = _seconds(run, seconds)
    if status == "inconclusive":
        return Cell("tlc", INCONCLUSIVE, secs, detail=f"{run.get('verdict')} ({where})", evidence=str(path))
    return Cell("tlc", ERROR, secs, detail=f"{run.get('verdict')} ({where}) {run.get('note', '')}".strip(),
                evidence=str(path))


def _seconds(run: dict[str, Any], seconds: float | None) -> float | None:
    return run.get("seconds") if run.get("seconds") is not None else seconds


def _steps(run: dict[str, Any]) -> int | None:
    trace = run.get("counterexample") or []
    return max(0, len(trace) - 1) if trace else None  # states minus the initial one


def _variant_judged(run: dict[str, Any], path: str, where: str, seconds: float | None) -> Cell | None:
    status, secs = run.get("status"), _seconds(run, seconds)
    if status == "ok":
        return Cell("tlc", CAUGHT, secs, _steps(run), "steps", f"{run.get('violated')} ({where})", path)
    if status == "missed" and run.get("violated"):
        return Cell("tlc", CAUGHT, secs, _steps(run), "steps",
                    f"{run.get('violated')}, not the declared {run.get('expected')} ({where})", path)
    if status == "missed":
        return Cell("tlc", MISSED, secs, detail=f"no counterexample ({where}, {run.get('verdict')})", evidence=path)
    return None


def _control_judged(run: dict[str, Any], path: str, where: str, seconds: float | None) -> Cell | None:
    status, secs = run.get("status"), _seconds(run, seconds)
    if status == "ok":
        return Cell("tlc", CLEAN, secs, detail=f"{where}: {run.get('distinct', 0):,} distinct states", evidence=path)
    if status == "violation":
        return Cell("tlc", FIRED, secs, _steps(run), "steps", f"{run.get('violated')} ({where})", path)
    return None


def reused_runs(paths: Iterable[Path]) -> Reused:
    """(spec, variant or None) -> a one-run document, from earlier ``kraft check`` outputs: each run
    with a variant, and each run of a spec's ``small`` size without one (the control). Unreadable
    files are skipped (the zoo then runs TLC itself)."""
    out: Reused = {}
    for path in paths:
        doc = read_json(path)
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
