/*
 * The register check of spark_validation/checks/linearizable/register.py (check_register_ops), compiled, for
 * the register models (register, cas-register) on histories of atomic values. Built by the
 * project's install (setup.py, an optional extension: without it the Python path runs).
 *
 * One call, check_register_ops, does what check_history does between pairing the ops and
 * building the evidence: turn the paired operations into register calls, split them by key, run the
 * impossible-read pre-check and, per key, the Wing & Gong / Lowe search with the same pruning rules
 * (read-only forced lifts, the symmetry of optional calls with equal inputs, blind writes after
 * optional calls), in the same order, so that verdicts, step counts, cache sizes and evidence are
 * identical to the Python path (tests/spark_validation/test_linkernel.py checks this on random
 * histories). The pairing is Jepsen's rule as spark_validation/ingest/pairing.py writes it once:
 * the caller's Pairing when it has one, else the compiled loop of that rule (_rowkernel.c, which
 * exports it as a capsule; tests/spark_validation/test_pairing.py holds it to the Python rule);
 * the kernel reads only the invocation and completion positions. Values are interned
 * through a Python dict, so equality is Python's.
 *
 * Anything outside the common case -- a pairing with problems, a value that is not None/int/str, an
 * unknown f, a key with more than MAX_PART calls -- returns None and the caller takes the Python
 * path, which reports errors exactly as before. The configuration cache keeps the set of
 * linearized calls as a plain bitset (the Python path compresses it into windows for long
 * histories; here partitions are capped at MAX_PART calls, so an entry is at most 272 bytes).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_PART 2048
#define CHECK_EVERY 2048
#define STATES_CAP 8
#define ENTRY_OVERHEAD 280 /* the Python path's per-entry estimate (checks/linearizable/search.py, ENTRY_OVERHEAD) */

enum { K_READ = 0, K_WRITE = 1, K_CAS = 2 };
enum { V_TRUE = 1, V_FALSE = 0, V_UNKNOWN = 2, V_IMPOSSIBLE = 3 };

static PyObject *s_type, *s_f, *s_key, *s_value, *s_ok, *s_fail,
    *s_read, *s_write, *s_cas;

/* ------------------------------------------------------------------------------------------ */

static int str_eq(PyObject *o, PyObject *interned) {
    if (o == interned) return 1;
    if (!PyUnicode_CheckExact(o)) return 0;
    return PyUnicode_Compare(o, interned) == 0;
}

static int is_atom(PyObject *o) {
    return o == Py_None || PyLong_CheckExact(o) || PyUnicode_CheckExact(o);
}

/* id of value v in (dict d, list l); -1 on error */
static int intern_value(PyObject *d, PyObject *l, PyObject *v) {
    PyObject *id = PyDict_GetItemWithError(d, v);
    if (id) return (int)PyLong_AsLong(id);
    if (PyErr_Occurred()) return -1;
    Py_ssize_t n = PyList_GET_SIZE(l);
    PyObject *nid = PyLong_FromSsize_t(n);
    if (!nid) return -1;
    int rc = PyDict_SetItem(d, v, nid);
    Py_DECREF(nid);
    if (rc < 0 || PyList_Append(l, v) < 0) return -1;
    return (int)n;
}

static double now_monotonic(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts); /* what time.perf_counter reads on Linux */
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static inline uint64_t mix64(uint64_t x) { /* splitmix64's finaliser */
    x += 0x9E3779B97F4A7C15ULL;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
    return x ^ (x >> 31);
}

/* ---------------------------------------------------------------- the configuration cache */

typedef struct {
    int W;              /* 64-bit words per bitset */
    size_t esize;       /* words per entry: hash, (state, flag), bits */
    uint64_t *arena;    /* entries */
    size_t n, cap_entries;
    uint32_t *slots;    /* 1-based entry numbers, 0 = empty */
    size_t mask;
} Cache;

static int cache_init(Cache *c, int W) {
    c->W = W;
    c->esize = 2 + (size_t)W;
    c->n = 0;
    c->cap_entries = 64;
    c->arena = malloc(c->cap_entries * c->esize * sizeof(uint64_t));
    c->mask = 127;
    c->slots = calloc(c->mask + 1, sizeof(uint32_t));
    return (c->arena && c->slots) ? 0 : -1;
}

static void cache_free(Cache *c) {
    free(c->arena);
    free(c->slots);
}

static int cache_grow(Cache *c) {
    size_t nmask = c->mask * 2 + 1;
    uint32_t *ns = calloc(nmask + 1, sizeof(uint32_t));
    if (!ns) return -1;
    for (size_t i = 0; i < c->n; i++) {
        size_t j = (size_t)c->arena[i * c->esize] & nmask;
        while (ns[j]) j = (j + 1) & nmask;
        ns[j] = (uint32_t)(i + 1);
    }
    free(c->slots);
    c->slots = ns;
    c->mask = nmask;
    return 0;
}

