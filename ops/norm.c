/* layer_norm and batch_norm, composed from mean, sub, square, rsqrt, mul and add, so
 * their gradients (including through the batch statistics) come from autograd. (Where
 * the backend has the layer_norm entry, layer_norm.c runs it as one node instead; the
 * composition here stays the reference and the fallback.) The
 * variance is the two-pass mean((x - mean)^2), biased, as PyTorch normalizes with.
 * f32 inputs are normalized in f64 and rounded once: (x - mean)^2 of f32 values
 * overflows f32 (layer norm of [1e30, 1, 2] would be all zeros). Half inputs too, and
 * their weight and bias are applied in f64 before that one rounding: composed in the
 * half dtype every op rounds (a backend declining half compute runs each through the
 * f32 detour), and the result was several half ulps off. */
#include <stdio.h>
#include <string.h>

#include "expr.h"

/* t is NULL or has exactly shape[0..n). */
static bool shape_is(const ff_tensor *t, int n, const int64_t *shape)
{
    if (!t) return true;
    if (t->layout.ndim != n) return false;
    for (int d = 0; d < n; d++)
        if (t->layout.shape[d] != shape[d]) return false;
    return true;
}

/* "[2, 3, 4]" into buf. */
static const char *shape_str(const ff_tensor *t, char *buf, size_t cap)
{
    size_t used = (size_t)snprintf(buf, cap, "[");
    for (int d = 0; d < t->layout.ndim && used < cap; d++)
        used += (size_t)snprintf(buf + used, cap - used, "%s%lld", d ? ", " : "", (long long)t->layout.shape[d]);
    if (used < cap) snprintf(buf + used, cap - used, "]");
    return buf;
}

/* x in the dtype its statistics are computed in: f64 for f32 and the half dtypes (bf16
 * has f32's range, so f32 would overflow as above) (tracked cast). */
static ff_tensor *widen(const ff_tensor *x, const char *fn)
{
    return ff_op_cast(x, FF_F64, fn);
}

static bool is_half(ff_dtype t) { return t == FF_F16 || t == FF_BF16; }

/* The dtype of the batch_norm entry's [C] views (backend_abi.h): f32 for half x, else x's. */
static ff_dtype bn_vec_dtype(const ff_tensor *x) { return is_half(x->dtype) ? FF_F32 : x->dtype; }

/* The dtype y has: x's, promoted with the weight's and the bias's (PyTorch refuses
 * mixed dtypes; we promote, as mul and add would). */
static ff_dtype result_dtype(const ff_tensor *x, const ff_tensor *weight, const ff_tensor *bias)
{
    ff_dtype t = x->dtype;
    if (weight) t = ff_dtype_promote(t, weight->dtype);
    if (bias) t = ff_dtype_promote(t, bias->dtype);
    return t;
}

/* y's dtype for batch norm: x's when x is half and each of weight and bias is x's dtype
 * or f32 (PyTorch's mixed form: bf16 activations, f32 parameters and running stats);
 * otherwise x's promoted with theirs, as result_dtype. */
static ff_dtype bn_result_dtype(const ff_tensor *x, const ff_tensor *weight, const ff_tensor *bias)
{
    bool mixed = is_half(x->dtype);
    if (weight) mixed &= weight->dtype == x->dtype || weight->dtype == FF_F32;
    if (bias) mixed &= bias->dtype == x->dtype || bias->dtype == FF_F32;
    return mixed ? x->dtype : result_dtype(x, weight, bias);
}

static ff_status check_float(const ff_tensor *x, const ff_tensor *const *others, int n, const char *fn)
{
    if (!ff_dtype_is_float(x->dtype))
        return ff_error(FF_ERR_INVALID, "%s: x must be floating point, got %s", fn, ff_dtype_name(x->dtype));
    for (int i = 0; i < n; i++)
        if (others[i] && !ff_dtype_is_float(others[i]->dtype))
            return ff_error(FF_ERR_INVALID, "%s: weight, bias and running statistics must be floating point, got %s",
                            fn, ff_dtype_name(others[i]->dtype));
    return FF_OK;
}

