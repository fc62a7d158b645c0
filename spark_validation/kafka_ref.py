"""Kafka anomalies, pure-Python reference implementation (``kraft audit --no-spark``).

The same definitions as the DataFrame version in :mod:`spark_validation.kafka_spark`; a
Hypothesis test checks the two agree on random histories. The definitions follow the analysis
of Jepsen's Kafka workload (``jepsen.tests.kafka``, facts only; the code here is our own):

Accepted encodings (after :mod:`spark_validation.ingest.records` turned a history into op rows):

* Jepsen micro-ops: ``{"f": "send"|"poll"|"txn", "value": [mop, ...]}`` with ``["send", k, v]``
  (invocation) / ``["send", k, [offset, v]]`` (completion; offset may be null) and ``["poll"]`` /
  ``["poll", {k: [[offset, v], ...], ...}]``.
* Our simulator's flat form: ``{"f": "send", "key": k, "value": [offset, v]}`` (or ``v``) and
  ``{"f": "poll", "key": k, "value": [[offset, v], ...]}``.
* ``{"f": "assign"|"subscribe", "value": [k, ...]}`` change what a consumer reads.

Only completions (``ok``/``info``/``fail``) carry micro-ops. Each micro-op becomes a row
``(history, seq, op, process, type, mop, key, offset, value, pos)``; ``seq`` is the op's line,
``op`` its index, ``pos`` the position inside the op (``mop * 1_000_000 + pair``).

Version order of a key: every ``(offset, value)`` read by any completed poll, plus every send
with a known offset from an op that must have committed (``ok``, or ``info`` with one of its
sends read by an ``ok`` poll). An offset's *index* is its dense rank among the key's observed
offsets (gaps are transaction markers, as in Jepsen).

Anomalies (``kind``; ``evidence`` fields; values are text, offsets and ops integers):

inconsistent-offsets  one key offset bears several values: ``offset, values, ops``
duplicate             one value at several offsets of a key: ``value, offsets``
G1a                   an ``ok`` poll read a value whose send failed: ``value, offset, writer, reader``
lost-write            a committed send below the highest read index was never read by an ``ok``
                      poll: ``value, offset, writer, max_read{value, offset, op}``
poll-skip /           per process, the first read of a key in a completed poll (``ok``, ``info``
nonmonotonic-poll     or ``fail``: Jepsen compares every op's polls) is more than one index after /
                      not after the last read of it in the process's previous ``ok`` poll of that
                      key (reset by an ``ok``/``info`` assign/subscribe not naming the key):
                      ``process, values, offsets, delta, ops``
nonmonotonic-send     the same for sends of ``ok``/``info`` ops (only going back is reported)
int-poll-skip /       two consecutive reads of a key inside one op skip / go back:
int-nonmonotonic-poll ``values, offsets, delta, op``
int-send-skip /       two consecutive sends to a key inside one op skip / go back. A send with no
int-nonmonotonic-send offset takes the index where the version order has its value (Jepsen's
                      by-value lookup), so reads can prove it
precommitted-read     an op read a value it sent itself (Kafka consumers read committed only):
                      ``values, op``
unseen                ``ok`` sends never read by an ``ok`` poll, per key: ``count, values``
                      (the first 10). Informational: a poller may just not have caught up, so it
                      does not make a history invalid; lost-write is the provable form.
"""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Any, Iterable

from spark_validation.ingest.records import COMPLETIONS, parse_text, to_int, to_text

VIOLATIONS = (
    "inconsistent-offsets",
    "duplicate",
    "G1a",
    "lost-write",
    "poll-skip",
    "nonmonotonic-poll",
    "nonmonotonic-send",
    "int-poll-skip",
    "int-nonmonotonic-poll",
    "int-send-skip",
    "int-nonmonotonic-send",
    "precommitted-read",
    # jepsen.tests.kafka/analysis adds :unseen to :errors when the last entry of `unseen` is not
    # empty, and the checker's :valid? is (empty? bad-error-types): acknowledged sends no poll ever
    # read make a history invalid (Jepsen's final polls read everything). --allow-unseen keeps
    # them informational for histories that end without final polls.
    "unseen",
)
INFORMATIONAL: tuple[str, ...] = ()
KINDS = VIOLATIONS + INFORMATIONAL


def is_violation(anomaly: dict) -> bool:
    """Does this anomaly make a history invalid? Not the informational kinds, nor what Jepsen's
    checker allows (``jepsen.tests.kafka/allowed-error-types``; such cycle anomalies from
    :mod:`spark_validation.elle` carry ``evidence.allowed``)."""
    ev = anomaly.get("evidence")
    return anomaly["kind"] not in INFORMATIONAL and not (isinstance(ev, dict) and ev.get("allowed"))
KAFKA_FS = ("send", "poll", "txn")
UNSEEN_SAMPLE = 10
POS_STRIDE = 1_000_000


