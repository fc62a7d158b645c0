"""``kraft audit``: scan client histories (and simulator traces) for consistency violations.

Exit codes (kraft/outcome.py): 0 every history valid; 1 some history invalid; 2 usage, input or
tool error; 3 inconclusive: some history ``unknown`` (search budget reached, its check not run,
malformed) or no history found. ``OUT/summary.json`` carries the shared header.
"""

from __future__ import annotations

import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING

import click

from kraft.cliutil import LiveLine, json_flag, set_document
from kraft.outcome import EXIT_ERROR
from spark_validation.ingest.edn import EdnError, loads
from spark_validation.ingest.history import HistoryFormatError, normalize
from spark_validation.ingest.records import InputError
from spark_validation.checks.linearizable.models import MODELS
from spark_validation.options import CHECKS, KAFKA_ENGINES, REMOVED_ENGINES, AuditOptions
from spark_validation.unavailable import SparkUnavailable

if TYPE_CHECKING:  # pragma: no cover
    from spark_validation.engine.result import HistoryResult
    from spark_validation.report import AuditReport


def _parse_initial(text: str | None):
    if text is None:
        return None
    try:
        return normalize(loads(text, source="--initial"))
    except EdnError as exc:
        raise click.BadParameter(str(exc), param_hint="--initial") from None


class _AuditProgress:
    """The audit's progress as one live line on stderr (a terminal, not under CI): the audit's own
    step ("ingest: 40/120 files") and, while Spark works, its active stages with their task counts,
    read from the driver's status tracker (pyspark ``StatusTracker.getActiveStageIds`` and
    ``getStageInfo``). Off a terminal it prints nothing: the summary follows."""

    def __init__(self, spark: bool) -> None:
        self.line = LiveLine()
        self.step = ""
        self._stop = threading.Event()
        self._thread = (threading.Thread(target=self._poll, daemon=True)
                        if spark and self.line.enabled else None)

    def __call__(self, msg: str) -> None:
        self.step = msg
        self.line.update(msg, force=True)

    def _stages(self) -> str:
        try:
            # lazy: runs only once the Spark engine has started; --no-spark must not load pyspark
            from pyspark import SparkContext

            sc = SparkContext._active_spark_context
            if sc is None:
                return ""
            tracker = sc.statusTracker()
            parts = []
            for sid in sorted(tracker.getActiveStageIds())[:3]:
                info = tracker.getStageInfo(sid)
                if info is not None:
                    name = str(info.name).split(" at ")[0]
                    parts.append(f"stage {sid} {name} {info.numCompletedTasks}/{info.numTasks} tasks")
            return "; ".join(parts)
        except Exception:  # a display problem must not stop the audit
            return ""

    def _poll(self) -> None:
        while not self._stop.wait(0.5):
            stages = self._stages()
            self.line.update(f"{self.step} | spark {stages}" if stages else self.step)

    def __enter__(self) -> "_AuditProgress":
        if self._thread is not None:
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2)
        self.line.done()


def _parse_checks(text: str) -> frozenset[str]:
    wanted = {c.strip() for c in text.split(",") if c.strip()}
    unknown = wanted - set(CHECKS)
    if unknown or not wanted:
        raise click.BadParameter(f"unknown check(s) {sorted(unknown)}; choose from {','.join(CHECKS)}",
                                 param_hint="--checks")
    return frozenset(wanted)


def _engine(value: str) -> str:
    """``--engine``: a removed engine is a usage error naming it (exit 2)."""
    if value in REMOVED_ENGINES:
        raise click.BadParameter(f"{value!r} is no longer available: {REMOVED_ENGINES[value]}",
                                 param_hint="--engine")
    if value not in KAFKA_ENGINES:
        raise click.BadParameter(f"unknown engine {value!r}; choose from {', '.join(KAFKA_ENGINES)}",
                                 param_hint="--engine")
    return value


def unknown_reason(r: HistoryResult) -> str:
    """Why a history's verdict is ``unknown``, from its result (its results.json entry)."""
    if r.malformed:
        return f"malformed history, not checked: {r.malformed}"
    info, lin = r.info, r.info and r.info.lin
    reasons = [info.error, lin and lin.error, info.kafka] if info else []
    reasons += [u.reason for u in lin.unknown_partitions] if lin else []  # the reason may sit in a partition
    for reason in reasons:
        if reason:
            return reason
    return "undecided (no reason recorded)"


