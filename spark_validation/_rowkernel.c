/*
 * The per-op loops of spark_validation/ingest/rows.py (the readers) and
 * spark_validation/checks/kafka/rows.py (the kernel tables), compiled. Built by the project's install
 * (setup.py, optional: without it the Python loops run, with the same results):
 *   kernel_columns / kernel_arrays  the Kafka kernel rows of a history's op rows (one row per
 *                                   send/poll micro-op and per assigned key), as lists or as
 *                                   Arrow buffers;
 *   pair_events                     the loop of Jepsen's pairing rule (ingest/pairing.py), also
 *                                   _linkernel.c's (the capsule pair_positions);
 *   rows_with_f                     the positions of the send/poll/txn rows;
 *   scan_uniform, value_checks,     the uniform NDJSON reader's scan and value checks;
 *   plain_values
 *   small_codes                     dictionary codes of a string column of a few strings.
 *
 * Both walk a value still in its JSON text (the uniform NDJSON reader leaves plain arrays and
 * objects undecoded, see plain_values) straight from the text, with no Python object per value (a
 * scalar text is the value itself, as parse_text has it); a value the reader decoded is walked as
 * an object.
 *
 * The loops follow the Python functions line for line and never call back into Python. A row
 * whose value needs a conversion the Python code makes with a helper for an uncommon type (a key
 * or value that is neither str nor int, an offset that is not an int, a value text that is not
 * plain JSON) is declined: what the loop emitted for it is taken back and its position returned,
 * and the caller computes that row with its Python loop (checks/kafka/rows.py). So the rows are
 * the same objects (tests/spark_validation/test_rowkernel.py compares both on the bench's corpus
 * and on random values).
 *
 * pair_events is handed op objects where the caller has them (the linearizability check's ops)
 * and reads their process, type and f itself: from the instance slots when the class declares
 * them, else by attribute lookup. That is no helper call: passing a table instead would mean
 * building three columns from the op objects first, the loop this entry point saves.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <stdint.h>
#include <string.h>

static PyObject *s_invoke, *s_ok, *s_fail, *s_info, *s_send, *s_poll, *s_txn, *s_assign, *s_subscribe,
    *s_nemesis, *s_process, *s_type, *s_f;

static int eq(PyObject *o, PyObject *interned) {
    if (o == interned) return 1;
    if (!PyUnicode_Check(o)) return 0;
    if (PyUnicode_CheckExact(o) && PyUnicode_CHECK_INTERNED(o)) return 0; /* two interned strings: equal only if one */
    return PyUnicode_Compare(o, interned) == 0;
}

/* a growable byte buffer */
typedef struct { char *p; size_t len, cap; } Buf;

static PyObject *bytes_of(const Buf *b) {
    return PyBytes_FromStringAndSize(b->p ? b->p : "", (Py_ssize_t)b->len);
}

static int buf_put(Buf *b, const void *x, size_t n) {
    if (b->len + n > b->cap) {
        size_t nc = b->cap ? b->cap : 4096;
        while (nc < b->len + n) nc *= 2;
        char *np_ = PyMem_Realloc(b->p, nc);
        if (!np_) { PyErr_NoMemory(); return -1; }
        b->p = np_;
        b->cap = nc;
    }
    memcpy(b->p + b->len, x, n);
    b->len += n;
    return 0;
}

/* an Arrow column being built: values (int64s, or UTF-8 bytes with int32 offsets), one validity
   byte per row (packed into a bitmap at the end) */
typedef struct { Buf data, offsets, valid; Py_ssize_t nulls; } Col;

static int col_str(Col *c, PyObject *s) {
    int32_t end;
    uint8_t ok = s != Py_None;
    if (ok) {
        Py_ssize_t n;
        const char *u = PyUnicode_AsUTF8AndSize(s, &n); /* a lone surrogate: UnicodeEncodeError */
        if (!u || buf_put(&c->data, u, (size_t)n) < 0) return -1;
        if (c->data.len > INT32_MAX) { PyErr_SetString(PyExc_OverflowError, "string column over 2 GB"); return -1; }
    } else {
        c->nulls++;
    }
    end = (int32_t)c->data.len;
    if (c->offsets.len == 0) { int32_t z = 0; if (buf_put(&c->offsets, &z, 4) < 0) return -1; }
    return buf_put(&c->offsets, &end, 4) < 0 || buf_put(&c->valid, &ok, 1) < 0 ? -1 : 0;
}

static int col_int(Col *c, PyObject *x) {
    long long v = 0;
    uint8_t ok = x != Py_None;
    if (ok) {
        v = PyLong_AsLongLong(x); /* beyond 64 bits: OverflowError, as pyarrow raises */
        if (v == -1 && PyErr_Occurred()) return -1;
    } else {
        c->nulls++;
    }
    return buf_put(&c->data, &v, 8) < 0 || buf_put(&c->valid, &ok, 1) < 0 ? -1 : 0;
}

static void col_free(Col *c) {
    PyMem_Free(c->data.p); PyMem_Free(c->offsets.p); PyMem_Free(c->valid.p);
}


/* ------------------------------------------------------------------------------------------
 * Values read straight from their JSON text (no Python objects), for the texts of a plain subset
 * of JSON: no whitespace, strings of printable ASCII with no escape (0x20-0x7e but '"' and '\'),
 * integers of at most 18 digits with no leading zero and no "-0", true, false, null, arrays, and
 * objects with distinct keys (at most PLAIN_KEYS of them), nested at most PLAIN_DEPTH deep. Such a
 * text is what orjson.dumps prints for what orjson.loads reads from it (and json.loads reads the
 * same), so walking it gives the rows that walking fast_parse_text(text) gives. Anything else, and
 * every leaf the Python loop would hand to a helper (a bool or a structure where a key or value
 * text is wanted, an offset that is not an integer), declines: that row then takes the object
 * path above, with the same result.
 */
#define PLAIN_DEPTH 64
#define PLAIN_KEYS 32

enum { J_NULL, J_BOOL, J_INT, J_STR, J_LIST, J_DICT };

typedef struct {
    uint8_t kind;
    int32_t a, b;        /* J_STR: its characters (quotes excluded); J_INT: its digits */
    int32_t child, next; /* first child and next sibling (-1: none); a dict's children are key, value, ... */
    int32_t count;       /* children */
    long long v;         /* J_INT */
} Node;

typedef struct { Node *p; Py_ssize_t len, cap; } Nodes;

static int32_t node_new(Nodes *t, uint8_t kind, int32_t a) {
    if (t->len == t->cap) {
        Py_ssize_t nc = t->cap ? t->cap * 2 : 256;
        Node *np_ = PyMem_Realloc(t->p, (size_t)nc * sizeof(Node));
        if (!np_) return -2;
        t->p = np_;
        t->cap = nc;
    }
    Node *x = &t->p[t->len];
    x->kind = kind; x->a = a; x->b = a; x->child = x->next = -1; x->count = 0; x->v = 0;
    return (int32_t)t->len++;
}

/* one value at s[*q..e), appended to t: its node, -1 when the text is not plain, -2 out of memory */
static int32_t plain_value(Nodes *t, const char *s, Py_ssize_t *q, Py_ssize_t e, int depth, int maxd) {
    if (*q >= e) return -1;
    char c = s[*q];
    if (c == '"') {
        Py_ssize_t i = *q + 1;
        while (i < e && s[i] != '"') {
            if (s[i] < 0x20 || s[i] > 0x7e || s[i] == '\\') return -1;
            i++;
        }
        if (i >= e) return -1;
        int32_t x = node_new(t, J_STR, (int32_t)(*q + 1));
        if (x < 0) return x;
        t->p[x].b = (int32_t)i;
        *q = i + 1;
        return x;
    }
    if (c == '-' || (c >= '0' && c <= '9')) {
        Py_ssize_t i = *q + (c == '-'), d0 = i;
        while (i < e && s[i] >= '0' && s[i] <= '9') i++;
        Py_ssize_t nd = i - d0;
        if (nd == 0 || nd > 18 || (nd > 1 && s[d0] == '0') || (c == '-' && nd == 1 && s[d0] == '0')) return -1;
        if (i < e && (s[i] == '.' || s[i] == 'e' || s[i] == 'E')) return -1;
        long long v = 0;
        for (Py_ssize_t j = d0; j < i; j++) v = v * 10 + (s[j] - '0');
        int32_t x = node_new(t, J_INT, (int32_t)*q);
        if (x < 0) return x;
        t->p[x].b = (int32_t)i;
        t->p[x].v = c == '-' ? -v : v;
        *q = i;
        return x;
    }
    if (c == 'n' || c == 't' || c == 'f') {
        const char *w = c == 'n' ? "null" : c == 't' ? "true" : "false";
        Py_ssize_t n = (Py_ssize_t)strlen(w);
        if (e - *q < n || memcmp(s + *q, w, (size_t)n) != 0) return -1;
        int32_t x = node_new(t, c == 'n' ? J_NULL : J_BOOL, (int32_t)*q);
        if (x < 0) return x;
        *q += n;
        return x;
    }
    if ((c != '[' && c != '{') || depth > maxd) return -1; /* depth: of this collection */
    int is_dict = c == '{';
    char close = is_dict ? '}' : ']';
    int32_t x = node_new(t, is_dict ? J_DICT : J_LIST, (int32_t)*q);
    if (x < 0) return x;
    (*q)++;
    if (*q < e && s[*q] == close) { (*q)++; return x; }
    int32_t last = -1;
    int32_t keys[PLAIN_KEYS];
    int nkeys = 0;
    for (;;) {
        int32_t k = -1;
        if (is_dict) {
            if (*q >= e || s[*q] != '"' || nkeys == PLAIN_KEYS) return -1;
            k = plain_value(t, s, q, e, depth + 1, maxd);
            if (k < 0) return k;
            /* a repeated key: orjson keeps the last value, and prints the object otherwise */
            Py_ssize_t kl = t->p[k].b - t->p[k].a;
            for (int j = 0; j < nkeys; j++) {
                Node *o = &t->p[keys[j]];
                if (o->b - o->a == kl && memcmp(s + o->a, s + t->p[k].a, (size_t)kl) == 0) return -1;
            }
            keys[nkeys++] = k;
            if (*q >= e || s[*q] != ':') return -1;
            (*q)++;
        }
        int32_t v = plain_value(t, s, q, e, depth + 1, maxd);
        if (v < 0) return v;
        if (k >= 0) {
            if (last >= 0) t->p[last].next = k; else t->p[x].child = k;
            t->p[k].next = v;
        } else if (last >= 0) {
            t->p[last].next = v;
        } else {
            t->p[x].child = v;
        }
        last = v;
        t->p[x].count++;
        if (*q >= e) return -1;
        if (s[*q] == ',') { (*q)++; continue; }
        if (s[*q] == close) { (*q)++; return x; }
        return -1;
    }
}

