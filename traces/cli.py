"""``kraft conform TRACE_OR_DIR... [--jobs N] [--batch N] [--spark] [--master URL] [--out DIR]``

TLC decides, for every trace, whether some behaviour of the protocol's spec takes exactly the
logged steps.  Prints a table (trace, events, verdict, first divergent step) and the report for
each rejected trace, writes ``OUT/conform.json`` (``--spark``: also ``OUT/conform.parquet``).

Exit codes (kraft/outcome.py): 0 every trace accepted; 1 some trace rejected; 2 bad input or tool
failure; 3 inconclusive: TLC reached ``--timeout`` on some trace (and nothing else went wrong), or
nothing was checked (no trace files among the inputs, or traces without a single spec step).
``conform.json`` is the shared header (``command``, ``verdict``, ``summary``, ``exit_code``), then
``v``, ``kind``, ``totals`` (the counts) and ``results`` (one object per trace).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import click

from kraft.cliutil import LiveLine, json_flag, set_document
from kraft.outcome import EXIT_ERROR, Verdict, clear_documents, header, plural, write_document
from model_check import TLCError, find_jar, find_java
from traces.check import Options, TraceResult, check_paths, expand_inputs
from traces.protocols import GlueError, load_glue


def summarize(results: list[TraceResult], seconds: float) -> dict[str, Any]:
    events = sum(r.events for r in results)
    return {
        "traces": len(results),
        "accepted": sum(r.verdict == "accepted" for r in results),
        "rejected": sum(r.verdict == "rejected" for r in results),
        "errors": sum(r.verdict == "error" for r in results),
        "timeouts": sum(_timed_out(r) for r in results),  # errors that are a --timeout reached
        "events": events,
        "skipped_steps": sum(r.skipped for r in results),
        "seconds": round(seconds, 3),
        "events_per_second": round(events / seconds, 1) if seconds > 0 else None,
        "tlc_runs": sum(r.tlc_runs for r in results),
    }


def _timed_out(r: TraceResult) -> bool:
    """A trace whose TLC run hit ``--timeout``: undecided, not broken (traces.check._tool_error)."""
    return r.verdict == "error" and r.kind == "timeout"


def verdict_of(totals: dict[str, Any]) -> tuple[Verdict, str]:
    """The command's verdict and summary sentence from the counts of :func:`summarize`."""
    n, acc, rej, err = totals["traces"], totals["accepted"], totals["rejected"], totals["errors"]
    timeouts = totals.get("timeouts", 0)
    steps = f"{plural(totals['events'], 'spec step')}, {totals['skipped_steps']} non-spec skipped"
    if rej:
        return Verdict.VIOLATION, f"{plural(rej, 'trace')} of {n} rejected ({acc} accepted, {err} errors; {steps})"
    if err > timeouts:
        return Verdict.ERROR, f"{plural(err, 'trace')} of {n} could not be checked ({acc} accepted; {steps})"
    if timeouts:
        return Verdict.INCONCLUSIVE, (f"{plural(timeouts, 'trace')} of {n} undecided: TLC reached --timeout "
                                      f"({acc} accepted; {steps})")
    if n == 0:
        return Verdict.INCONCLUSIVE, "no trace files found: nothing was checked"
    if totals["events"] == 0:
        return Verdict.INCONCLUSIVE, f"{plural(n, 'trace')} but not one spec step among them: nothing was checked"
    return Verdict.CLEAN, ("1 trace, accepted" if n == 1 else f"{n} traces, all accepted") + f" ({steps})"


def write_doc(out: Path, totals: dict[str, Any], results: list[TraceResult]) -> Verdict:
    verdict, sentence = verdict_of(totals)
    doc = header("conform", verdict, sentence,
                 {"v": 1, "kind": "conform", "totals": totals, "results": [r.as_dict() for r in results]})
    out.mkdir(parents=True, exist_ok=True)
    write_document(out / "conform.json", json.dumps(doc, indent=1, default=str) + "\n")
    set_document(doc)
    return verdict


