/* safetensors: 8-byte little-endian header length N, N bytes of JSON, raw data.
 * The loader trusts nothing: it validates the header completely (lengths, JSON,
 * dtypes, shapes vs byte counts, offsets that tile the data buffer exactly) before it
 * allocates a single tensor. */
#define _XOPEN_SOURCE 700
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "io_impl.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "safetensors/.npy support assumes a little-endian host"
#endif

#define LOAD_FN "ff_safetensors_load"
#define SAVE_FN "ff_safetensors_save"
#define MAX_JSON_NODES ((size_t)1 << 22) /* ~500k tensors; bounds memory on hostile headers */

/* ---- dtypes ------------------------------------------------------------------ */
static const struct {
    const char *name;
    ff_dtype dtype; /* FF_DTYPE_COUNT: known to safetensors, not to us */
} st_dtypes[] = {
    {"F32", FF_F32}, {"F64", FF_F64}, {"I32", FF_I32}, {"I64", FF_I64}, {"U8", FF_U8}, {"BOOL", FF_BOOL},
    {"F16", FF_F16}, {"BF16", FF_BF16}, {"I8", FF_I8}, {"I16", FF_I16}, {"C64", FF_C64},
    {"U16", FF_DTYPE_COUNT}, {"U32", FF_DTYPE_COUNT}, {"U64", FF_DTYPE_COUNT},
    {"F8_E4M3", FF_DTYPE_COUNT}, {"F8_E5M2", FF_DTYPE_COUNT},
};

static const char *st_dtype_name(ff_dtype t)
{
    for (size_t i = 0; i < sizeof st_dtypes / sizeof st_dtypes[0]; i++)
        if (st_dtypes[i].dtype == t && t != FF_DTYPE_COUNT) return st_dtypes[i].name;
    return NULL;
}

/* ---- loading ------------------------------------------------------------------- */
typedef struct entry {
    const char *name; /* borrowed from the JSON tree */
    ff_dtype dtype;
    int ndim;
    int64_t shape[FF_MAX_DIMS];
    uint64_t begin, end;
} entry;

/* FF_ERR_INVALID with "ff_safetensors_load: '<path>': <why>". */
#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static ff_status bad(const char *path, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return ff_error(FF_ERR_INVALID, "%s: '%s': %s", LOAD_FN, path, msg);
}

static ff_status parse_u64_array(const ff_json *a, int max, uint64_t *out, int *n)
{
    if (a->type != FF_JSON_ARRAY || a->count > (size_t)max) return FF_ERR_INVALID;
    int k = 0;
    for (const ff_json *c = a->child; c; c = c->next) {
        if (c->type != FF_JSON_NUMBER || !c->is_int || c->ival < 0) return FF_ERR_INVALID;
        out[k++] = (uint64_t)c->ival;
    }
    *n = k;
    return FF_OK;
}

