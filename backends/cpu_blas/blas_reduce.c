/*
 * Reductions over the axes in axes_mask; dst is in keepdim form. Semantics are the
 * reference's (backends/cpu/cpu_reduce.c): float SUM/PROD accumulate in double, integer
 * ones wrap in 64 bits; MAX/MIN propagate the first NaN; ARG* return the first index of
 * the extreme (NaN counts as the extreme); ANY/ALL write BOOL; empty SUM 0, PROD 1.
 *
 * Fast paths (f32/f64 source, SUM/MAX/MIN, dense source and dense dst):
 *   - inner: the reduced axes are the trailing ones (a row sum, or everything): each
 *     row is summed by blas_vsum_* (32 double lanes, pairwise over blocks); one row is
 *     split across threads, many rows are distributed over them;
 *   - outer: the reduced axes are the leading ones (a column sum): rows are added into
 *     a vector of double accumulators, threads split the columns;
 *   - window: kept, reduced, kept axes ([A, R, B] over R: pooling windows, x.sum(1) of
 *     [4, 4, 256, 256]): tiles of 2048 columns of each of the A blocks, the R rows added
 *     into double accumulators (as the outer form), tiles split across threads. The
 *     general path took 2.9 ms for that sum (19.8x PyTorch's time), this one ~0.07 ms;
 *   - middle: reduced, then kept, then reduced axes (batch norm's statistics over N and
 *     H*W of [N, C, H, W]): each kept position is rows of contiguous runs, each run
 *     summed as in the inner path; threads split the kept positions. The general path's
 *     per-element accumulator walk took 4.6 ms for this on [64, 16, 28, 28] f32 (35x a
 *     full sum of the same array); this path 0.17 ms (1 thread).
 * Everything else takes the general path: one accumulator per output, one row-major
 * pass over src.
 */
#include <stdlib.h>

#include "blas_impl.h"


static int is_arg(ff_reduce_op op) { return ffb_reduce_is_arg(op); }

static ff_status check_reduce(void *ctx, ff_reduce_op op, const ff_view *dst, const ff_view *src, uint32_t mask,
                              int *axis)
{
    return ffb_reduce_check(ctx ? ((blas_ctx *)ctx)->host : NULL, "cpu_blas", op, dst, src, mask, axis);
}

/* ---- fast paths ---------------------------------------------------------------------- */
/* Row-major dense, ignoring size-1 dims (their strides are meaningless). */
static int dense(const ff_view *v)
{
    int64_t expect = 1;
    for (int d = v->ndim - 1; d >= 0; d--) {
        if (v->shape[d] == 1) continue;
        if (v->strides[d] != expect) return 0;
        expect *= v->shape[d];
    }
    return 1;
}

/* Columns per tile: 2048 double accumulators (16 KiB, in L1 beside 8 rows' lines).
 * Measured on [4, 4, 256, 256] (in cache) and [8, 32, 256, 256] (beyond it), one thread:
 * 4096 was 15% slower in cache and as fast beyond it; 8192 and up spill the accumulators
 * from L1 and lost 40% in cache. Past the caches (a source over FAR_BYTES) the tile is
 * FAR_TILE instead, 128 KiB of accumulators in L2: each row is then read in runs of 64
 * KiB, not 8 KiB, and the 8 rows' streams keep the prefetchers busy longer per start. On
 * a Zen 5 EPYC, x.sum(1) of [8, 32, 256, 256] (64 MiB) went 2.8-3.0 -> 2.1-2.2 ms, while
 * [4, 4, 256, 256] (4 MiB) is 0.07 ms at 2048 and 0.12 ms at 16384. What remains is the
 * conversion to double (the reference's bits): the same 8-row pass with f32 accumulators
 * reads at ~55 GB/s, with double ones at ~30, wherever x lies: so past the caches each 8
 * rows are added in f32 first (sum_rows_f32_pairs), 2.1 -> 1.6-1.7 ms (0.78 of a memcpy
 * of the same bytes; 2 threads: 1.3 ms). */
#define WIDE_TILE 2048
#define FAR_TILE 16384
#define FAR_BYTES ((int64_t)16 << 20)

