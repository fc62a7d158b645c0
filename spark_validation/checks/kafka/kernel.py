"""Kafka anomalies as a vectorised numpy kernel over Arrow tables: the fast path.

Definitions: :mod:`.rules` (the reference). Differential tests hold this kernel and the
reference to exactly the same anomalies and evidence (tests/spark_validation/test_kafka_arrow.py,
test_spark.py).

Every anomaly is a property of one history, so a table holding whole histories is checked as a
whole: the kernel turns its columns into integers (dictionary codes for strings) and computes
every anomaly with whole-array numpy operations (``factorize``, ``lexsort``, ``ufunc.at``,
``searchsorted``), many histories at once. Python runs per anomaly found (to build its
evidence), never per input row. :mod:`.spark` runs it per Spark partition.

Kernel rows (:func:`.rows.row_schema`): the micro-ops of :func:`.rules.micro_ops` (``mop``
``send`` or ``poll``) plus, for every ``ok``/``info`` assign/subscribe op, one row ``mop =
'assign'`` with a null key (the op) and one per key it names.
"""

from __future__ import annotations

from typing import Any, Iterator

import numpy as np
import pandas as pd
import pyarrow as pa

from spark_validation.checks.kafka import rules
from spark_validation.checks.kafka.anomaly import (
    Duplicate, FailedRead, InnerStep, KafkaAnomaly, LostWrite, MaxRead, OffsetConflict, OwnRead, ProcessStep, Unseen,
    sorted_anomalies,
)
from spark_validation.checks.kafka.rows import int_values, row_schema, string_codes
from spark_validation.checks.kafka.rules import UNSEEN_SAMPLE
from spark_validation.ingest.records import OpRow

ROW_COLUMNS = ("history", "seq", "op", "process", "type", "mop", "key", "offset", "value", "pos")


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


BIG = np.iinfo(np.int64).max


