"""Kafka anomalies as a vectorised numpy kernel over Arrow batches, run per partition by Spark.

Definitions: :mod:`spark_validation.kafka_ref` (the pure-Python reference). A Hypothesis test
checks that this kernel, the reference and the DataFrame version (:mod:`spark_validation.kafka_spark`)
report exactly the same anomalies and evidence.

Why a kernel: the DataFrame version needs one shuffle of the micro-ops by history and three
sorts with window passes over them, and the shuffle plus one sort alone cost more than the whole
check needs. Every anomaly is a property of one history, so if every
partition holds whole histories, no shuffle is needed: each task turns its Arrow batches into
integer columns (dictionary codes for strings) and computes every anomaly with whole-array
numpy operations (``factorize``, ``lexsort``, ``ufunc.at``, ``searchsorted``), many histories at
once. Python runs per anomaly found (to build its evidence), never per input row.

Layout and its verification (nothing depends on the layout silently):

* :func:`kernel_input` turns the op table into kernel rows with narrow transformations only
  (no shuffle), so a table whose partitions hold whole histories (NDJSON/EDN files as ingested,
  ``ops.parquet`` as the audit writes it, or micro-ops stored by :func:`store`) keeps them whole.
* Each task cuts its rows into chunks at history boundaries and checks a chunk at a time; next
  to the anomalies it emits one row per history it checked, with the chunk's id and row count.
* The driver (:func:`collect`) accepts a history only if exactly one chunk saw it. Every input
  row is read by some task, so a history seen by one chunk was seen whole. Histories seen by
  several chunks (a file split across tasks, an unclustered table) have their partial results
  dropped and are checked again after a shuffle: ``groupBy(history).applyInArrow`` with the
  same kernel. The result says how many histories took each path.

Kernel rows (:func:`kernel_rows.row_schema`): the micro-ops of :func:`kafka_spark.micro_ops` (``mop``
``send`` or ``poll``) plus, for every ``ok``/``info`` assign/subscribe op, one row ``mop =
'assign'`` with a null key (the op) and one per key it names.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Iterator

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from spark_validation import kafka_ref, kafka_spark
from spark_validation.kafka_ref import UNSEEN_SAMPLE, sort_anomalies
from spark_validation.kernel_rows import int_values, row_schema, string_codes

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame

ROW_COLUMNS = ("history", "seq", "op", "process", "type", "mop", "key", "offset", "value", "pos")
ROW_DDL = ("history string, seq bigint, op bigint, process string, type string, mop string, key string, "
           "offset bigint, value string, pos bigint")
OUT_DDL = "history string, kind string, key string, evidence string, chunk bigint, n bigint"
CHUNK_ROWS = 1 << 20  # rows a task gathers before it checks the whole histories among them
_CHUNK_STRIDE = 1 << 24  # chunk id = partition * stride + chunk number within the task


# ------------------------------------------------------------------------------------------
# the kernel


def _factorize(key: np.ndarray) -> tuple[np.ndarray, int]:
    """Dense group ids (0..n-1, first-seen order) of an int64 key."""
    codes, uniq = pd.factorize(key, sort=False)
    return codes.astype(np.int64, copy=False), len(uniq)


def _group(*cols: np.ndarray) -> tuple[np.ndarray, int]:
    """Dense ids of the tuples of non-negative int columns (each id column kept below 2**31
    by re-densifying after every step, so the products never overflow int64)."""
    g, n = _factorize(cols[0])
    for c in cols[1:]:
        g, n = _factorize(g * (int(c.max(initial=0)) + 1) + c)
    return g, n


def _first_of(group: np.ndarray, n: int, values: np.ndarray) -> np.ndarray:
    """Per group, the value of some row of it (all rows of a group share it)."""
    out = np.zeros(n, dtype=values.dtype)
    out[group] = values
    return out


def check_table(t: "pa.Table") -> list[dict]:
    """All Kafka anomalies of the kernel rows in ``t`` (any number of whole histories), as
    ``{"history", "kind", "key", "evidence"}`` dicts, evidence exactly as the reference's."""
    if t.num_rows == 0:
        return []
    hist, hist_d = string_codes(t.column("history"))
    proc, proc_d = string_codes(t.column("process"))
    key, key_d = string_codes(t.column("key"))
    val, val_d = string_codes(t.column("value"))
    typ, typ_d = string_codes(t.column("type"))
    mop, mop_d = string_codes(t.column("mop"))
    seq, _ = int_values(t.column("seq"))
    opn, _ = int_values(t.column("op"))
    off, has_off = int_values(t.column("offset"))
    pos, _ = int_values(t.column("pos"))

    def code_of(d: "pa.Array", name: str) -> int:
        lst = d.to_pylist()
        return lst.index(name) if name in lst else -2

    OK, INFO, FAIL = code_of(typ_d, "ok"), code_of(typ_d, "info"), code_of(typ_d, "fail")
    SEND, POLL, ASSIGN = code_of(mop_d, "send"), code_of(mop_d, "poll"), code_of(mop_d, "assign")
    hist_s = hist_d.to_pylist()
    proc_s = proc_d.to_pylist()
    key_s = key_d.to_pylist()

    def vtext(c: int) -> str:
        return val_d[int(c)].as_py()

    is_assign = mop == ASSIGN
    keep = ((mop == SEND) | (mop == POLL)) & (key >= 0) & (val >= 0)
    a_rows = np.flatnonzero(is_assign)
    rows = np.flatnonzero(keep)
    h, p, k, v, ty = hist[rows], proc[rows], key[rows], val[rows], typ[rows]
    sq, op, o, ho_, ps = seq[rows], opn[rows], off[rows], has_off[rows], pos[rows]
    is_send = mop[rows] == SEND
    n = len(rows)
    out: list[dict] = []
    if n == 0:
        return out

    def anomaly(hc: int, kind: str, kc: int, ev: dict) -> None:
        out.append({"history": hist_s[hc], "kind": kind, "key": key_s[kc], "evidence": ev})

    okread = ~is_send & (ty == OK)
    # per (history, key) and per (history, key, value)
    hk, n_hk = _group(h, k)
    hkv, n_hkv = _group(hk, v)
    hk_of = _first_of(hkv, n_hkv, hk)
    okr_g = np.zeros(n_hkv, bool)
    okr_g[hkv[okread]] = True
    okr = okr_g[hkv]
    # ops that must have committed: ok, or info with a send read by an ok poll (by op index)
    hop, n_hop = _group(h, _factorize(op)[0])
    proven = np.zeros(n_hop, bool)
    proven[hop[is_send & (ty == INFO) & okr]] = True
    committed = is_send & ((ty == OK) | ((ty == INFO) & proven[hop]))
    vo = ho_ & (~is_send | committed)

    # the version order: an offset's index is its dense rank among the key's observed offsets
    offc = np.zeros(n, np.int64)
    if ho_.any():
        _, inv = np.unique(o[ho_], return_inverse=True)
        offc[ho_] = inv
    n_off = int(offc.max()) + 1
    hko = hk * n_off + offc  # ordered by (hk, offset); < n**2
    U, u_first = np.unique(hko[vo], return_index=True)
    u_off = o[vo][u_first]
    u_hk = U // n_off
    rank = np.arange(len(U)) - np.searchsorted(u_hk, u_hk, "left")
    at = np.searchsorted(U, hko)
    at_c = np.minimum(at, max(len(U) - 1, 0))
    has_idx = ho_ & (len(U) > 0) & (U[at_c] == hko if len(U) else False)
    idx = np.where(has_idx, rank[at_c] if len(U) else 0, -1)

    # inconsistent-offsets: an offset of a key with several values
    vrows = np.flatnonzero(vo)
    if len(vrows):
        g = at[vrows]
        gv, _ = _factorize(g * (int(v.max()) + 1) + v[vrows])
        first = np.unique(gv, return_index=True)[1]
        nvals = np.bincount(g[first], minlength=len(U))
        bad = np.flatnonzero(nvals > 1)
        if len(bad):
            sel = vrows[np.isin(g, bad)]
            groups: dict[int, list[int]] = {}
            for r in sel[np.lexsort((sq[sel], at[sel]))]:
                groups.setdefault(int(at[r]), []).append(int(r))
            for gi, rs in groups.items():
                r0 = rs[0]
                anomaly(h[r0], "inconsistent-offsets", k[r0], {
                    "offset": int(u_off[gi]), "values": sorted({vtext(v[r]) for r in rs}),
                    "ops": sorted({int(op[r]) for r in rs})})

    # duplicate: a value at several offsets of a key
    if len(vrows):
        pairs = np.unique(hkv[vrows] * n_off + offc[vrows])
        noffs = np.bincount(pairs // n_off, minlength=n_hkv)
        bad = np.flatnonzero(noffs > 1)
        if len(bad):
            dups: dict[int, list[int]] = {}
            for r in vrows[np.isin(hkv[vrows], bad)]:
                dups.setdefault(int(hkv[r]), []).append(int(r))
            for rs in dups.values():
                r0 = rs[0]
                anomaly(h[r0], "duplicate", k[r0], {"value": vtext(v[r0]), "offsets": sorted({int(o[r]) for r in rs})})

    # G1a: an ok poll read a value whose send failed
    failed = is_send & (ty == FAIL)
    has_fail = np.zeros(n_hkv, bool)
    has_fail[hkv[failed]] = True
    g1a = okread & has_fail[hkv]
    if g1a.any():
        writers: dict[int, list[int]] = {}
        for r in np.flatnonzero(failed & okr_g[hkv]):
            writers.setdefault(int(hkv[r]), []).append(int(op[r]))
        seen = set()
        for r in np.flatnonzero(g1a):
            for w in sorted(set(writers[int(hkv[r])])):
                ofs = int(o[r]) if ho_[r] else None
                tkey = (int(hkv[r]), ofs, w, int(op[r]))
                if tkey not in seen:
                    seen.add(tkey)
                    anomaly(h[r], "G1a", k[r], {"value": vtext(v[r]), "offset": ofs, "writer": w,
                                                "reader": int(op[r])})

    # lost-write
    BIG = np.iinfo(np.int64).max
    first_idx = np.full(n_hkv, BIG)
    last_idx = np.full(n_hkv, -1)
    np.minimum.at(first_idx, hkv[vo], idx[vo])
    np.maximum.at(last_idx, hkv[vo], idx[vo])
    has_vo = last_idx >= 0
    bound = np.full(n_hk, -1)
    cand = okr_g & has_vo
    np.maximum.at(bound, hk_of[cand], first_idx[cand])
    writer = np.full(n_hkv, BIG)
    np.minimum.at(writer, hkv[committed], op[committed])
    lost = has_vo & (bound[hk_of] >= 0) & (last_idx <= bound[hk_of]) & ~okr_g & (writer < BIG)
    if lost.any():
        reader = np.full(n_hkv, BIG)
        np.minimum.at(reader, hkv[okread], op[okread])
        rep = np.zeros(n_hkv, np.int64)  # a row of each (history, key, value)
        rep[hkv] = np.arange(n)
        min_off = np.full(n_hkv, BIG)
        np.minimum.at(min_off, hkv[vo], o[vo])
        max_read: dict[int, tuple] = {}
        lost_hk = set(int(x) for x in hk_of[lost])
        for gi in np.flatnonzero(cand & (first_idx == bound[hk_of])):
            g = int(hk_of[gi])
            if g in lost_hk:
                c = (vtext(v[rep[gi]]), int(reader[gi]), int(min_off[gi]))
                if g not in max_read or c[:2] < max_read[g][:2]:
                    max_read[g] = c
        for gi in np.flatnonzero(lost):
            r0 = rep[gi]
            mv, mop_, moff = max_read[int(hk_of[gi])]
            anomaly(h[r0], "lost-write", k[r0], {
                "value": vtext(v[r0]), "offset": int(min_off[gi]), "writer": int(writer[gi]),
                "max_read": {"value": mv, "offset": moff, "op": mop_}})

    # a send with no offset takes the index where the version order has its value (the last one,
    # as Jepsen's by-value map in jepsen.tests.kafka/version-orders), so reads can prove a skip
    nooff = is_send & ~ho_ & (last_idx[hkv] >= 0)
    if nooff.any():
        idx = np.where(nooff, last_idx[hkv], idx)
        has_idx = has_idx | nooff

    def ofs(r: int) -> int | None:
        return int(o[r]) if ho_[r] else None

    # consecutive micro-ops of one (history, process, key, kind, class), in op order
    cls = okread | (is_send & ((ty == OK) | (ty == INFO)))
    grp, _ = _group(hk, p * 4 + is_send * 2 + cls)
    order = np.lexsort((ps, sq, grp))
    a, b = order[:-1], order[1:]
    d = idx[b] - idx[a]
    pair = (grp[a] == grp[b]) & has_idx[a] & has_idx[b] & (d != 1)
    internal = pair & (sq[a] == sq[b])
    cross = pair & (sq[a] != sq[b]) & cls[b] & ((d < 1) | ~is_send[b])
    for i in np.flatnonzero(internal):
        ra, rb = a[i], b[i]
        snd = bool(is_send[rb])
        kind = (("int-send-skip" if snd else "int-poll-skip") if d[i] > 1
                else ("int-nonmonotonic-send" if snd else "int-nonmonotonic-poll"))
        anomaly(h[rb], kind, k[rb], {"values": [vtext(v[ra]), vtext(v[rb])], "offsets": [ofs(ra), ofs(rb)],
                                     "delta": int(d[i]), "op": int(op[ra])})
    ci = np.flatnonzero(cross)
    if len(ci):
        ci = ci[~_reset(ci, a, b, h, p, k, sq, hist, proc, key, seq, a_rows, n_hk)]
    for i in ci:
        ra, rb = a[i], b[i]
        snd = bool(is_send[rb])
        kind = "nonmonotonic-send" if snd else ("poll-skip" if d[i] > 1 else "nonmonotonic-poll")
        anomaly(h[rb], kind, k[rb], {"process": proc_s[p[rb]], "values": [vtext(v[ra]), vtext(v[rb])],
                                     "offsets": [ofs(ra), ofs(rb)], "delta": int(d[i]),
                                     "ops": [int(op[ra]), int(op[rb])]})

    # a poll inside an info or failed op is compared with the process's last ok poll of the key
    # (jepsen.tests.kafka/poll-skip+nonmonotonic-cases-per-process compares every op's polls; only
    # ok ops move the position)
    okr_rows = np.flatnonzero(okread)
    nbr = np.flatnonzero(~is_send & (ty != OK))
    if len(nbr) and len(okr_rows):
        hp, _ = _group(hk, p)
        _, sqd = np.unique(sq, return_inverse=True)
        sqd = sqd.astype(np.int64)
        S = int(sqd.max()) + 2
        ko = hp[okr_rows] * S + sqd[okr_rows]
        order_ok = np.lexsort((ps[okr_rows], ko))
        ks = ko[order_ok]
        qk = hp[nbr] * S + sqd[nbr]
        o2 = np.lexsort((ps[nbr], qk))
        nbr, qk = nbr[o2], qk[o2]
        first = np.r_[True, qk[1:] != qk[:-1]]  # the op's first read of the key
        nbr, qk = nbr[first], qk[first]
        j = np.searchsorted(ks, qk, "left") - 1  # the last ok read before it (same process and key)
        jc = np.maximum(j, 0)
        hit = (j >= 0) & (ks[jc] // S == hp[nbr])
        ra2, rb2 = okr_rows[order_ok[jc]][hit], nbr[hit]
        sel = has_idx[ra2] & has_idx[rb2]
        ra2, rb2 = ra2[sel], rb2[sel]
        d2 = idx[rb2] - idx[ra2]
        sel = d2 != 1
        ra2, rb2, d2 = ra2[sel], rb2[sel], d2[sel]
        if len(rb2):
            reset = _reset(np.arange(len(rb2)), ra2, rb2, h, p, k, sq, hist, proc, key, seq, a_rows, n_hk)
            for i in np.flatnonzero(~reset):
                ra, rb = ra2[i], rb2[i]
                kind = "poll-skip" if d2[i] > 1 else "nonmonotonic-poll"
                anomaly(h[rb], kind, k[rb], {"process": proc_s[p[rb]], "values": [vtext(v[ra]), vtext(v[rb])],
                                             "offsets": [ofs(ra), ofs(rb)], "delta": int(d2[i]),
                                             "ops": [int(op[ra]), int(op[rb])]})

    # precommitted-read: an op read a value it sent itself (only ops with both sends and reads)
    op_send = np.zeros(n_hop, bool)
    op_send[hop[is_send]] = True
    op_read = np.zeros(n_hop, bool)
    op_read[hop[~is_send]] = True
    mixed = np.flatnonzero((op_send & op_read)[hop])
    if len(mixed):
        hsk, n_hsk = _group(hk[mixed], _factorize(sq[mixed])[0])
        hskv, n_hskv = _group(hsk, v[mixed])
        snd = is_send[mixed]
        sent = np.zeros(n_hskv, bool)
        sent[hskv[snd]] = True
        read = np.zeros(n_hskv, bool)
        read[hskv[~snd]] = True
        both = sent & read
        if both.any():
            rep = np.zeros(n_hskv, np.int64)
            rep[hskv] = mixed
            g_of = np.zeros(n_hskv, np.int64)
            g_of[hskv] = hsk
            first_send = np.full(n_hsk, BIG)
            np.minimum.at(first_send, hsk[snd], mixed[snd])
            pre: dict[int, list[int]] = {}
            for gi in np.flatnonzero(both):
                pre.setdefault(int(g_of[gi]), []).append(int(rep[gi]))
            for g, rs in pre.items():
                r0 = int(first_send[g])
                anomaly(h[r0], "precommitted-read", k[r0],
                        {"values": sorted(vtext(v[r]) for r in rs), "op": int(op[r0])})

    # unseen (informational): ok sends never read by an ok poll, per key
    un = is_send & (ty == OK) & ~okr
    if un.any():
        rs = np.flatnonzero(un)
        _, first = np.unique(hkv[rs], return_index=True)
        per: dict[int, list[int]] = {}
        for r in rs[first]:
            per.setdefault(int(hk[r]), []).append(int(r))
        for g, lst in per.items():
            vals = sorted(vtext(v[r]) for r in lst)
            anomaly(h[lst[0]], "unseen", k[lst[0]], {"count": len(vals), "values": vals[:UNSEEN_SAMPLE]})
    return out


def _reset(ci, a, b, h, p, k, sq, hist, proc, key, seq, a_rows, n_hk) -> np.ndarray:
    """For the cross-op pairs ``ci``: did an ``ok``/``info`` assign or subscribe by the process,
    between the two ops, leave the key out? (Count the process's assign ops strictly between
    the two seqs, and those among them that name the key: a reset if they differ.)"""
    res = np.zeros(len(ci), bool)
    if len(a_rows) == 0:
        return res
    ra, rb = a[ci], b[ci]
    ah, ap, ak, asq = hist[a_rows], proc[a_rows], key[a_rows], seq[a_rows]
    # a common dense id for (history, process) and (history, process, key) on both sides
    m = len(ci)
    hp, _ = _group(np.concatenate([h[rb], ah]), np.concatenate([p[rb], ap]))
    kk = np.concatenate([k[rb], np.maximum(ak, 0)])
    hpk, _ = _group(hp, kk)
    # seqs as ordered dense codes, so the combined keys below stay far from int64 overflow
    _, s_all = np.unique(np.concatenate([sq[ra], sq[rb], asq]), return_inverse=True)
    s_all = s_all.astype(np.int64)
    S = int(s_all.max()) + 2
    hp_p, hp_a = hp[:m], hp[m:]
    hpk_p, hpk_a = hpk[:m], hpk[m:]
    marker = ak < 0
    s_a = s_all[2 * m:]
    all_ops = np.sort(hp_a[marker] * S + s_a[marker])
    named = np.unique(hpk_a[~marker] * S + s_a[~marker])
    lo, hi = s_all[:m], s_all[m:2 * m]
    n_all = (np.searchsorted(all_ops, hp_p * S + hi, "left") - np.searchsorted(all_ops, hp_p * S + lo, "right"))
    n_named = (np.searchsorted(named, hpk_p * S + hi, "left") - np.searchsorted(named, hpk_p * S + lo, "right"))
    return n_all > n_named


# ------------------------------------------------------------------------------------------
# kernel rows without Spark (tests, the in-process per-history bench row)


def input_table(rows: list[dict]) -> "pa.Table":
    """Kernel rows of op rows, built with the reference's micro-op extraction."""
    out = []
    for r in sorted(rows, key=lambda r: (r["history"], r["line"])):
        for m in kafka_ref.micro_ops(r):
            out.append({c: m[c] for c in ROW_COLUMNS})
        for a in kafka_ref.assignments([r]):
            base = {"history": r["history"], "seq": r["line"], "op": r["index"], "process": r["process"],
                    "type": r["type"], "mop": "assign", "offset": None, "value": None, "pos": 0}
            out.append({**base, "key": None})
            out.extend({**base, "key": k} for k in a["keys"] if k is not None)
    return pa.Table.from_pylist(out, schema=row_schema())


def check_rows(rows: list[dict]) -> list[dict]:
    """The kernel over op rows in this process (sorted like :func:`kafka_ref.check_rows`)."""
    return sort_anomalies(check_table(input_table(rows)))


# ------------------------------------------------------------------------------------------
# Spark: per-partition check, verification of the layout, shuffle fallback


def kernel_input(ops: "DataFrame") -> "DataFrame":
    """Kernel rows of the op table: narrow transformations only, so partitions that hold whole
    histories keep holding them."""
    return kafka_spark.micro_ops(ops, with_assign=True)


def store(ops: "DataFrame", path: str, parts: int) -> None:
    """Ingest: write the kernel rows as Parquet clustered by history (one shuffle, once), each
    file holding whole histories sorted by (history, seq, pos)."""
    (kernel_input(ops).repartition(parts, "history").sortWithinPartitions("history", "seq", "pos")
     .write.mode("overwrite").parquet(path))


def _out_batch(anoms: list[dict], seen: "pa.Table | None", chunk: int) -> "pa.RecordBatch":
    hs = [a["history"] for a in anoms]
    kinds: list = [a["kind"] for a in anoms]
    keys = [a["key"] for a in anoms]
    evs: list = [json.dumps(a["evidence"]) for a in anoms]
    chunks = [chunk] * len(anoms)
    ns: list = [None] * len(anoms)
    if seen is not None:
        vc = seen.column("history").value_counts() if isinstance(seen, pa.Table) else seen
        hs += vc.field("values").to_pylist()
        cnt = vc.field("counts").to_pylist()
        kinds += [None] * len(cnt)
        keys += [None] * len(cnt)
        evs += [None] * len(cnt)
        chunks += [chunk] * len(cnt)
        ns += cnt
    return pa.RecordBatch.from_arrays(
        [pa.array(hs, pa.string()), pa.array(kinds, pa.string()), pa.array(keys, pa.string()),
         pa.array(evs, pa.string()), pa.array(chunks, pa.int64()), pa.array(ns, pa.int64())],
        names=["history", "kind", "key", "evidence", "chunk", "n"])


def _check_chunk(t: "pa.Table", chunk: int) -> "pa.RecordBatch":
    vc = pc.value_counts(t.column("history"))
    return _out_batch(check_table(t), vc, chunk)


def _chunks(batches: Iterable["pa.RecordBatch"], base: int, chunk_rows: int) -> Iterator["pa.RecordBatch"]:
    """Check the rows of ``batches`` a chunk at a time, each chunk cut at a history boundary
    (the trailing history waits for the next batches); chunk ids ``base + 0, 1, ...``."""
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
        if len(other) == 0:  # one history so far: keep gathering
            continue
        cut = int(other[-1]) + 1
        yield _check_chunk(t.slice(0, cut), base + chunk)
        chunk += 1
        rest = t.slice(cut)
        buf, nbuf = rest.to_batches(), rest.num_rows
    if nbuf:
        yield _check_chunk(pa.Table.from_batches(buf), base + chunk)


def check_partitions(batches: Iterable["pa.RecordBatch"], chunk_rows: int = CHUNK_ROWS) -> Iterator["pa.RecordBatch"]:
    """The ``mapInArrow`` function over kernel rows: anomaly rows and, per chunk, one
    ``(history, chunk, n)`` row per history it saw (``kind`` null)."""
    from pyspark import TaskContext  # optional: pyspark

    ctx = TaskContext.get()
    yield from _chunks(batches, (ctx.partitionId() if ctx is not None else 0) * _CHUNK_STRIDE, chunk_rows)


def _check_group(t: "pa.Table") -> "pa.Table":
    """The ``applyInArrow`` function of the fallback: one whole history."""
    return pa.Table.from_batches([_check_chunk(t, -1)])


def check(m: "DataFrame", chunk_rows: int = CHUNK_ROWS) -> "DataFrame":
    """The per-partition pass over kernel rows: anomaly rows plus per-chunk history counts."""
    return m.select(*ROW_COLUMNS).mapInArrow(lambda it: check_partitions(it, chunk_rows), OUT_DDL)


def collect(ops: "DataFrame | None" = None, m: "DataFrame | None" = None,
            chunk_rows: int = CHUNK_ROWS) -> tuple[list[dict], dict[str, Any]]:
    """All Kafka anomalies: ``[{"history", "kind", "key", "evidence" (JSON text)}]`` and a report
    ``{"engine", "histories", "rows", "clustered", "shuffled", "chunks"}`` saying which path each
    history took. ``m``: kernel rows stored at ingest (:func:`store`); else from ``ops``."""
    if m is None:
        m = kernel_input(ops)
    rows = check(m, chunk_rows).collect()
    return _verify(rows, lambda: m, "arrow")


# ------------------------------------------------------------------------------------------
# Spark: kernel rows stored as Parquet, read by the Python workers themselves


def stored_files(path: str) -> list[str]:
    """The data files of a Parquet table (sorted, so unit numbers are stable): the kernel rows of
    :func:`store`, or the ``ops.parquet`` an audit writes."""
    p = Path(path)
    if p.is_file():
        return [str(p)]
    return sorted(str(f) for f in p.rglob("*.parquet") if not f.name.startswith((".", "_")))


def check_files(units: Iterable["pa.RecordBatch"], chunk_rows: int = CHUNK_ROWS) -> Iterator["pa.RecordBatch"]:
    """The ``mapInArrow`` function over a table of ``(unit, path)`` rows: each file is read here
    with pyarrow, a record batch at a time, and checked like :func:`check_partitions` (chunk ids
    ``unit * stride + chunk``)."""
    for ub in units:
        for unit, path in zip(ub.column(0).to_pylist(), ub.column(1).to_pylist()):
            batches = pq.ParquetFile(path).iter_batches(batch_size=1 << 17, columns=list(ROW_COLUMNS))
            yield from _chunks(batches, unit * _CHUNK_STRIDE, chunk_rows)


def collect_stored(spark, path: str, chunk_rows: int = CHUNK_ROWS) -> tuple[list[dict], dict[str, Any]]:
    """All Kafka anomalies of kernel rows stored by :func:`store`: one Spark task per file, the
    file read by the Python worker (no row passes through the JVM). Verified and, where a
    history spans files or chunks, re-checked after a shuffle, as in :func:`collect`. The files
    must be readable at the same path on every executor (a shared or local file system)."""
    from pyspark.sql import functions as F  # optional: pyspark

    files = stored_files(path)
    if not files:
        return [], {"engine": "arrow-files", "histories": 0, "rows": 0, "clustered": 0, "shuffled": 0, "chunks": 0}
    # one partition per file: spark.range puts id i alone in partition i
    units = spark.range(len(files), numPartitions=len(files)).select(
        "id", F.element_at(F.array(*[F.lit(f) for f in files]), F.col("id").cast("int") + 1).alias("path"))
    rows = units.mapInArrow(lambda it: check_files(it, chunk_rows), OUT_DDL).collect()
    return _verify(rows, lambda: spark.read.parquet(*files), "arrow-files")


def _verify(rows: list, source, engine: str) -> tuple[list[dict], dict[str, Any]]:
    """Accept each history seen by exactly one chunk; re-check the others after a shuffle."""
    from pyspark.sql import functions as F  # optional: pyspark

    anoms = [r for r in rows if r["kind"] is not None]
    chunks_of: dict[str, set[int]] = {}
    total = 0
    for r in rows:
        if r["kind"] is None:
            chunks_of.setdefault(r["history"], set()).add(r["chunk"])
            total += r["n"]
    split = sorted(h for h, cs in chunks_of.items() if len(cs) > 1)
    info: dict[str, Any] = {"engine": engine, "histories": len(chunks_of), "rows": total,
                            "clustered": len(chunks_of) - len(split), "shuffled": len(split),
                            "chunks": len({c for cs in chunks_of.values() for c in cs})}
    if split:
        m = source()
        bad = m.sparkSession.createDataFrame([(h,) for h in split], "history string")
        again = (m.select(*ROW_COLUMNS).join(F.broadcast(bad), "history", "left_semi")
                 .groupBy("history").applyInArrow(_check_group, OUT_DDL).where(F.col("kind").isNotNull())
                 .collect())
        drop = set(split)
        anoms = [r for r in anoms if r["history"] not in drop] + again
    out = [{"history": r["history"], "kind": r["kind"], "key": r["key"], "evidence": r["evidence"]} for r in anoms]
    return out, info
