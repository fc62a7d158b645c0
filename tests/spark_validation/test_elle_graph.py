"""The cycle search kernel (spark_validation/checks/elle/search.py) against a brute-force oracle written
from Elle's definitions: on small random typed graphs, every simple cycle is enumerated and
named as elle.txn/cycle-explainer names it; per strongly connected component, the types Elle
reports are the ones of elle.txn/cycle-anomaly-specs, in anomaly-depth order, that have a
matching cycle and are not implied by a type already found (elle.consistency-model/implied-anomalies).
The kernel must report exactly those types, each with a valid cycle of that type, and (except
G-nonadjacent-item, where Elle and we report the first found) a shortest one."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from spark_validation.checks.elle import search as G
from tests import examples

ALL = (G.WW, G.WR, G.RW, G.PROCESS, G.REALTIME)


def _rels(t: str) -> set[int]:
    """Edge kinds a cycle of type t may use (elle.txn base-cycle-anomaly-specs :rels, plus rw
    for the rw families and the variant's kind)."""
    base, extra = G.split(t)
    rels = {G.WW} if base == "G0" else {G.WW, G.WR} if base == "G1c" else {G.WW, G.WR, G.RW}
    return rels | set(extra)


def _simple_cycles(n: int, edges: list[tuple[int, int, int]]):
    """Every simple cycle, as a list of edge indexes, each cycle once per choice of parallel
    edge (rotations removed: the cycle starts at its smallest vertex)."""
    out = []
    by_src: dict[int, list[int]] = {}
    for i, (s, d, k) in enumerate(edges):
        by_src.setdefault(s, []).append(i)

    def go(start: int, v: int, seen: set[int], path: list[int]) -> None:
        for i in by_src.get(v, []):
            w = edges[i][1]
            if w == start:
                out.append(path + [i])
            elif w > start and w not in seen:
                go(start, w, seen | {w}, path + [i])

    for s in range(n):
        go(s, s, {s}, [])
    return out


def _oracle(n: int, edges: list[tuple[int, int, int]], types: tuple[str, ...]):
    """Per component (frozenset of vertices): {type: shortest valid length}."""
    src = np.array([e[0] for e in edges], np.int64)
    dst = np.array([e[1] for e in edges], np.int64)
    lab = G.scc_labels(n, src, dst)
    cycles = _simple_cycles(n, edges)
    comps: dict[int, dict[str, int]] = {}
    for c in set(lab[src[lab[src] == lab[dst]]].tolist()):
        best: dict[str, int] = {}
        for cyc in cycles:
            if lab[edges[cyc[0]][0]] != c:
                continue
            kinds = [edges[i][2] for i in cyc]
            t = G.classify(kinds)
            if t in types and set(kinds) <= _rels(t):
                best[t] = min(best.get(t, 10 ** 9), len(cyc))
        want: dict[str, int] = {}
        redundant: set[str] = set()
        for t in types:
            if t in redundant or t not in best:
                continue
            want[t] = best[t]
            redundant |= G.IMPLIES[t]
        comps[c] = want
    return lab, comps


@st.composite
def typed_graphs(draw):
    n = draw(st.integers(2, 6))
    kinds = draw(st.sets(st.sampled_from(ALL), min_size=1))
    m = draw(st.integers(1, 14))
    edges = set()
    for _ in range(m):
        s, d = draw(st.integers(0, n - 1)), draw(st.integers(0, n - 1))
        if s != d:
            edges.add((s, d, draw(st.sampled_from(sorted(kinds)))))
    return n, sorted(edges)


@st.composite
def rw_graphs(draw):
    """Graphs rich in rw edges, some built around a ring that alternates rw with other edges
    (where G-nonadjacent-item and the G2-item variants live)."""
    n = draw(st.integers(4, 7))
    extra = draw(st.sampled_from([(), (G.PROCESS,), (G.REALTIME,)]))
    ks = [G.RW, G.RW, G.WR, G.WW, *extra]
    edges = set()
    if draw(st.booleans()):
        ring = draw(st.integers(4, n))
        for i in range(ring):
            edges.add((i, (i + 1) % ring, G.RW if i % 2 == 0 else draw(st.sampled_from([G.WR, G.WW, *extra]))))
    for _ in range(draw(st.integers(0, 12))):
        s, d = draw(st.integers(0, n - 1)), draw(st.integers(0, n - 1))
        if s != d:
            edges.add((s, d, draw(st.sampled_from(ks))))
    return n, sorted(edges)


@examples.MODEL(deadline=None)
@given(st.one_of(typed_graphs(), rw_graphs()))
def test_search_matches_brute_force_oracle(g) -> None:
    n, edges = g
    if not edges:
        return
    types = G.enabled_types({k for _, _, k in edges})
    src = np.array([e[0] for e in edges], np.int64)
    dst = np.array([e[1] for e in edges], np.int64)
    kind = np.array([e[2] for e in edges], np.int64)
    lab, want = _oracle(n, edges, types)
    got = G.Search(n, src, dst, kind, np.arange(n), types).run()
    by_comp: dict[int, dict[str, list[int]]] = {}
    for f in got:
        assert f["type"] in types and f["type"] != "cycle-search-timeout", f
        by_comp.setdefault(int(lab[f["vertex"]]), {})[f["type"]] = f["edges"]
    assert {c: set(ts) for c, ts in by_comp.items()} == {c: set(ts) for c, ts in want.items() if ts}, (edges, got)
    for c, ts in by_comp.items():
        for t, cyc in ts.items():
            # a closed simple path of that type
            assert all(edges[a][1] == edges[b][0] for a, b in zip(cyc, cyc[1:] + cyc[:1])), (t, cyc)
            assert len({edges[i][0] for i in cyc}) == len(cyc)
            kinds = [edges[i][2] for i in cyc]
            assert G.classify(kinds) == t and set(kinds) <= _rels(t), (t, kinds, edges)
            if not t.startswith("G-nonadjacent-item"):
                assert len(cyc) == want[c][t], (t, cyc, want[c], edges)


def test_elle_order_and_implications() -> None:
    # facts from elle.consistency-model: G-single-item and G0 have depth 0 and "G-single-item" sorts
    # first; G0 implies G1c and the G0/G1c variants; G-single-item implies G2-item
    assert G.ORDER[:2] == ("G-single-item", "G0")
    assert G.IMPLIES["G0"] == {"G1c", "G0-process", "G0-realtime", "G1c-process", "G1c-realtime"}
    assert "G2-item" in G.IMPLIES["G-single-item"] and "G2-item-realtime" in G.IMPLIES["G-single-item"]
    assert G.IMPLIES["G1c-realtime"] == frozenset()
    assert G.classify([G.RW, G.WR, G.RW, G.WR]) == "G-nonadjacent-item"
    assert G.classify([G.RW, G.WR, G.RW]) == "G2-item"  # the last and the first rw are adjacent
    assert G.classify([G.WR, G.REALTIME, G.PROCESS]) == "G1c-realtime"


def test_timeout_gives_elle_fallback() -> None:
    # u -rw-> v -wr-> x -wr-> u: a G-single-item the search cannot decide with no budget
    src, dst = np.array([0, 1, 2]), np.array([1, 2, 0])
    kind = np.array([G.RW, G.WR, G.WR])
    got = G.Search(3, src, dst, kind, np.arange(3), G.enabled_types(kind.tolist()), decide_work=1).run()
    assert [f["type"] for f in got] == ["cycle-search-timeout", "G-single-item"]
    assert got[0]["searching"] == "G-single-item" and got[1]["fallback"]


@pytest.mark.slow
def test_million_vertex_ring_is_linear() -> None:
    import time

    n = 1_000_000
    src = np.arange(n, dtype=np.int64)
    dst = (src + 1) % n
    kind = np.full(n, G.WR)
    t = time.perf_counter()
    (f,) = G.Search(n, src, dst, kind, src, G.enabled_types([G.WR])).run()
    assert f["type"] == "G1c" and f["scc"] == n and len(f["edges"]) == n
    assert time.perf_counter() - t < 60