class _Cols:
    """One table's kernel rows as integer columns, restricted to the send/poll micro-ops (``h``,
    ``p``, ``k``, ``v``, ``ty``, ``sq``, ``op``, ``o``, ``ho_``, ``ps``, ``is_send``), the
    dictionaries that decode them, and the facts every rule reads (groups, committed sends, the
    version order: ``idx`` of each row, ``first_idx``/``last_idx`` of each (history, key, value))."""

    def __init__(self, t: "pa.Table") -> None:
        self._decode(t)
        self._groups()
        self._version_order()

    def _decode(self, t: "pa.Table") -> None:
        self.hist, hist_d = string_codes(t.column("history"))
        self.proc, proc_d = string_codes(t.column("process"))
        self.key, key_d = string_codes(t.column("key"))
        val, self.val_d = string_codes(t.column("value"))
        typ, typ_d = string_codes(t.column("type"))
        mop, mop_d = string_codes(t.column("mop"))
        self.seq, _ = int_values(t.column("seq"))
        opn, _ = int_values(t.column("op"))
        off, has_off = int_values(t.column("offset"))
        pos, _ = int_values(t.column("pos"))
        self.OK, self.INFO, self.FAIL = (_code_of(typ_d, x) for x in ("ok", "info", "fail"))
        SEND, POLL, ASSIGN = (_code_of(mop_d, x) for x in ("send", "poll", "assign"))
        self.hist_s, self.proc_s, self.key_s = hist_d.to_pylist(), proc_d.to_pylist(), key_d.to_pylist()
        self.a_rows = np.flatnonzero(mop == ASSIGN)
        rows = np.flatnonzero(((mop == SEND) | (mop == POLL)) & (self.key >= 0) & (val >= 0))
        self.h, self.p, self.k, self.v, self.ty = self.hist[rows], self.proc[rows], self.key[rows], val[rows], typ[rows]
        self.sq, self.op, self.o, self.ho_, self.ps = self.seq[rows], opn[rows], off[rows], has_off[rows], pos[rows]
        self.is_send = mop[rows] == SEND
        self.n = len(rows)

    def _groups(self) -> None:
        """Per (history, key) and (history, key, value) ids; ``okr`` (an ``ok`` poll read the
        value); ``committed`` (an ``ok`` send, or an ``info`` one of whose op's sends an ``ok``
        poll read); ``vo`` (the row is in the version order)."""
        self.okread = ~self.is_send & (self.ty == self.OK)
        self.hk, self.n_hk = _group(self.h, self.k)
        self.hkv, self.n_hkv = _group(self.hk, self.v)
        self.hk_of = _first_of(self.hkv, self.n_hkv, self.hk)
        self.okr_g = np.zeros(self.n_hkv, bool)
        self.okr_g[self.hkv[self.okread]] = True
        self.okr = self.okr_g[self.hkv]
        self.hop, self.n_hop = _group(self.h, _factorize(self.op)[0])
        proven = np.zeros(self.n_hop, bool)
        proven[self.hop[self.is_send & (self.ty == self.INFO) & self.okr]] = True
        self.committed = self.is_send & ((self.ty == self.OK) | ((self.ty == self.INFO) & proven[self.hop]))
        self.vo = self.ho_ & (~self.is_send | self.committed)

    def _version_order(self) -> None:
        """An offset's index is its dense rank among the key's observed offsets."""
        o, ho_, vo, n = self.o, self.ho_, self.vo, self.n
        offc = np.zeros(n, np.int64)
        if ho_.any():
            _, inv = np.unique(o[ho_], return_inverse=True)
            offc[ho_] = inv
        self.offc, self.n_off = offc, int(offc.max(initial=0)) + 1  # no row: a table of assignments
        hko = self.hk * self.n_off + offc  # ordered by (hk, offset); < n**2
        U, u_first = np.unique(hko[vo], return_index=True)
        self.U, self.u_off = U, o[vo][u_first]
        u_hk = U // self.n_off
        rank = np.arange(len(U)) - np.searchsorted(u_hk, u_hk, "left")
        self.at = np.searchsorted(U, hko)
        at_c = np.minimum(self.at, max(len(U) - 1, 0))
        self.has_idx = ho_ & (len(U) > 0) & (U[at_c] == hko if len(U) else False)
        self.idx = np.where(self.has_idx, rank[at_c] if len(U) else 0, -1)
        self.first_idx = np.full(self.n_hkv, BIG)
        self.last_idx = np.full(self.n_hkv, -1)
        np.minimum.at(self.first_idx, self.hkv[vo], self.idx[vo])
        np.maximum.at(self.last_idx, self.hkv[vo], self.idx[vo])

    def sends_by_value(self) -> None:
        """A send with no offset takes the index where the version order has its value (the
        last one, as Jepsen's by-value map in jepsen.tests.kafka/version-orders), so reads can
        prove a skip."""
        nooff = self.is_send & ~self.ho_ & (self.last_idx[self.hkv] >= 0)
        if nooff.any():
            self.idx = np.where(nooff, self.last_idx[self.hkv], self.idx)
            self.has_idx = self.has_idx | nooff

    def vtext(self, c: int) -> str:
        return self.val_d[int(c)].as_py()

    def ofs(self, r: int) -> int | None:
        return int(self.o[r]) if self.ho_[r] else None

    def step(self, kind: str, ra: int, rb: int, d: int, cross: bool) -> tuple:
        """An anomaly between micro-ops ``ra`` and ``rb`` (``d``: the index step): inside one op
        (``op``) or from one op to the next (``process`` and ``ops``)."""
        values = (self.vtext(self.v[ra]), self.vtext(self.v[rb]))
        offsets = (self.ofs(ra), self.ofs(rb))
        if cross:
            ev: Any = ProcessStep(self.proc_s[self.p[rb]], values, offsets, int(d),
                                  (int(self.op[ra]), int(self.op[rb])))
        else:
            ev = InnerStep(values, offsets, int(d), int(self.op[ra]))
        return self.h[rb], kind, self.k[rb], ev


def _code_of(d: "pa.Array", name: str) -> int:
    lst = d.to_pylist()
    return lst.index(name) if name in lst else -2


