"""What every check's anomaly is: a typed value with a ``kind``, a ``key`` (None where the
anomaly spans keys), its ``evidence``, whether the audit's options ``allowed`` it (reported, not
a violation) and ``to_json``, the object ``results.json`` lists.

The Kafka anomalies (:class:`.kafka.anomaly.KafkaAnomaly`), Elle's cycles
(:class:`.elle.explain.CycleAnomaly`), the linearizability anomalies
(:class:`.linearizable.evidence.LinAnomaly`) and the metadata divergences
(:class:`.agreement.Divergence`) all have this shape; the engines carry them typed and the report
writes their JSON.
"""

from __future__ import annotations

import json
from typing import Any, ClassVar, Iterable, Protocol, TypeVar


class Anomaly(Protocol):
    """One anomaly of one history (the protocol every check's anomaly class follows)."""

    @property
    def kind(self) -> str: ...

    @property
    def key(self) -> Any: ...

    @property
    def evidence(self) -> Any: ...

    @property
    def allowed(self) -> bool: ...

    def to_json(self) -> dict[str, Any]: ...


class HistoryAnomaly(Anomaly, Protocol):
    """An anomaly that names its history (the Kafka anomalies and Elle's cycles, which the
    checks find for many histories at once)."""

    @property
    def history(self) -> str: ...


class OneKind:
    """The constant part of an anomaly class whose anomalies all have one ``KIND`` and are never
    allowed (the linearizability anomalies, the metadata divergences): ``kind``, ``allowed`` and
    ``to_json`` from the ``key`` and ``evidence`` the class holds (evidence a JSON object, or a
    typed value with its own ``to_json``)."""

    __slots__ = ()
    KIND: ClassVar[str]
    key: Any
    evidence: Any

    @property
    def kind(self) -> str:
        return self.KIND

    @property
    def allowed(self) -> bool:
        return False

    def to_json(self) -> dict[str, Any]:
        ev = self.evidence
        return {"kind": self.KIND, "key": self.key, "evidence": ev if isinstance(ev, dict) else ev.to_json()}


A = TypeVar("A", bound=HistoryAnomaly)

ENTRY_FIELDS = ("kind", "key", "evidence")
"""The fields of an anomaly in a ``results.json`` entry (the entry names the history)."""


def entry_json(a: Anomaly) -> dict[str, Any]:
    """The anomaly as a ``results.json`` entry lists it: ``{"kind", "key", "evidence"}``."""
    d = a.to_json()
    return {k: d[k] for k in ENTRY_FIELDS}


def report_key(a: HistoryAnomaly) -> tuple:
    """(history, kind, key, evidence as sorted JSON): the order the report lists anomalies in."""
    return (a.history, a.kind, str(a.key), json.dumps(a.to_json()["evidence"], sort_keys=True))


def in_report_order(anoms: Iterable[A]) -> list[A]:
    """``anoms`` sorted by :func:`report_key`."""
    return sorted(anoms, key=report_key)
