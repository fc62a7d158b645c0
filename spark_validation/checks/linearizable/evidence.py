"""The evidence of a failed linearizability check, as the report lists it.

Per failing partition, an anomaly ``{"kind": "nonlinearizable", "key": k, "evidence": {...}}``:
the longest linearizable prefix the search found, the model state after it, the op whose return
the search could not get past (``stuck_op``) and, for every op that could have come next, whether
the model accepted it from that state (``candidates``); or, when a read observed a value no op
wrote, those reads (``impossible_ops``) and no search. docs/contracts.md section 6 fixes the shape.
"""

from __future__ import annotations

from typing import Any, Callable

from spark_validation.checks.linearizable.models import READ, UNKNOWN, Call, Model, describe_io
from spark_validation.checks.linearizable.search import Stuck
from spark_validation.ingest.history import Op, to_jsonable

PREFIX_CAP = 200  # ops of the linearized prefix listed in evidence (the length is always given)

_PLAIN = frozenset((int, str, bool, type(None)))


def anomaly(key: Any, evidence: dict[str, Any]) -> dict[str, Any]:
    """The anomaly of one non-linearizable partition."""
    return {"kind": "nonlinearizable", "key": to_jsonable(key), "evidence": evidence}


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
) -> dict[str, Any]:
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
    evidence: dict[str, Any] = {
        "prefix_length": n,
        "linearized_prefix": [json_of(c) for c in stuck.prefix[-PREFIX_CAP:]],
        "state": model.describe(state),
        "state_value": model.state_json(state),
        "states": [model.describe(s) for s in stuck.states],
        "candidates": candidates,
    }
    where = f"after the {n} ops of linearized_prefix the model is in {model.describe(state)}; "
    if stuck.stuck >= 0:
        stuck_op = evidence["stuck_op"] = json_of(stuck.stuck)
        evidence["explanation"] = (
            where + f"op index {stuck_op['index']} must take effect before it "
            f"returned, but no order of the ops that could come next lets it"
        )
    else:
        evidence["explanation"] = where + "the remaining ops with observed outcomes cannot be linearized in any order"
    return evidence


def impossible_evidence(model: Model, impossible: list[tuple[Call, str]]) -> dict[str, Any]:
    """The evidence of a partition whose reads observed values no op could have produced."""
    call, why = impossible[0]
    return {
        "prefix_length": 0,
        "linearized_prefix": [],
        "state": None,
        "state_value": None,
        "states": [],
        "candidates": [],
        "stuck_op": call_json(model, call),
        "impossible_ops": [dict(call_json(model, c), reason=r) for c, r in impossible],
        "explanation": f"op index {call.operation.invoke.index} observed {why}: no order of the ops explains it",
    }
