/* max_pool2d and avg_pool2d: the sliding windows of ops/conv.c reduced over the
 * window axis with amax / mean, so the gradient is that of the reduction routed back
 * through stack, slice and pad. amax splits a tied window's gradient evenly among its
 * maxima (PyTorch sends it all to one argmax); in practice ties need repeated values. */
#include <math.h>

#include "ops_impl.h"

static ff_tensor *pool2d(const ff_tensor *x, int64_t kh, int64_t kw, int64_t sh, int64_t sw, int64_t ph,
                         int64_t pw, bool is_max, const char *fn)
{
    if (!x) return ff_error(FF_ERR_INVALID, "%s: x is NULL", fn), NULL;
    if (x->layout.ndim != 4)
        return ff_error(FF_ERR_INVALID, "%s: expected x [N, C, H, W], got rank %d", fn, x->layout.ndim), NULL;
    if (!ff_dtype_is_float(x->dtype))
        return ff_error(FF_ERR_INVALID, "%s: x must be floating point, got %s", fn, ff_dtype_name(x->dtype)), NULL;
    /* as PyTorch: a window must never lie entirely in the padding */
    if (kh >= 1 && kw >= 1 && (ph > kh / 2 || pw > kw / 2))
        return ff_error(FF_ERR_INVALID, "%s: padding (%lld, %lld) must be at most half the kernel (%lld, %lld)", fn,
                        (long long)ph, (long long)pw, (long long)kh, (long long)kw), NULL;
    int64_t oh, ow;
    ff_tensor *win = ff_op_windows2d(x, kh, kw, sh, sw, ph, pw, is_max ? -INFINITY : 0.0, &oh, &ow, fn);
    if (!win) return NULL;
    int axis = 2;
    ff_tensor *r = is_max ? ff_amax(win, 1, &axis, false) : ff_mean(win, 1, &axis, false);
    ff_tensor_release(win);
    if (!r) ff_error_prefix(fn);
    return r;
}

ff_tensor *ff_max_pool2d(const ff_tensor *x, int64_t kh, int64_t kw, int64_t stride_h, int64_t stride_w,
                         int64_t pad_h, int64_t pad_w)
{
    return pool2d(x, kh, kw, stride_h, stride_w, pad_h, pad_w, true, "ff_max_pool2d");
}

ff_tensor *ff_avg_pool2d(const ff_tensor *x, int64_t kh, int64_t kw, int64_t stride_h, int64_t stride_w,
                         int64_t pad_h, int64_t pad_w)
{
    return pool2d(x, kh, kw, stride_h, stride_w, pad_h, pad_w, false, "ff_avg_pool2d");
}
