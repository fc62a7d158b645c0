"""Running a zoo: its tasks (plan.py) taken in order by the plan's workers, each filling in its
cells; a task that fails is reported in the errors, and a cell no task reached is inconclusive (the
budget ran out) or an error (its task failed)."""

from __future__ import annotations

import threading

from kraft.review.zoo import tlc
from kraft.review.zoo.audit import audit_all
from kraft.review.zoo.conform import conform_all
from kraft.review.zoo.plan import CHAIN, HYPOTHESIS, ROW, Task, tasks
from kraft.review.zoo.simulate import simulate_all
from kraft.review.zoo.state import Zoo
from kraft.review.zoo.stateful import hypothesis
from kraft.review.zoo.verdict import CHECKS, ERROR, Cell, budget_cell


def run(zoo: Zoo) -> None:
    """Every task of the plan, then every cell no task filled in."""
    zoo.reused = tlc.reused_runs(zoo.plan.reuse_tlc)
    queue = tasks(zoo.protocols)

    def worker() -> None:
        while True:
            with zoo.lock:
                if not queue:
                    return
                task = queue.pop(0)
            try:
                do(zoo, task)
            except Exception as exc:  # noqa: BLE001 - a task's failure is reported, not a traceback
                with zoo.lock:
                    zoo.errors.append(f"{task.name}: {type(exc).__name__}: {exc}")

    threads = [threading.Thread(target=worker, name=f"zoo-{i}") for i in range(max(1, zoo.plan.workers))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    fill_unreached(zoo)


def do(zoo: Zoo, task: Task) -> None:
    """Run one task, filling in its cells of ``zoo`` (for ``row``: a zoo of that row only)."""
    p, v = task.protocol, task.variant
    if task.job in (CHAIN, ROW):
        chain(zoo)
    elif task.job == HYPOTHESIS:
        hypothesis(zoo, p)
    elif v is not None:
        zoo.set(p.name, v.name, tlc.variant_cell(zoo, p, v))
    else:
        zoo.set(p.name, None, tlc.control_cell(zoo, p))


def chain(zoo: Zoo) -> None:
    """Simulate, then the one audit (seconds), then one conformance run per protocol (the
    costly part: a budget that runs out keeps the protocols already decided)."""
    sims = simulate_all(zoo)
    audit_all(zoo, sims)
    for p in zoo.protocols:
        conform_all(zoo, sims, [p])


def fill_unreached(zoo: Zoo) -> None:
    for r in zoo.rows:
        for c in CHECKS:
            if c not in r.cells:
                r.cells[c] = budget_cell(c, "before this cell") if zoo.budget.exhausted else \
                    Cell(c, ERROR, detail="not run (its task failed; see the errors in zoo.json)")
