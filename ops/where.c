/* where, clip, lerp. where is a backend kernel with its own gradient; clip and lerp
 * are compositions of differentiable ops. */
#include <math.h>

#include "expr.h"

/* g goes to a where cond holds and to b elsewhere, then down to each operand's shape. */
static ff_status where_backward(ff_node *n, const ff_tensor *g, ff_tensor **gi)
{
    const ff_tensor *cond = ff_node_saved(n, 0);
    if (!cond) return ff_last_status();
    ff_expr e = {0};
    ff_tensor *zero = FF_EX(&e, ff_op_scalar_like(g, 0.0, g->dtype));
    for (int k = 0; k < 2; k++) {
        if (!n->needs_grad[k]) continue;
        const ff_tensor *in = n->inputs[k];
        ff_tensor *w = FF_EX(&e, k == 0 ? ff_where(cond, g, zero) : ff_where(cond, zero, g));
        ff_tensor *r = FF_EX(&e, ff_sum_to_shape(w, in->layout.ndim, in->layout.shape));
        gi[k] = ff_expr_result(&e, r);
    }
    ff_status st = e.failed ? ff_last_status() : FF_OK;
    ff_expr_free(&e);
    return st;
}

ff_tensor *ff_where(const ff_tensor *cond, const ff_tensor *a, const ff_tensor *b)
{
    static const char fn[] = "ff_where";
    const ff_tensor *all[3] = {cond, a, b};
    ff_backend *be = ff_common_backend(3, all, fn);
    if (!be) return NULL;
    int n1, nd;
    int64_t s1[FF_MAX_DIMS], shape[FF_MAX_DIMS];
    if (ff_broadcast_shapes(cond->layout.ndim, cond->layout.shape, a->layout.ndim, a->layout.shape, &n1, s1, fn) ||
        ff_broadcast_shapes(n1, s1, b->layout.ndim, b->layout.shape, &nd, shape, fn))
        return NULL;
    ff_dtype dt = ff_dtype_promote(a->dtype, b->dtype);
    ff_tensor *cc = ff_op_cast(cond, FF_BOOL, fn);
    ff_tensor *ca = cc ? ff_op_cast(a, dt, fn) : NULL, *cb = ca ? ff_op_cast(b, dt, fn) : NULL;
    ff_tensor *out = cb ? ff_tensor_new(be, nd, shape, dt, fn) : NULL;
    if (out && ff_kernel_where(out, cc, ca, cb, fn)) {
        ff_tensor_release(out);
        out = NULL;
    }
    if (out && ff_dtype_is_float(dt)) {
        const ff_tensor *ins[2] = {a, b};
        ff_op_record_node(&out, "where", where_backward, 2, ins, 1, (const ff_tensor *const *)&cc);
    }
    ff_tensor_release(cc);
    ff_tensor_release(ca);
    ff_tensor_release(cb);
    return out;
}

/* x clamped to [lo, hi]: where(x < lo, lo, x), then where(> hi, hi, .). The gradient
 * passes exactly where lo <= x <= hi (PyTorch's clamp); lo > hi gives hi everywhere
 * (as min(max(x, lo), hi)); NaN stays NaN; an infinite bound is no bound (so it does
 * not promote an integer tensor to float). */
ff_tensor *ff_clip(const ff_tensor *x, double lo, double hi)
{
    static const char fn[] = "ff_clip";
    if (!x) return ff_error(FF_ERR_INVALID, "%s: tensor is NULL", fn), NULL;
    if (isnan(lo) || isnan(hi)) return ff_error(FF_ERR_INVALID, "%s: NaN bound", fn), NULL;
    bool has_lo = !isinf(lo) || lo > 0, has_hi = !isinf(hi) || hi < 0;
    ff_dtype dt = x->dtype;
    if (has_lo) dt = ff_dtype_promote_scalar(dt, lo);
    if (has_hi) dt = ff_dtype_promote_scalar(dt, hi);
    ff_expr e = {0};
    ff_tensor *r = FF_EX(&e, ff_op_cast(x, dt, fn));
    if (has_lo) {
        ff_tensor *below = FF_EX(&e, ff_binary_scalar(FF_BINARY_LT, r, lo));
        ff_tensor *sl = FF_EX(&e, ff_op_scalar_like(x, lo, dt));
        r = FF_EX(&e, ff_where(below, sl, r));
    }
    if (has_hi) {
        ff_tensor *above = FF_EX(&e, ff_binary_scalar(FF_BINARY_GT, r, hi));
        ff_tensor *sh = FF_EX(&e, ff_op_scalar_like(x, hi, dt));
        r = FF_EX(&e, ff_where(above, sh, r));
    }
    /* no bound at all: still a new tensor (every op returns one) */
    if (!has_lo && !has_hi) r = FF_EX(&e, ff_clone(r));
    ff_tensor *out = ff_expr_result(&e, r);
    ff_expr_free(&e);
    return out;
}

/* a + w (b - a) */
ff_tensor *ff_lerp(const ff_tensor *a, const ff_tensor *b, double weight)
{
    if (!a || !b) return ff_error(FF_ERR_INVALID, "ff_lerp: NULL operand"), NULL;
    ff_expr e = {0};
    ff_tensor *d = FF_EX(&e, ff_sub(b, a));
    d = FF_EX(&e, ff_mul_scalar(d, weight));
    ff_tensor *r = FF_EX(&e, ff_add(a, d));
    ff_tensor *out = ff_expr_result(&e, r);
    ff_expr_free(&e);
    return out;
}
