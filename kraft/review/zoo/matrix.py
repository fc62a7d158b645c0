"""The zoo's matrix for people (a rich table, a Markdown table) and for programs (``zoo.json``)."""

from __future__ import annotations

import time
from typing import Any

from rich.markup import escape
from rich.table import Table

from kraft.outcome import Verdict, header
from kraft.review.zoo.plan import Budget, Plan
from kraft.review.zoo.verdict import (CAUGHT, CHECK_TITLES, CHECKS, CLEAN, CONTROL_STATUSES, ERROR, FIRED,
                                      INCONCLUSIVE, MISSED, UNAVAILABLE, UNITS, UNOBSERVABLE,
                                      VARIANT_STATUSES, Cell, Row)

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


def _short_title(check: str) -> str:
    return CHECK_TITLES[check].split(" (")[0]


def print_matrix(rows: list[Row], console: Any) -> None:
    table = Table(title="kraft zoo", show_lines=False)
    table.add_column("protocol")
    table.add_column("variant")
    for c in CHECKS:
        table.add_column(_short_title(c))
    table.add_column("outcome")
    last = None
    for r in rows:
        if last is not None and r.protocol != last:
            table.add_section()
        last = r.protocol
        cells = ["" if c not in r.cells else _styled(r.cells[c].status, cell_text(r.cells[c])) for c in CHECKS]
        table.add_row(escape(r.spec), escape(r.variant or "(control)"), *cells, _styled(r.outcome, r.outcome))
    console.print(table)


def _styled(status: str, text: str) -> str:
    return f"[{_STYLE.get(status, 'yellow')}]{escape(text)}[/]"


def matrix_markdown(rows: list[Row]) -> str:
    """The matrix as a Markdown table (for the README)."""
    head = "| protocol | variant | " + " | ".join(_short_title(c) for c in CHECKS) + " |"
    lines = [head, "| --- | --- | " + " | ".join("---" for _ in CHECKS) + " |"]
    for r in rows:
        cells = [cell_text(r.cells[c]).replace("\n", ", ") if c in r.cells else "" for c in CHECKS]
        lines.append(f"| {r.spec} | {r.variant or '(control)'} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def zoo_document(rows: list[Row], verdict: Verdict, summary: str, budget: Budget, plan: Plan,
                 errors: list[str]) -> dict[str, Any]:
    """``zoo.json``: the shared header, then the run, the checks, the statuses and the rows."""
    return header("zoo", verdict, summary, {
        "v": 1,
        "generated": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "seconds": round(budget.elapsed(), 1),
        "budget": budget.seconds,
        "budget_exhausted": budget.exhausted,
        "plan": plan.to_json(),
        "checks": [{"id": c, "title": CHECK_TITLES[c], "unit": UNITS[c]} for c in CHECKS],
        "statuses": {"variant": list(VARIANT_STATUSES), "control": list(CONTROL_STATUSES)},
        "rows": [r.to_json() for r in rows],
        "errors": errors,
    })
