"""Elle-style transactional cycles in Kafka histories (G0, G1c, G-single, G2-item).

Jepsen's Kafka checker (``jepsen.tests.kafka/cycles!``) hands the history's ``txn``/``poll``/``send``
ops to Elle (``elle.txn/cycles``): a dependency graph between completed ops, its strongly connected
components, and in each component the cycles Elle names by their edges (``elle.txn``
``cycle-anomaly-specs``; Adya's phenomena):

``G0``        a cycle of ww edges only (write cycle)
``G1c``       ww and wr edges, at least one wr (circular information flow)
``G-single``  exactly one rw edge, the rest ww/wr (read skew)
``G2-item``   two or more rw edges (Elle also names ``G-nonadjacent``; we report those as G2-item)

Edges between two different ops T1, T2 (facts from ``jepsen.tests.kafka``, code our own):

``ww``  (``ww-graph``, only with ``--ww-deps``, as Jepsen's ``:ww-deps`` test option) T1 sent v1
        to key k, T2 sent v2 to k, and v2 immediately follows v1 in k's version order.
``wr``  (``wr-graph``) T1 sent v to k and T2 polled v from k. Every completed op counts as a
        reader and a writer (Jepsen's ``readers-of``/``writer-of``: all non-invoke ops); the
        writer of a value is the last op in history order that sent it.
``rw``  (``--rw-deps``; Jepsen draws none: its ``rw-graph`` is commented out in ``graph``) T1's
        highest read of k was v1 and T2 sent the value that immediately follows v1 in k's version
        order (the anti-dependency of the workload's docstring, point 4).
``process`` (``--process-order``; ``elle.core/process-graph``) T1 and T2 are consecutive ``ok`` ops
        of one process (ops with at least one micro-op). Cycles that need such an edge are
        reported as Elle's ``G0-process`` / ``G1c-process``.
``realtime`` (``--realtime``; ``elle.core/realtime-graph``, which Jepsen adds for
        ``:strict-serializable``) T1 completed ``ok`` before T2 was invoked, as Elle's transitive
        reduction (:func:`realtime_pairs`); cycles that need one are ``G0-realtime`` /
        ``G1c-realtime``. (The ``G-single``/``G2-item`` process and realtime variants are not
        searched.) On Spark the realtime edges come from one sequential sweep per history over
        its op rows, in an executor task.

The version order is the Kafka checks' (:mod:`spark_validation.kafka_ref`): every polled
``(offset, value)`` and every send with a known offset of an op that must have committed; an
offset's value is the smallest value seen there (several values at one offset are reported as
``inconsistent-offsets`` anyway).

Which cycles make a history invalid follows Jepsen's ``allowed-error-types``: ``G0`` is always
allowed ("writes are never isolated" in Kafka's transaction model) and ``G1c`` is allowed with
``--ww-deps``; such anomalies carry ``evidence.allowed`` with the reason and are informational.

Evidence, as Elle explains a cycle: the ops of the cycle in order, each step with the edge kind,
key and values and a sentence ("op 3 (process 1) sent '1' to key 'x', which op 8 (process 2)
polled"), the size of the strongly connected component, and an explanation. The cycle reported
per component and kind is the shortest one found: exhaustively (every start vertex / every
candidate edge) for components up to ``EXACT_LIMIT`` ops, else from the first candidates (at most
``SAMPLE``, and about ``WORK`` vertex visits in all); Elle does not promise the shortest cycle either.

Two builders of the same edge set: :func:`edges_ref` (Python, over op rows; ``--no-spark``) and
:func:`edges_spark` (DataFrame joins and one window; the edges stay a DataFrame until they are
grouped by history for the component search in the executors, :func:`check_spark`). A test
checks that the two agree on random histories.
"""

from __future__ import annotations

import json
from collections import defaultdict, deque
from typing import Any, Iterable, Sequence

import attrs

from spark_validation import kafka_ref
from spark_validation.records import COMPLETIONS

CYCLE_KINDS = ("G0", "G1c", "G-single", "G2-item", "G0-process", "G1c-process", "G0-realtime", "G1c-realtime")
EXACT_LIMIT = 200
SAMPLE = 64
WORK = 4_000_000
EDGE_COLUMNS = ("history", "src", "sp", "dst", "dp", "kind", "key", "value", "value2")
EDGE_SCHEMA = ("history string, src long, sp string, dst long, dp string, kind string, key string, "
               "value string, value2 string")