/* insert (hash, state, flag, bits) unless present: 1 inserted, 0 present, -1 out of memory */
static int cache_add(Cache *c, uint64_t h, int state, int flag, const uint64_t *bits) {
    uint64_t sf = ((uint64_t)(uint32_t)state << 1) | (uint64_t)flag;
    size_t j = (size_t)h & c->mask;
    uint32_t s;
    while ((s = c->slots[j])) {
        uint64_t *e = c->arena + (size_t)(s - 1) * c->esize;
        if (e[0] == h && e[1] == sf && memcmp(e + 2, bits, (size_t)c->W * sizeof(uint64_t)) == 0) return 0;
        j = (j + 1) & c->mask;
    }
    if (c->n == c->cap_entries) {
        size_t nc = c->cap_entries * 2;
        uint64_t *na = realloc(c->arena, nc * c->esize * sizeof(uint64_t));
        if (!na) return -1;
        c->arena = na;
        c->cap_entries = nc;
    }
    if (c->n >= UINT32_MAX - 1) return -1;
    uint64_t *e = c->arena + c->n * c->esize;
    e[0] = h;
    e[1] = sf;
    memcpy(e + 2, bits, (size_t)c->W * sizeof(uint64_t));
    c->n++;
    c->slots[j] = (uint32_t)c->n;
    if (c->n * 2 > c->mask + 1) return cache_grow(c) < 0 ? -1 : 1;
    return 1;
}

/* ---------------------------------------------------------------------------- the search */

typedef struct {
    int k;                 /* calls */
    const int *kind, *a, *b, *must;
    const Py_ssize_t *inv_pos, *comp_pos;
} Part;

typedef struct {
    int verdict;
    long long explored;
    size_t cache;
    long long best_prefix;          /* unknown */
    long long cache_cap;            /* unknown: the cap reached (for the reason) */
    const char *reason;             /* unknown */
    int *prefix; int prefix_len;    /* false: local call ids, bottom of the stack first */
    int state, stuck_cid;           /* false */
    int *cands; int n_cands;        /* false */
    int stuck_states[STATES_CAP]; int n_stuck;
} Outcome;

typedef struct { long long key; int cid; } RunItem;

static int cmp_run(const void *x, const void *y) {
    const RunItem *p = x, *q = y;
    if (p->key != q->key) return p->key < q->key ? -1 : 1;
    return p->cid - q->cid;
}

typedef struct { Py_ssize_t pos; int cid; } Ret;

static int cmp_ret(const void *x, const void *y) {
    const Ret *p = x, *q = y;
    return p->pos < q->pos ? -1 : (p->pos > q->pos);
}

#define BIT(bs, i) (((bs)[(i) >> 6] >> ((i) & 63)) & 1ULL)

/* the width (bit_length) of the Python path's window over bits [lo, hi): see check_calls */
static long long window_bits(const uint64_t *bs, int from, int to) {
    int lo = from;
    while (lo < to && BIT(bs, lo)) lo++;
    int hi = to - 1;
    while (hi >= lo && !BIT(bs, hi)) hi--;
    return hi > lo ? (long long)(hi - lo + 1) : 0;
}

