/* NumPy .npy files: magic "\x93NUMPY", version (1.0: 2-byte header length; 2.0 and
 * 3.0: 4-byte), then a Python dict literal {'descr': '<f4', 'fortran_order': False,
 * 'shape': (2, 3), } padded with spaces to a 64-byte boundary and ended by '\n',
 * then the raw data. The header parser accepts exactly that grammar and nothing that
 * would need a Python interpreter. */
#define _XOPEN_SOURCE 700
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io_impl.h"

#define LOAD_FN "ff_npy_load"
#define SAVE_FN "ff_npy_save"
#define NPY_MAX_HEADER ((uint32_t)1 << 20)

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

/* ---- the header dict ----------------------------------------------------------- */
typedef struct hdr {
    const char *s;
    size_t n, i;
    char descr[16];
    int fortran; /* -1: missing */
    int ndim;    /* -1: missing */
    int64_t shape[FF_MAX_DIMS];
} hdr;

static void ws(hdr *h)
{
    while (h->i < h->n && (h->s[h->i] == ' ' || h->s[h->i] == '\t' || h->s[h->i] == '\n' || h->s[h->i] == '\r'))
        h->i++;
}

static bool eat(hdr *h, char c)
{
    ws(h);
    if (h->i < h->n && h->s[h->i] == c) return h->i++, true;
    return false;
}

/* A quoted Python string without escapes (none of the valid keys/values have any). */
static bool pystr(hdr *h, char *out, size_t cap)
{
    ws(h);
    if (h->i >= h->n || (h->s[h->i] != '\'' && h->s[h->i] != '"')) return false;
    char q = h->s[h->i++];
    size_t k = 0;
    while (h->i < h->n && h->s[h->i] != q) {
        if (h->s[h->i] == '\\' || k + 1 >= cap) return false;
        out[k++] = h->s[h->i++];
    }
    if (h->i >= h->n) return false;
    h->i++;
    out[k] = '\0';
    return true;
}

static bool word(hdr *h, const char *w)
{
    ws(h);
    size_t n = strlen(w);
    if (h->n - h->i < n || memcmp(h->s + h->i, w, n) != 0) return false;
    h->i += n;
    return true;
}

static ff_status parse_shape(hdr *h, const char *path)
{
    if (!eat(h, '(')) return bad(path, "header 'shape' is not a tuple");
    int nd = 0;
    while (!eat(h, ')')) {
        ws(h);
        if (h->i >= h->n || h->s[h->i] < '0' || h->s[h->i] > '9')
            return bad(path, "header 'shape' holds something other than non-negative integers");
        int64_t v = 0;
        while (h->i < h->n && h->s[h->i] >= '0' && h->s[h->i] <= '9') {
            if (ff_mul_overflow_i64(v, 10, &v) || ff_add_overflow_i64(v, h->s[h->i] - '0', &v))
                return bad(path, "header 'shape' entry overflows");
            h->i++;
        }
        if (h->i < h->n && h->s[h->i] == 'L') h->i++; /* Python 2 longs */
        if (nd == FF_MAX_DIMS) return bad(path, "shape has more than %d dims", FF_MAX_DIMS);
        h->shape[nd++] = v;
        if (!eat(h, ',')) {
            if (!eat(h, ')')) return bad(path, "header 'shape' tuple is malformed");
            break;
        }
    }
    h->ndim = nd;
    return FF_OK;
}

static ff_status parse_header(hdr *h, const char *path)
{
    h->fortran = -1;
    h->ndim = -1;
    h->descr[0] = '\0';
    if (!eat(h, '{')) return bad(path, "header is not a dict literal");
    while (!eat(h, '}')) {
        char key[32];
        if (!pystr(h, key, sizeof key)) return bad(path, "header dict key is not a short quoted string");
        if (!eat(h, ':')) return bad(path, "header dict lacks ':' after '%s'", key);
        if (strcmp(key, "descr") == 0 && !h->descr[0]) {
            if (!pystr(h, h->descr, sizeof h->descr))
                return bad(path, "header 'descr' is not a simple dtype string (structured dtypes are unsupported)");
        } else if (strcmp(key, "fortran_order") == 0 && h->fortran < 0) {
            if (word(h, "True")) h->fortran = 1;
            else if (word(h, "False")) h->fortran = 0;
            else return bad(path, "header 'fortran_order' is not True or False");
        } else if (strcmp(key, "shape") == 0 && h->ndim < 0) {
            if (parse_shape(h, path)) return ff_last_status();
        } else {
            return bad(path, "header has an unexpected or repeated key '%s'", key);
        }
        if (!eat(h, ',')) {
            if (!eat(h, '}')) return bad(path, "header dict is malformed after '%s'", key);
            break;
        }
    }
    ws(h);
    if (h->i != h->n) return bad(path, "header has trailing characters after the dict");
    if (!h->descr[0] || h->fortran < 0 || h->ndim < 0)
        return bad(path, "header lacks '%s'", !h->descr[0] ? "descr" : h->fortran < 0 ? "fortran_order" : "shape");
    return FF_OK;
}