OUT_SCHEMA = "history string, kind string, key string, evidence string"


@attrs.frozen
class CycleOptions:
    ww_deps: bool = False  # Jepsen's :ww-deps: infer ww edges from the version order
    rw_deps: bool = False  # draw rw (anti-dependency) edges too: G-single and G2-item become visible
    process: bool = False  # Elle's process graph: each process's ok ops in order (G0-process, G1c-process)
    realtime: bool = False  # Elle's realtime graph: a < b if a completed ok before b was invoked

    @property
    def kinds(self) -> tuple[str, ...]:
        return (("ww",) * self.ww_deps + ("wr",) + ("rw",) * self.rw_deps + ("process",) * self.process
                + ("realtime",) * self.realtime)


# --------------------------------------------------------------------------------------------
# edges, reference implementation


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
    return out


def _edges_of(hid: str, rows: list[dict], opts: CycleOptions) -> list[tuple]:
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

    def edge(src: tuple, dst: tuple, kind: str, key: str, value: str, value2: str | None) -> None:
        if src[0] == dst[0]:
            return
        k = (src[0], dst[0], kind)
        ex = (key or "", value or "", value2 if value2 is not None else "")
        if k not in best or ex < best[k][0]:
            best[k] = (ex, src[1], dst[1], (key, value, value2))

    if opts.realtime:
        for a, ap, c, cp in realtime_pairs(rows):
            edge((a, ap), (c, cp), "realtime", None, None, None)  # type: ignore[arg-type]
    if opts.process:
        # elle.core/process-graph: each process's ok ops (here: those with a micro-op), in order
        last: dict[str, tuple[int, str]] = {}
        seen_ops: set[int] = set()
        for m in M:
            if m["type"] == "ok" and m["op"] not in seen_ops:
                seen_ops.add(m["op"])
                cur = (m["op"], m["process"])
                if m["process"] in last:
                    edge(last[m["process"]], cur, "process", None, None, None)  # type: ignore[arg-type]
                last[m["process"]] = cur
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
        order: dict[str, list[str]] = defaultdict(list)  # key -> values in version order
        idx: dict[tuple[str, int], int] = {}
        for (k, o) in sorted(at):
            idx[(k, o)] = len(order[k])
            order[k].append(at[(k, o)])
        if opts.ww_deps:
            for k, vs in order.items():
                for v1, v2 in zip(vs, vs[1:]):
                    w1, w2 = writer.get((k, v1)), writer.get((k, v2))
                    if w1 is not None and w2 is not None:
                        edge((w1[1], w1[2]), (w2[1], w2[2]), "ww", k, v1, v2)
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


# --------------------------------------------------------------------------------------------
# edges on Spark


def realtime_pairs(rows: Iterable[dict]) -> list[tuple[int, str, int, str]]:
    """Elle's realtime graph (``elle.core/realtime-graph``), as a transitive reduction: rows are
    one history's op rows in history order; Kafka client ops only. At each invocation, every op in
    the buffer of ok completions is linked to that invocation's completion (any type); at an ok
    completion, the buffered ops already linked to it leave the buffer and it enters.
    Returns ``(src op, src process, dst op, dst process)``."""
    ops = [r for r in rows if r["f"] in kafka_ref.KAFKA_FS and r["process"] != "nemesis"]
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
                for a in oks:
                    out.append((a[0], a[1], int(c["index"]), c["process"]))
                    into[int(c["index"])].add(a)
        elif o["type"] == "ok":
            oks -= into.pop(int(o["index"]), set())
            oks.add((int(o["index"]), o["process"]))
    return out