/* the whole of s[0..e) as one plain value: its root node (0), -1 if not plain, -2 out of memory */
static int32_t plain_text(Nodes *t, const char *s, Py_ssize_t e, int maxd) {
    Py_ssize_t q = 0;
    t->len = 0;
    if (e > INT32_MAX) return -1;
    int32_t r = plain_value(t, s, &q, e, 1, maxd);
    if (r >= 0 && q != e) return -1;
    return r;
}


#define INT_TEXTS 4096

/* a key or value text: a str object (o), or characters of the text being walked (o NULL; small:
   the int it spells when that is in 0..INT_TEXTS-1, else -1) */
typedef struct { PyObject *o; const char *p; Py_ssize_t len; int small; } Txt;

typedef struct {
    PyObject *unparsed;
    long long stride;
    Buf declined; /* the rows left to the caller (int64 positions) */
    int arrays; /* 0: Python lists below; 1: Arrow buffers */
    PyObject *ri, *mop, *key, *off, *val, *pos;
    Buf a_ri, a_mop, a_pos;
    Col a_key, a_off, a_val;
    /* str() of small non-negative ints, made once per call: keys and values repeat (a value is
       sent once and polled again and again) */
    PyObject *int_text[INT_TEXTS];
    Nodes nodes; /* the parsed text of the value being walked (text_row) */
    const char *text;
} Ctx;

static void ctx_free_texts(Ctx *c) {
    for (int i = 0; i < INT_TEXTS; i++) Py_CLEAR(c->int_text[i]);
    PyMem_Free(c->nodes.p);
    c->nodes.p = NULL;
}

/* NULL with no exception set: the row is declined, left to the caller's Python loop */
static PyObject *decline(void) { return NULL; }

/* _tt: str as is, int as str(); anything else declines the row (new reference) */
static PyObject *text_of(Ctx *c, PyObject *x) {
    if (PyUnicode_CheckExact(x)) { Py_INCREF(x); return x; }
    if (PyLong_CheckExact(x)) {
        int overflow;
        long v = PyLong_AsLongAndOverflow(x, &overflow);
        if (!overflow && v >= 0 && v < INT_TEXTS) {
            PyObject *t = c->int_text[v];
            if (!t && !(t = c->int_text[v] = PyObject_Str(x))) return NULL;
            Py_INCREF(t);
            return t;
        }
        return PyObject_Str(x);
    }
    return decline();
}

/* _ti / to_int: an int as is; anything else declines the row (new reference) */
static PyObject *int_of(Ctx *c, PyObject *x) {
    if (PyLong_CheckExact(x)) { Py_INCREF(x); return x; }
    return decline();
}

/* append one kernel row; steals key, off and val */
static int emit(Ctx *c, Py_ssize_t n, PyObject *mop, PyObject *key, PyObject *off, PyObject *val, long long pos) {
    int rc = -1;
    if (c->arrays) {
        long long ln = (long long)n;
        uint8_t code = mop == s_send ? 0 : mop == s_poll ? 1 : 2;
        if (buf_put(&c->a_ri, &ln, 8) == 0 && buf_put(&c->a_mop, &code, 1) == 0 && col_str(&c->a_key, key) == 0 &&
            col_int(&c->a_off, off) == 0 && col_str(&c->a_val, val) == 0 && buf_put(&c->a_pos, &pos, 8) == 0)
            rc = 0;
        Py_DECREF(key); Py_DECREF(off); Py_DECREF(val);
        return rc;
    }
    PyObject *pn = PyLong_FromSsize_t(n), *pp = PyLong_FromLongLong(pos);
    if (pn && pp && PyList_Append(c->ri, pn) == 0 && PyList_Append(c->mop, mop) == 0 &&
        PyList_Append(c->key, key) == 0 && PyList_Append(c->off, off) == 0 &&
        PyList_Append(c->val, val) == 0 && PyList_Append(c->pos, pp) == 0)
        rc = 0;
    Py_XDECREF(pn); Py_XDECREF(pp);
    Py_DECREF(key); Py_DECREF(off); Py_DECREF(val);
    return rc;
}


static int col_raw(Col *c, const char *p, Py_ssize_t n) {
    int32_t end;
    uint8_t ok = 1;
    if (buf_put(&c->data, p, (size_t)n) < 0) return -1;
    if (c->data.len > INT32_MAX) { PyErr_SetString(PyExc_OverflowError, "string column over 2 GB"); return -1; }
    end = (int32_t)c->data.len;
    if (c->offsets.len == 0) { int32_t z = 0; if (buf_put(&c->offsets, &z, 4) < 0) return -1; }
    return buf_put(&c->offsets, &end, 4) < 0 || buf_put(&c->valid, &ok, 1) < 0 ? -1 : 0;
}

static int col_ll(Col *c, int has, long long v) {
    uint8_t ok = (uint8_t)has;
    if (!has) { c->nulls++; v = 0; }
    return buf_put(&c->data, &v, 8) < 0 || buf_put(&c->valid, &ok, 1) < 0 ? -1 : 0;
}

/* a Txt as the str the Python loop makes of it (new reference) */
static PyObject *txt_obj(Ctx *c, Txt t) {
    if (t.o) { Py_INCREF(t.o); return t.o; }
    if (t.small >= 0) {
        PyObject *s = c->int_text[t.small];
        if (!s && !(s = c->int_text[t.small] = PyUnicode_FromStringAndSize(t.p, t.len))) return NULL;
        Py_INCREF(s);
        return s;
    }
    return PyUnicode_FromStringAndSize(t.p, t.len);
}

/* emit() for a row walked from its text */
static int emit_txt(Ctx *c, Py_ssize_t n, PyObject *mop, Txt key, int has_off, long long off, Txt val, long long pos) {
    if (c->arrays) {
        long long ln = (long long)n;
        uint8_t code = mop == s_send ? 0 : 1;
        if (buf_put(&c->a_ri, &ln, 8) < 0 || buf_put(&c->a_mop, &code, 1) < 0) return -1;
        if ((key.o ? col_str(&c->a_key, key.o) : col_raw(&c->a_key, key.p, key.len)) < 0) return -1;
        if (col_ll(&c->a_off, has_off, off) < 0) return -1;
        if ((val.o ? col_str(&c->a_val, val.o) : col_raw(&c->a_val, val.p, val.len)) < 0) return -1;
        return buf_put(&c->a_pos, &pos, 8);
    }
    PyObject *k = txt_obj(c, key), *v = k ? txt_obj(c, val) : NULL;
    PyObject *o = !v ? NULL : has_off ? PyLong_FromLongLong(off) : (Py_INCREF(Py_None), Py_None);
    if (!o) { Py_XDECREF(k); Py_XDECREF(v); return -1; }
    return emit(c, n, mop, k, o, v, pos);
}
#define NODE(i) (&c->nodes.p[i])
#define NTH(x, i) nth_child(c, (x), (i))

static int32_t nth_child(Ctx *c, int32_t x, int i) {
    int32_t y = NODE(x)->child;
    while (i-- > 0 && y >= 0) y = NODE(y)->next;
    return y;
}

/* a text the Python loop would take with _tt: a str as is, an int's digits; 0 for anything else */
static int leaf_text(Ctx *c, int32_t x, Txt *out) {
    Node *n = NODE(x);
    if (n->kind != J_STR && n->kind != J_INT) return 0;
    out->o = NULL;
    out->p = c->text + n->a;
    out->len = n->b - n->a;
    out->small = n->kind == J_INT && n->v >= 0 && n->v < INT_TEXTS ? (int)n->v : -1;
    return 1;
}

/* emit when live, else only say the row can be taken (1), or not (0); -1 on an error */
static int text_emit(Ctx *c, int live, Py_ssize_t n, PyObject *mop, Txt key, int has_off, long long off, Txt val,
                     long long pos) {
    return live ? (emit_txt(c, n, mop, key, has_off, off, val, pos) < 0 ? -1 : 1) : 1;
}

/* an offset as _ti gives it: an int, or null (to_int(None)); 0 for anything else (a helper's case) */
static int leaf_off(Ctx *c, int32_t x, int *has, long long *v) {
    Node *n = NODE(x);
    if (n->kind == J_INT) { *has = 1; *v = n->v; return 1; }
    if (n->kind == J_NULL) { *has = 0; *v = 0; return 1; }
    return 0;
}

/* the [offset, value] pairs of a poll (a list node) read from key kt, at pos base + j:
   1 done (or could be), 0 declined, -1 error */