static ff_status parse_entry(const ff_json *j, entry *e, const char *path)
{
    const char *name = j->key;
    if (j->key_len == 0) return bad(path, "a tensor has an empty name");
    if (strlen(name) != j->key_len) return bad(path, "tensor name '%s' contains a NUL character", name);
    if (j->type != FF_JSON_OBJECT) return bad(path, "entry '%s' is not an object", name);
    e->name = name;
    const ff_json *dtype = NULL, *shape = NULL, *offsets = NULL;
    for (const ff_json *c = j->child; c; c = c->next) {
        const ff_json **slot = strcmp(c->key, "dtype") == 0 ? &dtype
                               : strcmp(c->key, "shape") == 0 ? &shape
                               : strcmp(c->key, "data_offsets") == 0 ? &offsets : NULL;
        if (!slot) return bad(path, "tensor '%s' has an unknown field '%s'", name, c->key);
        if (*slot) return bad(path, "tensor '%s' has a duplicate field '%s'", name, c->key);
        *slot = c;
    }
    if (!dtype || !shape || !offsets)
        return bad(path, "tensor '%s' lacks '%s'", name, !dtype ? "dtype" : !shape ? "shape" : "data_offsets");
    if (dtype->type != FF_JSON_STRING) return bad(path, "tensor '%s': dtype is not a string", name);
    size_t k = 0, nd = sizeof st_dtypes / sizeof st_dtypes[0];
    while (k < nd && strcmp(st_dtypes[k].name, dtype->str) != 0) k++;
    if (k == nd) return bad(path, "tensor '%s' has unknown dtype '%s'", name, dtype->str);
    if (st_dtypes[k].dtype == FF_DTYPE_COUNT)
        return ff_error(FF_ERR_UNSUPPORTED, "%s: '%s': tensor '%s' has dtype %s, which FusionFlow cannot load "
                        "(supported: F32 F64 F16 BF16 I32 I64 U8 BOOL)", LOAD_FN, path, name, dtype->str);
    e->dtype = st_dtypes[k].dtype;

    uint64_t dims[FF_MAX_DIMS], off[2];
    int n;
    if (shape->type == FF_JSON_ARRAY && shape->count > FF_MAX_DIMS)
        return ff_error(FF_ERR_INVALID, "%s: '%s': tensor '%s' has %zu dims (at most %d supported)", LOAD_FN, path,
                        name, shape->count, FF_MAX_DIMS);
    if (parse_u64_array(shape, FF_MAX_DIMS, dims, &n))
        return bad(path, "tensor '%s': shape must be an array of non-negative integers", name);
    e->ndim = n;
    int64_t numel = 1, nbytes;
    for (int d = 0; d < n; d++) {
        e->shape[d] = (int64_t)dims[d];
        if (ff_mul_overflow_i64(numel, e->shape[d], &numel))
            return bad(path, "tensor '%s': shape element count overflows", name);
    }
    if (ff_mul_overflow_i64(numel, (int64_t)ff_dtype_size(e->dtype), &nbytes))
        return bad(path, "tensor '%s': shape byte count overflows", name);
    if (parse_u64_array(offsets, 2, off, &n) || n != 2 || off[0] > off[1])
        return bad(path, "tensor '%s': data_offsets must be [begin, end] with 0 <= begin <= end", name);
    e->begin = off[0];
    e->end = off[1];
    if (off[1] - off[0] != (uint64_t)nbytes)
        return ff_error(FF_ERR_INVALID, "%s: '%s': tensor '%s': shape x dtype size is %lld bytes but data_offsets "
                        "[%llu, %llu] hold %llu", LOAD_FN, path, name, (long long)nbytes,
                        (unsigned long long)off[0], (unsigned long long)off[1],
                        (unsigned long long)(off[1] - off[0]));
    return FF_OK;
}

static int by_key(const void *a, const void *b)
{
    return strcmp((*(const ff_json *const *)a)->key, (*(const ff_json *const *)b)->key);
}

/* Duplicate keys are found by sorting a copy of the entries, not by a lookup per entry: a
 * hostile header may hold millions of them, and a lookup per entry is quadratic. */
static ff_status parse_metadata(const ff_json *j, ff_tensor_dict *d, const char *path)
{
    if (j->type != FF_JSON_OBJECT) return bad(path, "__metadata__ is not an object");
    for (const ff_json *c = j->child; c; c = c->next) {
        if (c->type != FF_JSON_STRING) return bad(path, "__metadata__ value of '%s' is not a string", c->key);
        if (strlen(c->key) != c->key_len || strlen(c->str) != c->str_len)
            return bad(path, "__metadata__ entry '%s' contains a NUL character", c->key);
    }
    const ff_json **sorted = malloc((j->count ? j->count : 1) * sizeof *sorted);
    if (!sorted) return ff_error(FF_ERR_OOM, "%s: out of memory for %zu __metadata__ entries", LOAD_FN, j->count);
    size_t n = 0;
    for (const ff_json *c = j->child; c; c = c->next) sorted[n++] = c;
    qsort(sorted, n, sizeof *sorted, by_key);
    ff_status st = FF_OK;
    for (size_t i = 1; i < n && !st; i++)
        if (strcmp(sorted[i - 1]->key, sorted[i]->key) == 0)
            st = bad(path, "__metadata__ has a duplicate key '%s'", sorted[i]->key);
    free(sorted);
    for (const ff_json *c = j->child; c && !st; c = c->next) st = ff_io_dict_append_meta(d, c->key, c->str);
    return st;
}

