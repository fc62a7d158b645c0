"""The evidence of a failed linearizability check, typed.

Per failing partition, a :class:`LinAnomaly` (kind ``nonlinearizable``, the partition's key) with
:class:`SearchEvidence`: the longest linearizable prefix the search found, the model state after
it, the op whose return the search could not get past (``stuck_op``) and, for every op that could
have come next, whether the model accepted it from that state (``candidates``); or, when a read
observed a value no op wrote, those reads (``impossible_ops``) and no search. The ops in the
evidence are in their JSON form (:func:`op_json`), as Knossos's ``:final-paths`` lists op maps;
``to_json`` gives the object docs/contracts.md section 6 fixes.
"""

from __future__ import annotations

from typing import Any, Callable

import attrs

from spark_validation.checks.anomaly import OneKind
from spark_validation.checks.linearizable.models import READ, UNKNOWN, Call, Model, describe_io
from spark_validation.checks.linearizable.search import Stuck
from spark_validation.ingest.history import Op, to_jsonable

PREFIX_CAP = 200  # ops of the linearized prefix listed in evidence (the length is always given)

_PLAIN = frozenset((int, str, bool, type(None)))


KIND = "nonlinearizable"


@attrs.frozen
class SearchEvidence:
    """Why a partition is not linearizable (the module docstring); ``stuck_op`` is None where the
    remaining ops cannot be ordered at all, ``impossible_ops`` None unless a read observed a value
    no op could have produced."""

    prefix_length: int
    linearized_prefix: tuple[dict, ...] = attrs.field(converter=tuple)
    state: str | None
    state_value: Any
    states: tuple[str, ...] = attrs.field(converter=tuple)
    candidates: tuple[dict, ...] = attrs.field(converter=tuple)
    stuck_op: dict | None
    explanation: str
    impossible_ops: tuple[dict, ...] | None = None

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {"prefix_length": self.prefix_length, "linearized_prefix": list(self.linearized_prefix),
                             "state": self.state, "state_value": self.state_value, "states": list(self.states),
                             "candidates": list(self.candidates)}
        if self.stuck_op is not None:
            d["stuck_op"] = self.stuck_op
        if self.impossible_ops is not None:
            d["impossible_ops"] = list(self.impossible_ops)
        d["explanation"] = self.explanation
        return to_jsonable(d)

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> "SearchEvidence":
        """The evidence whose :meth:`to_json` is ``d``."""
        imp = d.get("impossible_ops")
        return cls(d["prefix_length"], d["linearized_prefix"], d["state"], d["state_value"], d["states"],
                   d["candidates"], d.get("stuck_op"), d["explanation"], None if imp is None else tuple(imp))


@attrs.frozen
class LinAnomaly(OneKind):
    """One non-linearizable partition of a history (an
    :class:`~spark_validation.checks.anomaly.Anomaly`; never allowed)."""

    KIND = KIND
    key: Any
    evidence: SearchEvidence

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> "LinAnomaly":
        """The anomaly whose :meth:`to_json` is ``d``, read back where it crossed a text boundary
        (the Spark rows of the linearizability check)."""
        return cls(d["key"], SearchEvidence.from_json(d["evidence"]))


def anomaly(key: Any, evidence: SearchEvidence) -> LinAnomaly:
    """The anomaly of one non-linearizable partition."""
    return LinAnomaly(to_jsonable(key), evidence)


def op_json(inv: Op, c: Op | None) -> dict[str, Any]:
    """An operation (invocation ``inv``, completion ``c`` or None) as evidence lists it."""
    v = inv.value
    d: dict[str, Any] = {
        "index": inv.index,
        "process": inv.process,
        "f": inv.f,
        "value": v if type(v) in _PLAIN else to_jsonable(v),
        "type": c.type if c is not None else "pending",
    }
    if inv.key is not None:
        d["key"] = to_jsonable(inv.key)
    if c is not None:
        d["completion_index"] = c.index
        if c.type == "ok":
            v = c.value
            d["output"] = v if type(v) in _PLAIN else to_jsonable(v)
    return d


def call_json(model: Model, call: Call) -> dict[str, Any]:
    """:func:`op_json` of the call's operation, with the call as the model describes it."""
    d = op_json(call.operation.invoke, call.operation.complete)
    d["call"] = model.describe_call(call)
    return d


def register_call_json(inv: Op, c: Op | None) -> dict[str, Any]:
    """:func:`call_json` of the register call an operation makes (``RegisterModel.calls``),
    straight from its ops, without Call objects."""
    d = op_json(inv, c)
    if inv.f == READ:
        d["call"] = describe_io(READ, None, c.value)  # type: ignore[union-attr]
    else:
        d["call"] = describe_io(inv.f, inv.value, None if c is not None and c.type == "ok" else UNKNOWN)
    return d


def stuck_evidence(
    model: Model, stuck: Stuck, call_of: Callable[[int], Call], json_of: Callable[[int], dict[str, Any]]
) -> SearchEvidence:
    """The evidence of a failed search (module doc); ``call_of`` gives a call by the ids of
    ``stuck``, ``json_of`` its :func:`call_json`."""
    state = stuck.state
    candidates = []
    for cid in stuck.candidates:
        call = call_of(cid)
        ok, new_state = model.step(state, call.input, call.output)
        d = json_of(cid)
        d["accepted"] = ok
        if ok:
            d["state_after"] = model.describe(new_state)
        candidates.append(d)
    n = len(stuck.prefix)
    where = f"after the {n} ops of linearized_prefix the model is in {model.describe(state)}; "
    stuck_op = json_of(stuck.stuck) if stuck.stuck >= 0 else None
    if stuck_op is not None:
        explanation = (where + f"op index {stuck_op['index']} must take effect before it "
                       f"returned, but no order of the ops that could come next lets it")
    else:
        explanation = where + "the remaining ops with observed outcomes cannot be linearized in any order"
    return SearchEvidence(n, [json_of(c) for c in stuck.prefix[-PREFIX_CAP:]], model.describe(state),
                          model.state_json(state), [model.describe(s) for s in stuck.states], candidates, stuck_op,
                          explanation)


def impossible_evidence(model: Model, impossible: list[tuple[Call, str]]) -> SearchEvidence:
    """The evidence of a partition whose reads observed values no op could have produced."""
    call, why = impossible[0]
    return SearchEvidence(0, (), None, None, (), (), call_json(model, call),
                          f"op index {call.operation.invoke.index} observed {why}: no order of the ops explains it",
                          tuple(dict(call_json(model, c), reason=r) for c, r in impossible))
