"""Kafka anomalies: the reference, one plain-Python function per rule (:data:`RULES`).

This is the definition the numpy kernel (:mod:`.kernel`) is held to: differential tests
(tests/spark_validation/test_kafka_arrow.py) check both report exactly the same anomalies and
evidence. The rules follow the analysis of Jepsen's Kafka workload (``jepsen.tests.kafka``; each
rule names the function it follows; facts only, the code here is our own):

Accepted encodings (of the op rows, :class:`~spark_validation.ingest.records.OpRow`, that
:mod:`spark_validation.ingest` reads a history into):

* Jepsen micro-ops: ``{"f": "send"|"poll"|"txn", "value": [mop, ...]}`` with ``["send", k, v]``
  (invocation) / ``["send", k, [offset, v]]`` (completion; offset may be null) and ``["poll"]`` /
  ``["poll", {k: [[offset, v], ...], ...}]``.
* Our simulator's flat form: ``{"f": "send", "key": k, "value": [offset, v]}`` (or ``v``) and
  ``{"f": "poll", "key": k, "value": [[offset, v], ...]}``.
* ``{"f": "assign"|"subscribe", "value": [k, ...]}`` change what a consumer reads.

Only completions (``ok``/``info``/``fail``) carry micro-ops. Each micro-op becomes a :class:`MicroOp`
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

from collections import defaultdict
from typing import Any, Iterable

import attrs

from spark_validation.checks.anomaly import Anomaly
from spark_validation.checks.kafka.anomaly import (
    Duplicate, FailedRead, InnerStep, KafkaAnomaly, LostWrite, MaxRead, OffsetConflict, OwnRead, ProcessStep, Unseen,
    sorted_anomalies,
)
from spark_validation.ingest.records import COMPLETIONS, OpRow, parse_text, to_int, to_text

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


def is_violation(anomaly: Anomaly) -> bool:
    """Does this anomaly make a history invalid? Not the informational kinds, nor what the
    options or Jepsen's checker allow (``--allow-unseen``; ``jepsen.tests.kafka/allowed-error-types``
    for the cycle anomalies of :mod:`spark_validation.checks.elle`): those are ``allowed``."""
    return anomaly.kind not in INFORMATIONAL and not anomaly.allowed
KAFKA_FS = ("send", "poll", "txn")
UNSEEN_SAMPLE = 10
POS_STRIDE = 1_000_000


EMPTY_GRAPH = ("empty transaction graph: no completed send, poll or txn op carries a value, so "
               "nothing can be checked (Elle's :empty-transaction-graph: valid? unknown)")
_NO_DATA = (None, "[]", "null", "{}")


def has_data(type: str | None, f: str | None, value: str | None) -> bool:
    """Does an op row of this ``type``, ``f`` and ``value`` give the Kafka checks anything to look
    at? (A completed send/poll/txn whose value is not empty.) A history with none has an empty
    transaction graph."""
    return type in COMPLETIONS and f in KAFKA_FS and value not in _NO_DATA


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


@attrs.frozen
class MicroOp:
    """One send or poll of a (key, offset, value) inside a completed op row: what every rule
    reads. ``seq``, ``op``, ``process``, ``type`` are the op row's (``seq`` its line, ``op`` its
    index); ``pos`` orders the micro-ops of one op (``mop index * POS_STRIDE + pair``)."""

    history: str
    seq: int
    op: int
    process: str | None
    type: str
    mop: str  # "send" | "poll"
    key: str
    offset: int | None
    value: str
    pos: int


@attrs.frozen
class Assignment:
    """An ``ok``/``info`` assign or subscribe op: the keys ``process`` reads from line ``seq`` on."""

    history: str
    seq: int
    process: str | None
    keys: list[str | None]


def micro_ops(row: OpRow) -> list[MicroOp]:
    """The micro-ops of one op row (empty for invocations and non-Kafka ops)."""
    if row.type not in COMPLETIONS or row.f not in KAFKA_FS:
        return []
    out: list[MicroOp] = []

    def add(mop: str, key: str | None, offset: int | None, value: str | None, pos: int) -> None:
        if key is None or value is None:
            return
        out.append(MicroOp(row.history, row.line, row.index, row.process, row.type, mop, key, offset, value, pos))

    if row.key is not None and row.f in ("send", "poll"):
        if row.f == "send":
            if row.value is not None:
                off, v = _send_parts(parse_text(row.value))
                add("send", row.key, off, v, 0)
        else:
            pairs = parse_text(row.value)
            if isinstance(pairs, list):
                for j, pair in enumerate(pairs):
                    if isinstance(pair, list) and len(pair) >= 2:
                        add("poll", row.key, to_int(pair[0]), to_text(pair[1]), j)
        return out

    mops = parse_text(row.value)
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


def kernel_mops(row: OpRow) -> list[tuple[str, str | None, int | None, str | None, int]]:
    """What the kernel reads of one op row, as ``(mop, key, offset, value, pos)``: its micro-ops
    (:func:`micro_ops`), or for an assignment one ``assign`` row with no key (the consumer's
    previous keys end) and one per key it names (:func:`assignments`)."""
    out = [(m.mop, m.key, m.offset, m.value, m.pos) for m in micro_ops(row)]
    for a in assignments([row]):
        out.append(("assign", None, None, None, 0))
        out.extend(("assign", k, None, None, 0) for k in a.keys if k is not None)
    return out


def assignments(rows: Iterable[OpRow]) -> list[Assignment]:
    """The ``ok``/``info`` assign/subscribe ops among ``rows``."""
    out = []
    for r in rows:
        if r.f in ("assign", "subscribe") and r.type in ("ok", "info"):
            ks = parse_text(r.value)
            keys = [to_text(k) for k in ks] if isinstance(ks, list) else []
            out.append(Assignment(r.history, r.line, r.process, keys))
    return out


def check_rows(rows: list[OpRow]) -> list[KafkaAnomaly]:
    """All Kafka anomalies of the op rows (any number of histories), sorted by (history, kind,
    key, evidence) for stable output."""
    by_history: dict[str, list[OpRow]] = defaultdict(list)
    for r in rows:
        by_history[r.history].append(r)
    out: list[KafkaAnomaly] = []
    for hid, hrows in by_history.items():
        out.extend(_check_history(hid, hrows))
    return sorted_anomalies(out)


class _Facts:
    """What every rule reads from one history's micro-ops: the sends and reads, which sends must
    have committed, and the version order of each key (an offset's index, a value's index)."""

    def __init__(self, rows: list[OpRow]) -> None:
        self.rows = rows
        M = [m for r in rows for m in micro_ops(r)]
        self.sends = [m for m in M if m.mop == "send"]
        self.reads = [m for m in M if m.mop == "poll"]
        self.ok_reads = [m for m in self.reads if m.type == "ok"]
        self.ok_read_kv = {(m.key, m.value) for m in self.ok_reads}
        # ops that must have committed: ok, or info with a send read by an ok poll
        proven = {m.op for m in self.sends if m.type == "info" and (m.key, m.value) in self.ok_read_kv}
        self.committed = [m for m in self.sends
                          if m.type == "ok" or (m.type == "info" and m.op in proven)]
        # version order observations
        self.vo = ([m for m in self.reads if m.offset is not None]
                   + [m for m in self.committed if m.offset is not None])
        self._rank_offsets()
        self.reads_g = _per_op_key(self.reads)
        self.sends_g = _per_op_key(self.sends)

    def _rank_offsets(self) -> None:
        offsets_of_key: dict[str, set[int]] = defaultdict(set)
        for m in self.vo:
            offsets_of_key[m.key].add(m.offset)
        self.index: dict[tuple[str, int], int] = {}
        self.offset_at: dict[tuple[str, int], int] = {}
        for k, offs in offsets_of_key.items():
            for i, o in enumerate(sorted(offs)):
                self.index[(k, o)] = i
                self.offset_at[(k, i)] = o
        # a value's index: where the version order has it (the last such index if it sits at
        # several offsets, as the by-value map of jepsen.tests.kafka/version-orders keeps the last)
        self.value_idx: dict[tuple[str, str], int] = {}
        for m in self.vo:
            i = self.index[(m.key, m.offset)]
            kv = (m.key, m.value)
            self.value_idx[kv] = max(self.value_idx.get(kv, i), i)

    def idx(self, m: MicroOp) -> int | None:
        """A micro-op's index in its key's version order, or None where it has none."""
        if m.offset is not None:
            return self.index.get((m.key, m.offset))
        if m.mop == "send":
            # a send whose completion carries no offset takes the index where reads saw its value
            # (Jepsen looks sends up by value in int-send-skip+nonmonotonic-cases and
            # nonmonotonic-send-cases), so an internal send skip can be proven from reads
            return self.value_idx.get((m.key, m.value))
        return None


def _per_op_key(ms: list[MicroOp]) -> dict[tuple[int, str], list[MicroOp]]:
    """Micro-ops grouped by (op line, key), each group in the op's order (``pos``)."""
    g: dict[tuple[int, str], list[MicroOp]] = defaultdict(list)
    for m in ms:
        g[(m.seq, m.key)].append(m)
    for v in g.values():
        v.sort(key=lambda m: m.pos)
    return g