static int by_begin(const void *a, const void *b)
{
    const entry *x = *(const entry *const *)a, *y = *(const entry *const *)b;
    if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
    return x->end < y->end ? -1 : x->end > y->end;
}

static int by_name(const void *a, const void *b)
{
    return strcmp((*(const entry *const *)a)->name, (*(const entry *const *)b)->name);
}

/* Offsets must tile [0, data_len) exactly: sorted by begin, each starts where the
 * previous ended. This rejects overlaps, gaps and out-of-range offsets at once. */
static ff_status check_layout(entry *es, size_t n, uint64_t data_len, const char *path)
{
    entry **order = malloc((n ? n : 1) * sizeof *order);
    if (!order) return ff_error(FF_ERR_OOM, "%s: out of memory", LOAD_FN);
    for (size_t i = 0; i < n; i++) order[i] = &es[i];
    ff_status st = FF_OK;
    qsort(order, n, sizeof *order, by_name);
    for (size_t i = 1; i < n && !st; i++)
        if (strcmp(order[i - 1]->name, order[i]->name) == 0)
            st = bad(path, "tensor name '%s' appears twice", order[i]->name);
    qsort(order, n, sizeof *order, by_begin);
    uint64_t pos = 0;
    for (size_t i = 0; i < n && !st; i++) {
        const entry *e = order[i];
        if (e->end > data_len)
            st = ff_error(FF_ERR_IO, "%s: '%s': tensor '%s' data_offsets [%llu, %llu] run past the %llu-byte data "
                          "buffer (file truncated?)", LOAD_FN, path, e->name, (unsigned long long)e->begin,
                          (unsigned long long)e->end, (unsigned long long)data_len);
        else if (e->begin < pos)
            st = ff_error(FF_ERR_INVALID, "%s: '%s': tensor '%s' data_offsets [%llu, %llu] overlap tensor '%s' "
                          "(which ends at %llu)", LOAD_FN, path, e->name, (unsigned long long)e->begin,
                          (unsigned long long)e->end, order[i - 1]->name, (unsigned long long)pos);
        else if (e->begin > pos)
            st = ff_error(FF_ERR_INVALID, "%s: '%s': bytes [%llu, %llu) of the data buffer belong to no tensor "
                          "(gap before '%s')", LOAD_FN, path, (unsigned long long)pos,
                          (unsigned long long)e->begin, e->name);
        else
            pos = e->end;
    }
    if (!st && pos != data_len)
        st = ff_error(FF_ERR_INVALID, "%s: '%s': bytes [%llu, %llu) at the end of the data buffer belong to no "
                      "tensor", LOAD_FN, path, (unsigned long long)pos, (unsigned long long)data_len);
    free(order);
    return st;
}

/* A read-only file mapping shared by the tensors that view it (private pages: writes
 * through a tensor copy the page and never reach the file). */
typedef struct mapping {
    atomic_long refs;
    void *addr;
    size_t len;
} mapping;

static void mapping_unref(void *ctx)
{
    mapping *m = ctx;
    if (atomic_fetch_sub(&m->refs, 1) != 1) return;
    munmap(m->addr, m->len);
    free(m);
}