/* returns 0, or -1 with a Python exception set (memory, or a signal such as Ctrl-C) */
static int search(const Part *P, int init_state, double deadline, long long max_cache,
                  long long cache_bytes, Outcome *out) {
    int k = P->k, rc = -1;
    memset(out, 0, sizeof(*out));
    out->stuck_cid = -1;
    int n_ret = 0;
    for (int i = 0; i < k; i++) n_ret += P->must[i];
    int m = k + n_ret;
    /* everything below is freed at `done` */
    int *ev_kind = NULL, *ev_cid = NULL, *nxt = NULL, *prv = NULL, *node_ret = NULL, *ret_node = NULL;
    int *bitidx = NULL, *prev_same = NULL, *fr_node = NULL, *fr_state = NULL, *best_nodes = NULL;
    uint64_t *zob = NULL, *cur = NULL;
    Ret *rets = NULL;
    RunItem *run = NULL;
    long long *lastk = NULL; int *lastv = NULL;
    Cache cache = {0};
    int W = k ? (k + 63) / 64 : 1;

    ev_kind = malloc(sizeof(int) * (m + 1)); ev_cid = malloc(sizeof(int) * (m + 1));
    nxt = malloc(sizeof(int) * (m + 2)); prv = malloc(sizeof(int) * (m + 2));
    node_ret = malloc(sizeof(int) * (m + 2)); ret_node = malloc(sizeof(int) * (k + 1));
    bitidx = malloc(sizeof(int) * (k + 1)); prev_same = malloc(sizeof(int) * (k + 1));
    fr_node = malloc(sizeof(int) * (k + 1)); fr_state = malloc(sizeof(int) * (k + 1));
    best_nodes = malloc(sizeof(int) * (k + 1));
    zob = malloc(sizeof(uint64_t) * (k + 1)); cur = calloc((size_t)W, sizeof(uint64_t));
    rets = malloc(sizeof(Ret) * (n_ret + 1)); run = malloc(sizeof(RunItem) * (k + 1));
    out->prefix = malloc(sizeof(int) * (k + 1)); out->cands = malloc(sizeof(int) * (k + 1));
    if (!ev_kind || !ev_cid || !nxt || !prv || !node_ret || !ret_node || !bitidx || !prev_same ||
        !fr_node || !fr_state || !best_nodes || !zob || !cur || !rets || !run || !out->prefix ||
        !out->cands || cache_init(&cache, W) < 0) {
        PyErr_NoMemory();
        goto done;
    }

    /* events in real-time order; calls are in invocation order already, returns are sorted */
    for (int i = 0, r = 0; i < k; i++)
        if (P->must[i]) { rets[r].pos = P->comp_pos[i]; rets[r].cid = i; r++; }
    qsort(rets, (size_t)n_ret, sizeof(Ret), cmp_ret);
    {
        /* merge, and within each run of calls between two returns, earliest deadline first
           (optional calls last, in invocation order): check_calls' order="deadline" */
        int ci = 0, ri = 0, e = 0, nrun = 0;
        while (ci < k || ri < n_ret) {
            if (ci < k && (ri >= n_ret || P->inv_pos[ci] < rets[ri].pos)) {
                run[nrun].key = P->must[ci] ? (long long)P->comp_pos[ci] : LLONG_MAX;
                run[nrun].cid = ci;
                nrun++;
                ci++;
            } else {
                if (nrun > 1) qsort(run, (size_t)nrun, sizeof(RunItem), cmp_run);
                for (int j = 0; j < nrun; j++) { ev_kind[e] = 0; ev_cid[e] = run[j].cid; e++; }
                nrun = 0;
                ev_kind[e] = 1; ev_cid[e] = rets[ri].cid; e++;
                ri++;
            }
        }
        if (nrun > 1) qsort(run, (size_t)nrun, sizeof(RunItem), cmp_run);
        for (int j = 0; j < nrun; j++) { ev_kind[e] = 0; ev_cid[e] = run[j].cid; e++; }
    }
    const int HEAD = m, TAIL = m + 1;
    for (int i = 0; i < m; i++) { nxt[i] = i + 1; prv[i] = i - 1; }
    if (m) { prv[0] = HEAD; nxt[m - 1] = TAIL; }
    nxt[HEAD] = m ? 0 : TAIL; prv[HEAD] = -1;
    prv[TAIL] = m ? m - 1 : HEAD; nxt[TAIL] = -1;
    for (int i = 0; i < k; i++) ret_node[i] = -1;
    for (int i = 0; i < m; i++) if (ev_kind[i]) ret_node[ev_cid[i]] = i;
    for (int i = 0; i < m; i++) node_ret[i] = ev_kind[i] ? -1 : ret_node[ev_cid[i]];
    node_ret[HEAD] = node_ret[TAIL] = -1;

    /* ranks: must calls first in the bitset, optional calls after, each in invocation order */
    int n_must = 0;
    for (int i = 0; i < k; i++) if (P->must[i]) bitidx[i] = n_must++;
    for (int i = 0, o = 0; i < k; i++) if (!P->must[i]) bitidx[i] = n_must + o++;
    for (int i = 0; i < k; i++) zob[i] = mix64((uint64_t)bitidx[i] * 0x100000001B3ULL + 1);

    /* symmetry among optional calls with equal inputs: each one's predecessor, events order */
    {
        size_t hs = 16;
        while (hs < (size_t)k * 2) hs <<= 1;
        lastk = malloc(sizeof(long long) * hs); lastv = malloc(sizeof(int) * hs);
        if (!lastk || !lastv) { PyErr_NoMemory(); goto done; }
        for (size_t i = 0; i < hs; i++) lastk[i] = -1;
        for (int i = 0; i < k; i++) prev_same[i] = -1;
        for (int e = 0; e < m; e++) {
            int cid = ev_cid[e];
            if (ev_kind[e] || P->must[cid]) continue;
            long long key = ((long long)P->kind[cid] << 58) ^ ((long long)P->a[cid] << 29) ^ (long long)P->b[cid];
            size_t j = (size_t)mix64((uint64_t)key) & (hs - 1);
            while (lastk[j] != -1 && lastk[j] != key) j = (j + 1) & (hs - 1);
            if (lastk[j] == key) prev_same[cid] = lastv[j];
            lastk[j] = key;
            lastv[j] = cid;
        }
    }

    const int *kind = P->kind, *va = P->a, *vb = P->b, *must = P->must;
    int remaining = n_must;
    int state = init_state, depth = 0, best_len = -1, best_state = 0, best_stuck = -1;
    long long explored = 0, cache_cap = max_cache;
    int countdown = CHECK_EVERY, entry = nxt[HEAD], fresh = 1, result = V_TRUE;
    uint64_t h = 0;
    const char *reason = "";

#define NODE_RO(e) ((e) < m && !ev_kind[e] && kind[ev_cid[e]] == K_READ)
#define KEYHASH(hh, st, fl) ((hh) ^ mix64(((uint64_t)(uint32_t)(st) << 1) | (uint64_t)(fl)))
#define UNLINK(e) do { int p_ = prv[e], q_ = nxt[e]; nxt[p_] = q_; prv[q_] = p_; } while (0)

    while (remaining) {
        explored++;
        if (!--countdown) {
            countdown = CHECK_EVERY;
            if (deadline >= 0 && now_monotonic() > deadline) {
                result = V_UNKNOWN; reason = "time budget exhausted"; break;
            }
            long long wb = window_bits(cur, 0, n_must) + window_bits(cur, n_must, k);
            long long byb = cache_bytes / (ENTRY_OVERHEAD + wb / 8);
            cache_cap = max_cache < byb ? max_cache : byb;
            if ((long long)cache.n > cache_cap) {
                result = V_UNKNOWN; reason = NULL; break;
            }
            if (PyErr_CheckSignals() < 0) goto done;
        }
        /* the call to lift next, if any: a forced read (an accepted read-only call, scanned for
           in each new configuration), or the next call the model accepts */
        int lift = -1, ns = state, forced = 0;
        if (fresh) {
            fresh = 0;
            int e = nxt[HEAD];
            while (e != TAIL && !ev_kind[e]) {
                int c = ev_cid[e];
                if (kind[c] == K_READ && va[c] == state) { lift = e; forced = 1; break; }
                e = nxt[e];
            }
            if (!forced) entry = nxt[HEAD];
        }
        if (!forced && entry >= 0 && entry != TAIL && !ev_kind[entry]) {
            int cid = ev_cid[entry];
            if (kind[cid] == K_READ) { entry = nxt[entry]; continue; }
            int ps = prev_same[cid];
            if ((ps >= 0 && !BIT(cur, bitidx[ps])) ||
                (kind[cid] == K_WRITE && depth > 0 && !must[ev_cid[fr_node[depth - 1]]])) {
                entry = nxt[entry];
                continue;
            }
            int ok;
            if (kind[cid] == K_WRITE) { ok = 1; ns = va[cid]; }
            else { ok = (state == va[cid]); ns = ok ? vb[cid] : state; }
            if (!ok) { entry = nxt[entry]; continue; }
            lift = entry;
        }
        if (lift >= 0) {
            int cid = ev_cid[lift], bi = bitidx[cid];
            cur[bi >> 6] |= 1ULL << (bi & 63);
            uint64_t nh = h ^ zob[cid];
            int added = cache_add(&cache, KEYHASH(nh, ns, !must[cid]), ns, !must[cid], cur);
            if (added < 0) { PyErr_NoMemory(); goto done; }
            if (added) { /* lift the call and its return out of the list */
                fr_node[depth] = lift; fr_state[depth] = state; depth++;
                state = ns;
                h = nh;
                if (must[cid]) remaining--;
                UNLINK(lift);
                if (node_ret[lift] >= 0) UNLINK(node_ret[lift]);
                fresh = 1;
                continue;
            }
            cur[bi >> 6] &= ~(1ULL << (bi & 63));
            if (!forced) { entry = nxt[entry]; continue; }
            entry = -1; /* a forced read explored before and failed: so does this configuration */
        }
        if (entry >= 0) {
            /* a return of an op not linearized yet (or the end of the list with ops left) */
            if (depth >= best_len) {
                if (depth > best_len) {
                    best_len = depth;
                    memcpy(best_nodes, fr_node, sizeof(int) * (size_t)depth);
                    best_state = state;
                    best_stuck = entry;
                    out->n_stuck = 0;
                }
                int seen = 0;
                for (int i = 0; i < out->n_stuck; i++) seen |= out->stuck_states[i] == state;
                if (out->n_stuck < STATES_CAP && !seen) out->stuck_states[out->n_stuck++] = state;
            }
        }
        /* backtrack; a forced (read-only) lift fails together with its parent configuration */
        for (;;) {
            if (depth == 0) { result = V_FALSE; break; }
            depth--;
            entry = fr_node[depth];
            state = fr_state[depth];
            int cid = ev_cid[entry], bi = bitidx[cid];
            if (must[cid]) remaining++;
            cur[bi >> 6] &= ~(1ULL << (bi & 63));
            h ^= zob[cid];
            int r = node_ret[entry];
            if (r >= 0) { nxt[prv[r]] = r; prv[nxt[r]] = r; }
            nxt[prv[entry]] = entry;
            prv[nxt[entry]] = entry;
            if (!NODE_RO(entry)) break;
        }
        if (result == V_FALSE) break;
        entry = nxt[entry];
    }

    out->verdict = result;
    out->explored = explored;
    out->cache = cache.n;
    if (result == V_UNKNOWN) {
        out->reason = reason;
        out->best_prefix = best_len > depth ? best_len : depth;
        out->cache_cap = cache_cap;
    } else if (result == V_FALSE) {
        /* the deepest prefix, its state, the node it got stuck on, and every call before that
           node not in the prefix (candidates), as check_calls' _evidence lists them */
        uint8_t *done_ = calloc((size_t)k + 1, 1);
        if (!done_) { PyErr_NoMemory(); goto done; }
        out->prefix_len = best_len;
        for (int i = 0; i < best_len; i++) {
            out->prefix[i] = ev_cid[best_nodes[i]];
            done_[ev_cid[best_nodes[i]]] = 1;
        }
        out->state = best_state;
        out->stuck_cid = best_stuck < m ? ev_cid[best_stuck] : -1;
        int limit = best_stuck < m ? best_stuck : m;
        for (int e = 0; e < limit; e++)
            if (!ev_kind[e] && !done_[ev_cid[e]]) out->cands[out->n_cands++] = ev_cid[e];
        free(done_);
    }
    rc = 0;
done:
    free(ev_kind); free(ev_cid); free(nxt); free(prv); free(node_ret); free(ret_node);
    free(bitidx); free(prev_same); free(fr_node); free(fr_state); free(best_nodes);
    free(zob); free(cur); free(rets); free(run); free(lastk); free(lastv);
    cache_free(&cache);
    if (rc < 0) { free(out->prefix); free(out->cands); out->prefix = out->cands = NULL; }
    return rc;
}

