"""Elle-style cycles (spark_validation/checks/elle/): labelled micro-histories for each cycle kind and
edge rule, written from Elle's definitions (elle.txn cycle-anomaly-specs, cycle-explainer,
elle.consistency-model implied-anomalies) and Jepsen's edge rules (jepsen.tests.kafka ww-graph /
wr-graph, elle.core process-graph / realtime-graph), the allowed-error-types of Jepsen's
checker, the kernel's edges and cycles against the reference (Hypothesis), and a 1M-op chain (slow)."""

from __future__ import annotations

import numpy as np
import pytest

from hypothesis import given
from hypothesis import strategies as st

from spark_validation.checks.elle import check as elle
from spark_validation.checks.elle.check import check_rows, check_rows_ref, edges_rows
from spark_validation.checks.elle.reference import CycleOptions, edges_ref, realtime_pairs
from spark_validation.checks.elle.search import scc_labels
from spark_validation.ingest.records import OpRow
from tests import examples
from tests.spark_validation.strategies import kafka_corpus
from tests.spark_validation.cases import H


def _kinds(anoms: list) -> list[str]:
    return sorted(a.kind for a in anoms)


def g1c() -> H:
    h = H()  # each txn polls the other's send: wr both ways (circular information flow)
    h.txn(0, [["send", "x", 1], ["poll"]], [["send", "x", [0, 1]], ["poll", {"y": [[0, 2]]}]])
    h.txn(1, [["send", "y", 2], ["poll"]], [["send", "y", [0, 2]], ["poll", {"x": [[0, 1]]}]])
    return h


def test_g1c_wr_cycle_with_evidence_in_words() -> None:
    (a,) = check_rows_ref(g1c().rows("h"), CycleOptions())
    assert a.kind == "G1c" and a.history == "h"
    ev = a.evidence.to_json()
    assert ev["cycle"] == [1, 3, 1] and ev["scc_size"] == 2 and "allowed" not in ev
    assert [s["kind"] for s in ev["steps"]] == ["wr", "wr"]
    assert ev["steps"][0]["text"] == "op 1 (process 0) sent '1' to key 'x', which op 3 (process 1) polled"
    assert ev["explanation"].endswith("a cycle, circular information flow (G1c)")


def test_g1c_is_allowed_with_ww_deps() -> None:
    anoms = check_rows_ref(g1c().rows("h"), CycleOptions(ww_deps=True))
    assert _kinds(anoms) == ["G1c"] and elle.is_allowed(anoms[0])


def g0() -> H:
    h = H()  # x: T1 before T2; y: T2 before T1 (offsets from the sends)
    h.txn(0, [["send", "x", 1], ["send", "y", 2]], [["send", "x", [0, 1]], ["send", "y", [1, 2]]], f="send")
    h.txn(1, [["send", "x", 3], ["send", "y", 4]], [["send", "x", [1, 3]], ["send", "y", [0, 4]]], f="send")
    return h


def test_g0_needs_ww_deps_and_is_allowed() -> None:
    assert check_rows_ref(g0().rows("h"), CycleOptions()) == []  # no ww edges without --ww-deps
    (a,) = check_rows_ref(g0().rows("h"), CycleOptions(ww_deps=True))
    assert a.kind == "G0" and elle.is_allowed(a)
    assert [s["kind"] for s in a.evidence.to_json()["steps"]] == ["ww", "ww"]
    assert "sent '1' to key 'x' before op 3 (process 1) sent '3' to it" in a.evidence.to_json()["steps"][0]["text"]


def g_single() -> H:
    h = H()
    h.send(2, "x", 0, 0)
    # T1 polls x up to 0 and sees T2's y=2; T2 sent x=3, the version right after 0: T1 -rw-> T2 -wr-> T1
    h.txn(0, [["poll"]], [["poll", {"x": [[0, 0]], "y": [[0, 2]]}]], f="poll")
    h.txn(1, [["send", "x", 3], ["send", "y", 2]], [["send", "x", [1, 3]], ["send", "y", [0, 2]]], f="send")
    h.poll(3, "x", [(0, 0), (1, 3)])
    return h


