/*
 * reduce and matmul on F16/BF16.
 *
 * SUM/MAX/MIN over the trailing axes of a dense source (a row sum, or everything) read
 * the halves directly, a run at a time (reduce_inner below). Everything else widens the
 * half operands into dense f32 scratch (vectorized, blas_half.c), runs the f32 entry on
 * it and rounds a half result once on the way back: the core's f32 detour done inside the
 * backend, with the conversions vectorized and threaded and without the core's
 * temporaries, so the values are the detour's bit for bit (the same f32 kernels on the
 * same dense f32 operands): reductions accumulate as the f32 entry does (in double),
 * matmul runs the f32 gemm (f32 products, f32 accumulation in the microkernel, one
 * rounding to half). Scratch: 4 bytes per element of each such operand (a broadcast
 * batch of a matmul operand is materialized, as the detour does).
 */
#include "blas_impl.h"

typedef struct wide {
    float *mem[4];
    ff_view v[4];
} wide;

static void wide_free(blas_ctx *c, wide *w)
{
    for (int i = 0; i < 4; i++) blas_free(c, w->mem[i]);
}

/* An f32 twin of v in scratch (widened when fill is set). 0 or FF_ERR_OOM. */
static ff_status widen(blas_ctx *c, wide *w, int i, const ff_view *v, int fill)
{
    int64_t n = ff_view_numel(v);
    w->mem[i] = n ? blas_scratch(c, (size_t)n * sizeof(float)) : NULL;
    if (n && !w->mem[i]) return FF_ERR_OOM;
    w->v[i] = blas_f32_view(w->mem[i], v);
    if (fill && n) blas_half_convert(c, &w->v[i], v);
    return FF_OK;
}

/* ---- SUM/MAX/MIN over trailing axes of a dense source, straight from the half data ---- */
/* The inner form (rows x len, each row contiguous: a row sum, or everything) reads the
 * halves once, widening HALF_RUN of them at a time on the stack: no f32 copy of src.
 * SUM adds the runs' blas_vsum_f32 partials in double (one more level of grouping than
 * the f32 entry's pairwise sum over the whole row: the same double accuracy, not its
 * bits), and the result is rounded to f32 and then to the half dtype, as the detour
 * rounds; MAX/MIN combine the runs' extremes keeping the first NaN and the first zero,
 * so they equal the f32 entry's exactly. */
#define HALF_RUN 4096

typedef struct inner_arg {
    ff_reduce_op op;
    ff_dtype t;
    const uint16_t *src;
    uint16_t *dst;
    int64_t len;
    int64_t per;         /* one long row: elements per chunk */
    double partial[64];
} inner_arg;

/* NaN first, then the earlier of equal values (a -0 before a +0 stays) */
static double extreme(ff_reduce_op op, double r, double v)
{
    if (r != r) return r;
    if (v != v) return v;
    return (op == FF_REDUCE_MAX ? v > r : v < r) ? v : r;
}

static double run_reduce(ff_reduce_op op, ff_dtype t, const uint16_t *x, int64_t n)
{
    float buf[HALF_RUN];
    double r = 0.0;
    for (int64_t i = 0; i < n; i += HALF_RUN) {
        int64_t m = n - i < HALF_RUN ? n - i : HALF_RUN;
        blas_half_to_f32(t, m, buf, x + i);
        if (op == FF_REDUCE_SUM) r += blas_vsum_f32(m, buf);
        else {
            double v = op == FF_REDUCE_MAX ? blas_vmax_f32(m, buf) : blas_vmin_f32(m, buf);
            r = i ? extreme(op, r, v) : v;
        }
    }
    return r;
}

static void store_result(ff_dtype t, uint16_t *d, double r)
{
    float f = (float)r; /* the f32 entry's result, which the detour then rounds */
    blas_f32_to_half(t, 1, d, &f);
}

static void inner_rows(void *varg, int64_t begin, int64_t end)
{
    const inner_arg *a = varg;
    for (int64_t r = begin; r < end; r++) store_result(a->t, a->dst + r, run_reduce(a->op, a->t, a->src + r * a->len, a->len));
}

static void inner_chunks(void *varg, int64_t begin, int64_t end)
{
    inner_arg *a = varg;
    for (int64_t k = begin; k < end; k++) {
        int64_t b = k * a->per, e = b + a->per < a->len ? b + a->per : a->len;
        a->partial[k] = b < e ? run_reduce(a->op, a->t, a->src + b, e - b) : NAN; /* NaN: an empty chunk */
    }
}

