"""The dependency graph of cycle rows (:mod:`.rows`) built with whole-array operations: the same
edges as :func:`.reference.edges_ref` (the tests compare them), for many histories at once.

Columns become dictionary codes; the writer of each (history, key, value), the version order of
each key and the highest read of each op come from ``lexsort`` / ``searchsorted`` over those
codes; the realtime reduction is interval arithmetic over (history, seq) times.
"""

from __future__ import annotations

from typing import Any, Iterable

import attrs
import numpy as np

from spark_validation.checks.elle.reference import KIND, EDGE_COLUMNS, CycleOptions, edge_sort_key
from spark_validation.checks.elle.search import KIND_NAMES, PROCESS, REALTIME, RW, WR, WW
from spark_validation.checks.kafka.rows import int_values, string_codes

__all__ = ["EDGE_COLUMNS", "Graph", "graph_of_table", "graph_of_tuples"]


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
        """The edges in :data:`EDGE_COLUMNS` form (as :func:`.reference.edges_ref` gives them)."""
        out = []
        for e in range(len(self.src)):
            s, d = int(self.src[e]), int(self.dst[e])
            out.append((self.hist_names[int(self.v_hist[s])], int(self.op[s]), self.proc_names[int(self.v_proc[s])],
                        int(self.op[d]), self.proc_names[int(self.v_proc[d])], KIND_NAMES[int(self.kind[e])],
                        *self.example(e)))
        return sorted(out, key=edge_sort_key)


# --------------------------------------------------------------------------------------------
# array helpers


def _codes(col: Any) -> tuple[np.ndarray, list]:
    """Dictionary codes (int64, -1 for null) and the dictionary (as Python values), as the Kafka
    kernel codes its columns (:func:`checks.kafka.rows.string_codes`)."""
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


# --------------------------------------------------------------------------------------------
# the columns, the vertices, the edges found so far


@attrs.define
class _Columns:
    """The cycle rows as codes, with the codes of the names the build tests for (-2: absent)."""
    hist: np.ndarray
    hist_s: list
    proc: np.ndarray
    proc_s: list
    key: np.ndarray
    key_s: list
    val: np.ndarray
    val_s: list
    typ: np.ndarray
    mop: np.ndarray
    seq: np.ndarray
    opn: np.ndarray
    off: np.ndarray
    has_off: np.ndarray
    OK: int
    INFO: int
    INVOKE: int
    SEND: int
    POLL: int
    OP: int
    client: np.ndarray


def _code(names: list, name: str) -> int:
    return names.index(name) if name in names else -2


def _columns(t: Any) -> _Columns:
    hist, hist_s = _codes(t.column("history"))
    proc, proc_s = _codes(t.column("process"))
    key, key_s = _codes(t.column("key"))
    val, val_s = _codes(t.column("value"))
    typ, typ_s = _codes(t.column("type"))
    mop, mop_s = _codes(t.column("mop"))
    seq, _ = int_values(t.column("seq"))
    opn, _ = int_values(t.column("op"))
    off, has_off = int_values(t.column("offset"))
    return _Columns(hist, hist_s, proc, proc_s, key, key_s, val, val_s, typ, mop, seq, opn, off, has_off,
                    _code(typ_s, "ok"), _code(typ_s, "info"), _code(typ_s, "invoke"),
                    _code(mop_s, "send"), _code(mop_s, "poll"), _code(mop_s, "op"),
                    proc != _code(proc_s, "nemesis"))


@attrs.define
class _Vertices:
    """Completed client ops, numbered in (history, op) order; ``vid``: each row's vertex."""
    n: int
    vid: np.ndarray
    done: np.ndarray
    hist: np.ndarray
    op: np.ndarray
    proc: np.ndarray