/* NumPy type strings: byte order ('<' little, '|' not applicable, '=' native, which is
 * little here; '>' is refused), kind, size. */
static ff_status parse_descr(const char *d, ff_dtype *out, const char *path)
{
    static const struct { const char *code; ff_dtype t; } table[] = {
        {"f4", FF_F32}, {"f8", FF_F64}, {"f2", FF_F16}, {"i4", FF_I32}, {"i8", FF_I64}, {"u1", FF_U8}, {"b1", FF_BOOL},
        {"i1", FF_I8},  {"i2", FF_I16}, {"c8", FF_C64}, {"c16", FF_C128},
    };
    char order = d[0];
    if (order != '<' && order != '|' && order != '=' && order != '>')
        return bad(path, "dtype '%s' has no byte-order character", d);
    for (size_t k = 0; k < sizeof table / sizeof table[0]; k++) {
        if (strcmp(d + 1, table[k].code) != 0) continue;
        if (order == '>' && ff_dtype_size(table[k].t) > 1)
            return ff_error(FF_ERR_UNSUPPORTED, "%s: '%s': big-endian dtype '%s' is unsupported", LOAD_FN, path, d);
        *out = table[k].t;
        return FF_OK;
    }
    return ff_error(FF_ERR_UNSUPPORTED, "%s: '%s': dtype '%s' is unsupported (supported: <f2 <f4 <f8 |i1 <i2 <i4 <i8 |u1 |b1 <c8 <c16)",
                    LOAD_FN, path, d);
}

/* ---- load ------------------------------------------------------------------------ */
ff_tensor *ff_npy_load_on(ff_backend *be, const char *path)
{
    if (!be) return ff_error(FF_ERR_INVALID, "%s: backend is NULL", LOAD_FN), NULL;
    int fd;
    uint64_t size;
    if (ff_io_open_read(path, &fd, &size, LOAD_FN)) return NULL;
    unsigned char pre[12];
    char *text = NULL;
    unsigned char *bools = NULL;
    ff_tensor *t = NULL, *out = NULL;
    if (size < 10) {
        ff_error(FF_ERR_IO, "%s: '%s' is %llu bytes, too short for a .npy header", LOAD_FN, path,
                 (unsigned long long)size);
        goto done;
    }
    if (ff_io_pread(fd, pre, 10, 0, path, LOAD_FN)) goto done;
    if (memcmp(pre, "\x93NUMPY", 6) != 0) {
        bad(path, "not a .npy file (bad magic)");
        goto done;
    }
    if (pre[6] < 1 || pre[6] > 3 || pre[7] != 0) {
        ff_error(FF_ERR_UNSUPPORTED, "%s: '%s': .npy format version %u.%u is unsupported (1.0, 2.0, 3.0 are)",
                 LOAD_FN, path, pre[6], pre[7]);
        goto done;
    }
    uint64_t pre_len = pre[6] == 1 ? 10 : 12, hlen;
    if (pre_len == 12 && (size < 12 || ff_io_pread(fd, pre + 10, 2, 10, path, LOAD_FN))) {
        if (size < 12) ff_error(FF_ERR_IO, "%s: '%s' is truncated inside the header length", LOAD_FN, path);
        goto done;
    }
    hlen = pre_len == 10 ? (uint64_t)pre[8] | (uint64_t)pre[9] << 8
                         : (uint64_t)pre[8] | (uint64_t)pre[9] << 8 | (uint64_t)pre[10] << 16 | (uint64_t)pre[11] << 24;
    if (hlen > NPY_MAX_HEADER) {
        bad(path, "header length %llu exceeds the %u-byte limit", (unsigned long long)hlen, NPY_MAX_HEADER);
        goto done;
    }
    if (hlen > size - pre_len) {
        ff_error(FF_ERR_IO, "%s: '%s': header length says %llu bytes but only %llu follow (truncated or corrupt)",
                 LOAD_FN, path, (unsigned long long)hlen, (unsigned long long)(size - pre_len));
        goto done;
    }
    if (!(text = malloc((size_t)hlen + 1))) {
        ff_error(FF_ERR_OOM, "%s: out of memory", LOAD_FN);
        goto done;
    }
    if (ff_io_pread(fd, text, (size_t)hlen, pre_len, path, LOAD_FN)) goto done;
    text[hlen] = '\0';
    hdr h = {.s = text, .n = (size_t)hlen};
    ff_dtype dtype = FF_F32;
    if (parse_header(&h, path) || parse_descr(h.descr, &dtype, path)) goto done;
    int64_t numel = 1, nbytes;
    for (int d = 0; d < h.ndim; d++)
        if (ff_mul_overflow_i64(numel, h.shape[d], &numel)) {
            bad(path, "shape element count overflows");
            goto done;
        }
    if (ff_mul_overflow_i64(numel, (int64_t)ff_dtype_size(dtype), &nbytes)) {
        bad(path, "shape byte count overflows");
        goto done;
    }
    uint64_t data_start = pre_len + hlen, have = size - data_start;
    if (have != (uint64_t)nbytes) {
        ff_error(have < (uint64_t)nbytes ? FF_ERR_IO : FF_ERR_INVALID,
                 "%s: '%s': shape and dtype need %lld data bytes but the file has %llu%s", LOAD_FN, path,
                 (long long)nbytes, (unsigned long long)have, have < (uint64_t)nbytes ? " (truncated)" : "");
        goto done;
    }
    /* Fortran order: the bytes are the C-order array of the reversed shape. */
    int64_t file_shape[FF_MAX_DIMS];
    for (int d = 0; d < h.ndim; d++) file_shape[d] = h.fortran ? h.shape[h.ndim - 1 - d] : h.shape[d];
    if (dtype == FF_BOOL && nbytes) {
        if (!(bools = malloc((size_t)nbytes))) {
            ff_error(FF_ERR_OOM, "%s: out of memory", LOAD_FN);
            goto done;
        }
        if (ff_io_pread(fd, bools, (size_t)nbytes, data_start, path, LOAD_FN) ||
            ff_io_check_bools(bools, (size_t)nbytes, path, "data", LOAD_FN))
            goto done;
    }
    if (!(t = ff_tensor_new(be, h.ndim, file_shape, dtype, LOAD_FN)) ||
        ff_io_fill_tensor(t, fd, data_start, bools, path, LOAD_FN))
        goto done;
    if (h.fortran && h.ndim > 1) {
        int perm[FF_MAX_DIMS];
        for (int d = 0; d < h.ndim; d++) perm[d] = h.ndim - 1 - d;
        ff_tensor *v = ff_permute(t, perm);
        if (v) out = ff_contiguous(v);
        ff_tensor_release(v);
    } else {
        out = ff_tensor_retain(t);
    }
done:
    ff_tensor_release(t);
    free(text);
    free(bools);
    close(fd);
    return out;
}