def edges_spark(m: "Any", opts: CycleOptions, ops: "Any" = None) -> "Any":
    """The same edges as :func:`edges_ref` from a micro-op DataFrame
    (:func:`spark_validation.kafka_spark.micro_ops`: history, seq, op, process, type, mop, key,
    offset, value, pos), as a DataFrame with :data:`EDGE_COLUMNS`."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    col = F.col
    m = m.where(col("type").isin(*COMPLETIONS) & col("key").isNotNull() & col("value").isNotNull())
    sends = m.where(col("mop") == "send")
    W = (sends.groupBy("history", "key", "value")
         .agg(F.max_by(F.struct(col("op").alias("wop"), col("process").alias("wp")), col("seq")).alias("w"))
         .select("history", "key", "value", "w.wop", "w.wp"))
    R = m.where(col("mop") == "poll").select("history", "key", "value", "op", "process").distinct()
    parts = [R.join(W, ["history", "key", "value"]).where(col("wop") != col("op")).select(
        "history", col("wop").alias("src"), col("wp").alias("sp"), col("op").alias("dst"), col("process").alias("dp"),
        F.lit("wr").alias("kind"), "key", "value", F.lit(None).cast("string").alias("value2"))]
    if opts.ww_deps or opts.rw_deps:
        okr = m.where((col("mop") == "poll") & (col("type") == "ok")).select("history", "key", "value").distinct()
        proven = (sends.where(col("type") == "info").join(okr, ["history", "key", "value"], "left_semi")
                  .select("history", "op", F.lit(True).alias("proven")).distinct())
        vo = (m.where(col("offset").isNotNull()).join(proven, ["history", "op"], "left")
              .where((col("mop") == "poll") | (col("type") == "ok") | col("proven").isNotNull()))
        V = vo.groupBy("history", "key", "offset").agg(F.min("value").alias("value"))
        V = V.withColumn("idx", F.row_number().over(Window.partitionBy("history", "key").orderBy("offset")) - 1)
        V = V.persist()
        nxt = V.select("history", "key", (col("idx") - 1).alias("idx"), col("value").alias("value2"))
        pairs = V.join(nxt, ["history", "key", "idx"])  # (k, idx, v1 = value, v2 = value at idx+1)
        W2 = W.select("history", "key", col("value").alias("value2"), col("wop").alias("wop2"), col("wp").alias("wp2"))
        if opts.ww_deps:
            ww = (pairs.join(W, ["history", "key", "value"]).join(W2, ["history", "key", "value2"])
                  .where(col("wop") != col("wop2"))
                  .select("history", col("wop").alias("src"), col("wp").alias("sp"), col("wop2").alias("dst"),
                          col("wp2").alias("dp"), F.lit("ww").alias("kind"), "key", "value", "value2"))
            parts.append(ww)
        if opts.rw_deps:
            reads = (m.where((col("mop") == "poll") & col("offset").isNotNull())
                     .join(V.select("history", "key", "offset", "idx"), ["history", "key", "offset"])
                     .groupBy("history", "op", "process", "key").agg(F.max("idx").alias("idx")))
            rw = (reads.join(pairs, ["history", "key", "idx"]).join(W2, ["history", "key", "value2"])
                  .where(col("op") != col("wop2"))
                  .select("history", col("op").alias("src"), col("process").alias("sp"), col("wop2").alias("dst"),
                          col("wp2").alias("dp"), F.lit("rw").alias("kind"), "key", "value", "value2"))
            parts.append(rw)
    if opts.process:
        from pyspark.sql import Window as _W

        okops = m.where(col("type") == "ok").select("history", "process", "seq", "op").distinct()
        prevw = _W.partitionBy("history", "process").orderBy("seq")
        parts.append(okops.select("history", F.lag("op").over(prevw).alias("src"), col("process").alias("sp"),
                                  col("op").alias("dst"), col("process").alias("dp"), F.lit("process").alias("kind"),
                                  F.lit(None).cast("string").alias("key"), F.lit(None).cast("string").alias("value"),
                                  F.lit(None).cast("string").alias("value2")).where(col("src").isNotNull()))
    if opts.realtime:
        if ops is None:
            raise ValueError("realtime edges need the op rows (ops=)")

        def rt(pdf):
            import pandas as pd

            pdf = pdf.astype(object).where(pdf.notna(), None).sort_values("line")
            hid = pdf["history"].iloc[0]
            pairs = realtime_pairs(pdf.to_dict("records"))
            return pd.DataFrame([(hid, a, ap, c, cp) for a, ap, c, cp in pairs],
                                columns=["history", "src", "sp", "dst", "dp"])

        r = (ops.where(col("f").isin(*kafka_ref.KAFKA_FS)).select("history", "line", "index", "process", "type", "f")
             .groupBy("history").applyInPandas(rt, "history string, src long, sp string, dst long, dp string"))
        parts.append(r.select("history", "src", "sp", "dst", "dp", F.lit("realtime").alias("kind"),
                              F.lit(None).cast("string").alias("key"), F.lit(None).cast("string").alias("value"),
                              F.lit(None).cast("string").alias("value2")))
    e = parts[0]
    for p in parts[1:]:
        e = e.unionByName(p)
    ex = F.struct(F.coalesce(col("key"), F.lit("")).alias("ks"), F.coalesce(col("value"), F.lit("")).alias("vs"),
                  F.coalesce(col("value2"), F.lit("")).alias("v2s"), col("key").alias("key"),
                  col("value").alias("value"), col("value2").alias("value2"))
    return (e.groupBy("history", "src", "dst", "kind")
            .agg(F.min(ex).alias("ex"), F.first("sp").alias("sp"), F.first("dp").alias("dp"))
            .select("history", "src", "sp", "dst", "dp", "kind", "ex.key", "ex.value", "ex.value2"))


def check_spark(m: "Any", opts: CycleOptions, ops: "Any" = None) -> list[dict]:
    """Cycle anomalies of every history of the micro-op DataFrame ``m`` (``ops``: the op rows,
    needed for realtime edges): edges as a DataFrame, then each history's edges grouped into one
    executor task for the component search."""
    e = edges_spark(m, opts, ops)
    kinds = opts

    def per_history(pdf):
        import pandas as pd

        pdf = pdf.astype(object).where(pdf.notna(), None)  # nulls as None, not NaN
        cols = [pdf[c].tolist() for c in EDGE_COLUMNS]
        edges = list(zip(*cols))
        found = find_cycles(edges, kinds)
        return pd.DataFrame([(a["history"], a["kind"], a["key"], json.dumps(a["evidence"])) for a in found],
                            columns=["history", "kind", "key", "evidence"])

    rows = e.groupBy("history").applyInPandas(per_history, OUT_SCHEMA).collect()
    return [{"history": r["history"], "kind": r["kind"], "key": r["key"], "evidence": json.loads(r["evidence"])}
            for r in rows]


# --------------------------------------------------------------------------------------------
# components and cycles


def strongly_connected(n: int, adj: Sequence[Sequence[int]]) -> list[list[int]]:
    """Tarjan's algorithm, iterative: the components with two or more vertices."""
    index = [-1] * n
    low = [0] * n
    on = [False] * n
    stack: list[int] = []
    out: list[list[int]] = []
    counter = 0
    for s in range(n):
        if index[s] != -1:
            continue
        index[s] = low[s] = counter
        counter += 1
        stack.append(s)
        on[s] = True
        work = [(s, 0)]
        while work:
            v, i = work[-1]
            nb = adj[v]
            if i < len(nb):
                work[-1] = (v, i + 1)
                w = nb[i]
                if index[w] == -1:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on[w] = True
                    work.append((w, 0))
                elif on[w] and index[w] < low[v]:
                    low[v] = index[w]
                continue
            work.pop()
            if work:
                u = work[-1][0]
                if low[v] < low[u]:
                    low[u] = low[v]
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on[w] = False
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(comp)
    return out


