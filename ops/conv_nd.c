/* ff_conv (1 to 3 spatial dims, stride, padding, dilation, groups) and the composition
 * every backend has: x padded, one strided slice view per kernel offset (dilation
 * spaces the offsets), stack (the only copy of the input, K times its size), then one
 * batched matmul with the flattened kernel, per group. Every step records its own
 * node, so the gradient (col2im included: the backward of slice + stack scatters into
 * the padded input) comes from autograd, to any order, on every backend.
 *
 * 2-D convolutions go to the backend's conv2d entries where ff_op_conv2d_entry_ok says
 * so; 1-D ones too, as 2-D ones over a view with H = 1 (not a reshape in Python: the
 * entry's speed, and one node). 3-D ones are composed. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "conv_impl.h"
#include "expr.h"

/* "(a, b, c)" of v's first n entries. */
static const char *tuple_str(int n, const int64_t *v, char *buf, size_t cap)
{
    ff_shape_str(n, v, buf, cap);
    size_t len = strlen(buf);
    buf[0] = '(';
    if (buf[len - 1] == ']') buf[len - 1] = ')';
    return buf;
}

ff_status ff_op_conv_geometry(const ff_tensor *x, const ff_tensor *w, const ff_conv_geom *g, int64_t *out,
                              const char *fn)
{
    int64_t k = 1, padded[3], reach[3];
    bool fits = true;
    for (int d = 0; d < g->nd; d++) {
        int64_t kd = w->layout.shape[2 + d];
        if (kd < 1) return ff_error(FF_ERR_INVALID, "%s: kernel size %lld in spatial dim %d must be >= 1", fn, (long long)kd, d);
        if (ff_add_overflow_i64(x->layout.shape[2 + d], g->lo[d], &padded[d]) ||
            ff_add_overflow_i64(padded[d], g->hi[d], &padded[d]) || ff_mul_overflow_i64(kd - 1, g->dil[d], &reach[d]) ||
            ff_mul_overflow_i64(k, kd, &k))
            return ff_error(FF_ERR_OVERFLOW, "%s: padded size or kernel size overflows", fn);
        reach[d] += 1; /* the dilated kernel's extent */
        fits = fits && padded[d] >= reach[d];
        out[d] = fits ? (padded[d] - reach[d]) / g->stride[d] + 1 : 0;
    }
    if (!fits) {
        char ks[64], ps[64];
        return ff_error(FF_ERR_INVALID, "%s: kernel %s (dilated) is larger than the padded input %s", fn,
                        tuple_str(g->nd, reach, ks, sizeof ks), tuple_str(g->nd, padded, ps, sizeof ps));
    }
    if (k > INT_MAX) return ff_error(FF_ERR_INVALID, "%s: the kernel has %lld offsets, too many", fn, (long long)k);
    return FF_OK;
}

/* x with g's padding (zeros) added, or the negative amounts cut off. */
static ff_tensor *pad_or_cut(const ff_tensor *x, const ff_conv_geom *g)
{
    int64_t pads[2 * FF_MAX_DIMS] = {0};
    bool any = false;
    for (int d = 0; d < g->nd; d++) {
        pads[2 * (2 + d)] = g->lo[d] > 0 ? g->lo[d] : 0, pads[2 * (2 + d) + 1] = g->hi[d] > 0 ? g->hi[d] : 0;
        any = any || g->lo[d] > 0 || g->hi[d] > 0;
    }
    ff_tensor *t = any ? ff_pad(x, pads, 0.0) : ff_tensor_retain((ff_tensor *)x);
    for (int d = 0; t && d < g->nd; d++) {
        if (g->lo[d] >= 0 && g->hi[d] >= 0) continue;
        int64_t n = t->layout.shape[2 + d];
        ff_tensor *c = ff_slice(t, 2 + d, g->lo[d] < 0 ? -g->lo[d] : 0, g->hi[d] < 0 ? n + g->hi[d] : n, 1);
        ff_tensor_release(t);
        t = c;
    }
    return t;
}

/* xp [N, C, S...] (padded) -> [N, C, K, OUT...]: window offset i (row-major over the
 * kernel's dims) at output position o is xp[..., o s + i_d dil ...]. */
