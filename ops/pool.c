/* max_pool2d and avg_pool2d. On a backend with the pool2d entry: one pass forward, one
 * backward (FF_POOL=compose forces the composition). Otherwise, and as the reference
 * semantics: the sliding windows of ops/conv.c reduced over the window axis (mean; for
 * max a gather at PyTorch's argmax), so the gradient is that of the reduction routed back
 * through stack, slice and pad. Both send a window's whole gradient to one element, the
 * one PyTorch's kernel picks (ff_pool2d_op's MAX_BACKWARD_FIRST): ReLU'd inputs tie at
 * zero all the time, and an even split drifts training away from PyTorch's. */
#include <math.h>

#include "ops_impl.h"

/* ---- the backend's pool2d entry ------------------------------------------------ */
/* Max pooling needs the first-max backward op: a plugin that predates it only knows the
 * even split, and then the core composes. */
/* A half x on a backend whose entry takes f32 only: the entry still, through the core's
 * f32 detour (core/kernel.c: max and its routing exact, avg rounded once). Composed, a
 * bf16 CNN's pools (bf16 since batch norm keeps x's dtype) were 40% of its step. */
static bool entry_on(const ff_tensor *x, int first, int last)
{
    if (ff_op_entry_enabled(x, FF_KIND_POOL2D, first, last, "FF_POOL")) return true;
    if (x->dtype != FF_F16 && x->dtype != FF_BF16) return false;
    for (int op = first; op <= last; op++)
        if (!ff_backend_supports(x->storage->backend, FF_KIND_POOL2D, op, FF_F32)) return false;
    return !ff_op_compose_forced(FF_KIND_POOL2D, "FF_POOL");
}

static bool use_entry(const ff_tensor *x, bool is_max)
{
    if (!is_max) return entry_on(x, FF_POOL2D_AVG_FORWARD, FF_POOL2D_AVG_BACKWARD);
    return entry_on(x, FF_POOL2D_MAX_FORWARD, FF_POOL2D_MAX_FORWARD) &&
           entry_on(x, FF_POOL2D_MAX_BACKWARD_FIRST, FF_POOL2D_MAX_BACKWARD_FIRST);
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
    ff_status st = gx ? ff_kernel_pool2d(is_max ? FF_POOL2D_MAX_BACKWARD_FIRST : FF_POOL2D_AVG_BACKWARD, gx, src,
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

/* The max over axis of win as a gather at the index PyTorch's kernel picks, so that the
 * gradient reaches that one element: the first maximum (argmax), or in a window holding
 * NaN its last NaN (the first of the window flipped). *arg (optional) gets that index,
 * keepdim (i64). */
ff_tensor *ff_op_window_indices(const ff_tensor *tab, const ff_tensor *y, const ff_tensor *arg)
{
    int r = y->layout.ndim;
    int64_t bshape[FF_MAX_DIMS];
    for (int d = 0; d < r; d++) bshape[d] = y->layout.shape[d];
    bshape[r] = tab->layout.shape[tab->layout.ndim - 1];
    ff_tensor *b = ff_broadcast_to(tab, r + 1, bshape);
    ff_tensor *gi = b ? ff_gather(b, r, arg) : NULL;
    ff_tensor *ix = gi ? ff_squeeze(gi, r) : NULL;
    ff_tensor_release(b), ff_tensor_release(gi);
    return ix;
}

ff_tensor *ff_op_max_first(const ff_tensor *win, int axis, ff_tensor **arg, const char *fn)
{
    int64_t k = win->layout.shape[axis];
    ff_tensor *first = ff_argmax(win, axis, true), *flipped = ff_flip(win, 1, &axis);
    ff_tensor *rev = flipped ? ff_argmax(flipped, axis, true) : NULL;
    /* k - 1 - rev; the scalar op lifts i64 to f32, exact for any window that fits memory */
    ff_tensor *neg_last = rev ? ff_sub_scalar(rev, (double)(k - 1)) : NULL, *back = neg_last ? ff_neg(neg_last) : NULL;
    ff_tensor *last = back ? ff_astype(back, FF_I64) : NULL;
    ff_tensor *nan = ff_isnan(win);
    ff_tensor *any = nan ? ff_any(nan, 1, &axis, true) : NULL;
    ff_tensor *idx = first && last && any ? ff_where(any, last, first) : NULL;
    ff_tensor *g = idx ? ff_gather(win, axis, idx) : NULL;
    ff_tensor *r = g ? ff_squeeze(g, axis) : NULL;
    ff_tensor *tmp[] = {first, flipped, rev, neg_last, back, last, nan, any, g};
    for (size_t i = 0; i < sizeof tmp / sizeof tmp[0]; i++) ff_tensor_release(tmp[i]);
    if (r && arg) *arg = idx;
    else ff_tensor_release(idx);
    if (!r) ff_error_prefix(fn);
    return r;
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
    ff_tensor *r = is_max ? ff_op_max_first(win, axis, NULL, fn) : ff_mean(win, 1, &axis, false);
    ff_tensor_release(win);
    if (!r && !is_max) ff_error_prefix(fn);
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
