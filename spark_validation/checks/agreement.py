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


def check_trace_file(path: str) -> tuple[dict, list[dict]]:
    """(result-ish dict with steps, anomalies) of one trace file, in plain Python.

    Malformed lines are returned in ``result["malformed"]`` as (line, reason).
    """
    first: dict[tuple[int, str], tuple[int, int, str]] = {}  # (offset, entry) -> (step, line, node)
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
        step = obj.get("i") if isinstance(obj.get("i"), int) else n
        logs, hws = state.get("log"), state.get("highWatermark")
        starts = state.get("logStartOffset")
        if not isinstance(logs, dict) or not isinstance(hws, dict):
            continue
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
    by_offset: dict[int, list[tuple[tuple[int, int, str], str]]] = {}
    for (off, e), where in first.items():
        by_offset.setdefault(off, []).append((where, e))
    anomalies = []
    bad = sorted(o for o, es in by_offset.items() if len(es) > 1)
    if bad:
        anomalies.append(divergence_evidence(path, bad[0], by_offset[bad[0]], len(bad)))
    return {"steps": steps, "malformed": malformed}, anomalies


@attrs.frozen
class Divergence(OneKind):
    """A metadata divergence of one trace (an :class:`~spark_validation.checks.anomaly.Anomaly`;
    its key is none): ``evidence`` is the JSON object :func:`check_trace_file` builds."""

    KIND = KIND
    evidence: dict[str, Any]

    @property
    def key(self) -> None:
        return None


def divergence_evidence(path: str, offset: int, entries: list[tuple[tuple[int, int, str], str]], n_bad: int) -> dict:
    es = sorted(entries)
    return {
        "kind": KIND,
        "key": None,
        "evidence": {
            "trace": path,
            "offset": offset,
            "step": es[1][0][0],
            "nodes": [es[0][0][2], es[1][0][2]],
            "entries": [{"entry": json.loads(e) if e[:1] in "[{" else e, "step": w[0], "line": w[1], "node": w[2]}
                        for w, e in es],
            "divergent_offsets": n_bad,
        },
    }


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
        info, an = check_trace_file(p)
        found.steps[p] = info["steps"]
        found.malformed.extend(unreadable_step(p, ln, why) for ln, why in info["malformed"])
        if an:
            found.divergences[p] = Divergence(an[0]["evidence"])
    return found
