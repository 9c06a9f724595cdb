/* PyTorch's zip checkpoints (torch.save since 1.6): a zip archive of stored (uncompressed)
 * records "<name>/data.pkl" (a pickle, protocol 2, of the saved object, each tensor a call
 * of torch._utils._rebuild_tensor_v2 on a persistent id ('storage', <torch.XStorage>,
 * key, location, numel)), "<name>/data/<key>" (each storage's raw little-endian bytes)
 * and "<name>/version".
 *
 * The pickle is read by a small machine of our own that knows only the opcodes torch's
 * pickles of state_dicts use and only the globals they name (OrderedDict, the rebuild
 * functions, the storage types): anything else is refused, so a hostile pickle runs
 * nothing. Every count, offset and size it reads is checked against the file before
 * anything is allocated for it. The zip itself is libzip's (Debian libzip-dev); a build
 * without it keeps ff_storage_view and reports ff_torch_zip_load as not built. */
#define _XOPEN_SOURCE 700
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io_impl.h"

#ifdef FF_HAVE_LIBZIP
#include <zip.h>
#endif

#define LOAD_FN "ff_torch_zip_load"
#define VIEW_FN "ff_storage_view"

/* ---- views of a storage (also what the Python loader uses) -------------------- */
ff_tensor *ff_storage_view(const ff_tensor *t, int ndim, const int64_t *shape, const int64_t *strides,
                           int64_t offset)
{
    if (!t || (ndim > 0 && (!shape || !strides)))
        return ff_error(FF_ERR_INVALID, "%s: NULL argument", VIEW_FN), NULL;
    if (ndim < 0 || ndim > FF_MAX_DIMS)
        return ff_error(FF_ERR_INVALID, "%s: %d dims (0 to %d supported)", VIEW_FN, ndim, FF_MAX_DIMS), NULL;
    int64_t capacity = (int64_t)(t->storage->nbytes / ff_dtype_size(t->dtype));
    ff_layout l = {.ndim = ndim, .offset = offset};
    int64_t numel = 1, last = offset;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] < 0 || strides[i] < 0)
            return ff_error(FF_ERR_INVALID, "%s: dim %d has size %lld and stride %lld (both must be >= 0)", VIEW_FN,
                            i, (long long)shape[i], (long long)strides[i]), NULL;
        l.shape[i] = shape[i];
        l.strides[i] = strides[i];
        int64_t reach;
        if (ff_mul_overflow_i64(numel, shape[i], &numel) ||
            (shape[i] > 0 && (ff_mul_overflow_i64(shape[i] - 1, strides[i], &reach) ||
                              ff_add_overflow_i64(last, reach, &last))))
            return ff_error(FF_ERR_OVERFLOW, "%s: the view's extent overflows", VIEW_FN), NULL;
    }
    /* an empty view touches nothing, but its offset must still lie within the storage */
    int64_t end = numel ? last + 1 : offset;
    if (offset < 0 || end > capacity)
        return ff_error(FF_ERR_INVALID, "%s: the view reaches elements [%lld, %lld) of a storage of %lld elements",
                        VIEW_FN, (long long)offset, (long long)end, (long long)capacity), NULL;
    return ff_tensor_new_view(t, &l);
}

#ifndef FF_HAVE_LIBZIP
ff_tensor_dict *ff_torch_zip_load_on(ff_backend *be, const char *path)
{
    (void)be;
    return ff_error(FF_ERR_UNSUPPORTED, "%s: '%s': this build of FusionFlow has no zip support (it was built "
                    "without libzip: apt-get install libzip-dev, then rebuild)", LOAD_FN, path ? path : "(null)"),
           NULL;
}
#else

/* ---- the pickle machine ------------------------------------------------------- */
#define MAX_PICKLE_BYTES ((zip_uint64_t)1 << 30)
#define MAX_NEST 64

typedef enum { V_NONE, V_BOOL, V_INT, V_FLOAT, V_STR, V_TUPLE, V_LIST, V_DICT, V_GLOBAL, V_STORAGE, V_TENSOR } vkind;
typedef enum { G_ORDERED_DICT, G_REBUILD_V2, G_REBUILD_PARAM, G_STORAGE_TYPE, G_SIZE } gkind;

typedef struct val {
    vkind kind;
    int64_t i;    /* int, bool, global kind, storage or tensor index */
    ff_dtype dtype; /* a storage type global */
    const char *s; /* a string: borrowed from the pickle bytes (NUL-terminated copy in strs) */
    size_t *items; /* tuple/list items; dict keys and values alternating */
    size_t n, cap;
    bool walked; /* a container reached twice (the memo allows cycles) is walked once */
} val;