def _check_history(hid: str, rows: list[OpRow]) -> list[KafkaAnomaly]:
    facts = _Facts(sorted(rows, key=lambda r: r.line))
    out: list[KafkaAnomaly] = []
    for rule in RULES:
        out.extend(KafkaAnomaly(hid, kind, key, ev) for kind, key, ev in rule(facts))
    return out


Found = Iterable[tuple[str, str, Any]]
"""What a rule yields: (kind, key, evidence) per anomaly."""


def inconsistent_offsets(f: _Facts) -> Found:
    """One offset of a key bears several values (the :inconsistent-offsets errors of
    jepsen.tests.kafka/version-orders)."""
    at_offset: dict[tuple[str, int], list[MicroOp]] = defaultdict(list)
    for m in f.vo:
        at_offset[(m.key, m.offset)].append(m)
    for (k, o), ms in at_offset.items():
        vals = sorted({m.value for m in ms})
        if len(vals) > 1:
            yield "inconsistent-offsets", k, OffsetConflict(o, vals, sorted({m.op for m in ms}))


def duplicate(f: _Facts) -> Found:
    """One value sits at several offsets of a key (jepsen.tests.kafka/duplicate-cases)."""
    offs_of_value: dict[tuple[str, str], set[int]] = defaultdict(set)
    for m in f.vo:
        offs_of_value[(m.key, m.value)].add(m.offset)
    for (k, v), offs in offs_of_value.items():
        if len(offs) > 1:
            yield "duplicate", k, Duplicate(v, sorted(offs))


