/*
 * _kineto_scan: one chunk of Kineto / Chrome-trace JSON ("[" event, event, ... "]") -> typed columns,
 * without a Python object per event.  The reference semantics are those of the msgspec path
 * (analyzer/ingest/decode.py: KinetoEvent chunk decode, exact_relative_us, durations_us,
 * kineto_columns); this scanner reproduces them for the value types it handles and REFUSES the chunk
 * (returns a reason string) for anything else, so that the caller decodes that chunk with msgspec and
 * behaviour on odd input is unchanged.  Refusing is always safe; accepting must give the same columns.
 *
 * The JSON tokenizer is strict and general: every value of every event is validated (RFC 8259 number
 * grammar, string escapes incl. surrogate pairs, UTF-8, literals, nesting depth), values that are not
 * needed are skipped whatever their type.  A chunk that msgspec would reject is refused here too.
 *
 * Per complete event ("ph": "X") the columns are: the signature key (pid, tid, name, cat, "",
 * args["Collective name"]) as an index into the chunk's distinct keys (a tuple built once per distinct
 * key), ts split into its integer part (int64) and its signed fraction (float64; NaN when ts is unreadable),
 * so that the caller subtracts its integer base before any float conversion (exact), dur, args
 * correlation, bytes (args "bytes", or "In msg nelems" x sizeof(dtype)), and a "bad" flag (ts or dur
 * unreadable).  Metadata events ("ph": "M") are returned as byte spans for the
 * caller to decode with msgspec; events of every other phase are validated and skipped.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

typedef const unsigned char *cptr;

/* ---- token of one scalar (or the kind of a container) ---------------------------------------- */
enum { T_ABSENT = 0, T_NULL, T_TRUE, T_FALSE, T_INT, T_FLOAT, T_STR, T_OBJ, T_ARR };

typedef struct {
    int type;
    cptr s;          /* string: contents between the quotes; number: its text */
    Py_ssize_t n;
    int esc;         /* string holds a backslash escape */
    int neg;         /* number: leading '-' */
    int nint;        /* number: digits before '.' */
    int nfrac;       /* number: digits after '.' (0 when none) */
    int exp;         /* number: has an exponent */
} Tok;

/* the fields of one event that the columns need (absent: type T_ABSENT) */
typedef struct {
    Tok ph, name, cat, pid, tid, ts, dur, args;
    Tok corr, bytes, coll, nelems, dtype;   /* inside "args" */
    Tok pg;                                 /* a process-group arg: the chunk is left to msgspec */
    int dup;                                /* a needed key seen twice */
    cptr start, end;                        /* the event's text */
} Ev;

typedef struct {
    cptr p, end;
    int depth, max_depth;
    const char *why;  /* reason of a refusal */
} Scan;

#define FAIL(S, reason) do { (S)->why = (reason); return -1; } while (0)

/* SWAR over 8 bytes: "some byte is zero" / "some byte is < n" (exact presence tests, n <= 128) */
#define ONES 0x0101010101010101ull
#define HIGHS 0x8080808080808080ull
static inline uint64_t has_zero(uint64_t x) { return (x - ONES) & ~x & HIGHS; }
static inline uint64_t has_less(uint64_t x, unsigned n) { return (x - ONES * n) & ~x & HIGHS; }

static inline void skip_ws(Scan *S) {
    cptr p = S->p, end = S->end;
    while (p < end && *p <= ' ') {
        if (*p != ' ' && *p != '\n' && *p != '\r' && *p != '\t') break;
        p++;
    }
    S->p = p;
}

/* byte classes inside a string: 0 plain ASCII, 1 '"', 2 '\\', 3 control (< 0x20), 4 non-ASCII */
static unsigned char STR_CLASS[256];

static void init_classes(void) {
    for (int c = 0; c < 256; c++)
        STR_CLASS[c] = c < 0x20 ? 3 : c == '"' ? 1 : c == '\\' ? 2 : c >= 0x80 ? 4 : 0;
}

static inline int hexval(unsigned char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

static int hex4(cptr p, cptr end, unsigned *out) {
    if (end - p < 4) return -1;
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        int h = hexval(p[i]);
        if (h < 0) return -1;
        v = (v << 4) | (unsigned)h;
    }
    *out = v;
    return 0;
}

/* length of the valid UTF-8 sequence at p (strict: no overlongs, no surrogates, <= U+10FFFF), or 0 */
static int utf8_len(cptr p, cptr end) {
    unsigned c = p[0];
    Py_ssize_t left = end - p;
#define CONT(i) ((p[i] & 0xC0) == 0x80)
    if (c >= 0xC2 && c <= 0xDF) return left >= 2 && CONT(1) ? 2 : 0;
    if (c >= 0xE0 && c <= 0xEF) {
        if (left < 3 || !CONT(1) || !CONT(2)) return 0;
        if (c == 0xE0 && p[1] < 0xA0) return 0;   /* overlong */
        if (c == 0xED && p[1] > 0x9F) return 0;   /* surrogate */
        return 3;
    }
    if (c >= 0xF0 && c <= 0xF4) {
        if (left < 4 || !CONT(1) || !CONT(2) || !CONT(3)) return 0;
        if (c == 0xF0 && p[1] < 0x90) return 0;   /* overlong */
        if (c == 0xF4 && p[1] > 0x8F) return 0;   /* > U+10FFFF */
        return 4;
    }
    return 0;
#undef CONT
}