typedef struct storage_rec {
    const char *key;
    ff_dtype dtype;
    int64_t numel;
    ff_tensor *data; /* loaded lazily, once: views of it stay shared */
} storage_rec;

typedef struct tensor_rec {
    size_t storage;
    int ndim;
    int64_t shape[FF_MAX_DIMS], strides[FF_MAX_DIMS], offset;
} tensor_rec;

typedef struct vm {
    const char *path;
    const unsigned char *p;
    size_t n, pos;
    val *vals;
    size_t nvals, capvals;
    size_t *stack, nstack, capstack;
    size_t *marks, nmarks, capmarks;
    size_t *memo, capmemo; /* SIZE_MAX: empty */
    char **strs;           /* every decoded string, freed at the end */
    size_t nstrs, capstrs;
    storage_rec *storages;
    size_t nstorages, capstorages;
    tensor_rec *tensors;
    size_t ntensors, captensors;
} vm;

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static ff_status bad(const vm *m, const char *fmt, ...)
{
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return ff_error(FF_ERR_INVALID, "%s: '%s': malformed PyTorch checkpoint (data.pkl at byte %zu): %s", LOAD_FN,
                    m->path, m->pos, msg);
}

/* Grows *arr (elements of size sz) to hold need; false when out of memory. */
static bool grow(void **arr, size_t *cap, size_t need, size_t sz)
{
    if (need <= *cap) return true;
    size_t c = *cap ? *cap : 16;
    while (c < need) c *= 2;
    void *q = realloc(*arr, c * sz);
    if (!q) return false;
    *arr = q;
    *cap = c;
    return true;
}

static ff_status oom(void) { return ff_error(FF_ERR_OOM, "%s: out of memory", LOAD_FN); }

static ff_status new_val(vm *m, vkind k, size_t *out)
{
    if (!grow((void **)&m->vals, &m->capvals, m->nvals + 1, sizeof(val))) return oom();
    m->vals[m->nvals] = (val){.kind = k};
    *out = m->nvals++;
    return FF_OK;
}

static ff_status push(vm *m, size_t v)
{
    if (!grow((void **)&m->stack, &m->capstack, m->nstack + 1, sizeof(size_t))) return oom();
    m->stack[m->nstack++] = v;
    return FF_OK;
}

static ff_status push_new(vm *m, vkind k, int64_t i)
{
    size_t v = 0;
    ff_status st = new_val(m, k, &v);
    if (st) return st;
    m->vals[v].i = i;
    return push(m, v);
}

static ff_status pop(vm *m, size_t *v)
{
    size_t floor = m->nmarks ? m->marks[m->nmarks - 1] : 0;
    if (m->nstack <= floor) return bad(m, "an opcode pops an empty stack");
    *v = m->stack[--m->nstack];
    return FF_OK;
}

static ff_status take(vm *m, size_t k, const unsigned char **out)
{
    if (m->n - m->pos < k) return ff_error(FF_ERR_IO, "%s: '%s': PyTorch checkpoint's data.pkl is truncated (at "
                                           "byte %zu of %zu)", LOAD_FN, m->path, m->pos, m->n);
    *out = m->p + m->pos;
    m->pos += k;
    return FF_OK;
}

static uint64_t le(const unsigned char *b, int k)
{
    uint64_t v = 0;
    for (int i = k - 1; i >= 0; i--) v = v << 8 | b[i];
    return v;
}

static ff_status append_item(vm *m, size_t container, size_t item)
{
    val *c = &m->vals[container];
    if (!grow((void **)&c->items, &c->cap, c->n + 1, sizeof(size_t))) return oom();
    c->items[c->n++] = item;
    return FF_OK;
}

static ff_status push_str(vm *m, const unsigned char *b, size_t len)
{
    char *s = malloc(len + 1);
    if (!s || !grow((void **)&m->strs, &m->capstrs, m->nstrs + 1, sizeof(char *))) return free(s), oom();
    memcpy(s, b, len);
    s[len] = 0;
    m->strs[m->nstrs++] = s;
    size_t v = 0;
    ff_status st = new_val(m, V_STR, &v);
    if (st) return st;
    m->vals[v].s = s;
    return push(m, v);
}

static ff_status op_int(vm *m, int bytes, bool is_signed)
{
    const unsigned char *b = NULL;
    ff_status st = take(m, (size_t)bytes, &b);
    if (st) return st;
    int64_t v = (int64_t)le(b, bytes);
    if (is_signed && bytes == 4) v = (int32_t)(uint32_t)v;
    return push_new(m, V_INT, v);
}

