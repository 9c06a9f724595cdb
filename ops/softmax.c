/* softmax and log_softmax along one axis. The backend's fused entry is used when it
 * has one; otherwise the op is composed (x - max, exp, / sum) so every backend gets
 * the numerically stable form. Either way one node is recorded, whose gradient is
 * written with ff ops so higher orders work. */
#include "ops_impl.h"

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
/* The composed form, without history (the caller records the single node). */
static ff_tensor *softmax_compose(const ff_tensor *x, int axis, bool log, const char *fn)
{
    bool prev = ff_set_grad_enabled(false);
    ff_tensor *m = ff_amax(x, 1, &axis, true);
    ff_tensor *sh = m ? ff_sub(x, m) : NULL;
    ff_tensor *e = sh ? ff_exp(sh) : NULL;
    ff_tensor *s = e ? ff_sum(e, 1, &axis, true) : NULL;
    ff_tensor *r = NULL;
    if (s && log) {
        ff_tensor *ls = ff_log(s);
        r = ls ? ff_sub(sh, ls) : NULL;
        ff_tensor_release(ls);
    } else if (s) {
        r = ff_div(e, s);
    }
    ff_set_grad_enabled(prev);
    ff_tensor_release(m);
    ff_tensor_release(sh);
    ff_tensor_release(e);
    ff_tensor_release(s);
    if (!r) ff_error_prefix(fn);
    return r;
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
        ff_status st = ff_kernel_softmax(out, xc, a, log, fn);
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
