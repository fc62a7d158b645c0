"""The audit cells: one ``kraft audit`` over every row's client histories (linearizability and
Kafka anomalies); a variant is caught by its smallest invalid history, the control fires on any."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kraft.core.declaration import Protocol, Variant
from kraft.outcome import plural
from kraft.review.zoo.plan import declared_unobservable
from kraft.review.zoo.process import launcher, read_json, run_process, under
from kraft.review.zoo.state import Sims, Zoo
from kraft.review.zoo.verdict import CAUGHT, CLEAN, FIRED, INCONCLUSIVE, MISSED, UNAVAILABLE, UNOBSERVABLE, Cell


def audit_all(zoo: Zoo, sims: Sims) -> None:
    """One ``kraft audit`` over every protocol's client histories whose model the audit checks."""
    todo = _todo(zoo, sims)
    if not todo or zoo.out_of_budget(todo, "audit"):
        return
    files = [str(h) for x in todo.values() for h in sorted(x.glob("*/history.ndjson"))]
    if not files:
        for key in todo:
            zoo.set(*key, Cell("audit", INCONCLUSIVE, detail="the simulator wrote no history"))
        return
    d = zoo.run_dir("audit")
    (d / "summary.json").unlink(missing_ok=True)
    # client histories only (lin, kafka): the metadata check reads simulator traces, not clients
    argv = [*launcher(), "audit", *files, "--checks", "lin,kafka", "--budget", str(zoo.plan.lin_budget),
            "--out", str(d)] + ([] if zoo.plan.spark else ["--no-spark"])
    code, secs = run_process(argv, d / "audit.log", zoo.budget)
    summary, results = read_json(d / "summary.json"), read_json(d / "results.json")
    informational = set((summary or {}).get("informational") or {})

    def judge(p: Protocol, v: Variant | None, sim_dir: Path) -> Cell:
        mine = [r for r in results if under(r.get("history"), sim_dir)]
        return cell(p, v, mine, informational, secs / max(1, len(files)))

    zoo.judge_each(todo, "audit", (code, secs), d / "audit.log", "while auditing",
                   judge if isinstance(results, list) else None)


def _todo(zoo: Zoo, sims: Sims) -> Sims:
    """The simulated rows to audit; a protocol whose simulator records no client history gets its
    audit cells here."""
    todo: Sims = {}
    for p in zoo.protocols:
        for v in zoo.members(p):
            key = (p.name, v.name if v else None)
            if p.history_model is None:
                zoo.set(*key, Cell("audit", UNAVAILABLE, detail="the simulator records no client history"))
            elif key in sims:
                todo[key] = sims[key]
    return todo


def cell(p: Protocol, v: Variant | None, results: list[dict[str, Any]], informational: set[str],
         share: float) -> Cell:
    """The audit cell of variant ``v`` (None: the control) from its histories' results; anomaly kinds
    in ``informational`` do not make a history invalid; ``share``: seconds of the audit per history."""
    def kinds(r: dict[str, Any]) -> list[str]:
        return sorted({a.get("kind") for a in r.get("anomalies") or []} - informational - {None})

    seconds = share * max(1, len(results))
    # the audit read every history and no check applied (no Kafka ops, a model it does not know)
    if results and all(not r.get("checks") and not r.get("malformed") for r in results):
        return Cell("audit", UNAVAILABLE, seconds,
                    detail=f"the audit has no check for {p.history_model} histories (no model, no Kafka ops)")
    bad = [r for r in results if r.get("valid") is False and kinds(r)]
    why = declared_unobservable(v, "audit")
    if bad:
        first = min(bad, key=lambda r: r.get("ops") or 10**9)
        detail = f"{', '.join(kinds(first))} in {first.get('history')}; {len(bad)} of {len(results)} invalid"
        if why:
            detail += f" (declared not observable: {why})"
        return Cell("audit", CAUGHT if v is not None else FIRED, seconds, first.get("ops"), "ops", detail,
                    first.get("history"))
    if why:
        return Cell("audit", UNOBSERVABLE, seconds, detail=why)
    return _nothing_found(v, results, seconds)


def _nothing_found(v: Variant | None, results: list[dict[str, Any]], seconds: float) -> Cell:
    undecided = [r for r in results if r.get("valid") not in (True, False)]
    if not results or len(undecided) == len(results):
        reason = (undecided[0].get("malformed") or "unknown") if undecided else "no history"
        return Cell("audit", INCONCLUSIVE, seconds, detail=f"no history decided: {str(reason)[:200]}",
                    evidence=undecided[0].get("history") if undecided else None)
    ops = sum(int(r.get("ops") or 0) for r in results)
    note = f" ({len(undecided)} undecided)" if undecided else ""
    detail = f"{plural(len(results), 'history', 'histories')}, {ops:,} ops, no anomaly{note}"
    return Cell("audit", CLEAN if v is None else MISSED, seconds, detail=detail)