static int text_pairs(Ctx *c, int live, Py_ssize_t n, Txt kt, int32_t pairs, long long base) {
    long long j = 0;
    for (int32_t pair = NODE(pairs)->child; pair >= 0; pair = NODE(pair)->next, j++) {
        if (NODE(pair)->kind != J_LIST || NODE(pair)->count < 2) continue;
        int32_t vv = NTH(pair, 1);
        if (NODE(vv)->kind == J_NULL) continue;
        Txt vt;
        int has;
        long long o;
        if (!leaf_text(c, vv, &vt) || !leaf_off(c, NODE(pair)->child, &has, &o)) return 0;
        if (text_emit(c, live, n, s_poll, kt, has, o, vt, base + j) < 0) return -1;
    }
    return 1;
}

/* micro_ops over a plain list node: 1 done (or could be), 0 declined, -1 error */
static int text_micro_ops(Ctx *c, int live, Py_ssize_t n, int32_t mops) {
    long long i = 0;
    for (int32_t m = NODE(mops)->child; m >= 0; m = NODE(m)->next, i++) {
        if (NODE(m)->kind != J_LIST || NODE(m)->count == 0) continue;
        Txt name;
        if (!leaf_text(c, NODE(m)->child, &name)) return 0;
        int lm = NODE(m)->count;
        if (name.len == 4 && memcmp(name.p, "send", 4) == 0 && lm >= 3) {
            int32_t kk = NTH(m, 1), x = NTH(m, 2), vv;
            Txt kt, vt;
            int has = 0;
            long long o = 0;
            int knull = NODE(kk)->kind == J_NULL;
            if (!knull && !leaf_text(c, kk, &kt)) return 0;
            if (NODE(x)->kind == J_LIST && NODE(x)->count == 2) {
                if (!leaf_off(c, NODE(x)->child, &has, &o)) return 0;
                vv = NTH(x, 1);
            } else {
                vv = x;
            }
            if (NODE(vv)->kind == J_NULL) continue;
            if (!leaf_text(c, vv, &vt)) return 0;
            if (knull) continue;
            if (text_emit(c, live, n, s_send, kt, has, o, vt, i * c->stride) < 0) return -1;
        } else if (name.len == 4 && memcmp(name.p, "poll", 4) == 0 && lm >= 2 && NODE(NTH(m, 1))->kind == J_DICT) {
            long long base = i * c->stride;
            for (int32_t kk = NODE(NTH(m, 1))->child; kk >= 0; kk = NODE(NODE(kk)->next)->next) {
                int32_t pairs = NODE(kk)->next;
                if (NODE(pairs)->kind != J_LIST) continue;
                Txt kt;
                leaf_text(c, kk, &kt); /* a key: always a string */
                int rc = text_pairs(c, live, n, kt, pairs, base);
                if (rc <= 0) return rc;
            }
        }
    }
    return 1;
}

/* one_row's send/poll/txn case for a value still in its text v, walked once to see that every
   leaf can be taken here and once more to emit: 1 done, 0 declined (nothing emitted), -1 error */
static int text_row(Ctx *c, Py_ssize_t n, int is_send, int is_poll, PyObject *k, PyObject *v) {
    if (!PyUnicode_CheckExact(v) || !PyUnicode_IS_ASCII(v)) return 0;
    c->text = (const char *)PyUnicode_DATA(v);
    Py_ssize_t len = PyUnicode_GET_LENGTH(v);
    if (len == 0 || (c->text[0] != '[' && c->text[0] != '{')) return 0; /* scalars: parse_text's */
    int32_t r = plain_text(&c->nodes, c->text, len, PLAIN_DEPTH);
    if (r == -2) { PyErr_NoMemory(); return -1; }
    if (r < 0) return 0;
    Txt kt = {k, NULL, 0, -1};
    for (int live = 0; live < 2; live++) {
        int rc = 1;
        if (k != Py_None && (is_send || is_poll)) {
            if (is_send) {
                int has = 0;
                long long o = 0;
                int32_t vv = r;
                if (NODE(r)->kind == J_LIST && NODE(r)->count == 2) {
                    if (!leaf_off(c, NODE(r)->child, &has, &o)) return 0;
                    vv = NTH(r, 1);
                }
                Txt vt;
                if (!leaf_text(c, vv, &vt)) return 0; /* a null value goes to _tt too */
                rc = text_emit(c, live, n, s_send, kt, has, o, vt, 0);
            } else if (NODE(r)->kind == J_LIST) {
                rc = text_pairs(c, live, n, kt, r, 0);
            }
        } else if (NODE(r)->kind == J_LIST) {
            rc = text_micro_ops(c, live, n, r);
        }
        if (rc <= 0) return rc;
    }
    return 1;
}

/* the value of a row: its decoded form if the reader kept one, None for no value; a text not
   walked here declines the row (new ref) */
static PyObject *parse(Ctx *c, PyObject *v, PyObject *pv) {
    if (pv != c->unparsed) { Py_INCREF(pv); return pv; }
    if (v == Py_None) { Py_INCREF(Py_None); return Py_None; } /* fast_parse_text(None) */
    if (PyUnicode_CheckExact(v) && PyUnicode_IS_ASCII(v)) { /* a scalar stays text (parse_text) */
        const char *p = (const char *)PyUnicode_DATA(v);
        if (PyUnicode_GET_LENGTH(v) == 0 || (p[0] > ' ' && p[0] != '[' && p[0] != '{')) { Py_INCREF(v); return v; }
    }
    return decline();
}

/* one_row's assign/subscribe case for a value still in its text v: a plain JSON list of string,
   integer or null keys. 1 done, 0 declined (nothing emitted), -1 error */
static int text_assign(Ctx *c, Py_ssize_t n, PyObject *v) {
    if (!PyUnicode_CheckExact(v) || !PyUnicode_IS_ASCII(v)) return 0;
    c->text = (const char *)PyUnicode_DATA(v);
    Py_ssize_t len = PyUnicode_GET_LENGTH(v);
    if (len == 0 || c->text[0] != '[') return 0;
    int32_t r = plain_text(&c->nodes, c->text, len, PLAIN_DEPTH);
    if (r == -2) { PyErr_NoMemory(); return -1; }
    if (r < 0) return 0;
    Txt t;
    for (int32_t x = NODE(r)->child; x >= 0; x = NODE(x)->next)
        if (NODE(x)->kind != J_NULL && !leaf_text(c, x, &t)) return 0;
    Py_INCREF(Py_None); Py_INCREF(Py_None); Py_INCREF(Py_None);
    if (emit(c, n, s_assign, Py_None, Py_None, Py_None, 0) < 0) return -1;
    for (int32_t x = NODE(r)->child; x >= 0; x = NODE(x)->next) {
        if (NODE(x)->kind == J_NULL) continue;
        leaf_text(c, x, &t);
        PyObject *name = txt_obj(c, t);
        if (!name) return -1;
        Py_INCREF(Py_None); Py_INCREF(Py_None);
        if (emit(c, n, s_assign, name, Py_None, Py_None, 0) < 0) return -1;
    }
    return 1;
}

static int micro_ops(Ctx *c, Py_ssize_t n, PyObject *mops) {
    Py_ssize_t nm = PyList_GET_SIZE(mops);
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(mops) && i < nm; i++) {
        PyObject *m = PyList_GET_ITEM(mops, i);
        if (!PyList_CheckExact(m) || PyList_GET_SIZE(m) == 0) continue;
        Py_INCREF(m);
        PyObject *name = text_of(c, PyList_GET_ITEM(m, 0));
        if (!name) { Py_DECREF(m); return -1; }
        int rc = 0;
        Py_ssize_t lm = PyList_GET_SIZE(m);
        if (eq(name, s_send) && lm >= 3) {
            PyObject *kk = PyList_GET_ITEM(m, 1), *x = PyList_GET_ITEM(m, 2), *o, *vv;
            kk = (kk == Py_None) ? (Py_INCREF(Py_None), Py_None) : text_of(c, kk);
            if (!kk) { rc = -1; goto next; }
            if (PyList_CheckExact(x) && PyList_GET_SIZE(x) == 2) {
                o = int_of(c, PyList_GET_ITEM(x, 0));
                vv = PyList_GET_ITEM(x, 1);
            } else {
                o = Py_None; Py_INCREF(o);
                vv = x;
            }
            if (!o) { Py_DECREF(kk); rc = -1; goto next; }
            vv = (vv == Py_None) ? (Py_INCREF(Py_None), Py_None) : text_of(c, vv);
            if (!vv) { Py_DECREF(kk); Py_DECREF(o); rc = -1; goto next; }
            if (kk != Py_None && vv != Py_None) {
                rc = emit(c, n, s_send, kk, o, vv, (long long)i * c->stride);
            } else {
                Py_DECREF(kk); Py_DECREF(o); Py_DECREF(vv);
            }
        } else if (eq(name, s_poll) && lm >= 2 && PyDict_CheckExact(PyList_GET_ITEM(m, 1))) {
            PyObject *d = PyList_GET_ITEM(m, 1), *kk, *pairs;
            Py_ssize_t it = 0;
            long long base = (long long)i * c->stride;
            Py_INCREF(d);
            while (rc == 0 && PyDict_Next(d, &it, &kk, &pairs)) {
                if (!PyList_CheckExact(pairs)) continue;
                Py_INCREF(pairs);
                PyObject *k2 = NULL;
                if (PyUnicode_CheckExact(kk)) { k2 = kk; Py_INCREF(k2); }
                else {
                    Py_DECREF(pairs); rc = -1; break; /* a key that is not text: declines the row */
                }
                for (Py_ssize_t j = 0; j < PyList_GET_SIZE(pairs); j++) {
                    PyObject *pair = PyList_GET_ITEM(pairs, j);
                    if (!PyList_CheckExact(pair) || PyList_GET_SIZE(pair) < 2) continue;
                    Py_INCREF(pair);
                    PyObject *vv = PyList_GET_ITEM(pair, 1);
                    vv = (vv == Py_None) ? (Py_INCREF(Py_None), Py_None) : text_of(c, vv);
                    if (!vv) { Py_DECREF(pair); rc = -1; break; }
                    if (vv != Py_None) {
                        PyObject *o = int_of(c, PyList_GET_ITEM(pair, 0));
                        if (!o) { Py_DECREF(vv); Py_DECREF(pair); rc = -1; break; }
                        Py_INCREF(k2);
                        rc = emit(c, n, s_poll, k2, o, vv, base + j);
                    } else {
                        Py_DECREF(vv);
                    }
                    Py_DECREF(pair);
                    if (rc) break;
                }
                Py_DECREF(k2);
                Py_DECREF(pairs);
            }
            Py_DECREF(d);
        }
    next:
        Py_DECREF(name);
        Py_DECREF(m);
        if (rc) return -1;
    }
    return 0;
}