static ff_status op_long1(vm *m)
{
    const unsigned char *b = NULL;
    ff_status st = take(m, 1, &b);
    if (st) return st;
    size_t k = b[0];
    if (k > 8) return bad(m, "an integer of %zu bytes (at most 8 supported)", k);
    if ((st = take(m, k, &b))) return st;
    uint64_t u = k ? le(b, (int)k) : 0;
    if (k && k < 8 && (b[k - 1] & 0x80)) u |= ~(uint64_t)0 << (8 * k); /* sign-extend */
    return push_new(m, V_INT, (int64_t)u);
}

/* GLOBAL "module\nname\n": only what torch's state_dict pickles name. */
static ff_status op_global(vm *m)
{
    const unsigned char *start = m->p + m->pos, *end = m->p + m->n;
    const unsigned char *nl1 = memchr(start, '\n', (size_t)(end - start));
    const unsigned char *nl2 = nl1 ? memchr(nl1 + 1, '\n', (size_t)(end - nl1 - 1)) : NULL;
    if (!nl2) return ff_error(FF_ERR_IO, "%s: '%s': PyTorch checkpoint's data.pkl is truncated in a GLOBAL",
                              LOAD_FN, m->path);
    char mod[64] = "", name[64] = "";
    size_t lm = (size_t)(nl1 - start), ln = (size_t)(nl2 - nl1 - 1);
    if (lm < sizeof mod) memcpy(mod, start, lm), mod[lm] = 0;
    if (ln < sizeof name) memcpy(name, nl1 + 1, ln), name[ln] = 0;
    m->pos = (size_t)(nl2 + 1 - m->p);
    static const struct {
        const char *name;
        ff_dtype dtype;
    } storages[] = {{"FloatStorage", FF_F32}, {"DoubleStorage", FF_F64},    {"HalfStorage", FF_F16},
                    {"BFloat16Storage", FF_BF16}, {"LongStorage", FF_I64}, {"IntStorage", FF_I32},
                    {"ByteStorage", FF_U8},       {"BoolStorage", FF_BOOL},   {"CharStorage", FF_I8},
                    {"ShortStorage", FF_I16},     {"ComplexFloatStorage", FF_C64},
                    {"ComplexDoubleStorage", FF_C128}};
    size_t v = 0;
    ff_status st;
    if (!strcmp(mod, "collections") && !strcmp(name, "OrderedDict")) return push_new(m, V_GLOBAL, G_ORDERED_DICT);
    if (!strcmp(mod, "torch._utils") && !strcmp(name, "_rebuild_tensor_v2")) return push_new(m, V_GLOBAL, G_REBUILD_V2);
    if (!strcmp(mod, "torch._utils") && !strcmp(name, "_rebuild_parameter"))
        return push_new(m, V_GLOBAL, G_REBUILD_PARAM);
    if (!strcmp(mod, "torch") && !strcmp(name, "Size")) return push_new(m, V_GLOBAL, G_SIZE);
    if (!strcmp(mod, "torch"))
        for (size_t i = 0; i < sizeof storages / sizeof storages[0]; i++)
            if (!strcmp(name, storages[i].name)) {
                if ((st = new_val(m, V_GLOBAL, &v))) return st;
                m->vals[v].i = G_STORAGE_TYPE;
                m->vals[v].dtype = storages[i].dtype;
                return push(m, v);
            }
    if (!strcmp(mod, "torch") && strstr(name, "Storage"))
        return ff_error(FF_ERR_UNSUPPORTED, "%s: '%s': the checkpoint holds a torch.%s, a dtype FusionFlow cannot "
                        "load (f32 f64 f16 bf16 i64 i32 u8 bool are)", LOAD_FN, m->path, name);
    return ff_error(FF_ERR_INVALID, "%s: '%s': the checkpoint's pickle names %.*s.%.*s, which a state_dict never "
                    "does; the C loader reads only tensors and containers (load such a file from Python with "
                    "fusionflow.load(..., weights_only=False) if you trust it)", LOAD_FN, m->path,
                    (int)(lm > 80 ? 80 : lm), start, (int)(ln > 80 ? 80 : ln), nl1 + 1);
}

/* The items above the top mark, popped. */
static ff_status pop_mark(vm *m, size_t *first, size_t *count)
{
    if (!m->nmarks) return bad(m, "an opcode needs a MARK and there is none");
    *first = m->marks[--m->nmarks];
    *count = m->nstack - *first;
    m->nstack = *first;
    return FF_OK;
}

static ff_status make_tuple(vm *m, const size_t *items, size_t k)
{
    size_t t = 0;
    ff_status st = new_val(m, V_TUPLE, &t);
    for (size_t i = 0; !st && i < k; i++) st = append_item(m, t, items[i]);
    return st ? st : push(m, t);
}

