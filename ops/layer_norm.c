/* layer_norm as one node on the backend's optional layer_norm entry (issue 35): the
 * composition in norm.c walks x about a dozen times in f64 (widen, mean, sub, square,
 * mean, add, rsqrt, mul, mul w, add b, cast back), a fifth of MiniLM's bf16 forward. Here
 * the forward is one entry call (two passes per row in double, y rounded once) and the
 * node's backward another, with the closed form
 *   gxhat = g w;  gx = inv (gxhat - mean_D(gxhat) - xhat mean_D(gxhat xhat))
 *   gw = sum_R(g xhat), gb = sum_R(g)
 * The entry sees x as [R, D] (the normalized dims folded into D, contiguous) and always
 * gets w and b: ones and zeros for a layer without them. Under create_graph the same
 * formula runs on ops with history, xhat and inv recomputed from x as the composition
 * does, so higher-order gradients see their dependence on x. norm.c decides when this
 * path applies (ff_layer_norm_entry_ok) and keeps the composition as the reference. */
#include <string.h>

#include "expr.h"

typedef struct ln_geometry {
    int nd, nnorm, axes[FF_MAX_DIMS], lead[FF_MAX_DIMS];
    int64_t r, d, rd[2];
} ln_geometry;

static ln_geometry ln_geometry_of(const ff_tensor *x, int nnorm)
{
    ln_geometry g = {.nd = x->layout.ndim, .nnorm = nnorm, .d = 1};
    for (int k = 0; k < nnorm; k++) g.axes[k] = g.nd - nnorm + k, g.d *= x->layout.shape[g.nd - nnorm + k];
    for (int k = 0; k < g.nd - nnorm; k++) g.lead[k] = k;
    g.r = g.d ? ff_tensor_numel(x) / g.d : 0;
    g.rd[0] = g.r, g.rd[1] = g.d;
    return g;
}

bool ff_layer_norm_entry_ok(const ff_tensor *x, int nnorm, const ff_tensor *weight, const ff_tensor *bias)
{
    const ff_tensor *wb[2] = {weight, bias};
    for (int i = 0; i < 2; i++)
        if (wb[i] && (wb[i]->dtype != x->dtype || wb[i]->storage->backend != x->storage->backend)) return false;
    return ln_geometry_of(x, nnorm).d > 0 && ff_op_entry_enabled(x, FF_KIND_LAYER_NORM, 0, 1, "FF_LAYER_NORM");
}

/* t as [R, D] (or [D]) and contiguous, as the entry takes it; a fill of [D] when t is NULL. */
static ff_tensor *ln_flat(const ff_tensor *t, int n, const int64_t *shape, const ff_tensor *x, double fill)
{
    if (!t) return ff_full_on(x->storage->backend, 1, shape + n - 1, x->dtype, fill);
    ff_tensor *c = ff_contiguous(t), *r = c ? ff_reshape(c, n, shape) : NULL;
    ff_tensor_release(c);
    return r;
}

/* The entry's op 0 or 1 on ins (flattened here), into outs [R, D], [.], [.] (new). */
static ff_status ln_entry_call(int op, const ff_tensor *const *ins, ff_tensor **out, const ff_tensor *x,
                               const ln_geometry *g, double eps, const char *fn)
{
    ff_backend *be = x->storage->backend;
    ff_tensor *src[5] = {NULL};
    int n_src = op ? 5 : 3;
    ff_status st = FF_OK;
    for (int i = 0; i < n_src && !st; i++) {
        bool stat = op && (i == 2 || i == 3), vec = op ? i == 4 : i > 0;
        if (stat) src[i] = ff_tensor_retain((ff_tensor *)ins[i]);
        else src[i] = vec ? ln_flat(ins[i], 1, &g->d, x, op || i == 1 ? 1.0 : 0.0) : ln_flat(ins[i], 2, g->rd, x, 0);
        if (!src[i]) st = ff_last_status();
    }
    out[0] = out[1] = out[2] = NULL;
    if (!st && !(out[0] = ff_tensor_new(be, 2, g->rd, x->dtype, fn))) st = ff_last_status();
    for (int i = 1; i < 3 && !st; i++)
        if (!(out[i] = op ? ff_tensor_new(be, 1, &g->d, x->dtype, fn) : ff_tensor_new(be, 1, &g->r, FF_F64, fn)))
            st = ff_last_status();
    if (!st) st = ff_kernel_layer_norm(op, out, 3, (const ff_tensor *const *)src, n_src, eps, fn);
    for (int i = 0; i < n_src; i++) ff_tensor_release(src[i]);
    if (st)
        for (int i = 0; i < 3; i++) ff_tensor_release(out[i]), out[i] = NULL;
    return st;
}

/* The closed form on ops (with history when grad mode is on): create_graph, and a
 * backend that declines the backward's dtype after all. */
