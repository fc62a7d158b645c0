"""The review pipeline (``kraft review``), its HTML page (``kraft report``) and ``kraft test``.

``kraft review`` is the main job: it runs the four checks in the order a reviewer would, each as its
own ``kraft`` subcommand in a subprocess (so each keeps its own output, JSON and exit code), and
then summarises what was found:

  1. model-check every spec at the small size            (kraft check)
  2. confirm every historical bug variant is caught      (kraft check --all-variants)
  3. simulate each protocol with all faults, recording traces and client histories (kraft simulate)
  4. check the recorded traces against the specs          (kraft conform)
  5. audit the recorded histories                         (kraft audit, local Spark)

A stage whose subcommand is not part of this build is reported as skipped, never as passed.
"""

from __future__ import annotations

import html
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import attrs
import click

from kraft.cli import COMMANDS, EXIT_ERROR, EXIT_OK, EXIT_VIOLATION


@attrs.frozen
class Stage:
    name: str
    what: str
    argv: tuple[str, ...]
    output: str  # path (relative to the results dir) of the JSON the stage writes
    # exit code that means "found what it should": variants must be caught, so 1 is a pass there
    expect_violation: bool = False


@attrs.define
class StageResult:
    name: str
    what: str
    status: str  # passed | violation | error | skipped
    exit_code: int | None
    seconds: float
    detail: str
    output: str | None
    log: str


def _stages(out: Path, seeds: int, steps: int, protocols: tuple[str, ...]) -> list[Stage]:
    sim = out / "sim"
    stages = []
    for spec, sizes in _review_sizes().items():
        for size in sizes:
            stages.append(Stage(f"model-check-{spec}-{size}", f"TLC on {spec} ({size})",
                                ("check", spec, "--size", size, "--out", str(out / "check" / spec / size)),
                                f"check/{spec}/{size}/check.json"))
    stages.append(Stage("variants", "every bug variant yields a counterexample",
                        ("check", "--all-variants", "--out", str(out / "variants")), "variants/check.json"))
    for protocol in protocols:
        stages.append(
            Stage(f"simulate-{protocol}", f"simulator, {seeds} seeds x {steps} steps, all faults",
                  ("simulate", "--protocol", protocol, "--seed", "1", "--steps", str(steps), "--faults", "all",
                   "--count", str(seeds), "--out", str(sim / protocol)),
                  f"sim/{protocol}/summary.json"))
    stages += [
        # every simulated protocol has conformance glue (traces/protocols/); the trace header names it
        Stage("conform", f"TLC decides each recorded trace ({', '.join(protocols)})",
              ("conform", *(str(sim / p) for p in protocols), "--out", str(out / "conform")),
              "conform/conform.json"),
        Stage("audit", "Spark audit of the recorded histories (local)", ("audit", str(sim), "--out", str(out / "audit")),
              "audit/results.json"),
    ]
    return stages


def _review_sizes() -> dict[str, list[str]]:
    """Each spec's sizes for the review: the manifest's ``review_sizes`` list, else ``["small"]``."""
    try:
        from model_check.specs import spec_dir
    except ImportError:
        return {}
    import tomllib

    sizes = {}
    for path in sorted(Path(spec_dir()).glob("*.toml")):
        try:
            data = tomllib.loads(path.read_text())
        except (OSError, tomllib.TOMLDecodeError):
            data = {}  # kraft check reports the broken manifest with its line
        sizes[path.stem] = [str(x) for x in data.get("review_sizes", ["small"])]
    return sizes


def _available(command: str) -> bool:
    target = COMMANDS.get(command)
    if target is None:
        return False
    module = target.split(":")[0]
    import importlib.util

    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:
        return False


