"""Elle-style transactional cycles in Kafka histories (G0, G1c, G-single-item, G-nonadjacent-item,
G2-item and their -process/-realtime variants).

Jepsen's Kafka checker (``jepsen.tests.kafka/cycles!``, jepsen-io/jepsen c4c7473) hands the
history's ``txn``/``poll``/``send`` ops to Elle (``elle.txn/cycles!``, jepsen-io/elle ccdee6f) with
``:consistency-models [:strict-serializable]``: a dependency graph between completed ops, its
strongly connected components, and in each component the cycles Elle names by their edges.
The search itself, Elle's order and naming are in :mod:`spark_validation.elle_graph`; this module
builds the graph and explains the cycles.

Edges between two different completed ops T1, T2 (facts from ``jepsen.tests.kafka``, code our own):

``ww``  (``ww-graph``, only with ``--ww-deps``, as Jepsen's ``:ww-deps`` test option) T2 sent v2
        to key k, v2's index in k's version order is j > 0 (its last index, as ``by-value``
        keeps), v1 is the value at index j - 1, and T1 is v1's writer (``previous-value``).
``wr``  (``wr-graph``) T1 sent v to k and T2 polled v from k. Every completed op counts as a
        reader and a writer (Jepsen's ``readers-of``/``writer-of``: all non-invoke ops); the
        writer of a value is the last op in history order that sent it.
``rw``  (``--rw-deps``; Jepsen draws none: its ``rw-graph`` is commented out in ``graph``) T1's
        highest read of k was v1 and T2 sent the value that immediately follows v1 in k's version
        order (the anti-dependency of the workload's docstring, point 4).
``process`` (``--process-order``; ``elle.core/process-graph``) T1 and T2 are consecutive ``ok``
        send/poll/txn ops of one process (empty ones too).
``realtime`` (on by default, ``--no-realtime`` to leave out; ``elle.core/realtime-graph``, which
        Jepsen always adds: ``txn/additional-graphs`` of ``:strict-serializable``) T1 completed
        ``ok`` before T2 was invoked, as Elle's transitive reduction (:func:`realtime_pairs`).

Vertices are the completed send/poll/txn ops of client processes (not ``nemesis``). The version
order is the Kafka checks' (:mod:`spark_validation.kafka_ref`): every polled ``(offset, value)``
and every send with a known offset of an op that must have committed; an offset's value is the
smallest value seen there (several values at one offset are reported as ``inconsistent-offsets``
anyway).

Which cycles make a history invalid follows Jepsen's ``allowed-error-types``: ``G0`` and its
variants are always allowed ("writes are never isolated" in Kafka's transaction model) and ``G1c``
and its variants are allowed with ``--ww-deps``; such anomalies carry ``evidence.allowed`` with
the reason and are informational. Everything else (``G-single-item``, ``G2-item``, ...,
``cycle-search-timeout``) is a violation, as it is for Jepsen's checker.

Evidence, as Elle explains a cycle: the ops of the cycle in order, each step with the edge kind,
key and values and a sentence ("op 3 (process 1) sent '1' to key 'x', which op 8 (process 2)
polled"), the size of the strongly connected component, and an explanation.

Three ways to get the same answer:

* :func:`check_table` (the kernel): cycle rows (micro-ops plus one row per op, ``ROW_COLUMNS``)
  of any number of whole histories as an Arrow table;
  the edges are built with whole-array numpy operations (dictionary codes, ``lexsort``,
  ``searchsorted``; the realtime reduction as interval arithmetic), then the search.
* :func:`check_spark`: the op rows per partition (``mapInArrow``; the micro-ops extracted in the
  worker, then the kernel), no shuffle where partitions hold whole histories; histories seen by
  several chunks are checked again after a shuffle
  (``groupBy(history).applyInArrow``), as :mod:`spark_validation.kafka_arrow` does.
* :func:`check_rows_ref`: the reference: edges from op rows in plain Python (:func:`edges_ref`),
  then the same search. Tests check the kernel's edges against :func:`edges_ref` on random
  histories, and the three paths against each other.
"""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Any, Iterable, Iterator

import attrs
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from spark_validation import elle_graph as G
from spark_validation import kafka_ref
from spark_validation.elle_graph import strongly_connected  # noqa: F401  (re-exported)
from spark_validation.ingest.records import COMPLETIONS, parse_text, to_int, to_text
from spark_validation.kernel_rows import int_values, string_codes

CYCLE_KINDS = G.ORDER + ("cycle-search-timeout",)
EDGE_COLUMNS = ("history", "src", "sp", "dst", "dp", "kind", "key", "value", "value2")
EDGE_DDL = ("history string, src long, sp string, dst long, dp string, kind string, key string, "
            "value string, value2 string")
ROW_COLUMNS = ("history", "seq", "op", "process", "type", "mop", "key", "offset", "value", "pos")
OUT_DDL = "history string, kind string, key string, evidence string, chunk bigint, n bigint"
CHUNK_ROWS = 1 << 19  # op rows a task gathers before it checks the whole histories among them
_CHUNK_STRIDE = 1 << 24
_KIND = {k: i for i, k in enumerate(G.KIND_NAMES)}


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
        return G.enabled_types(_KIND[k] for k in self.kinds)


def _client(process: Any) -> bool:
    return process != "nemesis"


# --------------------------------------------------------------------------------------------
# the reference: edges from op rows in plain Python


