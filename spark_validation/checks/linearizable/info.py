"""What the linearizability check of one history records besides its verdict: :class:`LinInfo`.

Every field but ``nemesis_ops`` is optional and absent from :meth:`LinInfo.to_json` when unset,
so the JSON holds what the check reached: an ``error`` ends the check, and ``structure_errors``
follows the error that names them.
"""

from __future__ import annotations

from typing import Any

import attrs

from spark_validation.ingest.history import StructureError, to_jsonable

__all__ = ["LinInfo", "Undecided"]


@attrs.frozen
class Undecided:
    """A partition the search gave up on: its key, why, its calls, the deepest linearized prefix
    it reached and the steps it took."""

    key: Any  # JSON-ready
    reason: str
    calls: int
    best_prefix: int
    explored: int

    def to_json(self) -> dict[str, Any]:
        return {"key": self.key, "reason": self.reason, "calls": self.calls, "best_prefix": self.best_prefix,
                "explored": self.explored}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> "Undecided":
        return cls(d["key"], d["reason"], d["calls"], d["best_prefix"], d["explored"])


def _tuple(xs: Any) -> tuple:
    return tuple(xs)


@attrs.frozen
class LinInfo:
    """The details of one history's linearizability check, in the order :meth:`to_json` writes
    them: nemesis ops ignored; the history and its unreadable lines; the model and its nil-read
    semantics; failed ops dropped, calls and partitions checked; partitions left unchecked at the
    deadline, search steps, undecided partitions; why there is no verdict and the ops that do not
    pair up."""

    nemesis_ops: int | None = None
    history: str | None = None
    malformed_lines: int | None = None
    scope: str | None = None
    model: str | None = None
    nil_reads: str | None = None
    failed_ops_dropped: int | None = None
    calls: int | None = None
    partitions: int | None = None
    unchecked_partitions: int | None = None
    explored: int | None = None
    unknown_partitions: tuple[Undecided, ...] = attrs.field(default=(), converter=_tuple)
    error: str | None = None
    structure_errors: tuple[StructureError, ...] = attrs.field(default=(), converter=_tuple)

    def to_json(self) -> dict[str, Any]:
        """The details as JSON: the fields that are set, in field order."""
        out: dict[str, Any] = {}
        for a in attrs.fields(LinInfo):
            v = getattr(self, a.name)
            if v is None or v == ():
                continue
            if a.name == "unknown_partitions":
                v = [u.to_json() for u in v]
            elif a.name == "structure_errors":
                v = [e.to_dict() for e in v]
            out[a.name] = to_jsonable(v)
        return out

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> "LinInfo":
        """The details from :meth:`to_json`'s output."""
        kv = dict(d)
        kv["unknown_partitions"] = [Undecided.from_json(u) for u in kv.get("unknown_partitions", ())]
        kv["structure_errors"] = [StructureError(**e) for e in kv.get("structure_errors", ())]
        return cls(**kv)