def _summarise_json(path: Path) -> str:
    """A one-line digest of a stage's JSON output, whatever its exact shape."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        return f"(no readable JSON at {path}: {exc})"
    if isinstance(data, dict) and "summary" in data and isinstance(data["summary"], (str, dict)):
        s = data["summary"]
        # a list (e.g. the files a stage ignored) is summarised by its length; it is in the JSON
        return s if isinstance(s, str) else ", ".join(
            f"{k}={len(v)}" if isinstance(v, (list, dict)) else f"{k}={v}" for k, v in s.items())
    rows = data if isinstance(data, list) else data.get("runs") or data.get("results") or []
    if isinstance(rows, list) and rows and isinstance(rows[0], dict):
        verdicts: dict[str, int] = {}
        for row in rows:
            v = row.get("verdict", row.get("valid", row.get("outcome")))
            verdicts[str(v)] = verdicts.get(str(v), 0) + 1
        return f"{len(rows)} rows: " + ", ".join(f"{k}: {n}" for k, n in sorted(verdicts.items()))
    return f"{type(data).__name__} at {path.name}"


def _launcher() -> list[str]:
    """How a stage's subprocess starts the kraft CLI (a seam for tests)."""
    return ["-m", "kraft.cli"]


def run_stage(stage: Stage, out: Path, timeout: float | None) -> StageResult:
    command = stage.argv[0]
    if not _available(command):
        return StageResult(stage.name, stage.what, "skipped", None, 0.0,
                           f"`kraft {command}` is not part of this build", None, "")
    log_path = out / "logs" / f"{stage.name}.log"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    argv = [sys.executable, *_launcher(), *stage.argv]
    click.echo(f"== {stage.name}: {stage.what}\n   $ kraft {' '.join(stage.argv)}")
    start = time.monotonic()
    with log_path.open("w") as log:
        try:
            proc = subprocess.run(argv, stdout=log, stderr=subprocess.STDOUT, timeout=timeout,
                                  env={**os.environ, "PYTHONUNBUFFERED": "1"})
            code: int | None = proc.returncode
        except subprocess.TimeoutExpired:
            code = None
    seconds = time.monotonic() - start
    text = log_path.read_text(errors="replace")
    json_path = out / stage.output
    detail = _summarise_json(json_path) if json_path.exists() else ""
    if code is None:
        status, detail = "error", f"timed out after {timeout:.0f}s"
    elif code == EXIT_OK:
        status = "error" if stage.expect_violation else "passed"
    elif code == EXIT_VIOLATION:
        status = "passed" if stage.expect_violation else "violation"
    else:
        status = "error"
        tail = [line for line in text.strip().splitlines() if line.strip()][-3:]
        detail = detail or " | ".join(tail)
    click.echo(f"   -> {status} in {seconds:.1f}s  {detail}")
    return StageResult(stage.name, stage.what, status, code, seconds, detail,
                       str(json_path) if json_path.exists() else None, str(log_path))


@click.command()
@click.option("--out", "out_dir", type=click.Path(file_okay=False), default="results", show_default=True,
              help="Directory for every stage's output, logs, summary.json and report.html.")
@click.option("--seeds", default=2, show_default=True, help="Simulator runs per protocol.")
@click.option("--steps", default=1000, show_default=True, help="Simulator events per run.")
@click.option("--protocol", "protocols", multiple=True, default=("kraft", "groups"), show_default=True,
              help="Protocols to simulate (repeatable).")
