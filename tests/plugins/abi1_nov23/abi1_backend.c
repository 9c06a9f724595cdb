/*
 * An ABI 1 plugin as an outsider wrote it on November 23, from that day's guide
 * (docs/writing-a-backend.md and backends/cuda_stub at commit 422c395) and that day's
 * header, kept here as include/ff/backend_abi.h; the per-element formulas are that
 * day's backends/common/ff_backend_scalar.h, which the guide points device writers to.
 *
 * It is kept as it was, never brought up to date: it is what ff-conformance must go on
 * passing (tests/plugins/CMakeLists.txt). Its struct_size ends at that header's last
 * entry, before abi_step existed, so the loader and the suite hold it to the rules of
 * its step (backend_abi.h, "Rules steps"). It makes the choices that were natural then
 * and are not today's rules:
 *   - relu(x) = x > 0 ? x : 0, so relu(-0) = +0;
 *   - maximum/minimum and the max/min reductions keep the later of two tied zeros;
 *   - it declines F16/BF16 everywhere, copy and fill included (half tensors cannot live
 *     on it; the suite must count those cases as skipped).
 * Required entries only, host memory, one element at a time.
 */
#include <stdlib.h>
#include <string.h>

#include "ff/backend_abi.h"
#include "ff_backend_scalar.h"

static const ff_host_api *g_host;

static ff_status fail(ff_status st, const char *what)
{
    if (g_host) g_host->set_error("abi1_nov23 %s", what);
    return st;
}

/* ---- element addressing --------------------------------------------------------- */

static char *at(const ff_view *v, const int64_t *idx)
{
    int64_t off = v->offset;
    for (int d = 0; d < v->ndim; d++) off += idx[d] * v->strides[d];
    return (char *)v->buf + off * (int64_t)ff_dtype_size(v->dtype);
}

/* Advances idx over shape in row-major order; 0 once it wraps around. */
static int next(int64_t *idx, int ndim, const int64_t *shape)
{
    for (int d = ndim - 1; d >= 0; d--) {
        if (++idx[d] < shape[d]) return 1;
        idx[d] = 0;
    }
    return 0;
}

static int64_t numel(const ff_view *v)
{
    int64_t n = 1;
    for (int d = 0; d < v->ndim; d++) n *= v->shape[d];
    return n;
}

/* ---- the old rules: relu, and ties of zeros in max/min -------------------------- */

static double old_unary(ff_unary_op op, double x)
{
    if (op == FF_UNARY_RELU) return isnan(x) ? x : x > 0 ? x : 0;
    return ffb_unary_f64(op, x);
}

static double old_binary(ff_binary_op op, double x, double y)
{
    if (isnan(x) || isnan(y)) return ffb_binary_f64(op, x, y);
    if (op == FF_BINARY_MAXIMUM) return x > y ? x : y;
    if (op == FF_BINARY_MINIMUM) return x < y ? x : y;
    return ffb_binary_f64(op, x, y);
}

/* ---- lifecycle and memory -------------------------------------------------------- */

static ff_status old_init(const ff_host_api *host, void **ctx)
{
    g_host = host;
    *ctx = NULL;
    return FF_OK;
}

static void old_shutdown(void *ctx) { (void)ctx; }

static int old_dtype_ok(ff_dtype t) { return ffb_dtype_ok(t); } /* no F16/BF16 */

static int old_unary_op(int op)
{
    switch (op) {
    case FF_UNARY_NEG: case FF_UNARY_ABS: case FF_UNARY_SIGN: case FF_UNARY_EXP: case FF_UNARY_LOG:
    case FF_UNARY_LOG1P: case FF_UNARY_EXPM1: case FF_UNARY_SQRT: case FF_UNARY_RSQRT: case FF_UNARY_SQUARE:
    case FF_UNARY_RECIPROCAL: case FF_UNARY_SIN: case FF_UNARY_COS: case FF_UNARY_TANH: case FF_UNARY_SIGMOID:
    case FF_UNARY_RELU: case FF_UNARY_GELU_TANH: case FF_UNARY_GELU_ERF: case FF_UNARY_SILU: case FF_UNARY_SOFTPLUS:
    case FF_UNARY_FLOOR: case FF_UNARY_CEIL: case FF_UNARY_ROUND: case FF_UNARY_ISNAN: case FF_UNARY_ISINF:
    case FF_UNARY_LOGICAL_NOT: case FF_UNARY_ERF:
        return 1;
    default:
        return 0;
    }
}

