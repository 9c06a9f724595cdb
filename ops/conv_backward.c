/* ff_conv_backward: the gradients of a convolution (or a transposed one) for a given
 * output gradient, without running the forward again. For whoever keeps the graph
 * elsewhere: PyTorch's convolution_backward through fusionflow.torch_device, which
 * otherwise took a vector-Jacobian product through autograd at the cost of one more
 * forward.
 *
 * 2-D (and 1-D, as 2-D over H = 1) on a backend with the conv2d entries: the entries
 * themselves, as autograd's node for the entry would call them (ops/conv.c):
 *   y = F(x, w):  gx = I(gy, w), gw = W(gy, x)
 *   y = I(x, w):  gx = F(gy, w), gw = W(x, gy)      (the transposed convolution)
 * Anything else (3-D, a backend without the entries, a geometry they refuse): the
 * forward on fresh leaves and ff_autograd_grad, as before. */
#include "conv_impl.h"
#include "expr.h"

/* The entries' parameters for o in 2-D, with conv_run's clamp of a stride beyond the
 * padded size (the one window it gives either way). */
static ff_conv2d_params entry_params(const ff_tensor *x, const ff_conv_opts *o, bool transposed)
{
    ff_conv2d_params p = {{o->stride[0], o->stride[1]}, {o->padding[0], o->padding[1]},
                          {o->dilation[0], o->dilation[1]}, o->groups};
    for (int d = 0; d < 2 && !transposed; d++) {
        int64_t padded = x->layout.shape[2 + d] + 2 * o->padding[d];
        if (padded >= 1 && p.stride[d] > padded) p.stride[d] = padded;
    }
    return p;
}

/* The output shape of the forward into shape[0 .. rank). */
static ff_status forward_shape(const ff_tensor *x, const ff_tensor *w, const ff_conv_opts *o, bool transposed,
                               int64_t *shape, const char *fn)
{
    int nd = x->layout.ndim - 2;
    shape[0] = x->layout.shape[0];
    shape[1] = transposed ? w->layout.shape[1] * o->groups : w->layout.shape[0];
    if (transposed) return ff_op_conv_transpose_size(x, w, o, shape + 2, fn);
    ff_conv_geom g = {.nd = nd, .groups = o->groups};
    for (int d = 0; d < nd; d++)
        g.stride[d] = o->stride[d], g.lo[d] = g.hi[d] = o->padding[d], g.dil[d] = o->dilation[d];
    return ff_op_conv_geometry(x, w, &g, shape + 2, fn);
}

/* The 2-D case on the entries; false when they do not take it (nothing made). */
static bool entries_2d(const ff_tensor *gy, const ff_tensor *x, const ff_tensor *w, const ff_conv_opts *o,
                       bool transposed, ff_tensor **gx, ff_tensor **gw, const char *fn)
{
    ff_conv2d_params p = entry_params(x, o, transposed);
    if (gy->storage->backend != x->storage->backend || !ff_op_conv2d_entry_ok(x, w, &p)) return false;
    if (transposed) { /* the entry's I(x, w) must give gy's size, as ff_op_conv_transpose's entry2d checks */
        for (int d = 0; d < 2; d++)
            if ((gy->layout.shape[2 + d] + 2 * p.padding[d] - p.dilation[d] * (w->layout.shape[2 + d] - 1) - 1) /
                        p.stride[d] + 1 != x->layout.shape[2 + d])
                return false;
    }
    const int64_t *xhw = x->layout.shape + 2, *khw = w->layout.shape + 2;
    if (gx) *gx = transposed ? ff_op_conv2d_entry(0, gy, w, &p, NULL, fn) : ff_op_conv2d_entry(1, gy, w, &p, xhw, fn);
    if (gw) *gw = transposed ? ff_op_conv2d_entry(2, x, gy, &p, khw, fn) : ff_op_conv2d_entry(2, gy, x, &p, khw, fn);
    return true;
}