def test_g_single_item_with_rw_deps() -> None:
    # Elle names a cycle with one rw edge and no predicate G-single-item (elle.txn/cycle-explainer)
    assert _kinds(check_rows_ref(g_single().rows("h"), CycleOptions())) == []
    anoms = check_rows_ref(g_single().rows("h"), CycleOptions(rw_deps=True))
    assert _kinds(anoms) == ["G-single-item"], anoms
    steps = anoms[0].evidence.to_json()["steps"]
    assert sorted(s["kind"] for s in steps) == ["rw", "wr"]
    rw = next(s for s in steps if s["kind"] == "rw")
    assert rw["text"] == "op 3 (process 0) polled key 'x' up to '0' and did not see '3', which op 5 (process 1) sent next"


def g2_item() -> H:
    h = H()
    h.send(2, "x", 0, 0)
    h.send(2, "y", 0, 0)
    # T1 reads x up to 0 and sends y=1 next; T2 reads y up to 0 and sends x=1 next: rw both ways
    h.txn(0, [["poll"], ["send", "y", 1]], [["poll", {"x": [[0, 0]]}], ["send", "y", [1, 1]]])
    h.txn(1, [["poll"], ["send", "x", 1]], [["poll", {"y": [[0, 0]]}], ["send", "x", [1, 1]]])
    return h


def test_g2_item_two_anti_dependencies() -> None:
    anoms = check_rows_ref(g2_item().rows("h"), CycleOptions(rw_deps=True))
    assert _kinds(anoms) == ["G2-item"], anoms
    assert [s["kind"] for s in anoms[0].evidence.to_json()["steps"]] == ["rw", "rw"]


def g_nonadjacent() -> H:
    h = H()
    h.txn(5, [["send", "x", 10], ["send", "y", 20]], [["send", "x", [0, 10]], ["send", "y", [0, 20]]], f="send")
    # T1 polls x up to 10 (T2 sends 11 next) and w=40 (T4's); T3 polls z=30 (T2's) and y up to 20
    # (T4 sends 21 next): T1 -rw-> T2 -wr-> T3 -rw-> T4 -wr-> T1, no two rw edges adjacent
    h.txn(1, [["poll"]], [["poll", {"x": [[0, 10]], "w": [[0, 40]]}]], f="poll")
    h.txn(2, [["send", "x", 11], ["send", "z", 30]], [["send", "x", [1, 11]], ["send", "z", [0, 30]]], f="send")
    h.txn(3, [["poll"]], [["poll", {"z": [[0, 30]], "y": [[0, 20]]}]], f="poll")
    h.txn(4, [["send", "y", 21], ["send", "w", 40]], [["send", "y", [1, 21]], ["send", "w", [0, 40]]], f="send")
    return h


def test_g_nonadjacent_item() -> None:
    # elle.txn/cycle-explainer: two or more rw edges, none adjacent, is G-nonadjacent-item (not G2-item)
    anoms = check_rows_ref(g_nonadjacent().rows("h"), CycleOptions(rw_deps=True))
    assert _kinds(anoms) == ["G-nonadjacent-item"], anoms
    ev = anoms[0].evidence.to_json()
    assert [s["kind"] for s in ev["steps"]] == ["rw", "wr", "rw", "wr"] and ev["cycle"] == [3, 5, 7, 9, 3]
    assert ev["explanation"].endswith("two or more anti-dependencies, none adjacent (G-nonadjacent-item)")