static ff_tensor *load_entry(ff_backend *be, const entry *e, int fd, uint64_t data_start, mapping *map,
                             const char *path)
{
    uint64_t off = data_start + e->begin;
    size_t es = ff_dtype_size(e->dtype), nbytes = (size_t)(e->end - e->begin);
    const unsigned char *mem = map && nbytes ? (const unsigned char *)map->addr + off : NULL;
    unsigned char *staged = NULL;
    if (e->dtype == FF_BOOL && nbytes && !mem) { /* bools must be 0/1: look before trusting them */
        if (!(staged = malloc(nbytes))) return ff_error(FF_ERR_OOM, "%s: out of memory", LOAD_FN), NULL;
        if (ff_io_pread(fd, staged, nbytes, off, path, LOAD_FN)) {
            free(staged);
            return NULL;
        }
        mem = staged;
    }
    if (e->dtype == FF_BOOL && ff_io_check_bools(mem, nbytes, path, e->name, LOAD_FN)) {
        free(staged);
        return NULL;
    }
    ff_tensor *t;
    if (map && nbytes && (be->vt->flags & FF_BACKEND_HOST_MEMORY) && off % es == 0) {
        ff_layout l;
        if (ff_layout_init_contiguous(&l, e->ndim, e->shape, LOAD_FN)) return NULL;
        atomic_fetch_add(&map->refs, 1);
        t = ff_io_wrap_external(be, (void *)mem, nbytes, e->dtype, &l, mapping_unref, map, LOAD_FN);
        if (!t) mapping_unref(map);
        return t;
    }
    t = ff_tensor_new(be, e->ndim, e->shape, e->dtype, LOAD_FN);
    if (t && ff_io_fill_tensor(t, fd, off, mem, path, LOAD_FN)) {
        ff_tensor_release(t);
        t = NULL;
    }
    free(staged);
    return t;
}