ff_tensor *ff_layer_norm(const ff_tensor *x, int nnorm, const ff_tensor *weight, const ff_tensor *bias, double eps)
{
    static const char fn[] = "ff_layer_norm";
    if (!x) return ff_error(FF_ERR_INVALID, "%s: x is NULL", fn), NULL;
    ff_tensor *ac[3];
    int nac = ff_autocast_operands(FF_AUTOCAST_WIDE, 3, (const ff_tensor *[]){x, weight, bias}, ac, fn);
    if (nac) {
        ff_tensor *r = nac > 0 ? ff_layer_norm(ac[0], nnorm, ac[1], ac[2], eps) : NULL;
        ff_autocast_release(nac, ac);
        return r;
    }
    int nd = x->layout.ndim;
    if (nnorm < 1 || nnorm > nd)
        return ff_error(FF_ERR_INVALID, "%s: nnorm %d must be in [1, %d] for x of rank %d", fn, nnorm, nd, nd), NULL;
    if (check_float(x, (const ff_tensor *[]){weight, bias}, 2, fn)) return NULL;
    if (!(eps >= 0)) return ff_error(FF_ERR_INVALID, "%s: eps %g must be >= 0", fn, eps), NULL;
    const int64_t *norm_shape = x->layout.shape + nd - nnorm;
    if (!shape_is(weight, nnorm, norm_shape) || !shape_is(bias, nnorm, norm_shape)) {
        char xb[160], pb[160];
        const ff_tensor *bad = shape_is(weight, nnorm, norm_shape) ? bias : weight;
        return ff_error(FF_ERR_INVALID, "%s: %s %s must match the last %d dims of x %s", fn,
                        bad == weight ? "weight" : "bias", shape_str(bad, pb, sizeof pb), nnorm,
                        shape_str(x, xb, sizeof xb)), NULL;
    }
    if (ff_layer_norm_entry_ok(x, nnorm, weight, bias)) {
        ff_tensor *r = ff_layer_norm_node(x, nnorm, weight, bias, eps, fn);
        if (r || ff_last_status() != FF_ERR_UNSUPPORTED) return r;
        ff_clear_error(); /* declined after all: the composition below */
    }
    int axes[FF_MAX_DIMS];
    for (int k = 0; k < nnorm; k++) axes[k] = nd - nnorm + k;
    ff_expr e = {0};
    ff_tensor *xs = FF_EX(&e, widen(x, fn));
    ff_tensor *mean = FF_EX(&e, ff_mean(xs, nnorm, axes, true));
    ff_tensor *xc = FF_EX(&e, ff_sub(xs, mean));
    ff_tensor *sq = FF_EX(&e, ff_square(xc));
    ff_tensor *var = FF_EX(&e, ff_mean(sq, nnorm, axes, true));
    ff_tensor *ve = FF_EX(&e, ff_add_scalar(var, eps));
    ff_tensor *inv = FF_EX(&e, ff_rsqrt(ve));
    ff_tensor *y = FF_EX(&e, ff_mul(xc, inv));
    bool half = is_half(x->dtype); /* half: weight and bias in f64 too, one rounding at the end */
    if (!half) y = FF_EX(&e, ff_op_cast(y, x->dtype, fn));
    if (weight) y = FF_EX(&e, ff_mul(y, weight));
    if (bias) y = FF_EX(&e, ff_add(y, bias));
    if (half) y = FF_EX(&e, ff_op_cast(y, result_dtype(x, weight, bias), fn));
    ff_tensor *r = ff_expr_result(&e, y);
    ff_expr_free(&e);
    if (!r) ff_error_prefix(fn);
    return r;
}

/* Blends the batch statistics (keepdim form) into the running pair, in place, under
 * no-grad: r = (1 - momentum) r + momentum s, PyTorch's formula (an infinite running
 * value stays infinite; lerp's r + m (s - r) would make it NaN). The new values are
 * computed first so a failure leaves both untouched. */
