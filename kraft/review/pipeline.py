"""``kraft review``: the main job.

It runs the four checks in the order a reviewer would, each as its own ``kraft`` subcommand in a
subprocess (so each keeps its own output, JSON and exit code), and then summarises what was found:

  1. model-check every spec at its review sizes             (kraft check)
  2. every historical bug variant through all four checks    (kraft zoo, within --zoo-budget; the
     control row's TLC cells are the model-check runs of step 1)
  3. simulate each protocol with all faults, recording traces and client histories (kraft simulate)
  4. check the recorded traces against the specs             (kraft conform)
  5. audit the recorded histories                            (kraft audit, local Spark)
  6. audit the simulated controllers' metadata logs          (kraft audit-metadata)

Each stage's verdict and one-line summary come from the shared JSON header its command writes
(kraft/outcome.py: ``command, verdict, summary, exit_code``); the header must agree with the
process's exit code. A stage that exits without a readable header, or whose header disagrees with
its exit code, is an error. A stage whose subcommand is not part of this build is reported as
skipped, never as passed. ``OUT/summary.json`` carries the same header for the review itself.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import attrs
import click

from kraft import interrupt
from kraft.cli import COMMANDS
from kraft.cliutil import json_flag, set_document
from kraft.protocols import PROTOCOLS
from kraft.replication.config import ReplicationConfig
from kraft.outcome import (HeaderError, Verdict, clear_documents, header, plural, read_header, worst_status,
                           write_document)
from model_check.specs import spec_dir

from .page import write_report


@attrs.frozen
class Stage:
    name: str
    what: str
    argv: tuple[str, ...]
    output: str  # path (relative to the results dir) of the JSON document (with the header) the stage writes
    # a stage that must find a violation (a bug variant run on its own): its "violation" is a pass
    expect_violation: bool = False


# a stage's status: passed | violation | error | inconclusive | skipped
_STATUS_OF = {Verdict.CLEAN: "passed", Verdict.VIOLATION: "violation", Verdict.ERROR: "error",
              Verdict.INCONCLUSIVE: "inconclusive"}
_VERDICT_OF = {v: k for k, v in _STATUS_OF.items()}


@attrs.define
class StageResult:
    name: str
    what: str
    status: str  # passed | violation | error | inconclusive | skipped
    exit_code: int | None
    seconds: float
    detail: str  # the stage's header summary (or why there is none)
    output: str | None
    log: str


def _stages(out: Path, seeds: int, steps: int, protocols: tuple[str, ...],
            zoo_budget: float = 1200.0) -> list[Stage]:
    sim = out / "sim"
    stages = []
    reuse: list[str] = []
    for spec, sizes in _review_sizes().items():
        reuse += ["--reuse-tlc", str(out / "check" / spec / "small" / "check.json")]
        for size in sizes:
            stages.append(Stage(f"model-check-{spec}-{size}", f"TLC on {spec} ({size})",
                                ("check", spec, "--size", size, "--out", str(out / "check" / spec / size)),
                                f"check/{spec}/{size}/check.json"))
    stages.append(Stage("zoo", f"every bug variant through TLC, Hypothesis, conformance and audit "
                               f"(budget {zoo_budget:.0f}s)",
                        ("zoo", "--budget", f"{zoo_budget:g}", "--out", str(out / "zoo"), *reuse), "zoo/zoo.json"))
    metadata = [p for p in protocols if p in PROTOCOLS and "metadata" in PROTOCOLS[p].plugin(3, None).kept_logs]
    for protocol in protocols:
        keep = ("--metadata-log",) if protocol in metadata else ()
        stages.append(
            Stage(f"simulate-{protocol}", f"simulator, {seeds} seeds x {steps} steps, all faults",
                  ("simulate", "--protocol", protocol, "--seed", "1", "--steps", str(steps), "--faults", "all",
                   "--count", str(seeds), *keep, "--out", str(sim / protocol)),
                  f"sim/{protocol}/summary.json"))
    stages += [
        # every simulated protocol has conformance glue (traces/protocols/); the trace header names it
        Stage("conform", f"TLC decides each recorded trace ({', '.join(protocols)})",
              ("conform", *(str(sim / p) for p in protocols), "--out", str(out / "conform")),
              "conform/conform.json"),
        Stage("audit", "Spark audit of the recorded histories (local)", ("audit", str(sim), "--out", str(out / "audit")),
              "audit/summary.json"),
    ]
    if metadata:
        # the simulated cluster's min.insync.replicas is broker config, not a record in the log
        min_isr = str(ReplicationConfig().min_insync_replicas)
        stages.append(Stage("audit-metadata", "the simulated controllers' metadata logs against the replication rules",
                            ("audit-metadata", *(str(sim / p) for p in metadata), "--min-isr", min_isr,
                             "--out", str(out / "audit-metadata")),
                            "audit-metadata/audit-metadata.json"))
    return stages


def _review_sizes() -> dict[str, list[str]]:
    """Each spec's sizes for the review: the manifest's ``review_sizes`` list, else ``["small"]``."""
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
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:
        return False


def read_stage_header(path: Path) -> tuple[Verdict, str]:
    """The verdict and summary sentence a stage's command wrote (raises HeaderError with the path)."""
    try:
        doc = json.loads(path.read_text())
    except OSError as exc:
        raise HeaderError(f"{path}: not readable: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise HeaderError(f"{path}: not JSON: {exc}") from None
    _, verdict, summary, _ = read_header(doc, str(path))
    return verdict, summary


def judge(stage: Stage, code: int | None, json_path: Path, log_text: str,
          timeout: float | None) -> tuple[str, str]:
    """(status, detail) of a finished stage, from its header and its exit code."""
    if code is None:
        return "inconclusive", f"stopped after {timeout:.0f}s (--stage-timeout)"
    tail = " | ".join([line for line in log_text.strip().splitlines() if line.strip()][-3:])
    try:
        verdict, detail = read_stage_header(json_path) if json_path.exists() else (None, "")
    except HeaderError as exc:
        return "error", f"{exc} (exit code {code})"
    if verdict is None:
        # only a command that stopped on a usage, input or tool error may leave no document behind
        return "error", (tail or f"exit code {code}") if code != 0 else f"exit code 0 but no {json_path} written"
    if verdict.exit_code != code:
        return "error", f"exit code {code} but {json_path.name} says {verdict.value} ({detail})"
    status = _STATUS_OF[verdict]
    if stage.expect_violation:
        if verdict is Verdict.VIOLATION:
            status = "passed"
        elif verdict is Verdict.CLEAN:
            status, detail = "error", f"expected a violation, found none ({detail})"
    return status, detail


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
    json_path = out / stage.output
    json_path.unlink(missing_ok=True)  # never read a previous run's verdict
    argv = [sys.executable, *_launcher(), *stage.argv]
    click.echo(f"== {stage.name}: {stage.what}\n   $ kraft {' '.join(stage.argv)}")
    start = time.monotonic()
    with log_path.open("w") as log:  # the stage in its own session: stopped whole at the timeout or an interrupt
        code = interrupt.run(argv, timeout=timeout, stdout=log, stderr=subprocess.STDOUT,
                             env={**os.environ, "PYTHONUNBUFFERED": "1"})
    seconds = time.monotonic() - start
    status, detail = judge(stage, code, json_path, log_path.read_text(errors="replace"), timeout)
    click.echo(f"   -> {status} in {seconds:.1f}s  {detail}")
    return StageResult(stage.name, stage.what, status, code, seconds, detail,
                       str(json_path) if json_path.exists() else None, str(log_path))


def review_verdict(results: list[StageResult]) -> tuple[Verdict, str]:
    """The review's own verdict: the worst of its stages' (skipped stages check nothing)."""
    verdict, _, skipped, tail = worst_status((r.status for r in results), _VERDICT_OF)
    ran = [r for r in results if r.status != "skipped"]
    if not ran:
        return verdict, f"no stage could run ({plural(skipped, 'stage')} skipped)"
    passed = sum(r.status == "passed" for r in ran)
    if passed == len(ran):
        return verdict, f"all {plural(len(ran), 'stage')} passed{tail}"
    others = ", ".join(f"{r.name} {r.status}" for r in ran if r.status != "passed")
    return verdict, f"{passed} of {plural(len(ran), 'stage')} passed ({others}){tail}"


@click.command()
@click.option("--out", "out_dir", type=click.Path(file_okay=False), default="results", show_default=True,
              help="Directory for every stage's output, logs, summary.json and report.html.")
@click.option("--seeds", default=2, show_default=True, help="Simulator runs per protocol.")
@click.option("--steps", default=1000, show_default=True, help="Simulator events per run.")
@click.option("--protocol", "protocols", multiple=True, default=("kraft", "groups", "consumer-protocol", "replication"),
              show_default=True, help="Protocols to simulate (repeatable).")
@click.option("--stage-timeout", default=1800.0, show_default=True, help="Seconds before a stage is stopped.")
@click.option("--zoo-budget", default=1200.0, show_default=True, type=click.FloatRange(min=1),
              help="Seconds for the bug zoo (kraft zoo --budget); cells it does not reach are inconclusive.")
@json_flag("review")
def review(out_dir: str, seeds: int, steps: int, protocols: tuple[str, ...], stage_timeout: float,
           zoo_budget: float) -> None:
    """Run the whole review pipeline and summarise what it found (the main job).

    Exit code: the worst stage's (1 a violation, 2 an error, 3 inconclusive), else 0."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    clear_documents(out / "summary.json")  # written again after the last stage
    results = [run_stage(s, out, stage_timeout) for s in _stages(out, seeds, steps, protocols, zoo_budget)]
    verdict, sentence = review_verdict(results)
    summary = header("review", verdict, sentence,
                     {"generated": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                      "stages": [attrs.asdict(r) for r in results]})
    write_document(out / "summary.json", json.dumps(summary, indent=2))
    set_document(summary)
    page = write_report(out)
    click.echo("\nSummary")
    width = max(len(r.name) for r in results)
    for r in results:
        click.echo(f"  {r.name:<{width}}  {r.status:<12}  {r.seconds:7.1f}s  {r.detail}")
    click.echo(f"\n{sentence}\nJSON: {out / 'summary.json'}   page: {page}")
    sys.exit(verdict.exit_code)
