"""Is a client history linearizable? The check of one history, from its ops to a :class:`LinResult`.

Histories are split by key (P-compositionality: a history of independent objects is linearizable
iff each object's sub-history is, Herlihy & Wing 1990) and each partition is searched on its own
(:mod:`.search`). Jepsen/Knossos semantics for outcomes (``knossos.history``, ``knossos.wgl``):
``fail`` ops are dropped; ``info`` and never-completed ops may take effect at any time after their
invocation and need not be linearized. A register history in the common case goes to
:mod:`.fast` (compiled, or its reference :mod:`.register`); every other history, and any that
declines, to the general path below, which gives the same result.

Result (docs/contracts.md section 6)::

    LinResult(valid: True | False | "unknown", ops, seconds, anomalies, info)

with one typed anomaly per failing partition (:class:`.evidence.LinAnomaly`).
"""

from __future__ import annotations

import time
from typing import Any, Sequence

import attrs

from spark_validation.checks.linearizable import fast, search
from spark_validation.checks.linearizable.evidence import (
    LinAnomaly,
    anomaly,
    call_json,
    impossible_evidence,
    register_call_json,
    stuck_evidence,
)
from spark_validation.checks.linearizable.info import LinInfo, Undecided
from spark_validation.checks.linearizable.models import (
    NIL_READS,
    CasRegisterModel,
    Call,
    Model,
    ModelError,
    RegisterModel,
    freeze,
    get_model,
    with_nil_reads,
)
from spark_validation.checks.linearizable.register import IMPOSSIBLE, NOT_LINEARIZABLE, UNDECIDED
from spark_validation.checks.linearizable.search import DEFAULT_MAX_CACHE, Stuck, check_calls
from spark_validation.ingest.history import History, Op, Operation, make_operation, pair_ops, pairing_of, to_jsonable
from spark_validation.ingest.pairing import Pairing

__all__ = ["LinInfo", "LinResult", "Undecided", "check_history", "default_nil_reads"]


@attrs.frozen
class LinResult:
    """The verdict for one history (contract section 6)."""

    valid: Any  # True | False | "unknown"
    ops: int
    seconds: float
    anomalies: list[LinAnomaly] = attrs.field(factory=list)
    info: LinInfo = attrs.field(factory=LinInfo)

    def to_dict(self) -> dict[str, Any]:
        return {
            "valid": self.valid,
            "ops": self.ops,
            "seconds": self.seconds,
            "anomalies": [a.to_json() for a in self.anomalies],
            "info": self.info.to_json(),
        }


def default_nil_reads(history_id: Any, nil_reads: str | None = "auto") -> str:
    """The nil-read semantics for a history: ``nil_reads`` when it is ``"knossos"`` or ``"strict"``;
    for ``"auto"``/``None``, Knossos's (a ``nil`` read is unknown) for EDN histories -- the files
    Jepsen and Knossos write -- and strict (``nil`` is a value) for everything else."""
    if nil_reads in NIL_READS:
        return nil_reads  # type: ignore[return-value]
    if nil_reads not in (None, "auto"):
        raise ValueError(f"nil_reads must be auto, {' or '.join(NIL_READS)}, got {nil_reads!r}")
    return "knossos" if str(history_id or "").lower().endswith(".edn") else "strict"


class _Verdict(Exception):
    """A verdict and its anomalies: what each step of the check returns, or raises to end the
    check early (``info`` filled so far)."""

    def __init__(self, valid: Any, anomalies: list[LinAnomaly] | None = None) -> None:
        super().__init__(valid)
        self.valid, self.anomalies = valid, anomalies or []


