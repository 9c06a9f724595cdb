/* softmax and log_softmax along one axis. The backend's fused entry is used when it
 * has one; otherwise the op is composed (x - max, exp, / sum) so every backend gets
 * the numerically stable form (FF_SOFTMAX=compose forces the composition, to compare
 * the two). Either way one node is recorded, whose gradient is written with ff ops so
 * higher orders work. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "expr.h"

static ff_tensor *softmax_impl(const ff_tensor *x, int axis, bool log, const char *fn);

/* ---- gradient ------------------------------------------------------------------ */
/* ip: [0] axis (normalized), [1] 1 for log_softmax. saved: [0] y, [1] the input. */
static ff_status softmax_backward(ff_node *n, const ff_tensor *g, ff_tensor **gi)
{
    int axis = (int)n->ip[0];
    bool log = n->ip[1] != 0;
    const ff_tensor *ys = ff_node_saved(n, 0), *xs = ff_node_saved(n, 1);
    if (!ys || !xs) return ff_last_status();
    /* The saved y has no history. Under create_graph the gradient must reach x
     * through y too, so y is recomputed from the recorded input instead. */
    ff_tensor *y = ff_grad_enabled() ? softmax_impl(n->inputs[0], axis, log, n->name) : ff_tensor_retain((ff_tensor *)ys);
    if (!y) return ff_last_status();
    ff_tensor *r = NULL;
    if (log) { /* g - exp(y) * sum(g) */
        ff_tensor *e = ff_exp(y), *s = e ? ff_sum(g, 1, &axis, true) : NULL;
        ff_tensor *es = s ? ff_mul(e, s) : NULL;
        r = es ? ff_sub(g, es) : NULL;
        ff_tensor_release(e);
        ff_tensor_release(s);
        ff_tensor_release(es);
    } else { /* y * (g - sum(g * y)) */
        ff_tensor *gy = ff_mul(g, y), *s = gy ? ff_sum(gy, 1, &axis, true) : NULL;
        ff_tensor *d = s ? ff_sub(g, s) : NULL;
        r = d ? ff_mul(y, d) : NULL;
        ff_tensor_release(gy);
        ff_tensor_release(s);
        ff_tensor_release(d);
    }
    ff_tensor_release(y);
    gi[0] = r;
    return r ? FF_OK : ff_last_status();
}

/* ---- forward ------------------------------------------------------------------- */
/* The composed form, without history (the caller records the single node). A half x is
 * composed in f32 and rounded once at the end: on a backend that declines half compute
 * each op of the chain would round to the half dtype (the core's f32 detour, per op),
 * and four roundings are 1-2 half ulps off.
 * log_softmax is sh - log1p(t), t = sum(exp(sh)) - 1 summed without the row's leading 1
 * (every maximum's term is exactly 1: the others, and the ties beyond the first); log of
 * a sum that rounds to 1 is +0 and lost every other term. And where a row has another
 * term than its maximum (an x above -inf), the maximum's exact value is negative even
 * when the other terms underflow (e^-200), so it is -(log1p(t) - sh): -0, not 0 - +0. */
static ff_tensor *softmax_compose(const ff_tensor *x, int axis, bool log, const char *fn)
{
    bool prev = ff_set_grad_enabled(false);
    ff_expr e = {0};
    ff_dtype wide = x->dtype == FF_F16 || x->dtype == FF_BF16 ? FF_F32 : x->dtype;
    ff_tensor *xw = FF_EX(&e, ff_op_cast(x, wide, fn));
    ff_tensor *m = FF_EX(&e, ff_amax(xw, 1, &axis, true));
    ff_tensor *sh = FF_EX(&e, ff_sub(xw, m));
    ff_tensor *ex = FF_EX(&e, ff_exp(sh)), *r;
    if (log) {
        ff_tensor *top = FF_EX(&e, ff_binary_scalar(FF_BINARY_EQ, sh, 0.0));
        ff_tensor *rest = FF_EX(&e, ff_where(top, FF_EX(&e, ff_zeros_like(ex)), ex));
        ff_tensor *ties = FF_EX(&e, ff_sum(FF_EX(&e, ff_op_cast(top, wide, fn)), 1, &axis, true));
        ff_tensor *t = FF_EX(&e, ff_add(FF_EX(&e, ff_sum(rest, 1, &axis, true)), FF_EX(&e, ff_sub_scalar(ties, 1.0))));
        ff_tensor *ls = FF_EX(&e, ff_log1p(t));
        ff_tensor *terms = FF_EX(&e, ff_binary_scalar(FF_BINARY_GT, xw, -INFINITY)); /* x - max may overflow */
        ff_tensor *nterms = FF_EX(&e, ff_sum(FF_EX(&e, ff_op_cast(terms, wide, fn)), 1, &axis, true));
        ff_tensor *others = FF_EX(&e, ff_binary_scalar(FF_BINARY_GT, nterms, 1.0));
        r = FF_EX(&e, ff_where(others, FF_EX(&e, ff_neg(FF_EX(&e, ff_sub(ls, sh)))), FF_EX(&e, ff_sub(sh, ls))));
    } else {
        r = FF_EX(&e, ff_div(ex, FF_EX(&e, ff_sum(ex, 1, &axis, true))));
    }
    r = FF_EX(&e, ff_op_cast(r, x->dtype, fn));
    ff_tensor *out = ff_expr_result(&e, r);
    ff_expr_free(&e);
    ff_set_grad_enabled(prev);
    if (!out) ff_error_prefix(fn);
    return out;
}

