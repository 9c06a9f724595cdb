/* ff_conv_transpose: the gradient of a convolution with respect to its input, run
 * forward. x [N, C, S...] plays the convolution's output gradient and w [C, O / G, K...]
 * its weight, so the result is the input gradient of the convolution y = conv(z, w)
 * with z [N, O, OUT...]:
 *   - 2-D (and 1-D as H = 1) on a backend with the conv2d entries: the
 *     conv2d_backward_input entry itself (ff_op_conv2d_entry, which 1); its gradients
 *     are the forward entry (to x) and the weight entry (to w), to any order;
 *   - otherwise the composition: x spread out by the stride (stride - 1 zeros between
 *     elements), padded by d (K - 1) - p before and that + output_padding after (cut
 *     where negative), then a stride-1 convolution with w's groups transposed and its
 *     kernel flipped. Differentiable step by step, as every composition. */
#include "conv_impl.h"
#include "expr.h"

/* x [N, C, S...] with s - 1 zeros between neighbours in each spatial dim:
 * [N, C, (S - 1) s + 1 ...], as a reshape [N, C, S0, 1, S1, 1, ...], a pad of the unit
 * dims to s, a reshape back and a cut of the trailing zeros. */
static ff_tensor *spread(const ff_tensor *x, int nd, const int64_t *s)
{
    bool any = false;
    for (int d = 0; d < nd; d++) any = any || s[d] > 1;
    if (!any) return ff_tensor_retain((ff_tensor *)x);
    const int64_t *xs = x->layout.shape;
    int64_t split[2 + 6] = {xs[0], xs[1]}, merged[5] = {xs[0], xs[1]}, pads[2 * (2 + 6)] = {0};
    for (int d = 0; d < nd; d++) {
        split[2 + 2 * d] = xs[2 + d], split[3 + 2 * d] = 1;
        pads[2 * (3 + 2 * d) + 1] = s[d] - 1;
        merged[2 + d] = xs[2 + d] * s[d];
    }
    ff_expr e = {0};
    ff_tensor *t = FF_EX(&e, ff_reshape(x, 2 + 2 * nd, split));
    t = FF_EX(&e, ff_pad(t, pads, 0.0));
    t = FF_EX(&e, ff_reshape(t, 2 + nd, merged));
    for (int d = 0; d < nd; d++)
        if (s[d] > 1 && xs[2 + d] > 0) t = FF_EX(&e, ff_slice(t, 2 + d, 0, (xs[2 + d] - 1) * s[d] + 1, 1));
    ff_tensor *r = ff_expr_result(&e, t);
    ff_expr_free(&e);
    return r;
}

/* w [C, O / G, K...] -> the forward convolution's weight [O, C / G, K...] flipped. */
static ff_tensor *flipped_weight(const ff_tensor *w, int nd, int64_t gr)
{
    const int64_t *ws = w->layout.shape;
    int64_t split[6] = {gr, ws[0] / gr, ws[1]}, merged[5] = {ws[1] * gr, ws[0] / gr};
    for (int d = 0; d < nd; d++) split[3 + d] = merged[2 + d] = ws[2 + d];
    int axes[3] = {2, 3, 4};
    ff_expr e = {0};
    ff_tensor *t = FF_EX(&e, ff_reshape(w, 3 + nd, split));
    t = FF_EX(&e, ff_transpose(t, 1, 2));
    t = FF_EX(&e, ff_reshape(t, 2 + nd, merged));
    t = FF_EX(&e, ff_flip(t, nd, axes));
    ff_tensor *r = ff_expr_result(&e, t);
    ff_expr_free(&e);
    return r;
}