typedef struct red_arg {
    ff_reduce_op op;
    ff_dtype t, dt;
    const char *src; /* first element */
    char *dst;       /* first element */
    int64_t rows, len;
    int64_t kept;    /* middle: kept positions between the leading and trailing reduced dims */
    int64_t tiles;   /* window: column tiles per block */
    int far;         /* window: the source is past the caches (FAR_BYTES): FAR_TILE, f32 pairs */
    blas_ctx *ctx;     /* window: FAR_TILE accumulators come from its allocator */
    atomic_int failed; /* window: a task's FAR_TILE accumulators could not be allocated */
    double *acc;     /* outer: len accumulators */
    double partial[64];
} red_arg;

/* One contiguous run of n values reduced to a double (NaN kept for MAX/MIN). */
static double reduce_run(ff_reduce_op op, ff_dtype t, const char *p, int64_t n)
{
    if (t == FF_F32) {
        const float *x = (const float *)p;
        if (op == FF_REDUCE_SUM) return blas_vsum_f32(n, x);
        return op == FF_REDUCE_MAX ? blas_vmax_f32(n, x) : blas_vmin_f32(n, x);
    }
    const double *x = (const double *)p;
    if (op == FF_REDUCE_SUM) return blas_vsum_f64(n, x);
    double best = x[0];
    for (int64_t i = 0; i < n; i++) {
        if (x[i] != x[i]) return x[i];
        if (op == FF_REDUCE_MAX ? x[i] > best : x[i] < best) best = x[i];
    }
    return best;
}

static double combine(ff_reduce_op op, double a, double b)
{
    if (op == FF_REDUCE_SUM) return a + b;
    if (a != a) return a;
    if (b != b) return b;
    return op == FF_REDUCE_MAX ? (b > a ? b : a) : (b < a ? b : a);
}

static void rows_task(void *varg, int64_t begin, int64_t end)
{
    red_arg *a = varg;
    int64_t es = (int64_t)ff_dtype_size(a->t), ds = (int64_t)ff_dtype_size(a->dt);
    for (int64_t r = begin; r < end; r++)
        ffb_st_f64(a->dst + r * ds, a->dt, reduce_run(a->op, a->t, a->src + r * a->len * es, a->len));
}

/* One long row split in chunks; chunk i's result goes to partial[i]. */
static void chunks_task(void *varg, int64_t begin, int64_t end)
{
    red_arg *a = varg;
    int64_t es = (int64_t)ff_dtype_size(a->t);
    int64_t per = (a->len + 63) / 64;
    for (int64_t c = begin; c < end; c++) {
        int64_t b = c * per, e = b + per < a->len ? b + per : a->len;
        a->partial[c] = b < e ? reduce_run(a->op, a->t, a->src + b * es, e - b) : (a->op == FF_REDUCE_SUM ? 0.0 : NAN);
    }
}

/* Column sums prefetch each row this many elements ahead (2 KiB of f32): 10% faster than
 * the hardware prefetchers alone on x.sum(1) of [8, 32, 256, 256], 4 and 8 KiB were slower. */
#define PF_AHEAD 512

/* acc[0..n) = the sum over rows of x[r * L + j], in double, in row order: ((0 + x0) + x1)
 * + ..., 8 (then 4) rows per pass over acc, each pass one vectorized loop. */
