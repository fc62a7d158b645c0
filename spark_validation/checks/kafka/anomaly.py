"""Kafka anomalies as typed values: what the reference (:mod:`.rules`) and the kernel
(:mod:`.kernel`) report, one frozen attrs class per kind of evidence.

A :class:`KafkaAnomaly` names its history, kind and key and carries the evidence of its rule;
``to_json`` gives the object ``results.json`` lists (``{"history", "kind", "key", "evidence"}``,
evidence fields in the order the rules' docstring names them) and :meth:`KafkaAnomaly.from_json`
reads it back where the anomalies crossed a text boundary (the JVM, in :mod:`.spark`). The
evidence follows the cases of ``jepsen.tests.kafka`` (one class per case shape); values are
text, offsets and ops integers, lists are tuples so the values are hashable.
"""

from __future__ import annotations

import json
from typing import Any, Iterable, Union

import attrs

from spark_validation.checks.anomaly import in_report_order, report_key


def _ints(xs: Any) -> tuple:
    return tuple(None if x is None else int(x) for x in xs)


def _texts(xs: Any) -> tuple:
    return tuple(xs)


@attrs.frozen
class OffsetConflict:
    """inconsistent-offsets: one offset of a key bears several values."""

    offset: int
    values: tuple[str, ...] = attrs.field(converter=_texts)
    ops: tuple[int, ...] = attrs.field(converter=_ints)

    def to_json(self) -> dict[str, Any]:
        return {"offset": self.offset, "values": list(self.values), "ops": list(self.ops)}


@attrs.frozen
class Duplicate:
    """duplicate: one value at several offsets of a key."""

    value: str
    offsets: tuple[int, ...] = attrs.field(converter=_ints)

    def to_json(self) -> dict[str, Any]:
        return {"value": self.value, "offsets": list(self.offsets)}


@attrs.frozen
class FailedRead:
    """G1a: an ``ok`` poll (``reader``) read a value whose send (``writer``) failed."""

    value: str
    offset: int | None
    writer: int
    reader: int

    def to_json(self) -> dict[str, Any]:
        return {"value": self.value, "offset": self.offset, "writer": self.writer, "reader": self.reader}


@attrs.frozen
class MaxRead:
    """The highest read of a key: the value an ``ok`` poll read there, its offset, the op."""

    value: str
    offset: int
    op: int

    def to_json(self) -> dict[str, Any]:
        return {"value": self.value, "offset": self.offset, "op": self.op}


@attrs.frozen
class LostWrite:
    """lost-write: a committed send below the highest read (``max_read``) that no ``ok`` poll read."""

    value: str
    offset: int
    writer: int
    max_read: MaxRead

    def to_json(self) -> dict[str, Any]:
        return {"value": self.value, "offset": self.offset, "writer": self.writer,
                "max_read": self.max_read.to_json()}


@attrs.frozen
class InnerStep:
    """int-poll-skip, int-nonmonotonic-poll, int-send-skip, int-nonmonotonic-send: two
    consecutive micro-ops of one op on a key, ``delta`` apart in the key's version order."""

    values: tuple[str, ...] = attrs.field(converter=_texts)
    offsets: tuple[int | None, ...] = attrs.field(converter=_ints)
    delta: int
    op: int

    def to_json(self) -> dict[str, Any]:
        return {"values": list(self.values), "offsets": list(self.offsets), "delta": self.delta, "op": self.op}


@attrs.frozen
class ProcessStep:
    """poll-skip, nonmonotonic-poll, nonmonotonic-send: a process's last micro-op on a key in
    one op and its first in the next, ``delta`` apart in the key's version order."""

    process: str
    values: tuple[str, ...] = attrs.field(converter=_texts)
    offsets: tuple[int | None, ...] = attrs.field(converter=_ints)
    delta: int
    ops: tuple[int, ...] = attrs.field(converter=_ints)

    def to_json(self) -> dict[str, Any]:
        return {"process": self.process, "values": list(self.values), "offsets": list(self.offsets),
                "delta": self.delta, "ops": list(self.ops)}


@attrs.frozen
class OwnRead:
    """precommitted-read: an op read values it sent itself."""

    values: tuple[str, ...] = attrs.field(converter=_texts)
    op: int

    def to_json(self) -> dict[str, Any]:
        return {"values": list(self.values), "op": self.op}


@attrs.frozen
class Unseen:
    """unseen: ``count`` acknowledged sends of a key no ``ok`` poll read (``values``: a sample)."""

    count: int
    values: tuple[str, ...] = attrs.field(converter=_texts)

    def to_json(self) -> dict[str, Any]:
        return {"count": self.count, "values": list(self.values)}


Evidence = Union[OffsetConflict, Duplicate, FailedRead, LostWrite, InnerStep, ProcessStep, OwnRead, Unseen]

EVIDENCE: dict[str, type] = {
    "inconsistent-offsets": OffsetConflict,
    "duplicate": Duplicate,
    "G1a": FailedRead,
    "lost-write": LostWrite,
    "poll-skip": ProcessStep,
    "nonmonotonic-poll": ProcessStep,
    "nonmonotonic-send": ProcessStep,
    "int-poll-skip": InnerStep,
    "int-nonmonotonic-poll": InnerStep,
    "int-send-skip": InnerStep,
    "int-nonmonotonic-send": InnerStep,
    "precommitted-read": OwnRead,
    "unseen": Unseen,
}
"""The evidence class of each anomaly kind."""


def _evidence_of(kind: str, ev: dict[str, Any]) -> Evidence:
    fields = {k: v for k, v in ev.items() if k != "allowed"}
    if kind == "lost-write":
        fields["max_read"] = MaxRead(**fields["max_read"])
    return EVIDENCE[kind](**fields)


@attrs.frozen
class KafkaAnomaly:
    """One Kafka anomaly of one history. ``allowed``: reported but not a violation under the
    audit's options (``--allow-unseen``); it shows as ``evidence.allowed``, as Elle's allowed
    cycles do."""

    history: str
    kind: str
    key: str | None
    evidence: Evidence
    allowed: bool = False

    def to_json(self) -> dict[str, Any]:
        ev = self.evidence.to_json()
        if self.allowed:
            ev["allowed"] = True
        return {"history": self.history, "kind": self.kind, "key": self.key, "evidence": ev}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> "KafkaAnomaly":
        """The anomaly whose :meth:`to_json` is ``d`` (``evidence`` a dict or its JSON text)."""
        ev = d["evidence"]
        ev = json.loads(ev) if isinstance(ev, str) else ev
        return cls(d["history"], d["kind"], d["key"], _evidence_of(d["kind"], ev), bool(ev.get("allowed")))

    def sort_key(self) -> tuple:
        """(history, kind, key, evidence as sorted JSON): the report's order."""
        return report_key(self)


def sorted_anomalies(anoms: Iterable[KafkaAnomaly]) -> list[KafkaAnomaly]:
    """``anoms`` in the report's order (:meth:`KafkaAnomaly.sort_key`)."""
    return in_report_order(anoms)