static ff_status op_tuple_n(vm *m, size_t k)
{
    size_t floor = m->nmarks ? m->marks[m->nmarks - 1] : 0;
    if (m->nstack - floor < k) return bad(m, "TUPLE%zu on a stack of %zu", k, m->nstack - floor);
    m->nstack -= k;
    size_t items[3];
    memcpy(items, m->stack + m->nstack, k * sizeof(size_t));
    return make_tuple(m, items, k);
}

static ff_status op_tuple_mark(vm *m)
{
    size_t first = 0, k = 0;
    ff_status st = pop_mark(m, &first, &k);
    if (st) return st;
    size_t t = 0;
    if ((st = new_val(m, V_TUPLE, &t))) return st;
    for (size_t i = 0; !st && i < k; i++) st = append_item(m, t, m->stack[first + i]);
    return st ? st : push(m, t);
}

/* SETITEMS / APPENDS: the items above the mark into the container below it. */
static ff_status op_fill(vm *m, bool pairs)
{
    size_t first = 0, k = 0, c = 0;
    ff_status st = pop_mark(m, &first, &k);
    if (st || (st = pop(m, &c))) return st;
    vkind want = pairs ? V_DICT : V_LIST;
    if (m->vals[c].kind != want) return bad(m, "%s on something that is not a %s", pairs ? "SETITEMS" : "APPENDS",
                                            pairs ? "dict" : "list");
    if (pairs && k % 2) return bad(m, "SETITEMS with an odd number of items");
    for (size_t i = 0; !st && i < k; i++) st = append_item(m, c, m->stack[first + i]);
    return st ? st : push(m, c);
}

static ff_status op_setitem(vm *m, bool pair)
{
    size_t k = 0, v = 0, c = 0;
    ff_status st = pop(m, &v);
    if (!st && pair) st = pop(m, &k);
    if (st || (st = pop(m, &c))) return st;
    if (m->vals[c].kind != (pair ? V_DICT : V_LIST))
        return bad(m, "%s on the wrong container", pair ? "SETITEM" : "APPEND");
    if (pair && (st = append_item(m, c, k))) return st;
    return (st = append_item(m, c, v)) ? st : push(m, c);
}

static bool is_int(const vm *m, size_t v) { return m->vals[v].kind == V_INT || m->vals[v].kind == V_BOOL; }

static ff_status int_tuple(vm *m, size_t v, int64_t *out, int *n, const char *what)
{
    const val *t = &m->vals[v];
    if (t->kind != V_TUPLE) return bad(m, "the tensor's %s is not a tuple", what);
    if (t->n > FF_MAX_DIMS)
        return bad(m, "the tensor's %s has %zu dims (at most %d supported)", what, t->n, FF_MAX_DIMS);
    for (size_t i = 0; i < t->n; i++) {
        if (!is_int(m, t->items[i])) return bad(m, "the tensor's %s holds a non-integer", what);
        out[i] = m->vals[t->items[i]].i;
    }
    *n = (int)t->n;
    return FF_OK;
}

/* BINPERSID: ('storage', <torch.XStorage>, key, location, numel), one record per key. */
static ff_status op_persid(vm *m)
{
    size_t v = 0;
    ff_status st = pop(m, &v);
    if (st) return st;
    const val *t = &m->vals[v];
    if (t->kind != V_TUPLE || t->n < 5 || m->vals[t->items[0]].kind != V_STR ||
        strcmp(m->vals[t->items[0]].s, "storage"))
        return bad(m, "a persistent id that is not ('storage', type, key, location, numel)");
    const val *type = &m->vals[t->items[1]], *key = &m->vals[t->items[2]], *numel = &m->vals[t->items[4]];
    if (type->kind != V_GLOBAL || type->i != G_STORAGE_TYPE || key->kind != V_STR || numel->kind != V_INT ||
        numel->i < 0)
        return bad(m, "a storage persistent id with the wrong types");
    size_t idx = m->nstorages;
    for (size_t i = 0; i < m->nstorages; i++)
        if (!strcmp(m->storages[i].key, key->s)) {
            if (m->storages[i].dtype != type->dtype || m->storages[i].numel != numel->i)
                return bad(m, "storage '%s' is named twice with different types or sizes", key->s);
            idx = i;
        }
    if (idx == m->nstorages) {
        if (!grow((void **)&m->storages, &m->capstorages, m->nstorages + 1, sizeof(storage_rec))) return oom();
        m->storages[m->nstorages++] = (storage_rec){.key = key->s, .dtype = type->dtype, .numel = numel->i};
    }
    return push_new(m, V_STORAGE, (int64_t)idx);
}