BLAS_CLONES static void sum_rows_f32(double *acc, const float *x, int64_t rows, int64_t L, int64_t n)
{
    int64_t r;
    for (int64_t j = 0; j < n; j++) acc[j] = 0.0 + x[j]; /* 0 + x: -0 sums to +0 */
    for (r = 1; r + 8 <= rows; r += 8) {
        const float *x0 = x + r * L, *x1 = x0 + L, *x2 = x1 + L, *x3 = x2 + L;
        const float *x4 = x3 + L, *x5 = x4 + L, *x6 = x5 + L, *x7 = x6 + L;
        for (int64_t b = 0; b < n; b += 64) { /* 4 lines of each row, PF_AHEAD on */
            int64_t e = b + 64 < n ? b + 64 : n;
            for (int k = 0; k < 64; k += 16) {
                __builtin_prefetch(x0 + b + PF_AHEAD + k), __builtin_prefetch(x1 + b + PF_AHEAD + k);
                __builtin_prefetch(x2 + b + PF_AHEAD + k), __builtin_prefetch(x3 + b + PF_AHEAD + k);
                __builtin_prefetch(x4 + b + PF_AHEAD + k), __builtin_prefetch(x5 + b + PF_AHEAD + k);
                __builtin_prefetch(x6 + b + PF_AHEAD + k), __builtin_prefetch(x7 + b + PF_AHEAD + k);
            }
            for (int64_t j = b; j < e; j++)
                acc[j] = acc[j] + x0[j] + x1[j] + x2[j] + x3[j] + x4[j] + x5[j] + x6[j] + x7[j];
        }
    }
    for (; r + 4 <= rows; r += 4) {
        const float *x0 = x + r * L, *x1 = x0 + L, *x2 = x1 + L, *x3 = x2 + L;
        for (int64_t j = 0; j < n; j++) acc[j] = acc[j] + x0[j] + x1[j] + x2[j] + x3[j];
    }
    for (; r < rows; r++)
        for (int64_t j = 0; j < n; j++) acc[j] += x[r * L + j];
}

/* The same sum past the caches (FAR_TILE): each 8 rows added pairwise in f32, ((x0 + x1)
 * + (x2 + x3)) + ((x4 + x5) + (x6 + x7)), and that into the double accumulators. Three
 * f32 roundings deep per block, then a double running sum: within the ABI's rule (at
 * least as accurate as f32 pairwise summation: log2(rows) roundings deep), not the
 * reference's bits. One conversion and one double add per 8 values instead of 8 each.
 * No software prefetch: the 8 rows' streams are 64 KiB runs here, which the hardware
 * prefetchers follow (with the 2 KiB-ahead hints of sum_rows_f32 it was 10-20% slower). As any f32 pairwise
 * sum, a pair past FLT_MAX overflows where the double sum might come back in range. */
BLAS_CLONES static void sum_rows_f32_pairs(double *acc, const float *x, int64_t rows, int64_t L, int64_t n)
{
    int64_t r = 0;
    for (int64_t j = 0; j < n; j++) acc[j] = 0.0;
    for (; r + 8 <= rows; r += 8) {
        const float *x0 = x + r * L, *x1 = x0 + L, *x2 = x1 + L, *x3 = x2 + L;
        const float *x4 = x3 + L, *x5 = x4 + L, *x6 = x5 + L, *x7 = x6 + L;
        for (int64_t j = 0; j < n; j++)
            acc[j] += (double)(((x0[j] + x1[j]) + (x2[j] + x3[j])) + ((x4[j] + x5[j]) + (x6[j] + x7[j])));
    }
    for (; r < rows; r++)
        for (int64_t j = 0; j < n; j++) acc[j] += x[r * L + j];
}

BLAS_CLONES static void sum_rows_f64(double *acc, const double *x, int64_t rows, int64_t L, int64_t n)
{
    int64_t r;
    for (int64_t j = 0; j < n; j++) acc[j] = 0.0 + x[j];
    for (r = 1; r + 4 <= rows; r += 4) {
        const double *x0 = x + r * L, *x1 = x0 + L, *x2 = x1 + L, *x3 = x2 + L;
        for (int64_t j = 0; j < n; j++) acc[j] = acc[j] + x0[j] + x1[j] + x2[j] + x3[j];
    }
    for (; r < rows; r++)
        for (int64_t j = 0; j < n; j++) acc[j] += x[r * L + j];
}

/* n columns of a rows x a->len block (row stride a->len) at src, accumulated over the
 * rows into acc[0..n) in double (a running double sum over rows: error rows * 2^-53,
 * well inside the f32 pairwise bound, and the reference's bits), then stored to
 * dst[0..n). Cloned per ISA: the f32 -> double widening and adds vectorize to 8 lanes
 * on AVX-512. */
