/* The optional linear entry: dst = act(a b + bias), as backend_abi.h states it. BF16 on
 * bf16 hardware is one oneDNN primitive whose bias and activation are post-ops on the f32
 * sum (blas_half_dnnl.c): y is written once, rounded once, where the composition wrote it
 * three times. Elsewhere the composition's own steps without its new tensors: F32/F64
 * the matmul entry into dst and the bias and activation in place; F16/BF16 (f16, an
 * operand holding a subnormal, a product too small for oneDNN) the same on an f32 C from
 * widened operands, rounded once at the end. */
#include "blas_impl.h"
#include "ff_backend_linear.h"

int blas_linear_supported(int act, ff_dtype dtype)
{
    return ffb_linear_act_ok(act) && (dtype == FF_F32 || dtype == FF_F64 || dtype == FF_F16 || dtype == FF_BF16);
}

/* y += bias, y = act(y), in place on y (F32 or F64). */
static ff_status epilogue(void *ctx, const ff_view *y, const ff_view *bias, int act)
{
    ff_status st = bias ? blas_binary(ctx, FF_BINARY_ADD, y, y, bias) : FF_OK;
    if (!st && act != FF_LINEAR_NO_ACT) st = blas_unary(ctx, (ff_unary_op)act, y, y);
    return st;
}

/* F16/BF16 without oneDNN: f32 copies of a, b and bias's one row, the f32 steps, one rounding. */
static ff_status linear_wide(blas_ctx *c, const ff_view *dst, const ff_view *a, const ff_view *b,
                             const ff_view *bias, int act)
{
    int64_t M = dst->shape[0], N = dst->shape[1], K = a->shape[1];
    float *mem = blas_scratch(c, sizeof(float) * (size_t)(M * N + M * K + K * N + (bias ? N : 0)));
    if (!mem)
        return blas_error(c, FF_ERR_OOM, "cpu_blas linear: out of memory for the f32 copies of a %s [%lld, %lld] x "
                          "[%lld, %lld] product", blas_dtype_name(dst->dtype), (long long)M, (long long)K,
                          (long long)K, (long long)N);
    ff_view cv = blas_f32_view(mem, dst), av = blas_f32_view(mem + M * N, a), bv = blas_f32_view(mem + M * N + M * K, b);
    ff_view bw, row;
    blas_half_convert(c, &av, a);
    blas_half_convert(c, &bv, b);
    if (bias) { /* the row once, seen again with row stride 0 */
        row = *bias, row.shape[0] = 1;
        bw = blas_f32_view(mem + M * N + M * K + K * N, &row);
        blas_half_convert(c, &bw, &row);
        bw.shape[0] = M, bw.strides[0] = 0;
    }
    ff_status st = blas_matmul(c, &cv, &av, &bv);
    if (!st) st = epilogue(c, &cv, bias ? &bw : NULL, act);
    if (!st) blas_half_convert(c, dst, &cv);
    blas_free(c, mem);
    return st;
}

ff_status blas_linear(void *ctx, const ff_view *dst, const ff_view *src, int n_src, int act)
{
    blas_ctx *c = ctx;
    ff_status st = ffb_linear_check(c ? c->host : NULL, "cpu_blas", dst, src, n_src, act,
                                    blas_linear_supported(act, dst ? dst->dtype : FF_BOOL));
    if (st) return st;
    const ff_view *a = &src[0], *b = &src[1], *bias = n_src == 3 ? &src[2] : NULL;
    if (dst->dtype == FF_BF16) {
        int r = blas_half_matmul_dnnl(c, dst, a, b, bias, act);
        if (r > 0) return FF_OK;
        if (r < 0) return blas_error(ctx, FF_ERR_OOM, "cpu_blas linear: out of memory for a bf16 product");
    }
    if (ffb_is_half(dst->dtype)) return linear_wide(c, dst, a, b, bias, act);
    st = blas_matmul(ctx, dst, a, b);
    return st ? st : epilogue(ctx, dst, bias, act);
}
