/*
 * reduce and matmul on F16/BF16: the half operands are widened into dense f32 scratch
 * (vectorized, blas_half.c), the f32 entry runs on it, and a half result is rounded
 * once on the way back. This is the core's f32 detour done inside the backend, with the
 * conversions vectorized and threaded and without the core's temporaries: the values
 * are the detour's bit for bit (the same f32 kernels on the same dense f32 operands),
 * so reductions accumulate as the f32 entry does (in double) and matmul runs the f32
 * gemm (f32 products, f32 accumulation in the BLAS microkernel, one rounding to half).
 *
 * Scratch: 4 bytes per element of each half operand (a broadcast batch of a matmul
 * operand is materialized, as the detour does).
 */
#include "blas_impl.h"

typedef struct wide {
    float *mem[3];
    ff_view v[3];
} wide;

static void wide_free(blas_ctx *c, wide *w)
{
    for (int i = 0; i < 3; i++) blas_free(c, w->mem[i]);
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

ff_status blas_half_reduce(void *ctx, ff_reduce_op op, const ff_view *dst, const ff_view *src, uint32_t mask)
{
    ff_status st;
    if ((st = blas_check_storage_view(ctx, "reduce", "dst", dst)) || (st = blas_check_storage_view(ctx, "reduce", "src", src)))
        return st;
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

ff_status blas_half_matmul(void *ctx, const ff_view *dst, const ff_view *a, const ff_view *b)
{
    ff_status st;
    if ((st = blas_check_storage_view(ctx, "matmul", "dst", dst)) || (st = blas_check_storage_view(ctx, "matmul", "a", a)) ||
        (st = blas_check_storage_view(ctx, "matmul", "b", b)))
        return st;
    if (a->dtype != dst->dtype || b->dtype != dst->dtype)
        return blas_error(ctx, FF_ERR_INVALID, "cpu_blas matmul: dtypes differ (dst %s, a %s, b %s)",
                          blas_dtype_name(dst->dtype), blas_dtype_name(a->dtype), blas_dtype_name(b->dtype));
    blas_ctx *c = ctx;
    wide w;
    memset(&w, 0, sizeof w);
    if (widen(c, &w, 0, dst, 0) || widen(c, &w, 1, a, 1) || widen(c, &w, 2, b, 1)) {
        wide_free(c, &w);
        return blas_error(ctx, FF_ERR_OOM, "cpu_blas matmul: out of memory for the f32 copies of %s operands",
                          blas_dtype_name(dst->dtype));
    }
    st = blas_matmul(ctx, &w.v[0], &w.v[1], &w.v[2]);
    if (!st && ff_view_numel(dst)) blas_half_convert(c, dst, &w.v[0]);
    wide_free(c, &w);
    return st;
}
