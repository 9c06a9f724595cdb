/* The optional batch_norm and layer_norm entries: the readable per-element loops of
 * ff_backend_norm.h and ff_backend_layer_norm.h over the strides (two passes for the
 * statistics, sums in double). */
#include "cpu_impl.h"
#include "ff_backend_layer_norm.h"
#include "ff_backend_norm.h"

ff_status cpu_batch_norm(void *ctx, int op, const ff_view *dst, int n_dst, const ff_view *src, int n_src, double eps)
{
    ff_status st = ffb_batch_norm_check(ctx ? ((cpu_ctx *)ctx)->host : NULL, "cpu", op, dst, n_dst, src, n_src);
    if (!st) ffb_batch_norm_channels(op, dst, src, eps, 0, src[op == 1].shape[1]);
    return st;
}

ff_status cpu_layer_norm(void *ctx, int op, const ff_view *dst, int n_dst, const ff_view *src, int n_src, double eps)
{
    ff_status st = ffb_layer_norm_check(ctx ? ((cpu_ctx *)ctx)->host : NULL, "cpu", op, dst, n_dst, src, n_src);
    if (st) return st;
    const ff_view *x = &src[op ? 1 : 0];
    ffb_layer_norm_rows(op, dst, src, eps, 0, x->shape[0]);
    if (op) ffb_layer_norm_cols(dst, src, 0, x->shape[1]);
    return FF_OK;
}