def g1a(f: _Facts) -> Found:
    """An ``ok`` poll read a value whose send failed (jepsen.tests.kafka/g1a-cases)."""
    failed: dict[tuple[str, str], set[int]] = defaultdict(set)
    for m in f.sends:
        if m.type == "fail":
            failed[(m.key, m.value)].add(m.op)
    seen = set()
    for m in f.ok_reads:
        for w in sorted(failed.get((m.key, m.value), ())):
            t = (m.key, m.value, m.offset, w, m.op)
            if t not in seen:
                seen.add(t)
                yield "G1a", m.key, FailedRead(m.value, m.offset, w, m.op)


def lost_write(f: _Facts) -> Found:
    """A committed value no ``ok`` poll read, whose last index is at or below the highest index
    an ``ok`` poll reached, each read value counted at its first index
    (jepsen.tests.kafka/lost-write-cases)."""
    first_idx: dict[tuple[str, str], int] = {}
    last_idx: dict[tuple[str, str], int] = {}
    for m in f.vo:
        i = f.index[(m.key, m.offset)]
        kv = (m.key, m.value)
        first_idx[kv] = min(first_idx.get(kv, i), i)
        last_idx[kv] = max(last_idx.get(kv, i), i)
    bound: dict[str, int] = {}
    for k, v in f.ok_read_kv:
        if (k, v) in first_idx:
            bound[k] = max(bound.get(k, -1), first_idx[(k, v)])
    readers = _first_op(f.ok_reads)
    writer = _first_op(f.committed)
    max_read: dict[str, tuple[str, int]] = {}
    for (k, v) in f.ok_read_kv:
        if (k, v) in first_idx and first_idx[(k, v)] == bound.get(k):
            cand = (v, readers[(k, v)])
            if k not in max_read or cand < max_read[k]:
                max_read[k] = cand
    for (k, v), li in last_idx.items():
        if k in bound and li <= bound[k] and (k, v) not in f.ok_read_kv and (k, v) in writer:
            mv, mop = max_read[k]
            yield "lost-write", k, LostWrite(v, f.offset_at[(k, first_idx[(k, v)])], writer[(k, v)],
                                             MaxRead(mv, f.offset_at[(k, bound[k])], mop))


def _first_op(ms: list[MicroOp]) -> dict[tuple[str, str], int]:
    """Per (key, value), the lowest op index among ``ms``."""
    first: dict[tuple[str, str], int] = {}
    for m in ms:
        kv = (m.key, m.value)
        first[kv] = min(first.get(kv, m.op), m.op)
    return first