def test_g_single_item_implies_g2_item_in_one_component() -> None:
    # elle.consistency-model/implied-anomalies: G-single-item -> G-nonadjacent-item -> G2-item, so once a
    # component has a G-single-item, Elle does not look for a G2-item in it
    h = g2_item()
    h.ops[-3]["value"] = [["poll", {"x": [[0, 0]], "z": [[0, 5]]}], ["send", "y", [1, 1]]]  # T1 also polls T2's z
    h.ops[-1]["value"] = [["poll", {"y": [[0, 0]]}], ["send", "x", [1, 1]], ["send", "z", [0, 5]]]
    anoms = check_rows_ref(h.rows("h"), CycleOptions(rw_deps=True))
    assert _kinds(anoms) == ["G-single-item"], anoms


def test_g0_implies_g1c_in_one_component() -> None:
    # G0 -> G1c (Adya): a component with a write cycle is not searched for G1c
    h = g0()
    h.ops[1]["value"] = [["send", "x", [0, 1]], ["send", "y", [1, 2]], ["poll", {"z": [[0, 9]]}]]
    h.ops[1]["f"] = "txn"
    h.ops[3]["value"] = [["send", "x", [1, 3]], ["send", "y", [0, 4]], ["send", "z", [0, 9]]]
    # with ww edges the component holds a G0 (T1 -ww-> T2 -ww-> T1) and a G1c (T1 -ww-> T2 -wr-> T1)
    assert _kinds(check_rows_ref(h.rows("h"), CycleOptions())) == []
    assert _kinds(check_rows_ref(h.rows("h"), CycleOptions(ww_deps=True))) == ["G0"]


def stale_read() -> H:
    h = H()
    h.send(0, "x", 0, 0)
    h.send(1, "x", 1, 1)  # W completes ...
    h.poll(2, "x", [(0, 0)])  # ... before P is invoked, and P does not see it
    return h


def test_g_single_item_realtime_stale_read() -> None:
    # W -realtime-> P -rw-> W: a read that missed an earlier completed write (strict serializability)
    assert check_rows_ref(stale_read().rows("h"), CycleOptions(rw_deps=True)) == []
    (a,) = check_rows_ref(stale_read().rows("h"), CycleOptions(rw_deps=True, realtime=True))
    assert a.kind == "G-single-item-realtime" and not elle.is_allowed(a)
    assert [s["kind"] for s in a.evidence.to_json()["steps"]] == ["rw", "realtime"]


def test_process_graph_takes_every_ok_op() -> None:
    # elle.core/process-graph links each process's ok ops, an empty poll too
    h = H()
    h.send(0, "x", 1, 0)
    h.txn(0, [["poll"]], [["poll", {}]], f="poll")
    h.send(0, "y", 2, 0)
    opts = CycleOptions(process=True)
    proc = sorted((e[1], e[3]) for e in edges_ref(h.rows("h"), opts) if e[5] == "process")
    assert proc == [(1, 3), (3, 5)]
    assert edges_rows(h.rows("h"), opts) == edges_ref(h.rows("h"), opts)


def test_ww_edge_follows_previous_value() -> None:
    # jepsen.tests.kafka/ww-graph: a written v2 at its last index j (by-value) follows the value at
    # j - 1; an earlier occurrence of v2 gets no edge: x@0 (T1), a@1 (T2), b@2 (T3), a@3 (T4)
    h = H()
    for p, (v, o) in enumerate([("x", 0), ("a", 1), ("b", 2), ("a", 3)]):
        h.send(p, "k", v, o)
    opts = CycleOptions(ww_deps=True)
    ww = sorted((e[1], e[3], e[7], e[8]) for e in edges_ref(h.rows("h"), opts) if e[5] == "ww")
    assert ww == [(5, 7, "b", "a"), (7, 5, "a", "b")]  # not x -> a: a's index is 3
    assert edges_rows(h.rows("h"), opts) == edges_ref(h.rows("h"), opts)


def g1c_process() -> H:
    h = H()  # process 0: A polls y=2 (C's), then B sends x=1; process 1: C sends y=2, polls x=1 (B's)
    h.txn(0, [["poll"]], [["poll", {"y": [[0, 2]]}]], f="poll")
    h.txn(0, [["send", "x", 1]], [["send", "x", [0, 1]]], f="send")
    h.txn(1, [["send", "y", 2], ["poll"]], [["send", "y", [0, 2]], ["poll", {"x": [[0, 1]]}]])
    return h


