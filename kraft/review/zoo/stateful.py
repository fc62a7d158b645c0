"""The Hypothesis cells: one pytest subprocess per protocol over its stateful test file
(``HYPOTHESIS_FILES`` in plan.py) with the zoo's plug-in (pytest_plugin.py), which runs each
variant's test, then the control tests, and records what each found."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from kraft.core.declaration import Protocol
from kraft.outcome import plural
from kraft.review.zoo.config import PluginConfig
from kraft.review.zoo.plan import HYPOTHESIS_FILES, declared_unobservable
from kraft.review.zoo.process import run_process, tail
from kraft.review.zoo.state import Zoo
from kraft.review.zoo.verdict import (CAUGHT, CLEAN, ERROR, FIRED, INCONCLUSIVE, MISSED, UNAVAILABLE,
                                      UNOBSERVABLE, Cell, budget_cell)

ROOT = Path(__file__).resolve().parents[3]
PLUGIN = "kraft.review.zoo.pytest_plugin"


def hypothesis(zoo: Zoo, p: Protocol) -> None:
    """One pytest subprocess for protocol ``p``: its variant tests, then its control tests."""
    rel = HYPOTHESIS_FILES.get(p.name)
    if rel is None or not (ROOT / rel).exists():
        for key in [(p.name, v.name) for v in p.variants] + [(p.name, None)]:
            zoo.set(*key, Cell("hypothesis", INCONCLUSIVE, detail=(
                f"{rel or 'a stateful test file'} is not present (not a clone of the repository)")))
        return
    selected = _selected(zoo, p)
    keys = [(p.name, name) for name in selected] + [(p.name, None)]
    if zoo.out_of_budget(keys, "hypothesis"):
        return
    code, secs, recs, log = _run_pytest(zoo, p, rel, selected)
    if code not in (None, 0, 1, 5) and not recs:
        for key in keys:
            zoo.set(*key, Cell("hypothesis", ERROR, secs, detail=f"pytest exit {code}: {tail(log)}", evidence=str(log)))
        return
    for name in selected:
        mine = [r for r in recs if r.get("role") == "variant" and r.get("variant") == name]
        zoo.set(p.name, name, variant_cell(mine[0], zoo.plan.max_examples) if mine else
                _nothing_recorded(code, log))
    # control tests that ran a state machine (not the test file's checks of its own tables)
    controls = [r for r in recs if r.get("role") == "control"
                and (r.get("machine", True) or r.get("outcome") == "failed")]
    zoo.set(p.name, None, control_cell(controls, code, str(log)))


def _selected(zoo: Zoo, p: Protocol) -> list[str]:
    """The variants whose test to run; a variant declared not observable by Hypothesis gets its
    cell here."""
    selected = []
    for v in p.variants:
        why = declared_unobservable(v, "hypothesis")
        if why:
            zoo.set(p.name, v.name, Cell("hypothesis", UNOBSERVABLE, detail=why))
        else:
            selected.append(v.name)
    return selected


def _run_pytest(zoo: Zoo, p: Protocol, rel: str,
                selected: list[str]) -> tuple[int | None, float, list[dict[str, Any]], Path]:
    """Run pytest over ``rel`` with the plug-in: (exit code or None, seconds, the records, the log)."""
    d = zoo.out / "hypothesis" / p.name
    d.mkdir(parents=True, exist_ok=True)
    records = d / "tests.jsonl"
    records.unlink(missing_ok=True)
    config = d / "zoo-config.json"
    PluginConfig(records=str(records), variants=p.variant_names, selected=tuple(selected), control=True,
                 max_examples=zoo.plan.max_examples, shrink=zoo.plan.shrink).write(config)
    argv = [sys.executable, "-m", "pytest", "-p", PLUGIN, "--zoo-config", str(config), "-p", "no:cacheprovider",
            "-m", "", "-q", "--durations=0", rel]
    # a fixed hash seed: the machines iterate over sets of strings, so without it the examples
    # Hypothesis finds (and the sizes the matrix shows) differ from one zoo run to the next
    code, secs = run_process(argv, d / "pytest.log", zoo.budget, cwd=ROOT, env={"PYTHONHASHSEED": "0"})
    try:
        recs = [json.loads(ln) for ln in records.read_text().splitlines() if ln.strip()]
    except (OSError, ValueError):
        recs = []
    return code, secs, recs, d / "pytest.log"


def _nothing_recorded(code: int | None, log: Path) -> Cell:
    if code is None:
        return budget_cell("hypothesis", "before its test ran")
    return Cell("hypothesis", ERROR, detail=f"pytest recorded nothing for it (exit {code})", evidence=str(log))


def variant_cell(rec: dict[str, Any], cap: int | None) -> Cell:
    """A variant's cell from the plug-in's record of its test (``cap``: the example cap, if any)."""
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


def control_cell(recs: list[dict[str, Any]], code: int | None, log: str) -> Cell:
    """The control's cell from the plug-in's records of the control tests (``code``: pytest's exit,
    None if the budget stopped it)."""
    if not recs:
        if code is None:
            return budget_cell("hypothesis", "before the control tests ran")
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