static int old_binary_op(int op)
{
    switch (op) {
    case FF_BINARY_ADD: case FF_BINARY_SUB: case FF_BINARY_MUL: case FF_BINARY_DIV: case FF_BINARY_POW:
    case FF_BINARY_MAXIMUM: case FF_BINARY_MINIMUM: case FF_BINARY_FMOD: case FF_BINARY_EQ: case FF_BINARY_NE:
    case FF_BINARY_LT: case FF_BINARY_LE: case FF_BINARY_GT: case FF_BINARY_GE: case FF_BINARY_LOGICAL_AND:
    case FF_BINARY_LOGICAL_OR: case FF_BINARY_LOGICAL_XOR:
        return 1;
    default:
        return 0;
    }
}

static int old_supports(void *ctx, ff_op_kind kind, int op, ff_dtype t)
{
    (void)ctx;
    if (!old_dtype_ok(t)) return 0;
    switch (kind) {
    case FF_KIND_FILL: return op == 0;
    case FF_KIND_COPY: return op >= 0 && op < FF_DTYPE_COUNT && old_dtype_ok((ff_dtype)op);
    case FF_KIND_UNARY: return old_unary_op(op) && ffb_unary_supported((ff_unary_op)op, t);
    case FF_KIND_BINARY: return old_binary_op(op) && ffb_binary_supported((ff_binary_op)op, t);
    case FF_KIND_REDUCE: return ffb_reduce_supported((ff_reduce_op)op, t);
    case FF_KIND_MATMUL: return op == 0 && ffb_is_float(t);
    case FF_KIND_WHERE: return op == 0;
    case FF_KIND_GATHER: return op == 0;
    case FF_KIND_SCATTER_ADD: return op == 0 && t != FF_BOOL;
    case FF_KIND_RANDOM: return (op == FF_RANDOM_UNIFORM || op == FF_RANDOM_NORMAL) && ffb_is_float(t);
    default: return 0;
    }
}

static void *old_alloc(void *ctx, size_t nbytes)
{
    (void)ctx;
    void *p = malloc(nbytes ? nbytes : 1);
    if (!p) fail(FF_ERR_OOM, "alloc: out of memory");
    return p;
}

static void old_free(void *ctx, void *buf)
{
    (void)ctx;
    free(buf);
}

static ff_status old_upload(void *ctx, void *buf, size_t off, const void *host, size_t n)
{
    (void)ctx;
    if (n) memcpy((char *)buf + off, host, n);
    return FF_OK;
}

static ff_status old_download(void *ctx, const void *buf, size_t off, void *host, size_t n)
{
    (void)ctx;
    if (n) memcpy(host, (const char *)buf + off, n);
    return FF_OK;
}

static ff_status old_sync(void *ctx)
{
    (void)ctx;
    return FF_OK;
}

/* ---- compute ----------------------------------------------------------------------- */

static ff_status old_fill(void *ctx, const ff_view *dst, ff_scalar v)
{
    (void)ctx;
    if (numel(dst) == 0) return FF_OK;
    int64_t idx[FF_MAX_DIMS] = {0};
    do {
        if (ffb_is_float(dst->dtype)) ffb_st_f64(at(dst, idx), dst->dtype, v.f);
        else ffb_st_i64(at(dst, idx), dst->dtype, v.i);
    } while (next(idx, dst->ndim, dst->shape));
    return FF_OK;
}

static ff_status old_copy(void *ctx, const ff_view *dst, const ff_view *src)
{
    (void)ctx;
    if (!old_dtype_ok(dst->dtype) || !old_dtype_ok(src->dtype)) return fail(FF_ERR_UNSUPPORTED, "copy: dtype");
    if (numel(dst) == 0) return FF_OK;
    int64_t idx[FF_MAX_DIMS] = {0};
    do {
        const char *s = at(src, idx);
        if (ffb_is_float(src->dtype)) ffb_st_f64(at(dst, idx), dst->dtype, ffb_ld_f64(s, src->dtype));
        else ffb_st_i64(at(dst, idx), dst->dtype, ffb_ld_i64(s, src->dtype));
    } while (next(idx, dst->ndim, dst->shape));
    return FF_OK;
}

static ff_status old_unary_entry(void *ctx, ff_unary_op op, const ff_view *dst, const ff_view *src)
{
    if (!old_supports(ctx, FF_KIND_UNARY, op, src->dtype)) return fail(FF_ERR_UNSUPPORTED, "unary: op or dtype");
    if (numel(dst) == 0) return FF_OK;
    ff_unary_op eff = ffb_unary_effective(op, src->dtype);
    int64_t idx[FF_MAX_DIMS] = {0};
    do {
        const char *s = at(src, idx);
        if (ffb_is_float(src->dtype)) ffb_st_f64(at(dst, idx), dst->dtype, old_unary(eff, ffb_ld_f64(s, src->dtype)));
        else ffb_st_i64(at(dst, idx), dst->dtype, ffb_unary_i64(eff, ffb_ld_i64(s, src->dtype)));
    } while (next(idx, dst->ndim, dst->shape));
    return FF_OK;
}