/* 1 if done: dense src and dst of the half dtype, SUM/MAX/MIN over the trailing axes. */
static int reduce_inner(blas_ctx *c, ff_reduce_op op, const ff_view *dst, const ff_view *src, uint32_t mask)
{
    if (!(op == FF_REDUCE_SUM || op == FF_REDUCE_MAX || op == FF_REDUCE_MIN) || dst->dtype != src->dtype) return 0;
    if (!blas_view_contiguous(src) || !blas_view_contiguous(dst) || dst->ndim != src->ndim) return 0;
    int seen_reduced = 0, any = 0;
    for (int d = 0; d < src->ndim; d++) {
        if (src->shape[d] == 1) continue;
        int r = (mask >> d) & 1u;
        if (seen_reduced && !r) return 0; /* a kept axis after a reduced one */
        seen_reduced |= r, any |= r;
        if (dst->shape[d] != (r ? 1 : src->shape[d])) return 0; /* blas_reduce reports it */
    }
    int64_t rows = ff_view_numel(dst), numel = ff_view_numel(src);
    if (!any || rows == 0 || numel == 0) return 0;
    inner_arg a = {.op = op, .t = src->dtype, .src = (const uint16_t *)src->buf + src->offset,
                   .dst = (uint16_t *)dst->buf + dst->offset, .len = numel / rows};
    if (rows == 1 && a.len >= 2 * BLAS_PAR_MIN && c->nthreads > 1) {
        a.per = (a.len + 63) / 64;
        blas_parallel_for(c, 64, 2, 1, inner_chunks, &a);
        double r = a.partial[0];
        for (int k = 1; k < 64 && k * a.per < a.len; k++)
            r = op == FF_REDUCE_SUM ? r + a.partial[k] : extreme(op, r, a.partial[k]);
        store_result(a.t, a.dst, r);
    } else {
        int64_t min_rows = a.len >= BLAS_PAR_MIN ? 2 : (BLAS_PAR_MIN + a.len - 1) / a.len;
        blas_parallel_for(c, rows, min_rows, 1, inner_rows, &a);
    }
    return 1;
}

ff_status blas_half_reduce(void *ctx, ff_reduce_op op, const ff_view *dst, const ff_view *src, uint32_t mask)
{
    ff_status st;
    if ((st = blas_check_storage_view(ctx, "reduce", "dst", dst)) || (st = blas_check_storage_view(ctx, "reduce", "src", src)))
        return st;
    if (mask >> src->ndim == 0 && reduce_inner(ctx, op, dst, src, mask)) return FF_OK;
    if (ffb_is_half(dst->dtype) && dst->dtype != src->dtype)
        return blas_error(ctx, FF_ERR_INVALID, "cpu_blas reduce: %s of %s writes %s", ffb_reduce_name(op) ? ffb_reduce_name(op) : "?",
                          blas_dtype_name(src->dtype), blas_dtype_name(dst->dtype));
    blas_ctx *c = ctx;
    wide w;
    memset(&w, 0, sizeof w);
    int half_out = ffb_is_half(dst->dtype);
    if (widen(c, &w, 0, src, 1) || (half_out && widen(c, &w, 1, dst, 0))) {
        wide_free(c, &w);
        return blas_error(ctx, FF_ERR_OOM, "cpu_blas reduce: out of memory for the f32 copy of a %s operand",
                          blas_dtype_name(src->dtype));
    }
    st = blas_reduce(ctx, op, half_out ? &w.v[1] : dst, &w.v[0], mask);
    if (!st && half_out) blas_half_convert(c, dst, &w.v[1]);
    wide_free(c, &w);
    return st;
}

/* bf16 on AVX512-BF16, products past this many multiply-adds: blas_half_dot.c per batch
 * element into the dense f32 C. 1 if done, 0 to take the f32 gemm (also when an operand
 * holds a subnormal, which the kernel would read as zero), -1 on OOM. */
#define DOT_MIN_MNK ((int64_t)1 << 18)