def _vertices(c: _Columns) -> _Vertices:
    op0 = int(c.opn.min(initial=0))
    span = int(c.opn.max(initial=0)) - op0 + 1
    done = (c.typ != c.INVOKE) & c.client
    vkeys, vid = _sorted_keys(c.hist * span + (c.opn - op0), done)
    n = len(vkeys)
    v_proc = np.zeros(n, np.int64)
    v_proc[vid[done]] = c.proc[done]
    return _Vertices(n, vid, done, vkeys // span, vkeys % span + op0, v_proc)


class _EdgeLists:
    """Edges gathered kind by kind; self-loops dropped."""

    def __init__(self) -> None:
        self.S: list[np.ndarray] = []
        self.D: list[np.ndarray] = []
        self.K: list[int] = []
        self.X: list[np.ndarray] = []

    def add(self, s: np.ndarray, d: np.ndarray, kind: int, ex: np.ndarray | None = None) -> None:
        keep = s != d
        self.S.append(s[keep])
        self.D.append(d[keep])
        self.K.append(kind)
        self.X.append((ex if ex is not None else np.full((len(s), 3), -1, np.int64))[keep])

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        if not self.S:
            z = np.zeros(0, np.int64)
            return z, z, z, np.zeros((0, 3), np.int64)
        kind = np.concatenate([np.full(len(s), k, np.int64) for s, k in zip(self.S, self.K)])
        return np.concatenate(self.S), np.concatenate(self.D), kind, np.concatenate(self.X)


# --------------------------------------------------------------------------------------------
# the graph


def graph_of_table(t: Any, opts: CycleOptions) -> Graph:
    """The dependency graph of cycle rows (``ROW_COLUMNS``; any number of whole histories, any
    row order), built with whole-array operations."""
    c = _columns(t)
    v = _vertices(c)
    out = _EdgeLists()
    ms = np.flatnonzero(v.done & ((c.mop == c.SEND) | (c.mop == c.POLL)) & (c.key >= 0) & (c.val >= 0))
    if len(ms):
        _data_edges(_Micro.of(c, v, ms), opts, out)
    ops_rows = np.flatnonzero((c.mop == c.OP) & c.client)
    if (opts.process or opts.realtime) and len(ops_rows):
        _order_edges(c, v, ops_rows, opts, out)
    return _one_per_kind(c, v, *out.arrays())


def _one_per_kind(c: _Columns, v: _Vertices, src: np.ndarray, dst: np.ndarray, kind: np.ndarray,
                  ex: np.ndarray) -> Graph:
    """The graph with one edge per (src, dst, kind), the smallest (key, value, value2) its example."""
    krank = np.append(_rank(c.key_s), -1)
    vr = np.append(_rank(c.val_s), -1)
    o = _lexsort_edges(src, dst, kind, krank[ex[:, 0]], vr[ex[:, 1]], vr[ex[:, 2]], v.n, len(c.key_s), len(c.val_s))
    src, dst, kind, ex = src[o], dst[o], kind[o], ex[o]
    first = np.ones(len(src), bool)
    first[1:] = (src[1:] != src[:-1]) | (dst[1:] != dst[:-1]) | (kind[1:] != kind[:-1])
    return Graph(v.n, src[first], dst[first], kind[first], v.op, v.hist, v.proc, c.hist_s, c.proc_s, ex[first],
                 c.key_s, c.val_s)


@attrs.define
class _Micro:
    """The completed send/poll micro-ops: their columns, (history, key) and (history, key, value)
    ids, and the writer (a vertex, -1 for none) of each (history, key, value)."""
    c: _Columns
    v: _Vertices
    ms: np.ndarray
    k: np.ndarray
    val: np.ndarray
    ty: np.ndarray
    w_id: np.ndarray
    is_send: np.ndarray
    hk: np.ndarray
    n_hk: int
    hkv: np.ndarray
    n_hkv: int
    writer: np.ndarray
    polls: np.ndarray

    @classmethod
    def of(cls, c: _Columns, v: _Vertices, ms: np.ndarray) -> "_Micro":
        h, k, val, sq, w_id = c.hist[ms], c.key[ms], c.val[ms], c.seq[ms], v.vid[ms]
        is_send = c.mop[ms] == c.SEND
        hk, n_hk = _dense(h, k)
        hkv, n_hkv = _dense(hk, val)
        # the writer of a value: the last op in history order that sent it
        writer = np.full(n_hkv, -1, np.int64)
        sends = np.flatnonzero(is_send)
        last = sends[_last_per_group(hkv[sends], sq[sends])]
        writer[hkv[last]] = w_id[last]
        return cls(c, v, ms, k, val, c.typ[ms], w_id, is_send, hk, n_hk, hkv, n_hkv, writer,
                   np.flatnonzero(~is_send))


def _data_edges(m: _Micro, opts: CycleOptions, out: _EdgeLists) -> None:
    """wr edges, and with ``--ww-deps`` / ``--rw-deps`` the version order's ww and rw edges."""
    polls = m.polls
    w = m.writer[m.hkv[polls]]
    has_w = w >= 0
    out.add(w[has_w], m.w_id[polls][has_w], WR,
            np.stack([m.k[polls][has_w], m.val[polls][has_w], np.full(int(has_w.sum()), -1)], 1))
    if opts.ww_deps or opts.rw_deps:
        vo = _Versions.of(m)
        if opts.ww_deps:
            _ww_edges(vo, out)
        if opts.rw_deps:
            _rw_edges(m, vo, out)


@attrs.define
class _Versions:
    """Each (history, key)'s version order: the distinct (hk, offset) ``U`` in order, the value at
    each (``u_val``, by-index), its (hk, index), and the writer of any (hk, value)."""
    U: np.ndarray
    u_val: np.ndarray
    u_hk: np.ndarray
    u_idx: np.ndarray
    end_u: np.ndarray
    hko: np.ndarray  # per micro-op: its (hk, offset) key
    key_of_hk: np.ndarray
    nv: np.int64
    wkeys: np.ndarray
    wvals: np.ndarray

    @classmethod
    def of(cls, m: _Micro) -> "_Versions":
        c = m.c
        okr = np.zeros(m.n_hkv, bool)
        okr[m.hkv[m.polls[m.ty[m.polls] == c.OK]]] = True
        proven = np.zeros(m.v.n, bool)
        proven[m.w_id[m.is_send & (m.ty == c.INFO) & okr[m.hkv]]] = True
        has_off = c.has_off[m.ms]
        vo = has_off & (~m.is_send | (m.ty == c.OK) | ((m.ty == c.INFO) & proven[m.w_id]))
        vrank = _rank(c.val_s)
        offc = np.zeros(len(m.ms), np.int64)
        if has_off.any():
            offc[has_off] = np.unique(c.off[m.ms][has_off], return_inverse=True)[1].reshape(-1)
        n_off = int(offc.max(initial=0)) + 1
        hko = m.hk * n_off + offc
        U, at_vo = np.unique(hko[vo], return_inverse=True)
        chosen = np.full(len(U), np.iinfo(np.int64).max, np.int64)
        np.minimum.at(chosen, at_vo.reshape(-1), vrank[m.val[vo]])
        u_hk = U // n_off
        first_u = np.searchsorted(u_hk, np.arange(m.n_hk), "left")
        end_u = np.searchsorted(u_hk, np.arange(m.n_hk), "right")
        key_of_hk = np.zeros(m.n_hk, np.int64)
        key_of_hk[m.hk] = m.k
        nv = np.int64(max(len(c.val_s), 1))
        wk = np.zeros(m.n_hkv, np.int64)
        wk[m.hkv] = m.hk * nv + m.val
        has_writer = m.writer >= 0
        wkeys, wvals = wk[has_writer], m.writer[has_writer]
        o_w = np.argsort(wkeys)
        return cls(U, np.argsort(vrank)[chosen], u_hk, np.arange(len(U)) - first_u[u_hk], end_u, hko, key_of_hk,
                   nv, wkeys[o_w], wvals[o_w])

    def writer_of(self, hk: np.ndarray, v: np.ndarray) -> np.ndarray:
        if len(self.wkeys) == 0:
            return np.full(len(hk), -1, np.int64)
        q = hk * self.nv + v
        at = np.minimum(np.searchsorted(self.wkeys, q), len(self.wkeys) - 1)
        return np.where(self.wkeys[at] == q, self.wvals[at], -1)


def _ww_edges(vo: _Versions, out: _EdgeLists) -> None:
    """Jepsen's previous-value: a written v2 at its last index j > 0, v1 at index j - 1."""
    lastpos = _last_per_group(vo.u_hk * vo.nv + vo.u_val, vo.u_idx)
    sel = lastpos[vo.u_idx[lastpos] > 0]
    hk2, v2 = vo.u_hk[sel], vo.u_val[sel]
    v1 = vo.u_val[sel - 1]
    w2, w1 = vo.writer_of(hk2, v2), vo.writer_of(hk2, v1)
    ok = (w1 >= 0) & (w2 >= 0)
    out.add(w1[ok], w2[ok], WW, np.stack([vo.key_of_hk[hk2[ok]], v1[ok], v2[ok]], 1))


def _rw_edges(m: _Micro, vo: _Versions, out: _EdgeLists) -> None:
    """An op's highest read of a key before the writer of the value right after it."""
    pr = m.polls[m.c.has_off[m.ms][m.polls]]
    at_r = np.searchsorted(vo.U, vo.hko[pr])
    grp, _ = _dense(m.w_id[pr], m.hk[pr])
    top = pr[_last_per_group(grp, vo.u_idx[at_r])]
    at_t = np.searchsorted(vo.U, vo.hko[top])
    nxt = at_t + 1
    has_next = nxt < vo.end_u[m.hk[top]]
    top, at_t, nxt = top[has_next], at_t[has_next], nxt[has_next]
    wn = vo.writer_of(m.hk[top], vo.u_val[nxt])
    okw = wn >= 0
    out.add(m.w_id[top][okw], wn[okw], RW, np.stack([m.k[top][okw], vo.u_val[at_t][okw], vo.u_val[nxt][okw]], 1))


def _order_edges(c: _Columns, v: _Vertices, ops_rows: np.ndarray, opts: CycleOptions, out: _EdgeLists) -> None:
    """Elle's process and realtime graphs over the op rows."""
    o = ops_rows[np.lexsort((c.seq[ops_rows], c.proc[ops_rows], c.hist[ops_rows]))]
    if opts.process:
        oks = o[c.typ[o] == c.OK]
        same_ok = (c.hist[oks][1:] == c.hist[oks][:-1]) & (c.proc[oks][1:] == c.proc[oks][:-1])
        out.add(v.vid[oks][:-1][same_ok], v.vid[oks][1:][same_ok], PROCESS)
    if opts.realtime:
        same = (c.hist[o][1:] == c.hist[o][:-1]) & (c.proc[o][1:] == c.proc[o][:-1])
        s, d = _realtime(o, same, c.hist, c.seq, c.typ, v.vid, c.INVOKE, c.OK)
        out.add(s, d, REALTIME)


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
    """A :class:`Graph` of edge tuples in :data:`EDGE_COLUMNS` order (:func:`.reference.edges_ref`)."""
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
    kind = np.array([KIND[e[5]] for e in edges], np.int64)
    ex = np.array([(vcode(e[6]), vcode(e[7]), vcode(e[8])) for e in edges], np.int64).reshape(-1, 3)
    hix = {h: i for i, h in enumerate(hist_s)}
    pix = {p: i for i, p in enumerate(proc_s)}
    return Graph(len(verts), src, dst, kind, np.array([v[1] for v in verts], np.int64),
                 np.array([hix[v[0]] for v in verts], np.int64), np.array([pix[str(v[2])] for v in verts], np.int64),
                 hist_s, proc_s, ex, vals, vals)