/* a string at S->p (the opening quote): validated, S->p after the closing quote */
static inline int scan_string(Scan *S, Tok *t) {
    cptr p = S->p + 1, end = S->end;
    t->type = T_STR;
    t->s = p;
    t->esc = 0;
    for (;;) {
        /* plain ASCII 8 bytes at a time (no '"', no '\\', no control character, no high bit); the
         * lowest flagged byte of the SWAR tests is always a true hit (borrows only run upwards), so on
         * a little-endian machine its position is the count of trailing zero bits / 8 */
        while (end - p >= 8) {
            uint64_t w, m;
            memcpy(&w, p, 8);
            m = has_zero(w ^ (ONES * '"')) | has_zero(w ^ (ONES * '\\')) | has_less(w, 0x20) | (w & HIGHS);
            if (m) {
#if defined(__GNUC__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
                p += __builtin_ctzll(m) >> 3;
#endif
                break;
            }
            p += 8;
        }
        while (p < end && STR_CLASS[*p] == 0) p++;
        if (p >= end) FAIL(S, "unterminated string");
        switch (STR_CLASS[*p]) {
        case 1:
            t->n = p - t->s;
            S->p = p + 1;
            return 0;
        case 2: {
            t->esc = 1;
            if (p + 1 >= end) FAIL(S, "unterminated string");
            unsigned char e = p[1];
            if (e == 'u') {
                unsigned u, lo;
                if (hex4(p + 2, end, &u) < 0) FAIL(S, "bad \\u escape");
                p += 6;
                if (u >= 0xDC00 && u <= 0xDFFF) FAIL(S, "lone surrogate");
                if (u >= 0xD800 && u <= 0xDBFF) {
                    if (end - p < 6 || p[0] != '\\' || p[1] != 'u' || hex4(p + 2, end, &lo) < 0 ||
                        lo < 0xDC00 || lo > 0xDFFF)
                        FAIL(S, "lone surrogate");
                    p += 6;
                }
            } else if (e == '"' || e == '\\' || e == '/' || e == 'b' || e == 'f' || e == 'n' || e == 'r' ||
                       e == 't') {
                p += 2;
            } else {
                FAIL(S, "bad escape");
            }
            break;
        }
        case 3:
            FAIL(S, "control character in string");
        default: {
            int k = utf8_len(p, end);
            if (!k) FAIL(S, "invalid UTF-8");
            p += k;
        }
        }
    }
}

/* a number at S->p (RFC 8259 grammar) */
static inline int scan_number(Scan *S, Tok *t) {
    cptr p = S->p, end = S->end;
    t->s = p;
    t->neg = 0;
    t->nfrac = 0;
    t->exp = 0;
    if (p < end && *p == '-') { t->neg = 1; p++; }
    cptr d = p;
    if (p < end && *p == '0') {
        p++;
    } else if (p < end && *p >= '1' && *p <= '9') {
        while (p < end && *p >= '0' && *p <= '9') p++;
    } else {
        FAIL(S, "invalid number");
    }
    t->nint = (int)(p - d);
    t->type = T_INT;
    if (p < end && *p == '.') {
        cptr f = ++p;
        while (p < end && *p >= '0' && *p <= '9') p++;
        if (p == f) FAIL(S, "invalid number");
        t->nfrac = (int)(p - f);
        t->type = T_FLOAT;
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        p++;
        if (p < end && (*p == '+' || *p == '-')) p++;
        cptr x = p;
        while (p < end && *p >= '0' && *p <= '9') p++;
        if (p == x) FAIL(S, "invalid number");
        t->exp = 1;
        t->type = T_FLOAT;
    }
    t->n = p - t->s;
    S->p = p;
    return 0;
}

static int scan_literal(Scan *S, Tok *t, const char *word, int type) {
    size_t n = strlen(word);
    if ((size_t)(S->end - S->p) < n || memcmp(S->p, word, n) != 0) FAIL(S, "invalid literal");
    S->p += n;
    t->type = type;
    return 0;
}

static int scan_value(Scan *S, Tok *t);