def _first_step(r: TraceResult) -> str:
    if r.verdict == "accepted":
        return ""
    if r.line is None:
        return r.kind or ""
    where = f"line {r.line}"
    if r.step is not None:
        where += f" (i={r.step})"
    if r.action:
        where += f" {r.action}"
        if r.node is not None:
            where += f"@{r.node}"
    return f"{where}: {r.kind}"


def _short(text: str, limit: int = 300) -> str:
    return text if len(text) <= limit else text[:limit] + f"... ({len(text) - limit} more characters in conform.json)"


def print_table(results: list[TraceResult], summary: dict[str, Any]) -> None:
    # lazy: rich is slow to import, and a conform stopped by bad input prints no table
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    console = Console(highlight=False, soft_wrap=True, emoji=False)  # file:line stays text (`:100:` is no emoji)
    table = Table(title="kraft conform", show_lines=False)
    table.add_column("trace", overflow="fold")
    table.add_column("events", justify="right")
    table.add_column("skipped", justify="right")
    table.add_column("verdict")
    table.add_column("first divergent step", overflow="fold")
    style = {"accepted": "green", "rejected": "bold red", "error": "yellow"}
    for r in results:
        table.add_row(escape(r.trace), str(r.events), str(r.skipped),
                      f"[{style.get(r.verdict, '')}]{escape(r.verdict)}[/]", escape(_first_step(r)))
    console.print(table)
    for r in results:
        if r.verdict == "accepted":
            continue
        console.print(f"\n[bold]{escape(r.trace)}[/]: {escape(r.verdict)}")
        console.print(f"  {_short(r.message, 1200)}", markup=False)
        if r.kind in ("state_mismatch", "not_enabled"):
            console.print(f"  logged action: {r.action} node={r.node} args={_short(json.dumps(r.args, sort_keys=True))}",
                          markup=False)
            if r.part:
                console.print(f"  failing part: {r.part}", markup=False)
            console.print(f"  spec states before the step: {r.spec_states}; successors of the logged action: "
                          f"{r.successors}", markup=False)
        for m in r.mismatches:
            console.print(f"  {_short(m['summary'], 600)}", markup=False)
        for g, v in r.guards.items():
            console.print(f"  guard {g}: {v}", markup=False)
        for w in r.warnings[:5]:
            console.print(f"  warning: {w}", markup=False)
    s = summary
    console.print(f"\n{s['traces']} traces, {s['events']} spec steps ({s['skipped_steps']} non-spec "
                  f"skipped): {s['accepted']} accepted, {s['rejected']} rejected, {s['errors']} errors "
                  f"in {s['seconds']} s ({s['events_per_second']} events/s, {s['tlc_runs']} TLC runs)")


@click.command(name="conform")
@click.argument("inputs", nargs=-1, required=True, type=click.Path())
@click.option("--jobs", "-j", default=0, type=click.IntRange(min=0),
              help="TLC processes in parallel (default: one per core when a long trace is cut into "
                   "segments, else 1).")
@click.option("--segment", default=4000, show_default=True, type=click.IntRange(min=0),
              help="Cut traces of at least twice this many spec steps into segments checked "
                   "independently, where the spec allows it (0: never cut).")
@click.option("--batch", "-b", default=64, show_default=True, help="Traces per TLC run.")
@click.option("--out", "out_dir", default="results", show_default=True, type=click.Path(),
              help="Directory for conform.json (and conform.parquet with --spark).")
@click.option("--spark", is_flag=True, help="Distribute the TLC batches over Spark executors.")
@click.option("--master", default="local[*]", show_default=True, help="Spark master URL (with --spark).")
@click.option("--glue", "glues", multiple=True, metavar="MODULE:ATTR",
              help="Extra protocol glue (module or file.py path, and attribute).")