static ff_status update_running(ff_tensor *rm, ff_tensor *rv, const ff_tensor *mean, const ff_tensor *var,
                                int64_t count, double momentum)
{
    bool prev = ff_set_grad_enabled(false);
    int64_t c = rm->layout.shape[0];
    ff_expr e = {0};
    ff_tensor *m1 = FF_EX(&e, ff_reshape(mean, 1, &c));
    ff_tensor *v1 = FF_EX(&e, ff_reshape(var, 1, &c));
    ff_tensor *vu = FF_EX(&e, ff_mul_scalar(v1, (double)count / (double)(count - 1))); /* unbiased */
    ff_tensor *km = FF_EX(&e, ff_mul_scalar(rm, 1.0 - momentum)), *sm = FF_EX(&e, ff_mul_scalar(m1, momentum));
    ff_tensor *kv = FF_EX(&e, ff_mul_scalar(rv, 1.0 - momentum)), *sv = FF_EX(&e, ff_mul_scalar(vu, momentum));
    ff_tensor *nm = FF_EX(&e, ff_add(km, sm));
    ff_tensor *nv = FF_EX(&e, ff_add(kv, sv));
    ff_status st = e.failed ? ff_last_status() : ff_copy_(rm, nm);
    if (!st) st = ff_copy_(rv, nv);
    ff_expr_free(&e);
    ff_set_grad_enabled(prev);
    return st;
}


/* ---- batch_norm as one node ------------------------------------------------------ */
/* Composed op by op, batch norm's graph was ~40 passes over x in f64 per training step
 * (7.7x PyTorch's time on a [64, 16, 28, 28] layer). Now the statistics are computed as
 * before (in f64 for f32, two-pass variance) but without a graph, and one node carries
 * the closed-form gradient, in x's dtype:
 *   gxhat = g w;  dx = inv (gxhat - mean(gxhat) - xhat mean(gxhat xhat))   (training)
 *                 dx = inv gxhat                                           (eval)
 *   dw = sum(g xhat), db = sum(g)      (sums and means over every axis but 1)
 * Under create_graph the formula runs on xhat and inv recomputed from x with history,
 * so higher-order gradients see their dependence on x. */
typedef struct bn_geometry {
    int nd, na, axes[FF_MAX_DIMS];
    int64_t c, bshape[FF_MAX_DIMS];
    double eps;
    bool training;
} bn_geometry;

typedef struct bn_parts {
    ff_tensor *mean, *var;  /* keepdim, in the statistics' dtype (f64 for f32 and half) */
    ff_tensor *inv_w;       /* 1 / sqrt(var + eps), same dtype */
    ff_tensor *xhat_w;      /* xhat, same dtype (a half y is computed from it, rounded once) */
    ff_tensor *xhat, *inv;  /* in x's dtype */
} bn_parts;

static void bn_parts_free(bn_parts *p)
{
    ff_tensor_release(p->mean), ff_tensor_release(p->var), ff_tensor_release(p->inv_w);
    ff_tensor_release(p->xhat_w), ff_tensor_release(p->xhat), ff_tensor_release(p->inv);
    memset(p, 0, sizeof *p);
}

/* xhat = (x - mean) inv, with batch statistics, or (rm, rv) the running ones; recorded
 * when grad mode is on. */
static ff_status bn_normalize(const ff_tensor *x, const bn_geometry *g, const ff_tensor *rm, const ff_tensor *rv,
                              bn_parts *p, const char *fn)
{
    ff_expr e = {0};
    ff_tensor *xs = FF_EX(&e, widen(x, fn)), *mean, *var;
    if (!rm) {
        mean = FF_EX(&e, ff_mean(xs, g->na, g->axes, true));
        ff_tensor *xc0 = FF_EX(&e, ff_sub(xs, mean));
        ff_tensor *sq = FF_EX(&e, ff_square(xc0));
        var = FF_EX(&e, ff_mean(sq, g->na, g->axes, true));
    } else {
        /* copies: the node saves them, and the running buffers change in place later */
        mean = FF_EX(&e, ff_reshape(rm, g->nd, g->bshape));
        mean = FF_EX(&e, ff_clone(mean));
        var = FF_EX(&e, ff_reshape(rv, g->nd, g->bshape));
    }
    ff_tensor *xc = FF_EX(&e, ff_sub(xs, mean));
    ff_tensor *ve = FF_EX(&e, ff_add_scalar(var, g->eps));
    ff_tensor *inv_w = FF_EX(&e, ff_rsqrt(ve));
    ff_tensor *xh = FF_EX(&e, ff_mul(xc, inv_w));
    ff_tensor *xhat = FF_EX(&e, ff_op_cast(xh, x->dtype, fn));
    ff_tensor *inv = FF_EX(&e, ff_op_cast(inv_w, x->dtype, fn));
    ff_status st = e.failed ? ff_last_status() : FF_OK;
    if (!st) {
        p->mean = ff_tensor_retain(mean), p->var = ff_tensor_retain(var), p->inv_w = ff_tensor_retain(inv_w);
        p->xhat_w = ff_tensor_retain(xh), p->xhat = ff_tensor_retain(xhat), p->inv = ff_tensor_retain(inv);
    }
    ff_expr_free(&e);
    return st;
}

