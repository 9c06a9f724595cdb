/* where, clamp/clip, lerp. where is a backend kernel with its own gradient; clamp is a
 * composition of where with its own gradient (PyTorch's masks); lerp is a composition
 * of differentiable ops. */
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
    ff_dtype dt = ff_result_type(a, b);
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

/* The gradient of clamp, PyTorch's masks: x gets g where lo <= x <= hi (so nowhere
 * for NaN x); lo where x < lo and lo < hi; hi where x > hi or hi < lo. Saved: x, then
 * lo and hi when given (ip[0], ip[1]), all in the compute dtype. */
static ff_status clamp_backward(ff_node *n, const ff_tensor *g, ff_tensor **gi)
{
    const ff_tensor *x = ff_node_saved(n, 0);
    const ff_tensor *lo = n->ip[0] ? ff_node_saved(n, 1) : NULL;
    const ff_tensor *hi = n->ip[1] ? ff_node_saved(n, n->ip[0] ? 2 : 1) : NULL;
    if (!x || (n->ip[0] && !lo) || (n->ip[1] && !hi)) return ff_last_status();
    ff_expr e = {0};
    ff_tensor *mask[3] = {NULL, NULL, NULL}; /* for x, lo, hi */
    ff_tensor *ge_lo = lo ? FF_EX(&e, ff_ge(x, lo)) : NULL, *le_hi = hi ? FF_EX(&e, ff_le(x, hi)) : NULL;
    mask[0] = ge_lo && le_hi ? FF_EX(&e, ff_logical_and(ge_lo, le_hi)) : ge_lo ? ge_lo : le_hi;
    if (lo) {
        mask[1] = FF_EX(&e, ff_lt(x, lo));
        if (hi) {
            ff_tensor *ordered = FF_EX(&e, ff_lt(lo, hi));
            mask[1] = FF_EX(&e, ff_logical_and(mask[1], ordered));
        }
    }
    if (hi) {
        mask[2] = FF_EX(&e, ff_gt(x, hi));
        if (lo) {
            ff_tensor *crossed = FF_EX(&e, ff_lt(hi, lo));
            mask[2] = FF_EX(&e, ff_logical_or(mask[2], crossed));
        }
    }
    ff_tensor *zero = FF_EX(&e, ff_op_scalar_like(g, 0.0, g->dtype));
    for (int k = 0, input = 0; k < 3; k++) {
        if (k > 0 && !n->ip[k - 1]) continue;
        const ff_tensor *inp = n->inputs[input];
        if (n->needs_grad[input++]) {
            ff_tensor *w = FF_EX(&e, ff_where(mask[k], g, zero));
            ff_tensor *r = FF_EX(&e, ff_sum_to_shape(w, inp->layout.ndim, inp->layout.shape));
            gi[input - 1] = ff_expr_result(&e, r);
        }
    }
    ff_status st = e.failed ? ff_last_status() : FF_OK;
    ff_expr_free(&e);
    return st;
}

/* min(max(x, lo), hi) with where(), so NaN in x stays NaN: where(x < lo, lo, x), then
 * where(. > hi, hi, .). Bounds are tensors that broadcast with x (NULL: none); the
 * dtype is the result type of all three (0-d bounds are weak, see ff_result_type).
 * nan_bounds: a NaN bound element gives NaN there (PyTorch's clamp with tensor bounds,
 * its maximum and minimum); else a NaN bound compares false and leaves x, as PyTorch's
 * clamp with a single number bound. */
static ff_tensor *clamp_impl(const ff_tensor *x, const ff_tensor *lo, const ff_tensor *hi, bool nan_bounds,
                             const char *fn)
{
    const ff_tensor *all[3] = {x, lo, hi};
    int nall = 0;
    const ff_tensor *given[3];
    for (int k = 0; k < 3; k++)
        if (all[k]) given[nall++] = all[k];
    if (!ff_common_backend(nall, given, fn)) return NULL;
    ff_dtype dt = ff_result_type_n(nall, given);
    nan_bounds = nan_bounds && ff_dtype_is_float(dt); /* no other dtype holds a NaN */
    bool prev = ff_set_grad_enabled(false); /* the forward is a composition; clamp_backward is the gradient */
    ff_expr e = {0};
    ff_tensor *r = FF_EX(&e, ff_op_cast(x, dt, fn));
    ff_tensor *xs = r, *los = NULL, *his = NULL;
    if (lo) {
        los = FF_EX(&e, ff_op_cast(lo, dt, fn));
        ff_tensor *below = FF_EX(&e, ff_lt(r, los));
        if (nan_bounds) {
            ff_tensor *lo_nan = FF_EX(&e, ff_isnan(los));
            below = FF_EX(&e, ff_logical_or(below, lo_nan));
        }
        r = FF_EX(&e, ff_where(below, los, r));
    }
    if (hi) {
        his = FF_EX(&e, ff_op_cast(hi, dt, fn));
        ff_tensor *above = FF_EX(&e, ff_gt(r, his));
        if (nan_bounds) {
            ff_tensor *hi_nan = FF_EX(&e, ff_isnan(his));
            above = FF_EX(&e, ff_logical_or(above, hi_nan));
        }
        r = FF_EX(&e, ff_where(above, his, r));
    }
    if (!lo && !hi) r = FF_EX(&e, ff_clone(r)); /* still a new tensor, as every op returns */
    ff_set_grad_enabled(prev);
    ff_tensor *out = ff_expr_result(&e, r);
    if (out && ff_dtype_is_float(dt)) {
        /* the masks of clamp_backward compare false with a NaN bound: no gradient there
         * to x or to the bound, as PyTorch */
        const ff_tensor *ins[3], *save[3];
        int ni = 0;
        save[0] = xs;
        ins[ni++] = x;
        if (lo) { ins[ni] = lo; save[ni++] = los; }
        if (hi) { ins[ni] = hi; save[ni++] = his; }
        ff_node *node = ff_op_record_node(&out, "clamp", clamp_backward, ni, ins, ni, save);
        if (node) {
            node->ip[0] = lo != NULL;
            node->ip[1] = hi != NULL;
        }
    }
    ff_expr_free(&e);
    return out;
}

