"""The dependency graph of a Kafka history in plain Python: the definition the vectorised build
(:mod:`.graph`) is held to.

Vertices are the completed send/poll/txn ops of client processes (not ``nemesis``). Edges between
two different completed ops T1, T2 (facts from ``jepsen.tests.kafka``, jepsen-io/jepsen c4c7473,
and ``elle.core``, jepsen-io/elle ccdee6f; code our own):

``ww``  (``jepsen.tests.kafka/ww-graph``, only with ``--ww-deps``, Jepsen's ``:ww-deps``) T2 sent
        v2 to key k, v2's last index j in k's version order is > 0 (as ``by-value`` keeps), v1 is
        the value at index j - 1 and T1 is v1's writer (``previous-value``).
``wr``  (``jepsen.tests.kafka/wr-graph``) T1 sent v to k and T2 polled v from k. Every completed
        op counts (``readers-of``/``writer-of``: all non-invoke ops); the writer of a value is the
        last op in history order that sent it.
``rw``  (``--rw-deps``; Jepsen draws none, its ``rw-graph`` is commented out in ``graph``) T1's
        highest read of k was v1 and T2 sent the value right after v1 in k's version order.
``process`` (``--process-order``; ``elle.core/process-graph``) consecutive ``ok`` ops of one
        process.
``realtime`` (``elle.core/realtime-graph``, which Jepsen adds for ``:strict-serializable``)
        T1 completed ``ok`` before T2 was invoked, transitively reduced (:func:`realtime_pairs`).

The version order is the Kafka checks' (:func:`.kafka.rules.micro_ops`): every polled ``(offset, value)``
and every send with a known offset of an op that must have committed; an offset's value is the
smallest value seen there.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any, Callable, Iterable

import attrs

from spark_validation.checks.elle.search import KIND_NAMES, enabled_types
from spark_validation.checks.kafka import rules as kafka_rules
from spark_validation.checks.kafka.rules import MicroOp
from spark_validation.ingest.records import OpRow

EDGE_COLUMNS = ("history", "src", "sp", "dst", "dp", "kind", "key", "value", "value2")
KIND = {k: i for i, k in enumerate(KIND_NAMES)}

Vertex = tuple[int, str]  # (op index, process)
EdgeFn = Callable[[Vertex, Vertex, str, Any, Any, Any], None]


@attrs.frozen
class CycleOptions:
    ww_deps: bool = False  # Jepsen's :ww-deps: infer ww edges from the version order
    rw_deps: bool = False  # draw rw (anti-dependency) edges too: G-single-item, G2-item, ... become visible
    process: bool = False  # Elle's process graph: each process's ok ops in order (-process variants)
    realtime: bool = False  # Elle's realtime graph: a < b if a completed ok before b was invoked (-realtime)

    @property
    def kinds(self) -> tuple[str, ...]:
        return (("ww",) * self.ww_deps + ("wr",) + ("rw",) * self.rw_deps + ("process",) * self.process
                + ("realtime",) * self.realtime)

    @property
    def types(self) -> tuple[str, ...]:
        """The anomaly types searched, in Elle's order."""
        return enabled_types(KIND[k] for k in self.kinds)


def client(process: Any) -> bool:
    return process != "nemesis"


def edge_sort_key(e: tuple) -> tuple:
    return (e[0], e[1], e[3], e[5])


def edges_ref(rows: Iterable[OpRow], opts: CycleOptions) -> list[tuple]:
    """Dependency edges of the op rows (any number of histories), as tuples in
    :data:`EDGE_COLUMNS` order, one per (history, src, dst, kind) with the smallest
    (key, value, value2) as its example."""
    by_history: dict[str, list[OpRow]] = defaultdict(list)
    for r in rows:
        by_history[r.history].append(r)
    out: list[tuple] = []
    for hid, hrows in by_history.items():
        out.extend(_edges_of(hid, sorted(hrows, key=lambda r: r.line), opts))
    return sorted(out, key=edge_sort_key)


class _Edges:
    """One edge per (src, dst, kind), keeping the smallest (key, value, value2) as its example."""

    def __init__(self) -> None:
        self.best: dict[tuple[int, int, str], tuple] = {}

    def add(self, src: Vertex, dst: Vertex, kind: str, key: Any, value: Any, value2: Any) -> None:
        if src[0] == dst[0]:
            return
        k = (src[0], dst[0], kind)
        ex = (key or "", value or "", value2 if value2 is not None else "")
        if k not in self.best or ex < self.best[k][0]:
            self.best[k] = (ex, src[1], dst[1], (key, value, value2))

    def tuples(self, hid: str) -> list[tuple]:
        return [(hid, s, sp, d, dp, kind, *ex) for (s, d, kind), (_, sp, dp, ex) in self.best.items()]


def _edges_of(hid: str, rows: list[OpRow], opts: CycleOptions) -> list[tuple]:
    rows = [r for r in rows if r.f in kafka_rules.KAFKA_FS and client(r.process)]
    mops = [m for r in rows for m in kafka_rules.micro_ops(r)]
    writer, readers = writers_and_readers(mops)
    edges = _Edges()
    if opts.realtime:
        for a, ap, c, cp in realtime_pairs(rows):
            edges.add((a, ap), (c, cp), "realtime", None, None, None)
    if opts.process:
        _process_edges(rows, edges.add)
    for kv, rs in readers.items():
        w = writer.get(kv)
        if w is not None:
            for r in rs:
                edges.add((w[1], w[2]), r, "wr", kv[0], kv[1], None)
    if opts.ww_deps or opts.rw_deps:
        order, idx = version_order(mops)
        if opts.ww_deps:
            _ww_edges(order, writer, edges.add)
        if opts.rw_deps:
            _rw_edges(mops, order, idx, writer, edges.add)
    return edges.tuples(hid)