/* an object or array at S->p, validated and skipped; t->type says which */
static int skip_container(Scan *S, Tok *t) {
    unsigned char close = *S->p == '{' ? '}' : ']';
    int is_obj = close == '}';
    Tok tmp;
    t->type = is_obj ? T_OBJ : T_ARR;
    if (++S->depth > S->max_depth) FAIL(S, "nesting deeper than the fast-path limit");
    S->p++;
    skip_ws(S);
    if (S->p < S->end && *S->p == close) { S->p++; S->depth--; return 0; }
    for (;;) {
        if (is_obj) {
            if (S->p >= S->end || *S->p != '"') FAIL(S, "expected a key");
            if (scan_string(S, &tmp) < 0) return -1;
            skip_ws(S);
            if (S->p >= S->end || *S->p != ':') FAIL(S, "expected ':'");
            S->p++;
            skip_ws(S);
        }
        if (scan_value(S, &tmp) < 0) return -1;
        skip_ws(S);
        if (S->p >= S->end) FAIL(S, "unterminated container");
        if (*S->p == ',') { S->p++; skip_ws(S); continue; }
        if (*S->p == close) { S->p++; S->depth--; return 0; }
        FAIL(S, "expected ',' or a closing bracket");
    }
}

/* any value at S->p (after whitespace) */
static int scan_value(Scan *S, Tok *t) {
    if (S->p >= S->end) FAIL(S, "expected a value");
    switch (*S->p) {
    case '"': return scan_string(S, t);
    case '{': case '[': return skip_container(S, t);
    case 't': return scan_literal(S, t, "true", T_TRUE);
    case 'f': return scan_literal(S, t, "false", T_FALSE);
    case 'n': return scan_literal(S, t, "null", T_NULL);
    default: return scan_number(S, t);
    }
}

static inline int key_is(const Tok *k, const char *word, Py_ssize_t n) {
    return k->n == n && memcmp(k->s, word, (size_t)n) == 0;
}

/* the slot of a needed key of "args" (NULL: not needed) */
static inline Tok *pick_args(Ev *ev, const Tok *k) {
    switch (k->n) {
    case 5: return key_is(k, "bytes", 5) ? &ev->bytes : key_is(k, "dtype", 5) ? &ev->dtype
                 : key_is(k, "Ranks", 5) ? &ev->pg : NULL;
    case 11: return key_is(k, "correlation", 11) ? &ev->corr : NULL;
    case 13: return key_is(k, "In msg nelems", 13) ? &ev->nelems : NULL;
    case 15: return key_is(k, "Collective name", 15) ? &ev->coll : NULL;
    case 18: return key_is(k, "Process Group Name", 18) ? &ev->pg : NULL;
    case 19: return key_is(k, "Process Group Ranks", 19) ? &ev->pg : NULL;
    default: return NULL;
    }
}

/* the slot of a needed key of an event (NULL: not needed) */
static inline Tok *pick_event(Ev *ev, const Tok *k) {
    switch (k->n) {
    case 2: return key_is(k, "ph", 2) ? &ev->ph : key_is(k, "ts", 2) ? &ev->ts : NULL;
    case 3: return key_is(k, "cat", 3) ? &ev->cat : key_is(k, "pid", 3) ? &ev->pid
                 : key_is(k, "tid", 3) ? &ev->tid : key_is(k, "dur", 3) ? &ev->dur : NULL;
    case 4: return key_is(k, "name", 4) ? &ev->name : key_is(k, "args", 4) ? &ev->args : NULL;
    default: return NULL;
    }
}

/* an object of "key": value pairs at S->p (an event, or its "args" when in_args); the needed keys'
 * values go to their slot of ev */
static int scan_object(Scan *S, Ev *ev, int in_args) {
    Tok key, val;
    if (++S->depth > S->max_depth) FAIL(S, "nesting deeper than the fast-path limit");
    S->p++;
    skip_ws(S);
    if (S->p < S->end && *S->p == '}') { S->p++; S->depth--; return 0; }
    for (;;) {
        if (S->p >= S->end || *S->p != '"') FAIL(S, "expected a key");
        if (scan_string(S, &key) < 0) return -1;
        if (key.esc) FAIL(S, "escaped key");  /* it could spell a needed key: msgspec decides */
        skip_ws(S);
        if (S->p >= S->end || *S->p != ':') FAIL(S, "expected ':'");
        S->p++;
        skip_ws(S);
        Tok *slot = in_args ? pick_args(ev, &key) : pick_event(ev, &key);
        if (slot == &ev->args && S->p < S->end && *S->p == '{') {
            if (ev->args.type != T_ABSENT) ev->dup = 1;
            if (scan_object(S, ev, 1) < 0) return -1;
            ev->args.type = T_OBJ;
        } else {
            Tok *into = &val;
            if (slot) {  /* parsed straight into its slot (a second occurrence: last one wins, flagged) */
                if (slot->type != T_ABSENT) ev->dup = 1;
                into = slot;
            }
            int rc = S->p < S->end && *S->p == '"' ? scan_string(S, into)
                   : S->p < S->end && ((*S->p >= '0' && *S->p <= '9') || *S->p == '-') ? scan_number(S, into)
                   : scan_value(S, into);
            if (rc < 0) return -1;
        }
        skip_ws(S);
        if (S->p >= S->end) FAIL(S, "unterminated object");
        if (*S->p == ',') { S->p++; skip_ws(S); continue; }
        if (*S->p == '}') { S->p++; S->depth--; return 0; }
        FAIL(S, "expected ',' or '}'");
    }
}

