"""The audit: ingest, the three checks (lin, kafka, metadata), per-history results and outputs.

Two engines with the same checks and the same outputs:

* Spark (default): ingest, Kafka anomalies and metadata agreement are DataFrame jobs; the
  linearizability checker runs per history inside the executors (``groupBy(history)``
  ``.applyInPandas``), each history with the ``--budget``.
* ``--no-spark``: the same checkers in this process (the Kafka check of
  :mod:`spark_validation.checks.kafka`), for quick feedback on small inputs.

Outputs under ``--out`` (contract: ``results.json``):

``summary.json``      the command's document: the shared header of every kraft command
                      (``command, verdict, summary, exit_code``; kraft/outcome.py), then the
                      counts printed at the end of the run
``results.json``      one object per history: ``history, model, valid, ops, seconds, anomalies``
                      (+ ``checks``, and ``malformed`` / ``info`` when relevant)
``results.parquet``   the same, anomalies as a JSON string column
``anomalies.parquet`` one row per anomaly: ``history, kind, key, evidence`` (JSON string)
``malformed.json``    every malformed line / unusable file / malformed history, by file and line
``ops.parquet``       (with ``--write-ops`` or ``--store-kafka-rows``) the ingested op table,
                      partitioned by model: a corpus ``kraft audit`` reads
``kafka_rows.parquet`` (with ``--store-kafka-rows``) the Kafka kernel rows of ``ops.parquet``,
                      clustered by history, and ``kafka_rows.json`` naming the ``ops.parquet`` files
                      they were made from. A later ``kraft audit OUT/ops.parquet`` whose files
                      still match checks Kafka anomalies from them, one task per file and no
                      shuffle (:func:`checks.kafka.spark.collect_stored`), the fastest path.
"""

from __future__ import annotations

import heapq
import json
import os
import shutil
import sys
import time
import uuid
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any, Callable

import attrs
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from kraft.outcome import Verdict, clear_documents, header, plural, write_document
from spark_validation.checks import kafka as kafka_check
from spark_validation.checks.elle import CycleOptions, check_rows_ref, check_table
from spark_validation.checks.elle.spark import check_spark
from spark_validation.checks.kafka import kernel as kafka_kernel
from spark_validation.checks.kafka import rules as kafka_rules
from spark_validation.checks.kafka import spark as kafka_spark
from spark_validation.checks.kafka import spark_rows as kafka_spark_rows
from spark_validation.checks.kafka.anomaly import KafkaAnomaly, sorted_anomalies
from spark_validation.checks.kafka.fast import KERNEL_LIMITS
from spark_validation.checks.kafka.rows import cycle_table, kernel_table
from spark_validation.ingest import spark as ingest
from spark_validation.ingest.history import HistoryFormatError, normalize, to_jsonable
from spark_validation.ingest.records import Malformed, command_summaries, discover, ignored_files, rows_to_ops
from spark_validation.ingest.rows import no_cyclic_gc, read_rows, read_table, structure_problem
from spark_validation.ingest.spark import unreadable_parquet
from spark_validation.checks.linearizable import check_history
from spark_validation.metadata import MODEL, check_traces_local, check_traces_spark
from spark_validation.checks.linearizable.models import MODELS
from spark_validation.options import AuditOptions
from spark_validation.session import get_context, get_session

KAFKA_FS = ("send", "poll", "txn")