def _path(adj: dict[str, list[list[int]]], kinds: tuple[str, ...], src: int, dst: int,
          inside: set[int], max_len: float = float("inf")) -> list[tuple[int, int, str]] | None:
    """A shortest path src -> dst over edges of ``kinds`` within ``inside`` (BFS; simple), or
    None if there is none of at most ``max_len`` edges."""
    prev: dict[int, tuple[int, str] | None] = {src: None}
    depth = {src: 0}
    q = deque([src])
    while q:
        u = q.popleft()
        if depth[u] > max_len:
            return None
        if u == dst:
            steps = []
            while prev[u] is not None:
                p, kind = prev[u]  # type: ignore[misc]
                steps.append((p, u, kind))
                u = p
            return steps[::-1]
        for kind in kinds:
            for w in adj[kind][u]:
                if w in inside and w not in prev:
                    prev[w] = (u, kind)
                    depth[w] = depth[u] + 1
                    q.append(w)
    return None


def find_cycles(edges: Iterable[tuple], opts: CycleOptions) -> list[dict]:
    """Cycle anomalies of one or more histories' edges (tuples in :data:`EDGE_COLUMNS` order)."""
    by_history: dict[str, list[tuple]] = defaultdict(list)
    for e in edges:
        by_history[e[0]].append(e)
    out: list[dict] = []
    for hid in sorted(by_history):
        out.extend(_cycles_of(hid, by_history[hid], opts))
    return out