def edges_ref(rows: Iterable[dict], opts: CycleOptions) -> list[tuple]:
    """Dependency edges of the op rows (any number of histories), as tuples in
    :data:`EDGE_COLUMNS` order, one per (history, src, dst, kind) with the smallest
    (key, value, value2) as its example."""
    by_history: dict[str, list[dict]] = defaultdict(list)
    for r in rows:
        by_history[r["history"]].append(r)
    out: list[tuple] = []
    for hid, hrows in by_history.items():
        out.extend(_edges_of(hid, sorted(hrows, key=lambda r: r["line"]), opts))
    return sorted(out, key=_edge_sort_key)


def _edge_sort_key(e: tuple) -> tuple:
    return (e[0], e[1], e[3], e[5])


def _edges_of(hid: str, rows: list[dict], opts: CycleOptions) -> list[tuple]:
    rows = [r for r in rows if r["f"] in kafka_ref.KAFKA_FS and _client(r["process"])]
    M = [m for r in rows for m in kafka_ref.micro_ops(r)]
    writer: dict[tuple[str, str], tuple[int, int, str]] = {}  # (k, v) -> (seq, op, process)
    readers: dict[tuple[str, str], set[tuple[int, str]]] = defaultdict(set)
    for m in M:
        kv = (m["key"], m["value"])
        if m["mop"] == "send":
            if kv not in writer or m["seq"] > writer[kv][0]:
                writer[kv] = (m["seq"], m["op"], m["process"])
        else:
            readers[kv].add((m["op"], m["process"]))
    best: dict[tuple[int, int, str], tuple] = {}

    def edge(src: tuple, dst: tuple, kind: str, key: str | None, value: str | None, value2: str | None) -> None:
        if src[0] == dst[0]:
            return
        k = (src[0], dst[0], kind)
        ex = (key or "", value or "", value2 if value2 is not None else "")
        if k not in best or ex < best[k][0]:
            best[k] = (ex, src[1], dst[1], (key, value, value2))

    if opts.realtime:
        for a, ap, c, cp in realtime_pairs(rows):
            edge((a, ap), (c, cp), "realtime", None, None, None)
    if opts.process:
        # elle.core/process-graph: each process's ok ops in history order
        last: dict[str, tuple[int, str]] = {}
        for r in rows:
            if r["type"] == "ok":
                cur = (int(r["index"]), r["process"])
                if r["process"] in last:
                    edge(last[r["process"]], cur, "process", None, None, None)
                last[r["process"]] = cur
    for kv, rs in readers.items():
        w = writer.get(kv)
        if w is not None:
            for r in rs:
                edge((w[1], w[2]), r, "wr", kv[0], kv[1], None)
    if opts.ww_deps or opts.rw_deps:
        ok_reads = {(m["key"], m["value"]) for m in M if m["mop"] == "poll" and m["type"] == "ok"}
        proven = {m["op"] for m in M if m["mop"] == "send" and m["type"] == "info" and (m["key"], m["value"]) in ok_reads}
        at: dict[tuple[str, int], str] = {}
        for m in M:
            if m["offset"] is None:
                continue
            if m["mop"] == "poll" or m["type"] == "ok" or (m["type"] == "info" and m["op"] in proven):
                kk = (m["key"], m["offset"])
                if kk not in at or m["value"] < at[kk]:
                    at[kk] = m["value"]
        order: dict[str, list[str]] = defaultdict(list)  # key -> values in version order (by-index)
        idx: dict[tuple[str, int], int] = {}
        for (k, o) in sorted(at):
            idx[(k, o)] = len(order[k])
            order[k].append(at[(k, o)])
        if opts.ww_deps:
            for k, vs in order.items():
                by_value = {v: i for i, v in enumerate(vs)}  # a value's last index, as Jepsen's by-value
                for v2, j in by_value.items():
                    if j == 0 or (k, v2) not in writer:
                        continue
                    w1, w2 = writer.get((k, vs[j - 1])), writer[(k, v2)]
                    if w1 is not None:  # Jepsen throws :no-writer-of-value here; we draw no edge
                        edge((w1[1], w1[2]), (w2[1], w2[2]), "ww", k, vs[j - 1], v2)
        if opts.rw_deps:
            high: dict[tuple[int, str, str], int] = {}
            for m in M:
                if m["mop"] == "poll" and m["offset"] is not None:
                    t = (m["op"], m["process"], m["key"])
                    i = idx[(m["key"], m["offset"])]
                    high[t] = max(high.get(t, i), i)
            for (op, proc, k), i in high.items():
                vs = order[k]
                if i + 1 < len(vs):
                    w = writer.get((k, vs[i + 1]))
                    if w is not None:
                        edge((op, proc), (w[1], w[2]), "rw", k, vs[i], vs[i + 1])
    return [(hid, s, sp, d, dp, kind, *ex) for (s, d, kind), (_, sp, dp, ex) in best.items()]


def realtime_pairs(rows: Iterable[dict]) -> list[tuple[int, str, int, str]]:
    """Elle's realtime graph (``elle.core/realtime-graph``), as a transitive reduction: rows are
    one history's op rows in history order; Kafka client ops only. At each invocation, every op in
    the buffer of ok completions is linked to that invocation's completion (any type); at an ok
    completion, the buffered ops already linked to it leave the buffer and it enters.
    Returns ``(src op, src process, dst op, dst process)``."""
    ops = [r for r in rows if r["f"] in kafka_ref.KAFKA_FS and _client(r["process"])]
    completion: dict[int, dict] = {}
    open_: dict[Any, int] = {}
    for i, o in enumerate(ops):
        if o["type"] == "invoke":
            open_[o["process"]] = i
        elif o["process"] in open_:
            completion[open_.pop(o["process"])] = o
    oks: set[tuple[int, str]] = set()
    into: dict[int, set[tuple[int, str]]] = defaultdict(set)
    out: list[tuple[int, str, int, str]] = []
    for i, o in enumerate(ops):
        if o["type"] == "invoke":
            c = completion.get(i)
            if c is not None:
                for a in sorted(oks):
                    out.append((a[0], a[1], int(c["index"]), c["process"]))
                    into[int(c["index"])].add(a)
        elif o["type"] == "ok":
            oks -= into.pop(int(o["index"]), set())
            oks.add((int(o["index"]), o["process"]))
    return out