BLAS_CLONES static void cols_reduce(const red_arg *a, const char *src, char *dst, double *acc, int64_t n)
{
    /* MAX/MIN as selects, not branches (random data mispredicts every other one): the
     * first row starts the extremes, a NaN once taken stays (m == m fails) */
    int is_max = a->op == FF_REDUCE_MAX, f32 = a->t == FF_F32;
    int64_t r = 0, L = a->len;
    if (a->op == FF_REDUCE_SUM) {
        if (f32 && a->far) sum_rows_f32_pairs(acc, (const float *)src, a->rows, L, n);
        else if (f32) sum_rows_f32(acc, (const float *)src, a->rows, L, n);
        else sum_rows_f64(acc, (const double *)src, a->rows, L, n);
        r = a->rows;
    }
    for (; r < a->rows; r++) {
        const float *xf = (const float *)src + r * L;
        const double *xd = (const double *)src + r * L;
        if (r == 0) {
            for (int64_t j = 0; j < n; j++) acc[j] = f32 ? (double)xf[j] : xd[j];
        } else if (f32) {
            for (int64_t j = 0; j < n; j++) {
                double v = xf[j], m = acc[j];
                acc[j] = m == m && (v != v || (is_max ? v > m : v < m)) ? v : m;
            }
        } else {
            for (int64_t j = 0; j < n; j++) {
                double v = xd[j], m = acc[j];
                acc[j] = m == m && (v != v || (is_max ? v > m : v < m)) ? v : m;
            }
        }
    }
    int64_t ds = (int64_t)ff_dtype_size(a->dt);
    if (a->dt == FF_F32) for (int64_t j = 0; j < n; j++) ((float *)dst)[j] = (float)acc[j];
    else if (a->dt == FF_F64) memcpy(dst, acc, (size_t)n * sizeof(double));
    else for (int64_t j = 0; j < n; j++) ffb_st_f64(dst + j * ds, a->dt, acc[j]);
}

/* Columns [begin, end) of the outer form (one rows x len block). */
static void cols_task(void *varg, int64_t begin, int64_t end)
{
    red_arg *a = varg;
    int64_t es = (int64_t)ff_dtype_size(a->t), ds = (int64_t)ff_dtype_size(a->dt);
    cols_reduce(a, a->src + begin * es, a->dst + begin * ds, a->acc + begin, end - begin);
}

/* Tasks [begin, end) of the kept-reduced-kept form (kept blocks of rows x len each: the
 * windows of a pooling, x.sum(1) of [A, R, B]): task t is block t / a->tiles, columns
 * tile t % a->tiles of tile_of(a) columns, reduced as the outer form into its outputs. */
static int64_t tile_of(const red_arg *a) { return a->far ? FAR_TILE : WIDE_TILE; }

static void blocks_task(void *varg, int64_t begin, int64_t end)
{
    red_arg *a = varg;
    int64_t es = (int64_t)ff_dtype_size(a->t), ds = (int64_t)ff_dtype_size(a->dt), T = tile_of(a);
    /* the far tile's 128 KiB from the caching allocator: a malloc of that size is an mmap
     * and fresh pages on every call */
    double near[WIDE_TILE], *acc = a->far ? blas_scratch(a->ctx, (size_t)T * sizeof(double)) : near;
    if (!acc) {
        atomic_store(&a->failed, 1);
        return;
    }
    for (int64_t t = begin; t < end; t++) {
        int64_t k = t / a->tiles, b = (t % a->tiles) * T, n = a->len - b < T ? a->len - b : T;
        cols_reduce(a, a->src + (k * a->rows * a->len + b) * es, a->dst + (k * a->len + b) * ds, acc, n);
    }
    if (acc != near) blas_free(a->ctx, acc);
}

/* Kept positions [begin, end) of a rows x kept x len block, reduced over rows and len:
 * each position is rows runs of len contiguous values, combined in order. */
static void mid_task(void *varg, int64_t begin, int64_t end)
{
    red_arg *a = varg;
    int64_t es = (int64_t)ff_dtype_size(a->t), ds = (int64_t)ff_dtype_size(a->dt);
    for (int64_t k = begin; k < end; k++) {
        double r = 0.0;
        for (int64_t i = 0; i < a->rows; i++) {
            double v = reduce_run(a->op, a->t, a->src + (i * a->kept + k) * a->len * es, a->len);
            r = i ? combine(a->op, r, v) : v;
        }
        ffb_st_f64(a->dst + k * ds, a->dt, r);
    }
}