/* ---- numbers -> values (the msgspec path's semantics) ----------------------------------------- */
static const double POW10[] = {1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
                               1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

static uint64_t digits_u64(cptr p, int n) {  /* n <= 19 */
    uint64_t v = 0;
    for (int i = 0; i < n; i++) v = v * 10 + (uint64_t)(p[i] - '0');
    return v;
}

/* correctly rounded decimal text -> double (Python's own dtoa); -1 on error */
static int text_to_double(cptr p, Py_ssize_t n, double *out) {
    char small[64];
    char *buf = n < (Py_ssize_t)sizeof small ? small : PyMem_Malloc((size_t)n + 1);
    if (!buf) { PyErr_NoMemory(); return -1; }
    memcpy(buf, p, (size_t)n);
    buf[n] = 0;
    *out = PyOS_string_to_double(buf, NULL, NULL);
    if (buf != small) PyMem_Free(buf);
    return (*out == -1.0 && PyErr_Occurred()) ? -1 : 0;
}

/* a number token as a double, correctly rounded: an exact fast path for <= 15 significant digits
 * (integer mantissa and power of ten both exact, one IEEE division), else Python's dtoa. Integers
 * convert as integers (so "-0" is +0.0, like msgspec's int -> float). */
static int tok_double(const Tok *t, double *out) {
    cptr d = t->s + t->neg;
    if (!t->exp && t->nint + t->nfrac <= 15) {
        uint64_t m = digits_u64(d, t->nint);
        if (t->nfrac) m = m * (uint64_t)POW10[t->nfrac] + digits_u64(d + t->nint + 1, t->nfrac);
        double v = t->nfrac ? (double)m / POW10[t->nfrac] : (double)m;
        *out = t->neg && (t->nfrac || m) ? -v : v;
        return 0;
    }
    return text_to_double(t->s, t->n, out);
}

/* int64 of an integer token; 0 when out of range */
static int tok_int64(const Tok *t, int64_t *out) {
    cptr d = t->s + t->neg;
    if (t->nint > 19) return 0;
    uint64_t m = 0;
    for (int i = 0; i < t->nint; i++) {
        if (m > (UINT64_MAX - 9) / 10) return 0;
        m = m * 10 + (uint64_t)(d[i] - '0');
    }
    if (t->neg) {
        if (m > (uint64_t)INT64_MAX + 1) return 0;
        *out = (int64_t)(0 - m);
    } else {
        if (m > (uint64_t)INT64_MAX) return 0;
        *out = (int64_t)m;
    }
    return 1;
}

/* ts as (integer part, fraction): numbers without exponent and strings "-?\d{1,18}(\.\d*)?" (the
 * pattern of decode._TS_PATTERN, without its optional blanks); 1 ok, 0 bad (null / absent), -1 refuse */
static int ts_parts(const Tok *t, int64_t *whole, double *frac) {
    cptr d, f = NULL;
    int neg = 0, nint, nfrac = 0;
    if (t->type == T_NULL || t->type == T_ABSENT) return 0;
    if (t->type == T_INT || (t->type == T_FLOAT && !t->exp)) {
        neg = t->neg;
        d = t->s + neg;
        nint = t->nint;
        nfrac = t->nfrac;
        f = d + nint + 1;
    } else if (t->type == T_STR && !t->esc) {
        cptr p = t->s, end = t->s + t->n;
        if (p < end && *p == '-') { neg = 1; p++; }
        d = p;
        while (p < end && *p >= '0' && *p <= '9') p++;
        nint = (int)(p - d);
        if (p < end && *p == '.') {
            f = ++p;
            while (p < end && *p >= '0' && *p <= '9') p++;
            nfrac = (int)(p - f);
        }
        if (p != end || nint == 0) return -1;
    } else {
        return -1;
    }
    if (nint > 18) return -1;
    uint64_t w = digits_u64(d, nint);
    *whole = neg ? -(int64_t)w : (int64_t)w;
    *frac = 0.0;
    if (nfrac && nfrac <= 15) {
        *frac = (double)digits_u64(f, nfrac) / POW10[nfrac];
    } else if (nfrac) {
        Py_ssize_t n = nfrac + 2;
        char *buf = PyMem_Malloc((size_t)n + 1);
        if (!buf) { PyErr_NoMemory(); return -2; }
        buf[0] = '0';
        buf[1] = '.';
        memcpy(buf + 2, f, (size_t)nfrac);
        buf[n] = 0;
        *frac = PyOS_string_to_double(buf, NULL, NULL);
        PyMem_Free(buf);
        if (*frac == -1.0 && PyErr_Occurred()) return -2;
    }
    if (neg) *frac = -*frac; /* "-5.5" = -5 - 0.5: the fraction takes the sign of the text */
    return 1;
}

/* ---- strings -> Python ------------------------------------------------------------------------- */
static PyObject *tok_str(const Tok *t) {
    if (!t->esc) return PyUnicode_DecodeUTF8((const char *)t->s, t->n, "strict");
    unsigned char *buf = PyMem_Malloc((size_t)t->n + 1), *o = buf;  /* unescaped UTF-8 is never longer */
    if (!buf) return PyErr_NoMemory();
    cptr p = t->s, end = t->s + t->n;
    while (p < end) {
        if (*p != '\\') { *o++ = *p++; continue; }
        unsigned char e = p[1];
        p += 2;
        if (e != 'u') {
            *o++ = e == 'b' ? '\b' : e == 'f' ? '\f' : e == 'n' ? '\n' : e == 'r' ? '\r' : e == 't' ? '\t' : e;
            continue;
        }
        unsigned u = 0, lo = 0xDC00;
        hex4(p, end, &u);  /* validated by scan_string */
        p += 4;
        if (u >= 0xD800 && u <= 0xDBFF) {
            hex4(p + 2, end, &lo);
            p += 6;
            u = 0x10000 + ((u - 0xD800) << 10) + (lo - 0xDC00);
        }
        if (u < 0x80) { *o++ = (unsigned char)u; }
        else if (u < 0x800) { *o++ = (unsigned char)(0xC0 | (u >> 6)); *o++ = (unsigned char)(0x80 | (u & 0x3F)); }
        else if (u < 0x10000) {
            *o++ = (unsigned char)(0xE0 | (u >> 12)); *o++ = (unsigned char)(0x80 | ((u >> 6) & 0x3F));
            *o++ = (unsigned char)(0x80 | (u & 0x3F));
        } else {
            *o++ = (unsigned char)(0xF0 | (u >> 18)); *o++ = (unsigned char)(0x80 | ((u >> 12) & 0x3F));
            *o++ = (unsigned char)(0x80 | ((u >> 6) & 0x3F)); *o++ = (unsigned char)(0x80 | (u & 0x3F));
        }
    }
    PyObject *s = PyUnicode_DecodeUTF8((const char *)buf, o - buf, "strict");
    PyMem_Free(buf);
    return s;
}

/* pid / tid: int (in int64) or str; absent -> -1 */
static PyObject *tok_id(const Tok *t) {
    int64_t v;
    if (t->type == T_ABSENT) return PyLong_FromLong(-1);
    if (t->type == T_STR) return tok_str(t);
    if (t->type == T_INT && tok_int64(t, &v)) return PyLong_FromLongLong(v);
    return NULL;
}

/* ---- growable output buffers and the table of distinct signature keys -------------------------- */
typedef struct { char *data; Py_ssize_t n, cap; } Buf;

static int buf_put(Buf *b, const void *src, Py_ssize_t n) {
    if (b->n + n > b->cap) {
        Py_ssize_t cap = b->cap ? b->cap * 2 : 4096;
        while (cap < b->n + n) cap *= 2;
        char *d = PyMem_Realloc(b->data, (size_t)cap);
        if (!d) { PyErr_NoMemory(); return -1; }
        b->data = d;
        b->cap = cap;
    }
    memcpy(b->data + b->n, src, (size_t)n);
    b->n += n;
    return 0;
}

typedef struct { uint64_t hash; Py_ssize_t off, len; int32_t id; } Slot;

typedef struct {
    Slot *slots;
    Py_ssize_t cap, used;
    Buf arena;       /* the key bytes of every distinct key */
    Buf scratch;     /* the key bytes of the current event */
    PyObject *keys;  /* list of tuples, by local id */
} Table;

static uint64_t hash_bytes(const char *p, Py_ssize_t n) {
    uint64_t h = 0x9E3779B97F4A7C15ull ^ (uint64_t)n;
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        h = (h ^ w) * 0xBF58476D1CE4E5B9ull;
        h ^= h >> 31;
        p += 8;
        n -= 8;
    }
    uint64_t w = 0;
    memcpy(&w, p, (size_t)n);
    h = (h ^ w) * 0x94D049BB133111EBull;
    return h ^ (h >> 29);
}