/* REDUCE for the allowed globals: OrderedDict(), _rebuild_tensor_v2(...),
 * _rebuild_parameter(tensor, ...), torch.Size(tuple). */
static ff_status op_reduce(vm *m)
{
    size_t args = 0, fn = 0;
    ff_status st = pop(m, &args);
    if (st || (st = pop(m, &fn))) return st;
    const val *f = &m->vals[fn], *a = &m->vals[args];
    if (f->kind != V_GLOBAL || a->kind != V_TUPLE) return bad(m, "REDUCE of something that is not an allowed global");
    switch ((gkind)f->i) {
    case G_ORDERED_DICT: return push_new(m, V_DICT, 0);
    case G_SIZE:
        if (a->n != 1 || m->vals[a->items[0]].kind != V_TUPLE) return bad(m, "torch.Size of something not a tuple");
        return push(m, a->items[0]);
    case G_REBUILD_PARAM:
        if (a->n < 1 || m->vals[a->items[0]].kind != V_TENSOR) return bad(m, "_rebuild_parameter of a non-tensor");
        return push(m, a->items[0]);
    case G_REBUILD_V2: {
        if (a->n < 4 || m->vals[a->items[0]].kind != V_STORAGE || !is_int(m, a->items[1]))
            return bad(m, "_rebuild_tensor_v2 with the wrong arguments");
        tensor_rec r = {.storage = (size_t)m->vals[a->items[0]].i, .offset = m->vals[a->items[1]].i};
        int nst = 0;
        if ((st = int_tuple(m, a->items[2], r.shape, &r.ndim, "size")) ||
            (st = int_tuple(m, a->items[3], r.strides, &nst, "stride")))
            return st;
        if (nst != r.ndim) return bad(m, "a tensor with %d sizes and %d strides", r.ndim, nst);
        if (!grow((void **)&m->tensors, &m->captensors, m->ntensors + 1, sizeof(tensor_rec))) return oom();
        m->tensors[m->ntensors] = r;
        return push_new(m, V_TENSOR, (int64_t)m->ntensors++);
    }
    case G_STORAGE_TYPE: break;
    }
    return bad(m, "REDUCE of a storage type");
}

static ff_status op_memo(vm *m, int bytes, bool put)
{
    const unsigned char *b = NULL;
    ff_status st = take(m, (size_t)bytes, &b);
    if (st) return st;
    size_t idx = (size_t)le(b, bytes);
    /* a pickler numbers its memo from 0 as it goes: a larger index would only make a
     * 4-byte opcode allocate gigabytes */
    if (idx > m->nvals + 16) return bad(m, "memo index %zu is larger than the pickle so far", idx);
    if (put) {
        if (!m->nstack) return bad(m, "BINPUT on an empty stack");
        size_t old = m->capmemo;
        if (!grow((void **)&m->memo, &m->capmemo, idx + 1, sizeof(size_t))) return oom();
        for (size_t i = old; i < m->capmemo; i++) m->memo[i] = SIZE_MAX;
        m->memo[idx] = m->stack[m->nstack - 1];
        return FF_OK;
    }
    if (idx >= m->capmemo || m->memo[idx] == SIZE_MAX) return bad(m, "BINGET of memo %zu, never stored", idx);
    return push(m, m->memo[idx]);
}

static ff_status op_unicode(vm *m, int lenbytes)
{
    const unsigned char *b = NULL;
    ff_status st = take(m, (size_t)lenbytes, &b);
    if (st) return st;
    size_t len = (size_t)le(b, lenbytes);
    if ((st = take(m, len, &b))) return st;
    if (!ff_utf8_valid((const char *)b, len) || memchr(b, 0, len)) return bad(m, "a string that is not UTF-8 text");
    return push_str(m, b, len);
}