static int one_row(Ctx *c, Py_ssize_t n, PyObject *t, PyObject *f, PyObject *k, PyObject *v, PyObject *pv) {
    if (!(eq(t, s_ok) || eq(t, s_fail) || eq(t, s_info))) return 0; /* invocations, odd types */
    int is_send = eq(f, s_send), is_poll = !is_send && eq(f, s_poll);
    if (is_send || is_poll || eq(f, s_txn)) {
        if (pv == c->unparsed && v != Py_None) { /* still text: walked as it is where it is plain JSON */
            int tr = text_row(c, n, is_send, is_poll, k, v);
            if (tr != 0) return tr < 0 ? -1 : 0;
        }
        if (k != Py_None && (is_send || is_poll)) {
            if (is_send) {
                if (v == Py_None) return 0;
                PyObject *x = parse(c, v, pv), *o, *vv;
                if (!x) return -1;
                if (PyList_CheckExact(x) && PyList_GET_SIZE(x) == 2) {
                    o = int_of(c, PyList_GET_ITEM(x, 0));
                    vv = o ? text_of(c, PyList_GET_ITEM(x, 1)) : NULL;
                } else {
                    o = Py_None; Py_INCREF(o);
                    vv = (x == Py_None) ? (Py_INCREF(Py_None), Py_None) : text_of(c, x);
                }
                Py_DECREF(x);
                if (!o || !vv) { Py_XDECREF(o); Py_XDECREF(vv); return -1; }
                if (vv == Py_None) { Py_DECREF(o); Py_DECREF(vv); return 0; }
                Py_INCREF(k);
                return emit(c, n, s_send, k, o, vv, 0);
            }
            PyObject *pairs = parse(c, v, pv);
            if (!pairs) return -1;
            int rc = 0;
            if (PyList_CheckExact(pairs)) {
                for (Py_ssize_t j = 0; rc == 0 && j < PyList_GET_SIZE(pairs); j++) {
                    PyObject *pair = PyList_GET_ITEM(pairs, j);
                    if (!PyList_CheckExact(pair) || PyList_GET_SIZE(pair) < 2) continue;
                    Py_INCREF(pair);
                    PyObject *p1 = PyList_GET_ITEM(pair, 1);
                    PyObject *vv = (p1 == Py_None) ? (Py_INCREF(Py_None), Py_None) : text_of(c, p1);
                    if (!vv) rc = -1;
                    else if (vv == Py_None) Py_DECREF(vv);
                    else {
                        PyObject *o = int_of(c, PyList_GET_ITEM(pair, 0));
                        if (!o) { Py_DECREF(vv); rc = -1; }
                        else { Py_INCREF(k); rc = emit(c, n, s_poll, k, o, vv, j); }
                    }
                    Py_DECREF(pair);
                }
            }
            Py_DECREF(pairs);
            return rc;
        }
        PyObject *mops = parse(c, v, pv);
        if (!mops) return -1;
        int rc = PyList_CheckExact(mops) ? micro_ops(c, n, mops) : 0;
        Py_DECREF(mops);
        return rc;
    }
    if ((eq(f, s_assign) || eq(f, s_subscribe)) && (eq(t, s_ok) || eq(t, s_info))) {
        if (pv == c->unparsed && v != Py_None) { /* still text: walked as it is where it is plain JSON */
            int tr = text_assign(c, n, v);
            if (tr != 0) return tr < 0 ? -1 : 0;
        }
        PyObject *ks = parse(c, v, pv);
        if (!ks) return -1;
        Py_INCREF(Py_None); Py_INCREF(Py_None); Py_INCREF(Py_None);
        int rc = emit(c, n, s_assign, Py_None, Py_None, Py_None, 0);
        if (rc == 0 && PyList_CheckExact(ks)) {
            /* names first (all of them, as the Python list comprehension), then the rows */
            Py_ssize_t nk = PyList_GET_SIZE(ks);
            PyObject *names = PyList_New(0);
            if (!names) rc = -1;
            for (Py_ssize_t j = 0; rc == 0 && j < nk && j < PyList_GET_SIZE(ks); j++) {
                PyObject *x = PyList_GET_ITEM(ks, j);
                PyObject *name = (x == Py_None) ? (Py_INCREF(Py_None), Py_None) : text_of(c, x);
                if (!name || PyList_Append(names, name) < 0) rc = -1;
                Py_XDECREF(name);
            }
            for (Py_ssize_t j = 0; rc == 0 && j < PyList_GET_SIZE(names); j++) {
                PyObject *name = PyList_GET_ITEM(names, j);
                if (name == Py_None) continue;
                Py_INCREF(name); Py_INCREF(Py_None); Py_INCREF(Py_None);
                rc = emit(c, n, s_assign, name, Py_None, Py_None, 0);
            }
            Py_XDECREF(names);
        }
        Py_DECREF(ks);
        return rc;
    }
    return 0;
}

/* how far the outputs were when a row started, to take back what a declined row emitted */
typedef struct { Py_ssize_t items; size_t ri, mop, pos; size_t key[3], off[2], val[3]; Py_ssize_t nulls[3]; } Mark;

static Mark mark(const Ctx *c) {
    Mark m = {0};
    if (!c->arrays) { m.items = PyList_GET_SIZE(c->ri); return m; }
    m.ri = c->a_ri.len; m.mop = c->a_mop.len; m.pos = c->a_pos.len;
    m.key[0] = c->a_key.data.len; m.key[1] = c->a_key.offsets.len; m.key[2] = c->a_key.valid.len;
    m.off[0] = c->a_off.data.len; m.off[1] = c->a_off.valid.len;
    m.val[0] = c->a_val.data.len; m.val[1] = c->a_val.offsets.len; m.val[2] = c->a_val.valid.len;
    m.nulls[0] = c->a_key.nulls; m.nulls[1] = c->a_off.nulls; m.nulls[2] = c->a_val.nulls;
    return m;
}

static int rollback(Ctx *c, const Mark *m) {
    if (!c->arrays) {
        PyObject *ls[6] = {c->ri, c->mop, c->key, c->off, c->val, c->pos};
        for (int i = 0; i < 6; i++)
            if (PyList_SetSlice(ls[i], m->items, PyList_GET_SIZE(ls[i]), NULL) < 0) return -1;
        return 0;
    }
    c->a_ri.len = m->ri; c->a_mop.len = m->mop; c->a_pos.len = m->pos;
    c->a_key.data.len = m->key[0]; c->a_key.offsets.len = m->key[1]; c->a_key.valid.len = m->key[2];
    c->a_off.data.len = m->off[0]; c->a_off.valid.len = m->off[1];
    c->a_val.data.len = m->val[0]; c->a_val.offsets.len = m->val[1]; c->a_val.valid.len = m->val[2];
    c->a_key.nulls = m->nulls[0]; c->a_off.nulls = m->nulls[1]; c->a_val.nulls = m->nulls[2];
    return 0;
}

/* one row: emitted, or (a value this loop does not take, no exception set) taken back and
   listed in c->declined; -1 on an error */
static int row_or_decline(Ctx *c, Py_ssize_t i, PyObject *t, PyObject *f, PyObject *k, PyObject *v, PyObject *pv) {
    Mark m = mark(c);
    if (one_row(c, i, t, f, k, v, pv) == 0) return 0;
    if (PyErr_Occurred() || rollback(c, &m) < 0) return -1;
    long long at = (long long)i;
    return buf_put(&c->declined, &at, 8);
}

/* the loop over the rows, shared by both entry points */
static int all_rows(Ctx *c, PyObject *args) {
    PyObject *types, *fs, *keys, *values, *parsed;
    if (!PyArg_ParseTuple(args, "O!O!O!O!OOL", &PyList_Type, &types, &PyList_Type, &fs, &PyList_Type, &keys,
                          &PyList_Type, &values, &parsed, &c->unparsed, &c->stride))
        return -1;
    Py_ssize_t n = PyList_GET_SIZE(types);
    if (PyList_GET_SIZE(fs) != n || PyList_GET_SIZE(keys) != n || PyList_GET_SIZE(values) != n ||
        (parsed != Py_None && (!PyList_Check(parsed) || PyList_GET_SIZE(parsed) != n))) {
        PyErr_SetString(PyExc_ValueError, "kernel_columns: columns of different lengths");
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        /* the rows' lists may not change under us: hold what this row uses */
        PyObject *t = PyList_GET_ITEM(types, i), *f = PyList_GET_ITEM(fs, i), *k = PyList_GET_ITEM(keys, i),
                 *v = PyList_GET_ITEM(values, i), *pv = parsed == Py_None ? c->unparsed : PyList_GET_ITEM(parsed, i);
        Py_INCREF(t); Py_INCREF(f); Py_INCREF(k); Py_INCREF(v); Py_INCREF(pv);
        int rc = row_or_decline(c, i, t, f, k, v, pv);
        Py_DECREF(t); Py_DECREF(f); Py_DECREF(k); Py_DECREF(v); Py_DECREF(pv);
        if (rc < 0) return -1;
        if (PyList_GET_SIZE(types) != n || PyList_GET_SIZE(fs) != n || PyList_GET_SIZE(keys) != n ||
            PyList_GET_SIZE(values) != n || (parsed != Py_None && PyList_GET_SIZE(parsed) != n)) {
            PyErr_SetString(PyExc_RuntimeError, "kernel_columns: a column changed size");
            return -1;
        }
    }
    return 0;
}

