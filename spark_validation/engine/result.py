"""One history's result: its ``results.json`` entry from what each check found.

The entry is ``history, model, valid, ops, seconds, anomalies, checks`` (+ ``malformed`` /
``info`` when relevant). A history's verdict combines its checks' verdicts as Jepsen's
``checker/compose`` merges ``:valid?``: any ``false`` wins, then ``unknown``, then ``true``.
The entry is a :class:`HistoryResult`, which the engines hand to the report and the report
writes as JSON (report/outputs.py); a history file read and checked is a :class:`FileOutcome`
(what a Spark task sends back to the driver). Its anomalies stay typed
(:class:`spark_validation.checks.anomaly.Anomaly`: the Kafka anomalies, Elle's cycles, the
linearizability anomalies, the metadata divergences) until then.
"""

from __future__ import annotations

from typing import Any

import attrs

from spark_validation.checks import kafka as kafka_check
from spark_validation.checks.agreement import MODEL, TraceChecks
from spark_validation.checks.anomaly import Anomaly
from spark_validation.checks.elle.explain import CycleAnomaly
from spark_validation.checks.kafka.anomaly import KafkaAnomaly
from spark_validation.checks.linearizable import LinInfo, LinResult
from spark_validation.checks.linearizable.models import MODELS
from spark_validation.ingest.records import Malformed


Valid = Any
"""A verdict as Jepsen's ``:valid?`` has it: ``True``, ``False`` or ``"unknown"``."""


@attrs.frozen
class HistoryInfo:
    """A history's details (its ``info`` entry): why the Kafka check has no verdict (``kafka``),
    the linearizability check's details (``lin``), why no check ran (``error``) and how many of
    its lines could not be read (``malformed_lines``, ``scope``: what the verdict covers)."""

    kafka: str | None = None
    lin: LinInfo | None = None
    error: str | None = None
    malformed_lines: int | None = None
    scope: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The details as JSON: ``kafka``, then the linearizability check's keys, then ``error``;
        ``malformed_lines`` and ``scope`` replace the check's own values where it has them."""
        out: dict[str, Any] = {}
        if self.kafka is not None:
            out["kafka"] = self.kafka
        if self.lin is not None:
            out.update(self.lin.to_json())
        for k in ("error", "malformed_lines", "scope"):
            if getattr(self, k) is not None:
                out[k] = getattr(self, k)
        return out


@attrs.define
class HistoryResult:
    """One history's ``results.json`` entry: its verdict, the checks that ran, what they found
    (``anomalies``, typed; Kafka's first, then Elle's cycles, then the linearizability
    anomalies), and, where relevant, why it was not
    checked (``malformed``: the history's ops do not pair up), details (``info``) and how many
    of its lines could not be read (``malformed_lines``: the verdict holds for the ops read)."""

    history: str
    model: str | None
    valid: Valid
    ops: int
    seconds: float = 0.0
    anomalies: list[Anomaly] = attrs.field(factory=list)
    checks: list[str] = attrs.field(factory=list)
    malformed: str | None = None
    info: HistoryInfo | None = None
    malformed_lines: int = 0

    def mark_lost_lines(self, n: int) -> None:
        """``n`` of the history's lines could not be read: its verdict covers the ops read."""
        self.malformed_lines = n
        scope = f"the {self.ops} op(s) read; {n} line(s) could not be read (malformed.json)"
        self.info = attrs.evolve(self.info or HistoryInfo(), malformed_lines=n, scope=scope)


@attrs.frozen
class FileOutcome:
    """One history file read and checked (:func:`engine.history.check_file`): a trace by its
    header (``trace``: the metadata check takes it), a file that is not a history (``skip``), or
    a history: its unreadable lines (``malformed``), its entry (``result``), its
    malformed-history entry when its ops do not pair up (``history_bad``), its op count, the
    seconds of each stage (``secs``) and, when asked for, its op rows as an Arrow table."""

    path: str
    trace: bool = False
    skip: Malformed | None = None
    malformed: tuple[Malformed, ...] = ()
    result: HistoryResult | None = None
    history_bad: Malformed | None = None
    ops: int = 0
    secs: dict[str, float] = attrs.field(factory=dict)
    rows: Any = None  # a pyarrow.Table with keep_rows, else None