def test_g1c_process_needs_process_order() -> None:
    # wr edges C -> A and B -> C only close into a cycle with the process edge A -> B
    assert check_rows_ref(g1c_process().rows("h"), CycleOptions()) == []
    (a,) = check_rows_ref(g1c_process().rows("h"), CycleOptions(process=True))
    assert a.kind == "G1c-process" and not elle.is_allowed(a)
    assert sorted(s["kind"] for s in a.evidence.to_json()["steps"]) == ["process", "wr", "wr"]
    assert "op 1 (process 0) completed before op 3 (process 0) on the same process" in a.evidence.to_json()["explanation"]


def g1c_realtime() -> H:
    h = H()  # A completes, then B is invoked; A polled y=2, which B sends: a read from the future
    h.txn(0, [["poll"]], [["poll", {"y": [[0, 2]]}]], f="poll")
    h.txn(1, [["send", "y", 2]], [["send", "y", [0, 2]]], f="send")
    return h


def test_g1c_realtime_needs_realtime_order() -> None:
    assert check_rows_ref(g1c_realtime().rows("h"), CycleOptions()) == []
    (a,) = check_rows_ref(g1c_realtime().rows("h"), CycleOptions(realtime=True))
    assert a.kind == "G1c-realtime" and not elle.is_allowed(a)
    assert [s["kind"] for s in a.evidence.to_json()["steps"]] == ["wr", "realtime"]
    assert a.evidence.to_json()["steps"][1]["text"] == "op 1 (process 0) completed before op 3 (process 1) was invoked (real time)"


def test_realtime_graph_is_a_transitive_reduction() -> None:
    # a completes; b invoked and completes; c invoked: a -> b and b -> c, but not a -> c (Elle)
    h = H()
    for p in range(3):
        h.txn(p, [["poll"]], [["poll", {}]], f="poll")
    assert sorted((a, c) for a, _, c, _ in realtime_pairs(h.rows("h"))) == [(1, 3), (3, 5)]
    # concurrent ops are not ordered
    h2 = H()
    h2._op(process=0, type="invoke", f="poll", value=[["poll"]])
    h2._op(process=1, type="invoke", f="poll", value=[["poll"]])
    h2._op(process=0, type="ok", f="poll", value=[["poll", {}]])
    h2._op(process=1, type="ok", f="poll", value=[["poll", {}]])
    assert realtime_pairs(h2.rows("h2")) == []


def test_serial_history_has_no_cycles() -> None:
    h = H()
    h.txn(0, [["send", "x", 1]], [["send", "x", [0, 1]]], f="send")
    h.txn(1, [["poll"], ["send", "y", 2]], [["poll", {"x": [[0, 1]]}], ["send", "y", [0, 2]]])
    h.txn(2, [["poll"]], [["poll", {"x": [[0, 1]], "y": [[0, 2]]}]], f="poll")
    opts = CycleOptions(ww_deps=True, rw_deps=True, process=True, realtime=True)
    assert len(edges_ref(h.rows("h"), opts)) >= 3
    assert check_rows_ref(h.rows("h"), opts) == []


def test_shortest_cycle_is_reported() -> None:
    # a ring of 6 wr edges plus a chord that closes a 2-cycle: the 2-cycle is the evidence
    n = 6
    edges = [("h", i, "p", (i + 1) % n, "p", "wr", "k", str(i), None) for i in range(n)]
    edges.append(("h", 3, "p", 2, "p", "wr", "k", "c", None))
    (a,) = elle.find_cycles(edges, CycleOptions())
    assert a.evidence.to_json()["cycle"] == [2, 3, 2] and a.evidence.to_json()["scc_size"] == n