static int matmul_dot(blas_ctx *c, float *C, const ff_view *dst, const ff_view *a, const ff_view *b)
{
    int r = dst->ndim;
    if (dst->dtype != FF_BF16 || r < 2 || a->ndim != r || b->ndim != r || !blas_bf16_dot_available()) return 0;
    int64_t M = dst->shape[r - 2], N = dst->shape[r - 1], K = a->shape[r - 1];
    for (int d = 0; d < r - 2; d++)
        if (a->shape[d] != dst->shape[d] || b->shape[d] != dst->shape[d]) return 0; /* blas_matmul reports it */
    if (a->shape[r - 2] != M || b->shape[r - 2] != K || b->shape[r - 1] != N || K == 0 || M * N * K < DOT_MIN_MNK) return 0;
    int64_t idx[FF_MAX_DIMS] = {0}, ao = a->offset, bo = b->offset, nbatch = ff_view_numel(dst) / (M * N);
    int st = 0;
    for (int64_t n = 0; n < nbatch && !st; n++) {
        st = blas_bf16_dot_gemm(c, M, N, K, (const uint16_t *)a->buf + ao, a->strides[r - 2], a->strides[r - 1],
                                (const uint16_t *)b->buf + bo, b->strides[r - 2], b->strides[r - 1], C + n * M * N);
        for (int d = r - 3; d >= 0; d--) { /* the next batch element, row-major */
            if (++idx[d] < dst->shape[d]) {
                ao += a->strides[d], bo += b->strides[d];
                break;
            }
            idx[d] = 0;
            ao -= a->strides[d] * (a->shape[d] - 1), bo -= b->strides[d] * (b->shape[d] - 1);
        }
    }
    return st < 0 ? -1 : st ? 0 : 1; /* st 1: a subnormal operand, the f32 gemm instead */
}

ff_status blas_half_product(blas_ctx *c, const ff_view *dst, const ff_view *a, const ff_view *b, const ff_view *bias,
                            int act)
{
    const char *entry = bias || act != FF_LINEAR_NO_ACT ? "linear" : "matmul";
    int dnnl = blas_half_matmul_dnnl(c, dst, a, b, bias, act);
    if (dnnl)
        return dnnl > 0 ? FF_OK : blas_error(c, FF_ERR_OOM, "cpu_blas %s: out of memory for a bf16 product", entry);
    wide w;
    memset(&w, 0, sizeof w);
    ff_status st = widen(c, &w, 0, dst, 0);
    int dot = st ? 0 : matmul_dot(c, w.mem[0], dst, a, b);
    if (!st && dot == 0) st = widen(c, &w, 1, a, 1);
    if (!st && dot == 0) st = widen(c, &w, 2, b, 1);
    if (bias && !st) { /* the one row, widened once and seen again with row stride 0 */
        ff_view row = *bias;
        row.shape[dst->ndim - 2] = 1;
        if (!(st = widen(c, &w, 3, &row, 1))) w.v[3].shape[dst->ndim - 2] = bias->shape[dst->ndim - 2], w.v[3].strides[dst->ndim - 2] = 0;
    }
    if (st || dot < 0) {
        wide_free(c, &w);
        return blas_error(c, FF_ERR_OOM, "cpu_blas %s: out of memory for the f32 copies of %s operands", entry,
                          blas_dtype_name(dst->dtype));
    }
    if (dot == 0) st = blas_matmul(c, &w.v[0], &w.v[1], &w.v[2]);
    if (!st) st = blas_linear_epilogue(c, &w.v[0], bias ? &w.v[3] : NULL, act);
    if (!st && ff_view_numel(dst)) blas_half_convert(c, dst, &w.v[0]);
    wide_free(c, &w);
    return st;
}

ff_status blas_half_matmul(void *ctx, const ff_view *dst, const ff_view *a, const ff_view *b)
{
    ff_status st;
    if ((st = blas_check_storage_view(ctx, "matmul", "dst", dst)) || (st = blas_check_storage_view(ctx, "matmul", "a", a)) ||
        (st = blas_check_storage_view(ctx, "matmul", "b", b)))
        return st;
    if (a->dtype != dst->dtype || b->dtype != dst->dtype)
        return blas_error(ctx, FF_ERR_INVALID, "cpu_blas matmul: dtypes differ (dst %s, a %s, b %s)",
                          blas_dtype_name(dst->dtype), blas_dtype_name(a->dtype), blas_dtype_name(b->dtype));
    return blas_half_product(ctx, dst, a, b, NULL, FF_LINEAR_NO_ACT);
}