/* ------------------------------------------------------------------------- the entry point */

static PyObject *int_list(const int *xs, int n, const int *map) {
    PyObject *l = PyList_New(n);
    if (!l) return NULL;
    for (int i = 0; i < n; i++) {
        PyObject *v = PyLong_FromLong(map ? map[xs[i]] : xs[i]);
        if (!v) { Py_DECREF(l); return NULL; }
        PyList_SET_ITEM(l, i, v);
    }
    return l;
}

/* Op's fields: read straight from the instance's slots when the op is of the slotted class the
   first op has (an attrs class with slots), else by getattr. New references either way. */
enum { A_TYPE, A_F, A_KEY, A_VALUE, N_ATTRS };
typedef struct { PyTypeObject *type; Py_ssize_t off[N_ATTRS]; } Slots;
static PyObject **attr_names[N_ATTRS] = {&s_type, &s_f, &s_key, &s_value};

static void slots_for(PyObject *op, Slots *sl) {
    sl->type = NULL;
    for (int i = 0; i < N_ATTRS; i++) {
        PyObject *d = PyObject_GetAttr((PyObject *)Py_TYPE(op), *attr_names[i]);
        if (!d) { PyErr_Clear(); return; }
        int ok = Py_IS_TYPE(d, &PyMemberDescr_Type) &&
                 (((PyMemberDescrObject *)d)->d_member->type == T_OBJECT_EX ||
                  ((PyMemberDescrObject *)d)->d_member->type == T_OBJECT) &&
                 !(((PyMemberDescrObject *)d)->d_member->flags & READ_RESTRICTED);
        if (ok) sl->off[i] = ((PyMemberDescrObject *)d)->d_member->offset;
        Py_DECREF(d);
        if (!ok) return;
    }
    /* a member descriptor found on the type wins over the instance (it is a data descriptor) */
    sl->type = Py_TYPE(op);
}