/* the raw bytes of one key field: its type, its text, and 0xFF (never in valid UTF-8) as separator */
static int scratch_field(Buf *b, const Tok *t) {
    unsigned char tag = (unsigned char)t->type, sep = 0xFF;
    if (buf_put(b, &tag, 1) < 0) return -1;
    if (t->type != T_ABSENT && buf_put(b, t->s, t->n) < 0) return -1;
    return buf_put(b, &sep, 1);
}

static int table_grow(Table *T) {
    Py_ssize_t cap = T->cap ? T->cap * 2 : 1024;
    Slot *s = PyMem_Calloc((size_t)cap, sizeof(Slot));
    if (!s) { PyErr_NoMemory(); return -1; }
    for (Py_ssize_t i = 0; i < T->cap; i++) {
        if (T->slots[i].len == 0) continue;
        Py_ssize_t j = (Py_ssize_t)(T->slots[i].hash & (uint64_t)(cap - 1));
        while (s[j].len) j = (j + 1) & (cap - 1);
        s[j] = T->slots[i];
    }
    PyMem_Free(T->slots);
    T->slots = s;
    T->cap = cap;
    return 0;
}

static PyObject *EMPTY;  /* "" */

static PyObject *str_or_empty(const Tok *t) {
    if (t->type == T_ABSENT) { Py_INCREF(EMPTY); return EMPTY; }
    return tok_str(t);
}