def check_table(t: "pa.Table") -> list[KafkaAnomaly]:
    """All Kafka anomalies of the kernel rows in ``t`` (any number of whole histories), evidence
    exactly as the reference's."""
    if t.num_rows == 0:
        return []
    c = _Cols(t)
    if c.n == 0:
        return []
    found: list[tuple] = []
    for rule in (_inconsistent_offsets, _duplicate, _g1a, _lost_write):
        found.extend(rule(c))
    c.sends_by_value()
    for rule in (_steps, _nonok_polls, _precommitted_read, _unseen):
        found.extend(rule(c))
    return [KafkaAnomaly(c.hist_s[hc], kind, c.key_s[kc], ev) for hc, kind, kc, ev in found]


def _inconsistent_offsets(c: _Cols) -> Iterator[tuple]:
    """An offset of a key with several values."""
    vrows = np.flatnonzero(c.vo)
    if not len(vrows):
        return
    g = c.at[vrows]
    gv, _ = _factorize(g * (int(c.v.max()) + 1) + c.v[vrows])
    first = np.unique(gv, return_index=True)[1]
    nvals = np.bincount(g[first], minlength=len(c.U))
    bad = np.flatnonzero(nvals > 1)
    if not len(bad):
        return
    sel = vrows[np.isin(g, bad)]
    groups: dict[int, list[int]] = {}
    for r in sel[np.lexsort((c.sq[sel], c.at[sel]))]:
        groups.setdefault(int(c.at[r]), []).append(int(r))
    for gi, rs in groups.items():
        r0 = rs[0]
        yield c.h[r0], "inconsistent-offsets", c.k[r0], OffsetConflict(
            int(c.u_off[gi]), sorted({c.vtext(c.v[r]) for r in rs}), sorted({int(c.op[r]) for r in rs}))