/* ip: [0] training, [1] 1 + index of weight among the inputs (0: none), [2] same for
 * bias, [3] nd, [4] c, [5..] axes; dp[0] eps. saved: [0] xhat, [1] inv (x's dtype),
 * [2] mean, [3] inv in the statistics' dtype (eval-mode recomputation). */
static ff_status bn_entry_backward(ff_node *n, const ff_tensor *g, ff_tensor **gi, const struct bn_geometry *geo);

static ff_status batch_norm_backward(ff_node *n, const ff_tensor *g, ff_tensor **gi)
{
    bn_geometry geo = {.nd = (int)n->ip[3], .c = n->ip[4], .eps = n->dp[0], .training = n->ip[0] != 0};
    for (int d = 0, k = 0; d < geo.nd; d++) {
        geo.bshape[d] = d == 1 ? geo.c : 1;
        if (d != 1) geo.axes[k++] = d;
    }
    geo.na = geo.nd - 1;
    bool entry = n->ip[5] != 0;
    if (entry && !ff_grad_enabled()) return bn_entry_backward(n, g, gi, &geo);
    /* the saved values: xhat, inv, mean, inv_w (composed forward); the entry's forward
     * saves mean and invstd only, and its create_graph path recomputes from x */
    const ff_tensor *sx = ff_node_saved(n, 0), *si = ff_node_saved(n, 1), *sm = entry ? sx : ff_node_saved(n, 2),
                    *sw = entry ? si : ff_node_saved(n, 3);
    if (!sx || !si || !sm || !sw) return ff_last_status();
    const ff_tensor *x = n->inputs[0];
    const ff_tensor *w = n->ip[1] ? n->inputs[n->ip[1] - 1] : NULL;
    bn_parts p = {0};
    ff_status st = FF_OK;
    if (ff_grad_enabled()) { /* create_graph: xhat and inv as functions of x */
        if (geo.training) {
            st = bn_normalize(x, &geo, NULL, NULL, &p, n->name);
        } else {
            ff_expr e = {0};
            ff_tensor *xs = FF_EX(&e, widen(x, n->name)), *xc = FF_EX(&e, ff_sub(xs, sm));
            ff_tensor *xh = FF_EX(&e, ff_mul(xc, sw));
            p.xhat = ff_expr_result(&e, FF_EX(&e, ff_op_cast(xh, x->dtype, n->name)));
            ff_expr_free(&e);
            p.inv = p.xhat ? ff_op_cast(sw, x->dtype, n->name) : NULL;
            st = p.xhat && p.inv ? FF_OK : ff_last_status();
        }
    } else {
        p.xhat = ff_tensor_retain((ff_tensor *)sx), p.inv = ff_tensor_retain((ff_tensor *)si);
    }
    ff_expr e = {0};
    if (!st) {
        const ff_tensor *xhat = p.xhat;
        ff_tensor *gxhat = (ff_tensor *)g;
        if (w) {
            ff_tensor *wb = FF_EX(&e, ff_reshape(w, geo.nd, geo.bshape));
            gxhat = FF_EX(&e, ff_mul(g, wb));
        }
        if (n->needs_grad[0]) {
            ff_tensor *d = gxhat;
            if (geo.training) {
                ff_tensor *m1 = FF_EX(&e, ff_mean(gxhat, geo.na, geo.axes, true));
                ff_tensor *gx2 = FF_EX(&e, ff_mul(gxhat, xhat));
                ff_tensor *m2 = FF_EX(&e, ff_mean(gx2, geo.na, geo.axes, true));
                ff_tensor *t = FF_EX(&e, ff_mul(xhat, m2));
                d = FF_EX(&e, ff_sub(gxhat, m1));
                d = FF_EX(&e, ff_sub(d, t));
            }
            gi[0] = ff_expr_result(&e, FF_EX(&e, ff_mul(d, p.inv)));
        }
        int64_t c = geo.c;
        /* half x: the parameters' sums in f32 (their gradients are f32 for f32 weights, as
         * PyTorch's; products and sums rounded to bf16 were 0.7% off) */
        const ff_tensor *gs = g, *xw = xhat;
        bool wide = is_half(x->dtype) &&
                    ((n->ip[1] && n->needs_grad[n->ip[1] - 1]) || (n->ip[2] && n->needs_grad[n->ip[2] - 1]));
        if (wide) {
            gs = FF_EX(&e, ff_op_cast(g, FF_F32, n->name));
            /* xhat in the statistics' dtype: the saved one is rounded to x's */
            xw = p.xhat_w ? p.xhat_w : FF_EX(&e, ff_mul(FF_EX(&e, ff_sub(FF_EX(&e, widen(x, n->name)), sm)), sw));
        }
        if (n->ip[1] && n->needs_grad[n->ip[1] - 1] && !e.failed) {
            ff_tensor *gxh = FF_EX(&e, ff_mul(gs, xw));
            ff_tensor *sgw = FF_EX(&e, ff_sum(gxh, geo.na, geo.axes, false));
            gi[n->ip[1] - 1] = ff_expr_result(&e, FF_EX(&e, ff_reshape(sgw, 1, &c)));
        }
        if (n->ip[2] && n->needs_grad[n->ip[2] - 1] && !e.failed) {
            ff_tensor *sgb = FF_EX(&e, ff_sum(gs, geo.na, geo.axes, false));
            gi[n->ip[2] - 1] = ff_expr_result(&e, FF_EX(&e, ff_reshape(sgb, 1, &c)));
        }
        if (e.failed) st = ff_last_status();
    }
    ff_expr_free(&e);
    bn_parts_free(&p);
    return st;
}