static ff_tensor *windows(const ff_tensor *xp, const int64_t *ks, const ff_conv_geom *g, const int64_t *out,
                          int64_t k, const char *fn)
{
    ff_tensor **views = calloc((size_t)k, sizeof *views);
    if (!views) {
        ff_error(FF_ERR_OOM, "%s: out of memory for %lld window views", fn, (long long)k);
        return NULL;
    }
    bool ok = true;
    for (int64_t i = 0; ok && i < k; i++) {
        int64_t off[3], rem = i;
        for (int d = g->nd - 1; d >= 0; d--) off[d] = rem % ks[d], rem /= ks[d];
        ff_tensor *t = ff_tensor_retain((ff_tensor *)xp);
        for (int d = 0; t && d < g->nd; d++) {
            int64_t b = off[d] * g->dil[d];
            ff_tensor *s = ff_slice(t, 2 + d, b, b + g->stride[d] * (out[d] - 1) + 1, g->stride[d]);
            ff_tensor_release(t);
            t = s;
        }
        views[i] = t;
        ok = t != NULL;
    }
    ff_tensor *r = ok ? ff_stack((int)k, views, 2) : NULL;
    for (int64_t i = 0; i < k; i++) ff_tensor_release(views[i]);
    free(views);
    return r;
}

ff_tensor *ff_op_conv_compose(const ff_tensor *x, const ff_tensor *w, const ff_conv_geom *g, const char *fn)
{
    int64_t out[3], k = 1, l = 1, cg;
    if (ff_op_conv_geometry(x, w, g, out, fn)) return NULL;
    for (int d = 0; d < g->nd; d++) k *= w->layout.shape[2 + d]; /* checked: <= INT_MAX */
    const int64_t n = x->layout.shape[0], c = x->layout.shape[1], o = w->layout.shape[0], gr = g->groups;
    for (int d = 0; d < g->nd; d++)
        if (ff_mul_overflow_i64(l, out[d], &l)) return ff_error(FF_ERR_OVERFLOW, "%s: output size overflows", fn), NULL;
    if (ff_mul_overflow_i64(c / gr, k, &cg)) return ff_error(FF_ERR_OVERFLOW, "%s: C * K overflows", fn), NULL;
    ff_expr e = {0};
    ff_tensor *xp = FF_EX(&e, pad_or_cut(x, g));
    ff_tensor *win = xp ? FF_EX(&e, windows(xp, w->layout.shape + 2, g, out, k, fn)) : NULL;
    /* [N, C, K, OUT...] -> columns: a view (stack's output is contiguous), rows ordered
     * c * K + offset like w's flattening; groups split C in order, as w's O. */
    ff_tensor *y;
    if (gr == 1) {
        ff_tensor *cols = FF_EX(&e, ff_reshape(win, 3, (int64_t[]){n, cg, l}));
        ff_tensor *wm = FF_EX(&e, ff_reshape(w, 2, (int64_t[]){o, cg}));
        y = FF_EX(&e, ff_matmul(wm, cols)); /* [O, CK] @ [N, CK, L] -> [N, O, L] */
    } else {
        ff_tensor *cols = FF_EX(&e, ff_reshape(win, 4, (int64_t[]){n, gr, cg, l}));
        ff_tensor *wm = FF_EX(&e, ff_reshape(w, 3, (int64_t[]){gr, o / gr, cg}));
        y = FF_EX(&e, ff_matmul(wm, cols)); /* [G, O/G, CK] @ [N, G, CK, L] -> [N, G, O/G, L] */
    }
    int64_t ys[5] = {n, o, out[0], out[1], out[2]};
    ff_tensor *r = FF_EX(&e, ff_reshape(y, 2 + g->nd, ys));
    r = ff_expr_result(&e, r);
    ff_expr_free(&e);
    return r;
}