EMPTY_GRAPH = ("empty transaction graph: no completed send, poll or txn op carries a value, so "
               "nothing can be checked (Elle's :empty-transaction-graph: valid? unknown)")
_NO_DATA = (None, "[]", "null", "{}")


def has_data(row: dict) -> bool:
    """Does this op row give the Kafka checks anything to look at? (A completed send/poll/txn
    whose value is not empty.) A history with none has an empty transaction graph."""
    return row["type"] in COMPLETIONS and row["f"] in KAFKA_FS and row["value"] not in _NO_DATA


def has_data_column(F: Any) -> Any:
    """:func:`has_data` as a Spark column expression (``F`` is ``pyspark.sql.functions``)."""
    c = F.col
    return (c("type").isin(*COMPLETIONS) & c("f").isin(*KAFKA_FS) & c("value").isNotNull()
            & ~c("value").isin(*[x for x in _NO_DATA if x is not None]))


def _send_parts(x: Any) -> tuple[int | None, str | None]:
    """``[offset, v]`` -> (offset, v); anything else is a value with unknown offset."""
    if isinstance(x, list) and len(x) == 2:
        return to_int(x[0]), to_text(x[1])
    return None, to_text(x)


def micro_ops(row: dict) -> list[dict]:
    """The micro-op rows of one op row (empty for invocations and non-Kafka ops)."""
    if row["type"] not in COMPLETIONS or row["f"] not in KAFKA_FS:
        return []
    base = {
        "history": row["history"], "seq": row["line"], "op": row["index"],
        "process": row["process"], "type": row["type"],
    }
    out: list[dict] = []

    def add(mop: str, key: str | None, offset: int | None, value: str | None, pos: int) -> None:
        if key is None or value is None:
            return
        out.append({**base, "mop": mop, "key": key, "offset": offset, "value": value, "pos": pos})

    if row["key"] is not None and row["f"] in ("send", "poll"):
        if row["f"] == "send":
            if row["value"] is not None:
                off, v = _send_parts(parse_text(row["value"]))
                add("send", row["key"], off, v, 0)
        else:
            pairs = parse_text(row["value"])
            if isinstance(pairs, list):
                for j, pair in enumerate(pairs):
                    if isinstance(pair, list) and len(pair) >= 2:
                        add("poll", row["key"], to_int(pair[0]), to_text(pair[1]), j)
        return out

    mops = parse_text(row["value"])
    if not isinstance(mops, list):
        return out
    for i, mop in enumerate(mops):
        if not isinstance(mop, list) or not mop:
            continue
        name = to_text(mop[0])
        if name == "send" and len(mop) >= 3:
            off, v = _send_parts(mop[2])
            add("send", to_text(mop[1]), off, v, i * POS_STRIDE)
        elif name == "poll" and len(mop) >= 2 and isinstance(mop[1], dict):
            for k, pairs in mop[1].items():
                if not isinstance(pairs, list):
                    continue
                for j, pair in enumerate(pairs):
                    if isinstance(pair, list) and len(pair) >= 2:
                        add("poll", to_text(k), to_int(pair[0]), to_text(pair[1]), i * POS_STRIDE + j)
    return out


def assignments(rows: Iterable[dict]) -> list[dict]:
    """``ok``/``info`` assign/subscribe ops: ``(history, seq, process, keys)``."""
    out = []
    for r in rows:
        if r["f"] in ("assign", "subscribe") and r["type"] in ("ok", "info"):
            ks = parse_text(r["value"])
            keys = [to_text(k) for k in ks] if isinstance(ks, list) else []
            out.append({"history": r["history"], "seq": r["line"], "process": r["process"], "keys": keys})
    return out


def _anomaly(history: str, kind: str, key: str, evidence: dict) -> dict:
    return {"history": history, "kind": kind, "key": key, "evidence": evidence}


def check_rows(rows: list[dict]) -> list[dict]:
    """All Kafka anomalies of the op rows (any number of histories), as anomaly dicts with a
    ``history`` field. Sorted by (history, kind, key, evidence) for stable output."""
    by_history: dict[str, list[dict]] = defaultdict(list)
    for r in rows:
        by_history[r["history"]].append(r)
    out: list[dict] = []
    for hid, hrows in by_history.items():
        out.extend(_check_history(hid, hrows))
    return sort_anomalies(out)


def sort_anomalies(anoms: list[dict]) -> list[dict]:
    return sorted(anoms, key=lambda a: (a["history"], a["kind"], str(a["key"]), json.dumps(a["evidence"], sort_keys=True)))