static inline PyObject *field(PyObject *op, const Slots *sl, int i) {
    if (Py_TYPE(op) == sl->type) {
        PyObject *v = *(PyObject **)((char *)op + sl->off[i]);
        if (v) { Py_INCREF(v); return v; }
    }
    return PyObject_GetAttr(op, *attr_names[i]);
}

#define GET(dst, obj, i) do { dst = field(obj, &sl, i); if (!dst) goto bail; } while (0)

/* _rowkernel.c's pairing loop (ingest/pairing.py's pair, compiled), through its capsule; NULL where
   that module is not built */
typedef int (*PairPositions)(PyObject *, Py_ssize_t **, Py_ssize_t **, Py_ssize_t *, Py_ssize_t *);
static PairPositions pair_positions;

/* The invocation and completion positions of the ops in seq, into inv_pos and comp_pos (room for
   all ops): those of pairing (a Pairing, ingest/pairing.py), or with pairing None those of the
   compiled pairing loop. 0; -1 where there are none to use (a pairing with problems, no compiled
   loop, a position that is not one) or on error. */
static int positions(PyObject *seq, PyObject *pairing, Py_ssize_t *inv_pos, Py_ssize_t *comp_pos,
                     Py_ssize_t *n_inv, long *nemesis) {
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    if (pairing == Py_None) {
        Py_ssize_t *pi, *pc, nem;
        if (!pair_positions || pair_positions(seq, &pi, &pc, n_inv, &nem) != 0) return -1;
        memcpy(inv_pos, pi, sizeof(Py_ssize_t) * *n_inv);
        memcpy(comp_pos, pc, sizeof(Py_ssize_t) * *n_inv);
        PyMem_Free(pi); PyMem_Free(pc);
        *nemesis = (long)nem;
        return 0;
    }
    PyObject *invokes = PyObject_GetAttrString(pairing, "invokes"),
             *completions = PyObject_GetAttrString(pairing, "completions"),
             *problems = PyObject_GetAttrString(pairing, "problems"), *x = PyObject_GetAttrString(pairing, "nemesis");
    int r = -1;
    if (!invokes || !completions || !problems || !x) goto done;
    *nemesis = PyLong_AsLong(x);
    if (*nemesis < 0 || !PyList_CheckExact(invokes) || !PyList_CheckExact(completions) ||
        !PyList_CheckExact(problems) || PyList_GET_SIZE(problems) != 0) goto done;
    *n_inv = PyList_GET_SIZE(invokes);
    if (PyList_GET_SIZE(completions) != *n_inv || *n_inv > n) goto done;
    for (Py_ssize_t j = 0; j < *n_inv; j++) {
        inv_pos[j] = PyLong_AsSsize_t(PyList_GET_ITEM(invokes, j));
        comp_pos[j] = PyLong_AsSsize_t(PyList_GET_ITEM(completions, j));
        if (inv_pos[j] < 0 || inv_pos[j] >= n || comp_pos[j] < -1 || comp_pos[j] >= n) goto done;
    }
    r = PyErr_Occurred() ? -1 : 0; /* a position that is not an int */
done:
    Py_XDECREF(invokes); Py_XDECREF(completions); Py_XDECREF(problems); Py_XDECREF(x);
    return r;
}