/* Returns 1 if handled. */
static int reduce_fast(blas_ctx *c, ff_reduce_op op, const ff_view *dst, const ff_view *src, uint32_t mask)
{
    if (!blas_is_float(src->dtype) || !(op == FF_REDUCE_SUM || op == FF_REDUCE_MAX || op == FF_REDUCE_MIN)) return 0;
    if (!blas_is_float(dst->dtype) || !dense(src) || !dense(dst)) return 0;
    /* Group the non-trivial dims into runs of reduced and kept ones; the fast forms are
     *   [K] R (inner: a row sum, or everything), R K (outer: a column sum),
     *   R K R (middle: batch norm's statistics over N and H*W of [N, C, H, W]),
     *   K R K (window: the K windows of a pooling, [N*C, K, OH*OW]). */
    int ng = 0, red[4];
    int64_t size[4], numel = 1;
    for (int d = 0; d < src->ndim; d++) {
        if (src->shape[d] == 1) continue;
        int r = (mask >> d) & 1u;
        numel *= src->shape[d];
        if (ng > 0 && red[ng - 1] == r) {
            size[ng - 1] *= src->shape[d];
        } else {
            if (ng == 4) return 0;
            red[ng] = r, size[ng] = src->shape[d], ng++;
        }
    }
    int inner = ng == 0 || (ng == 1 && red[0]) || (ng == 1 && !red[0]) || (ng == 2 && !red[0]);
    int outer = ng == 2 && red[0];
    int middle = ng == 3 && red[0];
    int window = ng == 3 && !red[0];
    int64_t rows = 1, len = 1;
    int64_t es = (int64_t)ff_dtype_size(src->dtype);
    red_arg a = {.op = op, .t = src->dtype, .dt = dst->dtype,
                 .src = (const char *)src->buf + src->offset * es,
                 .dst = (char *)dst->buf + dst->offset * (int64_t)ff_dtype_size(dst->dtype)};
    int64_t nout = ff_view_numel(dst);
    if (inner) {
        rows = nout;
        len = numel / nout;
        a.rows = rows, a.len = len;
        if (rows == 1 && len >= 2 * BLAS_PAR_MIN && c->nthreads > 1) {
            /* one long row: 64 chunks spread over the threads, combined in order */
            blas_parallel_for(c, 64, 2, 1, chunks_task, &a);
            double r = a.partial[0];
            for (int i = 1; i < 64; i++) r = combine(op, r, a.partial[i]);
            ffb_st_f64(a.dst, a.dt, r);
        } else {
            int64_t min_rows = len >= BLAS_PAR_MIN ? 2 : (BLAS_PAR_MIN + len - 1) / len;
            blas_parallel_for(c, rows, min_rows, 1, rows_task, &a);
        }
        return 1;
    }
    if (middle || window) {
        a.rows = middle ? size[0] : size[1], a.kept = middle ? size[1] : size[0], a.len = size[2];
        a.far = numel * es > FAR_BYTES, a.ctx = c;
        int64_t tile = tile_of(&a);
        a.tiles = (a.len + tile - 1) / tile;
        atomic_init(&a.failed, 0);
        int64_t tasks = middle ? a.kept : a.kept * a.tiles;
        int64_t per = middle ? a.rows * a.len : a.rows * (a.len < tile ? a.len : tile);
        int64_t min_tasks = per >= BLAS_PAR_MIN ? 2 : (BLAS_PAR_MIN + per - 1) / per;
        blas_parallel_for(c, tasks, min_tasks, 1, middle ? mid_task : blocks_task, &a);
        return !atomic_load(&a.failed); /* else the general path, which reports an OOM itself */
    }
    if (outer) {
        len = nout;
        rows = numel / nout;
        a.rows = rows, a.len = len;
        a.acc = calloc((size_t)len, sizeof(double));
        if (!a.acc) return 0; /* the general path reports OOM */
        int64_t min_cols = rows >= BLAS_PAR_MIN ? 64 : (BLAS_PAR_MIN + rows - 1) / rows;
        blas_parallel_for(c, len, min_cols, 16, cols_task, &a);
        free(a.acc);
        return 1;
    }
    return 0;
}

