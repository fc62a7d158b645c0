"""The audit's report: every history's result and the command's verdict.

:class:`AuditReport` is what an engine collected (:class:`engine.collected.Collected`) plus the
files that were not histories. Its verdict follows the project's exit codes (kraft/outcome.py):
a violation if any history is invalid; inconclusive if any is ``unknown`` (budget reached, check
not run, malformed) or there was none; clean otherwise.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import attrs

from kraft.outcome import Verdict, header, plural
from spark_validation.checks import kafka as kafka_check
from spark_validation.checks.anomaly import Anomaly
from spark_validation.ingest.chunks import ChunkPaths
from spark_validation.engine.collected import BothPaths, Collected, FilesPath, KafkaPaths
from spark_validation.engine.result import HistoryResult
from spark_validation.ingest.records import Malformed

IGNORED_SAMPLE = 20


@attrs.define
class AuditReport:
    results: list[HistoryResult]
    anomalies: list[tuple[str, Anomaly]]  # (history, anomaly) of every result
    malformed: list[Malformed]
    stage_seconds: dict[str, float]
    ops_total: int = 0
    ignored: list[str] = attrs.field(factory=list)  # files that are not histories, tables or traces
    kafka_engine: KafkaPaths | None = None  # which engine/path the Kafka check took
    summaries: list[tuple[str, str]] = attrs.field(factory=list)  # (path, command): kraft summary.json files
    engine: str = "in-process"  # where the checks ran: "in-process" or the Spark master URL

    @classmethod
    def of(cls, got: Collected, ignored: list[str], summaries: list[tuple[str, str]]) -> "AuditReport":
        """The report of what an engine collected."""
        return cls(got.results, got.anomalies, got.malformed, got.stage_seconds, got.ops_total, ignored,
                   got.kafka_engine, summaries, got.engine)

    @property
    def violations(self) -> Counter:
        return Counter(a.kind for _, a in self.anomalies if kafka_check.is_violation(a))

    def verdict(self) -> tuple[Verdict, str]:
        """The command's verdict and its summary sentence: a violation if any history is invalid;
        inconclusive if any history is ``unknown`` (budget reached, check not run, malformed) or
        there was no history at all (nothing checked); clean otherwise."""
        n = len(self.results)
        bad = sum(r.valid is False for r in self.results)
        unknown = sum(r.valid == "unknown" for r in self.results)
        ops = plural(self.ops_total, "op")
        if bad:
            kinds = ", ".join(sorted(self.violations)) or "anomalies"
            return Verdict.VIOLATION, f"{plural(bad, 'history', 'histories')} of {n} invalid ({kinds}; {ops})"
        if n == 0:
            return Verdict.INCONCLUSIVE, "no histories found: nothing was checked"
        if unknown:
            return Verdict.INCONCLUSIVE, (f"{plural(unknown, 'history', 'histories')} of {n} undecided (unknown), "
                                          f"{n - unknown} valid ({ops})")
        partial = sum(1 for r in self.results if r.malformed_lines)
        lost = (f"; {plural(partial, 'history', 'histories')} valid only for the ops read "
                f"({plural(sum(r.malformed_lines for r in self.results), 'line')} unreadable)"
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
        valid = Counter(str(r.valid).lower() for r in self.results)
        return {
            "histories": len(self.results),
            "ops": self.ops_total,
            "valid": valid.get("true", 0),
            "invalid": valid.get("false", 0),
            "unknown": valid.get("unknown", 0),
            "violations": dict(sorted(self.violations.items())),
            "informational": dict(Counter(a.kind for _, a in self.anomalies if not kafka_check.is_violation(a))),
            "malformed_lines": sum(1 for m in self.malformed if m.scope == "line"),
            # valid histories that lost lines: valid for the ops read only (mark_lost_lines)
            "valid_with_lost_lines": sum(1 for r in self.results if r.valid is True and r.malformed_lines),
            "malformed_histories": sum(1 for m in self.malformed if m.scope == "history"),
            "skipped_files": sum(1 for m in self.malformed if m.scope == "file"),
            "ignored_files": len(self.ignored),
            # not histories: summary.json files of kraft commands (kraft simulate writes one per run)
            "command_summaries": dict(sorted(Counter(c for _, c in self.summaries).items())),
            "ignored": self.ignored[:IGNORED_SAMPLE],
            "engine": self.engine,
            "stage_seconds": {k: round(v, 3) for k, v in self.stage_seconds.items()},
            **({"kafka_engine": paths_json(self.kafka_engine)} if self.kafka_engine is not None else {}),
        }


def paths_json(p: KafkaPaths) -> dict[str, Any]:
    """``summary.json``'s ``kafka_engine``: which path the Kafka check took on Spark."""
    if isinstance(p, BothPaths):
        return {"files": paths_json(p.files), "tables": paths_json(p.tables)}
    if isinstance(p, FilesPath):
        return {"engine": p.engine, "path": p.path, "files": p.files, "tasks": p.tasks, "histories": p.histories,
                "clustered": p.clustered, "shuffled": p.shuffled, "task_seconds": p.task_seconds}
    assert isinstance(p, ChunkPaths)
    return attrs.asdict(p, filter=lambda a, v: a.name != "stored" or v is not None)




def mark_lost_lines(report: AuditReport) -> None:
    """A history that lost lines says so (both engines, after the check): its result gets
    ``malformed_lines`` (top level and ``info``) and ``info.scope``; a ``true`` verdict then
    holds for the ops that were read, not for the file."""
    lost = Counter(m.path for m in report.malformed if m.scope == "line")
    for r in report.results:
        n = lost.get(r.history, 0)
        if not n:
            continue
        r.mark_lost_lines(n)