# --------------------------------------------------------------------------------------------
# the kernel: edges from cycle rows with whole-array operations


def _codes(col: Any) -> tuple[np.ndarray, list]:
    """Dictionary codes (int64, -1 for null) and the dictionary (as Python values), as the Kafka
    kernel codes its columns (:func:`kernel_rows.string_codes`)."""
    idx, d = string_codes(col)
    return idx, d.to_pylist()


def _rank(strings: list) -> np.ndarray:
    """Rank of each dictionary entry in string order (code point order, as Python compares)."""
    r = np.empty(len(strings), np.int64)
    r[sorted(range(len(strings)), key=strings.__getitem__)] = np.arange(len(strings))
    return r


def _dense(*cols: np.ndarray) -> tuple[np.ndarray, int]:
    """Dense ids (in sorted tuple order) of tuples of non-negative int columns."""
    g = np.zeros(len(cols[0]), np.int64) if len(cols[0]) else np.zeros(0, np.int64)
    n = 1
    for c in cols:
        keys, g = _sorted_keys(g * (int(c.max(initial=0)) + 1) + c)
        n = len(keys)
    return g, n


def _last_per_group(group: np.ndarray, by: np.ndarray) -> np.ndarray:
    """Row positions holding, per group, the largest ``by`` (rows sorted by (group, by))."""
    o = np.lexsort((by, group))
    g = group[o]
    last = np.ones(len(o), bool)
    last[:-1] = g[1:] != g[:-1]
    return o[last]


@attrs.define
class Graph:
    """A typed edge list over completed ops, with what the explanations need."""
    n: int
    src: np.ndarray
    dst: np.ndarray
    kind: np.ndarray
    op: np.ndarray  # per vertex: op index
    v_hist: np.ndarray  # per vertex: history code
    v_proc: np.ndarray  # per vertex: process code
    hist_names: list
    proc_names: list
    ex: np.ndarray  # per edge: (key, value, value2) codes into ``values`` (-1 = none)
    key_names: list
    value_names: list

    def example(self, e: int) -> tuple[Any, Any, Any]:
        k, v, v2 = (int(x) for x in self.ex[e])
        return (self.key_names[k] if k >= 0 else None, self.value_names[v] if v >= 0 else None,
                self.value_names[v2] if v2 >= 0 else None)

    def tuples(self) -> list[tuple]:
        """The edges in :data:`EDGE_COLUMNS` form (as :func:`edges_ref` gives them)."""
        out = []
        for e in range(len(self.src)):
            s, d = int(self.src[e]), int(self.dst[e])
            out.append((self.hist_names[int(self.v_hist[s])], int(self.op[s]), self.proc_names[int(self.v_proc[s])],
                        int(self.op[d]), self.proc_names[int(self.v_proc[d])], G.KIND_NAMES[int(self.kind[e])],
                        *self.example(e)))
        return sorted(out, key=_edge_sort_key)