ff_status ff_op_conv_check(const ff_tensor *x, const ff_tensor *w, const ff_tensor *bias, const ff_conv_opts *o,
                           bool transposed, const char *fn)
{
    if (!x || !w || !o) return ff_error(FF_ERR_INVALID, "%s: x, w and the options must not be NULL", fn);
    int r = x->layout.ndim;
    char xs[96], ws[96];
    ff_shape_str(x->layout.ndim, x->layout.shape, xs, sizeof xs);
    ff_shape_str(w->layout.ndim, w->layout.shape, ws, sizeof ws);
    if (r < 3 || r > 5 || w->layout.ndim != r)
        return ff_error(FF_ERR_INVALID, "%s: expected x [N, C, S...] with 1 to 3 spatial dims and w of its rank, got x %s and w %s",
                        fn, xs, ws);
    if (!ff_dtype_is_float(x->dtype) || x->dtype != w->dtype || (bias && bias->dtype != x->dtype))
        return ff_error(FF_ERR_INVALID, "%s: x (%s), w (%s) and bias (%s) must share one floating dtype", fn,
                        ff_dtype_name(x->dtype), ff_dtype_name(w->dtype), bias ? ff_dtype_name(bias->dtype) : "none");
    int64_t gr = o->groups;
    if (gr < 1) return ff_error(FF_ERR_INVALID, "%s: groups %lld must be >= 1", fn, (long long)gr);
    struct { const int64_t *v; int64_t min; const char *name; } field[4] = {
        {o->stride, 1, "stride"}, {o->dilation, 1, "dilation"}, {o->padding, 0, "padding"},
        {o->output_padding, 0, "output_padding"}};
    for (int f = 0; f < (transposed ? 4 : 3); f++)
        for (int d = 0; d < r - 2; d++)
            if (field[f].v[d] < field[f].min) {
                char ts[64];
                return ff_error(FF_ERR_INVALID, "%s: %s %s must be >= %lld", fn, field[f].name,
                                tuple_str(r - 2, field[f].v, ts, sizeof ts), (long long)field[f].min);
            }
    for (int d = 0; d < r - 2; d++) {
        if (transposed && o->output_padding[d] >= o->stride[d] && o->output_padding[d] >= o->dilation[d])
            return ff_error(FF_ERR_INVALID, "%s: output_padding %lld in spatial dim %d must be smaller than stride (%lld) or dilation (%lld)",
                            fn, (long long)o->output_padding[d], d, (long long)o->stride[d], (long long)o->dilation[d]);
    }
    /* conv: x's C = G * w[1], O = w[0] divisible by G; transposed: x's C = w[0] divisible
     * by G, O = G * w[1] */
    int64_t c = x->layout.shape[1], w0 = w->layout.shape[0], w1 = w->layout.shape[1];
    int64_t cin = transposed ? w0 : w1 * gr, out = transposed ? w1 * gr : w0;
    if (c != cin)
        return ff_error(FF_ERR_INVALID, "%s: x %s has %lld channels but w %s expects %lld (groups %lld)", fn, xs,
                        (long long)c, ws, (long long)cin, (long long)gr);
    if (w0 % gr)
        return ff_error(FF_ERR_INVALID, "%s: w %s's dim 0 is not divisible by groups %lld", fn, ws, (long long)gr);
    if (bias && (bias->layout.ndim != 1 || bias->layout.shape[0] != out)) {
        char bs[96];
        ff_shape_str(bias->layout.ndim, bias->layout.shape, bs, sizeof bs);
        return ff_error(FF_ERR_INVALID, "%s: bias must have shape [%lld] for w %s, got %s", fn, (long long)out, ws, bs);
    }
    return FF_OK;
}

/* The 2-D convolution on the entries when the backend takes it, else composed. */
static ff_tensor *conv2d_run(const ff_tensor *x, const ff_tensor *w, const ff_conv_geom *g, const char *fn)
{
    ff_conv2d_params p = {{g->stride[0], g->stride[1]}, {g->lo[0], g->lo[1]}, {g->dil[0], g->dil[1]}, g->groups};
    bool symmetric = g->lo[0] == g->hi[0] && g->lo[1] == g->hi[1] && g->lo[0] >= 0 && g->lo[1] >= 0;
    if (!symmetric || !ff_op_conv2d_entry_ok(x, w, &p)) return ff_op_conv_compose(x, w, g, fn);
    int64_t out[2];
    if (ff_op_conv_geometry(x, w, g, out, fn)) return NULL; /* both paths refuse the same calls */
    return ff_op_conv2d_entry(0, x, w, &p, NULL, fn);
}