def combine(verdicts: list[Any]) -> Any:
    """The verdicts of a history's checks combined: any ``False``, then ``unknown`` (or no
    verdict at all), then ``True``."""
    if any(v is False for v in verdicts):
        return False
    if not verdicts or any(v == "unknown" for v in verdicts):
        return "unknown"
    return True


def lin_models() -> frozenset[str]:
    """The models the linearizability check knows."""
    return frozenset(MODELS)


def kafka_found(found: list[KafkaAnomaly], cycles: list[CycleAnomaly],
                allowed_kinds: frozenset[str]) -> list[Anomaly]:
    """A history's Kafka anomalies then its cycles: the kinds the options allow are marked
    ``allowed``."""
    marked: list[Anomaly] = [attrs.evolve(a, allowed=True) if a.kind in allowed_kinds else a for a in found]
    return marked + list(cycles)


def build_result(hid: str, model: str | None, n_ops: int, has_kafka: bool, structure: str | None,
                 kafka_anoms: tuple[list[KafkaAnomaly], list[CycleAnomaly]] | None, kafka_seconds: float,
                 lin: LinResult | None,
                 checks: frozenset[str], kafka_empty: bool = False,
                 allowed_kinds: frozenset[str] = frozenset()) -> HistoryResult:
    """One history's entry; ``kafka_anoms``: its Kafka anomalies and cycles, ``None`` where the
    Kafka check did not run; ``lin``: the linearizability check's result, ``None`` where it did
    not run."""
    res = HistoryResult(hid, model, "unknown", n_ops)
    if structure:
        res.malformed = structure
        return res
    verdicts: list[Valid] = []
    if kafka_anoms is not None:
        res.checks.append("kafka")
        found = kafka_found(*kafka_anoms, allowed_kinds)
        res.anomalies.extend(found)
        kv: Valid = False if any(kafka_check.is_violation(a) for a in found) else True
        if kv is True and kafka_empty:
            # Elle's :empty-transaction-graph (elle.txn/cycles, one of unknown-anomaly-types):
            # nothing to check is inconclusive, never valid (Jepsen's Kafka checker calls it invalid)
            kv = "unknown"
            res.info = HistoryInfo(kafka=kafka_check.EMPTY_GRAPH)
        verdicts.append(kv)
        res.seconds += kafka_seconds
    if lin is not None:
        res.checks.append("lin")
        verdicts.append(lin.valid)
        res.anomalies.extend(lin.anomalies)
        res.seconds += lin.seconds
        if lin.info != LinInfo():
            res.info = attrs.evolve(res.info or HistoryInfo(), lin=lin.info)
    if not verdicts:
        wanted = "lin" in checks and model is not None
        res.info = HistoryInfo(error=(f"unknown model {model!r} (known: {', '.join(sorted(lin_models()))})"
                                      if wanted else "no check applies: no Kafka ops and no model (use --model)"))
    res.valid = combine(verdicts)
    res.seconds = round(res.seconds, 6)
    return res


def metadata_results(found: TraceChecks, seconds: float) -> list[HistoryResult]:
    """The entries of the metadata check: one per trace, its steps as ops and its share of the
    check's time."""
    out = []
    total = max(1, sum(found.steps.values()))
    for path, n in sorted(found.steps.items()):
        div = found.divergences.get(path)
        anomalies: list[Anomaly] = [div] if div else []
        out.append(HistoryResult(path, MODEL, div is None, n, round(seconds * n / total, 6), anomalies, ["metadata"]))
    return out