static ff_status record_batch_norm(ff_tensor *r, const ff_tensor *x, const ff_tensor *weight, const ff_tensor *bias,
                                   const bn_geometry *g, const bn_parts *p, bool entry)
{
    const ff_tensor *in[3];
    int n = 0, iw = 0, ib = 0;
    in[n++] = x;
    if (weight) in[n++] = weight, iw = n;
    if (bias) in[n++] = bias, ib = n;
    ff_node *node = ff_autograd_record(r, "batch_norm", batch_norm_backward, n, in);
    if (!node) return ff_last_status();
    node->ip[0] = g->training, node->ip[1] = iw, node->ip[2] = ib, node->ip[3] = g->nd, node->ip[4] = g->c;
    node->ip[5] = entry;
    node->nip = 6;
    node->dp[0] = g->eps;
    if (entry) /* [0] mean, [1] invstd, both [C] */
        return ff_node_save(node, p->mean) || ff_node_save(node, p->inv_w) ? ff_last_status() : FF_OK;
    if (ff_node_save(node, p->xhat) || ff_node_save(node, p->inv) || ff_node_save(node, p->mean) ||
        ff_node_save(node, p->inv_w))
        return ff_last_status();
    return FF_OK;
}

/* ---- the backend's batch_norm entry (training) ------------------------------------ */
/* Two passes forward, two backward, instead of the composition's dozen; used when the
 * backend has both ops of the entry (FF_BATCH_NORM=compose forces the composition). */
static bool use_entry(const ff_tensor *x)
{
    return ff_op_entry_enabled(x, FF_KIND_BATCH_NORM, 0, 1, "FF_BATCH_NORM");
}

/* weight in the entry's [C] dtype (a half weight widened, untracked: the node records
 * the weight itself), or ones of [C] on x's backend when there is none (bias: zeros). */