/* the signature tuple (pid, tid, name, cat, "", collective name) of an event (types checked before) */
static PyObject *make_key(const Ev *ev) {
    PyObject *pid = tok_id(&ev->pid), *tid = pid ? tok_id(&ev->tid) : NULL;
    PyObject *name = tid ? str_or_empty(&ev->name) : NULL;
    PyObject *cat = name ? str_or_empty(&ev->cat) : NULL;
    PyObject *coll = cat ? str_or_empty(&ev->coll) : NULL;
    PyObject *key = coll ? PyTuple_Pack(6, pid, tid, name, cat, EMPTY, coll) : NULL;
    Py_XDECREF(pid);
    Py_XDECREF(tid);
    Py_XDECREF(name);
    Py_XDECREF(cat);
    Py_XDECREF(coll);
    return key;
}

static int table_init(Table *T) {
    memset(T, 0, sizeof *T);
    T->keys = PyList_New(0);
    return T->keys && table_grow(T) == 0 ? 0 : -1;
}

static void table_free(Table *T) {
    PyMem_Free(T->slots);
    PyMem_Free(T->arena.data);
    PyMem_Free(T->scratch.data);
    Py_XDECREF(T->keys);
}

/* the chunk-local id of the event's signature key (a new tuple for a key not seen in this chunk) */
static int table_id(Table *T, const Ev *ev, int32_t *id) {
    Buf *b = &T->scratch;
    b->n = 0;
    if (scratch_field(b, &ev->pid) < 0 || scratch_field(b, &ev->tid) < 0 || scratch_field(b, &ev->name) < 0 ||
        scratch_field(b, &ev->cat) < 0 || scratch_field(b, &ev->coll) < 0)
        return -1;
    uint64_t h = hash_bytes(b->data, b->n);
    Py_ssize_t j = (Py_ssize_t)(h & (uint64_t)(T->cap - 1));
    for (; T->slots[j].len; j = (j + 1) & (T->cap - 1)) {
        Slot *s = &T->slots[j];
        if (s->hash == h && s->len == b->n && memcmp(T->arena.data + s->off, b->data, (size_t)b->n) == 0) {
            *id = s->id;
            return 0;
        }
    }
    PyObject *key = make_key(ev);
    if (!key) return -1;
    int rc = PyList_Append(T->keys, key);
    Py_DECREF(key);
    if (rc < 0) return -1;
    Slot s = {h, T->arena.n, b->n, (int32_t)(PyList_GET_SIZE(T->keys) - 1)};
    if (buf_put(&T->arena, b->data, b->n) < 0) return -1;
    T->slots[j] = s;
    *id = s.id;
    if (++T->used * 2 >= T->cap) return table_grow(T);
    return 0;
}

/* ---- one complete event -> one row of the columns ---------------------------------------------- */
typedef struct {
    Buf kidx, whole, frac, bad, dur, corr, nbytes;
    PyObject *dtype_bytes;  /* decode.DTYPE_BYTES */
    Table table;
} Out;

/* sizeof(dtype) from decode.DTYPE_BYTES: str(dtype).lower().replace("torch.", ""); -1 unknown, -2 refuse */
static long dtype_width(Out *o, const Tok *t) {
    char small[64];
    if (t->type == T_ABSENT || t->type == T_NULL) return -1;
    if (t->type != T_STR || t->esc || t->n >= (Py_ssize_t)sizeof small) return -2;
    Py_ssize_t n = 0;
    for (Py_ssize_t i = 0; i < t->n; i++) {
        unsigned char c = t->s[i];
        if (c >= 0x80) return -2;  /* non-ASCII: str.lower() is Unicode-aware, let msgspec's path do it */
        small[n++] = (char)(c >= 'A' && c <= 'Z' ? c + 32 : c);
    }
    Py_ssize_t m = 0;
    for (Py_ssize_t i = 0; i < n;) {  /* str.replace("torch.", ""): left to right, non-overlapping */
        if (n - i >= 6 && memcmp(small + i, "torch.", 6) == 0) { i += 6; continue; }
        small[m++] = small[i++];
    }
    PyObject *key = PyUnicode_FromStringAndSize(small, m);
    if (!key) return -3;
    PyObject *w = PyDict_GetItemWithError(o->dtype_bytes, key);
    Py_DECREF(key);
    if (!w) return PyErr_Occurred() ? -3 : -1;
    long v = PyLong_AsLong(w);
    return v == -1 && PyErr_Occurred() ? -3 : v < 0 ? -2 : v;
}