/* Every other case: the forward again on leaves over x and w, and autograd. */
static ff_status by_autograd(const ff_tensor *gy, const ff_tensor *x, const ff_tensor *w, const ff_conv_opts *o,
                             bool transposed, ff_tensor **gx, ff_tensor **gw, const char *fn)
{
    bool prev = ff_set_grad_enabled(true);
    ff_expr e = {0};
    ff_tensor *leaf[2] = {FF_EX(&e, ff_detach(x)), FF_EX(&e, ff_detach(w))}, *want[2], *got[2] = {NULL, NULL};
    ff_tensor **out[2] = {gx, gw};
    int n = 0;
    for (int k = 0; k < 2; k++)
        if (out[k] && leaf[k]) {
            if (ff_set_requires_grad(leaf[k], true)) e.failed = true;
            want[n++] = leaf[k];
        }
    ff_tensor *y = e.failed ? NULL : FF_EX(&e, ff_op_conv(leaf[0], leaf[1], NULL, o, transposed, fn));
    ff_status st = y && !e.failed ? ff_autograd_grad(y, gy, n, want, got, NULL) : ff_last_status();
    for (int k = 0, j = 0; k < 2; k++)
        if (out[k]) *out[k] = st ? NULL : got[j++];
    if (st)
        for (int j = 0; j < n; j++) ff_tensor_release(got[j]);
    ff_expr_free(&e);
    ff_set_grad_enabled(prev);
    return st;
}

ff_status ff_conv_backward(const ff_tensor *gy, const ff_tensor *x, const ff_tensor *w, const ff_conv_opts *o,
                           bool transposed, ff_tensor **gx, ff_tensor **gw)
{
    static const char fn[] = "ff_conv_backward";
    if (gx) *gx = NULL;
    if (gw) *gw = NULL;
    if (!gy) return ff_error(FF_ERR_INVALID, "%s: gy must not be NULL", fn);
    if (ff_op_conv_check(x, w, NULL, o, transposed, fn)) return ff_last_status();
    int64_t want[5];
    if (forward_shape(x, w, o, transposed, want, fn)) return ff_last_status();
    int r = x->layout.ndim;
    bool same = gy->layout.ndim == r && gy->dtype == x->dtype;
    for (int d = 0; same && d < r; d++) same = gy->layout.shape[d] == want[d];
    if (!same) {
        char gs[96], ys[96];
        ff_shape_str(gy->layout.ndim, gy->layout.shape, gs, sizeof gs);
        ff_shape_str(r, want, ys, sizeof ys);
        return ff_error(FF_ERR_INVALID, "%s: gy %s (%s) is not the %s output %s (%s)", fn, gs, ff_dtype_name(gy->dtype),
                        transposed ? "transposed convolution's" : "convolution's", ys, ff_dtype_name(x->dtype));
    }
    if (!gx && !gw) return FF_OK;
    bool prev = ff_set_grad_enabled(false); /* the entries record nothing: the caller keeps the graph */
    bool done = false;
    ff_status st = FF_OK;
    if (r == 4) {
        done = entries_2d(gy, x, w, o, transposed, gx, gw, fn);
    } else if (r == 3) { /* 1-D as 2-D over H = 1, as the forward runs it */
        ff_conv_opts o2 = {{1, o->stride[0]}, {0, o->padding[0]}, {1, o->dilation[0]}, {0, o->output_padding[0]},
                           o->groups};
        ff_expr e = {0};
        ff_tensor *x4 = FF_EX(&e, ff_unsqueeze(x, 2)), *w4 = FF_EX(&e, ff_unsqueeze(w, 2));
        ff_tensor *g4 = FF_EX(&e, ff_unsqueeze(gy, 2)), *gx4 = NULL, *gw4 = NULL;
        done = !e.failed && entries_2d(g4, x4, w4, &o2, transposed, gx ? &gx4 : NULL, gw ? &gw4 : NULL, fn);
        if (done) {
            if (gx) *gx = gx4 ? ff_squeeze(FF_EX(&e, gx4), 2) : NULL;
            if (gw) *gw = gw4 ? ff_squeeze(FF_EX(&e, gw4), 2) : NULL;
        }
        ff_expr_free(&e);
    }
    ff_set_grad_enabled(prev);
    if (done) {
        if ((gx && !*gx) || (gw && !*gw)) {
            st = ff_last_status() ? ff_last_status() : FF_ERR_OOM;
            if (gx) ff_tensor_release(*gx), *gx = NULL;
            if (gw) ff_tensor_release(*gw), *gw = NULL;
        }
        return st;
    }
    return by_autograd(gy, x, w, o, transposed, gx, gw, fn);
}