PyDoc_STRVAR(kc_doc,
"kernel_columns(types, fs, keys, values, parsed, unparsed, stride)\n--\n\n"
"(row, mop, key, offset, value, pos) lists: kernel_rows.kernel_columns's loop, and the positions\n"
"(int64s, as bytes) of the rows it declined, which have no rows in the lists. ``parsed`` is None\n"
"when no value was decoded by the reader.");

static PyObject *kernel_columns(PyObject *self, PyObject *args) {
    Ctx c = {0};
    PyObject *result = NULL;
    c.ri = PyList_New(0); c.mop = PyList_New(0); c.key = PyList_New(0);
    c.off = PyList_New(0); c.val = PyList_New(0); c.pos = PyList_New(0);
    if (c.ri && c.mop && c.key && c.off && c.val && c.pos && all_rows(&c, args) == 0)
        result = Py_BuildValue("(OOOOOON)", c.ri, c.mop, c.key, c.off, c.val, c.pos, bytes_of(&c.declined));
    PyMem_Free(c.declined.p);
    Py_XDECREF(c.ri); Py_XDECREF(c.mop); Py_XDECREF(c.key);
    Py_XDECREF(c.off); Py_XDECREF(c.val); Py_XDECREF(c.pos);
    ctx_free_texts(&c);
    return result;
}

/* (validity bitmap or None, null count) of a column */
static PyObject *bitmap_of(const Col *c) {
    if (!c->nulls) return Py_BuildValue("(On)", Py_None, (Py_ssize_t)0);
    size_t n = c->valid.len, nb = (n + 7) / 8;
    PyObject *b = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)nb);
    if (!b) return NULL;
    uint8_t *bits = (uint8_t *)PyBytes_AS_STRING(b);
    memset(bits, 0, nb);
    for (size_t i = 0; i < n; i++)
        if (c->valid.p[i]) bits[i >> 3] |= (uint8_t)(1u << (i & 7));
    return Py_BuildValue("(Nn)", b, c->nulls);
}

PyDoc_STRVAR(ka_doc,
"kernel_arrays(types, fs, keys, values, parsed, unparsed, stride)\n--\n\n"
"The rows of kernel_columns as Arrow buffers: (n, row int64s, mop codes (uint8: send 0, poll 1,\n"
"assign 2), (key validity, null count, int32 offsets, UTF-8), (offset validity, null count,\n"
"int64s), (value validity, null count, offsets, UTF-8), pos int64s, declined row positions\n"
"int64s). Raises OverflowError for an offset beyond 64 bits and UnicodeEncodeError for a lone\n"
"surrogate, as pyarrow does.");

static PyObject *kernel_arrays(PyObject *self, PyObject *args) {
    Ctx c = {0};
    c.arrays = 1;
    PyObject *result = NULL;
    if (all_rows(&c, args) == 0) {
        PyObject *kb = bitmap_of(&c.a_key), *ob = bitmap_of(&c.a_off), *vb = bitmap_of(&c.a_val);
        Py_ssize_t n = (Py_ssize_t)(c.a_ri.len / 8);
        if (n == 0) { /* offsets of an empty string column: one zero */
            int32_t z = 0;
            if (buf_put(&c.a_key.offsets, &z, 4) < 0 || buf_put(&c.a_val.offsets, &z, 4) < 0) goto out;
        }
        if (kb && ob && vb)
            result = Py_BuildValue("(nNN(ONN)(ON)(ONN)NN)", n, bytes_of(&c.a_ri), bytes_of(&c.a_mop),
                                   kb, bytes_of(&c.a_key.offsets), bytes_of(&c.a_key.data),
                                   ob, bytes_of(&c.a_off.data),
                                   vb, bytes_of(&c.a_val.offsets), bytes_of(&c.a_val.data),
                                   bytes_of(&c.a_pos), bytes_of(&c.declined));
    out:
        Py_XDECREF(kb); Py_XDECREF(ob); Py_XDECREF(vb);
    }
    PyMem_Free(c.a_ri.p); PyMem_Free(c.a_mop.p); PyMem_Free(c.a_pos.p); PyMem_Free(c.declined.p);
    col_free(&c.a_key); col_free(&c.a_off); col_free(&c.a_val);
    ctx_free_texts(&c);
    return result;
}

PyDoc_STRVAR(rw_doc,
"rows_with_f(fs, names)\n--\n\n"
"The positions (native int64s, as bytes) of the rows whose f is one of the strings ``names``.");

static PyObject *rows_with_f(PyObject *self, PyObject *args) {
    PyObject *fs, *names;
    if (!PyArg_ParseTuple(args, "O!O!", &PyList_Type, &fs, &PyTuple_Type, &names)) return NULL;
    Py_ssize_t n = PyList_GET_SIZE(fs), nn = PyTuple_GET_SIZE(names);
    for (Py_ssize_t j = 0; j < nn; j++)
        if (!PyUnicode_CheckExact(PyTuple_GET_ITEM(names, j))) {
            PyErr_SetString(PyExc_TypeError, "rows_with_f: names must be strings");
            return NULL;
        }
    long long *out = PyMem_Malloc(sizeof(long long) * (size_t)(n ? n : 1));
    if (!out) return PyErr_NoMemory();
    Py_ssize_t m = 0;
    for (Py_ssize_t i = 0; i < n && i < PyList_GET_SIZE(fs); i++) {
        PyObject *f = PyList_GET_ITEM(fs, i);
        if (!PyUnicode_Check(f)) continue; /* None, or anything not a string: never one of names */
        for (Py_ssize_t j = 0; j < nn; j++)
            if (PyUnicode_Compare(f, PyTuple_GET_ITEM(names, j)) == 0) { out[m++] = i; break; }
    }
    PyObject *b = PyBytes_FromStringAndSize((const char *)out, (Py_ssize_t)(m * (Py_ssize_t)sizeof(long long)));
    PyMem_Free(out);
    return b;
}

/* ------------------------------------------------------------------ the uniform NDJSON scan */

/* field kinds, as rows._U_FIELD spells them */
enum { F_INT, F_TYPE, F_STRINT, F_STRINTNULL, F_VALUE };

static PyObject *s_types[4];

/* rows._U_INT: 0, or an optional '-' and 1 to 18 digits without a leading zero */
static int scan_int(const char *s, Py_ssize_t *q, Py_ssize_t e) {
    Py_ssize_t i = *q;
    if (i < e && s[i] == '0') { *q = i + 1; return 1; }
    if (i < e && s[i] == '-') i++;
    if (!(i < e && s[i] >= '1' && s[i] <= '9')) return 0;
    Py_ssize_t d0 = i;
    while (i < e && s[i] >= '0' && s[i] <= '9' && i - d0 < 18) i++;
    *q = i;
    return 1;
}

/* rows._U_STR: a string without escapes or control characters; *a, *b: its content */
static int scan_str(const char *s, Py_ssize_t *q, Py_ssize_t e, Py_ssize_t *a, Py_ssize_t *b) {
    Py_ssize_t i = *q;
    if (!(i < e && s[i] == '"')) return 0;
    i++;
    *a = i;
    while (i < e && s[i] != '"' && s[i] != '\\' && (unsigned char)s[i] >= 0x20) i++;
    if (!(i < e && s[i] == '"')) return 0;
    *b = i;
    *q = i + 1;
    return 1;
}

static int lit(const char *s, Py_ssize_t *q, Py_ssize_t e, const char *w, Py_ssize_t n) {
    if (e - *q < n || memcmp(s + *q, w, (size_t)n) != 0) return 0;
    *q += n;
    return 1;
}

static long long parse_ll(const char *s, Py_ssize_t a, Py_ssize_t b) {
    int neg = s[a] == '-';
    long long v = 0;
    for (Py_ssize_t i = a + neg; i < b; i++) v = v * 10 + (s[i] - '0');
    return neg ? -v : v;
}

/* the short field texts of a file (processes, fs, keys) repeat: one str object per distinct text,
   from a small direct-mapped cache (new reference) */