/* Runs the pickle to its STOP; *top gets the object. */
static ff_status run(vm *m, size_t *top)
{
    const unsigned char *b = NULL;
    ff_status st = FF_OK;
    size_t v = 0;
    while (!st) {
        if ((st = take(m, 1, &b))) return st;
        unsigned char op = b[0];
        switch (op) {
        case 0x80: st = take(m, 1, &b); break;                               /* PROTO */
        case 0x95: st = take(m, 8, &b); break;                               /* FRAME */
        case '}': st = push_new(m, V_DICT, 0); break;                        /* EMPTY_DICT */
        case ']': st = push_new(m, V_LIST, 0); break;                        /* EMPTY_LIST */
        case ')': st = make_tuple(m, NULL, 0); break;                        /* EMPTY_TUPLE */
        case 'N': st = push_new(m, V_NONE, 0); break;                        /* NONE */
        case 0x88: st = push_new(m, V_BOOL, 1); break;                       /* NEWTRUE */
        case 0x89: st = push_new(m, V_BOOL, 0); break;                       /* NEWFALSE */
        case 'J': st = op_int(m, 4, true); break;                            /* BININT */
        case 'K': st = op_int(m, 1, false); break;                           /* BININT1 */
        case 'M': st = op_int(m, 2, false); break;                           /* BININT2 */
        case 0x8a: st = op_long1(m); break;                                  /* LONG1 */
        case 'G': st = (st = take(m, 8, &b)) ? st : push_new(m, V_FLOAT, 0); break; /* BINFLOAT: value unused */
        case 'X': st = op_unicode(m, 4); break;                              /* BINUNICODE */
        case 0x8c: st = op_unicode(m, 1); break;                             /* SHORT_BINUNICODE */
        case 'c': st = op_global(m); break;                                  /* GLOBAL */
        case 'q': st = op_memo(m, 1, true); break;                           /* BINPUT */
        case 'r': st = op_memo(m, 4, true); break;                           /* LONG_BINPUT */
        case 'h': st = op_memo(m, 1, false); break;                          /* BINGET */
        case 'j': st = op_memo(m, 4, false); break;                          /* LONG_BINGET */
        case '(':                                                            /* MARK */
            if (!grow((void **)&m->marks, &m->capmarks, m->nmarks + 1, sizeof(size_t))) return oom();
            m->marks[m->nmarks++] = m->nstack;
            break;
        case 't': st = op_tuple_mark(m); break;                              /* TUPLE */
        case 0x85: st = op_tuple_n(m, 1); break;                             /* TUPLE1 */
        case 0x86: st = op_tuple_n(m, 2); break;                             /* TUPLE2 */
        case 0x87: st = op_tuple_n(m, 3); break;                             /* TUPLE3 */
        case 'u': st = op_fill(m, true); break;                              /* SETITEMS */
        case 'e': st = op_fill(m, false); break;                             /* APPENDS */
        case 's': st = op_setitem(m, true); break;                           /* SETITEM */
        case 'a': st = op_setitem(m, false); break;                          /* APPEND */
        case 'Q': st = op_persid(m); break;                                  /* BINPERSID */
        case 'R': st = op_reduce(m); break;                                  /* REDUCE */
        case 'b':                                            /* BUILD: a state_dict's _metadata, dropped */
            if ((st = pop(m, &v))) return st;
            if (!m->nstack || m->vals[m->stack[m->nstack - 1]].kind != V_DICT) return bad(m, "BUILD on a non-dict");
            break;
        case '.':                                                            /* STOP */
            if (m->nmarks) return bad(m, "STOP with an open MARK");
            if ((st = pop(m, top))) return st;
            return FF_OK;
        default: return bad(m, "opcode 0x%02x, which torch's state_dict pickles never use", op);
        }
    }
    return st;
}

static void vm_free(vm *m)
{
    for (size_t i = 0; i < m->nvals; i++) free(m->vals[i].items);
    for (size_t i = 0; i < m->nstrs; i++) free(m->strs[i]);
    for (size_t i = 0; i < m->nstorages; i++) ff_tensor_release(m->storages[i].data);
    free(m->vals);
    free(m->stack);
    free(m->marks);
    free(m->memo);
    free(m->strs);
    free(m->storages);
    free(m->tensors);
}

/* ---- the archive ---------------------------------------------------------------- */
typedef struct archive {
    const char *path;
    zip_t *z;
    char prefix[256]; /* "<name>/" */
    ff_backend *be;
} archive;

/* The bytes of record `name` (under the prefix) into a new buffer of *len bytes; the
 * record must be stored, and no larger than max (so a lying header allocates nothing). */
static ff_status read_record(archive *a, const char *name, zip_uint64_t max, unsigned char **out, size_t *len)
{
    char full[512];
    snprintf(full, sizeof full, "%s%s", a->prefix, name);
    zip_int64_t idx = zip_name_locate(a->z, full, 0);
    if (idx < 0)
        return ff_error(FF_ERR_INVALID, "%s: '%s': PyTorch checkpoint lacks record '%s'", LOAD_FN, a->path, full);
    zip_stat_t s;
    if (zip_stat_index(a->z, (zip_uint64_t)idx, 0, &s) || !(s.valid & ZIP_STAT_SIZE))
        return ff_error(FF_ERR_INVALID, "%s: '%s': cannot read record '%s'", LOAD_FN, a->path, full);
    if (s.size > max)
        return ff_error(FF_ERR_INVALID, "%s: '%s': record '%s' is %llu bytes (at most %llu expected)", LOAD_FN, a->path,
                        full, (unsigned long long)s.size, (unsigned long long)max);
    zip_file_t *zf = zip_fopen_index(a->z, (zip_uint64_t)idx, 0);
    if (!zf) return ff_error(FF_ERR_IO, "%s: '%s': cannot open record '%s': %s", LOAD_FN, a->path, full,
                             zip_strerror(a->z));
    unsigned char *buf = malloc(s.size ? s.size : 1);
    if (!buf) return zip_fclose(zf), oom();
    zip_int64_t got = zip_fread(zf, buf, s.size);
    zip_fclose(zf);
    if (got < 0 || (zip_uint64_t)got != s.size) {
        free(buf);
        return ff_error(FF_ERR_IO, "%s: '%s': record '%s' is truncated or corrupt (read %lld of %llu bytes)", LOAD_FN,
                        a->path, full, (long long)got, (unsigned long long)s.size);
    }
    *out = buf;
    *len = (size_t)s.size;
    return FF_OK;
}