static ff_tensor *compose(const ff_tensor *x, const ff_tensor *w, const ff_conv_opts *o, const char *fn)
{
    int nd = x->layout.ndim - 2;
    ff_conv_geom g = {.nd = nd, .groups = o->groups};
    for (int d = 0; d < nd; d++) {
        int64_t reach = o->dilation[d] * (w->layout.shape[2 + d] - 1);
        g.stride[d] = 1, g.dil[d] = o->dilation[d];
        g.lo[d] = reach - o->padding[d], g.hi[d] = reach - o->padding[d] + o->output_padding[d];
    }
    ff_expr e = {0};
    ff_tensor *xs = FF_EX(&e, spread(x, nd, o->stride));
    ff_tensor *wf = FF_EX(&e, flipped_weight(w, nd, o->groups));
    ff_tensor *y = e.failed ? NULL : FF_EX(&e, ff_op_conv_compose(xs, wf, &g, fn));
    ff_tensor *r = ff_expr_result(&e, y);
    ff_expr_free(&e);
    return r;
}

ff_status ff_op_conv_transpose_size(const ff_tensor *x, const ff_tensor *w, const ff_conv_opts *o, int64_t *out,
                                    const char *fn)
{
    for (int d = 0; d < x->layout.ndim - 2; d++) {
        int64_t s = x->layout.shape[2 + d], k = w->layout.shape[2 + d], v, t;
        if (k < 1) return ff_error(FF_ERR_INVALID, "%s: kernel size %lld in spatial dim %d must be >= 1", fn, (long long)k, d);
        if (ff_mul_overflow_i64(s - 1, o->stride[d], &v) || ff_mul_overflow_i64(k - 1, o->dilation[d], &t) ||
            ff_add_overflow_i64(v, t, &v) || ff_add_overflow_i64(v, o->output_padding[d] + 1, &v))
            return ff_error(FF_ERR_OVERFLOW, "%s: output size overflows in spatial dim %d", fn, d);
        out[d] = v - 2 * o->padding[d];
        if (s < 1 || out[d] < 1)
            return ff_error(FF_ERR_INVALID, "%s: input size %lld in spatial dim %d gives output size %lld, expected >= 1", fn,
                            (long long)s, d, (long long)out[d]);
    }
    return FF_OK;
}

/* 2-D on the entry: x (the gradient of a convolution's output) must have exactly the
 * size that convolution gives for out_hw, which output_padding >= stride breaks. */
static ff_tensor *entry2d(const ff_tensor *x, const ff_tensor *w, const ff_conv_opts *o, const int64_t *out,
                          const char *fn)
{
    ff_conv2d_params p = {{o->stride[0], o->stride[1]}, {o->padding[0], o->padding[1]},
                          {o->dilation[0], o->dilation[1]}, o->groups};
    bool fits = true;
    for (int d = 0; d < 2; d++)
        fits = fits && (out[d] + 2 * p.padding[d] - p.dilation[d] * (w->layout.shape[2 + d] - 1) - 1) / p.stride[d] + 1 ==
                           x->layout.shape[2 + d];
    if (!fits || !ff_op_conv2d_entry_ok(x, w, &p)) return compose(x, w, o, fn);
    return ff_op_conv2d_entry(1, x, w, &p, out, fn);
}

ff_tensor *ff_op_conv_transpose(const ff_tensor *x, const ff_tensor *w, const ff_conv_opts *o, const char *fn)
{
    int nd = x->layout.ndim - 2;
    int64_t out[3];
    if (ff_op_conv_transpose_size(x, w, o, out, fn)) return NULL;
    if (nd == 3) return compose(x, w, o, fn);
    if (nd == 2) return entry2d(x, w, o, out, fn);
    ff_conv_opts o2 = {{1, o->stride[0]}, {0, o->padding[0]}, {1, o->dilation[0]}, {0, o->output_padding[0]}, o->groups};
    int64_t out2[2] = {1, out[0]};
    ff_expr e = {0};
    ff_tensor *x4 = FF_EX(&e, ff_unsqueeze(x, 2)), *w4 = FF_EX(&e, ff_unsqueeze(w, 2));
    ff_tensor *y4 = e.failed ? NULL : FF_EX(&e, entry2d(x4, w4, &o2, out2, fn));
    ff_tensor *y = FF_EX(&e, ff_squeeze(y4, 2));
    ff_tensor *r = ff_expr_result(&e, y);
    ff_expr_free(&e);
    return r;
}