ff_tensor_dict *ff_safetensors_load_on(ff_backend *be, const char *path, uint32_t flags)
{
    if (!be) return ff_error(FF_ERR_INVALID, "%s: backend is NULL", LOAD_FN), NULL;
    if (flags & ~FF_IO_MMAP) return ff_error(FF_ERR_INVALID, "%s: unknown flags 0x%x", LOAD_FN, flags), NULL;
    int fd;
    uint64_t size;
    if (ff_io_open_read(path, &fd, &size, LOAD_FN)) return NULL;
    char *header = NULL, jerr[160];
    ff_json *root = NULL;
    entry *es = NULL;
    ff_tensor_dict *d = NULL;
    mapping *map = NULL;
    unsigned char lenbuf[8];
    uint64_t hlen = 0;
    if (size < 8) {
        ff_error(FF_ERR_IO, "%s: '%s' is %llu bytes, too short for the 8-byte header length", LOAD_FN, path,
                 (unsigned long long)size);
        goto fail;
    }
    if (ff_io_pread(fd, lenbuf, 8, 0, path, LOAD_FN)) goto fail;
    for (int i = 7; i >= 0; i--) hlen = (hlen << 8) | lenbuf[i];
    if (hlen < 2 || hlen > FF_SAFETENSORS_MAX_HEADER) {
        ff_error(FF_ERR_INVALID, "%s: '%s': header length %llu is out of bounds [2, %u]", LOAD_FN, path,
                 (unsigned long long)hlen, FF_SAFETENSORS_MAX_HEADER);
        goto fail;
    }
    if (hlen > size - 8) {
        ff_error(FF_ERR_IO, "%s: '%s': header length says %llu bytes but only %llu follow (truncated file or "
                 "corrupt length)", LOAD_FN, path, (unsigned long long)hlen, (unsigned long long)(size - 8));
        goto fail;
    }
    if (!(header = malloc((size_t)hlen))) {
        ff_error(FF_ERR_OOM, "%s: out of memory for a %llu-byte header", LOAD_FN, (unsigned long long)hlen);
        goto fail;
    }
    if (ff_io_pread(fd, header, (size_t)hlen, 8, path, LOAD_FN)) goto fail;
    if (header[0] != '{') {
        bad(path, "header does not start with '{'");
        goto fail;
    }
    if (!(root = ff_json_parse(header, (size_t)hlen, MAX_JSON_NODES, jerr, sizeof jerr))) {
        bad(path, "header is not valid JSON: %s", jerr);
        goto fail;
    }
    if (!(d = ff_tensor_dict_new())) goto fail;
    if (!(es = calloc(root->count ? root->count : 1, sizeof *es))) {
        ff_error(FF_ERR_OOM, "%s: out of memory", LOAD_FN);
        goto fail;
    }
    size_t n = 0;
    bool seen_meta = false;
    for (const ff_json *c = root->child; c; c = c->next) {
        if (strcmp(c->key, "__metadata__") == 0 && strlen(c->key) == c->key_len) {
            if (seen_meta) {
                bad(path, "__metadata__ appears twice");
                goto fail;
            }
            seen_meta = true;
            if (parse_metadata(c, d, path)) goto fail;
        } else if (parse_entry(c, &es[n++], path)) {
            goto fail;
        }
    }
    uint64_t data_start = 8 + hlen;
    if (check_layout(es, n, size - data_start, path)) goto fail;
    if ((flags & FF_IO_MMAP) && size > data_start) {
        void *addr = mmap(NULL, (size_t)size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
        if (addr == MAP_FAILED) {
            ff_error(FF_ERR_IO, "%s: cannot map '%s'", LOAD_FN, path);
            goto fail;
        }
        if (!(map = malloc(sizeof *map))) {
            munmap(addr, (size_t)size);
            ff_error(FF_ERR_OOM, "%s: out of memory", LOAD_FN);
            goto fail;
        }
        atomic_init(&map->refs, 1); /* the loader's own reference, dropped below */
        map->addr = addr;
        map->len = (size_t)size;
    }
    for (size_t i = 0; i < n; i++) {
        ff_tensor *t = load_entry(be, &es[i], fd, data_start, map, path);
        if (!t || ff_io_dict_append(d, es[i].name, t)) goto fail;
    }
    if (map) mapping_unref(map);
    ff_json_free(root);
    free(es);
    free(header);
    close(fd);
    return d;
fail:
    ff_tensor_dict_free(d); /* before the mapping: its tensors may hold references */
    if (map) mapping_unref(map);
    ff_json_free(root);
    free(es);
    free(header);
    close(fd);
    return NULL;
}

ff_tensor_dict *ff_safetensors_load(const char *path, uint32_t flags)
{
    ff_backend *be = ff_backend_default();
    return be ? ff_safetensors_load_on(be, path, flags) : NULL;
}

/* ---- saving ------------------------------------------------------------------ */
typedef struct sbuf {
    char *p;
    size_t n, cap;
    bool oom;
} sbuf;

static void sb_put(sbuf *b, const char *s, size_t n)
{
    if (b->oom) return;
    if (b->n + n + 1 > b->cap) {
        size_t nc = b->cap ? b->cap : 256;
        while (nc < b->n + n + 1) nc *= 2;
        char *np = realloc(b->p, nc);
        if (!np) {
            b->oom = true;
            return;
        }
        b->p = np;
        b->cap = nc;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = '\0';
}

static void sb_str(sbuf *b, const char *s) { sb_put(b, s, strlen(s)); }

static void sb_quoted(sbuf *b, const char *s)
{
    size_t need = ff_json_quote(s, NULL, 0);
    char *q = malloc(need + 1);
    if (!q) {
        b->oom = true;
        return;
    }
    ff_json_quote(s, q, need + 1);
    sb_put(b, q, need);
    free(q);
}

static int str_cmp(const void *a, const void *b) { return strcmp(*(const char *const *)a, *(const char *const *)b); }

static ff_status check_names(int n, const char *const *names, ff_tensor *const *tensors)
{
    for (int i = 0; i < n; i++) {
        if (!names[i] || !tensors[i]) return ff_error(FF_ERR_INVALID, "%s: name or tensor %d is NULL", SAVE_FN, i);
        if (!names[i][0]) return ff_error(FF_ERR_INVALID, "%s: tensor %d has an empty name", SAVE_FN, i);
        if (!ff_utf8_valid(names[i], strlen(names[i])))
            return ff_error(FF_ERR_INVALID, "%s: tensor name %d is not valid UTF-8", SAVE_FN, i);
        if (strcmp(names[i], "__metadata__") == 0)
            return ff_error(FF_ERR_INVALID, "%s: '__metadata__' is reserved and cannot name a tensor", SAVE_FN);
        if (!st_dtype_name(tensors[i]->dtype))
            return ff_error(FF_ERR_UNSUPPORTED, "%s: tensor '%s' has dtype %s, which safetensors cannot hold",
                            SAVE_FN, names[i], ff_dtype_name(tensors[i]->dtype));
    }
    const char **sorted = malloc((size_t)(n ? n : 1) * sizeof *sorted);
    if (!sorted) return ff_error(FF_ERR_OOM, "%s: out of memory", SAVE_FN);
    if (n) memcpy(sorted, names, (size_t)n * sizeof *sorted);
    qsort(sorted, (size_t)n, sizeof *sorted, str_cmp);
    ff_status st = FF_OK;
    for (int i = 1; i < n && !st; i++)
        if (strcmp(sorted[i - 1], sorted[i]) == 0)
            st = ff_error(FF_ERR_INVALID, "%s: tensor name '%s' appears twice", SAVE_FN, sorted[i]);
    free(sorted);
    return st;
}

/* Sorted, so that a million keys cost n log n, not n^2; the values were checked for NULL
 * by the caller's walk. */
static ff_status check_meta_keys(const char *const *meta)
{
    size_t n = 0;
    while (meta[2 * n] && meta[2 * n + 1]) n++;
    const char **keys = malloc((n ? n : 1) * sizeof *keys);
    if (!keys) return ff_error(FF_ERR_OOM, "%s: out of memory", SAVE_FN);
    for (size_t i = 0; i < n; i++) keys[i] = meta[2 * i];
    qsort(keys, n, sizeof *keys, str_cmp);
    ff_status st = FF_OK;
    for (size_t i = 1; i < n && !st; i++)
        if (strcmp(keys[i - 1], keys[i]) == 0)
            st = ff_error(FF_ERR_INVALID, "%s: metadata key '%s' appears twice", SAVE_FN, keys[i]);
    free(keys);
    return st;
}

static ff_status build_header(sbuf *h, int n, const char *const *names, ff_tensor *const *tensors,
                              const char *const *meta)
{
    char num[64];
    sb_str(h, "{");
    if (meta && meta[0]) {
        if (check_meta_keys(meta)) return ff_last_status();
        sb_str(h, "\"__metadata__\":{");
        for (int i = 0; meta[i]; i += 2) {
            if (!meta[i + 1])
                return ff_error(FF_ERR_INVALID, "%s: metadata key '%s' has no value (the list must alternate "
                                "keys and values and end with NULL)", SAVE_FN, meta[i]);
            if (!ff_utf8_valid(meta[i], strlen(meta[i])) || !ff_utf8_valid(meta[i + 1], strlen(meta[i + 1])))
                return ff_error(FF_ERR_INVALID, "%s: metadata entry '%s' is not valid UTF-8", SAVE_FN, meta[i]);
            if (i) sb_str(h, ",");
            sb_quoted(h, meta[i]);
            sb_str(h, ":");
            sb_quoted(h, meta[i + 1]);
        }
        sb_str(h, "}");
        if (n) sb_str(h, ",");
    }
    uint64_t pos = 0;
    for (int i = 0; i < n; i++) {
        const ff_tensor *t = tensors[i];
        uint64_t nbytes = (uint64_t)ff_tensor_numel(t) * ff_dtype_size(t->dtype);
        if (i) sb_str(h, ",");
        sb_quoted(h, names[i]);
        sb_str(h, ":{\"dtype\":\"");
        sb_str(h, st_dtype_name(t->dtype));
        sb_str(h, "\",\"shape\":[");
        for (int d = 0; d < t->layout.ndim; d++) {
            snprintf(num, sizeof num, "%s%lld", d ? "," : "", (long long)t->layout.shape[d]);
            sb_str(h, num);
        }
        snprintf(num, sizeof num, "],\"data_offsets\":[%llu,%llu]}", (unsigned long long)pos,
                 (unsigned long long)(pos + nbytes));
        sb_str(h, num);
        pos += nbytes;
    }
    sb_str(h, "}");
    while ((h->n + 8) % 8) sb_str(h, " "); /* the data buffer starts 8-byte aligned */
    if (h->oom) return ff_error(FF_ERR_OOM, "%s: out of memory for the header", SAVE_FN);
    if (h->n > FF_SAFETENSORS_MAX_HEADER)
        return ff_error(FF_ERR_INVALID, "%s: header would be %zu bytes (limit %u)", SAVE_FN, h->n,
                        FF_SAFETENSORS_MAX_HEADER);
    return FF_OK;
}

ff_status ff_safetensors_save(const char *path, int n, const char *const *names, ff_tensor *const *tensors,
                              const char *const *metadata)
{
    if (n < 0 || (n > 0 && (!names || !tensors)))
        return ff_error(FF_ERR_INVALID, "%s: bad tensor list (n = %d)", SAVE_FN, n);
    if (check_names(n, names, tensors)) return ff_last_status();
    sbuf h = {0};
    ff_status st = build_header(&h, n, names, tensors, metadata);
    ff_io_writer w;
    if (!st) st = ff_io_writer_open(&w, path, SAVE_FN);
    if (st) {
        free(h.p);
        return st;
    }
    unsigned char lenbuf[8];
    for (int i = 0; i < 8; i++) lenbuf[i] = (unsigned char)((uint64_t)h.n >> (8 * i));
    st = ff_io_writer_write(&w, lenbuf, 8, SAVE_FN);
    if (!st) st = ff_io_writer_write(&w, h.p, h.n, SAVE_FN);
    for (int i = 0; i < n && !st; i++) st = ff_io_writer_tensor(&w, tensors[i], SAVE_FN);
    free(h.p);
    if (st) {
        ff_io_writer_abort(&w);
        return st;
    }
    return ff_io_writer_commit(&w, SAVE_FN);
}

/* The dict form, through the dict's public accessors: tensor_dict.c knows nothing of
 * safetensors (the dependency runs one way). */
ff_status ff_safetensors_save_dict(const char *path, const ff_tensor_dict *d)
{
    static const char fn[] = "ff_safetensors_save_dict";
    if (!d) return ff_error(FF_ERR_INVALID, "%s: dict is NULL", fn);
    int n = ff_tensor_dict_count(d), nmeta = ff_tensor_dict_meta_count(d);
    const char **names = malloc(((size_t)n + 1) * sizeof *names);
    ff_tensor **ts = calloc((size_t)n + 1, sizeof *ts);
    const char **meta = malloc(((size_t)nmeta * 2 + 1) * sizeof *meta);
    ff_status st = names && ts && meta ? FF_OK : ff_error(FF_ERR_OOM, "%s: out of memory", fn);
    for (int i = 0; i < n && !st; i++) {
        names[i] = ff_tensor_dict_name(d, i);
        if (!(ts[i] = ff_tensor_dict_get(d, names[i]))) st = ff_last_status();
    }
    for (int i = 0; i < nmeta && !st; i++) {
        meta[2 * i] = ff_tensor_dict_meta_key(d, i);
        meta[2 * i + 1] = ff_tensor_dict_meta_value(d, i);
    }
    if (!st) {
        meta[2 * nmeta] = NULL;
        st = ff_safetensors_save(path, n, names, ts, meta);
    }
    for (int i = 0; ts && i < n; i++) ff_tensor_release(ts[i]);
    free(names);
    free(ts);
    free(meta);
    return st;
}