static ff_status find_prefix(archive *a)
{
    zip_int64_t n = zip_get_num_entries(a->z, 0);
    for (zip_int64_t i = 0; i < n; i++) {
        const char *name = zip_get_name(a->z, (zip_uint64_t)i, 0);
        const char *slash = name ? strchr(name, '/') : NULL;
        if (slash && !strcmp(slash, "/data.pkl") && (size_t)(slash - name) + 1 < sizeof a->prefix) {
            memcpy(a->prefix, name, (size_t)(slash - name) + 1);
            a->prefix[slash - name + 1] = 0;
            return FF_OK;
        }
    }
    return ff_error(FF_ERR_INVALID, "%s: '%s': a zip file but not a PyTorch checkpoint (no <name>/data.pkl record)",
                    LOAD_FN, a->path);
}

static ff_status load_storage(archive *a, storage_rec *s, uint64_t file_size)
{
    if (s->data) return FF_OK;
    int64_t nbytes;
    if (ff_mul_overflow_i64(s->numel, (int64_t)ff_dtype_size(s->dtype), &nbytes) || (uint64_t)nbytes > file_size)
        return ff_error(FF_ERR_INVALID, "%s: '%s': storage '%s' claims %lld elements, more than the file holds",
                        LOAD_FN, a->path, s->key, (long long)s->numel);
    char name[300];
    snprintf(name, sizeof name, "data/%s", s->key);
    unsigned char *buf = NULL;
    size_t len = 0;
    ff_status st = read_record(a, name, (zip_uint64_t)nbytes, &buf, &len);
    if (st) return st;
    if (len != (size_t)nbytes) {
        free(buf);
        return ff_error(FF_ERR_INVALID, "%s: '%s': storage '%s' holds %zu bytes, but %lld elements of %s need %lld",
                        LOAD_FN, a->path, s->key, len, (long long)s->numel, ff_dtype_name(s->dtype), (long long)nbytes);
    }
    if (s->dtype == FF_BOOL && (st = ff_io_check_bools(buf, len, a->path, s->key, LOAD_FN))) return free(buf), st;
    int64_t shape[1] = {s->numel};
    s->data = ff_tensor_new(a->be, 1, shape, s->dtype, LOAD_FN);
    if (!s->data) return free(buf), ff_last_status();
    st = ff_io_fill_tensor(s->data, -1, 0, buf, a->path, LOAD_FN);
    free(buf);
    return st;
}

typedef struct walker {
    vm *m;
    archive *a;
    ff_tensor_dict *d;
    uint64_t file_size;
    char name[1024];
} walker;

/* Tensors anywhere in the object, under dotted names ("model.fc.weight", "layers.0.w");
 * numbers, strings and the like are skipped. */
