"""``kraft check``: run TLC on the spec manifests and report verdicts and counterexamples.

Exit codes (kraft/outcome.py): 0 no violation in the correct protocol (and, with variants, every
variant caught by the invariant its manifest names); 1 a violation in the correct protocol, or a
variant missed; 2 usage error, bad manifest, TLA+ parse error or TLC failure; 3 inconclusive: a run
hit its timeout or TLC ran out of memory (without finding a violation), or nothing was run.

``OUT/check.json`` is the shared header (``command``, ``verdict``, ``summary``, ``exit_code``)
followed by ``runs``: one object per TLC run.
"""

from __future__ import annotations

import contextlib
import json
import sys
import threading
import time
from pathlib import Path
from typing import Any

import attrs
import click
from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from kraft.cliutil import json_flag, live_enabled, set_document
from kraft.outcome import EXIT_ERROR, Verdict, clear_documents, header, plural, worst_status, write_document

from .specs import Manifest, ManifestError, load_manifests, run_spec, spec_dir
from .tlc import Progress, TLCError, TLCResult, TraceState, _cfg_properties
from .values import format_value


@attrs.define
class Run:
    spec: str
    size: str
    variant: str | None
    mode: str
    expected: str | None
    result: TLCResult | None = None
    verdict: str = ""
    status: str = "ok"  # ok | violation | missed | error | inconclusive | skipped
    note: str = ""
    module: str | None = None
    cfg: str | None = None
    cluster: dict[str, Any] | None = None  # a --master run: its seeds, rounds and replay

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "spec": self.spec,
            "module": self.module,
            "cfg": self.cfg,
            "size": self.size,
            "variant": self.variant,
            "mode": self.mode,
            "expected": self.expected,
            "verdict": self.verdict,
            "status": self.status,
            "note": self.note,
        }
        if self.result is not None:
            d.update(self.result.to_json())
            d["command"] = self.result.command
        if self.cluster is not None:
            d["cluster"] = self.cluster
        return d


def _judge(run: Run, m: Manifest) -> None:
    r = run.result
    assert r is not None
    if r.outcome == "timeout" or (r.outcome == "error" and _out_of_memory(r)):
        # a budget or memory limit reached before TLC could decide: inconclusive, not an error
        run.status = "inconclusive"
        run.verdict = "TIMEOUT" if r.outcome == "timeout" else "OUT OF MEMORY"
        return
    if r.outcome in ("parse_error", "error"):
        run.status = "error"
        run.verdict = {"parse_error": "PARSE ERROR", "error": "TLC ERROR"}[r.outcome]
        return
    if run.variant is None:
        if r.violation:
            run.status = "violation"
            run.verdict = f"VIOLATED ({r.violated or r.outcome})"
        else:
            run.status = "ok"
            run.verdict = "ok"
        return
    expected = run.expected or ""
    if not r.violation:
        run.status = "missed"
        run.verdict = "MISSED"
        return
    matches = r.violated == expected or (r.outcome == "deadlock" and expected.lower() == "deadlock")
    if not matches and r.outcome == "property" and r.violated is None:
        # TLC 2.15 does not name the temporal property; accept if the cfg lists the expected one
        cfg = m.directory / m.sizes[run.size].cfg
        matches = cfg.is_file() and expected in _cfg_properties(cfg.read_text())
    if matches:
        run.status = "ok"
        run.verdict = f"caught ({expected})"
    else:
        run.status = "missed"
        run.verdict = f"WRONG ({r.violated or r.outcome}; expected {expected})"


def _out_of_memory(r: TLCResult) -> bool:
    return any("out of memory" in e.lower() for e in r.errors)


_STATUS_VERDICT = {"ok": Verdict.CLEAN, "violation": Verdict.VIOLATION, "missed": Verdict.VIOLATION,
                   "error": Verdict.ERROR, "inconclusive": Verdict.INCONCLUSIVE}