def strongly_connected(n: int, adj: list[list[int]]) -> list[list[int]]:
    """The components with two or more vertices of an adjacency-list graph, by ``scc_labels``."""
    src = np.array([u for u, nb in enumerate(adj) for _ in nb], np.int64)
    dst = np.array([w for nb in adj for w in nb], np.int64)
    groups: dict[int, list[int]] = {}
    for v, c in enumerate(scc_labels(n, src, dst).tolist()):
        groups.setdefault(c, []).append(v)
    return [g for g in groups.values() if len(g) > 1]


def test_components() -> None:
    adj = [[1], [2], [0, 3], [4], [3], []]
    assert sorted(sorted(c) for c in strongly_connected(6, adj)) == [[0, 1, 2], [3, 4]]


ALL_EDGES = CycleOptions(ww_deps=True, rw_deps=True, process=True, realtime=True)


def test_offset_beyond_64_bits_is_decided_by_the_reference() -> None:
    # the kernel's columns are 64-bit; such a history is checked by the reference, not a traceback
    h = H()
    h.txn(0, [["send", "x", 1], ["poll"]], [["send", "x", [2**70, 1]], ["poll", {"y": [[0, 2]]}]])
    h.txn(1, [["send", "y", 2], ["poll"]], [["send", "y", [0, 2]], ["poll", {"x": [[2**70, 1]]}]])
    rows = h.rows("h")
    assert _kinds(check_rows(rows, ALL_EDGES)) == _kinds(check_rows_ref(rows, ALL_EDGES)) == ["G1c"]


@examples.LARGE(deadline=None)
@given(kafka_corpus(min_size=1, max_size=8))
def test_kernel_edges_and_cycles_equal_reference(rows: list[OpRow]) -> None:
    # the vectorised edges (elle.graph_of_table) are the reference's, and so are the cycles
    for opts in (CycleOptions(), CycleOptions(realtime=True), ALL_EDGES):
        assert edges_rows(rows, opts) == edges_ref(rows, opts), opts
        assert check_rows(rows, opts) == check_rows_ref(rows, opts), opts


def test_labelled_histories_kernel_equals_reference() -> None:
    for make in (g1c, g0, g_single, g2_item, g_nonadjacent, g1c_process, g1c_realtime, stale_read):
        rows = make().rows(make.__name__)
        for opts in (CycleOptions(), CycleOptions(realtime=True), ALL_EDGES):
            assert edges_rows(rows, opts) == edges_ref(rows, opts), (make.__name__, opts)
            assert check_rows(rows, opts) == check_rows_ref(rows, opts), (make.__name__, opts)


@pytest.mark.slow
def test_million_op_chain_is_fast() -> None:
    # a 1M-vertex wr chain closed into one cycle: one component, found without a quadratic search
    n = 1_000_000
    edges = [("h", i, "p", (i + 1) % n, "p", "wr", "k", str(i), None) for i in range(n)]
    (a,) = elle.find_cycles(edges, CycleOptions())
    assert a.evidence.to_json()["scc_size"] == n and len(a.evidence.to_json()["steps"]) == n


def test_kraft_audit_reports_cycles(tmp_path) -> None:
    from click.testing import CliRunner

    from spark_validation.cli import audit

    runner = CliRunner()
    f = g1c().write_ndjson(tmp_path / "g1c.ndjson")
    r = runner.invoke(audit, [str(f), "--no-spark", "--out", str(tmp_path / "a")])
    assert r.exit_code == 1 and "G1c" in r.output, r.output
    res = __import__("json").loads((tmp_path / "a" / "results.json").read_text())
    (h,) = [x for x in (res if isinstance(res, list) else res["results"]) if x["history"].endswith("g1c.ndjson")]
    assert [a["kind"] for a in h["anomalies"] if a["kind"] == "G1c"] == ["G1c"]
    # G0 with --ww-deps: reported, allowed (Jepsen's allowed-error-types), not a violation
    f0 = g0().write_ndjson(tmp_path / "g0.ndjson")
    # (its sends are never polled: Jepsen's :unseen, which --allow-unseen keeps informational)
    r0 = runner.invoke(audit, [str(f0), "--no-spark", "--ww-deps", "--allow-unseen", "--out", str(tmp_path / "b")])
    assert r0.exit_code == 0, r0.output
    assert "G0 (not a violation): 1" in r0.output
    r2 = runner.invoke(audit, [str(g2_item().write_ndjson(tmp_path / "g2.ndjson")), "--no-spark", "--rw-deps",
                               "--out", str(tmp_path / "c")])
    assert r2.exit_code == 1 and "G2-item" in r2.output