static ff_status walk(walker *w, size_t v, size_t len, int depth)
{
    const val *x = &w->m->vals[v];
    if (depth > MAX_NEST) return bad(w->m, "the object is nested deeper than %d containers", MAX_NEST);
    if (x->kind == V_TENSOR) {
        const tensor_rec *r = &w->m->tensors[x->i];
        storage_rec *s = &w->m->storages[r->storage];
        ff_status st = load_storage(w->a, s, w->file_size);
        if (st) return st;
        ff_tensor *t = ff_storage_view(s->data, r->ndim, r->shape, r->strides, r->offset);
        if (!t) {
            ff_error_prefix(LOAD_FN);
            return ff_error(ff_last_status(), "%s: '%s': tensor '%s': %s", LOAD_FN, w->a->path, w->name,
                            ff_last_error());
        }
        if (ff_tensor_dict_contains(w->d, w->name)) {
            ff_tensor_release(t);
            return ff_error(FF_ERR_INVALID, "%s: '%s': two tensors are named '%s'", LOAD_FN, w->a->path, w->name);
        }
        return ff_io_dict_append(w->d, w->name, t);
    }
    if ((x->kind != V_DICT && x->kind != V_LIST && x->kind != V_TUPLE) || x->walked) return FF_OK;
    w->m->vals[v].walked = true;
    bool dict = x->kind == V_DICT;
    for (size_t i = 0; i < x->n; i += dict ? 2 : 1) {
        int k;
        if (dict) {
            const val *key = &w->m->vals[x->items[i]];
            if (key->kind == V_STR)
                k = snprintf(w->name + len, sizeof w->name - len, "%s%s", len ? "." : "", key->s);
            else if (key->kind == V_INT)
                k = snprintf(w->name + len, sizeof w->name - len, "%s%lld", len ? "." : "", (long long)key->i);
            else
                continue; /* keys that cannot name a tensor: nothing under them is loaded */
        } else {
            k = snprintf(w->name + len, sizeof w->name - len, "%s%zu", len ? "." : "", i);
        }
        if (k < 0 || (size_t)k >= sizeof w->name - len)
            return bad(w->m, "a tensor name longer than %zu bytes", sizeof w->name);
        ff_status st = walk(w, x->items[i + (dict ? 1 : 0)], len + (size_t)k, depth + 1);
        w->name[len] = 0;
        if (st) return st;
    }
    return FF_OK;
}

static ff_status check_byteorder(archive *a)
{
    char full[300];
    snprintf(full, sizeof full, "%sbyteorder", a->prefix);
    if (zip_name_locate(a->z, full, 0) < 0) return FF_OK; /* PyTorch < 2.1 writes none: little-endian */
    unsigned char *buf = NULL;
    size_t len = 0;
    ff_status st = read_record(a, "byteorder", 16, &buf, &len);
    if (st) return st;
    bool little = len == 6 && !memcmp(buf, "little", 6);
    free(buf);
    return little ? FF_OK
                  : ff_error(FF_ERR_UNSUPPORTED, "%s: '%s': a big-endian PyTorch checkpoint (only little-endian ones "
                             "are read)", LOAD_FN, a->path);
}

static ff_status load_archive(archive *a, uint64_t file_size, ff_tensor_dict *d)
{
    ff_status st = find_prefix(a);
    if (st || (st = check_byteorder(a))) return st;
    unsigned char *pkl = NULL;
    size_t n = 0;
    if ((st = read_record(a, "data.pkl", file_size < MAX_PICKLE_BYTES ? file_size : MAX_PICKLE_BYTES, &pkl, &n)))
        return st;
    vm m = {.path = a->path, .p = pkl, .n = n};
    size_t top = 0;
    st = run(&m, &top);
    if (!st && m.vals[top].kind != V_DICT)
        st = bad(&m, "the checkpoint holds a %s, not a dict of tensors",
                 m.vals[top].kind == V_TENSOR ? "single tensor" : "non-dict object");
    if (!st) {
        walker w = {.m = &m, .a = a, .d = d, .file_size = file_size};
        st = walk(&w, top, 0, 0);
    }
    vm_free(&m);
    free(pkl);
    return st;
}

ff_tensor_dict *ff_torch_zip_load_on(ff_backend *be, const char *path)
{
    if (!be || !path) return ff_error(FF_ERR_INVALID, "%s: NULL argument", LOAD_FN), NULL;
    int fd;
    uint64_t size;
    if (ff_io_open_read(path, &fd, &size, LOAD_FN)) return NULL;
    int zerr = 0;
    zip_t *z = zip_fdopen(fd, ZIP_RDONLY | ZIP_CHECKCONS, &zerr); /* takes fd, also on success */
    if (!z) {
        close(fd);
        zip_error_t e;
        zip_error_init_with_code(&e, zerr);
        ff_error(zerr == ZIP_ER_NOZIP ? FF_ERR_INVALID : FF_ERR_IO,
                 "%s: '%s': not a readable PyTorch zip checkpoint (truncated or corrupt zip: %s)", LOAD_FN, path,
                 zip_error_strerror(&e));
        zip_error_fini(&e);
        return NULL;
    }
    archive a = {.path = path, .z = z, .be = be};
    ff_tensor_dict *d = ff_tensor_dict_new();
    ff_status st = d ? load_archive(&a, size, d) : oom();
    zip_discard(z);
    if (st) {
        ff_tensor_dict_free(d);
        return NULL;
    }
    return d;
}
#endif /* FF_HAVE_LIBZIP */

ff_tensor_dict *ff_torch_zip_load(const char *path)
{
    ff_backend *be = ff_backend_default();
    if (!be) return NULL;
    return ff_torch_zip_load_on(be, path);
}