def graph_of_table(t: Any, opts: CycleOptions) -> Graph:
    """The dependency graph of cycle rows (``ROW_COLUMNS``; any number of whole histories, any
    row order), built with whole-array operations."""
    hist, hist_s = _codes(t.column("history"))
    proc, proc_s = _codes(t.column("process"))
    key, key_s = _codes(t.column("key"))
    val, val_s = _codes(t.column("value"))
    typ, typ_s = _codes(t.column("type"))
    mop, mop_s = _codes(t.column("mop"))
    seq, _ = int_values(t.column("seq"))
    opn, _ = int_values(t.column("op"))
    off, has_off = int_values(t.column("offset"))

    def code(names: list, name: str) -> int:
        return names.index(name) if name in names else -2

    OK, INFO, INVOKE = code(typ_s, "ok"), code(typ_s, "info"), code(typ_s, "invoke")
    SEND, POLL, OP = code(mop_s, "send"), code(mop_s, "poll"), code(mop_s, "op")
    NEMESIS = code(proc_s, "nemesis")
    client = proc != NEMESIS
    # vertices: completed ops, numbered in (history, op) order
    op0 = int(opn.min(initial=0))
    span = int(opn.max(initial=0)) - op0 + 1
    vk = hist * span + (opn - op0)
    done = (typ != INVOKE) & client
    vkeys, vid = _sorted_keys(vk, done)
    n = len(vkeys)
    v_hist, v_op = vkeys // span, vkeys % span + op0
    v_proc = np.zeros(n, np.int64)
    v_proc[vid[done]] = proc[done]

    S: list[np.ndarray] = []
    D: list[np.ndarray] = []
    K: list[int] = []
    X: list[np.ndarray] = []

    def add(s: np.ndarray, d: np.ndarray, kind: int, ex: np.ndarray) -> None:
        keep = s != d
        S.append(s[keep])
        D.append(d[keep])
        K.append(kind)
        X.append(ex[keep])

    none3 = lambda m: np.full((m, 3), -1, np.int64)  # noqa: E731
    ms = np.flatnonzero(done & ((mop == SEND) | (mop == POLL)) & (key >= 0) & (val >= 0))
    if len(ms):
        h, k, v, ty, sq, w_id = hist[ms], key[ms], val[ms], typ[ms], seq[ms], vid[ms]
        is_send = mop[ms] == SEND
        hk, n_hk = _dense(h, k)
        hkv, n_hkv = _dense(hk, v)
        # the writer of a value: the last op in history order that sent it
        writer = np.full(n_hkv, -1, np.int64)
        sends = np.flatnonzero(is_send)
        last = sends[_last_per_group(hkv[sends], sq[sends])]
        writer[hkv[last]] = w_id[last]
        polls = np.flatnonzero(~is_send)
        w = writer[hkv[polls]]
        has_w = w >= 0
        add(w[has_w], w_id[polls][has_w], G.WR,
            np.stack([k[polls][has_w], v[polls][has_w], np.full(int(has_w.sum()), -1)], 1))
        if opts.ww_deps or opts.rw_deps:
            okr = np.zeros(n_hkv, bool)
            okr[hkv[polls[ty[polls] == OK]]] = True
            proven = np.zeros(n, bool)
            proven[w_id[is_send & (ty == INFO) & okr[hkv]]] = True
            vo = has_off[ms] & (~is_send | (ty == OK) | ((ty == INFO) & proven[w_id]))
            o = off[ms]
            vrank = _rank(val_s)
            rank_to_val = np.argsort(vrank)
            offc = np.zeros(len(ms), np.int64)
            if has_off[ms].any():
                offc[has_off[ms]] = np.unique(o[has_off[ms]], return_inverse=True)[1].reshape(-1)
            n_off = int(offc.max(initial=0)) + 1
            hko = hk * n_off + offc
            U, at_vo = np.unique(hko[vo], return_inverse=True)
            at_vo = at_vo.reshape(-1)
            chosen = np.full(len(U), np.iinfo(np.int64).max, np.int64)
            np.minimum.at(chosen, at_vo, vrank[v[vo]])
            u_val = rank_to_val[chosen]  # by-index: the value at each (key, index)
            u_hk = U // n_off
            first_u = np.searchsorted(u_hk, np.arange(n_hk), "left")
            end_u = np.searchsorted(u_hk, np.arange(n_hk), "right")
            u_idx = np.arange(len(U)) - first_u[u_hk]
            key_of_hk = np.zeros(n_hk, np.int64)
            key_of_hk[hk] = k
            # writer of (hk, value) for any value: sorted keys of the (hk, v) that have one
            NV = np.int64(max(len(val_s), 1))
            hv = hk * NV + v
            wk = np.zeros(n_hkv, np.int64)
            wk[hkv] = hv
            has_writer = writer >= 0
            wkeys, wvals = wk[has_writer], writer[has_writer]
            o_w = np.argsort(wkeys)
            wkeys, wvals = wkeys[o_w], wvals[o_w]

            def writer_of(hk_: np.ndarray, v_: np.ndarray) -> np.ndarray:
                if len(wkeys) == 0:
                    return np.full(len(hk_), -1, np.int64)
                q = hk_ * NV + v_
                at = np.minimum(np.searchsorted(wkeys, q), len(wkeys) - 1)
                return np.where(wkeys[at] == q, wvals[at], -1)

            if opts.ww_deps:
                # Jepsen's previous-value: a written v2 at its last index j > 0, v1 at index j - 1
                g_hv = u_hk * NV + u_val
                lastpos = _last_per_group(g_hv, u_idx)
                j = u_idx[lastpos]
                sel = lastpos[j > 0]
                hk2, v2 = u_hk[sel], u_val[sel]
                v1 = u_val[sel - 1]
                w2, w1 = writer_of(hk2, v2), writer_of(hk2, v1)
                ok = (w1 >= 0) & (w2 >= 0)
                add(w1[ok], w2[ok], G.WW, np.stack([key_of_hk[hk2[ok]], v1[ok], v2[ok]], 1))
            if opts.rw_deps:
                pr = polls[has_off[ms][polls]]
                at_r = np.searchsorted(U, hko[pr])
                grp, _ = _dense(w_id[pr], hk[pr])
                top = pr[_last_per_group(grp, u_idx[at_r])]
                at_t = np.searchsorted(U, hko[top])
                nxt = at_t + 1
                has_next = nxt < end_u[hk[top]]
                top, at_t, nxt = top[has_next], at_t[has_next], nxt[has_next]
                wn = writer_of(hk[top], u_val[nxt])
                okw = wn >= 0
                add(w_id[top][okw], wn[okw], G.RW,
                    np.stack([k[top][okw], u_val[at_t][okw], u_val[nxt][okw]], 1))
    ops_rows = np.flatnonzero((mop == OP) & client)
    if (opts.process or opts.realtime) and len(ops_rows):
        o = ops_rows[np.lexsort((seq[ops_rows], proc[ops_rows], hist[ops_rows]))]
        same = (hist[o][1:] == hist[o][:-1]) & (proc[o][1:] == proc[o][:-1])
        if opts.process:
            oks = o[typ[o] == OK]
            same_ok = (hist[oks][1:] == hist[oks][:-1]) & (proc[oks][1:] == proc[oks][:-1])
            add(vid[oks][:-1][same_ok], vid[oks][1:][same_ok], G.PROCESS, none3(int(same_ok.sum())))
        if opts.realtime:
            s, d = _realtime(o, same, hist, seq, typ, vid, INVOKE, OK)
            add(s, d, G.REALTIME, none3(len(s)))
    if S:
        src, dst, ex = np.concatenate(S), np.concatenate(D), np.concatenate(X)
        kind = np.concatenate([np.full(len(s), k, np.int64) for s, k in zip(S, K)])
    else:
        src = dst = kind = np.zeros(0, np.int64)
        ex = np.zeros((0, 3), np.int64)
    # one edge per (src, dst, kind), with the smallest (key, value, value2) as its example
    krank = np.append(_rank(key_s), -1)
    vr = np.append(_rank(val_s), -1)
    o = _lexsort_edges(src, dst, kind, krank[ex[:, 0]], vr[ex[:, 1]], vr[ex[:, 2]], n, len(key_s), len(val_s))
    src, dst, kind, ex = src[o], dst[o], kind[o], ex[o]
    first = np.ones(len(src), bool)
    first[1:] = (src[1:] != src[:-1]) | (dst[1:] != dst[:-1]) | (kind[1:] != kind[:-1])
    return Graph(n, src[first], dst[first], kind[first], v_op, v_hist, v_proc, hist_s, proc_s, ex[first],
                 key_s, val_s)


