"""The cycle search of the Elle check (:mod:`spark_validation.checks.elle`): strongly connected
components, and in each component the cycle anomalies Elle looks for, in Elle's order.

The input is a typed edge list over integer vertices: ``src``, ``dst``, ``kind`` (``WW``, ``WR``,
``RW``, ``PROCESS``, ``REALTIME``), at most one edge per (src, dst, kind), and ``order``, a
per-vertex integer (the op index) that fixes every tie so the answer does not depend on how
vertices were numbered. Vertices of different histories are never linked, so one call can hold
many histories.

What is searched, per component of the whole graph, follows ``elle.txn/cycle-cases-in-scc`` (jepsen-io/elle
ccdee6f): the anomaly types of ``elle.txn/cycle-anomaly-specs`` in the order of
``elle.consistency-model/anomaly-depth-compare``; a type implied by one already found in the
component (``elle.consistency-model/implied-anomalies``) is not searched; at most one cycle per
type and component. Only the types that can occur without predicates are searched (``G-single``,
``G-nonadjacent``, ``G2`` and their variants need predicate edges, which Kafka histories do not
have); a cycle is named as Elle's ``elle.txn/cycle-explainer`` names it: one rw edge is
``G-single-item``, several rw edges with two of them adjacent ``G2-item``, several and none
adjacent ``G-nonadjacent-item``, else ``G1c`` with a wr edge and ``G0`` with ww only; a process
edge adds ``-process``, a realtime edge ``-realtime``.

How each type is decided, in time linear in the component except where said:

* ``G0``, ``G1c``, ``G2-item`` and their ``-process``/``-realtime`` variants: one component
  computation of the projection on the type's edge kinds; the type exists iff an edge of its
  required kind (ww, wr, rw; for ``G0-process``/``G0-realtime`` the process/realtime edge) joins
  two vertices of one projected component. This is exact for a simple cycle of the type as
  Elle searches it, given Elle's order: a variant is searched only when the types that imply
  it were not found, which rules out the cycles that would not carry the variant's edge (or,
  for ``G2-item``, a single or only non-adjacent rw edges).
* ``G-single-item`` (+ variants): an rw edge u -> v closed by a path v -> u over ww/wr (+ the
  variant's) edges. A breadth-first search from v per rw edge, skipping vertices that cannot
  reach u (the projection's components are numbered in reverse topological order: checked, not
  assumed); within a work budget.
* ``G-nonadjacent-item`` (+ variants): absence is decided exactly (no cycle of a two-layer
  product graph that alternates rw and other edges); presence by a breadth-first search over
  simple paths as Elle's ``elle.bfs/search`` does, within a work budget.

The cycle reported is the shortest one through the type's candidate edges: a two-edge cycle if
there is one (found for all candidates at once), else a breadth-first search per candidate, in
op order, bounded by the shortest so far, until the work budget is spent (exhaustive on
components up to about a million edge visits per search; always at least one candidate).
Elle's ``elle.bfs/search`` reports the shortest cycle through the first start vertex that has
one, so both give a shortest cycle through some start; ours is the shortest over more of them.

When a search runs out of budget before it can decide, the component gets Elle's
``cycle-search-timeout`` (``elle.txn/cycle-cases-in-scc``: the type being searched, the types
already searched and not found) and, as Elle's fallback, some cycle of the component named by
its edges; the search of that component stops there, as Elle's does.
"""

from __future__ import annotations

from collections import deque
from typing import Any, Iterable

import numpy as np

WW, WR, RW, PROCESS, REALTIME = range(5)
KIND_NAMES = ("ww", "wr", "rw", "process", "realtime")
G_KIND_TABLE = KIND_NAMES

# Elle's search order (anomaly-depth-compare over implied-anomalies + anomaly-severity-graph,
# restricted to the types without predicates), and for each type the types it implies.
ORDER = ("G-single-item", "G0", "G-nonadjacent-item", "G-single-item-process", "G1c",
         "G-nonadjacent-item-process", "G-single-item-realtime", "G2-item", "G-nonadjacent-item-realtime",
         "G0-process", "G1c-process", "G2-item-process", "G0-realtime", "G1c-realtime", "G2-item-realtime")
