/* The optional linear entry: dst = act(a b + bias), as backend_abi.h states it. F16/BF16
 * go through the half matmul's own path (blas_half_product, blas_half_wide.c) with the
 * bias and activation added: on bf16 hardware one oneDNN primitive whose post-ops apply
 * them to the f32 sum (y written once, rounded once, where the composition wrote it three
 * times), else the same f32 C the half matmul forms, the epilogue applied there before
 * its one rounding. F32/F64: the composition's own steps without its new tensors, the
 * matmul entry into dst and the epilogue in place. */
#include "blas_impl.h"
#include "ff_backend_linear.h"

int blas_linear_supported(int act, ff_dtype dtype)
{
    return ffb_linear_act_ok(act) && (dtype == FF_F32 || dtype == FF_F64 || dtype == FF_F16 || dtype == FF_BF16);
}

ff_status blas_linear_epilogue(void *ctx, const ff_view *y, const ff_view *bias, int act)
{
    ff_status st = bias ? blas_binary(ctx, FF_BINARY_ADD, y, y, bias) : FF_OK;
    if (!st && act != FF_LINEAR_NO_ACT) st = blas_unary(ctx, (ff_unary_op)act, y, y);
    return st;
}

ff_status blas_linear(void *ctx, const ff_view *dst, const ff_view *src, int n_src, int act)
{
    blas_ctx *c = ctx;
    ff_status st = ffb_linear_check(c ? c->host : NULL, "cpu_blas", dst, src, n_src, act,
                                    blas_linear_supported(act, dst ? dst->dtype : FF_BOOL));
    if (st) return st;
    const ff_view *bias = n_src == 3 ? &src[2] : NULL;
    if (ffb_is_half(dst->dtype)) return blas_half_product(c, dst, &src[0], &src[1], bias, act);
    st = blas_matmul(ctx, dst, &src[0], &src[1]);
    return st ? st : blas_linear_epilogue(ctx, dst, bias, act);
}