def _cycles_of(hid: str, edges: list[tuple], opts: CycleOptions) -> list[dict]:
    ids: dict[int, int] = {}
    ops: list[int] = []
    proc: dict[int, str] = {}
    for _, s, sp, d, dp, *_ in edges:
        for o, p in ((int(s), sp), (int(d), dp)):
            if o not in ids:
                ids[o] = len(ops)
                ops.append(o)
                proc[o] = p
    n = len(ops)
    adj = {k: [[] for _ in range(n)] for k in ("ww", "wr", "rw", "process", "realtime")}
    attr: dict[tuple[int, int, str], tuple] = {}
    for _, s, _, d, _, kind, key, value, value2 in edges:
        u, v = ids[int(s)], ids[int(d)]
        adj[kind][u].append(v)
        attr[(u, v, kind)] = (key, value, value2)
    for k in adj:
        for lst in adj[k]:
            lst.sort(key=lambda x: ops[x])
    full = [adj["ww"][u] + adj["wr"][u] + adj["rw"][u] + adj["process"][u] + adj["realtime"][u] for u in range(n)]
    out: list[dict] = []

    def report(kind: str, cycle: list[tuple[int, int, str]], comp_size: int) -> None:
        out.append({"history": hid, "kind": kind, "key": None,
                    "evidence": _evidence(kind, cycle, comp_size, ops, proc, attr, opts)})

    def sub_components(comp: list[int], kinds: tuple[str, ...]) -> list[list[int]]:
        local = {v: i for i, v in enumerate(comp)}
        sub = [[local[w] for k in kinds for w in adj[k][v] if w in local] for v in comp]
        return [[comp[i] for i in c] for c in strongly_connected(len(comp), sub)]

    def shortest_through(cands: list[tuple[int, int, str]], kinds: tuple[str, ...], inside: set[int],
                         need: str | None = None) -> list | None:
        """The shortest cycle made of one candidate edge a->b and a shortest path b->a (with
        ``need_rw``: only cycles whose path uses an rw edge too, i.e. two or more in all)."""
        best = None
        # exhaustive on small components; on large ones a sample, fewer the larger the component
        # (each try is a BFS over it): about WORK vertex visits per search
        limit = len(cands) if len(inside) <= EXACT_LIMIT else max(1, min(SAMPLE, WORK // len(inside)))
        for a, b, k in cands[:limit]:
            if best is not None and len(best) <= 2:
                break  # no cycle is shorter than two edges
            # only a strictly shorter cycle can replace the best one: bound the search by it
            p = _path(adj, kinds, b, a, inside, len(best) - 2 if best is not None else float("inf"))
            if p is None or (need is not None and not any(s[2] == need for s in p)):
                continue
            if best is None or len(p) + 1 < len(best):
                best = [(a, b, k)] + p
        return best

    for comp in sorted(strongly_connected(n, full), key=lambda c: min(ops[v] for v in c)):
        inside = set(comp)
        size = len(comp)
        # G0: a cycle of ww edges
        if opts.ww_deps:
            for c in sub_components(comp, ("ww",)):
                cs = set(c)
                cands = sorted(((a, b, "ww") for a in c for b in adj["ww"][a] if b in cs), key=lambda e: (ops[e[0]], ops[e[1]]))
                cyc = shortest_through(cands, ("ww",), cs)
                if cyc:
                    report("G0", cyc, size)
        # G1c: ww and wr, at least one wr
        for c in sub_components(comp, ("ww", "wr")):
            cs = set(c)
            cands = sorted(((a, b, "wr") for a in c for b in adj["wr"][a] if b in cs), key=lambda e: (ops[e[0]], ops[e[1]]))
            if cands:
                cyc = shortest_through(cands, ("ww", "wr"), cs)
                if cyc:
                    report("G1c", cyc, size)
        if opts.rw_deps:
            cands = sorted(((a, b, "rw") for a in comp for b in adj["rw"][a] if b in inside),
                           key=lambda e: (ops[e[0]], ops[e[1]]))
            if cands:
                # G-single: one rw edge closed by ww/wr edges
                cyc = shortest_through(cands, ("ww", "wr"), inside)
                if cyc:
                    report("G-single", cyc, size)
                # G2-item: a cycle with two or more rw edges. Searched among the shortest cycles
                # through each rw edge: when the component has no G-single, every cycle through
                # an rw edge has another one, so one is always found then
                cyc = shortest_through(cands, ("ww", "wr", "rw"), inside, need="rw")
                if cyc:
                    report("G2-item", cyc, size)
        if opts.process:
            # Elle's "-process" variants: the same cycles, closed with process-order edges
            cands = sorted(((a, b, "process") for a in comp for b in adj["process"][a] if b in inside),
                           key=lambda e: (ops[e[0]], ops[e[1]]))
            if cands:
                if opts.ww_deps:
                    cyc = shortest_through(cands, ("ww", "process"), inside, need="ww")
                    if cyc:
                        report("G0-process", cyc, size)
                cyc = shortest_through(cands, ("ww", "wr", "process"), inside, need="wr")
                if cyc:
                    report("G1c-process", cyc, size)
        if opts.realtime:
            # Elle's "-realtime" variants: closed with realtime edges
            cands = sorted(((a, b, "realtime") for a in comp for b in adj["realtime"][a] if b in inside),
                           key=lambda e: (ops[e[0]], ops[e[1]]))
            if cands:
                if opts.ww_deps:
                    cyc = shortest_through(cands, ("ww", "realtime"), inside, need="ww")
                    if cyc:
                        report("G0-realtime", cyc, size)
                cyc = shortest_through(cands, ("ww", "wr", "realtime"), inside, need="wr")
                if cyc:
                    report("G1c-realtime", cyc, size)
    return out


def _step_text(a: int, b: int, kind: str, ops: list[int], proc: dict[int, str], ex: tuple) -> str:
    key, value, value2 = ex
    ta = f"op {ops[a]} (process {proc[ops[a]]})"
    tb = f"op {ops[b]} (process {proc[ops[b]]})"
    if kind == "ww":
        return f"{ta} sent {value!r} to key {key!r} before {tb} sent {value2!r} to it"
    if kind == "wr":
        return f"{ta} sent {value!r} to key {key!r}, which {tb} polled"
    if kind == "process":
        return f"{ta} completed before {tb} on the same process"
    if kind == "realtime":
        return f"{ta} completed before {tb} was invoked (real time)"
    return f"{ta} polled key {key!r} up to {value!r} and did not see {value2!r}, which {tb} sent next"


_NAMES = {
    "G0": "a write cycle (G0)",
    "G1c": "circular information flow (G1c)",
    "G-single": "read skew: a cycle with exactly one anti-dependency (G-single)",
    "G2-item": "a cycle with two or more anti-dependencies (G2-item)",
    "G0-process": "a write cycle closed by process order (G0-process)",
    "G1c-process": "circular information flow closed by process order (G1c-process)",
    "G0-realtime": "a write cycle closed by real-time order (G0-realtime)",
    "G1c-realtime": "circular information flow closed by real-time order (G1c-realtime)",
}


def _evidence(kind: str, cycle: list[tuple[int, int, str]], comp_size: int, ops: list[int], proc: dict[int, str],
              attr: dict, opts: CycleOptions) -> dict:
    steps = []
    for a, b, k in cycle:
        ex = attr[(a, b, k)]
        steps.append({"op": ops[a], "next": ops[b], "kind": k,
                      **({"key": ex[0], "value": ex[1]} if k not in ("process", "realtime") else {}),
                      **({"value2": ex[2]} if ex[2] is not None else {}),
                      "text": _step_text(a, b, k, ops, proc, ex)})
    cyc_ops = [s["op"] for s in steps]
    ev: dict[str, Any] = {
        "cycle": cyc_ops + [cyc_ops[0]],
        "steps": steps,
        "scc_size": comp_size,
        "explanation": "; ".join(f"op {s['op']} < op {s['next']} because {s['text']} ({s['kind']})" for s in steps)
                       + f": a cycle, {_NAMES[kind]}",
    }
    if kind in ("G0", "G0-process", "G0-realtime"):
        ev["allowed"] = "jepsen.tests.kafka/allowed-error-types: G0 is normal, Kafka does not isolate writes"
    elif kind in ("G1c", "G1c-process", "G1c-realtime") and opts.ww_deps:
        ev["allowed"] = ("jepsen.tests.kafka/allowed-error-types: with ww-deps, G1c is normal (no write "
                         "isolation gives cycles like t0 <ww t1 <wr t0)")
    return ev


def check_rows_ref(rows: list[dict], opts: CycleOptions) -> list[dict]:
    """Cycle anomalies of op rows, in-process (``kraft audit --no-spark``)."""
    return find_cycles(edges_ref(rows, opts), opts)


def is_allowed(anomaly: dict) -> bool:
    """An anomaly Jepsen's checker allows (``allowed-error-types``): reported, not a violation."""
    ev = anomaly.get("evidence")
    return isinstance(ev, dict) and bool(ev.get("allowed"))
