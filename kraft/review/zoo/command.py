"""``kraft zoo``: the command line (what it runs and how its verdict is read: the package's
description, kraft/review/zoo/__init__.py)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Callable, NoReturn

import click
from rich.console import Console
from rich.markup import escape

from kraft.outcome import EXIT_ERROR, Verdict, clear_documents, write_document
from kraft.review.zoo.matrix import print_matrix, zoo_document
from kraft.review.zoo.plan import Budget, Plan, select_protocols
from kraft.review.zoo.run import run
from kraft.review.zoo.state import Zoo
from kraft.review.zoo.verdict import zoo_verdict


@click.command()
@click.option("--protocol", "protocols", multiple=True,
              help="Protocol to run (kraft, groups, replication; or the spec name); repeatable. Default: all.")
@click.option("--budget", type=click.FloatRange(min=1), default=None,
              help="Seconds for the whole zoo: seeds and examples are scaled down, cells not reached are "
                   "inconclusive (exit 3).")
@click.option("--out", "out_dir", type=click.Path(file_okay=False), default="results/zoo", show_default=True,
              help="Directory for OUT/zoo.json and every check's output.")
@click.option("--json", "as_json", is_flag=True, help="Print zoo.json to stdout instead of the matrix.")
@click.option("--no-spark", is_flag=True, help="Audit in-process instead of with local Spark (small runs).")
@click.option("--reuse-tlc", "reuse_tlc", multiple=True, type=click.Path(dir_okay=False),
              help="check.json of an earlier `kraft check` whose runs stand in for the zoo's TLC runs (a "
                   "variant's run; a spec's small run as its control); repeatable. kraft review passes its own.")
@click.option("--workers", type=click.IntRange(min=1), default=2, show_default=True,
              help="Checks run at once (each TLC run uses one worker); without --master.")
@click.option("--master", default=None,
              help="Run the checks as Spark tasks on this master (spark://HOST:PORT, local[N]): one task per "
                   "row's simulate-audit-conform chain, per Hypothesis run and per TLC run.")
def zoo(protocols: tuple[str, ...], budget: float | None, out_dir: str, as_json: bool, no_spark: bool,
        reuse_tlc: tuple[str, ...], workers: int, master: str | None) -> None:
    """Every bug variant of every protocol through all four checks (TLC, Hypothesis, conformance,
    audit), with the correct protocols as a control row.

    Exit 1 if a control cell fired or a variant was missed by every check; 2 on a tool or usage
    error; 3 if the budget ran out before everything was checked; else 0."""
    try:
        selected = select_protocols(protocols)
    except ValueError as exc:
        _usage_error(str(exc))
    out = Path(out_dir)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        _usage_error(f"cannot create {out}: {exc.strerror or exc}")
    b = Budget(budget)
    plan = Plan.for_budget(budget, spark=not no_spark, reuse_tlc=tuple(Path(x) for x in reuse_tlc), workers=workers)
    z = Zoo(selected, out, b, plan, _progress(b, live=not as_json))
    clear_documents(out / "zoo.json")  # written again once every cell is decided
    if master is None:
        run(z)
    else:
        _run_on_cluster(z, master)
    verdict, summary = zoo_verdict(z.rows, b.exhausted)
    if z.errors:  # a task that failed outside its cells
        verdict = Verdict.worst([verdict, Verdict.ERROR])
        summary += "; " + "; ".join(z.errors)
    doc = zoo_document(z.rows, verdict, summary, b, plan, z.errors)
    write_document(out / "zoo.json", json.dumps(doc, indent=2))
    if as_json:
        click.echo(json.dumps(doc, indent=2))
    else:
        _print(z, summary, out / "zoo.json")
    sys.exit(verdict.exit_code)


def _run_on_cluster(z: Zoo, master: str) -> None:
    """The zoo's tasks as Spark tasks (cluster.py, imported only here: pyspark is optional)."""
    try:
        from kraft.review.zoo.cluster import SparkUnavailable, run_on_spark  # optional: pyspark
    except ImportError as exc:
        _usage_error(f"--master needs pyspark: {exc}")
    try:
        run_on_spark(z, master)
    except SparkUnavailable as exc:
        _usage_error(str(exc))
    except Exception as exc:  # noqa: BLE001 - Py4J/JVM errors of a failed Spark job come in many types
        _usage_error(f"the Spark job on {master} failed: {type(exc).__name__}: {str(exc).splitlines()[0][:300]}")


def _print(z: Zoo, summary: str, written: Path) -> None:
    console = Console(width=None if sys.stdout.isatty() else 200)
    print_matrix(z.rows, console)
    console.print(escape(summary))
    console.print(f"wrote {escape(str(written))} ({z.budget.elapsed():.0f}s)")


def _usage_error(message: str) -> NoReturn:
    click.echo(f"kraft zoo: {message}", err=True)
    sys.exit(EXIT_ERROR)


def _progress(budget: Budget, live: bool) -> Callable[[str], None]:
    """A line per decided cell on stderr, on a terminal outside CI and without --json."""
    err = Console(stderr=True)
    live = live and err.is_terminal and not os.environ.get("CI")

    def progress(line: str) -> None:
        if live:
            err.print(f"[dim]{budget.elapsed():6.1f}s[/] {escape(line)}")

    return progress