#define TEXT_CACHE 256
static PyObject *cached_text(PyObject **cache, const char *s, Py_ssize_t n) {
    if (n > 32) return PyUnicode_FromStringAndSize(s, n);
    uint32_t h = 2166136261u;
    for (Py_ssize_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 16777619u;
    PyObject **slot = cache + (h & (TEXT_CACHE - 1));
    PyObject *x = *slot;
    if (x && PyUnicode_GET_LENGTH(x) == n && memcmp(PyUnicode_DATA(x), s, (size_t)n) == 0) {
        Py_INCREF(x);
        return x;
    }
    x = PyUnicode_FromStringAndSize(s, n);
    /* interned: an f of "send" is then the very object the loops compare with (eq) */
    if (x) { PyUnicode_InternInPlace(&x); Py_XSETREF(*slot, x); Py_INCREF(x); }
    return x;
}

static int append_new(PyObject *list, PyObject *x) {
    if (!x) return -1;
    int rc = PyList_Append(list, x);
    Py_DECREF(x);
    return rc;
}

PyDoc_STRVAR(su_doc,
"scan_uniform(text, keys, kinds, first_lineno)\n--\n\n"
"The columns of an ASCII ``text`` of op lines in the uniform subset of ingest/rows.py, with the key order\n"
"``keys`` (field kinds ``kinds``, 0 int, 1 type, 2 int|string, 3 int|string|null, 4 value),\n"
"what the regular expression of rows._uniform_pattern takes line by line: (linenos, one list\n"
"per key), or None when some line is not such an op (nor blank). Blank lines are left out.");

static PyObject *scan_uniform(PyObject *self, PyObject *args) {
    PyObject *text, *keys, *kinds;
    Py_ssize_t first;
    if (!PyArg_ParseTuple(args, "UO!O!n", &text, &PyTuple_Type, &keys, &PyTuple_Type, &kinds, &first)) return NULL;
    if (!PyUnicode_IS_ASCII(text)) Py_RETURN_NONE;
    Py_ssize_t nk = PyTuple_GET_SIZE(keys);
    if (PyTuple_GET_SIZE(kinds) != nk || nk == 0 || nk > 16) {
        PyErr_SetString(PyExc_ValueError, "scan_uniform: keys and kinds differ, or too many keys");
        return NULL;
    }
    const char *kname[16];
    Py_ssize_t klen[16];
    int kind[16];
    for (Py_ssize_t j = 0; j < nk; j++) {
        PyObject *k = PyTuple_GET_ITEM(keys, j);
        if (!PyUnicode_Check(k) || !PyUnicode_IS_ASCII(k)) {
            PyErr_SetString(PyExc_TypeError, "scan_uniform: keys must be ASCII strings");
            return NULL;
        }
        kname[j] = (const char *)PyUnicode_DATA(k);
        klen[j] = PyUnicode_GET_LENGTH(k);
        kind[j] = (int)PyLong_AsLong(PyTuple_GET_ITEM(kinds, j));
        if (kind[j] < F_INT || kind[j] > F_VALUE || (kind[j] == F_VALUE && j != nk - 1)) {
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "scan_uniform: bad field kind");
            return NULL;
        }
    }
    const char *s = (const char *)PyUnicode_DATA(text);
    Py_ssize_t len = PyUnicode_GET_LENGTH(text);
    PyObject *cols[17] = {0}, *result = NULL, *cache[TEXT_CACHE] = {0};
    PyObject *linenos = PyList_New(0);
    int ok = linenos != NULL;
    for (Py_ssize_t j = 0; ok && j < nk; j++) ok = (cols[j] = PyList_New(0)) != NULL;
    Py_ssize_t pos = 0, lineno = first;
    while (ok && pos < len) {
        const char *nl = memchr(s + pos, '\n', (size_t)(len - pos));
        Py_ssize_t e = nl ? nl - s : len; /* a last line without its newline: as if it had one */
        Py_ssize_t q = pos;
        if (e == pos) { pos = e + 1; lineno++; continue; } /* a blank line */
        if (!lit(s, &q, e, "{", 1)) goto decline;
        for (Py_ssize_t j = 0; j < nk; j++) {
            if (j && !lit(s, &q, e, ",", 1)) goto decline;
            if (!lit(s, &q, e, "\"", 1) || !lit(s, &q, e, kname[j], klen[j]) || !lit(s, &q, e, "\":", 2)) goto decline;
            Py_ssize_t a = q, b;
            PyObject *x = NULL;
            switch (kind[j]) {
            case F_INT:
                if (!scan_int(s, &q, e)) goto decline;
                x = PyLong_FromLongLong(parse_ll(s, a, q));
                break;
            case F_TYPE: {
                Py_ssize_t sa, sb;
                if (!scan_str(s, &q, e, &sa, &sb)) goto decline;
                static const char *names[4] = {"invoke", "ok", "fail", "info"};
                for (int t = 0; t < 4 && !x; t++)
                    if ((Py_ssize_t)strlen(names[t]) == sb - sa && memcmp(s + sa, names[t], (size_t)(sb - sa)) == 0) {
                        x = s_types[t];
                        Py_INCREF(x);
                    }
                if (!x) goto decline;
                break;
            }
            case F_STRINT:
            case F_STRINTNULL:
                if (a < e && (s[a] == '-' || (s[a] >= '0' && s[a] <= '9'))) {
                    if (!scan_int(s, &q, e)) goto decline;
                    x = cached_text(cache, s + a, q - a); /* the integer's text */
                } else if (a < e && s[a] == '"') {
                    Py_ssize_t sa, sb;
                    if (!scan_str(s, &q, e, &sa, &sb)) goto decline;
                    x = cached_text(cache, s + sa, sb - sa);
                } else if (kind[j] == F_STRINTNULL && lit(s, &q, e, "null", 4)) {
                    x = Py_None;
                    Py_INCREF(x);
                } else {
                    goto decline;
                }
                break;
            case F_VALUE: /* (.*) then the closing brace: everything up to the line's last character */
                b = e - 1;
                if (b < q || s[b] != '}') goto decline;
                x = PyUnicode_FromStringAndSize(s + q, b - q);
                q = b;
                break;
            }
            if (append_new(cols[j], x) < 0) { ok = 0; break; }
        }
        if (!ok) break;
        if (!lit(s, &q, e, "}", 1) || q != e) goto decline;
        if (append_new(linenos, PyLong_FromSsize_t(lineno)) < 0) { ok = 0; break; }
        pos = e + 1;
        lineno++;
    }
    if (ok) {
        result = PyTuple_New(nk + 1);
        if (result) {
            PyTuple_SET_ITEM(result, 0, linenos);
            linenos = NULL;
            for (Py_ssize_t j = 0; j < nk; j++) { PyTuple_SET_ITEM(result, j + 1, cols[j]); cols[j] = NULL; }
        }
    }
    goto done;
decline:
    result = Py_None;
    Py_INCREF(result);
done:
    Py_XDECREF(linenos);
    for (Py_ssize_t j = 0; j < nk; j++) Py_XDECREF(cols[j]);
    for (int j = 0; j < TEXT_CACHE; j++) Py_XDECREF(cache[j]);
    return result;
}

PyDoc_STRVAR(vc_doc,
"value_checks(texts, max_depth)\n--\n\n"
"For the JSON texts ``texts`` joined as ``[t1,t2,...]``: (does a '.', 'e' or 'E' follow a digit\n"
"somewhere (rows._FLOAT_MARK), rows._too_deep(joined, max_depth)), computed the same way;\n"
"None when a text is not an ASCII string (the caller then runs the Python checks).");

static PyObject *value_checks(PyObject *self, PyObject *args) {
    PyObject *texts;
    int max_depth;
    if (!PyArg_ParseTuple(args, "O!i", &PyList_Type, &texts, &max_depth)) return NULL;
    Py_ssize_t n = PyList_GET_SIZE(texts), total = 2;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *t = PyList_GET_ITEM(texts, i);
        if (!PyUnicode_CheckExact(t) || !PyUnicode_IS_ASCII(t)) Py_RETURN_NONE;
        total += PyUnicode_GET_LENGTH(t);
    }
    /* the brackets of the joined text, in order (its '[' and ']' around the texts included) */
    char *b = PyMem_Malloc((size_t)total), *w = b;
    if (!b) return PyErr_NoMemory();
    int float_mark = 0;
    *w++ = '[';
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *t = PyList_GET_ITEM(texts, i);
        const char *s = (const char *)PyUnicode_DATA(t);
        Py_ssize_t len = PyUnicode_GET_LENGTH(t);
        for (Py_ssize_t j = 0; j < len; j++) {
            char c = s[j];
            if (c == '[' || c == ']' || c == '{' || c == '}') *w++ = c;
            /* the texts are joined with ',' and wrapped in '[': a mark never spans two of them */
            else if ((c == '.' || c == 'e' || c == 'E') && j > 0 && s[j - 1] >= '0' && s[j - 1] <= '9') float_mark = 1;
        }
    }
    *w++ = ']';
    Py_ssize_t m = w - b;
    /* _too_deep: each pass removes every "[]" and then every "{}" (left to right, as
       bytes.replace does); too deep unless nothing is left within max_depth // 2 passes */
    int deep = 1;
    for (int pass = 0; pass < max_depth / 2; pass++) {
        if (m == 0) { deep = 0; break; }
        for (int k = 0; k < 2; k++) {
            char open = k ? '{' : '[', close = k ? '}' : ']';
            Py_ssize_t r = 0, o = 0;
            while (r < m) {
                if (r + 1 < m && b[r] == open && b[r + 1] == close) { r += 2; continue; }
                b[o++] = b[r++];
            }
            m = o;
        }
    }
    PyMem_Free(b);
    return Py_BuildValue("(OO)", float_mark ? Py_True : Py_False, deep ? Py_True : Py_False);
}


PyDoc_STRVAR(pv_doc,
"plain_values(texts, max_depth)\n--\n\n"
"Is every text of ``texts`` an array or object in the plain subset of JSON (see text_row: what\n"
"orjson prints back as it is), as deep as a line of at most ``max_depth`` levels allows (the\n"
"line's own object counted)? Such values can stay text: kernel_arrays walks them from the text.");

static PyObject *plain_values(PyObject *self, PyObject *args) {
    PyObject *texts;
    int max_depth;
    if (!PyArg_ParseTuple(args, "O!i", &PyList_Type, &texts, &max_depth)) return NULL;
    Nodes t = {0};
    int ok = 1;
    for (Py_ssize_t i = 0; ok && i < PyList_GET_SIZE(texts); i++) {
        PyObject *x = PyList_GET_ITEM(texts, i);
        if (!PyUnicode_CheckExact(x) || !PyUnicode_IS_ASCII(x)) { ok = 0; break; }
        const char *s = (const char *)PyUnicode_DATA(x);
        Py_ssize_t len = PyUnicode_GET_LENGTH(x);
        if (len == 0 || (s[0] != '[' && s[0] != '{')) { ok = 0; break; }
        int32_t r = plain_text(&t, s, len, max_depth - 1);
        if (r == -2) { PyMem_Free(t.p); return PyErr_NoMemory(); }
        ok = r >= 0;
    }
    PyMem_Free(t.p);
    return PyBool_FromLong(ok);
}