static ff_status ln_formula_backward(ff_node *n, const ff_tensor *g, ff_tensor **gi, const ln_geometry *geo,
                                     const ff_tensor *w)
{
    const ff_tensor *x = n->inputs[0];
    ff_expr e = {0};
    ff_tensor *xs = FF_EX(&e, ff_op_cast(x, FF_F64, n->name));
    ff_tensor *mean = FF_EX(&e, ff_mean(xs, geo->nnorm, geo->axes, true));
    ff_tensor *xc = FF_EX(&e, ff_sub(xs, mean));
    ff_tensor *var = FF_EX(&e, ff_mean(FF_EX(&e, ff_square(xc)), geo->nnorm, geo->axes, true));
    ff_tensor *inv_w = FF_EX(&e, ff_rsqrt(FF_EX(&e, ff_add_scalar(var, n->dp[0]))));
    ff_tensor *xhat = FF_EX(&e, ff_op_cast(FF_EX(&e, ff_mul(xc, inv_w)), x->dtype, n->name));
    ff_tensor *inv = FF_EX(&e, ff_op_cast(inv_w, x->dtype, n->name));
    ff_tensor *gxhat = w ? FF_EX(&e, ff_mul(g, w)) : (ff_tensor *)g;
    if (n->needs_grad[0]) {
        ff_tensor *m1 = FF_EX(&e, ff_mean(gxhat, geo->nnorm, geo->axes, true));
        ff_tensor *m2 = FF_EX(&e, ff_mean(FF_EX(&e, ff_mul(gxhat, xhat)), geo->nnorm, geo->axes, true));
        ff_tensor *d = FF_EX(&e, ff_sub(FF_EX(&e, ff_sub(gxhat, m1)), FF_EX(&e, ff_mul(xhat, m2))));
        gi[0] = ff_expr_result(&e, FF_EX(&e, ff_mul(d, inv)));
    }
    int nl = geo->nd - geo->nnorm; /* no leading dims: the sums over R are the terms themselves */
    if (n->ip[1] && n->needs_grad[n->ip[1] - 1] && !e.failed) {
        ff_tensor *t = FF_EX(&e, ff_mul(g, xhat));
        gi[n->ip[1] - 1] = ff_expr_result(&e, nl ? FF_EX(&e, ff_sum(t, nl, geo->lead, false)) : t);
    }
    if (n->ip[2] && n->needs_grad[n->ip[2] - 1] && !e.failed)
        gi[n->ip[2] - 1] = nl ? ff_expr_result(&e, FF_EX(&e, ff_sum(g, nl, geo->lead, false))) : ff_clone(g);
    ff_status st = e.failed ? ff_last_status() : FF_OK;
    ff_expr_free(&e);
    return st;
}

/* ip: [0] nnorm, [1] 1 + index of weight among the inputs (0: none), [2] same for bias;
 * dp[0] eps. saved: [0] mean, [1] invstd, both [R] f64. */
static ff_status layer_norm_backward(ff_node *n, const ff_tensor *g, ff_tensor **gi)
{
    const ff_tensor *x = n->inputs[0], *w = n->ip[1] ? n->inputs[n->ip[1] - 1] : NULL;
    ln_geometry geo = ln_geometry_of(x, (int)n->ip[0]);
    if (!ff_grad_enabled()) {
        const ff_tensor *mean = ff_node_saved(n, 0), *inv = mean ? ff_node_saved(n, 1) : NULL;
        if (!inv) return ff_last_status();
        const ff_tensor *ins[5] = {g, x, mean, inv, w};
        ff_tensor *out[3];
        ff_status st = ln_entry_call(1, ins, out, x, &geo, n->dp[0], n->name);
        if (st == FF_ERR_UNSUPPORTED) return ln_formula_backward(n, g, gi, &geo, w);
        if (st) return st;
        if (n->needs_grad[0] && !(gi[0] = ff_reshape(out[0], geo.nd, x->layout.shape))) st = ff_last_status();
        for (int k = 1; k < 3 && !st; k++) {
            int idx = (int)n->ip[k] - 1;
            if (idx >= 0 && n->needs_grad[idx] && !(gi[idx] = ff_reshape(out[k], geo.nnorm, x->layout.shape + geo.nd - geo.nnorm)))
                st = ff_last_status();
        }
        for (int k = 0; k < 3; k++) ff_tensor_release(out[k]);
        return st;
    }
    return ln_formula_backward(n, g, gi, &geo, w);
}

/* y = layer_norm(x) over the last nnorm dims on the entry, arguments checked by
 * ff_layer_norm; NULL with FF_ERR_UNSUPPORTED (no message) when the backend declines. */
ff_tensor *ff_layer_norm_node(const ff_tensor *x, int nnorm, const ff_tensor *weight, const ff_tensor *bias,
                              double eps, const char *fn)
{
    ln_geometry geo = ln_geometry_of(x, nnorm);
    bool prev = ff_set_grad_enabled(false);
    const ff_tensor *ins[3] = {x, weight, bias};
    ff_tensor *out[3], *y = NULL;
    ff_status st = ln_entry_call(0, ins, out, x, &geo, eps, fn);
    if (!st && !(y = ff_reshape(out[0], geo.nd, x->layout.shape))) st = ff_last_status();
    ff_set_grad_enabled(prev);
    if (!st && ff_autograd_needed(3, ins)) {
        const ff_tensor *in[3];
        int n = 0, iw = 0, ib = 0;
        in[n++] = x;
        if (weight) in[n++] = weight, iw = n;
        if (bias) in[n++] = bias, ib = n;
        ff_node *node = ff_autograd_record(y, "layer_norm", layer_norm_backward, n, in);
        if (!node) {
            st = ff_last_status();
        } else {
            node->ip[0] = nnorm, node->ip[1] = iw, node->ip[2] = ib, node->nip = 3;
            node->dp[0] = eps;
            if (ff_node_save(node, out[1]) || ff_node_save(node, out[2])) st = ff_last_status();
        }
    }
    for (int k = 0; k < 3; k++) ff_tensor_release(out[k]);
    if (!st) return y;
    ff_tensor_release(y);
    return NULL;
}