@examples.MODEL(deadline=None)
@given(st.data())
def test_kernel_sorting_shortcuts_equal_numpy(data) -> None:
    """graph_of_table's two shortcuts give numpy's answers: the vertex keys by a mask over their
    range (np.unique and np.searchsorted) and the edge order by two packed keys (np.lexsort)."""
    import numpy as np

    from spark_validation.checks.elle.graph import _lexsort_edges, _sorted_keys

    n = data.draw(st.integers(0, 40))
    hi = data.draw(st.sampled_from([1, 6, 70, 10**6]))
    vk = np.array(data.draw(st.lists(st.integers(data.draw(st.sampled_from([0, -2])), hi), min_size=n, max_size=n)),
                  np.int64)
    sel = np.array(data.draw(st.lists(st.booleans(), min_size=n, max_size=n)), bool)
    keys, at = _sorted_keys(vk, sel)
    want = np.unique(vk[sel])
    assert keys.tolist() == want.tolist() and at.tolist() == np.searchsorted(want, vk).tolist()
    nv, nk, m = data.draw(st.integers(1, 30)), data.draw(st.integers(0, 4)), data.draw(st.integers(0, 6))
    e = data.draw(st.integers(0, 40))

    def col(lo: int, hi: int) -> np.ndarray:
        return np.array(data.draw(st.lists(st.integers(lo, hi), min_size=e, max_size=e)), np.int64)

    src, dst, kind = col(0, nv - 1), col(0, nv - 1), col(0, 4)
    kr, v1, v2 = col(-1, nk - 1), col(-1, m - 1), col(-1, m - 1)
    got = _lexsort_edges(src, dst, kind, kr, v1, v2, nv, nk, m)
    assert got.tolist() == np.lexsort((v2, v1, kr, kind, dst, src)).tolist()
    big = _lexsort_edges(src, dst, kind, kr, v1, v2, 2**31, nk, m)  # too wide to pack: numpy's own
    assert big.tolist() == got.tolist()


@examples.PURE(deadline=None)
@given(st.lists(st.tuples(st.integers(-1, 3), st.integers(0, 9), st.integers(0, 10**6)), max_size=30), st.booleans())
def test_dense_ids_equal_numpy_unique(tuples: list, wide: bool) -> None:
    """_dense's ids (by a mask over a small range, or by sorting) are np.unique's inverse of the tuples."""
    import numpy as np

    from spark_validation.checks.elle.graph import _dense

    cols = [np.array([t[i] for t in tuples], np.int64) for i in ((0, 1, 2) if wide else (0, 1))]
    g, n = _dense(*cols)
    want = {t: i for i, t in enumerate(sorted(set(zip(*(c.tolist() for c in cols)))))}
    assert g.tolist() == [want[t] for t in zip(*(c.tolist() for c in cols))] and n == len(want)


@pytest.mark.parametrize("setting, vectorised", [("", True), ("off", False)])
def test_fast_picks_the_vectorised_build_unless_switched_off(monkeypatch, setting, vectorised):
    import importlib

    from spark_validation.checks.elle import check, fast, reference

    monkeypatch.setenv("KRAFT_COMPILED", setting)
    try:
        importlib.reload(fast)
        assert fast.check_rows is (check.check_rows if vectorised else check.check_rows_ref)
        assert fast.edges is (check.edges_rows if vectorised else reference.edges_ref)
    finally:
        monkeypatch.delenv("KRAFT_COMPILED")
        importlib.reload(fast)
