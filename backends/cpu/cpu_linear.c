/* The optional linear entry on F32 and F64: the ABI's definition itself, the matmul
 * entry into dst, then the bias added and the activation applied in place, each step
 * rounded as the composition's. The reference leaves halves to the composition; its job
 * here is to hold every other backend's entry to these values. */
#include "cpu_impl.h"
#include "ff_backend_linear.h"

int cpu_linear_supported(int act, ff_dtype t) { return ffb_linear_act_ok(act) && (t == FF_F32 || t == FF_F64); }

ff_status cpu_linear(void *ctx, const ff_view *dst, const ff_view *src, int n_src, int act)
{
    ff_status st = ffb_linear_check(ctx ? ((cpu_ctx *)ctx)->host : NULL, "cpu", dst, src, n_src, act,
                                    cpu_linear_supported(act, dst ? dst->dtype : FF_BOOL));
    if (!st) st = cpu_matmul(ctx, dst, &src[0], &src[1]);
    if (!st && n_src == 3) st = cpu_binary(ctx, FF_BINARY_ADD, dst, dst, &src[2]);
    if (!st && act != FF_LINEAR_NO_ACT) st = cpu_unary(ctx, (ff_unary_op)act, dst, dst);
    return st;
}