def _sorted_keys(vk: np.ndarray, sel: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(np.unique(vk[sel]), np.searchsorted of every vk in it; ``sel`` None: every vk, so the
    second is each one's dense id): by a mask over the keys' range where that is small (one
    history's op indices, or a few), else by sorting."""
    top = int(vk.max(initial=0)) + 1
    if len(vk) and int(vk.min()) >= 0 and top <= 4 * len(vk) + 1024:
        m = np.zeros(top, bool)
        m[vk if sel is None else vk[sel]] = True
        below = np.cumsum(m) - m  # keys below each value: where searchsorted puts it
        return np.flatnonzero(m), below[vk]
    keys = np.unique(vk if sel is None else vk[sel])
    return keys, np.searchsorted(keys, vk)


def _lexsort_edges(src: np.ndarray, dst: np.ndarray, kind: np.ndarray, kr: np.ndarray, v1: np.ndarray,
                   v2: np.ndarray, n: int, n_keys: int, n_vals: int) -> np.ndarray:
    """The edge order by (src, dst, kind, key rank, value rank, value2 rank) (ranks -1 for none):
    np.lexsort's, with the columns packed into two int64 keys where they fit (half the passes)."""
    nk = max(int(kind.max(initial=0)) + 1, 1)
    if n * n * nk < 2**62 and (n_keys + 1) * (n_vals + 1) ** 2 < 2**62:
        major = (src * n + dst) * nk + kind
        minor = ((kr + 1) * (n_vals + 1) + (v1 + 1)) * (n_vals + 1) + (v2 + 1)
        return np.lexsort((minor, major))
    return np.lexsort((v2, v1, kr, kind, dst, src))


def _realtime(o: np.ndarray, same: np.ndarray, hist: np.ndarray, seq: np.ndarray, typ: np.ndarray,
              vid: np.ndarray, INVOKE: int, OK: int) -> tuple[np.ndarray, np.ndarray]:
    """Elle's realtime reduction over op rows ``o`` sorted by (history, process, seq).

    An ok op a sits in Elle's buffer from its completion until the first completion of an ok
    op invoked after a completed (the first ``comp(b)`` with ``inv(b) > comp(a)``), and is linked to
    the completion of every op invoked while it sits there. Times are ``(history, seq)``."""
    inv = np.flatnonzero((typ[o][:-1] == INVOKE) & (typ[o][1:] != INVOKE) & same)
    if len(inv) == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    stride = np.int64(int(seq.max()) + 2)
    i_row, c_row = o[inv], o[inv + 1]
    inv_t = hist[i_row] * stride + seq[i_row]
    comp_t = hist[c_row] * stride + seq[c_row]
    target = vid[c_row]
    is_ok = typ[c_row] == OK
    ok_inv, ok_comp_paired = inv_t[is_ok], comp_t[is_ok]
    # every ok completion enters the buffer (one without an invocation too); only an invoked
    # one can take others out of it
    ok_rows = o[typ[o] == OK]
    ok_comp, ok_vid = hist[ok_rows] * stride + seq[ok_rows], vid[ok_rows]
    oi = np.argsort(ok_inv)
    sufmin = np.minimum.accumulate(ok_comp_paired[oi][::-1])[::-1] if len(oi) else np.zeros(0, np.int64)
    j = np.searchsorted(ok_inv[oi], ok_comp, "right")
    big = np.iinfo(np.int64).max
    leave = np.where(j < len(oi), sufmin[np.minimum(j, len(oi) - 1)], big) if len(oi) else np.full(len(j), big)
    leave = np.minimum(leave, (ok_comp // stride + 1) * stride)  # never past its history's end
    ai = np.argsort(inv_t)
    inv_sorted, tgt_sorted = inv_t[ai], target[ai]
    lo = np.searchsorted(inv_sorted, ok_comp, "right")
    hi = np.searchsorted(inv_sorted, leave, "left")
    cnt = np.maximum(hi - lo, 0)
    total = int(cnt.sum())
    src = np.repeat(ok_vid, cnt)
    idx = np.arange(total) - np.repeat(np.cumsum(cnt) - cnt, cnt) + np.repeat(lo, cnt)
    return src, tgt_sorted[idx]


def graph_of_tuples(edges: Iterable[tuple]) -> Graph:
    """A :class:`Graph` of edge tuples in :data:`EDGE_COLUMNS` order (:func:`edges_ref`)."""
    edges = list(edges)
    verts = sorted({(e[0], int(e[1]), e[2]) for e in edges} | {(e[0], int(e[3]), e[4]) for e in edges})
    vid = {(h, o): i for i, (h, o, _) in enumerate(verts)}
    hist_s = sorted({v[0] for v in verts})
    proc_s = sorted({str(v[2]) for v in verts})
    names: dict[Any, int] = {}
    vals: list = []

    def vcode(x: Any) -> int:
        if x is None:
            return -1
        if x not in names:
            names[x] = len(vals)
            vals.append(x)
        return names[x]

    src = np.array([vid[(e[0], int(e[1]))] for e in edges], np.int64)
    dst = np.array([vid[(e[0], int(e[3]))] for e in edges], np.int64)
    kind = np.array([_KIND[e[5]] for e in edges], np.int64)
    ex = np.array([(vcode(e[6]), vcode(e[7]), vcode(e[8])) for e in edges], np.int64).reshape(-1, 3)
    hix = {h: i for i, h in enumerate(hist_s)}
    pix = {p: i for i, p in enumerate(proc_s)}
    return Graph(len(verts), src, dst, kind, np.array([v[1] for v in verts], np.int64),
                 np.array([hix[v[0]] for v in verts], np.int64), np.array([pix[str(v[2])] for v in verts], np.int64),
                 hist_s, proc_s, ex, vals, vals)


# --------------------------------------------------------------------------------------------
# cycles and their explanation


def cycles_of_graph(g: Graph, opts: CycleOptions, **budgets: int) -> list[dict]:
    """Cycle anomalies of a graph: ``{"history", "kind", "key": None, "evidence"}``."""
    found = G.Search(g.n, g.src, g.dst, g.kind, g.op, opts.types, **budgets).run()
    out = []
    for f in found:
        hist = g.hist_names[int(g.v_hist[f["vertex"]])]
        out.append({"history": hist, "kind": f["type"], "key": None, "evidence": _evidence(g, f, opts)})
    return out


def _op_text(g: Graph, v: int) -> str:
    return f"op {int(g.op[v])} (process {g.proc_names[int(g.v_proc[v])]})"


def _step_text(g: Graph, e: int) -> str:
    key, value, value2 = g.example(e)
    ta, tb = _op_text(g, int(g.src[e])), _op_text(g, int(g.dst[e]))
    kind = int(g.kind[e])
    if kind == G.WW:
        return f"{ta} sent {value!r} to key {key!r} before {tb} sent {value2!r} to it"
    if kind == G.WR:
        return f"{ta} sent {value!r} to key {key!r}, which {tb} polled"
    if kind == G.PROCESS:
        return f"{ta} completed before {tb} on the same process"
    if kind == G.REALTIME:
        return f"{ta} completed before {tb} was invoked (real time)"
    return f"{ta} polled key {key!r} up to {value!r} and did not see {value2!r}, which {tb} sent next"


_NAMES = {
    "G0": "a write cycle (G0)",
    "G1c": "circular information flow (G1c)",
    "G-single-item": "read skew: a cycle with exactly one anti-dependency (G-single-item)",
    "G-nonadjacent-item": "a cycle with two or more anti-dependencies, none adjacent (G-nonadjacent-item)",
    "G2-item": "a cycle with two or more anti-dependencies, two of them adjacent (G2-item)",
}


def _name(kind: str) -> str:
    base, extra = G._split(kind)
    if not extra:
        return _NAMES[base]
    return _NAMES[base][:-1] + kind[len(base):] + "), closed by " + (
        "process order" if extra == (G.PROCESS,) else "real-time order")


def _evidence(g: Graph, f: dict, opts: CycleOptions) -> dict:
    kind = f["type"]
    if kind == "cycle-search-timeout":
        return {"scc_size": f["scc"], "anomaly_spec_type": f["searching"], "does_not_contain": f["not_found"],
                "explanation": (f"the search for a {f['searching']} cycle in a component of {f['scc']} ops "
                                f"ran out of its work budget (Elle's :cycle-search-timeout)")}
    steps = []
    for e in f["edges"]:
        key, value, value2 = g.example(e)
        k = G.KIND_NAMES[int(g.kind[e])]
        steps.append({"op": int(g.op[int(g.src[e])]), "next": int(g.op[int(g.dst[e])]), "kind": k,
                      **({"key": key, "value": value} if k not in ("process", "realtime") else {}),
                      **({"value2": value2} if value2 is not None else {}),
                      "text": _step_text(g, e)})
    cyc_ops = [s["op"] for s in steps]
    ev: dict[str, Any] = {
        "cycle": cyc_ops + [cyc_ops[0]],
        "steps": steps,
        "scc_size": f["scc"],
        "explanation": "; ".join(f"op {s['op']} < op {s['next']} because {s['text']} ({s['kind']})" for s in steps)
                       + f": a cycle, {_name(kind)}",
    }
    if f.get("fallback"):
        ev["fallback"] = True
    if kind.startswith("G0"):
        ev["allowed"] = "jepsen.tests.kafka/allowed-error-types: G0 is normal, Kafka does not isolate writes"
    elif kind.startswith("G1c") and opts.ww_deps:
        ev["allowed"] = ("jepsen.tests.kafka/allowed-error-types: with ww-deps, G1c is normal (no write "
                         "isolation gives cycles like t0 <ww t1 <wr t0)")
    return ev


def find_cycles(edges: Iterable[tuple], opts: CycleOptions, **budgets: int) -> list[dict]:
    """Cycle anomalies of one or more histories' edges (tuples in :data:`EDGE_COLUMNS` order)."""
    return kafka_ref.sort_anomalies(cycles_of_graph(graph_of_tuples(edges), opts, **budgets))


def check_rows_ref(rows: list[dict], opts: CycleOptions) -> list[dict]:
    """Cycle anomalies of op rows with the reference edges (plain Python) and the search."""
    return find_cycles(edges_ref(rows, opts), opts)


def check_table(t: Any, opts: CycleOptions) -> list[dict]:
    """Cycle anomalies of cycle rows (any number of whole histories): the kernel."""
    if t.num_rows == 0:
        return []
    return kafka_ref.sort_anomalies(cycles_of_graph(graph_of_table(t, opts), opts))


def _text(x: Any) -> Any:
    """records.to_text, with the common cases first."""
    if x is None or type(x) is str:
        return x
    if type(x) is int:
        return str(x)
    return to_text(x)


def _int(x: Any) -> Any:
    return x if type(x) is int else to_int(x)


def input_table(rows: list[dict]) -> Any:
    """Cycle rows of op rows, in-process: per send/poll/txn op row one ``op`` row, then its
    micro-ops (those of :func:`kafka_ref.micro_ops`, written out column by column here; the
    tests compare the two)."""
    cols = {c: [r[c] for r in rows] for c in OP_IN}
    return _cycle_rows(*(cols[c] for c in OP_IN))


OP_IN = ("history", "line", "index", "process", "type", "f", "key", "value")  # the op columns the rows need


def _cycle_rows(hs: list, lines: list, idxs: list, procs: list, types: list, fs: list, keys: list,
                values: list) -> Any:
    """The cycle rows (an Arrow table in ``ROW_COLUMNS``) of op rows given as columns. Per
    micro-op only what differs within an op is collected; the op's own fields are taken from its
    row at the end."""
    R: list[int] = []  # the op row of each cycle row
    MOP: list[str] = []
    K: list = []
    OFF: list = []
    V: list = []
    POS: list[int] = []
    r_a, m_a, k_a, o_a, v_a, p_a = R.append, MOP.append, K.append, OFF.append, V.append, POS.append
    stride = kafka_ref.POS_STRIDE
    kafka_fs = kafka_ref.KAFKA_FS
    for n, (t, f, key, value) in enumerate(zip(types, fs, keys, values)):
        if f not in kafka_fs:
            continue
        r_a(n), m_a("op"), k_a(None), o_a(None), v_a(None), p_a(-1)
        if t not in COMPLETIONS:
            continue
        if key is not None and f != "txn":
            if f == "send":
                if value is not None:
                    x = parse_text(value)
                    off, v = (_int(x[0]), _text(x[1])) if isinstance(x, list) and len(x) == 2 else (None, _text(x))
                    if v is not None:
                        r_a(n), m_a("send"), k_a(key), o_a(off), v_a(v), p_a(0)
            else:
                pairs = parse_text(value)
                if isinstance(pairs, list):
                    for j, pair in enumerate(pairs):
                        if isinstance(pair, list) and len(pair) >= 2 and pair[1] is not None:
                            r_a(n), m_a("poll"), k_a(key), o_a(_int(pair[0])), v_a(_text(pair[1])), p_a(j)
            continue
        mops = parse_text(value)
        if not isinstance(mops, list):
            continue
        for i, m in enumerate(mops):
            if not isinstance(m, list) or not m:
                continue
            name = _text(m[0])
            if name == "send" and len(m) >= 3:
                k = _text(m[1])
                x = m[2]
                off, v = (_int(x[0]), _text(x[1])) if isinstance(x, list) and len(x) == 2 else (None, _text(x))
                if k is not None and v is not None:
                    r_a(n), m_a("send"), k_a(k), o_a(off), v_a(v), p_a(i * stride)
            elif name == "poll" and len(m) >= 2 and isinstance(m[1], dict):
                for kk, pairs in m[1].items():
                    if not isinstance(pairs, list):
                        continue
                    k = _text(kk)
                    if k is None:
                        continue
                    for j, pair in enumerate(pairs):
                        if isinstance(pair, list) and len(pair) >= 2 and pair[1] is not None:
                            r_a(n), m_a("poll"), k_a(k), o_a(_int(pair[0])), v_a(_text(pair[1])), p_a(i * stride + j)
    take = pa.array(np.asarray(R, dtype=np.int64), pa.int64())
    ty = _row_types()
    op_cols = [pa.array(c, t).take(take) for c, t in zip((hs, lines, idxs, procs, types), ty[:5])]
    return pa.Table.from_arrays(op_cols + [pa.array(c, t) for c, t in zip((MOP, K, OFF, V, POS), ty[5:])],
                                names=list(ROW_COLUMNS))


def _row_types() -> list:
    return [pa.string(), pa.int64(), pa.int64(), pa.string(), pa.string(), pa.string(), pa.string(), pa.int64(),
            pa.string(), pa.int64()]


def check_rows(rows: list[dict], opts: CycleOptions) -> list[dict]:
    """Cycle anomalies of op rows in this process: the kernel; the reference decides a history
    the kernel's 64-bit columns cannot hold (an offset beyond 64 bits, a process that is not
    text)."""
    try:
        return check_table(input_table(rows), opts)
    except (OverflowError, ValueError, TypeError):
        return check_rows_ref(rows, opts)


def edges_rows(rows: list[dict], opts: CycleOptions) -> list[tuple]:
    """The kernel's edges of op rows, as :func:`edges_ref` gives them (for tests)."""
    t = input_table(rows)
    return graph_of_table(t, opts).tuples() if t.num_rows else []


def is_allowed(anomaly: dict) -> bool:
    """An anomaly Jepsen's checker allows (``allowed-error-types``): reported, not a violation."""
    ev = anomaly.get("evidence")
    return isinstance(ev, dict) and bool(ev.get("allowed"))


# --------------------------------------------------------------------------------------------
# Spark: the kernel per partition, verification of the layout, shuffle fallback


def cycle_input(ops: Any) -> Any:
    """The op rows the cycle check reads (send/poll/txn ops, the columns of ``OP_IN``): a narrow
    selection, so partitions that hold whole histories keep holding them. The micro-ops are
    extracted in the Python worker (:func:`_cycle_rows`): on this machine that is several times
    faster than Spark's ``from_json`` with higher-order functions for Jepsen's nested values."""
    from pyspark.sql import functions as F  # optional: pyspark

    return ops.where(F.col("f").isin(*kafka_ref.KAFKA_FS)).select(*OP_IN)


def _rows_of_ops(t: Any) -> Any:
    return _cycle_rows(*(t.column(c).to_pylist() for c in OP_IN))


def _out_batch(anoms: list[dict], hists: list, counts: list, chunk: int) -> Any:
    m = len(anoms)
    return pa.RecordBatch.from_arrays(
        [pa.array([a["history"] for a in anoms] + hists, pa.string()),
         pa.array([a["kind"] for a in anoms] + [None] * len(hists), pa.string()),
         pa.array([a["key"] for a in anoms] + [None] * len(hists), pa.string()),
         pa.array([json.dumps(a["evidence"]) for a in anoms] + [None] * len(hists), pa.string()),
         pa.array([chunk] * (m + len(hists)), pa.int64()),
         pa.array([None] * m + counts, pa.int64())],
        names=["history", "kind", "key", "evidence", "chunk", "n"])


def _check_chunk(t: Any, chunk: int, opts: CycleOptions) -> Any:
    """Check a chunk of op rows (whole histories, as far as this task knows)."""
    vc = pc.value_counts(t.column("history"))
    try:
        anoms = check_table(_rows_of_ops(t), opts)
    except (OverflowError, ValueError, TypeError):  # as check_rows: the reference decides
        anoms = check_rows_ref(t.to_pylist(), opts)
    return _out_batch(anoms, vc.field("values").to_pylist(), vc.field("counts").to_pylist(), chunk)


def _chunks(batches: Iterable[Any], base: int, chunk_rows: int, opts: CycleOptions) -> Iterator[Any]:
    """Check the rows of ``batches`` a chunk at a time, each chunk cut at a history boundary."""
    buf: list = []
    nbuf = 0
    chunk = 0
    for b in batches:
        if b.num_rows == 0:
            continue
        buf.append(b)
        nbuf += b.num_rows
        if nbuf < chunk_rows:
            continue
        t = pa.Table.from_batches(buf)
        hist = t.column("history")
        other = np.flatnonzero(~pc.equal(hist, hist[-1]).to_numpy(zero_copy_only=False))
        if len(other) == 0:
            continue
        cut = int(other[-1]) + 1
        yield _check_chunk(t.slice(0, cut), base + chunk, opts)
        chunk += 1
        rest = t.slice(cut)
        buf, nbuf = rest.to_batches(), rest.num_rows
    if nbuf:
        yield _check_chunk(pa.Table.from_batches(buf), base + chunk, opts)


def check_spark(m: Any, opts: CycleOptions, ops: Any = None, chunk_rows: int = CHUNK_ROWS) -> list[dict]:
    """Cycle anomalies of every history of the op table ``ops`` (``m``, the micro-ops of an older
    interface, is ignored). The kernel runs per partition; the driver accepts a history only if
    exactly one chunk saw it, and checks the others again after a shuffle."""
    rows, _ = collect(ops if ops is not None else m, opts, chunk_rows)
    return rows


def collect(ops: Any, opts: CycleOptions, chunk_rows: int = CHUNK_ROWS) -> tuple[list[dict], dict[str, Any]]:
    """Cycle anomalies of the op table ``ops`` and a report of which path each history took."""
    from pyspark import TaskContext  # optional: pyspark
    from pyspark.sql import functions as F

    def per_partition(it: Iterable[Any]) -> Iterator[Any]:
        ctx = TaskContext.get()
        yield from _chunks(it, (ctx.partitionId() if ctx is not None else 0) * _CHUNK_STRIDE, chunk_rows, opts)

    def per_history(t: Any) -> Any:
        return pa.Table.from_batches([_check_chunk(t, -1, opts)])

    c = cycle_input(ops)
    rows = c.mapInArrow(per_partition, OUT_DDL).collect()
    anoms = [r for r in rows if r["kind"] is not None]
    chunks_of: dict[str, set[int]] = {}
    for r in rows:
        if r["kind"] is None:
            chunks_of.setdefault(r["history"], set()).add(r["chunk"])
    split = sorted(h for h, cs in chunks_of.items() if len(cs) > 1)
    info = {"histories": len(chunks_of), "clustered": len(chunks_of) - len(split), "shuffled": len(split)}
    if split:
        bad = c.sparkSession.createDataFrame([(h,) for h in split], "history string")
        again = (c.join(F.broadcast(bad), "history", "left_semi").groupBy("history")
                 .applyInArrow(per_history, OUT_DDL).where(F.col("kind").isNotNull()).collect())
        drop = set(split)
        anoms = [r for r in anoms if r["history"] not in drop] + again
    out = [{"history": r["history"], "kind": r["kind"], "key": r["key"], "evidence": json.loads(r["evidence"])}
           for r in anoms]
    return kafka_ref.sort_anomalies(out), info


def edges_spark(ops: Any, opts: CycleOptions) -> Any:
    """The dependency edges of every history of the op table, as a DataFrame with
    :data:`EDGE_COLUMNS` (one executor task per history, after a shuffle by history)."""

    def per_history(t: Any) -> Any:
        t = _rows_of_ops(t)
        tuples = graph_of_table(t, opts).tuples() if t.num_rows else []
        cols = list(zip(*tuples)) if tuples else [[] for _ in EDGE_COLUMNS]
        types = [pa.string(), pa.int64(), pa.string(), pa.int64(), pa.string(), pa.string(), pa.string(),
                 pa.string(), pa.string()]
        return pa.table({c: pa.array(list(x), ty) for c, x, ty in zip(EDGE_COLUMNS, cols, types)})

    return cycle_input(ops).groupBy("history").applyInArrow(per_history, EDGE_DDL)
