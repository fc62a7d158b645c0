"""The cycles of a dependency graph as typed anomalies, explained as Elle explains a cycle
(``elle.txn/cycle-explainer``, ``elle.core/explain-cycle``): the ops of the cycle in order, each
step with its edge kind, key and values and a sentence, the size of the strongly connected
component, and Elle's name for the cycle.

Which cycles make a history invalid follows ``jepsen.tests.kafka/allowed-error-types``: ``G0`` and
its variants are always allowed ("writes are never isolated" in Kafka's transaction model) and
``G1c`` and its variants are allowed with ``--ww-deps``; those carry ``allowed`` with the reason.
"""

from __future__ import annotations

from typing import Any

import attrs

from spark_validation.checks.elle.graph import Graph
from spark_validation.checks.elle.reference import CycleOptions
from spark_validation.checks.elle.search import KIND_NAMES, PROCESS, REALTIME, WR, WW, Search, split

_UNORDERED = ("process", "realtime")  # edge kinds without a key or values

_NAMES = {
    "G0": "a write cycle (G0)",
    "G1c": "circular information flow (G1c)",
    "G-single-item": "read skew: a cycle with exactly one anti-dependency (G-single-item)",
    "G-nonadjacent-item": "a cycle with two or more anti-dependencies, none adjacent (G-nonadjacent-item)",
    "G2-item": "a cycle with two or more anti-dependencies, two of them adjacent (G2-item)",
}


@attrs.frozen
class Step:
    """One edge of a cycle: ``op`` precedes ``next`` by an edge of ``kind``."""
    op: int
    next: int
    kind: str
    key: Any
    value: Any
    value2: Any
    text: str

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {"op": self.op, "next": self.next, "kind": self.kind}
        if self.kind not in _UNORDERED:
            d["key"], d["value"] = self.key, self.value
        if self.value2 is not None:
            d["value2"] = self.value2
        d["text"] = self.text
        return d

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> "Step":
        """The step whose :meth:`to_json` is ``d``."""
        return cls(d["op"], d["next"], d["kind"], d.get("key"), d.get("value"), d.get("value2"), d["text"])


@attrs.frozen
class CycleEvidence:
    """A cycle of one anomaly type; ``fallback``: the cycle a timed-out search reports (Elle's)."""
    steps: tuple[Step, ...]
    scc_size: int
    explanation: str
    fallback: bool = False
    allowed: str | None = None

    @property
    def cycle(self) -> list[int]:
        ops = [s.op for s in self.steps]
        return ops + [ops[0]]

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {"cycle": self.cycle, "steps": [s.to_json() for s in self.steps],
                             "scc_size": self.scc_size, "explanation": self.explanation}
        if self.fallback:
            d["fallback"] = True
        if self.allowed is not None:
            d["allowed"] = self.allowed
        return d

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> "CycleEvidence":
        """The evidence whose :meth:`to_json` is ``d``."""
        return cls(tuple(Step.from_json(s) for s in d["steps"]), d["scc_size"], d["explanation"],
                   bool(d.get("fallback")), d.get("allowed"))


@attrs.frozen
class TimeoutEvidence:
    """Elle's ``cycle-search-timeout``: the type being searched and those searched, not found."""
    scc_size: int
    searching: str
    not_found: tuple[str, ...]

    @property
    def explanation(self) -> str:
        return (f"the search for a {self.searching} cycle in a component of {self.scc_size} ops "
                f"ran out of its work budget (Elle's :cycle-search-timeout)")

    def to_json(self) -> dict[str, Any]:
        return {"scc_size": self.scc_size, "anomaly_spec_type": self.searching,
                "does_not_contain": list(self.not_found), "explanation": self.explanation}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> "TimeoutEvidence":
        """The evidence whose :meth:`to_json` is ``d``."""
        return cls(d["scc_size"], d["anomaly_spec_type"], tuple(d["does_not_contain"]))