@attrs.define
class AuditReport:
    results: list[dict]
    anomalies: list[dict]
    malformed: list[dict]
    stage_seconds: dict[str, float]
    ops_total: int = 0
    ignored: list[str] = attrs.field(factory=list)  # files that are not histories, tables or traces
    kafka_engine: dict[str, Any] = attrs.field(factory=dict)  # which engine/path the Kafka check took
    summaries: list[tuple[str, str]] = attrs.field(factory=list)  # (path, command): kraft summary.json files
    engine: str = "in-process"  # where the checks ran: "in-process" or the Spark master URL

    @property
    def violations(self) -> Counter:
        return Counter(a["kind"] for a in self.anomalies if kafka_check.is_violation(a))

    def verdict(self) -> tuple[Verdict, str]:
        """The command's verdict and its summary sentence: a violation if any history is invalid;
        inconclusive if any history is ``unknown`` (budget reached, check not run, malformed) or
        there was no history at all (nothing checked); clean otherwise."""
        n = len(self.results)
        bad = sum(r["valid"] is False for r in self.results)
        unknown = sum(r["valid"] == "unknown" for r in self.results)
        ops = plural(self.ops_total, "op")
        if bad:
            kinds = ", ".join(sorted(self.violations)) or "anomalies"
            return Verdict.VIOLATION, f"{plural(bad, 'history', 'histories')} of {n} invalid ({kinds}; {ops})"
        if n == 0:
            return Verdict.INCONCLUSIVE, "no histories found: nothing was checked"
        if unknown:
            return Verdict.INCONCLUSIVE, (f"{plural(unknown, 'history', 'histories')} of {n} undecided (unknown), "
                                          f"{n - unknown} valid ({ops})")
        partial = sum(1 for r in self.results if r.get("malformed_lines"))
        lost = (f"; {plural(partial, 'history', 'histories')} valid only for the ops read "
                f"({plural(sum(r.get('malformed_lines', 0) for r in self.results), 'line')} unreadable)"
                if partial else "")
        return Verdict.CLEAN, ("1 history, valid" if n == 1 else f"{n} histories, all valid") + f" ({ops}{lost})"

    @property
    def exit_code(self) -> int:
        return self.verdict()[0].exit_code

    def document(self) -> dict[str, Any]:
        """``summary.json``: the shared header, then :meth:`summary`."""
        verdict, sentence = self.verdict()
        return header("audit", verdict, sentence, self.summary())

    def summary(self) -> dict[str, Any]:
        valid = Counter(str(r["valid"]).lower() for r in self.results)
        return {
            "histories": len(self.results),
            "ops": self.ops_total,
            "valid": valid.get("true", 0),
            "invalid": valid.get("false", 0),
            "unknown": valid.get("unknown", 0),
            "violations": dict(sorted(self.violations.items())),
            "informational": dict(Counter(a["kind"] for a in self.anomalies if not kafka_check.is_violation(a))),
            "malformed_lines": sum(1 for m in self.malformed if m.get("scope") == "line"),
            # valid histories that lost lines: valid for the ops read only (mark_lost_lines)
            "valid_with_lost_lines": sum(1 for r in self.results if r["valid"] is True and r.get("malformed_lines")),
            "malformed_histories": sum(1 for m in self.malformed if m.get("scope") == "history"),
            "skipped_files": sum(1 for m in self.malformed if m.get("scope") == "file"),
            "ignored_files": len(self.ignored),
            # not histories: summary.json files of kraft commands (kraft simulate writes one per run)
            "command_summaries": dict(sorted(Counter(c for _, c in self.summaries).items())),
            "ignored": self.ignored[:IGNORED_SAMPLE],
            "engine": self.engine,
            "stage_seconds": {k: round(v, 3) for k, v in self.stage_seconds.items()},
            **({"kafka_engine": self.kafka_engine} if self.kafka_engine else {}),
        }


Progress = Callable[[str], None]
IGNORED_SAMPLE = 20