def check_history(
    history_or_ops: History | Sequence[Op] | Sequence[Operation],
    model: str | Model | None = None,
    *,
    initial: Any = None,
    budget_seconds: float | None = None,
    max_cache: int = DEFAULT_MAX_CACHE,
    nil_reads: str | None = "auto",
    history_id: str | None = None,
) -> LinResult:
    """Is the history linearizable with respect to ``model``?

    ``model`` defaults to the history's own model. ``initial`` defaults to the history's initial
    value (from its header or model file), else the model's default. ``budget_seconds`` bounds the
    whole check; ``max_cache`` bounds memoised configurations per partition. Never raises for bad
    input: a malformed history (ops that do not pair up), an unknown model or an op the model
    cannot interpret give ``valid = "unknown"`` with ``info.error``.

    ``nil_reads`` is ``"knossos"``, ``"strict"`` or ``"auto"`` (:func:`default_nil_reads` of the
    history's path or ``history_id``: Knossos's semantics for ``.edn`` files).
    """
    t0 = time.perf_counter()
    deadline = t0 + budget_seconds if budget_seconds is not None else None
    h = history_or_ops if isinstance(history_or_ops, History) else None
    raw: Sequence[Any] = h.ops if h is not None else (
        history_or_ops if isinstance(history_or_ops, list) else list(history_or_ops))
    info = _history_info(h)  # the LinInfo fields, set as the check reaches them
    try:
        m = _model(h, model, nil_reads, history_id, info)
        initial = initial if initial is not None else (h.initial if h is not None else None)
        verdict = _check_register(raw, h, m, initial, deadline, max_cache, info)
        if verdict is None:
            verdict = _check_general(raw, h, m, initial, deadline, max_cache, info)
    except _Verdict as v:
        verdict = v
    return LinResult(verdict.valid, len(raw), time.perf_counter() - t0, verdict.anomalies, LinInfo(**info))


def _history_info(h: History | None) -> dict[str, Any]:
    info: dict[str, Any] = {"nemesis_ops": 0}
    if h is not None:
        info["history"] = h.id
        if h.malformed:
            info["malformed_lines"] = len(h.malformed)
            info["scope"] = "verdict covers the readable ops only"
    return info


def _model(h: History | None, model: str | Model | None, nil_reads: str | None, history_id: str | None,
           info: dict[str, Any]) -> Model:
    """The model to check against, read as ``nil_reads`` says for this history."""
    if model is None and h is not None:
        model = h.model
    if model is None:
        info["error"] = "no model given and the history names none"
        raise _Verdict("unknown")
    try:
        m = get_model(model)
    except KeyError as exc:
        info["error"] = str(exc.args[0])
        raise _Verdict("unknown") from None
    if history_id is None and h is not None:
        history_id = h.path or h.id
    try:
        mode = default_nil_reads(history_id, nil_reads)
    except ValueError as exc:
        info["error"] = str(exc)
        raise _Verdict("unknown") from None
    m = with_nil_reads(m, mode)
    info["model"] = m.name
    if hasattr(m, "nil_reads"):
        info["nil_reads"] = mode
    return m


def _check_register(
    ops: Sequence[Any], h: History | None, m: Model, initial: Any, deadline: float | None, max_cache: int,
    info: dict[str, Any],
) -> _Verdict | None:
    """The verdict of a register history by :func:`.fast.check_register_ops`, filling ``info`` as
    the general path does; None for another model, ops already paired, or a history it declines."""
    if type(m) not in (RegisterModel, CasRegisterModel) or (ops and type(ops[0]) is not Op):
        return None
    r = fast.check_register_ops(
        ops, h.pairing if h is not None else None, type(m) is CasRegisterModel, m.nil_reads == "knossos", initial,
        -1.0 if deadline is None else deadline, max_cache, search.CACHE_BYTES,
    )
    if r is None:
        return None
    (info["nemesis_ops"], info["failed_ops_dropped"], info["calls"], info["partitions"], unchecked, inv_pos,
     comp_pos), parts = r

    def call_of(cid: int) -> Call:  # the model's own call for the operation (one per register op)
        ip, cp = inv_pos[cid], comp_pos[cid]
        return m.calls_for(make_operation(ops[ip], ops[cp] if cp >= 0 else None, ip, cp if cp >= 0 else None))[0]

    def json_of(cid: int) -> dict[str, Any]:
        cp = comp_pos[cid]
        return register_call_json(ops[inv_pos[cid]], ops[cp] if cp >= 0 else None)

    anomalies: list[LinAnomaly] = []
    unknown: list[Undecided] = []
    for key, verdict, steps, _cache, n_part, payload in parts:
        if verdict == IMPOSSIBLE:
            impossible = [(c, m.impossible_reason(c)) for c in map(call_of, payload)]
            anomalies.append(anomaly(key, impossible_evidence(m, impossible)))
        elif verdict == NOT_LINEARIZABLE:
            anomalies.append(anomaly(key, stuck_evidence(m, Stuck(*payload), call_of, json_of)))
        elif verdict == UNDECIDED:
            unknown.append(_undecided(key, payload[0], n_part, payload[1], steps))
    if unchecked:
        info["unchecked_partitions"] = unchecked
    info["explored"] = sum(p[2] for p in parts)
    return _verdict(anomalies, unknown, info)