def overall(runs: list[Run]) -> tuple[Verdict, str]:
    """The command's verdict and its one-sentence summary. Skipped runs check nothing: a command
    whose runs were all skipped is inconclusive."""
    verdict, _, skipped, tail = worst_status((r.status for r in runs), _STATUS_VERDICT)
    done = [r for r in runs if r.status != "skipped"]
    if not done:
        return verdict, f"nothing was model-checked ({plural(skipped, 'run')} skipped)"
    variants = [r for r in done if r.variant is not None]
    parts: list[str] = []
    if variants:
        caught = sum(r.status == "ok" for r in variants)
        parts.append(f"{caught} of {plural(len(variants), 'bug variant')} caught")
    plain = [r for r in done if r.variant is None]
    if plain:
        bad = sum(r.status == "violation" for r in plain)
        if len(plain) == 1 and plain[0].result is not None and plain[0].status in ("ok", "violation"):
            r0, res = plain[0], plain[0].result
            what = f"{r0.spec} ({r0.size})"
            if r0.status == "violation":
                parts.append(f"{what}: {res.violated or res.outcome} violated")
            elif r0.mode == "simulate":
                parts.append(f"{what}: no violation found by simulation")
            else:
                parts.append(f"{what}: no violation in {res.distinct:,} distinct states")
        else:
            parts.append(f"{plural(len(plain), 'spec run')}, {plural(bad, 'violation')}")
    errors = sum(r.status == "error" for r in done)
    unsure = sum(r.status == "inconclusive" for r in done)
    if errors:
        parts.append(f"{plural(errors, 'run')} failed")
    if unsure:
        parts.append(f"{plural(unsure, 'run')} hit a time or memory limit")
    return verdict, "; ".join(parts) + tail


def _fmt(v: Any) -> str:
    try:
        return format_value(v)
    except TypeError:
        return repr(v)


def print_counterexample(console: Console, trace: list[TraceState]) -> None:
    """One block per step: step number, action, node and only the variables that changed from
    the previous state (the first state in full)."""
    prev: dict[str, Any] | None = None
    for st in trace:
        head = f"[bold]step {st.index}[/bold]  "
        if st.action is None:
            head += "[cyan]<Init>[/cyan]"
        else:
            head += f"[cyan]{escape(str(st.action))}[/cyan]"
        if st.node is not None:
            head += f"  node={escape(st.node if isinstance(st.node, str) else _fmt(st.node))}" + (" [dim](inferred)[/dim]" if st.node_inferred else "")
        if st.back_to is not None:
            head += f"  [magenta](loops back to step {st.back_to})[/magenta]"
        if st.action == "Stuttering":
            head += "  [magenta](stutters forever)[/magenta]"
        console.print(head, highlight=False)
        changed = {
            k: v for k, v in st.variables.items() if prev is None or k not in prev or prev[k] != v
        }
        if prev is not None and not changed:
            console.print("    (no variable changed)", highlight=False)
        for k, v in changed.items():
            console.print(f"    {k} = {_fmt(v)}", highlight=False, markup=False)
        prev = st.variables if st.variables else prev


DEFAULT_BUDGET = 120.0  # seconds of a --master simulation when neither --timeout nor the size sets one


def _on_cluster(m: Manifest, run: Run, master: str, seeds: int | None, depth: int | None,
                timeout: float | None, seed: int | None) -> tuple[TLCResult, dict[str, Any]]:
    """One simulate-mode run as parallel seeds on Spark (model_check.spark, imported only here)."""
    try:
        from .spark import SparkUnavailable, simulate_on_spark  # optional: pyspark
    except ImportError as exc:
        raise TLCError(f"--master needs pyspark: {exc}") from None
    budget = timeout if timeout is not None else (m.sizes[run.size].seconds or DEFAULT_BUDGET)
    try:
        par = simulate_on_spark(m, run.size, run.variant, master=master, seeds=seeds, budget=budget,
                                depth=depth, base_seed=seed)
    except SparkUnavailable as exc:
        raise TLCError(str(exc)) from None
    return par.result, {"master": master, **par.to_json()}


