/* max_pool2d and avg_pool2d. On a backend with the pool2d entry: one pass forward, one
 * backward (FF_POOL=compose forces the composition). Otherwise, and as the reference
 * semantics: the sliding windows of ops/conv.c reduced over the window axis with amax /
 * mean, so the gradient is that of the reduction routed back through stack, slice and
 * pad. Both split a tied window's gradient evenly among its maxima (PyTorch sends it all
 * to one argmax); in practice ties need repeated values. */
#include <math.h>

#include "ops_impl.h"

/* ---- the backend's pool2d entry ------------------------------------------------ */
static bool use_entry(const ff_tensor *x, bool is_max)
{
    int f = is_max ? FF_POOL2D_MAX_FORWARD : FF_POOL2D_AVG_FORWARD;
    return ff_op_entry_enabled(x, FF_KIND_POOL2D, f, f + 1, "FF_POOL");
}

static ff_tensor *pool2d(const ff_tensor *x, int64_t kh, int64_t kw, int64_t sh, int64_t sw, int64_t ph, int64_t pw,
                         bool is_max, bool allow_entry, const char *fn);

/* ip: [0] is_max, [1..6] kernel, stride, padding. saved: [0] y (max). First order: the
 * entry's backward pass. Under create_graph the gradient must be a function of g with a
 * graph: it is the composition's, J^T g, through a nested autograd call on the composed
 * forward recomputed with history (max pooling's J is piecewise constant, so this is
 * also exact for the gradient's own derivative). */
static ff_status pool2d_backward(ff_node *n, const ff_tensor *g, ff_tensor **gi)
{
    const ff_tensor *x = n->inputs[0];
    bool is_max = n->ip[0] != 0;
    ff_pool2d_params p = {{n->ip[1], n->ip[2]}, {n->ip[3], n->ip[4]}, {n->ip[5], n->ip[6]}};
    if (ff_grad_enabled()) {
        ff_tensor *yc = pool2d(x, p.kernel[0], p.kernel[1], p.stride[0], p.stride[1], p.padding[0], p.padding[1],
                               is_max, false, n->name);
        if (!yc) return ff_last_status();
        ff_tensor *xin = (ff_tensor *)x;
        ff_backward_opts o = {.retain_graph = true, .create_graph = true};
        ff_status st = ff_autograd_grad(yc, g, 1, &xin, &gi[0], &o);
        ff_tensor_release(yc);
        return st;
    }
    const ff_tensor *y = is_max ? ff_node_saved(n, 0) : NULL;
    if (is_max && !y) return ff_last_status();
    ff_tensor *gx = ff_tensor_new(x->storage->backend, x->layout.ndim, x->layout.shape, x->dtype, n->name);
    const ff_tensor *src[3] = {g, x, y};
    ff_status st = gx ? ff_kernel_pool2d(is_max ? FF_POOL2D_MAX_BACKWARD : FF_POOL2D_AVG_BACKWARD, gx, src,
                                         is_max ? 3 : 1, &p, n->name)
                      : ff_last_status();
    if (st) ff_tensor_release(gx);
    else gi[0] = gx;
    return st;
}

static ff_tensor *pool2d_entry(const ff_tensor *x, const ff_pool2d_params *p, bool is_max, const char *fn)
{
    int64_t shape[4] = {x->layout.shape[0], x->layout.shape[1],
                        (x->layout.shape[2] + 2 * p->padding[0] - p->kernel[0]) / p->stride[0] + 1,
                        (x->layout.shape[3] + 2 * p->padding[1] - p->kernel[1]) / p->stride[1] + 1};
    ff_tensor *y = ff_tensor_new(x->storage->backend, 4, shape, x->dtype, fn);
    if (!y) return NULL;
    if (ff_kernel_pool2d(is_max ? FF_POOL2D_MAX_FORWARD : FF_POOL2D_AVG_FORWARD, y, &x, 1, p, fn)) {
        ff_tensor_release(y);
        return NULL;
    }
    const ff_tensor *save[1] = {y};
    ff_node *node = ff_op_record_node(&y, is_max ? "max_pool2d" : "avg_pool2d", pool2d_backward, 1, &x,
                                      is_max ? 1 : 0, save);
    if (node) {
        node->ip[0] = is_max;
        for (int i = 0; i < 2; i++)
            node->ip[1 + i] = p->kernel[i], node->ip[3 + i] = p->stride[i], node->ip[5 + i] = p->padding[i];
        node->nip = 7;
    }
    return y;
}

/* allow_entry: false forces the composition (the entry's create_graph gradient). */
static ff_tensor *pool2d(const ff_tensor *x, int64_t kh, int64_t kw, int64_t sh, int64_t sw, int64_t ph, int64_t pw,
                         bool is_max, bool allow_entry, const char *fn)
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
    if (allow_entry && use_entry(x, is_max) && kh >= 1 && kw >= 1 && sh >= 1 && sw >= 1 && ph >= 0 && pw >= 0 &&
        x->layout.shape[2] + 2 * ph >= kh && x->layout.shape[3] + 2 * pw >= kw)
        return pool2d_entry(x, &(ff_pool2d_params){{kh, kw}, {sh, sw}, {ph, pw}}, is_max, fn);
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
    return pool2d(x, kh, kw, stride_h, stride_w, pad_h, pad_w, true, true, "ff_max_pool2d");
}

ff_tensor *ff_avg_pool2d(const ff_tensor *x, int64_t kh, int64_t kw, int64_t stride_h, int64_t stride_w,
                         int64_t pad_h, int64_t pad_w)
{
    return pool2d(x, kh, kw, stride_h, stride_w, pad_h, pad_w, false, true, "ff_avg_pool2d");
}
