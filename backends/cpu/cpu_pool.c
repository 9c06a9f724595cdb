/* The optional pool2d entry: the readable loops of ff_backend_pool.h over the strides. */
#include "cpu_impl.h"
#include "ff_backend_pool.h"

ff_status cpu_pool2d(void *ctx, int op, const ff_view *dst, const ff_view *src, int n_src, const ff_pool2d_params *p)
{
    ff_status st =
        ffb_pool2d_check(ctx ? ((cpu_ctx *)ctx)->host : NULL, "cpu", op, dst, src, n_src, p, ffb_pool2d_supported);
    if (st) return st;
    const ff_view *x = ffb_pool2d_is_forward(op) ? &src[0] : dst;
    ffb_pool2d_planes(op, dst, src, p, 0, x->shape[0] * x->shape[1]);
    return FF_OK;
}