static ff_tensor *affine_or(const ff_tensor *v, const ff_tensor *x, double fill)
{
    ff_dtype vt = bn_vec_dtype(x);
    if (v && v->dtype == vt) return ff_tensor_retain((ff_tensor *)v);
    if (v) {
        bool prev = ff_set_grad_enabled(false);
        ff_tensor *r = ff_op_cast(v, vt, "ff_batch_norm");
        ff_set_grad_enabled(prev);
        return r;
    }
    int64_t c = x->layout.shape[1];
    return ff_full_on(x->storage->backend, 1, &c, vt, fill);
}

static ff_status bn_entry_backward(ff_node *n, const ff_tensor *g, ff_tensor **gi, const struct bn_geometry *geo)
{
    const ff_tensor *x = n->inputs[0], *mean = ff_node_saved(n, 0), *inv = mean ? ff_node_saved(n, 1) : NULL;
    if (!inv) return ff_last_status();
    const ff_tensor *weight = n->ip[1] ? n->inputs[n->ip[1] - 1] : NULL;
    int64_t c = geo->c;
    ff_tensor *w = affine_or(weight, x, 1.0), *out[3] = {NULL, NULL, NULL};
    ff_status st = w ? FF_OK : ff_last_status();
    if (!st && !(out[0] = ff_tensor_new(x->storage->backend, x->layout.ndim, x->layout.shape, x->dtype, n->name)))
        st = ff_last_status();
    for (int i = 1; i < 3 && !st; i++) /* gw, gb: the engine casts them to the parameters' dtype */
        if (!(out[i] = ff_tensor_new(x->storage->backend, 1, &c, bn_vec_dtype(x), n->name))) st = ff_last_status();
    const ff_tensor *src[5] = {g, x, mean, inv, w};
    if (!st) st = ff_kernel_batch_norm(1, out, 3, src, 5, n->dp[0], n->name);
    if (!st) {
        if (n->needs_grad[0]) gi[0] = ff_tensor_retain(out[0]);
        if (n->ip[1] && n->needs_grad[n->ip[1] - 1]) gi[n->ip[1] - 1] = ff_tensor_retain(out[1]);
        if (n->ip[2] && n->needs_grad[n->ip[2] - 1]) gi[n->ip[2] - 1] = ff_tensor_retain(out[2]);
    }
    for (int i = 0; i < 3; i++) ff_tensor_release(out[i]);
    ff_tensor_release(w);
    return st;
}

/* Training mode on the entry: y, and the statistics into p (mean, inv_w = invstd, var). */
static ff_tensor *bn_entry_forward(const ff_tensor *x, const ff_tensor *weight, const ff_tensor *bias,
                                   const bn_geometry *geo, bn_parts *p, const char *fn)
{
    int64_t c = geo->c;
    ff_tensor *w = affine_or(weight, x, 1.0), *b = affine_or(bias, x, 0.0), *out[4] = {NULL, NULL, NULL, NULL};
    ff_status st = w && b ? FF_OK : ff_last_status();
    if (!st && !(out[0] = ff_tensor_new(x->storage->backend, x->layout.ndim, x->layout.shape, x->dtype, fn)))
        st = ff_last_status();
    for (int i = 1; i < 4 && !st; i++)
        if (!(out[i] = ff_tensor_new(x->storage->backend, 1, &c, bn_vec_dtype(x), fn))) st = ff_last_status();
    const ff_tensor *src[3] = {x, w, b};
    if (!st) st = ff_kernel_batch_norm(0, out, 4, src, 3, geo->eps, fn);
    ff_tensor_release(w), ff_tensor_release(b);
    if (st) {
        for (int i = 0; i < 4; i++) ff_tensor_release(out[i]);
        return NULL;
    }
    p->mean = out[1], p->inv_w = out[2], p->var = out[3];
    return out[0];
}

/* Eval mode without autograd (inference): y = x scale + shift with scale = w / sqrt(rv + eps)
 * and shift = b - rm scale per channel, computed in f64 on [C] and rounded to x's dtype,
 * then two passes over x in its own dtype (PyTorch's CPU kernel has the same form). */