@click.option("--timeout", default=None, type=float, help="Seconds per TLC run.")
@click.option("--keep-runs", default=None, type=click.Path(), help="Keep generated TLA+ run directories here.")
@click.option("--no-diagnose", is_flag=True, help="Do not print the diagnosis rows (localise only).")
@click.option("--heap", default="2g", show_default=True, help="Java heap per TLC process (-Xmx).")
@click.option("--witness", type=click.Choice(["exit", "invariant"]), default="exit", show_default=True,
              help="How a single-trace run detects acceptance: TLCSet exit at the last record, or a "
                   "witness invariant violated once the whole trace is consumed (slower on TLC 2.15).")
@json_flag("conform")
def conform(inputs: tuple[str, ...], jobs: int, segment: int, batch: int, out_dir: str, spark: bool, master: str,
            glues: tuple[str, ...], timeout: float | None, keep_runs: str | None, no_diagnose: bool,
            heap: str, witness: str) -> None:
    """Check implementation traces against their TLA+ spec with TLC."""
    for g in glues:
        try:
            load_glue(g)
        except (GlueError, ImportError, AttributeError, OSError) as exc:
            click.echo(f"kraft conform: cannot load glue {g}: {exc}", err=True)
            sys.exit(EXIT_ERROR)
    missing = [i for i in inputs if not Path(i).exists()]
    if missing:
        click.echo(f"kraft conform: no such file or directory: {', '.join(missing)}", err=True)
        sys.exit(EXIT_ERROR)
    try:  # fail before checking, not with a traceback after (--out under a regular file, ...)
        Path(out_dir).mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        click.echo(f"kraft conform: cannot create --out {exc.filename or out_dir}: {exc.strerror or exc}", err=True)
        sys.exit(EXIT_ERROR)
    clear_documents(Path(out_dir) / "conform.json")  # written again once every trace is decided
    paths, ignored = expand_inputs(inputs)
    if ignored:
        shown = ", ".join(str(p) for p, _ in ignored[:3]) + (" ..." if len(ignored) > 3 else "")
        click.echo(f"kraft conform: skipping {len(ignored)} non-trace NDJSON file(s) "
                   f"(listed in conform.json): {shown}", err=True)
    if not paths:
        click.echo("kraft conform: no trace files found in " + ", ".join(inputs) + ": nothing was checked",
                   err=True)
        totals = summarize([], 0.0)
        totals["ignored_files"] = [{"path": str(p), "why": w} for p, w in ignored]
        sys.exit(write_doc(Path(out_dir), totals, []).exit_code)
    try:
        find_java()
        find_jar()
    except TLCError as exc:
        click.echo(f"kraft conform: {exc}", err=True)
        sys.exit(EXIT_ERROR)
    opts = Options(batch=max(1, batch), jobs=jobs, segment=segment, timeout=timeout, heap=heap,
                   keep=Path(keep_runs) if keep_runs else None, diagnose=not no_diagnose, witness=witness)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    total = len(paths)
    done = [0]
    line = LiveLine()  # on a terminal, not under CI

    def progress(n: int) -> None:
        done[0] += n
        line.update(f"checked {done[0]}/{total} traces", force=True)

    if spark:
        from traces.spark import check_with_spark  # optional: pyspark (and the audit's Spark session)

        results = check_with_spark(paths, opts, master=master, out_dir=out, glue_targets=glues)
    else:
        results = check_paths(paths, opts, progress=progress)
        line.done()
    totals = summarize(results, time.monotonic() - t0)
    totals["ignored_files"] = [{"path": str(p), "why": w} for p, w in ignored]
    verdict = write_doc(out, totals, results)
    print_table(results, totals)
    click.echo(verdict_of(totals)[1])
    click.echo(f"wrote {out / 'conform.json'}" + (f" and {out / 'conform.parquet'}" if spark else ""))
    sys.exit(verdict.exit_code)
