"""One zoo task where a cluster runs it (``kraft zoo --master``): the executor rebuilds the task
from the protocols' names and its index, runs it with the same code as a local zoo (run.py's
``do``: the same kraft CLI and pytest subprocesses) in a zoo holding only the task's rows, and
sends back those rows' cells. No Spark here: cluster.py hands this function to Spark."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from kraft.review.zoo import tlc
from kraft.review.zoo.plan import Budget, Plan, cluster_tasks, select_protocols
from kraft.review.zoo.run import do
from kraft.review.zoo.state import Zoo
from kraft.review.zoo.verdict import Cell


def payload(protocols: list[str], index: int, out: Path, plan: Plan, budget: Budget) -> dict[str, Any]:
    """What a cluster task needs: the deadline travels as wall-clock time (executors' clocks are
    assumed in step with the driver's), the rest as names and the plan."""
    left = budget.remaining()
    return {"protocols": protocols, "index": index, "out": str(out.resolve()), "plan": plan,
            "deadline": None if left is None else time.time() + left}


def run_payload(task: dict[str, Any]) -> dict[str, Any]:
    """Run the task of ``payload(...)``: its cells as ``[protocol, variant, cell]``, the errors of
    a task that failed, and whether the budget ran out."""
    protocols = select_protocols(task["protocols"])
    t = cluster_tasks(protocols)[task["index"]]
    deadline = task["deadline"]
    budget = Budget(None if deadline is None else max(0.0, deadline - time.time()))
    zoo = Zoo(protocols, Path(task["out"]), budget, task["plan"], keys=t.keys())
    zoo.reused = tlc.reused_runs(zoo.plan.reuse_tlc)
    try:
        do(zoo, t)
    except Exception as exc:  # noqa: BLE001 - a task's failure is reported, not a traceback
        zoo.errors.append(f"{t.name}: {type(exc).__name__}: {exc}")
    cells = [[r.protocol, r.variant, c.to_json()] for r in zoo.rows for c in r.cells.values()]
    return {"task": t.name, "cells": cells, "errors": zoo.errors, "exhausted": budget.exhausted}


def merge(zoo: Zoo, result: dict[str, Any]) -> None:
    """Fill in the driver's zoo with one task's result."""
    for protocol, variant, cell in result["cells"]:
        zoo.set(protocol, variant, Cell(**cell))
    zoo.errors.extend(result["errors"])
    if result["exhausted"]:
        zoo.budget.exhausted = True