def print_summary(report: AuditReport, out: Path) -> None:
    s = report.summary()
    click.echo(f"checked on       {s['engine']}")
    click.echo(f"histories        {s['histories']}")
    click.echo(f"ops              {s['ops']}")
    click.echo(f"valid            {s['valid']}" + (f" ({s['valid_with_lost_lines']} only for the ops read: "
                                                       f"lines were lost)" if s.get("valid_with_lost_lines") else ""))
    click.echo(f"invalid          {s['invalid']}")
    click.echo(f"unknown          {s['unknown']}")
    click.echo(f"malformed        {s['malformed_lines']} line(s), {s['malformed_histories']} history(ies), "
               f"{s['skipped_files']} file(s) skipped")
    if s.get("command_summaries"):
        what = ", ".join(f"{n} {'simulator' if c == 'simulate' else 'kraft ' + c} summar{'y' if n == 1 else 'ies'}"
                         for c, n in s["command_summaries"].items())
        click.echo(f"not histories    {what} (summary.json)")
    if s["ignored_files"]:
        shown = ", ".join(s["ignored"][:5]) + (", ..." if s["ignored_files"] > 5 else "")
        click.echo(f"ignored          {s['ignored_files']} file(s) that are not histories, tables or traces: {shown}")
    if s["violations"]:
        click.echo("violations by kind:")
        for k, n in s["violations"].items():
            click.echo(f"  {k:<24} {n}")
    else:
        click.echo("violations       none")
    for k, n in s["informational"].items():
        what = ("key(s) with acknowledged sends never polled (--allow-unseen)" if k == "unseen"
                else "cycle(s) Jepsen's Kafka checker allows (evidence.allowed)")
        click.echo(f"{k} (not a violation): {n} {what}")
    for m in report.malformed[:10]:
        where = f"{m.path}:{m.line}" if m.line is not None else m.path
        label = {"file": "skipped file", "history": "malformed history"}.get(m.scope, "malformed")
        click.echo(f"  {label} {where}: {m.reason}")
    if len(report.malformed) > 10:
        click.echo(f"  ... {len(report.malformed) - 10} more in {out / 'malformed.json'}")
    undecided = [r for r in report.results if r.valid == "unknown"]
    for r in undecided[:10]:  # say why, not only that (the reason is in results.json too)
        click.echo(f"  UNKNOWN {r.history}: {unknown_reason(r)}")
    if len(undecided) > 10:
        click.echo(f"  ... {len(undecided) - 10} more undecided histories in {out / 'results.json'}")
    bad = [r for r in report.results if r.valid is False]
    for r in bad[:10]:
        kinds = sorted({a.kind for a in r.anomalies})
        click.echo(f"  INVALID {r.history}: {', '.join(kinds)}")
    if len(bad) > 10:
        click.echo(f"  ... {len(bad) - 10} more invalid histories")
    click.echo(report.verdict()[1])
    click.echo(f"results: {out / 'results.json'}")


@click.command(name="audit")
@click.argument("paths", nargs=-1, required=True)
@click.option("--model", default=None, help="model for histories that name none (sidecar/header win)")
@click.option("--initial", default=None, help="initial value of the model, as EDN (e.g. 0, nil, {:x 0})")
@click.option("--master", default=None, help="Spark master URL (default local[*])")
@click.option("--out", "out", default="results/audit", show_default=True, type=click.Path(file_okay=False))
@click.option("--budget", default=None, type=float, help="seconds per history for the linearizability search")
@click.option("--checks", default=",".join(CHECKS), show_default=True, help="comma-separated subset of lin,kafka,metadata")
@click.option("--no-spark", is_flag=True, help="run the checkers in-process, without a JVM (small inputs)")
@click.option("--engine", default="arrow", show_default=True, callback=lambda ctx, p, v: _engine(v),
              help="Spark Kafka check: arrow (numpy kernel per partition), the only one")
@click.option("--store-kafka-rows", is_flag=True,
              help="also write OUT/kafka_rows.parquet: Kafka kernel rows clustered by history, used by a "
                   "later `kraft audit OUT/ops.parquet` (no shuffle; the fastest Kafka check)")