def _stderr(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def combine(verdicts: list[Any]) -> Any:
    if any(v is False for v in verdicts):
        return False
    if not verdicts or any(v == "unknown" for v in verdicts):
        return "unknown"
    return True


def _lin_models() -> frozenset[str]:
    return frozenset(MODELS)


def _kafka_json(found: list[KafkaAnomaly], cycles: list[dict], allowed_kinds: frozenset[str]) -> list[dict]:
    """A history's Kafka anomalies then its cycles, as ``results.json`` lists them (without the
    history): the kinds the options allow are marked ``allowed``."""
    marked = [attrs.evolve(a, allowed=True) if a.kind in allowed_kinds else a for a in found]
    return [{"kind": d["kind"], "key": d["key"], "evidence": d["evidence"]}
            for d in [a.to_json() for a in marked] + cycles]


def _build_result(hid: str, model: str | None, n_ops: int, has_kafka: bool, structure: str | None,
                  kafka_anoms: tuple[list[KafkaAnomaly], list[dict]] | None, kafka_seconds: float, lin: dict | None,
                  checks: frozenset[str], kafka_empty: bool = False,
                  allowed_kinds: frozenset[str] = frozenset()) -> dict:
    """One history's ``results.json`` entry; ``kafka_anoms``: its Kafka anomalies and cycles,
    ``None`` where the Kafka check did not run."""
    res: dict[str, Any] = {"history": hid, "model": model, "valid": "unknown", "ops": n_ops, "seconds": 0.0,
                           "anomalies": [], "checks": []}
    if structure:
        res["malformed"] = structure
        return res
    verdicts: list[Any] = []
    if kafka_anoms is not None:
        res["checks"].append("kafka")
        found = _kafka_json(*kafka_anoms, allowed_kinds)
        res["anomalies"].extend(found)
        kv: Any = False if any(kafka_check.is_violation(a) for a in found) else True
        if kv is True and kafka_empty:
            # Elle's :empty-transaction-graph (elle.txn/cycles, one of unknown-anomaly-types):
            # nothing to check is inconclusive, never valid (Jepsen's Kafka checker calls it invalid)
            kv = "unknown"
            res["info"] = {"kafka": kafka_check.EMPTY_GRAPH}
        verdicts.append(kv)
        res["seconds"] += kafka_seconds
    if lin is not None:
        res["checks"].append("lin")
        verdicts.append(lin["valid"])
        res["anomalies"].extend(lin["anomalies"])
        res["seconds"] += lin["seconds"]
        if lin.get("info"):
            res["info"] = {**res.get("info", {}), **lin["info"]}
    if not verdicts:
        wanted = "lin" in checks and model is not None
        res["info"] = {"error": (f"unknown model {model!r} (known: {', '.join(sorted(_lin_models()))})"
                                 if wanted else "no check applies: no Kafka ops and no model (use --model)")}
    res["valid"] = combine(verdicts)
    res["seconds"] = round(res["seconds"], 6)
    return res


# ---------------------------------------------------------------------------------------------


def run(opts: AuditOptions, progress: Progress = _stderr) -> AuditReport:
    """Run the audit and write its outputs under ``opts.out``."""
    histories, tables, traces = discover(opts.paths)
    bad_tables = [(t, why) for t in tables if (why := unreadable_parquet(t))]  # both engines skip them
    tables = [t for t in tables if not any(t == b for b, _ in bad_tables)]
    ignored = [str(p) for p in ignored_files(opts.paths)]
    summaries = command_summaries(opts.paths)
    progress(f"audit: {len(histories)} history file(s), {len(tables)} Parquet table(s), {len(traces)} trace(s), "
             f"{len(summaries)} kraft summary file(s), {len(ignored)} other file(s) ignored")
    out = Path(opts.out)
    out.mkdir(parents=True, exist_ok=True)
    clear_documents(*(out / name for name in DOCUMENTS))  # written again when every history is decided
    ops_dir = out / "ops.parquet"
    reading_own = any(Path(t).resolve() == ops_dir.resolve() for t in tables)
    write_ops = (opts.write_ops or opts.store_kafka) and not reading_own
    if opts.no_spark:
        report = _run_local(opts, histories, tables, traces, out if write_ops else None, progress)
    else:
        report = _run_spark(opts, histories, tables, traces, out if write_ops else None, progress)
    report.ignored = ignored
    report.summaries = summaries
    report.malformed[:0] = [{"scope": "file", "path": str(t), "line": None, "reason": why} for t, why in bad_tables]
    mark_lost_lines(report)
    _write_outputs(report, out)
    return report


def mark_lost_lines(report: AuditReport) -> None:
    """A history that lost lines says so (both engines, after the check): its result gets
    ``malformed_lines`` (top level and ``info``, as docs/audit-core.md promises) and
    ``info["scope"]``; a ``true`` verdict then holds for the ops that were read, not for the file."""
    lost = Counter(m["path"] for m in report.malformed if m.get("scope") == "line")
    for r in report.results:
        n = lost.get(r["history"], 0)
        if not n:
            continue
        r["malformed_lines"] = n
        info = r.get("info") if isinstance(r.get("info"), dict) else {}
        r["info"] = {**info, "malformed_lines": n,
                     "scope": f"the {r['ops']} op(s) read; {n} line(s) could not be read (malformed.json)"}


def _metadata_results(steps: dict[str, int], anomalies: dict[str, dict], seconds: float) -> list[dict]:
    out = []
    total = max(1, sum(steps.values()))
    for path, n in sorted(steps.items()):
        an = anomalies.get(path)
        out.append({"history": path, "model": MODEL, "valid": an is None, "ops": n,
                    "seconds": round(seconds * n / total, 6), "anomalies": [an] if an else [],
                    "checks": ["metadata"]})
    return out


def check_rows(hid: str, rows: Any, initial: Any, opts: AuditOptions, kafka: str = "ref",
               secs: dict[str, float] | None = None) -> tuple[dict, dict | None]:
    """One history's result (``results.json`` entry) and its malformed-history entry (or None),
    from its op rows (:class:`ingest.rows.Rows`). Both engines call this, so they report the same:
    ``kafka="ref"`` checks Kafka anomalies with :func:`checks.kafka.check_rows` (in-process),
    ``"kernel"`` with the numpy kernel (:mod:`checks.kafka.kernel`, the Spark workers) over the
    kernel table the cycle search shares; a test holds the
    two to the same anomalies and evidence."""
    secs = secs if secs is not None else {}
    n = len(rows)
    model = rows.model
    bad = None
    sp = structure_problem(rows)
    structure = sp[1] if sp else None
    if sp:  # the file line of the op that does not pair up
        bad = {"scope": "history", "path": hid, "line": rows.line[sp[0]], "reason": f"malformed history: {structure}"}
    fs = set(rows.f)
    has_kafka = any(f in fs for f in KAFKA_FS)
    kafka_found, k_secs, lin = None, 0.0, None
    kafka_empty = True
    if has_kafka:
        kafka_empty = not any(kafka_check.has_data({"type": t, "f": f, "value": v})
                              for t, f, v in zip(rows.type, rows.f, rows.value) if f in KAFKA_FS)
    if not structure and has_kafka and "kafka" in opts.checks:
        t = time.perf_counter()
        cycle_opts = CycleOptions(opts.ww_deps, opts.rw_deps, opts.process_order, opts.realtime)
        if kafka == "kernel":  # in the Spark workers
            try:
                kt = kernel_table(rows)
                kafka_anoms = sorted_anomalies(kafka_kernel.check_table(kt))
                # Elle's cycle search over the same rows, vectorised (checks.elle.check_table)
                cycles = check_table(cycle_table(rows, kt), cycle_opts)
            except KERNEL_LIMITS:  # e.g. an offset beyond 64 bits: the reference decides
                dicts = rows.dicts()
                kafka_anoms = kafka_rules.check_rows(dicts)
                cycles = kafka_check.sort_anomalies(check_rows_ref(dicts, cycle_opts))
        else:
            dicts = rows.dicts()
            kafka_anoms = kafka_check.check_rows(dicts)
            cycles = kafka_check.sort_anomalies(check_rows_ref(dicts, cycle_opts))
        kafka_found = (kafka_anoms, cycles)
        k_secs = time.perf_counter() - t
        secs["kafka"] = secs.get("kafka", 0.0) + k_secs
    if not structure and model in _lin_models() and "lin" in opts.checks:
        t = time.perf_counter()
        init = opts.initial if opts.initial is not None else initial
        r = check_history(rows_to_ops(rows.dicts()), model, initial=init, budget_seconds=opts.budget,
                          nil_reads=opts.nil_reads, history_id=hid)
        lin = {"valid": r.valid, "anomalies": to_jsonable(r.anomalies), "seconds": r.seconds,
               "info": to_jsonable(r.info)}
        secs["lin"] = secs.get("lin", 0.0) + time.perf_counter() - t
    res = _build_result(hid, model, n, has_kafka, structure, kafka_found, k_secs, lin, opts.checks,
                        kafka_empty=kafka_empty, allowed_kinds=opts.allowed_kinds)
    return res, bad


def check_file(path: str, opts: AuditOptions, kafka: str = "ref", ops_dir: str | None = None,
               krows_dir: str | None = None, unit: int = 0, keep_rows: bool = False) -> dict:
    """Read one history file and check it: ``{"path", "trace", "skip", "malformed", "result",
    "history_bad", "ops", "secs"}``. With ``ops_dir`` its op rows are written there as a Parquet
    file (``model=M/part-UNIT-...``), with ``krows_dir`` its Kafka kernel rows (one history per
    file, so the files are clustered by history as ``--store-kafka-rows`` promises)."""
    with no_cyclic_gc():
        return _check_file(path, opts, kafka, ops_dir, krows_dir, unit, keep_rows)


def _check_file(path: str, opts: AuditOptions, kafka: str, ops_dir: str | None, krows_dir: str | None, unit: int,
                keep_rows: bool) -> dict:
    out: dict[str, Any] = {"path": path, "trace": False, "skip": None, "malformed": [], "result": None,
                           "history_bad": None, "ops": 0, "secs": {}}
    cpu = time.process_time()
    t = time.perf_counter()
    try:
        rows, bad, _, initial = read_rows(path, opts.model)
    except HistoryFormatError as exc:
        if exc.reason.endswith("header kind is 'trace'"):  # a trace by its header: the metadata check
            out["trace"] = True
        else:
            out["skip"] = {"scope": "file", "path": str(path), "line": exc.line, "reason": exc.reason}
        return out
    out["secs"]["read"] = time.perf_counter() - t
    out["malformed"] = [{"scope": "line", **Malformed(str(b.path), b.line, b.reason, str(b.text)).to_json()}
                        for b in bad]
    out["ops"] = len(rows)
    if keep_rows:
        out["rows"] = rows.arrow()
    if ops_dir is not None or krows_dir is not None:
        t = time.perf_counter()
        _write_unit_tables(rows, ops_dir, krows_dir, unit, "kafka" in opts.checks)
        out["secs"]["write"] = time.perf_counter() - t
    out["result"], out["history_bad"] = check_rows(rows.history, rows, initial, opts, kafka, out["secs"])
    out["secs"]["cpu"] = time.process_time() - cpu  # this process's CPU time for the whole file
    return out


def _write_unit_tables(rows: Any, ops_dir: str | None, krows_dir: str | None, unit: int, kafka: bool) -> None:
    name = f"part-{unit:05d}-{uuid.uuid4().hex[:12]}.parquet"
    if ops_dir is not None:
        part = Path(ops_dir) / f"model={rows.model if rows.model is not None else '__HIVE_DEFAULT_PARTITION__'}"
        part.mkdir(parents=True, exist_ok=True)
        pq.write_table(rows.arrow().drop_columns(["model"]), part / name)
    if krows_dir is not None and kafka and any(f in KAFKA_FS for f in set(rows.f)):
        kt = kernel_table(rows)
        if kt.num_rows:
            Path(krows_dir).mkdir(parents=True, exist_ok=True)
            pq.write_table(kt, Path(krows_dir) / name)


def _run_local(opts: AuditOptions, histories: list[Path], tables: list[Path], traces: list[Path],
               ops_out: Path | None, progress: Progress) -> AuditReport:
    stage: dict[str, float] = defaultdict(float)
    malformed: list[dict] = []
    results: list[dict] = []
    anomalies: list[dict] = []
    ops_total = 0
    ops_tables: list[Any] = []
    t0 = time.perf_counter()
    for i, path in enumerate(histories, 1):
        r = check_file(str(path), opts, "ref", keep_rows=ops_out is not None)
        if r["trace"]:
            traces = sorted({*traces, Path(path)})
            continue
        if r["skip"]:
            malformed.append(r["skip"])
            continue
        malformed.extend(r["malformed"])
        _collect_result(r, results, anomalies, malformed)
        ops_total += r["ops"]
        for k, v in r["secs"].items():
            stage[k] += v
        if ops_out is not None:
            ops_tables.append(r["rows"])
        if i % 1000 == 0:
            progress(f"check: {i}/{len(histories)} files")
    for t in tables:
        try:
            tbl = pq.read_table(t)
        except Exception as exc:  # footers were fine (unreadable_parquet) but a data page is not
            malformed.append({"scope": "file", "path": str(t), "line": None,
                              "reason": f"unreadable Parquet table: {str(exc).splitlines()[0] if str(exc) else exc!r}"})
            continue
        for rows in read_table(tbl, t, opts.model):
            hid = rows.history
            res, bad = check_rows(hid, rows, None, opts, "ref", stage)
            _collect_result({"result": res, "history_bad": bad}, results, anomalies, malformed)
            ops_total += len(rows)
            if ops_out is not None:
                ops_tables.append(rows.arrow())
    stage["checks"] = time.perf_counter() - t0
    progress(f"checked {len(results)} histories in {stage['checks']:.2f}s")
    if ops_out is not None:
        _write_ops_local(ops_tables, ops_out / "ops.parquet")
    if traces and "metadata" in opts.checks:
        t = time.perf_counter()
        steps, an, bad = check_traces_local([str(p) for p in traces])
        stage["metadata"] = time.perf_counter() - t
        malformed.extend({"scope": "line", "path": p, "line": ln, "reason": why, "text": ""} for p, ln, why in bad)
        mres = _metadata_results(steps, an, stage["metadata"])
        results.extend(mres)
        anomalies.extend({"history": r["history"], **a} for r in mres for a in r["anomalies"])
        ops_total += sum(steps.values())
    return AuditReport(results, anomalies, malformed, dict(stage), ops_total)


def _collect_result(r: dict, results: list[dict], anomalies: list[dict], malformed: list[dict]) -> None:
    if r["history_bad"]:
        malformed.append(r["history_bad"])
    res = r["result"]
    results.append(res)
    anomalies.extend({"history": res["history"], **a} for a in res["anomalies"])


def _write_ops_local(tables: list[Any], path: Path) -> None:
    if path.exists():
        shutil.rmtree(path)
    tables = [t for t in tables if t.num_rows]
    if not tables:
        return
    pq.write_to_dataset(pa.concat_tables(tables), str(path), partition_cols=["model"])


# ---------------------------------------------------------------------------------------------


def _lin_udf(models: frozenset[str], initial_json: str | None, budget: float | None,
             per_history_initial: dict[str, str | None], nil_reads: str = "auto"):
    """The function applied to each history's rows in the executors."""

    def run_one(pdf):
        rows = pdf.astype(object).where(pdf.notna(), None).to_dict("records")
        for r in rows:
            for c in ("time", "line", "index"):
                if r.get(c) is not None:
                    r[c] = int(r[c])
        hid = rows[0]["history"]
        model = next((r["model"] for r in rows if r["model"]), None)
        init_text = initial_json if initial_json is not None else per_history_initial.get(hid)
        init = normalize(json.loads(init_text)) if init_text is not None else None
        t = time.perf_counter()
        try:
            res = check_history(rows_to_ops(rows), model, initial=init, budget_seconds=budget, nil_reads=nil_reads,
                                history_id=hid)
            out = (str(res.valid).lower() if isinstance(res.valid, bool) else str(res.valid), len(rows),
                   res.seconds, json.dumps(to_jsonable(res.anomalies)), json.dumps(to_jsonable(res.info)))
        except Exception as exc:  # noqa: BLE001 - one history's crash must not kill the corpus
            out = ("unknown", len(rows), time.perf_counter() - t, "[]",
                   json.dumps({"error": f"checker raised {type(exc).__name__}: {exc}"}))
        return pd.DataFrame([(hid, *out)], columns=["history", "valid", "ops", "seconds", "anomalies", "info"])

    return run_one


def _run_spark(opts: AuditOptions, histories: list[Path], tables: list[Path], traces: list[Path],
               ops_out: Path | None, progress: Progress) -> AuditReport:
    """On Spark: history files go straight to the checks in the Python workers
    (:func:`_spark_files`), Parquet tables through the op table as DataFrames
    (:func:`_spark_tables`)."""
    stage: dict[str, float] = {}
    t0 = time.perf_counter()
    # history files: the work is in the Python workers (a light JVM), and a SparkContext is all
    # they need; the DataFrame paths (tables, metadata traces) add a SparkSession over it
    light = not tables
    sc = get_context(opts.master, light_jvm=light)
    spark = get_session(opts.master, light_jvm=light) if tables else None
    stage["session"] = time.perf_counter() - t0
    progress(f"spark: {'session' if spark else 'context'} on {sc.master} ({stage['session']:.1f}s)")
    results: list[dict] = []
    anomalies: list[dict] = []
    malformed: list[dict] = []
    ops_total = 0
    kafka_engine: dict[str, Any] = {}
    if ops_out is not None:  # a fresh op table (and kernel rows): the old ones must not mix in
        for name in ("ops.parquet", KAFKA_ROWS):
            shutil.rmtree(ops_out / name, ignore_errors=True)
    if tables:
        rep = _spark_tables(opts, spark, [], tables, ops_out, progress, stage)
        results, anomalies, malformed, ops_total, kafka_engine, extra = rep
        traces = sorted(set(traces) | set(extra))
    if histories:
        res2, an2, mal2, n2, info2, extra = _spark_files(opts, sc, histories, ops_out, progress, stage)
        results += res2
        anomalies += an2
        malformed += mal2
        ops_total += n2
        kafka_engine = info2 if not kafka_engine else {"files": info2, "tables": kafka_engine}
        traces = sorted(set(traces) | set(extra))
    if ops_out is not None and opts.store_kafka and (ops_out / KAFKA_ROWS).is_dir():
        manifest = {"v": 1, "ops_table": "ops.parquet", "ops_files": _parquet_listing(ops_out / "ops.parquet")}
        write_document(ops_out / KAFKA_ROWS_MANIFEST, json.dumps(manifest, indent=1) + "\n")
    if traces and "metadata" in opts.checks:
        t = time.perf_counter()
        steps, an, bad_t = check_traces_spark(get_session(opts.master, light_jvm=light), [str(p) for p in traces])
        stage["metadata"] = time.perf_counter() - t
        malformed.extend({"scope": "line", "path": p, "line": ln, "reason": why, "text": ""} for p, ln, why in bad_t)
        mres = _metadata_results(steps, an, stage["metadata"])
        results.extend(mres)
        anomalies.extend({"history": r["history"], **a} for r in mres for a in r["anomalies"])
        ops_total += sum(steps.values())
        progress(f"metadata: {len(steps)} traces ({stage['metadata']:.1f}s)")
    return AuditReport(results, anomalies, malformed, stage, ops_total, kafka_engine=kafka_engine,
                       engine=f"spark {sc.master}")


def _units(files: list[Path], n: int) -> list[tuple[int, list[str]]]:
    """Files in ``n`` groups of about equal size (largest first onto the lightest group)."""
    sized = sorted(((os.path.getsize(f) if os.path.exists(f) else 0, str(f)) for f in files), reverse=True)
    heap = [(0, u) for u in range(max(1, min(n, len(files))))]
    groups: dict[int, list[str]] = defaultdict(list)
    for size, f in sized:
        load, u = heapq.heappop(heap)
        groups[u].append(f)
        heapq.heappush(heap, (load + size + 1, u))
    return [(u, sorted(fs)) for u, fs in sorted(groups.items())]


def _spark_files(opts: AuditOptions, sc: Any, files: list[Path], ops_out: Path | None, progress: Progress,
                 stage: dict[str, float]) -> tuple[list[dict], list[dict], list[dict], int, dict, list[Path]]:
    """Every history file read and checked inside one Spark task (:func:`check_file`: the fast
    row readers of :mod:`ingest.rows`, the Kafka kernel, the cycle search, linearizability): no op row
    passes through the JVM and no intermediate table is written and read back. The op table
    (``ops.parquet``) and, with ``--store-kafka-rows``, the kernel rows are written by the tasks
    themselves, one Parquet file per history file. Files are grouped into about three tasks per
    core, balanced by size."""
    t = time.perf_counter()
    units = _units(files, sc.defaultParallelism * 3)
    ops_dir = str(ops_out / "ops.parquet") if ops_out is not None else None
    krows_dir = str(ops_out / KAFKA_ROWS) if ops_out is not None and opts.store_kafka else None

    def run_unit(it):
        for u, paths in it:
            for path in paths:
                yield check_file(path, opts, "kernel", ops_dir, krows_dir, u)

    outs = sorted(sc.parallelize(units, len(units)).mapPartitions(run_unit).collect(), key=lambda r: r["path"])
    results: list[dict] = []
    anomalies: list[dict] = []
    malformed: list[dict] = []
    traces: list[Path] = []
    secs: dict[str, float] = defaultdict(float)
    ops_total = 0
    for r in outs:
        if r["trace"]:
            traces.append(Path(r["path"]))
            continue
        if r["skip"]:
            malformed.append(r["skip"])
            continue
        malformed.extend(r["malformed"])
        _collect_result(r, results, anomalies, malformed)
        ops_total += r["ops"]
        for k, v in r["secs"].items():
            secs[k] += v
    stage["files"] = time.perf_counter() - t
    kafka_h = sum(1 for r in results if "kafka" in r.get("checks", []))
    info = {"engine": "arrow", "path": "files", "files": len(files), "tasks": len(units), "histories": kafka_h,
            "clustered": kafka_h, "shuffled": 0,
            "task_seconds": {k: round(v, 3) for k, v in sorted(secs.items())}}
    progress(f"files: {len(results)} histories, {ops_total} ops, {len(malformed)} malformed, "
             f"read and checked in {len(units)} tasks ({stage['files']:.1f}s)")
    return results, anomalies, malformed, ops_total, info, traces


def _spark_tables(opts: AuditOptions, spark: Any, histories: list[Path], tables: list[Path], ops_out: Path | None,
                  progress: Progress, stage: dict[str, float]
                  ) -> tuple[list[dict], list[dict], list[dict], int, dict, list[Path]]:
    """The op table as a DataFrame (Spark's NDJSON reader, the EDN reader in the executors,
    Parquet tables), then the checks as Spark jobs."""
    from pyspark.sql import functions as F  # optional: pyspark

    t = time.perf_counter()
    ops, bad, meta, extra_traces, skipped = ingest.load(spark, histories, tables, opts.model)
    ops = ops.localCheckpoint()  # materialised once; later plans start from this leaf
    malformed: list[dict] = [{"scope": "file", **m.to_json()} for m in skipped]
    malformed.extend({"scope": "line", **m.to_json()} for m in ingest.malformed_rows(bad))
    summary = (ops.groupBy("history").agg(
        F.count("*").alias("n"), F.max("model").alias("model"),
        F.max(F.col("f").isin(*KAFKA_FS).cast("int")).alias("kafka"),
        F.max(kafka_rules.has_data_column(F).cast("int")).alias("kafka_data")).collect())
    ops_total = sum(r["n"] for r in summary)
    malformed = ingest.unreadable_files(malformed, meta, {r["history"] for r in summary})
    stage["ingest"] = time.perf_counter() - t
    progress(f"ingest: {len(summary)} histories, {ops_total} ops, {len(malformed)} malformed "
             f"({stage['ingest']:.1f}s)")
    if ops_out is not None:
        t = time.perf_counter()
        target = ops_out / "ops.parquet"
        ops.write.mode("overwrite").partitionBy("model").parquet(str(target))
        stage["write_ops"] = time.perf_counter() - t
        if opts.store_kafka:
            t = time.perf_counter()
            _store_kafka_rows(spark, ops, ops_out)
            stage["write_kafka_rows"] = time.perf_counter() - t
            progress(f"stored Kafka kernel rows in {ops_out / KAFKA_ROWS} ({stage['write_kafka_rows']:.1f}s)")

    t = time.perf_counter()
    probs = {r["history"]: (r["line"], r["reason"]) for r in ingest.pairing_problems(ops).collect()}
    structure = {h: why for h, (_, why) in probs.items()}
    for hid, (line, why) in sorted(probs.items()):
        malformed.append({"scope": "history", "path": hid, "line": line, "reason": f"malformed history: {why}"})
    stage["pairing"] = time.perf_counter() - t
    good = ops
    if structure:
        bad_h = spark.createDataFrame([(h,) for h in structure], "history string")
        good = ops.join(F.broadcast(bad_h), "history", "left_anti")

    kafka_by_h: dict[str, list[KafkaAnomaly]] = defaultdict(list)
    cycles_by_h: dict[str, list[dict]] = defaultdict(list)
    kafka_hist = {r["history"] for r in summary if r["kafka"] and r["history"] not in structure}
    kafka_secs = 0.0
    kafka_engine: dict[str, Any] = {}
    if kafka_hist and "kafka" in opts.checks:
        t = time.perf_counter()
        kops = good.where(F.col("history").isin(list(kafka_hist))) if len(kafka_hist) < len(summary) else good
        stored = _stored_kafka_rows(tables, histories)
        if stored is not None:
            # kernel rows stored by an earlier audit of exactly this ops.parquet: one task per
            # file, no shuffle; only the histories this run checks are kept
            rows, kafka_engine = kafka_spark.collect_stored(spark, str(stored))
            rows = [a for a in rows if a.history in kafka_hist]
            kafka_engine = {**kafka_engine, "stored": str(stored)}
        else:
            # per partition, no shuffle where partitions hold whole histories (verified; the
            # histories that do not are re-checked after a shuffle)
            rows, kafka_engine = kafka_spark.collect(kops)
        for a in sorted_anomalies(rows):
            kafka_by_h[a.history].append(a)
        # Elle-style cycles (jepsen.tests.kafka/cycles!): edges as a DataFrame, components per history
        tc = time.perf_counter()
        cyc = check_spark(kafka_spark_rows.micro_ops(kops),
                          CycleOptions(opts.ww_deps, opts.rw_deps, opts.process_order, opts.realtime),
                          kops)
        for a in kafka_check.sort_anomalies(cyc):
            cycles_by_h[a["history"]].append({"kind": a["kind"], "key": a["key"], "evidence": a["evidence"]})
        stage["cycles"] = time.perf_counter() - tc
        kafka_secs = time.perf_counter() - t
        stage["kafka"] = kafka_secs
        how = (f", {kafka_engine['clustered']} checked in place, {kafka_engine['shuffled']} after a shuffle"
               if "clustered" in kafka_engine else "")
        progress(f"kafka ({kafka_engine['engine']}): {len(kafka_hist)} histories, {len(rows)} anomalies{how} "
                 f"({kafka_secs:.1f}s)")

    lin_by_h: dict[str, dict] = {}
    lin_models = _lin_models()
    lin_hist = [r["history"] for r in summary if r["model"] in lin_models and r["history"] not in structure]
    if lin_hist and "lin" in opts.checks:
        t = time.perf_counter()
        init_json = json.dumps(to_jsonable(opts.initial)) if opts.initial is not None else None
        per_init = {h: meta.get(h, (None, None))[1] for h in lin_hist}
        lops = good.where(F.col("model").isin(list(lin_models)))
        n_parts = max(2, min(len(lin_hist), spark.sparkContext.defaultParallelism * 4))
        lin_rows = (lops.repartition(n_parts, "history").groupBy("history")
                    .applyInPandas(_lin_udf(lin_models, init_json, opts.budget, per_init, opts.nil_reads),
                                   "history string, valid string, ops long, seconds double, anomalies string, info string")
                    .collect())
        for r in lin_rows:
            v = {"true": True, "false": False}.get(r["valid"], "unknown")
            lin_by_h[r["history"]] = {"valid": v, "anomalies": json.loads(r["anomalies"]), "seconds": r["seconds"],
                                      "info": json.loads(r["info"])}
        stage["lin"] = time.perf_counter() - t
        progress(f"lin: {len(lin_rows)} histories ({stage['lin']:.1f}s)")

    results: list[dict] = []
    anomalies: list[dict] = []
    kafka_ops = sum(r["n"] for r in summary if r["history"] in kafka_hist) or 1
    for r in sorted(summary, key=lambda r: r["history"]):
        hid = r["history"]
        ka = ((kafka_by_h.get(hid, []), cycles_by_h.get(hid, []))
              if hid in kafka_hist and "kafka" in opts.checks else None)
        share = kafka_secs * r["n"] / kafka_ops if ka is not None else 0.0
        res = _build_result(hid, r["model"], r["n"], bool(r["kafka"]), structure.get(hid), ka, share,
                            lin_by_h.get(hid), opts.checks, kafka_empty=not r["kafka_data"],
                            allowed_kinds=opts.allowed_kinds)
        results.append(res)
        anomalies.extend({"history": hid, **a} for a in res["anomalies"])

    return results, anomalies, malformed, ops_total, kafka_engine, extra_traces


# ---------------------------------------------------------------------------------------------
# Kafka kernel rows stored beside ops.parquet (--store-kafka-rows)

KAFKA_ROWS = "kafka_rows.parquet"
KAFKA_ROWS_MANIFEST = "kafka_rows.json"


def _parquet_listing(table: Path) -> list[list]:
    """The data files of a Parquet table as ``[relative path, size]``, sorted."""
    table = Path(table)
    files = [Path(f) for f in kafka_spark.stored_files(str(table))]
    return [[str(f.relative_to(table)) if f != table else f.name, f.stat().st_size] for f in files]


def _store_kafka_rows(spark: Any, ops: Any, out: Path) -> None:
    parts = max(2, spark.sparkContext.defaultParallelism * 2)
    kafka_spark.store(ops, str(out / KAFKA_ROWS), parts)
    manifest = {"v": 1, "ops_table": "ops.parquet", "ops_files": _parquet_listing(out / "ops.parquet")}
    write_document(out / KAFKA_ROWS_MANIFEST, json.dumps(manifest, indent=1) + "\n")


def _stored_kafka_rows(tables: list[Path], histories: list[Path]) -> Path | None:
    """The stored kernel rows to use: only when the run reads exactly one table, it is an
    audit's ``ops.parquet``, and the manifest beside it names exactly its current files (a table
    rewritten since is not trusted: the rows are then re-derived from the op table)."""
    if len(tables) != 1 or histories:
        return None
    table = Path(tables[0])
    rows, manifest = table.parent / KAFKA_ROWS, table.parent / KAFKA_ROWS_MANIFEST
    if table.name != "ops.parquet" or not rows.is_dir() or not manifest.is_file():
        return None
    try:
        doc = json.loads(manifest.read_text())
    except (OSError, ValueError):
        return None
    return rows if doc.get("ops_files") == _parquet_listing(table) else None


# ---------------------------------------------------------------------------------------------


DOCUMENTS = ("results.json", "malformed.json", "summary.json")  # summary.json, with the header, last


def _write_outputs(report: AuditReport, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    write_document(out / "results.json", json.dumps(report.results, indent=1, default=str) + "\n")
    write_document(out / "malformed.json", json.dumps(report.malformed, indent=1, default=str) + "\n")
    res_tbl = pa.Table.from_pylist(
        [{"history": r["history"], "model": r["model"], "valid": str(r["valid"]).lower(), "ops": r["ops"],
          "seconds": float(r["seconds"]), "anomalies": json.dumps(r["anomalies"], default=str),
          "malformed": r.get("malformed")} for r in report.results],
        schema=pa.schema([("history", pa.string()), ("model", pa.string()), ("valid", pa.string()),
                          ("ops", pa.int64()), ("seconds", pa.float64()), ("anomalies", pa.string()),
                          ("malformed", pa.string())]))
    pq.write_table(res_tbl, out / "results.parquet")
    an_tbl = pa.Table.from_pylist(
        [{"history": a["history"], "kind": a["kind"], "key": None if a["key"] is None else str(a["key"]),
          "evidence": json.dumps(a["evidence"], default=str)} for a in report.anomalies],
        schema=pa.schema([("history", pa.string()), ("kind", pa.string()), ("key", pa.string()),
                          ("evidence", pa.string())]))
    pq.write_table(an_tbl, out / "anomalies.parquet")
    write_document(out / "summary.json", json.dumps(report.document(), indent=1, default=str) + "\n")