/* ---- general path -------------------------------------------------------------------- */
/* accumulators, their folding rules and the final store: ffb_reduce_acc (ff_backend_scalar.h) */
typedef ffb_reduce_acc acc_t;

static ff_status reduce_general(blas_ctx *c, ff_reduce_op op, const ff_view *dst, const ff_view *src, uint32_t mask,
                                int axis)
{
    int64_t nout = ff_view_numel(dst);
    acc_t *acc = malloc((size_t)nout * sizeof *acc);
    if (!acc) return blas_error(c, FF_ERR_OOM, "cpu_blas reduce: out of memory for %lld accumulators", (long long)nout);
    for (int64_t j = 0; j < nout; j++) ffb_reduce_acc_init(&acc[j], op);
    /* accumulator index strides: row-major over dst's shape, 0 on reduced axes */
    int nd = src->ndim;
    int64_t astr[FF_MAX_DIMS], stride = 1;
    for (int d = nd - 1; d >= 0; d--) {
        astr[d] = ((mask >> d) & 1u) ? 0 : stride;
        stride *= dst->shape[d];
    }
    int float_acc = blas_is_float(src->dtype) ||
                    ((op == FF_REDUCE_SUM || op == FF_REDUCE_PROD) && blas_is_float(dst->dtype));
    int64_t es = (int64_t)ff_dtype_size(src->dtype);
    const char *sbase = (const char *)src->buf + src->offset * es;
    int64_t numel = ff_view_numel(src);
    int64_t idx[FF_MAX_DIMS] = {0}, so = 0, ao = 0;
    for (int64_t n = 0; n < numel; n++) {
        int64_t k = axis >= 0 ? idx[axis] : 0;
        if (float_acc) ffb_reduce_acc_float(&acc[ao], op, ffb_ld_f64(sbase + so * es, src->dtype), k);
        else ffb_reduce_acc_int(&acc[ao], op, ffb_ld_i64(sbase + so * es, src->dtype), k);
        for (int d = nd - 1; d >= 0; d--) {
            if (++idx[d] < src->shape[d]) {
                so += src->strides[d];
                ao += astr[d];
                break;
            }
            idx[d] = 0;
            so -= src->strides[d] * (src->shape[d] - 1);
            ao -= astr[d] * (src->shape[d] - 1);
        }
    }
    /* write out in dst's row-major order */
    int64_t ds = (int64_t)ff_dtype_size(dst->dtype);
    char *dbase = (char *)dst->buf + dst->offset * ds;
    int64_t didx[FF_MAX_DIMS] = {0}, doff = 0;
    for (int64_t j = 0; j < nout; j++) {
        ffb_reduce_acc_store(&acc[j], op, float_acc, dbase + doff * ds, dst->dtype);
        for (int d = nd - 1; d >= 0; d--) {
            if (++didx[d] < dst->shape[d]) {
                doff += dst->strides[d];
                break;
            }
            didx[d] = 0;
            doff -= dst->strides[d] * (dst->shape[d] - 1);
        }
    }
    free(acc);
    return FF_OK;
}

ff_status blas_reduce(void *ctx, ff_reduce_op op, const ff_view *dst, const ff_view *src, uint32_t axes_mask)
{
    if (src && ffb_is_half(src->dtype)) return blas_half_reduce(ctx, op, dst, src, axes_mask);
    int axis = -1;
    ff_status st = check_reduce(ctx, op, dst, src, axes_mask, &axis);
    if (st) return st;
    if (ff_view_numel(dst) == 0) return FF_OK;
    if (ff_view_numel(src) == 0) {
        if (op == FF_REDUCE_MAX || op == FF_REDUCE_MIN || is_arg(op))
            return blas_error(ctx, FF_ERR_INVALID, "cpu_blas reduce: op %d of an empty set", (int)op);
        return reduce_general(ctx, op, dst, src, axes_mask, axis);
    }
    if (reduce_fast(ctx, op, dst, src, axes_mask)) return FF_OK;
    return reduce_general(ctx, op, dst, src, axes_mask, axis);
}