_IMPLIES_DIRECT = {
    "G0": ("G1c", "G0-process"), "G0-process": ("G1c-process", "G0-realtime"), "G0-realtime": ("G1c-realtime",),
    "G1c": ("G1c-process",), "G1c-process": ("G1c-realtime",),
    "G-single-item": ("G-single-item-process", "G-nonadjacent-item"),
    "G-single-item-process": ("G-single-item-realtime", "G-nonadjacent-item-process"),
    "G-single-item-realtime": ("G-nonadjacent-item-realtime",),
    "G-nonadjacent-item": ("G2-item", "G-nonadjacent-item-process"),
    "G-nonadjacent-item-process": ("G2-item-process", "G-nonadjacent-item-realtime"),
    "G-nonadjacent-item-realtime": ("G2-item-realtime",),
    "G2-item": ("G2-item-process",), "G2-item-process": ("G2-item-realtime",),
}


def _closure(t: str) -> frozenset[str]:
    out: set[str] = set()
    todo = list(_IMPLIES_DIRECT.get(t, ()))
    while todo:
        x = todo.pop()
        if x not in out:
            out.add(x)
            todo.extend(_IMPLIES_DIRECT.get(x, ()))
    return frozenset(out)


IMPLIES = {t: _closure(t) for t in ORDER}

_VARIANT = {"": (), "-process": (PROCESS,), "-realtime": (REALTIME,)}


def split(t: str) -> tuple[str, tuple[int, ...]]:
    for suffix in ("-process", "-realtime"):
        if t.endswith(suffix):
            return t[: -len(suffix)], _VARIANT[suffix]
    return t, ()


def spec(t: str) -> tuple[str, tuple[int, ...], int]:
    """(family, projection kinds without rw, required kind) of a type."""
    base, extra = split(t)
    if base == "G0":
        return "scc", (WW,) + extra, extra[0] if extra else WW
    if base == "G1c":
        return "scc", (WW, WR) + extra, WR
    if base == "G2-item":
        return "scc", (WW, WR, RW) + extra, RW
    if base == "G-single-item":
        return "single", (WW, WR) + extra, RW
    return "nonadjacent", (WW, WR) + extra, RW


def classify(kinds: list[int]) -> str:
    """Elle's name for a cycle with these edge kinds, in order (``elle.txn/cycle-explainer``)."""
    n_rw = kinds.count(RW)
    adjacent = any(kinds[i] == RW and kinds[i - 1] == RW for i in range(len(kinds)))
    if n_rw == 1:
        base = "G-single-item"
    elif n_rw > 1:
        base = "G2-item" if adjacent else "G-nonadjacent-item"
    elif WR in kinds:
        base = "G1c"
    else:
        base = "G0"
    return base + ("-realtime" if REALTIME in kinds else "-process" if PROCESS in kinds else "")


def enabled_types(kinds_present: Iterable[int]) -> tuple[str, ...]:
    """The types, in Elle's order, whose edges can all occur (e.g. no ``-process`` type without
    process edges, no G0 without ww edges)."""
    have = set(kinds_present)
    out = []
    for t in ORDER:
        base, extra = split(t)
        need = {"G0": {WW}, "G1c": {WR}}.get(base, {RW}) | set(extra)
        if need <= have:
            out.append(t)
    return tuple(out)


# ------------------------------------------------------------------------------------------
# components


