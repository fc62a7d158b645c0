"""What ``kraft audit`` can be asked to do: the checks and the options of
one run. The command line reads this module alone; the audit itself (:mod:`spark_validation.audit`)
loads the readers and checkers when a run starts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import attrs

CHECKS = ("lin", "kafka", "metadata")
KAFKA_ENGINES = ("arrow",)
"""The Spark Kafka checks ``--engine`` accepts: the kernel per partition (the only one)."""
REMOVED_ENGINES = {"dataframe": "the DataFrame Kafka check was removed; the arrow engine checks the same "
                                "inputs with the same verdicts"}


@attrs.frozen
class AuditOptions:
    paths: tuple[str, ...]
    model: str | None = None
    initial: Any = None  # a normalised Python value (from --initial EDN)
    master: str | None = None
    out: Path = Path("results/audit")
    budget: float | None = None
    checks: frozenset[str] = frozenset(CHECKS)
    no_spark: bool = False
    write_ops: bool = False  # also write OUT/ops.parquet (--write-ops; implied by store_kafka)
    store_kafka: bool = False  # also write OUT/kafka_rows.parquet (+ .json) for later audits of OUT/ops.parquet
    nil_reads: str = "auto"  # register models: "knossos" (nil read = unknown), "strict", auto = knossos for .edn
    ww_deps: bool = False  # Kafka cycles: ww edges from the version order (Jepsen's :ww-deps)
    rw_deps: bool = False  # Kafka cycles: rw (anti-dependency) edges, for G-single-item / G2-item / ...
    process_order: bool = False  # Kafka cycles: Elle's process-order edges (G0-process, G1c-process)
    realtime: bool = True  # Kafka cycles: Elle's realtime edges, on as in Jepsen's Kafka checker (-realtime variants)
    allow_unseen: bool = False  # acknowledged sends never polled are informational (Jepsen: invalid)

    @property
    def allowed_kinds(self) -> frozenset[str]:
        """Anomaly kinds reported with ``evidence.allowed`` (not violations) under these options."""
        return frozenset({"unseen"}) if self.allow_unseen else frozenset()