@attrs.frozen
class CycleAnomaly:
    """A cycle anomaly of one history (its key is always none: a cycle spans keys); an
    :class:`~spark_validation.checks.anomaly.Anomaly`."""
    history: str
    kind: str
    evidence: CycleEvidence | TimeoutEvidence

    @property
    def key(self) -> None:
        return None

    @property
    def allowed(self) -> bool:
        return isinstance(self.evidence, CycleEvidence) and self.evidence.allowed is not None

    def to_json(self) -> dict[str, Any]:
        """The anomaly as the report lists it, beside the Kafka checks' anomalies."""
        return {"history": self.history, "kind": self.kind, "key": None, "evidence": self.evidence.to_json()}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> "CycleAnomaly":
        """The anomaly whose :meth:`to_json` is ``d``, read back where it crossed a text boundary
        (the Spark rows of :mod:`.spark`)."""
        ev = d["evidence"]
        typed = TimeoutEvidence.from_json(ev) if d["kind"] == "cycle-search-timeout" else CycleEvidence.from_json(ev)
        return cls(d["history"], d["kind"], typed)


def anomalies(g: Graph, opts: CycleOptions, **budgets: int) -> list[CycleAnomaly]:
    """The cycle anomalies of a graph, components in order of their smallest op."""
    found = Search(g.n, g.src, g.dst, g.kind, g.op, opts.types, **budgets).run()
    return [CycleAnomaly(g.hist_names[int(g.v_hist[f["vertex"]])], f["type"], _evidence(g, f, opts))
            for f in found]


def _op_text(g: Graph, v: int) -> str:
    return f"op {int(g.op[v])} (process {g.proc_names[int(g.v_proc[v])]})"


def _step_text(g: Graph, e: int) -> str:
    key, value, value2 = g.example(e)
    ta, tb = _op_text(g, int(g.src[e])), _op_text(g, int(g.dst[e]))
    kind = int(g.kind[e])
    if kind == WW:
        return f"{ta} sent {value!r} to key {key!r} before {tb} sent {value2!r} to it"
    if kind == WR:
        return f"{ta} sent {value!r} to key {key!r}, which {tb} polled"
    if kind == PROCESS:
        return f"{ta} completed before {tb} on the same process"
    if kind == REALTIME:
        return f"{ta} completed before {tb} was invoked (real time)"
    return f"{ta} polled key {key!r} up to {value!r} and did not see {value2!r}, which {tb} sent next"


def _name(kind: str) -> str:
    base, extra = split(kind)
    if not extra:
        return _NAMES[base]
    return _NAMES[base][:-1] + kind[len(base):] + "), closed by " + (
        "process order" if extra == (PROCESS,) else "real-time order")


def _allowed(kind: str, opts: CycleOptions) -> str | None:
    """Why ``jepsen.tests.kafka/allowed-error-types`` allows the kind, or None."""
    if kind.startswith("G0"):
        return "jepsen.tests.kafka/allowed-error-types: G0 is normal, Kafka does not isolate writes"
    if kind.startswith("G1c") and opts.ww_deps:
        return ("jepsen.tests.kafka/allowed-error-types: with ww-deps, G1c is normal (no write "
                "isolation gives cycles like t0 <ww t1 <wr t0)")
    return None


def _step(g: Graph, e: int) -> Step:
    key, value, value2 = g.example(e)
    return Step(int(g.op[int(g.src[e])]), int(g.op[int(g.dst[e])]), KIND_NAMES[int(g.kind[e])], key, value, value2,
                _step_text(g, e))


def _evidence(g: Graph, f: dict, opts: CycleOptions) -> CycleEvidence | TimeoutEvidence:
    kind = f["type"]
    if kind == "cycle-search-timeout":
        return TimeoutEvidence(f["scc"], f["searching"], tuple(f["not_found"]))
    steps = tuple(_step(g, e) for e in f["edges"])
    explanation = ("; ".join(f"op {s.op} < op {s.next} because {s.text} ({s.kind})" for s in steps)
                   + f": a cycle, {_name(kind)}")
    return CycleEvidence(steps, f["scc"], explanation, bool(f.get("fallback")), _allowed(kind, opts))