def _duplicate(c: _Cols) -> Iterator[tuple]:
    """A value at several offsets of a key."""
    vrows = np.flatnonzero(c.vo)
    if not len(vrows):
        return
    pairs = np.unique(c.hkv[vrows] * c.n_off + c.offc[vrows])
    noffs = np.bincount(pairs // c.n_off, minlength=c.n_hkv)
    bad = np.flatnonzero(noffs > 1)
    if not len(bad):
        return
    dups: dict[int, list[int]] = {}
    for r in vrows[np.isin(c.hkv[vrows], bad)]:
        dups.setdefault(int(c.hkv[r]), []).append(int(r))
    for rs in dups.values():
        r0 = rs[0]
        yield c.h[r0], "duplicate", c.k[r0], Duplicate(c.vtext(c.v[r0]), sorted({int(c.o[r]) for r in rs}))


def _g1a(c: _Cols) -> Iterator[tuple]:
    """An ``ok`` poll read a value whose send failed."""
    failed = c.is_send & (c.ty == c.FAIL)
    has_fail = np.zeros(c.n_hkv, bool)
    has_fail[c.hkv[failed]] = True
    g1a = c.okread & has_fail[c.hkv]
    if not g1a.any():
        return
    writers: dict[int, list[int]] = {}
    for r in np.flatnonzero(failed & c.okr_g[c.hkv]):
        writers.setdefault(int(c.hkv[r]), []).append(int(c.op[r]))
    seen = set()
    for r in np.flatnonzero(g1a):
        for w in sorted(set(writers[int(c.hkv[r])])):
            ofs = c.ofs(r)
            tkey = (int(c.hkv[r]), ofs, w, int(c.op[r]))
            if tkey not in seen:
                seen.add(tkey)
                yield c.h[r], "G1a", c.k[r], FailedRead(c.vtext(c.v[r]), ofs, w, int(c.op[r]))


def _lost_write(c: _Cols) -> Iterator[tuple]:
    """A committed value no ``ok`` poll read, at or below the highest index an ``ok`` poll
    reached (each read value counted at its first index)."""
    first_idx, last_idx, hk_of, hkv = c.first_idx, c.last_idx, c.hk_of, c.hkv
    has_vo = last_idx >= 0
    bound = np.full(c.n_hk, -1)
    cand = c.okr_g & has_vo
    np.maximum.at(bound, hk_of[cand], first_idx[cand])
    writer = np.full(c.n_hkv, BIG)
    np.minimum.at(writer, hkv[c.committed], c.op[c.committed])
    lost = has_vo & (bound[hk_of] >= 0) & (last_idx <= bound[hk_of]) & ~c.okr_g & (writer < BIG)
    if not lost.any():
        return
    reader = np.full(c.n_hkv, BIG)
    np.minimum.at(reader, hkv[c.okread], c.op[c.okread])
    rep = np.zeros(c.n_hkv, np.int64)  # a row of each (history, key, value)
    rep[hkv] = np.arange(c.n)
    min_off = np.full(c.n_hkv, BIG)
    np.minimum.at(min_off, hkv[c.vo], c.o[c.vo])
    max_read: dict[int, tuple] = {}
    lost_hk = set(int(x) for x in hk_of[lost])
    for gi in np.flatnonzero(cand & (first_idx == bound[hk_of])):
        g = int(hk_of[gi])
        if g in lost_hk:
            m = (c.vtext(c.v[rep[gi]]), int(reader[gi]), int(min_off[gi]))
            if g not in max_read or m[:2] < max_read[g][:2]:
                max_read[g] = m
    for gi in np.flatnonzero(lost):
        r0 = rep[gi]
        mv, mop_, moff = max_read[int(hk_of[gi])]
        yield c.h[r0], "lost-write", c.k[r0], LostWrite(
            c.vtext(c.v[r0]), int(min_off[gi]), int(writer[gi]), MaxRead(mv, moff, mop_))


def _steps(c: _Cols) -> Iterator[tuple]:
    """Consecutive micro-ops of one (history, process, key, kind, class), in op order: inside
    one op (any completion), and from one op to the next (``ok`` polls; ``ok``/``info`` sends,
    where only going back counts), unless an assign or subscribe in between left the key out."""
    cls = c.okread | (c.is_send & ((c.ty == c.OK) | (c.ty == c.INFO)))
    grp, _ = _group(c.hk, c.p * 4 + c.is_send * 2 + cls)
    order = np.lexsort((c.ps, c.sq, grp))
    a, b = order[:-1], order[1:]
    d = c.idx[b] - c.idx[a]
    pair = (grp[a] == grp[b]) & c.has_idx[a] & c.has_idx[b] & (d != 1)
    internal = pair & (c.sq[a] == c.sq[b])
    cross = pair & (c.sq[a] != c.sq[b]) & cls[b] & ((d < 1) | ~c.is_send[b])
    for i in np.flatnonzero(internal):
        snd = bool(c.is_send[b[i]])
        kind = (("int-send-skip" if snd else "int-poll-skip") if d[i] > 1
                else ("int-nonmonotonic-send" if snd else "int-nonmonotonic-poll"))
        yield c.step(kind, a[i], b[i], d[i], cross=False)
    ci = np.flatnonzero(cross)
    if len(ci):
        ci = ci[~_reset(ci, a, b, c.h, c.p, c.k, c.sq, c.hist, c.proc, c.key, c.seq, c.a_rows, c.n_hk)]
    for i in ci:
        snd = bool(c.is_send[b[i]])
        kind = "nonmonotonic-send" if snd else ("poll-skip" if d[i] > 1 else "nonmonotonic-poll")
        yield c.step(kind, a[i], b[i], d[i], cross=True)


def _nonok_polls(c: _Cols) -> Iterator[tuple]:
    """A poll inside an info or failed op is compared with the process's last ok poll of the key
    (jepsen.tests.kafka/poll-skip+nonmonotonic-cases-per-process compares every op's polls; only
    ok ops move the position)."""
    okr_rows = np.flatnonzero(c.okread)
    nbr = np.flatnonzero(~c.is_send & (c.ty != c.OK))
    if not (len(nbr) and len(okr_rows)):
        return
    hp, _ = _group(c.hk, c.p)
    _, sqd = np.unique(c.sq, return_inverse=True)
    sqd = sqd.astype(np.int64)
    S = int(sqd.max()) + 2
    ko = hp[okr_rows] * S + sqd[okr_rows]
    order_ok = np.lexsort((c.ps[okr_rows], ko))
    ks = ko[order_ok]
    qk = hp[nbr] * S + sqd[nbr]
    o2 = np.lexsort((c.ps[nbr], qk))
    nbr, qk = nbr[o2], qk[o2]
    first = np.r_[True, qk[1:] != qk[:-1]]  # the op's first read of the key
    nbr, qk = nbr[first], qk[first]
    j = np.searchsorted(ks, qk, "left") - 1  # the last ok read before it (same process and key)
    jc = np.maximum(j, 0)
    hit = (j >= 0) & (ks[jc] // S == hp[nbr])
    ra2, rb2 = okr_rows[order_ok[jc]][hit], nbr[hit]
    sel = c.has_idx[ra2] & c.has_idx[rb2]
    ra2, rb2 = ra2[sel], rb2[sel]
    d2 = c.idx[rb2] - c.idx[ra2]
    sel = d2 != 1
    ra2, rb2, d2 = ra2[sel], rb2[sel], d2[sel]
    if not len(rb2):
        return
    reset = _reset(np.arange(len(rb2)), ra2, rb2, c.h, c.p, c.k, c.sq, c.hist, c.proc, c.key, c.seq, c.a_rows, c.n_hk)
    for i in np.flatnonzero(~reset):
        kind = "poll-skip" if d2[i] > 1 else "nonmonotonic-poll"
        yield c.step(kind, ra2[i], rb2[i], d2[i], cross=True)


def _precommitted_read(c: _Cols) -> Iterator[tuple]:
    """An op read a value it sent itself (only ops with both sends and reads)."""
    op_send = np.zeros(c.n_hop, bool)
    op_send[c.hop[c.is_send]] = True
    op_read = np.zeros(c.n_hop, bool)
    op_read[c.hop[~c.is_send]] = True
    mixed = np.flatnonzero((op_send & op_read)[c.hop])
    if not len(mixed):
        return
    hsk, n_hsk = _group(c.hk[mixed], _factorize(c.sq[mixed])[0])
    hskv, n_hskv = _group(hsk, c.v[mixed])
    snd = c.is_send[mixed]
    sent = np.zeros(n_hskv, bool)
    sent[hskv[snd]] = True
    read = np.zeros(n_hskv, bool)
    read[hskv[~snd]] = True
    both = sent & read
    if not both.any():
        return
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
        yield c.h[r0], "precommitted-read", c.k[r0], OwnRead(sorted(c.vtext(c.v[r]) for r in rs),
                                                             int(c.op[r0]))


def _unseen(c: _Cols) -> Iterator[tuple]:
    """``ok`` sends never read by an ``ok`` poll, per key."""
    un = c.is_send & (c.ty == c.OK) & ~c.okr
    if not un.any():
        return
    rs = np.flatnonzero(un)
    _, first = np.unique(c.hkv[rs], return_index=True)
    per: dict[int, list[int]] = {}
    for r in rs[first]:
        per.setdefault(int(c.hk[r]), []).append(int(r))
    for lst in per.values():
        vals = sorted(c.vtext(c.v[r]) for r in lst)
        yield c.h[lst[0]], "unseen", c.k[lst[0]], Unseen(len(vals), vals[:UNSEEN_SAMPLE])


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


def input_table(rows: list[OpRow]) -> "pa.Table":
    """Kernel rows of op rows, built with the reference's micro-op extraction."""
    out = []
    for r in sorted(rows, key=lambda r: (r.history, r.line)):
        base = {"history": r.history, "seq": r.line, "op": r.index, "process": r.process, "type": r.type}
        out.extend({**base, "mop": mop, "key": k, "offset": o, "value": v, "pos": p}
                   for mop, k, o, v, p in rules.kernel_mops(r))
    return pa.Table.from_pylist(out, schema=row_schema())


def check_rows(rows: list[OpRow]) -> list[KafkaAnomaly]:
    """The kernel over op rows in this process (sorted like :func:`.rules.check_rows`)."""
    return sorted_anomalies(check_table(input_table(rows)))