@click.command(name="check")
@click.argument("specs", nargs=-1)
@click.option("--size", default=None, help="model size from the manifest (default: small; a variant's own size)")
@click.option("--variant", "variants", multiple=True, help="run this bug variant (expect a counterexample)")
@click.option("--all-variants", is_flag=True, help="run every variant; each must be caught by the invariant its manifest names")
@click.option("--simulate", is_flag=True, default=None, help="random simulation instead of the manifest's mode")
@click.option("--depth", type=click.IntRange(1), default=None, help="simulation depth (-depth)")
@click.option("--seed", type=int, default=None, help="TLC -seed")
@click.option("--workers", type=click.IntRange(1), default=None, help="TLC worker threads (default: manifest, else 1)")
@click.option("--timeout", type=click.FloatRange(min=0, min_open=True), default=None, help="seconds before TLC is killed (simulate: time budget)")
@click.option("--master", default=None, help="run simulate-mode runs as parallel seeds on Spark (spark://HOST:PORT, local[N])")
@click.option("--seeds", type=click.IntRange(1), default=None, help="with --master: simulators per wave (default: the executors' cores)")
@click.option("--out", "out_dir", type=click.Path(file_okay=False), default="results", show_default=True, help="write OUT/check.json")
@click.option("--quiet-trace", is_flag=True, help="do not print counterexamples (they are still in the JSON)")
@json_flag("check")
def check(
    specs: tuple[str, ...],
    size: str | None,
    variants: tuple[str, ...],
    all_variants: bool,
    simulate: bool | None,
    depth: int | None,
    seed: int | None,
    workers: int | None,
    timeout: float | None,
    master: str | None,
    seeds: int | None,
    out_dir: str,
    quiet_trace: bool,
) -> None:
    """Model-check SPEC... (manifest names in spec/; default: all) with TLC."""
    if seeds is not None and master is None:
        raise click.UsageError("--seeds needs --master")
    # emoji=False: a file:line such as KRaft.tla:100:15 must not print as an emoji (`:100:`)
    console = Console(emoji=False) if sys.stdout.isatty() else Console(width=160, emoji=False)
    err = Console(stderr=True, soft_wrap=True, emoji=False)
    try:
        manifests = load_manifests()
    except ManifestError as exc:
        err.print(f"kraft check: {exc}", markup=False)
        sys.exit(EXIT_ERROR)
    if not manifests:
        err.print(f"kraft check: no spec manifests (*.toml) in {spec_dir()}", markup=False)
        sys.exit(EXIT_ERROR)
    chosen: list[Manifest] = []
    for name in specs or sorted(manifests):
        m = manifests.get(name) or next((x for x in manifests.values() if x.module == name), None)
        if m is None:
            err.print(f"kraft check: no spec manifest {name!r} in {spec_dir()} (have: {', '.join(sorted(manifests))})", markup=False)
            sys.exit(EXIT_ERROR)
        chosen.append(m)

    for v in variants:
        if not any(v in m.variants for m in chosen):
            have = sorted({x for m in chosen for x in m.variants})
            err.print(f"kraft check: no variant {v!r} in {', '.join(m.name for m in chosen)} (have: {', '.join(have) or 'none'})", markup=False)
            sys.exit(EXIT_ERROR)
    runs: list[Run] = []
    for m in chosen:
        mode_of = lambda sz: ("simulate" if (simulate if simulate is not None else m.sizes[sz].mode == "simulate") else "exhaustive")  # noqa: E731
        if variants or all_variants:
            names = list(m.variants) if all_variants else [v for v in variants if v in m.variants]
            if not names:
                why = "no variants in its manifest" if all_variants else f"no variant {', '.join(variants)}"
                runs.append(Run(m.name, size or "-", None, "-", None, status="skipped", verdict=f"skipped ({why})", note=why))
            for v in names:
                var = m.variants[v]
                sz = size or var.size
                if sz not in m.sizes:
                    err.print(f"kraft check: {m.path}: no size {sz!r} (have: {', '.join(m.sizes)})", markup=False)
                    sys.exit(EXIT_ERROR)
                runs.append(Run(m.name, sz, v, mode_of(sz), var.violates))
        else:
            sz = size or "small"
            if sz not in m.sizes:
                if specs:
                    err.print(f"kraft check: {m.path}: no size {sz!r} (have: {', '.join(m.sizes)})", markup=False)
                    sys.exit(EXIT_ERROR)
                runs.append(Run(m.name, sz, None, "-", None, status="skipped", verdict=f"skipped (no size {sz!r})", note=f"no size {sz!r}"))
                continue
            runs.append(Run(m.name, sz, None, mode_of(sz), None))

    clear_documents(Path(out_dir) / "check.json")  # written again once every run has finished
    for run in runs:
        if run.status == "skipped":
            continue
        m = manifests[run.spec]
        run.module = m.module
        run.cfg = str(m.directory / m.sizes[run.size].cfg)
        label = f"{run.spec}/{run.size}" + (f" variant {run.variant}" if run.variant else "")
        started = time.monotonic()
        last: dict[str, Progress | None] = {"p": None}

        live = live_enabled(err.file)
        with (err.status(f"TLC {escape(label)} ...", spinner="dots") if live else contextlib.nullcontext()) as status:

            def show() -> None:
                p = last["p"]
                text = f"TLC {escape(label)}: {time.monotonic() - started:.0f}s"
                if p is not None:
                    rate = f", {p.states / p.seconds:,.0f} states/s" if p.seconds > 0 else ""
                    text += (f", {p.states:,} states, {p.distinct:,} distinct, {p.queue:,} queued{rate}"
                             " (TLC reports each minute)")
                if status is not None:
                    status.update(text)

            def on_progress(p: Progress) -> None:
                last["p"] = p
                show()  # off a terminal or under CI: nothing (the verdict line and table follow)

            stop_ticker = threading.Event()

            def tick() -> None:  # keep the elapsed time moving between TLC's progress reports
                while not stop_ticker.wait(1.0):
                    show()

            ticker = threading.Thread(target=tick, daemon=True)
            if live:
                ticker.start()

            try:
                if master is not None and run.mode == "simulate":
                    run.result, run.cluster = _on_cluster(m, run, master, seeds, depth, timeout, seed)
                else:
                    run.result = run_spec(
                        m,
                        run.size,
                        run.variant,
                        simulate=simulate,
                        depth=depth,
                        workers=workers,
                        timeout=timeout,
                        seed=seed,
                        on_progress=on_progress,
                    )
            except (TLCError, ManifestError, FileNotFoundError) as exc:
                run.status = "error"
                run.verdict = "TOOL ERROR"
                run.note = str(exc)
                err.print(f"kraft check: {label}: {exc}", markup=False)
                continue
            finally:
                stop_ticker.set()
        _judge(run, m)
        r = run.result
        assert r is not None
        err.print(f"{label}: {run.verdict} in {time.monotonic() - started:.1f}s", highlight=False, markup=False)
        for e in r.errors:
            err.print(f"  {e}", markup=False, highlight=False)
        if r.counterexample and not quiet_trace and (r.violation or r.outcome == "error"):
            console.print(f"\n[bold red]Counterexample[/bold red] for {escape(label)} ({escape(str(r.violated or r.outcome))}):")
            print_counterexample(console, r.counterexample)
            console.print()

    table = Table(title="kraft check", box=box.SIMPLE_HEAD, pad_edge=False)
    for col in ("spec", "size", "variant", "states", "distinct", "depth", "time", "verdict"):
        table.add_column(col, justify="right" if col in ("states", "distinct", "depth", "time") else "left", overflow="fold")
    for run in runs:
        r = run.result
        style = {"ok": "green", "violation": "red", "missed": "red", "error": "yellow", "inconclusive": "yellow",
                 "skipped": "dim"}[run.status]
        table.add_row(
            escape(run.spec),
            escape(run.size),
            escape(run.variant or "-"),
            ("n/a" if run.mode == "simulate" and r.states == 0 else f"{r.states:,}") if r else "-",
            ("-" if run.mode == "simulate" else f"{r.distinct:,}") if r else "-",
            str(r.depth) if r else "-",
            f"{r.seconds:.1f}s" if r else "-",
            f"[{style}]{escape(run.verdict)}[/{style}]",
        )
    console.print(table)

    verdict, summary = overall(runs)
    out = Path(out_dir)
    try:
        out.mkdir(parents=True, exist_ok=True)
        doc = header("check", verdict, summary, {"runs": [r.to_json() for r in runs]})
        set_document(doc)
        write_document(out / "check.json", json.dumps(doc, indent=2) + "\n")
        console.print(f"{summary}\nwrote {out / 'check.json'}", highlight=False, markup=False)
    except OSError as exc:
        err.print(f"kraft check: cannot write {out / 'check.json'}: {exc}", markup=False)
        sys.exit(EXIT_ERROR)
    sys.exit(verdict.exit_code)