/* a number token (int / float) as a double for the bytes columns: 1 ok, 0 null/absent (NaN), -1 refuse */
static int bytes_value(const Tok *t, double *out) {
    if (t->type == T_ABSENT || t->type == T_NULL) { *out = NAN; return 0; }
    if (t->type == T_INT && t->nint > 18) return -1;
    if (t->type != T_INT && t->type != T_FLOAT) return -1;
    if (tok_double(t, out) < 0) return -2;
    return isinf(*out) ? -1 : 1;
}

/* bytes: args "bytes"; with "In msg nelems": "bytes" when a number, else nelems x sizeof(dtype) */
static int nbytes_of(Scan *S, Out *o, const Ev *ev, double *out) {
    int rc = bytes_value(&ev->bytes, out);
    if (rc == -2) return -1;
    if (rc == -1) FAIL(S, "args bytes type");
    if (ev->nelems.type == T_ABSENT || ev->nelems.type == T_NULL || !isnan(*out)) return 0;
    if (ev->nelems.type != T_INT || ev->nelems.nint > 15) FAIL(S, "args In msg nelems type");
    long w = dtype_width(o, &ev->dtype);
    if (w == -3) return -1;
    if (w == -2) FAIL(S, "args dtype type");
    int64_t count = 0;
    tok_int64(&ev->nelems, &count);
    *out = w < 0 ? NAN : (double)count * (double)w;
    return 0;
}

static inline int is_str_or_absent(const Tok *t) { return t->type == T_ABSENT || t->type == T_STR; }

static inline int is_id(const Tok *t) {
    int64_t v;
    return t->type == T_ABSENT || t->type == T_STR || (t->type == T_INT && tok_int64(t, &v));
}

static int x_event(Scan *S, Out *o, Ev *ev) {
    if (!is_str_or_absent(&ev->name) || !is_str_or_absent(&ev->cat) || !is_str_or_absent(&ev->coll))
        FAIL(S, "name / cat / Collective name type");
    if (!is_id(&ev->pid) || !is_id(&ev->tid)) FAIL(S, "pid / tid type");
    if (ev->pg.type != T_ABSENT) FAIL(S, "process-group args (the signature's group key is built by msgspec)");
    if (ev->args.type != T_ABSENT && ev->args.type != T_NULL && ev->args.type != T_OBJ) FAIL(S, "args type");
    int64_t whole = 0, corr = -1;
    double frac = 0.0, dur = 0.0, nbytes;
    int ts_ok = ts_parts(&ev->ts, &whole, &frac);
    if (ts_ok == -2) return -1;
    if (ts_ok < 0) FAIL(S, "ts type");
    if (ev->dur.type == T_NULL) {
        dur = NAN;
    } else if (ev->dur.type == T_INT || ev->dur.type == T_FLOAT) {
        if (tok_double(&ev->dur, &dur) < 0) return -1;
        if (isinf(dur)) FAIL(S, "dur out of range");
    } else if (ev->dur.type != T_ABSENT) {
        FAIL(S, "dur type");
    }
    if (ev->corr.type == T_INT) {
        if (!tok_int64(&ev->corr, &corr)) corr = -1;
    } else if (ev->corr.type != T_ABSENT && ev->corr.type != T_NULL) {
        FAIL(S, "args correlation type");
    }
    if (nbytes_of(S, o, ev, &nbytes) < 0) return -1;
    if (!ts_ok) frac = NAN;  /* marks an unreadable ts */
    unsigned char bad = !ts_ok || !(isfinite(dur) && dur >= 0.0);
    int32_t id;
    if (table_id(&o->table, ev, &id) < 0) return -1;
    if (buf_put(&o->kidx, &id, 4) < 0 || buf_put(&o->whole, &whole, 8) < 0 || buf_put(&o->frac, &frac, 8) < 0 ||
        buf_put(&o->bad, &bad, 1) < 0 ||
        buf_put(&o->dur, &dur, 8) < 0 || buf_put(&o->corr, &corr, 8) < 0 || buf_put(&o->nbytes, &nbytes, 8) < 0)
        return -1;
    return 0;
}