ff_tensor *ff_npy_load(const char *path)
{
    ff_backend *be = ff_backend_default();
    return be ? ff_npy_load_on(be, path) : NULL;
}

/* ---- save ------------------------------------------------------------------------ */
ff_status ff_npy_save(const char *path, const ff_tensor *t)
{
    static const char *const descr[] = {
        [FF_F32] = "<f4", [FF_F64] = "<f8", [FF_I32] = "<i4", [FF_I64] = "<i8",
        [FF_U8] = "|u1",  [FF_BOOL] = "|b1", [FF_F16] = "<f2", /* BF16: NumPy has none */
        [FF_I8] = "|i1",  [FF_I16] = "<i2", [FF_C64] = "<c8", [FF_C128] = "<c16",
    };
    if (!t) return ff_error(FF_ERR_INVALID, "%s: tensor is NULL", SAVE_FN);
    if ((unsigned)t->dtype >= sizeof descr / sizeof descr[0] || !descr[t->dtype])
        return ff_error(FF_ERR_UNSUPPORTED, "%s: dtype %s cannot be saved", SAVE_FN, ff_dtype_name(t->dtype));
    char head[64 * 8], shape[FF_MAX_DIMS * 24 + 4];
    size_t k = 0;
    shape[0] = '\0';
    for (int d = 0; d < t->layout.ndim; d++)
        k += (size_t)snprintf(shape + k, sizeof shape - k, "%lld, ", (long long)t->layout.shape[d]);
    if (t->layout.ndim > 1) shape[k - 2] = '\0'; /* (2, 3) but (5,) */
    else if (t->layout.ndim == 1) shape[k - 1] = '\0';
    int n = snprintf(head + 10, sizeof head - 10, "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }",
                     descr[t->dtype], shape);
    /* numpy.save leaves room for the first dim to grow to 21 digits (in-place appends);
     * doing the same makes our files byte-identical to NumPy's. */
    if (t->layout.ndim > 0) {
        char first[24];
        int digits = snprintf(first, sizeof first, "%lld", (long long)t->layout.shape[0]);
        for (int k2 = digits; k2 < 21; k2++) head[10 + n++] = ' ';
    }
    size_t total = 10 + (size_t)n + 1; /* + '\n' */
    total = (total + 63) / 64 * 64;
    memset(head + 10 + n, ' ', total - 10 - (size_t)n - 1);
    head[total - 1] = '\n';
    memcpy(head, "\x93NUMPY\x01\x00", 8);
    head[8] = (char)((total - 10) & 0xFF);
    head[9] = (char)((total - 10) >> 8);
    ff_io_writer w;
    ff_status st = ff_io_writer_open(&w, path, SAVE_FN);
    if (st) return st;
    st = ff_io_writer_write(&w, head, total, SAVE_FN);
    if (!st) st = ff_io_writer_tensor(&w, t, SAVE_FN);
    if (st) {
        ff_io_writer_abort(&w);
        return st;
    }
    return ff_io_writer_commit(&w, SAVE_FN);
}
