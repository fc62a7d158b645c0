"""One zoo run's shared state: the rows its tasks fill in (under a lock: two workers), where the
outputs go, the plan, the budget, and what went wrong outside any cell."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any, Callable, Iterable

from kraft.core.declaration import Protocol, Variant
from kraft.review.zoo.plan import Budget, Plan, rows
from kraft.review.zoo.process import tail
from kraft.review.zoo.verdict import ERROR, Cell, Row, budget_cell

# a row's key: (protocol, variant or None for the control)
Key = tuple[str, str | None]
# (spec module, variant or None for the control) -> (a one-run check.json document, its file)
Reused = dict[Key, tuple[dict[str, Any], Path]]
# a row's key -> the directory of its simulated runs
Sims = dict[Key, Path]


class Zoo:
    def __init__(self, protocols: list[Protocol], out: Path, budget: Budget, plan: Plan,
                 progress: Callable[[str], None] = lambda s: None, keys: Iterable[Key] | None = None) -> None:
        self.protocols = protocols
        self.out = out
        self.budget = budget
        self.plan = plan
        self.progress = progress
        self.lock = threading.Lock()
        # ``keys``: the rows this zoo fills in (None: every row; a cluster task: its own rows)
        wanted = None if keys is None else set(keys)
        self.rows: list[Row] = [r for r in rows(protocols) if wanted is None or (r.protocol, r.variant) in wanted]
        self.whole = wanted is None
        self.errors: list[str] = []
        self.reused: Reused = {}

    def protocol(self, name: str) -> Protocol:
        return next(p for p in self.protocols if p.name == name)

    def members(self, p: Protocol) -> list[Variant | None]:
        """The variants of ``p`` (None: its control) whose rows this zoo fills in, in row order."""
        mine = {r.variant for r in self.rows if r.protocol == p.name}
        return [v for v in (None, *p.variants) if (v.name if v is not None else None) in mine]

    def run_dir(self, *parts: str) -> Path:
        """Where one run over this zoo's rows writes: ``OUT/parts``, and below it a directory per row
        when the zoo holds some rows only (a cluster's tasks run their audits and conformance runs
        at once, each in its own directory)."""
        d = self.out.joinpath(*parts)
        if self.whole:
            return d
        return d / "-".join(f"{r.protocol}-{r.variant or 'control'}" for r in self.rows)

    def row(self, protocol: str, variant: str | None) -> Row:
        for r in self.rows:
            if r.protocol == protocol and r.variant == variant:
                return r
        raise KeyError((protocol, variant))

    def set(self, protocol: str, variant: str | None, cell: Cell) -> None:
        """Fill in a cell and say so on the progress line."""
        with self.lock:
            self.row(protocol, variant).cells[cell.check] = cell
        who = f"{protocol} {variant or 'control'}"
        extra = f" ({cell.size} {cell.unit})" if cell.size is not None else ""
        secs = f" in {cell.seconds:.1f}s" if cell.seconds is not None else ""
        self.progress(f"{cell.check:<10} {who}: {cell.status}{secs}{extra}")

    def out_of_budget(self, keys: Iterable[Key], check: str) -> bool:
        """Whether the budget has run out; if so, ``check``'s cell of each row is inconclusive."""
        if not self.budget.out():
            return False
        for key in keys:
            self.set(*key, budget_cell(check))
        return True

    def judge_each(self, todo: Sims, check: str, ran: tuple[int | None, float], log: Path, doing: str,
                   judge: Callable[[Protocol, Variant | None, Path], Cell] | None) -> None:
        """Fill in ``check``'s cell of each row in ``todo`` after one ``kraft CHECK`` run over all of
        them (``ran``: its exit code, None if the budget stopped it while ``doing``, and seconds):
        an error if it left no output (``judge`` None), else ``judge(protocol, variant, sim dir)``."""
        code, secs = ran
        for key, sim_dir in todo.items():
            if code is None:
                cell = budget_cell(check, doing)
            elif judge is None:
                cell = Cell(check, ERROR, secs, detail=f"kraft {check} exit {code}: {tail(log)}", evidence=str(log))
            else:
                p = self.protocol(key[0])
                cell = judge(p, p.variant(key[1]) if key[1] else None, sim_dir)
            self.set(*key, cell)