#define SMALL_CODES 16

PyDoc_STRVAR(sc_doc,
"small_codes(validity, offsets, data, offset, n)\n--\n\n"
"Dictionary codes of an Arrow string array (its buffers, its offset and length) with at most\n"
"SMALL_CODES distinct strings: (int64 codes as bytes, -1 for null; the strings in order of first\n"
"appearance), what pyarrow.compute.dictionary_encode gives for it; None when it holds more.\n"
"A few distinct strings are told apart by comparing with each, cheaper than hashing every row.");

static PyObject *small_codes(PyObject *self, PyObject *args) {
    Py_buffer vb = {0}, ob = {0}, db = {0};
    PyObject *validity;
    Py_ssize_t off, n;
    if (!PyArg_ParseTuple(args, "Oy*y*nn", &validity, &ob, &db, &off, &n)) return NULL;
    PyObject *result = NULL, *codes = NULL;
    int has_valid = validity != Py_None;
    if (has_valid && PyObject_GetBuffer(validity, &vb, PyBUF_SIMPLE) < 0) goto out;
    if (off < 0 || n < 0 || (size_t)ob.len < (size_t)(off + n + 1) * 4 ||
        (has_valid && (size_t)vb.len * 8 < (size_t)(off + n))) {
        PyErr_SetString(PyExc_ValueError, "small_codes: buffers shorter than the array");
        goto out;
    }
    const int32_t *o = (const int32_t *)ob.buf;
    const uint8_t *bits = (const uint8_t *)vb.buf;
    const char *d = (const char *)db.buf;
    const char *name[SMALL_CODES];
    int32_t len[SMALL_CODES];
    int k = 0, last = -1;
    codes = PyBytes_FromStringAndSize(NULL, n * 8);
    if (!codes) goto out;
    int64_t *c = (int64_t *)PyBytes_AS_STRING(codes);
    /* one string in every row (a history's name, say): equally spaced offsets over data that
       repeats with that period, told by one memcmp of the data with itself shifted by a row */
    if (!has_valid && n > 1) {
        int32_t a0 = o[off], step = o[off + 1] - o[off];
        int same = a0 >= 0 && step >= 0 && (Py_ssize_t)a0 + (Py_ssize_t)step * n <= db.len;
        for (Py_ssize_t i = 1; same && i < n; i++) same = o[off + i + 1] - o[off + i] == step;
        if (same && memcmp(d + a0, d + a0 + step, (size_t)step * (size_t)(n - 1)) == 0) {
            memset(c, 0, (size_t)n * 8);
            PyObject *one = PyUnicode_DecodeUTF8(d + a0, step, "strict");
            if (!one) goto out;
            result = Py_BuildValue("(O[N])", codes, one);
            goto out;
        }
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_ssize_t j = off + i;
        if (has_valid && !(bits[j >> 3] & (1u << (j & 7)))) { c[i] = -1; continue; }
        int32_t a = o[j], b = o[j + 1];
        if (a < 0 || b < a || (Py_ssize_t)b > db.len) {
            PyErr_SetString(PyExc_ValueError, "small_codes: offsets outside the data");
            goto out;
        }
        const char *p = d + a;
        int32_t l = b - a;
        /* the previous row's string first: runs are common */
        if (last >= 0 && len[last] == l && memcmp(name[last], p, (size_t)l) == 0) { c[i] = last; continue; }
        int f = -1;
        for (int q = 0; q < k; q++)
            if (len[q] == l && memcmp(name[q], p, (size_t)l) == 0) { f = q; break; }
        if (f < 0) {
            if (k == SMALL_CODES) { result = Py_None; Py_INCREF(result); goto out; }
            name[k] = p; len[k] = l; f = k++;
        }
        c[i] = last = f;
    }
    PyObject *names = PyList_New(k);
    if (!names) goto out;
    for (int q = 0; q < k; q++) {
        PyObject *x = PyUnicode_DecodeUTF8(name[q], len[q], "strict");
        if (!x) { Py_DECREF(names); goto out; }
        PyList_SET_ITEM(names, q, x);
    }
    result = PyTuple_Pack(2, codes, names);
    Py_DECREF(names);
out:
    Py_XDECREF(codes);
    if (has_valid && vb.obj) PyBuffer_Release(&vb);
    PyBuffer_Release(&ob);
    PyBuffer_Release(&db);
    return result;
}

PyDoc_STRVAR(pe_doc,
"pair_events(events, first_only)\n--\n\n"
"ingest.pairing.pair_reference's loop over (process, type, f) tuples or ops with those attributes:\n"
"(invokes, completions,\n"
"problems as (position, kind code 0 reinvoked / 1 unopened / 2 f-mismatch, invocation), nemesis).");

/* The open invocation of each client process. While every client process met is a small
   non-negative int, a table indexed by the process; from the first other one on, a dict keyed by
   the process (Python's equality, as pair_reference's dict), holding what the table held. */
#define OPEN_SMALL 65536
typedef struct { Py_ssize_t *slot, cap; PyObject *dict; } Open;

/* the table's slot for process; -1: the dict's (the process is not a small int, or the dict is in use) */
static Py_ssize_t open_slot(const Open *o, PyObject *process) {
    if (o->dict || !PyLong_CheckExact(process)) return -1;
    int overflow;
    long v = PyLong_AsLongAndOverflow(process, &overflow);
    return overflow || v < 0 || v >= OPEN_SMALL ? -1 : v;
}

static int open_to_dict(Open *o) {
    if (!(o->dict = PyDict_New())) return -1;
    for (Py_ssize_t p = 0; p < o->cap; p++) {
        if (o->slot[p] < 0) continue;
        PyObject *k = PyLong_FromSsize_t(p), *v = PyLong_FromSsize_t(o->slot[p]);
        int r = k && v ? PyDict_SetItem(o->dict, k, v) : -1;
        Py_XDECREF(k); Py_XDECREF(v);
        if (r < 0) return -1;
    }
    return 0;
}

/* the open invocation of process (-1: none), closed when take; -2 on error. p: its open_slot */
static Py_ssize_t open_get(Open *o, PyObject *process, Py_ssize_t p, int take) {
    if (p >= 0) {
        Py_ssize_t j = p < o->cap ? o->slot[p] : -1;
        if (take && j >= 0) o->slot[p] = -1;
        return j;
    }
    if (!o->dict && open_to_dict(o) < 0) return -2;
    PyObject *j = PyDict_GetItemWithError(o->dict, process); /* borrowed */
    if (!j) return PyErr_Occurred() ? -2 : -1;
    Py_ssize_t jj = PyLong_AsSsize_t(j);
    return take && PyDict_DelItem(o->dict, process) < 0 ? -2 : jj;
}

static int open_set(Open *o, PyObject *process, Py_ssize_t p, Py_ssize_t j) {
    if (p >= 0) {
        if (p >= o->cap) {
            Py_ssize_t cap = p + 1 > 2 * o->cap ? p + 1 : 2 * o->cap;
            Py_ssize_t *ns = PyMem_Realloc(o->slot, sizeof(Py_ssize_t) * cap);
            if (!ns) { PyErr_NoMemory(); return -1; }
            for (Py_ssize_t i = o->cap; i < cap; i++) ns[i] = -1;
            o->slot = ns;
            o->cap = cap;
        }
        o->slot[p] = j;
        return 0;
    }
    if (!o->dict && open_to_dict(o) < 0) return -1;
    PyObject *v = PyLong_FromSsize_t(j);
    int r = v ? PyDict_SetItem(o->dict, process, v) : -1;
    Py_XDECREF(v);
    return r;
}

/* a pairing being made: the invocations' positions, f and completions' positions, the problems */
typedef struct {
    Open open;
    Py_ssize_t *inv, *comp, n_inv, cap_inv, nemesis;
    PyObject *inv_f, *problems;
    int first_only;
} Pairer;

/* append (pos, code, j) to the problems; 1 where that ends the pairing (first_only), -1 on error */
static int add_problem(Pairer *st, Py_ssize_t pos, int code, Py_ssize_t j) {
    PyObject *t = Py_BuildValue("(nin)", pos, code, j);
    if (!t) return -1;
    int r = PyList_Append(st->problems, t);
    Py_DECREF(t);
    return r < 0 ? -1 : st->first_only;
}

static int add_invocation(Pairer *st, Py_ssize_t pos, PyObject *f) {
    if (st->n_inv == st->cap_inv) {
        Py_ssize_t cap = st->cap_inv ? 2 * st->cap_inv : 256;
        Py_ssize_t *ni = PyMem_Realloc(st->inv, sizeof(Py_ssize_t) * cap);
        if (ni) st->inv = ni;
        Py_ssize_t *nc = ni ? PyMem_Realloc(st->comp, sizeof(Py_ssize_t) * cap) : NULL;
        if (!nc) { PyErr_NoMemory(); return -1; }
        st->comp = nc;
        st->cap_inv = cap;
    }
    st->inv[st->n_inv] = pos;
    st->comp[st->n_inv++] = -1;
    return PyList_Append(st->inv_f, f);
}

/* inv_f != f as Python evaluates it: no identity shortcut but for two str (a str equals itself) */
static int f_differ(PyObject *inv_f, PyObject *f) {
    if (PyUnicode_CheckExact(inv_f) && PyUnicode_CheckExact(f))
        return inv_f != f && PyUnicode_Compare(inv_f, f) != 0;
    PyObject *ne = PyObject_RichCompare(inv_f, f, Py_NE);
    if (!ne) return -1;
    int differ = PyObject_IsTrue(ne);
    Py_DECREF(ne);
    return differ;
}