static ff_tensor *bn_eval_inference(const ff_tensor *x, const ff_tensor *rm, const ff_tensor *rv,
                                    const ff_tensor *weight, const ff_tensor *bias, const bn_geometry *g, const char *fn)
{
    ff_expr e = {0};
    ff_tensor *m = FF_EX(&e, ff_op_cast(rm, FF_F64, fn)), *v = FF_EX(&e, ff_op_cast(rv, FF_F64, fn));
    ff_tensor *ve = FF_EX(&e, ff_add_scalar(v, g->eps));
    ff_tensor *scale = FF_EX(&e, ff_rsqrt(ve));
    if (weight) scale = FF_EX(&e, ff_mul(scale, FF_EX(&e, ff_op_cast(weight, FF_F64, fn))));
    ff_tensor *shift = FF_EX(&e, ff_neg(FF_EX(&e, ff_mul(m, scale))));
    if (bias) shift = FF_EX(&e, ff_add(shift, FF_EX(&e, ff_op_cast(bias, FF_F64, fn))));
    ff_tensor *r;
    if (ff_op_entry_enabled(x, FF_KIND_BATCH_NORM, 2, 2, "FF_BATCH_NORM")) {
        /* the entry's eval op: one pass, scale and shift in its [C] dtype (f32 for half x:
         * y rounded once, where the two ops below round twice) */
        ff_tensor *sc = FF_EX(&e, ff_op_cast(scale, bn_vec_dtype(x), fn));
        ff_tensor *sh = FF_EX(&e, ff_op_cast(shift, bn_vec_dtype(x), fn));
        ff_tensor *y = FF_EX(&e, ff_tensor_new(x->storage->backend, x->layout.ndim, x->layout.shape, x->dtype, fn));
        const ff_tensor *src[3] = {x, sc, sh};
        r = !e.failed && !ff_kernel_batch_norm(2, &y, 1, src, 3, g->eps, fn) ? ff_tensor_retain(y) : NULL;
    } else { /* half x: in f32, rounded once, as the entry (rounded twice, x scale + shift
              * cancels to a few correct bits) */
        ff_dtype wt = bn_vec_dtype(x);
        ff_tensor *sc = FF_EX(&e, ff_reshape(FF_EX(&e, ff_op_cast(scale, wt, fn)), g->nd, g->bshape));
        ff_tensor *sh = FF_EX(&e, ff_reshape(FF_EX(&e, ff_op_cast(shift, wt, fn)), g->nd, g->bshape));
        ff_tensor *xw = FF_EX(&e, wt == x->dtype ? ff_tensor_retain((ff_tensor *)x) : ff_op_cast(x, wt, fn));
        ff_tensor *y = FF_EX(&e, ff_add(FF_EX(&e, ff_mul(xw, sc)), sh));
        r = ff_expr_result(&e, FF_EX(&e, wt == x->dtype ? ff_tensor_retain(y) : ff_op_cast(y, x->dtype, fn)));
    }
    ff_expr_free(&e);
    if (!r) ff_error_prefix(fn);
    return r;
}