/* conv without bias, inputs checked: 1-D as 2-D over H = 1, 3-D composed. */
static ff_tensor *conv_run(const ff_tensor *x, const ff_tensor *w, const ff_conv_opts *o, const char *fn)
{
    int nd = x->layout.ndim - 2;
    ff_conv_geom g = {.nd = nd, .groups = o->groups};
    for (int d = 0; d < nd; d++) {
        g.stride[d] = o->stride[d], g.lo[d] = g.hi[d] = o->padding[d], g.dil[d] = o->dilation[d];
        /* A stride beyond the padded size gives the one window the padded size gives: so no
         * later step (a slice, oneDNN, which refuses such strides) sees one near INT64_MAX;
         * PyTorch takes them. An overflowing padded size is ff_op_conv_geometry's error. */
        int64_t padded;
        if (!ff_add_overflow_i64(x->layout.shape[2 + d], o->padding[d], &padded) &&
            !ff_add_overflow_i64(padded, o->padding[d], &padded) && padded >= 1 && g.stride[d] > padded)
            g.stride[d] = padded;
    }
    if (nd == 3) return ff_op_conv_compose(x, w, &g, fn);
    if (nd == 2) return conv2d_run(x, w, &g, fn);
    ff_conv_geom g2 = {2, {1, g.stride[0]}, {0, g.lo[0]}, {0, g.hi[0]}, {1, g.dil[0]}, g.groups};
    ff_expr e = {0};
    ff_tensor *x4 = FF_EX(&e, ff_unsqueeze(x, 2)), *w4 = FF_EX(&e, ff_unsqueeze(w, 2));
    ff_tensor *y4 = e.failed ? NULL : FF_EX(&e, conv2d_run(x4, w4, &g2, fn));
    ff_tensor *y = FF_EX(&e, ff_squeeze(y4, 2));
    ff_tensor *r = ff_expr_result(&e, y);
    ff_expr_free(&e);
    return r;
}

ff_tensor *ff_op_conv(const ff_tensor *x, const ff_tensor *w, const ff_tensor *bias, const ff_conv_opts *o,
                      bool transposed, const char *fn)
{
    /* autocast first, as PyTorch: a half activation (a batch norm's, which stays in x's
     * dtype) meets an f32 weight, and the cast operands are checked below */
    ff_tensor *ac[3];
    int nac = ff_autocast_operands(FF_AUTOCAST_LOW, 3, (const ff_tensor *[]){x, w, bias}, ac, fn);
    if (nac) {
        ff_tensor *r = nac > 0 ? ff_op_conv(ac[0], ac[1], ac[2], o, transposed, fn) : NULL;
        ff_autocast_release(nac, ac);
        return r;
    }
    if (ff_op_conv_check(x, w, bias, o, transposed, fn)) return NULL;
    ff_expr e = {0};
    ff_tensor *y = FF_EX(&e, transposed ? ff_op_conv_transpose(x, w, o, fn) : conv_run(x, w, o, fn));
    if (bias && y) {
        int64_t bs[5] = {bias->layout.shape[0], 1, 1, 1, 1};
        ff_tensor *b = FF_EX(&e, ff_reshape(bias, y->layout.ndim - 1, bs));
        y = FF_EX(&e, ff_add(y, b));
    }
    ff_tensor *r = ff_expr_result(&e, y);
    ff_expr_free(&e);
    if (!r) ff_error_prefix(fn);
    return r;
}

ff_tensor *ff_conv(const ff_tensor *x, const ff_tensor *w, const ff_tensor *bias, const ff_conv_opts *o)
{
    return ff_op_conv(x, w, bias, o, false, "ff_conv");
}

ff_tensor *ff_conv_transpose(const ff_tensor *x, const ff_tensor *w, const ff_tensor *bias, const ff_conv_opts *o)
{
    return ff_op_conv(x, w, bias, o, true, "ff_conv_transpose");
}