PyDoc_STRVAR(check_doc,
"check_register_ops(ops, pairing, cas, knossos_nil, initial, deadline, max_cache, cache_bytes)\n--\n\n"
"The register-model check of a list of Op objects paired by ``pairing`` (ingest.pairing.pair; None:\n"
"by the compiled loop of that rule), or\n"
"None when the history is outside the common case (the caller then takes the Python path). See\n"
"spark_validation/checks/linearizable/register.py.");

static PyObject *check_register_ops(PyObject *self, PyObject *args) {
    PyObject *ops_in, *pairing, *initial;
    int cas_allowed, knossos;
    double deadline;
    long long max_cache, cache_bytes;
    if (!PyArg_ParseTuple(args, "OOppOdLL", &ops_in, &pairing, &cas_allowed, &knossos, &initial, &deadline,
                          &max_cache, &cache_bytes))
        return NULL;
    PyObject *seq = PySequence_Fast(ops_in, "ops must be a sequence");
    if (!seq) return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    PyObject **items = PySequence_Fast_ITEMS(seq);

    PyObject *vals_d = NULL, *vals_l = NULL, *keys_d = NULL, *keys_l = NULL, *result = NULL, *parts_out = NULL,
             *x = NULL, *y = NULL;
    Py_ssize_t *inv_pos = NULL, *comp_pos = NULL, *c_inv = NULL, *c_comp = NULL;
    int *c_kind = NULL, *c_a = NULL, *c_b = NULL, *c_must = NULL, *c_key = NULL, *order = NULL,
        *part_start = NULL, *part_len = NULL, *local = NULL, *p_kind = NULL, *p_a = NULL,
        *p_b = NULL, *p_must = NULL;
    Py_ssize_t *p_inv = NULL, *p_comp = NULL;
    uint8_t *written = NULL;
    long nemesis = 0, failed = 0;
    Py_ssize_t n_inv = 0;
    int n_calls = 0;

    vals_d = PyDict_New(); vals_l = PyList_New(0);
    keys_d = PyDict_New(); keys_l = PyList_New(0);
    inv_pos = malloc(sizeof(Py_ssize_t) * (n + 1)); comp_pos = malloc(sizeof(Py_ssize_t) * (n + 1));
    if (!vals_d || !vals_l || !keys_d || !keys_l || !inv_pos || !comp_pos) goto bail;

    Slots sl = {NULL};
    if (n) slots_for(items[0], &sl);
    if (positions(seq, pairing, inv_pos, comp_pos, &n_inv, &nemesis) < 0) goto bail;

    /* register calls (models.RegisterModel.calls), in invocation order */
    c_kind = malloc(sizeof(int) * (n_inv + 1)); c_a = malloc(sizeof(int) * (n_inv + 1));
    c_b = malloc(sizeof(int) * (n_inv + 1)); c_must = malloc(sizeof(int) * (n_inv + 1));
    c_key = malloc(sizeof(int) * (n_inv + 1));
    c_inv = malloc(sizeof(Py_ssize_t) * (n_inv + 1)); c_comp = malloc(sizeof(Py_ssize_t) * (n_inv + 1));
    if (!c_kind || !c_a || !c_b || !c_must || !c_key || !c_inv || !c_comp) goto bail;
    if (!is_atom(initial)) goto bail;
    int init_id = intern_value(vals_d, vals_l, initial);
    if (init_id < 0) goto bail;
    for (Py_ssize_t j = 0; j < n_inv; j++) {
        PyObject *inv = items[inv_pos[j]], *c = comp_pos[j] >= 0 ? items[comp_pos[j]] : NULL;
        int ok = 0;
        if (c) {
            GET(y, c, A_TYPE);
            int is_fail = str_eq(y, s_fail);
            ok = str_eq(y, s_ok);
            Py_CLEAR(y);
            if (is_fail) { failed++; continue; }
        }
        int kd, a = 0, b = 0, must;
        GET(y, inv, A_F);
        if (str_eq(y, s_read)) kd = K_READ;
        else if (str_eq(y, s_write)) kd = K_WRITE;
        else if (cas_allowed && str_eq(y, s_cas)) kd = K_CAS;
        else goto bail;
        Py_CLEAR(y);
        if (kd == K_READ) {
            if (!ok) continue; /* an unknown read constrains nothing */
            GET(y, c, A_VALUE);
            if (y == Py_None && knossos) { Py_CLEAR(y); continue; }
            if (!is_atom(y) || (a = intern_value(vals_d, vals_l, y)) < 0) goto bail;
            Py_CLEAR(y);
            must = 1;
        } else {
            GET(y, inv, A_VALUE);
            if (kd == K_WRITE) {
                if (!is_atom(y) || (a = intern_value(vals_d, vals_l, y)) < 0) goto bail;
            } else {
                if (!PyTuple_CheckExact(y) || PyTuple_GET_SIZE(y) != 2) goto bail;
                PyObject *o0 = PyTuple_GET_ITEM(y, 0), *o1 = PyTuple_GET_ITEM(y, 1);
                if (!is_atom(o0) || !is_atom(o1)) goto bail;
                if ((a = intern_value(vals_d, vals_l, o0)) < 0 || (b = intern_value(vals_d, vals_l, o1)) < 0) goto bail;
            }
            Py_CLEAR(y);
            must = ok;
        }
        GET(y, inv, A_KEY);
        int kid;
        if (!is_atom(y) || (kid = intern_value(keys_d, keys_l, y)) < 0) goto bail;
        Py_CLEAR(y);
        c_kind[n_calls] = kd; c_a[n_calls] = a; c_b[n_calls] = b; c_must[n_calls] = must;
        c_key[n_calls] = kid; c_inv[n_calls] = inv_pos[j];
        c_comp[n_calls] = comp_pos[j];
        n_calls++;
    }

    /* partitions by key, in order of first appearance */
    int n_keys = (int)PyList_GET_SIZE(keys_l), n_vals = (int)PyList_GET_SIZE(vals_l);
    part_len = calloc((size_t)n_keys + 1, sizeof(int)); part_start = calloc((size_t)n_keys + 1, sizeof(int));
    order = malloc(sizeof(int) * (n_calls + 1)); local = malloc(sizeof(int) * (n_calls + 1));
    written = malloc((size_t)n_vals + 1);
    if (!part_len || !part_start || !order || !local || !written) goto bail;
    for (int i = 0; i < n_calls; i++) part_len[c_key[i]]++;
    for (int p = 0; p < n_keys; p++) if (part_len[p] > MAX_PART) goto bail;
    for (int p = 1; p < n_keys; p++) part_start[p] = part_start[p - 1] + part_len[p - 1];
    {
        int *fill = calloc((size_t)n_keys + 1, sizeof(int));
        if (!fill) goto bail;
        for (int i = 0; i < n_calls; i++) order[part_start[c_key[i]] + fill[c_key[i]]++] = i;
        free(fill);
    }
    p_kind = malloc(sizeof(int) * (MAX_PART + 1)); p_a = malloc(sizeof(int) * (MAX_PART + 1));
    p_b = malloc(sizeof(int) * (MAX_PART + 1)); p_must = malloc(sizeof(int) * (MAX_PART + 1));
    p_inv = malloc(sizeof(Py_ssize_t) * (MAX_PART + 1)); p_comp = malloc(sizeof(Py_ssize_t) * (MAX_PART + 1));
    parts_out = PyList_New(0);
    if (!p_kind || !p_a || !p_b || !p_must || !p_inv || !p_comp || !parts_out) goto bail;

    long unchecked = 0;
    for (int p = 0; p < n_keys; p++) {
        const int *g = order + part_start[p];
        int k = part_len[p];
        PyObject *key = PyList_GET_ITEM(keys_l, p), *entry = NULL;
        /* an observed value no write, cas or the initial value produced (RegisterModel.impossible) */
        memset(written, 0, (size_t)n_vals + 1);
        written[init_id] = 1;
        for (int i = 0; i < k; i++) {
            int c = g[i];
            if (c_kind[c] == K_WRITE) written[c_a[c]] = 1;
            else if (c_kind[c] == K_CAS) written[c_b[c]] = 1;
        }
        int n_imp = 0;
        for (int i = 0; i < k; i++) {
            int c = g[i];
            if (c_kind[c] == K_READ && !written[c_a[c]]) local[n_imp++] = c;
        }
        if (n_imp) {
            PyObject *l = int_list(local, n_imp, NULL);
            if (!l) goto bail;
            entry = Py_BuildValue("(OiLnnN)", key, V_IMPOSSIBLE, 0LL, (Py_ssize_t)0, (Py_ssize_t)k, l);
        } else {
            for (int i = 0; i < k; i++) {
                int c = g[i];
                p_kind[i] = c_kind[c]; p_a[i] = c_a[c]; p_b[i] = c_b[c]; p_must[i] = c_must[c];
                p_inv[i] = c_inv[c]; p_comp[i] = c_comp[c];
            }
            Part P = {k, p_kind, p_a, p_b, p_must, p_inv, p_comp};
            Outcome o;
            if (search(&P, init_id, deadline, max_cache, cache_bytes, &o) < 0) goto bail;
            if (o.verdict == V_TRUE) {
                entry = Py_BuildValue("(OiLnnO)", key, V_TRUE, o.explored, (Py_ssize_t)o.cache, (Py_ssize_t)k, Py_None);
            } else if (o.verdict == V_FALSE) {
                PyObject *sl = PyList_New(o.n_stuck);
                if (sl) for (int i = 0; i < o.n_stuck; i++) {
                    PyObject *v = PyList_GET_ITEM(vals_l, o.stuck_states[i]);
                    Py_INCREF(v);
                    PyList_SET_ITEM(sl, i, v);
                }
                PyObject *pl = int_list(o.prefix, o.prefix_len, g), *cl = int_list(o.cands, o.n_cands, g);
                if (sl && pl && cl)
                    entry = Py_BuildValue("(OiLnn(NOiNN))", key, V_FALSE, o.explored, (Py_ssize_t)o.cache,
                                          (Py_ssize_t)k, pl, PyList_GET_ITEM(vals_l, o.state),
                                          o.stuck_cid >= 0 ? g[o.stuck_cid] : -1, cl, sl);
                else { Py_XDECREF(sl); Py_XDECREF(pl); Py_XDECREF(cl); }
            } else {
                char buf[96];
                const char *why = o.reason;
                if (!why) {
                    snprintf(buf, sizeof buf, "cache limit of %lld configurations reached", o.cache_cap);
                    why = buf;
                }
                entry = Py_BuildValue("(OiLnn(sL))", key, V_UNKNOWN, o.explored, (Py_ssize_t)o.cache,
                                      (Py_ssize_t)k, why, o.best_prefix);
            }
            free(o.prefix);
            free(o.cands);
            if (entry && o.verdict == V_UNKNOWN && deadline >= 0 && now_monotonic() > deadline) {
                int r = PyList_Append(parts_out, entry);
                Py_DECREF(entry);
                if (r < 0) goto bail;
                unchecked = n_keys - (p + 1);
                break;
            }
        }
        if (!entry) goto bail;
        int r = PyList_Append(parts_out, entry);
        Py_DECREF(entry);
        if (r < 0) goto bail;
    }
    {
        PyObject *ip = PyList_New(n_calls), *cp = PyList_New(n_calls);
        if (!ip || !cp) { Py_XDECREF(ip); Py_XDECREF(cp); goto bail; }
        for (int i = 0; i < n_calls; i++) {
            PyObject *a = PyLong_FromSsize_t(c_inv[i]), *b = PyLong_FromSsize_t(c_comp[i]);
            if (!a || !b) { Py_XDECREF(a); Py_XDECREF(b); Py_DECREF(ip); Py_DECREF(cp); goto bail; }
            PyList_SET_ITEM(ip, i, a);
            PyList_SET_ITEM(cp, i, b);
        }
        result = Py_BuildValue("(llinlNN)", nemesis, failed, n_calls, (Py_ssize_t)n_keys, unchecked, ip, cp);
    }
    if (result) {
        PyObject *t = Py_BuildValue("(NO)", result, parts_out);
        result = t;
    }
bail:
    if (!result) {
        /* out of memory, or a signal (Ctrl-C: not an Exception): raised; anything else (a
           history the kernel does not take, an odd object's __eq__ failing): the Python path */
        if (PyErr_Occurred() &&
            (PyErr_ExceptionMatches(PyExc_MemoryError) || !PyErr_ExceptionMatches(PyExc_Exception))) {
            /* propagate */
        } else {
            PyErr_Clear();
            result = Py_None;
            Py_INCREF(result);
        }
    }
    Py_XDECREF(x); Py_XDECREF(y);
    Py_XDECREF(vals_d); Py_XDECREF(vals_l); Py_XDECREF(keys_d); Py_XDECREF(keys_l);
    Py_XDECREF(parts_out);
    free(inv_pos); free(comp_pos); free(c_inv); free(c_comp); free(c_kind); free(c_a); free(c_b);
    free(c_must); free(c_key); free(order); free(part_start); free(part_len); free(local);
    free(p_kind); free(p_a); free(p_b); free(p_must); free(p_inv); free(p_comp); free(written);
    Py_DECREF(seq);
    return result;
}

static PyMethodDef methods[] = {
    {"check_register_ops", check_register_ops, METH_VARARGS, check_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_linkernel",
    "Compiled linearizability search for register histories (see checks/linearizable/register.py).", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__linkernel(void) {
#define INTERN(v, s) if (!(v = PyUnicode_InternFromString(s))) return NULL
    INTERN(s_type, "type"); INTERN(s_f, "f"); INTERN(s_key, "key"); INTERN(s_value, "value");
    INTERN(s_ok, "ok"); INTERN(s_fail, "fail"); INTERN(s_read, "read"); INTERN(s_write, "write");
    INTERN(s_cas, "cas");
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    if (PyModule_AddIntConstant(m, "MAX_PART", MAX_PART) < 0) return NULL;
    pair_positions = (PairPositions)PyCapsule_Import("spark_validation._rowkernel.pair_positions", 0);
    if (!pair_positions) PyErr_Clear(); /* not built: the caller passes its pairing */
    return m;
}