def internal(f: _Facts) -> Found:
    """Two consecutive reads, or sends, of a key inside one op skip or go back
    (jepsen.tests.kafka/int-poll-skip+nonmonotonic-cases, int-send-skip+nonmonotonic-cases)."""
    for g, skip_kind, nm_kind in ((f.reads_g, "int-poll-skip", "int-nonmonotonic-poll"),
                                  (f.sends_g, "int-send-skip", "int-nonmonotonic-send")):
        for (_seq, k), ms in g.items():
            for a, b in zip(ms, ms[1:]):
                ia, ib = f.idx(a), f.idx(b)
                if ia is None or ib is None:
                    continue
                d = ib - ia
                kind = skip_kind if d > 1 else nm_kind if d < 1 else None
                if kind:
                    yield kind, k, InnerStep((a.value, b.value), (a.offset, b.offset), d, a.op)


def precommitted_read(f: _Facts) -> Found:
    """An op read a value it sent itself: Kafka consumers read committed records only
    (jepsen.tests.kafka/precommitted-read-cases)."""
    for (seq, k), ss in f.sends_g.items():
        rs = f.reads_g.get((seq, k), [])
        bad = sorted({m.value for m in ss} & {m.value for m in rs})
        if bad:
            yield "precommitted-read", k, OwnRead(bad, ss[0].op)


def cross_polls(f: _Facts) -> Found:
    """Per process and key, the first read of an op skips or goes back from the last read of the
    process's previous ``ok`` poll. jepsen.tests.kafka/poll-skip+nonmonotonic-cases-per-process
    compares every op's polls with the last ok op's, so a poll inside an info (crashed) or failed
    op can still skip or go back; only ok ops move the process's position."""
    return _cross(f, f.reads_g, ("ok",), "poll-skip", "nonmonotonic-poll", also=("info", "fail"))


def cross_sends(f: _Facts) -> Found:
    """Per process and key, an ``ok``/``info`` op's first send goes back from the previous one's
    last (jepsen.tests.kafka/nonmonotonic-send-cases); a forward skip is producers interleaving."""
    return _cross(f, f.sends_g, ("ok", "info"), None, "nonmonotonic-send")


def _cross(f: _Facts, g: dict, types: tuple[str, ...], skip_kind: str | None, nm_kind: str,
           also: tuple[str, ...] = ()) -> Found:
    """Consecutive ops of ``types`` by one process on one key; an op of a type in ``also``
    is compared with the last op of ``types`` before it but does not become the last one."""
    assigns = assignments(f.rows)
    for (p, k), lst in _ops_per_process_key(g, types + also).items():
        last = None
        for s2, m2 in lst:
            if last is not None and not _reset_between(assigns, p, k, last[0], s2):
                a, b = last[1][-1], m2[0]
                ia, ib = f.idx(a), f.idx(b)
                if ia is not None and ib is not None:
                    d = ib - ia
                    kind = skip_kind if (d > 1 and skip_kind) else nm_kind if d < 1 else None
                    if kind:
                        yield kind, k, ProcessStep(p, (a.value, b.value), (a.offset, b.offset), d,
                                                   (a.op, b.op))
            if m2[0].type in types:
                last = (s2, m2)


def _ops_per_process_key(g: dict, types: tuple[str, ...]) -> dict[tuple[str, str], list[tuple[int, list[MicroOp]]]]:
    """The op groups of ``g`` whose op type is in ``types``, per (process, key), in op order."""
    seqs: dict[tuple[str, str], list[tuple[int, list[MicroOp]]]] = defaultdict(list)
    for (seq, k), ms in g.items():
        if ms[0].type in types:
            seqs[(ms[0].process, k)].append((seq, ms))
    for lst in seqs.values():
        lst.sort(key=lambda t: t[0])
    return seqs


def _reset_between(assigns: list[Assignment], process: str, key: str, lo: int, hi: int) -> bool:
    """Did an ``ok``/``info`` assign or subscribe by ``process`` strictly between the op lines
    ``lo`` and ``hi`` leave ``key`` out?"""
    return any(a.process == process and lo < a.seq < hi and key not in a.keys for a in assigns)


def unseen(f: _Facts) -> Found:
    """``ok`` sends never read by an ``ok`` poll, per key (the :unseen of jepsen.tests.kafka/analysis)."""
    vals: dict[str, set[str]] = defaultdict(set)
    for m in f.sends:
        if m.type == "ok" and (m.key, m.value) not in f.ok_read_kv:
            vals[m.key].add(m.value)
    for k, vs in vals.items():
        yield "unseen", k, Unseen(len(vs), sorted(vs)[:UNSEEN_SAMPLE])


RULES = (inconsistent_offsets, duplicate, g1a, lost_write, internal, precommitted_read, cross_polls, cross_sends,
         unseen)
"""Every Kafka anomaly rule, each a function of one history's :class:`_Facts`."""