@click.option("--nil-reads", default="auto", show_default=True, type=click.Choice(("auto", "knossos", "strict")),
              help="register models: a read of nil is a read of an unknown value (knossos, as knossos.model) "
                   "or of the value nil (strict: nil means absent); auto = knossos for .edn, strict otherwise")
@click.option("--ww-deps", is_flag=True,
              help="Kafka cycles: infer ww edges from each key's version order (Jepsen's :ww-deps); "
                   "G0 is then reported (allowed, as Jepsen does) and G1c becomes allowed")
@click.option("--rw-deps", is_flag=True,
              help="Kafka cycles: draw rw (anti-dependency) edges from each op's last read of a key, "
                   "to report G-single-item, G-nonadjacent-item and G2-item (Jepsen draws none)")
@click.option("--process-order", is_flag=True,
              help="Kafka cycles: add Elle's process-order edges (each process's ok ops in order), to report "
                   "the -process variants (G0-process, G1c-process, ...)")
@click.option("--realtime/--no-realtime", default=True, show_default=True,
              help="Kafka cycles: Elle's realtime edges (a completed before b was invoked), which Jepsen's "
                   "Kafka checker always adds (:strict-serializable), for the -realtime variants "
                   "(G0-realtime, G1c-realtime, ...)")
@click.option("--allow-unseen", is_flag=True,
              help="acknowledged sends no poll read do not make a history invalid (for histories that end "
                   "without Jepsen's final polls); by default they do, as in jepsen.tests.kafka")
@json_flag("audit")
def audit(paths: tuple[str, ...], model: str | None, initial: str | None, master: str | None, out: str,
          budget: float | None, checks: str, no_spark: bool, engine: str, store_kafka_rows: bool,
          nil_reads: str, ww_deps: bool, rw_deps: bool, process_order: bool, realtime: bool,
          allow_unseen: bool) -> None:
    """Report every consistency violation provable from client histories.

    PATH is a history file (Jepsen EDN, NDJSON), a directory of them, a Parquet table written by
    an earlier audit (ops.parquet), or a simulator trace (metadata agreement). Exit 1 if a
    violation was found, 2 on bad input or a tool failure, 3 if some history stayed undecided
    (unknown) or none was found.
    """
    if budget is not None and budget <= 0:
        raise click.BadParameter("must be positive", param_hint="--budget")
    if no_spark and master:
        raise click.UsageError("--master and --no-spark are exclusive")
    # a misspelt --model would leave every history unknown: a usage error
    if model is not None and model not in MODELS:
        raise click.BadParameter(f"unknown model {model!r}; known: {', '.join(sorted(MODELS))}",
                                 param_hint="--model")
    opts = AuditOptions(paths=tuple(paths), model=model, initial=_parse_initial(initial), master=master,
                        out=Path(out), budget=budget, checks=_parse_checks(checks), no_spark=no_spark,
                        store_kafka=store_kafka_rows, nil_reads=nil_reads,
                        ww_deps=ww_deps, rw_deps=rw_deps, process_order=process_order, realtime=realtime,
                        allow_unseen=allow_unseen)
    # lazy: the audit's readers and checkers load numpy, pyarrow and pandas, which `kraft --help`
    # and a usage error do not need
    from spark_validation.audit import run

    try:
        with _AuditProgress(spark=not no_spark) as progress:
            report = run(opts, progress)
    except FileNotFoundError as exc:  # discover() raises it with the path; the OS with (errno, text, path)
        where = exc.filename if exc.filename is not None else (exc.args[0] if exc.args else exc)
        click.echo(f"kraft audit: no such file or directory: {where}", err=True)
        sys.exit(EXIT_ERROR)
    except OSError as exc:  # --out under a regular file, unwritable output, ...
        click.echo(f"kraft audit: {exc.filename or out}: {exc.strerror or exc}", err=True)
        sys.exit(EXIT_ERROR)
    except (InputError, HistoryFormatError) as exc:
        click.echo(f"kraft audit: {exc}", err=True)
        sys.exit(EXIT_ERROR)
    except SparkUnavailable as exc:
        click.echo(f"kraft audit: {exc}", err=True)
        sys.exit(EXIT_ERROR)
    set_document(report.document())
    print_summary(report, Path(out))
    if not report.results:
        click.echo("kraft audit: no histories found under the given paths: nothing was checked", err=True)
    sys.exit(report.exit_code)