static ff_status old_binary_entry(void *ctx, ff_binary_op op, const ff_view *dst, const ff_view *a, const ff_view *b)
{
    if (!old_supports(ctx, FF_KIND_BINARY, op, a->dtype)) return fail(FF_ERR_UNSUPPORTED, "binary: op or dtype");
    if (numel(dst) == 0) return FF_OK;
    int64_t idx[FF_MAX_DIMS] = {0};
    do {
        const char *pa = at(a, idx), *pb = at(b, idx);
        if (ffb_is_float(a->dtype))
            ffb_st_f64(at(dst, idx), dst->dtype, old_binary(op, ffb_ld_f64(pa, a->dtype), ffb_ld_f64(pb, b->dtype)));
        else
            ffb_st_i64(at(dst, idx), dst->dtype, ffb_binary_i64(op, ffb_ld_i64(pa, a->dtype), ffb_ld_i64(pb, b->dtype)));
    } while (next(idx, dst->ndim, dst->shape));
    return FF_OK;
}

/* MAX/MIN keep the later of equal elements (>=, <=): two tied zeros give the last one. */
static void old_reduce_float(ffb_reduce_acc *acc, ff_reduce_op op, double x, int64_t k)
{
    if (op == FF_REDUCE_MAX && !isnan(acc->f) && (isnan(x) || x >= acc->f)) acc->f = x;
    else if (op == FF_REDUCE_MIN && !isnan(acc->f) && (isnan(x) || x <= acc->f)) acc->f = x;
    else if (op != FF_REDUCE_MAX && op != FF_REDUCE_MIN) ffb_reduce_acc_float(acc, op, x, k);
}

static ff_status old_reduce(void *ctx, ff_reduce_op op, const ff_view *dst, const ff_view *src, uint32_t mask)
{
    if (!old_supports(ctx, FF_KIND_REDUCE, op, src->dtype)) return fail(FF_ERR_UNSUPPORTED, "reduce: op or dtype");
    if (numel(dst) == 0) return FF_OK;
    const int fl = ffb_is_float(src->dtype);
    int64_t inner[FF_MAX_DIMS]; /* the reduced sub-shape: 1 on kept axes */
    for (int d = 0; d < src->ndim; d++) inner[d] = (mask >> d) & 1u ? src->shape[d] : 1;
    int64_t o[FF_MAX_DIMS] = {0};
    do {
        ffb_reduce_acc acc;
        ffb_reduce_acc_init(&acc, op);
        int64_t r[FF_MAX_DIMS] = {0}, s[FF_MAX_DIMS], k = 0;
        int empty = 0;
        for (int d = 0; d < src->ndim; d++) empty |= inner[d] == 0;
        if (!empty) {
            do {
                for (int d = 0; d < src->ndim; d++) s[d] = o[d] + r[d];
                const char *p = at(src, s);
                if (fl) old_reduce_float(&acc, op, ffb_ld_f64(p, src->dtype), k);
                else ffb_reduce_acc_int(&acc, op, ffb_ld_i64(p, src->dtype), k);
                k++;
            } while (next(r, src->ndim, inner));
        }
        ffb_reduce_acc_store(&acc, op, fl, at(dst, o), dst->dtype);
    } while (next(o, dst->ndim, dst->shape));
    return FF_OK;
}

static ff_status old_matmul(void *ctx, const ff_view *dst, const ff_view *a, const ff_view *b)
{
    if (!old_supports(ctx, FF_KIND_MATMUL, 0, a->dtype)) return fail(FF_ERR_UNSUPPORTED, "matmul: dtype");
    if (numel(dst) == 0) return FF_OK;
    const int nd = dst->ndim;
    const int64_t K = a->shape[nd - 1];
    int64_t o[FF_MAX_DIMS] = {0}, ia[FF_MAX_DIMS], ib[FF_MAX_DIMS];
    do {
        memcpy(ia, o, sizeof ia);
        memcpy(ib, o, sizeof ib);
        double sum = 0;
        for (int64_t k = 0; k < K; k++) {
            ia[nd - 1] = k;
            ib[nd - 2] = k;
            sum += ffb_ld_f64(at(a, ia), a->dtype) * ffb_ld_f64(at(b, ib), b->dtype);
        }
        ffb_st_f64(at(dst, o), dst->dtype, sum);
    } while (next(o, nd, dst->shape));
    return FF_OK;
}

static ff_status old_where(void *ctx, const ff_view *dst, const ff_view *cond, const ff_view *a, const ff_view *b)
{
    (void)ctx;
    if (numel(dst) == 0) return FF_OK;
    const size_t sz = ff_dtype_size(dst->dtype);
    int64_t idx[FF_MAX_DIMS] = {0};
    do {
        const ff_view *pick = *at(cond, idx) ? a : b;
        memmove(at(dst, idx), at(pick, idx), sz);
    } while (next(idx, dst->ndim, dst->shape));
    return FF_OK;
}

