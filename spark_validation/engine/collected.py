"""What an engine hands the report: every history's ``results.json`` entry, the anomalies (one
each, with its history, typed), the malformed entries, the op count and the stage times."""

from __future__ import annotations

from collections import defaultdict
from typing import Callable, Union

import attrs

from spark_validation.checks.agreement import TraceChecks
from spark_validation.checks.anomaly import Anomaly
from spark_validation.ingest.chunks import ChunkPaths
from spark_validation.engine.result import FileOutcome, HistoryResult, metadata_results
from spark_validation.ingest.records import Malformed

Progress = Callable[[str], None]
"""Where an engine reports how far it got (one line per stage)."""


@attrs.frozen
class FilesPath:
    """The Kafka check of history files on Spark: each file read and checked by the kernel inside
    one task (``tasks`` of them), every history whole (all ``clustered``, none ``shuffled``),
    and the seconds the tasks spent in each stage."""

    files: int
    tasks: int
    histories: int
    task_seconds: dict[str, float]
    engine: str = "arrow"
    path: str = "files"

    @property
    def clustered(self) -> int:
        return self.histories

    @property
    def shuffled(self) -> int:
        return 0


@attrs.frozen
class BothPaths:
    """The Kafka check's paths when a run read history files and Parquet op tables."""

    files: FilesPath
    tables: ChunkPaths


KafkaPaths = Union[FilesPath, ChunkPaths, BothPaths]
"""Which path the Kafka check took on Spark."""


@attrs.define
class Collected:
    results: list[HistoryResult] = attrs.field(factory=list)
    anomalies: list[tuple[str, Anomaly]] = attrs.field(factory=list)  # (history, anomaly)
    malformed: list[Malformed] = attrs.field(factory=list)
    stage_seconds: dict[str, float] = attrs.field(factory=dict)
    ops_total: int = 0
    kafka_engine: KafkaPaths | None = None  # which path the Kafka check took (Spark)
    engine: str = "in-process"  # where the checks ran: "in-process" or "spark <master URL>"

    def add_result(self, res: HistoryResult, history_bad: Malformed | None) -> None:
        """One history's entry, and its malformed-history entry if it has one."""
        if history_bad:
            self.malformed.append(history_bad)
        self.results.append(res)
        self.anomalies.extend((res.history, a) for a in res.anomalies)

    def add_file(self, r: FileOutcome, secs: defaultdict[str, float]) -> None:
        """A history file :func:`engine.history.check_file` read and checked (not a trace, not
        skipped): its unreadable lines, its result; its stage times are added to ``secs``."""
        assert r.result is not None, r.path
        self.malformed.extend(r.malformed)
        self.add_result(r.result, r.history_bad)
        self.ops_total += r.ops
        for k, v in r.secs.items():
            secs[k] += v

    def add_metadata(self, found: TraceChecks, seconds: float) -> None:
        """The metadata check's traces: their unreadable lines and one result per trace."""
        self.malformed.extend(found.malformed)
        mres = metadata_results(found, seconds)
        self.results.extend(mres)
        self.anomalies.extend((r.history, a) for r in mres for a in r.anomalies)
        self.ops_total += sum(found.steps.values())
