"""``python -m spark_validation.linearizability``: the linearizability check from the command line.

The check itself is :mod:`spark_validation.checks.linearizable`; this module prints its results
for people (:func:`render`) or as JSON lines, and keeps the names other code imports from here.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Sequence

from kraft.interrupt import guard
from spark_validation.checks.linearizable.check import LinResult, check_history, default_nil_reads
from spark_validation.checks.linearizable.models import NIL_READS
from spark_validation.checks.linearizable.search import CACHE_BYTES, DEFAULT_MAX_CACHE, check_calls
from spark_validation.ingest.history import History, iter_corpus

__all__ = ["LinResult", "check_history", "check_calls", "default_nil_reads", "DEFAULT_MAX_CACHE", "CACHE_BYTES",
           "main", "render"]


# --------------------------------------------------------------------------------------------
# command line: python -m spark_validation.linearizability HISTORY_OR_DIR ...


def render(result: LinResult, history: History | None = None, *, context: int = 6) -> str:
    """A human-readable report of one result: verdict line, then per anomaly the explanation,
    the tail of the linearized prefix, the op it got stuck on and the candidates."""
    name = history.id if history is not None else "<ops>"
    verdict = {True: "linearizable", False: "NOT linearizable"}.get(result.valid, "unknown")  # type: ignore[call-overload]
    info = result.info
    lines = [
        f"{name}: {verdict} ({info.model or '?'}, {result.ops} ops, "
        f"{info.partitions or 0} partition(s), {result.seconds * 1e3:.1f} ms)"
    ]
    if info.error is not None:
        lines.append(f"  error: {info.error}")
        for e in info.structure_errors[:context]:
            lines.append(f"    op index {e.index} (process {e.process}): {e.reason}")
    for u in info.unknown_partitions:
        lines.append(
            f"  key {u.key!r}: undecided ({u.reason}; {u.explored} steps, deepest prefix "
            f"{u.best_prefix} of {u.calls} calls)"
        )
    for a in result.anomalies:
        ev = a.evidence
        lines.append(f"  key {a.key!r}: {ev.explanation}")
        if ev.linearized_prefix:
            shown = ev.linearized_prefix[-context:]
            lines.append(f"    linearized prefix ({ev.prefix_length} ops; last {len(shown)}):")
            for p in shown:
                lines.append(f"      #{p['index']:<6} p{p['process']!s:<4} {p['call']}")
        if ev.state is not None:
            lines.append(f"    state then: {ev.state}" + (f"  (all stuck states: {', '.join(ev.states)})" if len(ev.states) > 1 else ""))
        so = ev.stuck_op
        if so:
            lines.append(f"    stuck on: #{so['index']} p{so['process']} {so['call']}")
        for c in ev.candidates[:context]:
            mark = "accepted, dead end later" if c["accepted"] else "rejected"
            lines.append(f"      could come next: #{c['index']} p{c['process']} {c['call']}: {mark}")
        for c in (ev.impossible_ops or ())[:context]:
            lines.append(f"      #{c['index']} p{c['process']} {c['call']}: {c['reason']}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Check history files or directories; print a report per history and a JSON summary line.

    Exit code: 0 all linearizable, 1 some history is not, 2 bad input or undecided (unknown).
    """
    ap = argparse.ArgumentParser(
        prog="python -m spark_validation.linearizability",
        description="Linearizability check of Jepsen/kraft histories (no Spark).",
    )
    ap.add_argument("paths", nargs="+", help="history files or directories")
    ap.add_argument("--model", help="model when a file names none (register, cas-register, kv, set, append-log)")
    ap.add_argument("--budget", type=float, default=None, help="seconds per history before 'unknown'")
    ap.add_argument("--json", action="store_true", help="print one JSON result per line instead")
    ap.add_argument("--nil-reads", choices=("auto", *NIL_READS), default="auto",
                    help="a read of nil: knossos = unknown value (Knossos), strict = the value nil; "
                         "auto = knossos for .edn files, strict otherwise")
    args = ap.parse_args(argv)
    scan = iter_corpus(args.paths, default_model=args.model)
    counts = {"valid": 0, "invalid": 0, "unknown": 0}
    for h in scan:
        r = check_history(h, budget_seconds=args.budget, nil_reads=args.nil_reads)
        counts[{True: "valid", False: "invalid"}.get(r.valid, "unknown")] += 1  # type: ignore[call-overload]
        if args.json:
            print(json.dumps({"history": h.id, **r.to_dict()}))
        else:
            print(render(r, h))
            if h.malformed:
                print(f"  {len(h.malformed)} malformed line(s), first: line {h.malformed[0].line}: {h.malformed[0].reason}")
    for s in scan.skipped:
        print(f"skipped {s.path}: {s.reason}", file=sys.stderr)
    summary = {**counts, "read": scan.read, "skipped": len(scan.skipped)}
    print(json.dumps({"summary": summary}) if args.json else f"summary: {summary}")
    if counts["invalid"]:
        return 1
    if counts["unknown"] or scan.skipped or scan.read == 0:
        return 2
    return 0


if __name__ == "__main__":
    with guard("python -m spark_validation.linearizability"):
        raise SystemExit(main())