def _undecided(key: Any, reason: str, calls: int, best_prefix: int, explored: int) -> Undecided:
    return Undecided(to_jsonable(key), reason, calls, best_prefix, explored)


def _verdict(anomalies: list[LinAnomaly], unknown: list[Undecided], info: dict[str, Any]) -> _Verdict:
    if unknown:
        info["unknown_partitions"] = unknown
    if anomalies:
        return _Verdict(False, anomalies)
    return _Verdict("unknown" if unknown else True)


def _check_general(
    raw: Sequence[Any], h: History | None, m: Model, initial: Any, deadline: float | None, max_cache: int,
    info: dict[str, Any],
) -> _Verdict:
    """The verdict of any history: pair, turn ops into the model's calls, split by key, search."""
    parts = m.partition(_calls(raw, h, m, info))
    info["partitions"] = len(parts)
    anomalies: list[LinAnomaly] = []
    unknown: list[Undecided] = []
    explored = 0
    for done, (key, part) in enumerate(parts, 1):
        try:
            init_state = freeze(m.init(initial, key))
            impossible = m.impossible(part, init_state)
            # an observed value no op in this partition could have produced: no order can explain
            # it, so the search (which would have to exhaust every order first) is skipped
            s = None if impossible else check_calls(m, part, init_state, deadline=deadline, max_cache=max_cache)
        except Exception as exc:  # a model that cannot handle some value: no verdict, no traceback
            info["error"] = f"model {m.name} failed on key {key!r}: {type(exc).__name__}: {exc}"
            raise _Verdict("unknown") from None
        if s is None:
            anomalies.append(anomaly(key, impossible_evidence(m, impossible)))
            continue
        explored += s.explored
        if s.valid is False:
            json_of = lambda cid, part=part: call_json(m, part[cid])  # noqa: E731
            stuck: Stuck = s.stuck  # type: ignore[assignment]
            anomalies.append(anomaly(key, stuck_evidence(m, stuck, part.__getitem__, json_of)))
        elif s.valid == "unknown":
            unknown.append(_undecided(key, s.reason, s.calls, s.best_prefix, s.explored))
            if deadline is not None and time.perf_counter() > deadline:
                info["unchecked_partitions"] = len(parts) - done
                break
    info["explored"] = explored
    return _verdict(anomalies, unknown, info)


def _calls(raw: Sequence[Any], h: History | None, m: Model, info: dict[str, Any]) -> list[Call]:
    """The model's calls of a history's ops (paired first unless they are operations already),
    ``fail`` ops dropped."""
    pairing: Pairing | None = None
    if not (raw and isinstance(raw[0], Operation)):
        pairing = (h.pairing if h is not None else None) or pairing_of(raw)
    if pairing is None:
        operations, errors = list(raw), []
    else:
        operations, errors = pair_ops(raw, pairing)
        info["nemesis_ops"] = pairing.nemesis
    if errors:
        info["error"] = "malformed history: operations do not pair up"
        info["structure_errors"] = errors
        raise _Verdict("unknown")
    live = [o for o in operations if o.complete is None or o.complete.type != "fail"]
    info["failed_ops_dropped"] = len(operations) - len(live)
    try:
        calls = m.calls(live)
    except ModelError as exc:
        info["error"] = str(exc)
        raise _Verdict("unknown") from None
    except (TypeError, ValueError) as exc:
        info["error"] = f"model {m.name} cannot read these ops: {type(exc).__name__}: {exc}"
        raise _Verdict("unknown") from None
    info["calls"] = len(calls)
    return calls
