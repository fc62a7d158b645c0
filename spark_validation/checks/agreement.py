"""Metadata agreement over KRaft simulator traces (contract section 5).

Each trace step carries the projected post-state, with ``log`` (node -> entries
``{"epoch", "value"}``), ``highWatermark`` (node -> number of committed entries) and, where the
log starts past 0 (a KIP-630 snapshot holds what lies below), ``logStartOffset`` (node -> offset of
``log[n][0]``; 0 when absent). A node's committed log at a step is the entries of ``log[n]`` below
``highWatermark[n]``, each at offset ``logStartOffset[n] + index``. KRaft's safety promise is that
committed metadata never diverges: at every step, every node's committed log is a prefix of
every other node's, and an entry once committed at an offset stays the entry at that offset
(spec invariants: the committed-prefix agreement and ``committed`` ghost of spec/KRaft.tla).

Check: explode every (step, node, offset, entry) of the committed logs and group by
(trace, offset): more than one distinct entry is a violation. That one grouping covers both
disagreement between two nodes at one step and a committed entry that changed over time. The
first such offset of a trace is reported, with the entries and the step/node that first
committed each. Steps that lack ``log`` or ``highWatermark`` for a node are skipped for that node.

Pure-Python (``--no-spark``) here, the DataFrame version in :mod:`.agreement_spark`; a test checks
they agree.
"""

from __future__ import annotations

import json
from typing import Any, Iterable

import attrs

from spark_validation.checks.anomaly import OneKind
from spark_validation.ingest.records import Malformed, ndjson_lines, to_text

KIND = "metadata-divergence"
MODEL = "kraft-metadata"


def _entry_text(e: Any) -> str:
    return to_text(e)  # compact JSON in key order, as Spark keeps raw JSON text


@attrs.frozen
class Committed:
    """One entry committed at the divergent offset: the entry (a JSON value, or its text) and the
    step, trace line and node that first committed it."""

    entry: Any
    step: int
    line: int
    node: str

    def to_json(self) -> dict[str, Any]:
        return {"entry": self.entry, "step": self.step, "line": self.line, "node": self.node}


@attrs.frozen
class DivergenceEvidence:
    """Where a trace's committed logs first diverge: the first divergent ``offset``, the step and
    the two nodes of its second committed entry, every entry committed there
    (:class:`Committed`, earliest first), and how many offsets diverge."""

    trace: str
    offset: int
    step: int
    nodes: tuple[str, str]
    entries: tuple[Committed, ...]
    divergent_offsets: int

    def to_json(self) -> dict[str, Any]:
        return {"trace": self.trace, "offset": self.offset, "step": self.step, "nodes": list(self.nodes),
                "entries": [e.to_json() for e in self.entries], "divergent_offsets": self.divergent_offsets}


@attrs.frozen
class Divergence(OneKind):
    """A metadata divergence of one trace (an :class:`~spark_validation.checks.anomaly.Anomaly`;
    its key is none)."""

    KIND = KIND
    evidence: DivergenceEvidence

    @property
    def key(self) -> None:
        return None


@attrs.frozen
class TraceFile:
    """One trace checked in plain Python: its step count, the lines that are not steps (line,
    reason), and its divergence if it has one."""

    steps: int
    malformed: tuple[tuple[int, str], ...]
    divergence: Divergence | None


Where = tuple[int, int, str]
"""(step, line, node) that committed an entry: the earliest is the smallest."""


def _committed(state: dict[str, Any], step: int, n: int, first: dict[tuple[int, str], Where]) -> None:
    """Every entry ``state`` holds committed, into ``first`` ((offset, entry text) -> where first
    committed)."""
    logs, hws = state.get("log"), state.get("highWatermark")
    starts = state.get("logStartOffset")
    if not isinstance(logs, dict) or not isinstance(hws, dict):
        return
    for node, entries in logs.items():
        hw = hws.get(node)
        start = starts.get(node, 0) if isinstance(starts, dict) else 0
        if not isinstance(entries, list) or not isinstance(hw, int) or not isinstance(start, int):
            continue
        for i, e in enumerate(entries[: max(hw - start, 0)]):
            k = (start + i, _entry_text(e))
            cand = (step, n, str(node))
            if k not in first or cand < first[k]:
                first[k] = cand


def check_trace_file(path: str) -> TraceFile:
    """One trace file checked in plain Python."""
    first: dict[tuple[int, str], Where] = {}  # (offset, entry) -> (step, line, node)
    steps = 0
    malformed: list[tuple[int, str]] = []
    for n, obj, problem, _ in ndjson_lines(path):
        if problem is not None:
            malformed.append((n, problem))
            continue
        if "kind" in obj and "state" not in obj:
            continue  # header
        state = obj.get("state")
        if state is None and obj.get("spec") is False:
            steps += 1  # a non-spec step without state left it unchanged (contract 5): nothing new
            continue
        if not isinstance(state, dict):
            malformed.append((n, "step has no state"))
            continue
        steps += 1
        _committed(state, obj.get("i") if isinstance(obj.get("i"), int) else n, n, first)
    by_offset: dict[int, list[tuple[Where, str]]] = {}
    for (off, e), where in first.items():
        by_offset.setdefault(off, []).append((where, e))
    bad = sorted(o for o, es in by_offset.items() if len(es) > 1)
    div = Divergence(divergence_evidence(path, bad[0], by_offset[bad[0]], len(bad))) if bad else None
    return TraceFile(steps, tuple(malformed), div)


def divergence_evidence(path: str, offset: int, entries: list[tuple[Where, str]], n_bad: int) -> DivergenceEvidence:
    """The evidence of a divergence at ``offset`` from its entries (where first committed, entry
    text)."""
    es = sorted(entries)
    return DivergenceEvidence(
        path, offset, es[1][0][0], (es[0][0][2], es[1][0][2]),
        tuple(Committed(json.loads(e) if e[:1] in "[{" else e, *w) for w, e in es), n_bad)


@attrs.frozen
class TraceChecks:
    """The metadata check of a set of traces: each trace's step count, the divergence of each
    trace that has one, and the lines that could not be read (``scope="line"``, no text)."""

    steps: dict[str, int]
    divergences: dict[str, Divergence]
    malformed: list[Malformed]


def unreadable_step(path: str, line: int, reason: str) -> Malformed:
    """A trace line that is not a step (its text is not kept)."""
    return Malformed("line", path, line, reason, "")


def check_traces_local(paths: Iterable[str]) -> TraceChecks:
    """What :func:`.agreement_spark.check_traces_spark` finds, in plain Python."""
    found = TraceChecks({}, {}, [])
    for p in paths:
        t = check_trace_file(p)
        found.steps[p] = t.steps
        found.malformed.extend(unreadable_step(p, ln, why) for ln, why in t.malformed)
        if t.divergence is not None:
            found.divergences[p] = t.divergence
    return found