def scc_labels(n: int, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """Strongly connected component label of each of ``n`` vertices (scipy's iterative
    Pearce/Tarjan, linear)."""
    # lazy: scipy.sparse is slow to import, and only histories with Kafka ops need it (an
    # audit of register histories never does)
    from scipy.sparse import csgraph, csr_matrix

    if n == 0:
        return np.zeros(0, np.int64)
    g = csr_matrix((np.ones(len(src), np.int8), (src, dst)), shape=(n, n))
    _, lab = csgraph.connected_components(g, directed=True, connection="strong")
    return lab.astype(np.int64, copy=False)


# ------------------------------------------------------------------------------------------
# one component: local graphs and searches


class Timeout(Exception):
    """A search ran out of its work budget before it could decide."""


class _Budget:
    def __init__(self, work: int) -> None:
        self.left = work

    def spend(self, n: int) -> None:
        self.left -= n
        if self.left < 0:
            raise Timeout


def _kind_mask(kinds: Iterable[int]) -> np.ndarray:
    m = np.zeros(len(KIND_NAMES), bool)
    m[list(kinds)] = True
    return m


class _Local:
    """A component's vertices and edges with local ids, and its projections as adjacency lists
    (one edge per vertex pair: the lowest kind, i.e. Elle's explainer order ww, wr, rw,
    process, realtime)."""

    def __init__(self, verts: np.ndarray, eids: np.ndarray, src: np.ndarray, dst: np.ndarray,
                 kind: np.ndarray) -> None:
        self.verts = verts  # global ids, sorted
        self.eids = eids  # global edge ids of the component's internal edges
        self.ls = np.searchsorted(verts, src[eids])
        self.ld = np.searchsorted(verts, dst[eids])
        self.kind = kind[eids]
        self.n = len(verts)
        self._adj: dict[tuple[int, ...], tuple[list[list[int]], list[list[int]]]] = {}
        self._lab: dict[tuple[int, ...], np.ndarray] = {}

    def mask(self, kinds: tuple[int, ...]) -> np.ndarray:
        return _kind_mask(kinds)[self.kind]

    def adj(self, kinds: tuple[int, ...]) -> tuple[list[list[int]], list[list[int]]]:
        """(neighbours, edge ids) per local vertex, neighbours in local-id (op) order."""
        k = tuple(sorted(kinds))
        if k not in self._adj:
            sel = np.flatnonzero(self.mask(k))
            o = np.lexsort((self.kind[sel], self.ld[sel], self.ls[sel]))
            sel = sel[o]
            s, d = self.ls[sel], self.ld[sel]
            first = np.ones(len(sel), bool)
            first[1:] = (s[1:] != s[:-1]) | (d[1:] != d[:-1])
            sel, s, d = sel[first], s[first], d[first]
            bounds = np.searchsorted(s, np.arange(self.n + 1))
            dl, el = d.tolist(), self.eids[sel].tolist()
            b = bounds.tolist()
            nbrs = [dl[b[i]:b[i + 1]] for i in range(self.n)]
            edges = [el[b[i]:b[i + 1]] for i in range(self.n)]
            self._adj[k] = (nbrs, edges)
        return self._adj[k]

    def labels(self, kinds: tuple[int, ...]) -> tuple[np.ndarray, bool]:
        """Component labels of the projection, and whether every edge between two of its
        components goes from a higher label to a lower one (then u reachable from v implies
        label(v) >= label(u))."""
        k = tuple(sorted(kinds))
        if k not in self._lab:
            sel = self.mask(k)
            lab = scc_labels(self.n, self.ls[sel], self.ld[sel])
            a, b = lab[self.ls[sel]], lab[self.ld[sel]]
            self._lab[k] = (lab, bool((a >= b).all()))
        return self._lab[k]


def _bfs(nbrs: list[list[int]], edges: list[list[int]], s: int, t: int, budget: _Budget,
         max_len: float = float("inf"), floor: "list[int] | None" = None, at_least: int = 0) -> list[int] | None:
    """Edge ids of a shortest path s -> t (at least one edge), or None if none of at most
    ``max_len`` edges. With ``floor``: only through vertices w with ``floor[w] >= at_least``."""
    if max_len < 1:
        return None
    prev: dict[int, tuple[int, int]] = {s: (-1, -1)}
    frontier = [s]
    depth = 0
    while frontier and depth < max_len:
        depth += 1
        nxt = []
        work = 0
        for u in frontier:
            nb = nbrs[u]
            work += len(nb)
            for w, e in zip(nb, edges[u]):
                if w == t:
                    path = [e]
                    x = u
                    while x != s:
                        x, pe = prev[x]
                        path.append(pe)
                    return path[::-1]
                if w not in prev and (floor is None or floor[w] >= at_least):
                    prev[w] = (u, e)
                    nxt.append(w)
        budget.spend(work + len(frontier))
        frontier = nxt
    return None


# ------------------------------------------------------------------------------------------
# the search


SHORTEST_WORK = 1_000_000  # vertex and edge visits spent looking for a shorter cycle, per type and component
DECIDE_WORK = 10_000_000  # visits a G-single-item / G-nonadjacent-item search may spend to decide, per component
PATHS_LIMIT = 200_000  # simple paths a G-nonadjacent-item search may hold (Elle's BFS over simple paths)


class Search:
    """All cycle anomalies of a typed edge list (see the module docstring)."""

    def __init__(self, n: int, src: np.ndarray, dst: np.ndarray, kind: np.ndarray, order: np.ndarray,
                 types: tuple[str, ...], shortest_work: int = SHORTEST_WORK, decide_work: int = DECIDE_WORK) -> None:
        self.n, self.src, self.dst, self.kind, self.order = n, src, dst, kind, order
        self.types = types
        self.shortest_work, self.decide_work = shortest_work, decide_work

    def run(self) -> list[dict[str, Any]]:
        """``[{"type", "edges" (edge ids in cycle order), "scc" (vertex count), ...}]``, components in
        order of their smallest vertex, types in Elle's order."""
        n, src, dst, kind = self.n, self.src, self.dst, self.kind
        if n == 0 or len(src) == 0:
            return []
        lab = scc_labels(n, src, dst)
        inside = np.flatnonzero(lab[src] == lab[dst])
        if len(inside) == 0:
            return []
        comp = lab[src[inside]]
        o = np.argsort(comp, kind="stable")
        inside, comp = inside[o], comp[o]
        comps, starts = np.unique(comp, return_index=True)
        ends = np.append(starts[1:], len(comp))
        self.lab = lab
        self._inside = inside
        self._sizes = np.bincount(lab)
        # the internal edges by (src, dst), lowest kind first: two-edge cycles for every type at once
        pk = src[inside] * np.int64(n) + dst[inside]
        o2 = np.lexsort((kind[inside], pk))
        self._pk, self._pe = pk[o2], inside[o2]
        # per type, computed for every component the first time a component needs it: the
        # components where it exists (candidate edges), with a two-edge cycle where there is one
        self.cands: dict[str, dict[int, np.ndarray]] = {}
        self.two: dict[str, dict[int, tuple[int, int]]] = {}
        ends_o = np.minimum(self.order[src[inside]], self.order[dst[inside]])
        firsts = np.minimum.reduceat(ends_o, starts)
        out: list[dict[str, Any]] = []
        for i in np.lexsort((comps, firsts)).tolist():
            a, b = int(starts[i]), int(ends[i])
            out.extend(self._component(int(comps[i]), inside[a:b]))
        return out

    def _ensure(self, t: str) -> None:
        if t in self.cands:
            return
        fam, proj, req = spec(t)
        if fam == "scc":
            self._scc_type(t, self._inside, proj, req)
        else:
            self._rw_two(t, self._inside, proj)

    # -- global, vectorised parts ---------------------------------------------------------

    def _first_by_order(self, eids: np.ndarray, by: np.ndarray) -> dict[int, int]:
        """Per group ``by``, the edge of ``eids`` with the smallest (order[src], order[dst])."""
        if len(eids) == 0:
            return {}
        o = np.lexsort((self.order[self.dst[eids]], self.order[self.src[eids]], by))
        eids, by = eids[o], by[o]
        first = np.ones(len(eids), bool)
        first[1:] = by[1:] != by[:-1]
        return dict(zip(by[first].tolist(), eids[first].tolist()))

    def _back_edges(self, cand: np.ndarray, kinds: tuple[int, ...]) -> np.ndarray:
        """For each candidate edge u -> v, the lowest-kind internal edge v -> u of one of
        ``kinds`` (or -1)."""
        out = np.full(len(cand), -1, np.int64)
        if len(cand) == 0 or len(self._pk) == 0:
            return out
        want = self.dst[cand] * np.int64(self.n) + self.src[cand]
        lo = np.searchsorted(self._pk, want, "left")
        hi = np.searchsorted(self._pk, want, "right")
        ok = np.zeros(len(G_KIND_TABLE), bool)
        ok[list(kinds)] = True
        for i in range(len(G_KIND_TABLE)):  # parallel edges of one pair: at most one per kind
            at = lo + i
            inr = at < hi
            at_c = np.minimum(at, len(self._pk) - 1)
            e = self._pe[at_c]
            take = inr & (out < 0) & ok[self.kind[e]]
            out[take] = e[take]
        return out

    def _scc_type(self, t: str, inside: np.ndarray, proj: tuple[int, ...], req: int) -> None:
        sel = inside[_kind_mask(proj)[self.kind[inside]]]
        if len(sel) == 0 or not (self.kind[sel] == req).any():
            self.cands[t], self.two[t] = {}, {}
            return
        labp = scc_labels(self.n, self.src[sel], self.dst[sel])
        r = sel[(self.kind[sel] == req) & (labp[self.src[sel]] == labp[self.dst[sel]])]
        comp = self.lab[self.src[r]]
        o = np.argsort(comp, kind="stable")
        r, comp = r[o], comp[o]
        uc, st = np.unique(comp, return_index=True)
        self.cands[t] = {int(c): r[a:b] for c, a, b in zip(uc, st, np.append(st[1:], len(r)))}
        back = self._back_edges(r, proj)
        has = back >= 0
        first = self._first_by_order(r[has], comp[has])
        bmap = dict(zip(r[has].tolist(), back[has].tolist()))
        self.two[t] = {c: (e, bmap[e]) for c, e in first.items()}

    def _rw_two(self, t: str, inside: np.ndarray, proj: tuple[int, ...]) -> None:
        """Two-edge cycles of the rw families: an rw edge u -> v and a projection edge v -> u
        (a G-single-item; also the shortest possible cycle of any kind)."""
        rw = inside[self.kind[inside] == RW]
        back = self._back_edges(rw, proj) if t.startswith("G-single-item") else np.full(len(rw), -1)
        has = back >= 0
        self.two[t] = {}
        if t.startswith("G-single-item") and has.any():
            first = self._first_by_order(rw[has], self.lab[self.src[rw[has]]])
            bmap = dict(zip(rw[has].tolist(), back[has].tolist()))
            self.two[t] = {c: (e, bmap[e]) for c, e in first.items()}
        comp = self.lab[self.src[rw]]
        o = np.argsort(comp, kind="stable")
        rw, comp = rw[o], comp[o]
        uc, st = np.unique(comp, return_index=True)
        self.cands[t] = {int(c): rw[a:b] for c, a, b in zip(uc, st, np.append(st[1:], len(rw)))}

    # -- one component --------------------------------------------------------------------

    def _component(self, c: int, eids: np.ndarray) -> list[dict[str, Any]]:
        size = int(self._sizes[c])
        local: _Local | None = None

        def loc() -> _Local:
            nonlocal local
            if local is None:
                verts = np.unique(np.concatenate([self.src[eids], self.dst[eids]]))
                local = _Local(verts, eids, self.src, self.dst, self.kind)
            return local

        found: list[dict[str, Any]] = []
        redundant: set[str] = set()
        searched: list[str] = []
        for t in self.types:
            if t in redundant:
                continue
            searched.append(t)
            self._ensure(t)
            try:
                cyc = self._cycle(t, c, loc)
            except Timeout:
                found += self._timeout(t, searched[:-1], found, loc, size)
                break
            if cyc is not None:
                found.append({"type": t, "edges": cyc, "scc": size})
                redundant |= IMPLIES[t]
        for f in found:
            f["vertex"] = int(self.src[eids[0]])
        return found

    def _order_cands(self, cands: np.ndarray) -> np.ndarray:
        return cands[np.lexsort((self.order[self.dst[cands]], self.order[self.src[cands]]))]

    def _cycle(self, t: str, c: int, loc) -> list[int] | None:
        """A cycle of type ``t`` in component ``c`` (edge ids), or None; a two-edge cycle found
        for every component at once wins."""
        cands = self.cands[t].get(c)
        if cands is None or len(cands) == 0:
            return None
        if c in self.two[t]:
            return list(self.two[t][c])
        fam, proj, _ = spec(t)
        search = {"scc": self._shortest_scc, "single": self._single}.get(fam, self._nonadjacent)
        return search(cands, loc(), proj)

    def _shortest_scc(self, cands: np.ndarray, L: _Local, proj: tuple[int, ...]) -> list[int] | None:
        """The shortest cycle through a candidate edge over ``proj``, within the budget."""
        nbrs, edges = L.adj(proj)
        budget = _Budget(self.shortest_work)
        best: list[int] | None = None
        for e in self._order_cands(cands).tolist():
            u = int(np.searchsorted(L.verts, self.src[e]))
            v = int(np.searchsorted(L.verts, self.dst[e]))
            try:
                p = _bfs(nbrs, edges, v, u, budget if best is not None else _Budget(1 << 62),
                         len(best) - 2 if best is not None else float("inf"))
            except Timeout:
                break
            if p is not None and (best is None or len(p) + 1 < len(best)):
                best = [e] + p
                if len(best) <= 3:
                    break  # two-edge cycles were ruled out above
        return best

    def _single(self, cands: np.ndarray, L: _Local, proj: tuple[int, ...]) -> list[int] | None:
        """G-single-item (+ variant): an rw edge u -> v and a path v -> u over ``proj``."""
        nbrs, edges = L.adj(proj)
        labp, topo = L.labels(proj)
        decide = _Budget(self.decide_work)
        shorter = _Budget(self.shortest_work)
        best: list[int] | None = None
        cl = self._order_cands(cands)
        us = np.searchsorted(L.verts, self.src[cl])
        vs = np.searchsorted(L.verts, self.dst[cl])
        same = labp[us] == labp[vs]
        # candidates whose ends share a projected component close for sure: try those first
        order = np.concatenate([np.flatnonzero(same), np.flatnonzero(~same & ((labp[vs] >= labp[us]) | ~topo))])
        floor = labp.tolist() if topo else None
        for i in order.tolist():
            u, v, e = int(us[i]), int(vs[i]), int(cl[i])
            try:
                p = _bfs(nbrs, edges, v, u, shorter if best is not None else decide,
                         len(best) - 2 if best is not None else float("inf"), floor, floor[u] if floor else 0)
            except Timeout:
                if best is None:
                    raise
                break
            if p is not None and (best is None or len(p) + 1 < len(best)):
                best = [e] + p
                if len(best) <= 3:
                    break
        return best

    def _nonadjacent(self, cands: np.ndarray, L: _Local, proj: tuple[int, ...]) -> list[int] | None:
        """G-nonadjacent-item (+ variant): two or more rw edges, no two adjacent, other edges
        from ``proj``; absence decided exactly on a two-layer product graph, presence by a
        search over simple paths (Elle's elle.bfs/search), within a budget."""
        n = L.n
        pm = L.mask(proj)
        rm = L.kind == RW
        # layer 0: last edge not rw (or start); layer 1: last edge rw
        s = np.concatenate([L.ls[rm], L.ls[pm], L.ls[pm] + n])
        d = np.concatenate([L.ld[rm] + n, L.ld[pm], L.ld[pm]])
        lab = scc_labels(2 * n, s, d)
        rs, rd = L.ls[rm], L.ld[rm] + n
        if not (lab[rs] == lab[rd]).any():
            return None
        nbrs, edges = L.adj(proj)
        rnb, red = L.adj((RW,))
        budget = _Budget(self.decide_work)
        cl = self._order_cands(cands)
        for e in cl.tolist():
            u = int(np.searchsorted(L.verts, self.src[e]))
            v = int(np.searchsorted(L.verts, self.dst[e]))
            if lab[u] != lab[v + n]:
                continue
            p = self._simple_nonadjacent(u, v, nbrs, edges, rnb, red, budget)
            if p is not None:
                return [e] + p
        raise Timeout  # the product graph has such a closed walk, but no simple cycle was found

    def _simple_nonadjacent(self, u: int, v: int, nbrs, edges, rnb, red, budget: _Budget) -> list[int] | None:
        """Breadth-first over simple paths from v (just reached by an rw edge from u) back to u,
        no two rw edges in a row, at least one more rw edge, not ending on an rw edge."""
        # a path: (last vertex, last edge was rw, rw edges taken, visited set, edge ids)
        q = deque([(v, True, 1, frozenset((u, v)), ())])
        held = 1
        while q:
            x, last_rw, k, seen, path = q.popleft()
            budget.spend(1 + len(nbrs[x]) + len(rnb[x]))
            for w, e in zip(nbrs[x], edges[x]):
                if w == u:
                    if k >= 2:
                        return list(path) + [e]
                    continue
                if w not in seen:
                    q.append((w, False, k, seen | {w}, path + (e,)))
                    held += 1
            if not last_rw:
                for w, e in zip(rnb[x], red[x]):
                    if w != u and w not in seen:
                        q.append((w, True, k + 1, seen | {w}, path + (e,)))
                        held += 1
            if held > PATHS_LIMIT:
                raise Timeout
        return None

    def _timeout(self, t: str, searched: list[str], found: list[dict], loc, size: int) -> list[dict[str, Any]]:
        """Elle's answer to a search that ran out of time: cycle-search-timeout, and a fallback
        cycle of the component named by its edges (unless that type was already found)."""
        L = loc()
        kinds = tuple(sorted(set(L.kind.tolist())))
        nbrs, edges = L.adj(kinds)
        e = int(L.eids[np.lexsort((self.order[self.dst[L.eids]], self.order[self.src[L.eids]]))[0]])
        u = int(np.searchsorted(L.verts, self.src[e]))
        v = int(np.searchsorted(L.verts, self.dst[e]))
        p = _bfs(nbrs, edges, v, u, _Budget(1 << 62))
        cyc = [e] + (p or [])
        got = {f["type"] for f in found}
        out: list[dict[str, Any]] = [{"type": "cycle-search-timeout", "edges": [], "scc": size,
                                      "searching": t, "not_found": [x for x in searched if x not in got]}]
        ft = classify([int(self.kind[x]) for x in cyc])
        if ft not in got:
            out.append({"type": ft, "edges": cyc, "scc": size, "fallback": True})
        return out