/* ---- the chunk ----------------------------------------------------------------------------------- */
/* every event of the array at S->p; X events -> o, M events' spans -> meta; n: events seen */
static int scan_events(Scan *S, Out *o, Py_buffer *phases, PyObject *meta, cptr body, Py_ssize_t *n) {
    skip_ws(S);
    if (S->p >= S->end || *S->p != '[') FAIL(S, "expected '['");
    S->p++;
    S->depth = 1;
    skip_ws(S);
    if (S->p < S->end && *S->p == ']') { S->p++; goto tail; }
    for (;;) {
        Ev ev;
        memset(&ev, 0, sizeof ev);
        if (S->p >= S->end || *S->p != '{') FAIL(S, "an element that is not an object");
        ev.start = S->p;
        if (scan_object(S, &ev, 0) < 0) return -1;
        ev.end = S->p;
        ++*n;
        if (ev.ph.type != T_STR || ev.ph.esc || ev.ph.n != 1 || !memchr(phases->buf, ev.ph.s[0], (size_t)phases->len))
            FAIL(S, "ph missing or not a known phase");
        if (ev.dup) FAIL(S, "duplicate key");  /* msgspec: last one wins, or an error for "ph" */
        if (ev.ph.s[0] == 'X') {
            if (x_event(S, o, &ev) < 0) return -1;
        } else if (ev.ph.s[0] == 'M') {
            PyObject *span = Py_BuildValue("(nn)", (Py_ssize_t)(ev.start - body), (Py_ssize_t)(ev.end - body));
            if (!span || PyList_Append(meta, span) < 0) { Py_XDECREF(span); return -1; }
            Py_DECREF(span);
        }
        skip_ws(S);
        if (S->p < S->end && *S->p == ',') { S->p++; skip_ws(S); continue; }
        if (S->p < S->end && *S->p == ']') { S->p++; break; }
        FAIL(S, "expected ',' or ']'");
    }
tail:
    skip_ws(S);
    if (S->p != S->end) FAIL(S, "trailing characters");
    return 0;
}

/* the column buffers, kept from one call to the next (no fresh pages per chunk; the GIL is held) */
#define N_COLS 7
static Buf KEPT[N_COLS];

static PyObject *to_bytes(Buf *b) { return PyBytes_FromStringAndSize(b->data ? b->data : "", b->n); }

static PyObject *scan(PyObject *self, PyObject *args) {
    Py_buffer body, phases;
    PyObject *dtype_bytes, *meta = NULL, *result = NULL;
    int max_depth;
    (void)self;
    if (!PyArg_ParseTuple(args, "y*iy*O!", &body, &max_depth, &phases, &PyDict_Type, &dtype_bytes))
        return NULL;
    Out o;
    memset(&o, 0, sizeof o);
    o.dtype_bytes = dtype_bytes;
    Buf *cols[] = {&o.kidx, &o.whole, &o.frac, &o.bad, &o.dur, &o.corr, &o.nbytes};
    for (int i = 0; i < N_COLS; i++) { *cols[i] = KEPT[i]; cols[i]->n = 0; }
    meta = PyList_New(0);
    if (!meta || table_init(&o.table) < 0) goto out;
    Scan S = {(cptr)body.buf, (cptr)body.buf + body.len, 0, max_depth, NULL};
    Py_ssize_t n = 0;
    if (scan_events(&S, &o, &phases, meta, (cptr)body.buf, &n) < 0) {
        if (!PyErr_Occurred()) result = PyUnicode_FromString(S.why ? S.why : "refused");
        goto out;
    }
    result = Py_BuildValue("(nONNNNNNNO)", n, o.table.keys, to_bytes(&o.kidx), to_bytes(&o.whole),
                           to_bytes(&o.frac), PyByteArray_FromStringAndSize(o.bad.data ? o.bad.data : "", o.bad.n),
                           to_bytes(&o.dur), to_bytes(&o.corr), to_bytes(&o.nbytes), meta);
out:
    for (int i = 0; i < N_COLS; i++) KEPT[i] = *cols[i];
    table_free(&o.table);
    Py_XDECREF(meta);
    PyBuffer_Release(&body);
    PyBuffer_Release(&phases);
    return result;
}

static PyMethodDef METHODS[] = {
    {"scan", scan, METH_VARARGS,
     "scan(body, max_depth, phases, dtype_bytes) -> (n_events, keys, kidx, ts_whole, ts_frac, bad, dur, "
     "corr, nbytes, meta_spans) or a str: the reason the chunk is refused (decode it with msgspec)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef MODULE = {PyModuleDef_HEAD_INIT, "_kineto_scan",
                                    "Kineto chunk -> typed columns (see the C file's header).", -1, METHODS,
                                    NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__kineto_scan(void) {
    init_classes();
    EMPTY = PyUnicode_FromStringAndSize("", 0);
    if (!EMPTY) return NULL;
    return PyModule_Create(&MODULE);
}