ff_tensor *ff_clamp(const ff_tensor *x, const ff_tensor *lo, const ff_tensor *hi)
{
    static const char fn[] = "ff_clamp";
    if (!x) return ff_error(FF_ERR_INVALID, "%s: tensor is NULL", fn), NULL;
    return clamp_impl(x, lo, hi, true, fn);
}

/* Whether int number n converts to the integer dtype dt as PyTorch's checked conversion
 * of a clamp bound allows: within dt's range, or for u8 down to -255 (C's conversion to
 * unsigned: -1 is 255). Anything else would wrap silently (300 -> 44 in u8). */
static bool bound_fits(ff_number n, ff_dtype dt)
{
    if (n.kind == FF_NUMBER_FLOAT) return true; /* a float bound makes dt a float */
    switch (dt) {
    case FF_U8: return n.i >= -255 && n.i <= 255;
    case FF_I8: return n.i >= INT8_MIN && n.i <= INT8_MAX;
    case FF_I16: return n.i >= INT16_MIN && n.i <= INT16_MAX;
    case FF_I32: return n.i >= INT32_MIN && n.i <= INT32_MAX;
    default: return true; /* i64 holds every int; float dtypes round; bool takes bools only */
    }
}

/* PyTorch's clamp(Tensor, Scalar?, Scalar?): the numbers join the promotion first (their
 * kind, as ff_dtype_promote_number), then are converted to the result dtype, so u8 with
 * -1 and 5.5 clamps in f32 to [-1, 5.5] rather than to [255 (-1 in u8), 5.5]. */
ff_tensor *ff_clamp_number(const ff_tensor *x, const ff_number *lo, const ff_number *hi)
{
    static const char fn[] = "ff_clamp_number";
    if (!x) return ff_error(FF_ERR_INVALID, "%s: tensor is NULL", fn), NULL;
    const ff_number *b[2] = {lo, hi};
    ff_dtype dt = x->dtype;
    for (int k = 0; k < 2; k++)
        if (b[k]) dt = ff_dtype_promote_number(dt, *b[k]);
    for (int k = 0; k < 2; k++)
        if (b[k] && !bound_fits(*b[k], dt))
            return ff_error(FF_ERR_INVALID, "%s: %s bound %lld is out of range for %s", fn, k ? "max" : "min",
                            (long long)b[k]->i, ff_dtype_name(dt)), NULL;
    ff_backend *be = x->storage->backend;
    ff_tensor *t[2] = {NULL, NULL};
    bool ok = true;
    for (int k = 0; k < 2 && ok; k++)
        if (b[k]) ok = (t[k] = ff_number_tensor_on(be, *b[k], dt)) != NULL;
    /* PyTorch 1.13 fills NaN when both bounds are given and one is NaN, but with a single
     * bound runs its clamp_min/clamp_max kernels, whose comparisons leave x as it is */
    ff_tensor *out = ok ? clamp_impl(x, t[0], t[1], lo && hi, fn) : NULL;
    ff_tensor_release(t[0]);
    ff_tensor_release(t[1]);
    return out;
}

/* Float bounds (float numbers: an integer x gives f32, as PyTorch's clamp with float
 * bounds); an infinite bound clamps nothing. */
ff_tensor *ff_clip(const ff_tensor *x, double lo, double hi)
{
    static const char fn[] = "ff_clip";
    if (!x) return ff_error(FF_ERR_INVALID, "%s: tensor is NULL", fn), NULL;
    if (isnan(lo) || isnan(hi)) return ff_error(FF_ERR_INVALID, "%s: NaN bound", fn), NULL;
    ff_dtype dt = ff_dtype_promote_number(x->dtype, ff_number_float(lo));
    ff_backend *be = x->storage->backend;
    ff_tensor *tl = isinf(lo) && lo < 0 ? NULL : ff_number_tensor_on(be, ff_number_float(lo), dt);
    ff_tensor *th = isinf(hi) && hi > 0 ? NULL : ff_number_tensor_on(be, ff_number_float(hi), dt);
    ff_tensor *out = NULL;
    if ((tl || (isinf(lo) && lo < 0)) && (th || (isinf(hi) && hi > 0))) {
        ff_tensor *xc = ff_op_cast(x, dt, fn);
        out = xc ? ff_clamp(xc, tl, th) : NULL;
        ff_tensor_release(xc);
    }
    ff_tensor_release(tl);
    ff_tensor_release(th);
    return out;
}

/* a + w (b - a) for |w| < 0.5, else b - (b - a)(1 - w): exact at both ends (w = 1
 * gives b), PyTorch's formula. */
ff_tensor *ff_lerp(const ff_tensor *a, const ff_tensor *b, double weight)
{
    if (!a || !b) return ff_error(FF_ERR_INVALID, "ff_lerp: NULL operand"), NULL;
    ff_expr e = {0};
    ff_tensor *d = FF_EX(&e, ff_sub(b, a)), *r;
    if (fabs(weight) < 0.5) {
        d = FF_EX(&e, ff_mul_scalar(d, weight));
        r = FF_EX(&e, ff_add(a, d));
    } else {
        d = FF_EX(&e, ff_mul_scalar(d, 1.0 - weight));
        r = FF_EX(&e, ff_sub(b, d));
    }
    ff_tensor *out = ff_expr_result(&e, r);
    ff_expr_free(&e);
    return out;
}