/* Every index is checked before the first write, so a bad one leaves dst as it was. */
static ff_status check_index(const ff_view *index, int64_t size)
{
    if (numel(index) == 0) return FF_OK;
    int64_t idx[FF_MAX_DIMS] = {0};
    do {
        int64_t j = ffb_ld_i64(at(index, idx), index->dtype);
        if (j < 0 || j >= size) return fail(FF_ERR_INDEX, "gather/scatter_add: index out of range");
    } while (next(idx, index->ndim, index->shape));
    return FF_OK;
}

static ff_status old_gather(void *ctx, const ff_view *dst, const ff_view *src, const ff_view *index, int axis)
{
    (void)ctx;
    ff_status st = check_index(index, src->shape[axis]);
    if (st || numel(dst) == 0) return st;
    const size_t sz = ff_dtype_size(dst->dtype);
    int64_t idx[FF_MAX_DIMS] = {0}, s[FF_MAX_DIMS];
    do {
        memcpy(s, idx, sizeof s);
        s[axis] = ffb_ld_i64(at(index, idx), index->dtype);
        memcpy(at(dst, idx), at(src, s), sz);
    } while (next(idx, dst->ndim, dst->shape));
    return FF_OK;
}

static ff_status old_scatter_add(void *ctx, const ff_view *dst, const ff_view *index, const ff_view *src, int axis)
{
    if (!old_supports(ctx, FF_KIND_SCATTER_ADD, 0, dst->dtype)) return fail(FF_ERR_UNSUPPORTED, "scatter_add: dtype");
    ff_status st = check_index(index, dst->shape[axis]);
    if (st || numel(src) == 0) return st;
    int64_t idx[FF_MAX_DIMS] = {0}, d[FF_MAX_DIMS];
    do {
        memcpy(d, idx, sizeof d);
        d[axis] = ffb_ld_i64(at(index, idx), index->dtype);
        char *p = at(dst, d);
        const char *q = at(src, idx);
        if (ffb_is_float(dst->dtype)) ffb_st_f64(p, dst->dtype, ffb_ld_f64(p, dst->dtype) + ffb_ld_f64(q, src->dtype));
        else ffb_st_i64(p, dst->dtype, ffb_binary_i64(FF_BINARY_ADD, ffb_ld_i64(p, dst->dtype), ffb_ld_i64(q, src->dtype)));
    } while (next(idx, src->ndim, src->shape));
    return FF_OK;
}

static ff_status old_random(void *ctx, const ff_view *dst, ff_random_dist dist, uint64_t seed, uint64_t base,
                            double p0, double p1)
{
    if (!old_supports(ctx, FF_KIND_RANDOM, dist, dst->dtype)) return fail(FF_ERR_UNSUPPORTED, "random: dtype");
    if (numel(dst) == 0) return FF_OK;
    int64_t idx[FF_MAX_DIMS] = {0};
    uint64_t n = base;
    do {
        double v = dist == FF_RANDOM_NORMAL ? p0 + p1 * ff_random_normal01(seed, n)
                   : dst->dtype == FF_F32   ? (double)ff_random_uniform_f32(seed, n, p0, p1)
                                            : p0 + (p1 - p0) * ff_random_uniform01(seed, n);
        ffb_st_f64(at(dst, idx), dst->dtype, v);
        n++;
    } while (next(idx, dst->ndim, dst->shape));
    return FF_OK;
}

static const ff_backend_vtable old_vtable = {
    .abi_version = FF_ABI_VERSION,
    .struct_size = sizeof(ff_backend_vtable),
    .name = "abi1_nov23",
    .version = "2026-11-23",
    .description = "an ABI 1 plugin built from the November 23 header and guide (required entries only)",
    .flags = FF_BACKEND_HOST_MEMORY,
    .init = old_init,
    .shutdown = old_shutdown,
    .supports = old_supports,
    .alloc = old_alloc,
    .free = old_free,
    .upload = old_upload,
    .download = old_download,
    .sync = old_sync,
    .fill = old_fill,
    .copy = old_copy,
    .unary = old_unary_entry,
    .binary = old_binary_entry,
    .reduce = old_reduce,
    .matmul = old_matmul,
    .where = old_where,
    .gather = old_gather,
    .scatter_add = old_scatter_add,
    .random = old_random,
};

FF_PLUGIN_EXPORT const ff_backend_vtable *ff_backend_entry(void);
FF_PLUGIN_EXPORT const ff_backend_vtable *ff_backend_entry(void) { return &old_vtable; }