def writers_and_readers(mops: list[MicroOp]) -> tuple[dict, dict]:
    """``jepsen.tests.kafka/writer-of`` (the last op in history order that sent (k, v), as
    ``(seq, op, process)``) and ``readers-of`` (the ``(op, process)`` that polled (k, v))."""
    writer: dict[tuple[str, str], tuple[int, int, str]] = {}
    readers: dict[tuple[str, str], set[Vertex]] = defaultdict(set)
    for m in mops:
        kv = (m.key, m.value)
        if m.mop == "send":
            if kv not in writer or m.seq > writer[kv][0]:
                writer[kv] = (m.seq, m.op, m.process)
        else:
            readers[kv].add((m.op, m.process))
    return writer, readers


def _process_edges(rows: list[OpRow], edge: EdgeFn) -> None:
    """``elle.core/process-graph``: each process's ok ops in history order."""
    last: dict[str, Vertex] = {}
    for r in rows:
        if r.type == "ok":
            cur = (int(r.index), r.process)
            if r.process in last:
                edge(last[r.process], cur, "process", None, None, None)
            last[r.process] = cur


def version_order(mops: list[MicroOp]) -> tuple[dict[str, list[str]], dict[tuple[str, int], int]]:
    """Each key's values in offset order (``by-index``), and the index of each (key, offset).
    A value counts if it was polled, sent by an ok op, or sent by an info op that some ok poll
    proves committed; at an offset seen with several values, the smallest."""
    ok_reads = {(m.key, m.value) for m in mops if m.mop == "poll" and m.type == "ok"}
    proven = {m.op for m in mops
              if m.mop == "send" and m.type == "info" and (m.key, m.value) in ok_reads}
    at: dict[tuple[str, int], str] = {}
    for m in mops:
        if m.offset is None:
            continue
        if m.mop == "poll" or m.type == "ok" or (m.type == "info" and m.op in proven):
            kk = (m.key, m.offset)
            if kk not in at or m.value < at[kk]:
                at[kk] = m.value
    order: dict[str, list[str]] = defaultdict(list)
    idx: dict[tuple[str, int], int] = {}
    for (k, o) in sorted(at):
        idx[(k, o)] = len(order[k])
        order[k].append(at[(k, o)])
    return order, idx


def _ww_edges(order: dict[str, list[str]], writer: dict, edge: EdgeFn) -> None:
    """``jepsen.tests.kafka/ww-graph``: the writer of a value's predecessor before its writer."""
    for k, vs in order.items():
        by_value = {v: i for i, v in enumerate(vs)}  # a value's last index, as Jepsen's by-value
        for v2, j in by_value.items():
            if j == 0 or (k, v2) not in writer:
                continue
            w1, w2 = writer.get((k, vs[j - 1])), writer[(k, v2)]
            if w1 is not None:  # Jepsen throws :no-writer-of-value here; we draw no edge
                edge((w1[1], w1[2]), (w2[1], w2[2]), "ww", k, vs[j - 1], v2)


def _rw_edges(mops: list[MicroOp], order: dict[str, list[str]], idx: dict[tuple[str, int], int], writer: dict,
              edge: EdgeFn) -> None:
    """Anti-dependencies: an op's highest read of a key before the writer of the next value."""
    high: dict[tuple[int, str, str], int] = {}
    for m in mops:
        if m.mop == "poll" and m.offset is not None:
            t = (m.op, m.process, m.key)
            i = idx[(m.key, m.offset)]
            high[t] = max(high.get(t, i), i)
    for (op, proc, k), i in high.items():
        vs = order[k]
        if i + 1 < len(vs):
            w = writer.get((k, vs[i + 1]))
            if w is not None:
                edge((op, proc), (w[1], w[2]), "rw", k, vs[i], vs[i + 1])


def realtime_pairs(rows: Iterable[OpRow]) -> list[tuple[int, str, int, str]]:
    """Elle's realtime graph (``elle.core/realtime-graph``), as a transitive reduction: rows are
    one history's op rows in history order; Kafka client ops only. At each invocation, every op in
    the buffer of ok completions is linked to that invocation's completion (any type); at an ok
    completion, the buffered ops already linked to it leave the buffer and it enters.
    Returns ``(src op, src process, dst op, dst process)``."""
    ops = [r for r in rows if r.f in kafka_rules.KAFKA_FS and client(r.process)]
    completion: dict[int, OpRow] = {}
    open_: dict[Any, int] = {}
    for i, o in enumerate(ops):
        if o.type == "invoke":
            open_[o.process] = i
        elif o.process in open_:
            completion[open_.pop(o.process)] = o
    oks: set[Vertex] = set()
    into: dict[int, set[Vertex]] = defaultdict(set)
    out: list[tuple[int, str, int, str]] = []
    for i, o in enumerate(ops):
        if o.type == "invoke":
            c = completion.get(i)
            if c is not None:
                for a in sorted(oks):
                    out.append((a[0], a[1], int(c.index), c.process))
                    into[int(c.index)].add(a)
        elif o.type == "ok":
            oks -= into.pop(int(o.index), set())
            oks.add((int(o.index), o.process))
    return out