static ff_tensor *softmax_impl(const ff_tensor *x, int axis, bool log, const char *fn)
{
    if (!x) return ff_error(FF_ERR_INVALID, "%s: tensor is NULL", fn), NULL;
    if (x->layout.ndim == 0) { /* one row of one element, as PyTorch: via a [1] view */
        if (axis != 0 && axis != -1)
            return ff_error(FF_ERR_INVALID, "%s: axis %d out of range for a 0-d tensor", fn, axis), NULL;
        ff_tensor *x1 = ff_reshape(x, 1, (int64_t[]){1});
        ff_tensor *y1 = x1 ? softmax_impl(x1, 0, log, fn) : NULL;
        ff_tensor *y = y1 ? ff_reshape(y1, 0, NULL) : NULL;
        ff_tensor_release(x1);
        ff_tensor_release(y1);
        return y;
    }
    int a;
    if (ff_layout_normalize_axis(axis, x->layout.ndim, &a, fn)) return NULL;
    ff_dtype cdt = ff_dtype_to_float(x->dtype); /* integers -> f32, as PyTorch */
    ff_tensor *xc = ff_op_cast(x, cdt, fn);
    if (!xc) return NULL;
    ff_tensor *out = ff_tensor_new(xc->storage->backend, xc->layout.ndim, xc->layout.shape, cdt, fn);
    if (out && ff_tensor_numel(out) > 0) {
        ff_status st =
            ff_op_compose_forced(FF_KIND_SOFTMAX, "FF_SOFTMAX") ? FF_ERR_UNSUPPORTED : ff_kernel_softmax(out, xc, a, log, fn);
        if (st == FF_ERR_UNSUPPORTED) { /* no fused entry: compose */
            ff_tensor_release(out);
            out = softmax_compose(xc, a, log, fn);
        } else if (st) {
            ff_tensor_release(out);
            out = NULL;
        }
    }
    const ff_tensor *save[2] = {out, xc};
    ff_node *node = ff_op_record_node(&out, log ? "log_softmax" : "softmax", softmax_backward, 1, &x, 2, save);
    if (node) {
        node->ip[0] = a;
        node->ip[1] = log;
        node->nip = 2;
    }
    ff_tensor_release(xc);
    return out;
}

/* Under autocast, half logits are computed in f32 (include/ff/amp.h). */
static ff_tensor *softmax_autocast(const ff_tensor *x, int axis, bool log, const char *fn)
{
    ff_tensor *ac[1];
    int nac = x ? ff_autocast_operands(FF_AUTOCAST_WIDE, 1, &x, ac, fn) : 0;
    if (!nac) return softmax_impl(x, axis, log, fn);
    ff_tensor *r = nac > 0 ? softmax_impl(ac[0], axis, log, fn) : NULL;
    ff_autocast_release(nac, ac);
    return r;
}

ff_tensor *ff_softmax(const ff_tensor *x, int axis) { return softmax_autocast(x, axis, false, "ff_softmax"); }

ff_tensor *ff_log_softmax(const ff_tensor *x, int axis) { return softmax_autocast(x, axis, true, "ff_log_softmax"); }