/* one event (process, type, f); 1: stop here (first_only and a problem), 0: go on, -1: error */
static int pair_one(Pairer *st, PyObject *process, PyObject *type, PyObject *f, Py_ssize_t pos) {
    if (!PyLong_CheckExact(process)) {
        int r = PyObject_RichCompareBool(process, s_nemesis, Py_EQ);
        if (r < 0) return -1;
        if (r) { st->nemesis++; return 0; }
    }
    int is_inv = PyUnicode_CheckExact(type) ? type == s_invoke || PyUnicode_Compare(type, s_invoke) == 0
                                            : PyObject_RichCompareBool(type, s_invoke, Py_EQ);
    if (is_inv < 0) return -1;
    Py_ssize_t slot = open_slot(&st->open, process), j = open_get(&st->open, process, slot, !is_inv);
    if (j == -2) return -1;
    if (is_inv) {
        int r = j >= 0 ? add_problem(st, pos, 0, j) : 0;
        if (r != 0) return r;
        return add_invocation(st, pos, f) < 0 || open_set(&st->open, process, slot, st->n_inv - 1) < 0 ? -1 : 0;
    }
    if (j < 0) return add_problem(st, pos, 1, -1);
    int differ = f_differ(PyList_GET_ITEM(st->inv_f, j), f);
    if (differ < 0) return -1;
    int r = differ ? add_problem(st, pos, 2, j) : 0;
    if (r == 0) st->comp[j] = pos;
    return r;
}

/* An op's (process, type, f): read from the instance's slots where the op is of the slotted class
   (an attrs class with slots) the first op has, else by getattr. */
typedef struct { PyTypeObject *type; Py_ssize_t off[3]; } OpSlots;
static PyObject **op_names[3] = {&s_process, &s_type, &s_f};

static void op_slots(PyObject *op, OpSlots *sl) {
    sl->type = NULL;
    for (int i = 0; i < 3; i++) {
        PyObject *d = PyObject_GetAttr((PyObject *)Py_TYPE(op), *op_names[i]);
        if (!d) { PyErr_Clear(); return; }
        PyMemberDef *m = Py_IS_TYPE(d, &PyMemberDescr_Type) ? ((PyMemberDescrObject *)d)->d_member : NULL;
        int ok = m && (m->type == T_OBJECT_EX || m->type == T_OBJECT) && !(m->flags & READ_RESTRICTED);
        if (ok) sl->off[i] = m->offset;
        Py_DECREF(d);
        if (!ok) return;
    }
    sl->type = Py_TYPE(op); /* a member descriptor on the type wins over the instance's dict */
}

/* the op's (process, type, f) into f3, new references; -1 on error (none held then) */
static int op_fields(PyObject *op, const OpSlots *sl, PyObject **f3) {
    for (int i = 0; i < 3; i++) {
        PyObject *v = Py_TYPE(op) == sl->type ? *(PyObject **)((char *)op + sl->off[i]) : NULL;
        if (v) Py_INCREF(v);
        else if (!(v = PyObject_GetAttr(op, *op_names[i]))) {
            while (i--) Py_DECREF(f3[i]);
            return -1;
        }
        f3[i] = v;
    }
    return 0;
}

/* the list of xs[0..n) */
static PyObject *ssize_list(const Py_ssize_t *xs, Py_ssize_t n) {
    PyObject *l = PyList_New(n);
    for (Py_ssize_t i = 0; l && i < n; i++) {
        PyObject *v = PyLong_FromSsize_t(xs[i]);
        if (!v) { Py_CLEAR(l); break; }
        PyList_SET_ITEM(l, i, v);
    }
    return l;
}

/* the next event into st; 1: stop, 0: go on, -1: error */
static int pair_next(Pairer *st, PyObject *ev, Py_ssize_t pos, OpSlots *sl, int *probed) {
    if (PyTuple_CheckExact(ev) && PyTuple_GET_SIZE(ev) == 3)
        return pair_one(st, PyTuple_GET_ITEM(ev, 0), PyTuple_GET_ITEM(ev, 1), PyTuple_GET_ITEM(ev, 2), pos);
    PyObject *f3[3]; /* an op: its attributes */
    if (!*probed) { op_slots(ev, sl); *probed = 1; }
    if (op_fields(ev, sl, f3) < 0) return -1;
    int r = pair_one(st, f3[0], f3[1], f3[2], pos);
    Py_DECREF(f3[0]); Py_DECREF(f3[1]); Py_DECREF(f3[2]);
    return r;
}

/* the event at pos of a list (read by index, as its iterator reads it), else the iterator's next */
static inline PyObject *next_event(PyObject *events, PyObject *it, Py_ssize_t pos) {
    if (!PyList_CheckExact(events)) return PyIter_Next(it);
    if (pos >= PyList_GET_SIZE(events)) return NULL;
    PyObject *ev = PyList_GET_ITEM(events, pos);
    Py_INCREF(ev);
    return ev;
}

/* events paired into st (the caller frees it with pairer_free): 0, or -1 on error */
static int pair_into(PyObject *events, Pairer *st) {
    PyObject *it = PyObject_GetIter(events), *ev;
    if (!it) return -1;
    st->inv_f = PyList_New(0);
    st->problems = PyList_New(0);
    OpSlots sl = {NULL};
    int probed = 0, r = (!st->inv_f || !st->problems) ? -1 : 0;
    for (Py_ssize_t pos = 0; r == 0 && (ev = next_event(events, it, pos)); pos++) {
        r = pair_next(st, ev, pos, &sl, &probed);
        Py_DECREF(ev);
    }
    Py_DECREF(it);
    return r < 0 || PyErr_Occurred() ? -1 : 0;
}

static void pairer_free(Pairer *st) {
    Py_XDECREF(st->inv_f); Py_XDECREF(st->problems); Py_XDECREF(st->open.dict);
    PyMem_Free(st->open.slot); PyMem_Free(st->inv); PyMem_Free(st->comp);
}

static PyObject *pair_events(PyObject *self, PyObject *args) {
    PyObject *events, *result = NULL;
    Pairer st = {{NULL, 0, NULL}, NULL, NULL, 0, 0, 0, NULL, NULL, 0};
    if (!PyArg_ParseTuple(args, "Op", &events, &st.first_only)) return NULL;
    if (pair_into(events, &st) == 0) {
        PyObject *inv = ssize_list(st.inv, st.n_inv), *comp = inv ? ssize_list(st.comp, st.n_inv) : NULL;
        if (comp) result = Py_BuildValue("(OOOn)", inv, comp, st.problems, st.nemesis);
        Py_XDECREF(inv); Py_XDECREF(comp);
    }
    pairer_free(&st);
    return result;
}

/* The same loop for _linkernel.c, through the capsule PAIR_CAPSULE: the invocations' and their
   completions' positions in events (*inv, *comp: n_inv of each, PyMem buffers the caller frees)
   and the nemesis events. 0; 1 where the events break the rule (nothing is returned then); -1 on
   error. */
#define PAIR_CAPSULE "spark_validation._rowkernel.pair_positions"
static int pair_positions(PyObject *events, Py_ssize_t **inv, Py_ssize_t **comp, Py_ssize_t *n_inv,
                          Py_ssize_t *nemesis) {
    Pairer st = {{NULL, 0, NULL}, NULL, NULL, 0, 0, 0, NULL, NULL, 1};
    int r = pair_into(events, &st);
    if (r == 0 && PyList_GET_SIZE(st.problems)) r = 1;
    if (r == 0) {
        *inv = st.inv; *comp = st.comp; *n_inv = st.n_inv; *nemesis = st.nemesis;
        st.inv = st.comp = NULL;
    }
    pairer_free(&st);
    return r;
}

static PyMethodDef methods[] = {
    {"pair_events", pair_events, METH_VARARGS, pe_doc},
    {"small_codes", small_codes, METH_VARARGS, sc_doc},
    {"plain_values", plain_values, METH_VARARGS, pv_doc},
    {"value_checks", value_checks, METH_VARARGS, vc_doc},
    {"scan_uniform", scan_uniform, METH_VARARGS, su_doc},
    {"rows_with_f", rows_with_f, METH_VARARGS, rw_doc},
    {"kernel_columns", kernel_columns, METH_VARARGS, kc_doc},
    {"kernel_arrays", kernel_arrays, METH_VARARGS, ka_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_rowkernel", "Compiled per-op loops of spark_validation.ingest.rows and spark_validation.kernel_rows.", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__rowkernel(void) {
#define INTERN(v, s) if (!(v = PyUnicode_InternFromString(s))) return NULL
    INTERN(s_invoke, "invoke"); INTERN(s_ok, "ok"); INTERN(s_fail, "fail"); INTERN(s_info, "info");
    INTERN(s_send, "send"); INTERN(s_poll, "poll"); INTERN(s_txn, "txn"); INTERN(s_assign, "assign");
    INTERN(s_subscribe, "subscribe"); INTERN(s_nemesis, "nemesis");
    INTERN(s_process, "process"); INTERN(s_type, "type"); INTERN(s_f, "f");
    s_types[0] = s_invoke; s_types[1] = s_ok; s_types[2] = s_fail; s_types[3] = s_info;
    PyObject *m = PyModule_Create(&module), *api = m ? PyCapsule_New((void *)pair_positions, PAIR_CAPSULE, NULL) : NULL;
    if (!api || PyModule_AddObject(m, "pair_positions", api) < 0) {
        Py_XDECREF(api);
        Py_XDECREF(m);
        return NULL;
    }
    return m;
}