ff_tensor *ff_batch_norm(const ff_tensor *x, ff_tensor *running_mean, ff_tensor *running_var,
                         const ff_tensor *weight, const ff_tensor *bias, bool training, double momentum, double eps)
{
    static const char fn[] = "ff_batch_norm";
    if (!x) return ff_error(FF_ERR_INVALID, "%s: x is NULL", fn), NULL;
    /* No autocast rule: PyTorch 1.13's autocast (CPU and CUDA lists alike) leaves batch
     * norm in x's dtype, and half x with f32 parameters is its mixed form (y in x's dtype).
     * Widening here cost a cast forward and one backward around every BN of a bf16 CNN. */
    int nd = x->layout.ndim;
    char xb[160], pb[160];
    if (nd < 2)
        return ff_error(FF_ERR_INVALID, "%s: expected x [N, C] or [N, C, ...], got rank %d", fn, nd), NULL;
    const ff_tensor *vecs[] = {running_mean, running_var, weight, bias};
    static const char *const names[] = {"running_mean", "running_var", "weight", "bias"};
    if (check_float(x, vecs, 4, fn)) return NULL;
    int64_t c = x->layout.shape[1];
    for (int i = 0; i < 4; i++)
        if (!shape_is(vecs[i], 1, &c))
            return ff_error(FF_ERR_INVALID, "%s: %s %s must be [%lld] for x %s", fn, names[i],
                            shape_str(vecs[i], pb, sizeof pb), (long long)c, shape_str(x, xb, sizeof xb)), NULL;
    if (!running_mean != !running_var)
        return ff_error(FF_ERR_INVALID, "%s: give both running_mean and running_var or neither", fn), NULL;
    if (!training && !running_mean)
        return ff_error(FF_ERR_INVALID, "%s: running_mean and running_var are required in eval mode", fn), NULL;
    if (!(eps >= 0)) return ff_error(FF_ERR_INVALID, "%s: eps %g must be >= 0", fn, eps), NULL;
    if (training && running_mean && !(momentum >= 0 && momentum <= 1))
        return ff_error(FF_ERR_INVALID, "%s: momentum %g must be in [0, 1]", fn, momentum), NULL;
    int64_t count = c ? ff_tensor_numel(x) / c : 0;
    if (training && count <= 1)
        return ff_error(FF_ERR_INVALID, "%s: expected more than 1 value per channel when training, got x %s", fn,
                        shape_str(x, xb, sizeof xb)), NULL;

    int axes[FF_MAX_DIMS], na = 0;
    int64_t bshape[FF_MAX_DIMS]; /* [1, C, 1, ...]: a [C] vector against x */
    for (int d = 0; d < nd; d++) {
        bshape[d] = d == 1 ? c : 1;
        if (d != 1) axes[na++] = d;
    }
    bn_geometry geo = {.nd = nd, .na = na, .c = c, .eps = eps, .training = training};
    memcpy(geo.axes, axes, sizeof axes);
    memcpy(geo.bshape, bshape, sizeof bshape);
    const ff_tensor *in[3] = {x, weight, bias};
    if (training && use_entry(x) && bn_result_dtype(x, weight, bias) == x->dtype) {
        bn_parts p = {0};
        ff_tensor *r = bn_entry_forward(x, weight, bias, &geo, &p, fn);
        if (r && ff_autograd_needed(3, in) && record_batch_norm(r, x, weight, bias, &geo, &p, true)) {
            ff_tensor_release(r);
            r = NULL;
        }
        if (r && running_mean && update_running(running_mean, running_var, p.mean, p.var, count, momentum)) {
            ff_tensor_release(r);
            r = NULL;
        }
        bn_parts_free(&p);
        if (!r) ff_error_prefix(fn);
        return r;
    }
    if (!training && !ff_autograd_needed(3, in))
        return bn_eval_inference(x, running_mean, running_var, weight, bias, &geo, fn);
    /* the values, without a graph: one node below stands for all of it */
    bool prev = ff_set_grad_enabled(false);
    bn_parts p = {0};
    ff_status st = bn_normalize(x, &geo, training ? NULL : running_mean, training ? NULL : running_var, &p, fn);
    ff_expr e = {0};
    bool half = is_half(x->dtype); /* half: weight and bias in f64 too, one rounding at the end */
    /* a failed normalization fails the arena, so no op below runs on its NULL */
    ff_tensor *y = FF_EX(&e, st ? NULL : ff_tensor_retain(half ? p.xhat_w : p.xhat));
    if (weight) {
        ff_tensor *wb = FF_EX(&e, ff_reshape(weight, nd, bshape));
        y = FF_EX(&e, ff_mul(y, wb));
    }
    if (bias) {
        ff_tensor *bb = FF_EX(&e, ff_reshape(bias, nd, bshape));
        y = FF_EX(&e, ff_add(y, bb));
    }
    if (half) y = FF_EX(&e, ff_op_cast(y, bn_result_dtype(x, weight, bias), fn));
    ff_set_grad_enabled(prev);
    ff_tensor *r = ff_expr_result(&e, y);
    ff_expr_free(&e);
    if (r && ff_autograd_needed(3, in) && record_batch_norm(r, x, weight, bias, &geo, &p, false)) {
        ff_tensor_release(r);
        r = NULL;
    }
    if (r && training && running_mean && update_running(running_mean, running_var, p.mean, p.var, count, momentum)) {
        ff_tensor_release(r);
        r = NULL;
    }
    bn_parts_free(&p);
    if (!r) ff_error_prefix(fn);
    return r;
}