def _check_history(hid: str, rows: list[dict]) -> list[dict]:
    rows = sorted(rows, key=lambda r: r["line"])
    M = [m for r in rows for m in micro_ops(r)]
    out: list[dict] = []
    sends = [m for m in M if m["mop"] == "send"]
    reads = [m for m in M if m["mop"] == "poll"]
    ok_reads = [m for m in reads if m["type"] == "ok"]
    ok_read_kv = {(m["key"], m["value"]) for m in ok_reads}

    # ops that must have committed: ok, or info with a send read by an ok poll
    info_proven = {m["op"] for m in sends if m["type"] == "info" and (m["key"], m["value"]) in ok_read_kv}
    committed = [m for m in sends if m["type"] == "ok" or (m["type"] == "info" and m["op"] in info_proven)]

    # version order observations
    vo = [m for m in reads if m["offset"] is not None] + [m for m in committed if m["offset"] is not None]
    offsets_of_key: dict[str, set[int]] = defaultdict(set)
    for m in vo:
        offsets_of_key[m["key"]].add(m["offset"])
    index: dict[tuple[str, int], int] = {}
    offset_at: dict[tuple[str, int], int] = {}
    for k, offs in offsets_of_key.items():
        for i, o in enumerate(sorted(offs)):
            index[(k, o)] = i
            offset_at[(k, i)] = o

    # a value's index: where the version order has it (the last such index if it sits at several
    # offsets, as the by-value map of jepsen.tests.kafka/version-orders keeps the last)
    value_idx: dict[tuple[str, str], int] = {}
    for m in vo:
        i = index[(m["key"], m["offset"])]
        kv = (m["key"], m["value"])
        value_idx[kv] = max(value_idx.get(kv, i), i)

    def idx(m: dict) -> int | None:
        if m["offset"] is not None:
            return index.get((m["key"], m["offset"]))
        if m["mop"] == "send":
            # a send whose completion carries no offset takes the index where reads saw its value
            # (Jepsen looks sends up by value in int-send-skip+nonmonotonic-cases and
            # nonmonotonic-send-cases), so an internal send skip can be proven from reads
            return value_idx.get((m["key"], m["value"]))
        return None

    # inconsistent-offsets
    at_offset: dict[tuple[str, int], list[dict]] = defaultdict(list)
    for m in vo:
        at_offset[(m["key"], m["offset"])].append(m)
    for (k, o), ms in at_offset.items():
        vals = sorted({m["value"] for m in ms})
        if len(vals) > 1:
            out.append(_anomaly(hid, "inconsistent-offsets", k,
                                {"offset": o, "values": vals, "ops": sorted({m["op"] for m in ms})}))

    # duplicate
    offs_of_value: dict[tuple[str, str], set[int]] = defaultdict(set)
    for m in vo:
        offs_of_value[(m["key"], m["value"])].add(m["offset"])
    for (k, v), offs in offs_of_value.items():
        if len(offs) > 1:
            out.append(_anomaly(hid, "duplicate", k, {"value": v, "offsets": sorted(offs)}))

    # G1a: ok read of a failed send
    failed: dict[tuple[str, str], set[int]] = defaultdict(set)
    for m in sends:
        if m["type"] == "fail":
            failed[(m["key"], m["value"])].add(m["op"])
    seen_g1a = set()
    for m in ok_reads:
        for w in sorted(failed.get((m["key"], m["value"]), ())):
            t = (m["key"], m["value"], m["offset"], w, m["op"])
            if t not in seen_g1a:
                seen_g1a.add(t)
                out.append(_anomaly(hid, "G1a", m["key"],
                                    {"value": m["value"], "offset": m["offset"], "writer": w, "reader": m["op"]}))

    # lost-write
    first_idx: dict[tuple[str, str], int] = {}
    last_idx: dict[tuple[str, str], int] = {}
    for m in vo:
        i = index[(m["key"], m["offset"])]
        kv = (m["key"], m["value"])
        first_idx[kv] = min(first_idx.get(kv, i), i)
        last_idx[kv] = max(last_idx.get(kv, i), i)
    bound: dict[str, int] = {}
    for k, v in ok_read_kv:
        if (k, v) in first_idx:
            bound[k] = max(bound.get(k, -1), first_idx[(k, v)])
    readers: dict[tuple[str, str], int] = {}
    for m in ok_reads:
        kv = (m["key"], m["value"])
        readers[kv] = min(readers.get(kv, m["op"]), m["op"])
    writer: dict[tuple[str, str], int] = {}
    for m in committed:
        kv = (m["key"], m["value"])
        writer[kv] = min(writer.get(kv, m["op"]), m["op"])
    max_read: dict[str, tuple[str, int]] = {}
    for (k, v) in ok_read_kv:
        if (k, v) in first_idx and first_idx[(k, v)] == bound.get(k):
            cand = (v, readers[(k, v)])
            if k not in max_read or cand < max_read[k]:
                max_read[k] = cand
    for (k, v), li in last_idx.items():
        if k in bound and li <= bound[k] and (k, v) not in ok_read_kv and (k, v) in writer:
            mv, mop = max_read[k]
            out.append(_anomaly(hid, "lost-write", k, {
                "value": v, "offset": offset_at[(k, first_idx[(k, v)])], "writer": writer[(k, v)],
                "max_read": {"value": mv, "offset": offset_at[(k, bound[k])], "op": mop},
            }))

    # per-op, per-key sequences (ordered by pos)
    def per_op_key(ms: list[dict]) -> dict[tuple[int, str], list[dict]]:
        g: dict[tuple[int, str], list[dict]] = defaultdict(list)
        for m in ms:
            g[(m["seq"], m["key"])].append(m)
        for v in g.values():
            v.sort(key=lambda m: m["pos"])
        return g

    reads_g = per_op_key(reads)
    sends_g = per_op_key(sends)

    # internal (within one op)
    for g, skip_kind, nm_kind, report_skip in (
        (reads_g, "int-poll-skip", "int-nonmonotonic-poll", True),
        (sends_g, "int-send-skip", "int-nonmonotonic-send", True),
    ):
        for (_seq, k), ms in g.items():
            for a, b in zip(ms, ms[1:]):
                ia, ib = idx(a), idx(b)
                if ia is None or ib is None:
                    continue
                d = ib - ia
                kind = skip_kind if d > 1 and report_skip else nm_kind if d < 1 else None
                if kind:
                    out.append(_anomaly(hid, kind, k, {"values": [a["value"], b["value"]],
                                                       "offsets": [a["offset"], b["offset"]],
                                                       "delta": d, "op": a["op"]}))

    # precommitted-read: an op read what it sent itself
    for (seq, k), ss in sends_g.items():
        rs = reads_g.get((seq, k), [])
        bad = sorted({m["value"] for m in ss} & {m["value"] for m in rs})
        if bad:
            out.append(_anomaly(hid, "precommitted-read", k, {"values": bad, "op": ss[0]["op"]}))

    # cross-op per process: poll-skip / nonmonotonic-poll / nonmonotonic-send
    assigns = [a for a in assignments(rows)]

    def reset_between(process: str, key: str, lo: int, hi: int) -> bool:
        return any(a["process"] == process and lo < a["seq"] < hi and key not in a["keys"] for a in assigns)

    def cross(g: dict, types: tuple[str, ...], skip_kind: str | None, nm_kind: str, also: tuple[str, ...] = ()) -> None:
        """Consecutive ops of ``types`` by one process on one key; an op of a type in ``also``
        is compared with the last op of ``types`` before it but does not become the last one."""
        seqs: dict[tuple[str, str], list[tuple[int, list[dict]]]] = defaultdict(list)
        for (seq, k), ms in g.items():
            if ms[0]["type"] in types + also:
                seqs[(ms[0]["process"], k)].append((seq, ms))
        for (p, k), lst in seqs.items():
            lst.sort(key=lambda t: t[0])
            pairs = []
            last = None
            for s2, m2 in lst:
                if last is not None:
                    pairs.append((last, (s2, m2)))
                if m2[0]["type"] in types:
                    last = (s2, m2)
            for (s1, m1), (s2, m2) in pairs:
                if reset_between(p, k, s1, s2):
                    continue
                a, b = m1[-1], m2[0]
                ia, ib = idx(a), idx(b)
                if ia is None or ib is None:
                    continue
                d = ib - ia
                kind = skip_kind if (d > 1 and skip_kind) else nm_kind if d < 1 else None
                if kind:
                    out.append(_anomaly(hid, kind, k, {"process": p, "values": [a["value"], b["value"]],
                                                       "offsets": [a["offset"], b["offset"]], "delta": d,
                                                       "ops": [a["op"], b["op"]]}))

    # jepsen.tests.kafka/poll-skip+nonmonotonic-cases-per-process: every op's polls are compared
    # with the last ok op's, so a poll inside an info (crashed) or failed op can still skip or go
    # back; only ok ops move the process's position
    cross(reads_g, ("ok",), "poll-skip", "nonmonotonic-poll", also=("info", "fail"))
    cross(sends_g, ("ok", "info"), None, "nonmonotonic-send")

    # unseen (informational)
    unseen: dict[str, set[str]] = defaultdict(set)
    for m in sends:
        if m["type"] == "ok" and (m["key"], m["value"]) not in ok_read_kv:
            unseen[m["key"]].add(m["value"])
    for k, vs in unseen.items():
        out.append(_anomaly(hid, "unseen", k, {"count": len(vs), "values": sorted(vs)[:UNSEEN_SAMPLE]}))
    return out


def op_count(rows: list[dict]) -> int:
    """Operations in a history: completions (an invoke/complete pair is one operation)."""
    return sum(1 for r in rows if r["type"] in COMPLETIONS)