@click.option("--stage-timeout", default=1800.0, show_default=True, help="Seconds before a stage is stopped.")
def review(out_dir: str, seeds: int, steps: int, protocols: tuple[str, ...], stage_timeout: float) -> None:
    """Run the whole review pipeline and summarise what it found (the main job)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    results = [run_stage(s, out, stage_timeout) for s in _stages(out, seeds, steps, protocols)]
    summary = {"generated": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
               "stages": [attrs.asdict(r) for r in results]}
    (out / "summary.json").write_text(json.dumps(summary, indent=2))
    page = write_report(out)
    click.echo("\nSummary")
    width = max(len(r.name) for r in results)
    for r in results:
        click.echo(f"  {r.name:<{width}}  {r.status:<9}  {r.seconds:7.1f}s  {r.detail}")
    click.echo(f"\nJSON: {out / 'summary.json'}   page: {page}")
    if any(r.status == "violation" for r in results):
        sys.exit(EXIT_VIOLATION)
    if any(r.status == "error" for r in results):
        sys.exit(EXIT_ERROR)


def write_report(out: Path) -> Path:
    """Render one self-contained HTML page from summary.json and the stages' JSON files."""
    summary = json.loads((out / "summary.json").read_text())
    colours = {"passed": "#1a7f37", "violation": "#cf222e", "error": "#9a6700", "skipped": "#6e7781"}
    rows = []
    sections = []
    for st in summary["stages"]:
        colour = colours.get(st["status"], "#000")
        rows.append(
            f"<tr><td>{html.escape(st['name'])}</td><td>{html.escape(st['what'])}</td>"
            f"<td style='color:{colour};font-weight:bold'>{html.escape(st['status'])}</td>"
            f"<td>{st['seconds']:.1f}s</td><td>{html.escape(st['detail'] or '')}</td></tr>")
        body = ""
        if st.get("output"):
            try:
                data = json.loads(Path(st["output"]).read_text())
                body = _json_table(data)
            except (OSError, ValueError):
                body = "<p>(output unreadable)</p>"
        log = ""
        if st.get("log") and Path(st["log"]).exists():
            text = Path(st["log"]).read_text(errors="replace")
            log = f"<details><summary>log</summary><pre>{html.escape(text[-20000:])}</pre></details>"
        sections.append(f"<h2 id='{html.escape(st['name'])}'>{html.escape(st['name'])}</h2>{body}{log}")
    page = f"""<!doctype html><html><head><meta charset="utf-8"><title>kraft review</title>
<style>body{{font-family:system-ui,sans-serif;margin:2em;max-width:1200px}}table{{border-collapse:collapse}}
td,th{{border:1px solid #d0d7de;padding:4px 8px;text-align:left;vertical-align:top;font-size:14px}}
pre{{background:#f6f8fa;padding:1em;overflow:auto;max-height:30em}}</style></head><body>
<h1>kraft review</h1><p>generated {html.escape(summary['generated'])}</p>
<table><tr><th>stage</th><th>what</th><th>verdict</th><th>time</th><th>detail</th></tr>{''.join(rows)}</table>
{''.join(sections)}</body></html>"""
    path = out / "report.html"
    path.write_text(page)
    return path


def _json_table(data: Any, limit: int = 200) -> str:
    rows = data if isinstance(data, list) else data.get("runs") or data.get("results") if isinstance(data, dict) else None
    if not isinstance(rows, list) or not rows or not all(isinstance(r, dict) for r in rows):
        return f"<pre>{html.escape(json.dumps(data, indent=1, default=str)[:20000])}</pre>"
    keys: list[str] = []
    for r in rows[:limit]:
        for k, v in r.items():
            if k not in keys and not isinstance(v, (list, dict)):
                keys.append(k)
    head = "".join(f"<th>{html.escape(k)}</th>" for k in keys)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(str(r.get(k, '')))}</td>" for k in keys) + "</tr>" for r in rows[:limit])
    more = f"<p>... {len(rows) - limit} more rows in the JSON</p>" if len(rows) > limit else ""
    return f"<table><tr>{head}</tr>{body}</table>{more}"


@click.command()
@click.argument("results_dir", type=click.Path(exists=True, file_okay=False), default="results")
def report(results_dir: str) -> None:
    """Write RESULTS_DIR/report.html: one page of everything `kraft review` found."""
    out = Path(results_dir)
    if not (out / "summary.json").exists():
        click.echo(f"kraft report: {out / 'summary.json'} not found (run `kraft review --out {out}` first)", err=True)
        sys.exit(EXIT_ERROR)
    click.echo(str(write_report(out)))


@click.command(context_settings={"ignore_unknown_options": True, "allow_extra_args": True})
@click.pass_context
def test(ctx: click.Context) -> None:
    """Run the test suite (arguments go to pytest; `-m slow` runs the exhaustive ones)."""
    root = Path(__file__).resolve().parents[1]
    sys.exit(subprocess.call([sys.executable, "-m", "pytest", *ctx.args], cwd=root))
