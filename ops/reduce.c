/* Reductions over any set of axes (none listed = all; negative axes; keepdim) that map
 * onto one backend reduce call: sum, mean, prod, amax/amin, argmax/argmin, any/all.
 * Statistics built from these (var, std, logsumexp, norm) are in reduce_stats.c.
 *
 * dtypes follow NumPy/PyTorch: sum/prod of bool/u8/i32/i64 give i64, of floats the same
 * float; amax/amin keep the dtype; arg* give i64; any/all give bool. mean of an integer
 * tensor gives f32 (PyTorch refuses it, NumPy gives f64; we follow our rule that float
 * valued ops on integers compute in f32). */
#include <string.h>

#include "expr.h"

/* ---- shared helpers ------------------------------------------------------------ */
ff_status ff_reduce_axes(const ff_tensor *x, int naxes, const int *axes, uint32_t *mask, int64_t *count,
                         const char *fn)
{
    if (!x) return ff_error(FF_ERR_INVALID, "%s: tensor is NULL", fn);
    if (ff_axes_mask(x->layout.ndim, naxes, axes, mask, fn)) return ff_last_status();
    int64_t n = 1;
    for (int d = 0; d < x->layout.ndim; d++)
        if (*mask & (1u << d)) n *= x->layout.shape[d];
    if (count) *count = n;
    return FF_OK;
}

ff_tensor *ff_reduce_keepdim(const ff_tensor *r, const ff_tensor *x, uint32_t mask)
{
    int64_t keep[FF_MAX_DIMS], shape[FF_MAX_DIMS];
    int nd;
    ff_reduced_shape(&x->layout, mask, keep, &nd, shape);
    if (r->layout.ndim == x->layout.ndim) return ff_tensor_retain((ff_tensor *)r);
    return ff_reshape(r, x->layout.ndim, keep);
}

ff_tensor *ff_reduce_grad_expand(const ff_tensor *g, const ff_tensor *x, uint32_t mask)
{
    ff_tensor *k = ff_reduce_keepdim(g, x, mask);
    ff_tensor *r = k ? ff_expand(k, x->layout.ndim, x->layout.shape) : NULL;
    ff_tensor_release(k);
    return r;
}

ff_tensor *ff_reduce_raw(ff_reduce_op op, const ff_tensor *x, uint32_t mask, ff_dtype dtype, bool keepdim,
                         const char *fn)
{
    int64_t keep[FF_MAX_DIMS], shape[FF_MAX_DIMS];
    int nd;
    ff_reduced_shape(&x->layout, mask, keep, &nd, shape);
    ff_tensor *dst = ff_tensor_new(x->storage->backend, x->layout.ndim, keep, dtype, fn);
    if (!dst) return NULL;
    if (ff_kernel_reduce(op, dst, x, mask, fn)) {
        ff_tensor_release(dst);
        return NULL;
    }
    if (keepdim) return dst;
    ff_layout l;
    ff_tensor *r = NULL;
    if (ff_layout_init_contiguous(&l, nd, shape, fn) == FF_OK) r = ff_tensor_new_view(dst, &l);
    ff_tensor_release(dst);
    return r;
}

/* Refuses reductions without an identity (max, min, arg*) over an empty axis. */
static ff_status check_nonempty(const ff_tensor *x, uint32_t mask, const char *fn)
{
    for (int d = 0; d < x->layout.ndim; d++)
        if ((mask & (1u << d)) && x->layout.shape[d] == 0)
            return ff_error(FF_ERR_INVALID, "%s: reduction over an empty axis has no identity (dim %d has size 0)", fn,
                            d);
    return FF_OK;
}

/* The axes in mask as a list; returns how many. */
static int mask_axes(uint32_t mask, int ndim, int *axes)
{
    int na = 0;
    for (int d = 0; d < ndim; d++)
        if (mask & (1u << d)) axes[na++] = d;
    return na;
}

static ff_dtype sum_dtype(ff_dtype t) { return ff_dtype_has_grad(t) ? t : FF_I64; }

/* ---- sum / mean ------------------------------------------------------------------ */
static ff_status sum_backward(ff_node *n, const ff_tensor *g, ff_tensor **gi)
{
    gi[0] = ff_reduce_grad_expand(g, n->inputs[0], (uint32_t)n->ip[0]);
    return gi[0] ? FF_OK : ff_last_status();
}

ff_tensor *ff_sum(const ff_tensor *x, int naxes, const int *axes, bool keepdim)
{
    static const char fn[] = "ff_sum";
    uint32_t mask;
    if (ff_reduce_axes(x, naxes, axes, &mask, NULL, fn)) return NULL;
    ff_tensor *out = ff_reduce_raw(FF_REDUCE_SUM, x, mask, sum_dtype(x->dtype), keepdim, fn);
    if (out && ff_dtype_has_grad(x->dtype)) {
        ff_node *node = ff_op_record_node(&out, "sum", sum_backward, 1, &x, 0, NULL);
        if (node) node->ip[0] = mask;
    }
    return out;
}

static ff_status mean_backward(ff_node *n, const ff_tensor *g, ff_tensor **gi)
{
    ff_tensor *e = ff_reduce_grad_expand(g, n->inputs[0], (uint32_t)n->ip[0]);
    gi[0] = e ? ff_div_scalar(e, (double)n->ip[1]) : NULL;
    ff_tensor_release(e);
    return gi[0] ? FF_OK : ff_last_status();
}

ff_tensor *ff_mean(const ff_tensor *x, int naxes, const int *axes, bool keepdim)
{
    static const char fn[] = "ff_mean";
    uint32_t mask;
    int64_t count;
    if (ff_reduce_axes(x, naxes, axes, &mask, &count, fn)) return NULL;
    ff_dtype dt = ff_dtype_to_float(x->dtype);
    ff_tensor *out = ff_reduce_raw(FF_REDUCE_SUM, x, mask, dt, keepdim, fn);
    ff_tensor *n = out ? ff_op_scalar_like(x, (double)count, dt) : NULL;
    /* out /= count in place: out is fresh, so no view of it exists yet (mean of an empty
     * set is 0 / 0 = NaN, as NumPy and PyTorch) */
    if (!n || ff_kernel_binary(FF_BINARY_DIV, out, out, n, fn)) {
        ff_tensor_release(out);
        out = NULL;
    }
    ff_tensor_release(n);
    ff_node *node = ff_op_record_node(&out, "mean", mean_backward, 1, &x, 0, NULL);
    if (node) {
        node->ip[0] = mask;
        node->ip[1] = count;
    }
    return out;
}

/* ---- prod ------------------------------------------------------------------------ */
/* d prod / d x_i = product of the others. Exact with zeros: with no zero it is
 * prod / x_i; with exactly one zero only that element gets the product of the others
 * (all non-zero); with two or more every partial product is 0. */
static ff_status prod_backward(ff_node *n, const ff_tensor *g, ff_tensor **gi)
{
    const ff_tensor *x = ff_node_saved(n, 0);
    if (!x) return ff_last_status();
    uint32_t mask = (uint32_t)n->ip[0];
    int axes[FF_MAX_DIMS], na = mask_axes(mask, x->layout.ndim, axes);
    if (!na) { /* a 0-d input: prod is the identity */
        gi[0] = ff_tensor_retain((ff_tensor *)g);
        return FF_OK;
    }
    ff_expr e = {0};
    ff_tensor *is0 = FF_EX(&e, ff_binary_scalar(FF_BINARY_EQ, x, 0.0));
    ff_tensor *one = FF_EX(&e, ff_op_scalar_like(x, 1.0, x->dtype));
    ff_tensor *zero = FF_EX(&e, ff_op_scalar_like(x, 0.0, x->dtype));
    ff_tensor *x1 = FF_EX(&e, ff_where(is0, one, x));           /* zeros replaced by 1 */
    ff_tensor *pnz = FF_EX(&e, ff_prod(x1, na, axes, true));    /* product of the non-zeros */
    ff_tensor *nz = FF_EX(&e, ff_astype(is0, FF_I64));
    nz = FF_EX(&e, ff_sum(nz, na, axes, true));                 /* zeros per output element */
    ff_tensor *q = FF_EX(&e, ff_div(pnz, x1));   /* no zero: prod / x_i */
    ff_tensor *none = FF_EX(&e, ff_binary_scalar(FF_BINARY_EQ, nz, 0.0));
    ff_tensor *single = FF_EX(&e, ff_binary_scalar(FF_BINARY_EQ, nz, 1.0));
    single = FF_EX(&e, ff_logical_and(single, is0));
    ff_tensor *pe = FF_EX(&e, ff_expand(pnz, x->layout.ndim, x->layout.shape));
    ff_tensor *w = FF_EX(&e, ff_where(single, pe, zero));
    w = FF_EX(&e, ff_where(none, q, w));
    ff_tensor *ge = FF_EX(&e, ff_reduce_grad_expand(g, n->inputs[0], mask));
    ff_tensor *r = FF_EX(&e, ff_mul(ge, w));
    gi[0] = ff_expr_result(&e, r);
    ff_expr_free(&e);
    return gi[0] ? FF_OK : ff_last_status();
}

ff_tensor *ff_prod(const ff_tensor *x, int naxes, const int *axes, bool keepdim)
{
    static const char fn[] = "ff_prod";
    uint32_t mask;
    if (ff_reduce_axes(x, naxes, axes, &mask, NULL, fn)) return NULL;
    ff_tensor *out = ff_reduce_raw(FF_REDUCE_PROD, x, mask, sum_dtype(x->dtype), keepdim, fn);
    if (out && ff_dtype_is_float(x->dtype)) {
        ff_node *node = ff_op_record_node(&out, "prod", prod_backward, 1, &x, 1, &x);
        if (node) node->ip[0] = mask;
    }
    return out;
}

/* ---- amax / amin -------------------------------------------------------------- */
/* The gradient goes to the elements equal to the extreme, split evenly among ties
 * (as PyTorch's amax/amin). The mask is piecewise constant, so using the detached saved
 * output is exact for higher orders too. */
static ff_status extreme_backward(ff_node *n, const ff_tensor *g, ff_tensor **gi)
{
    const ff_tensor *x = ff_node_saved(n, 0), *y = ff_node_saved(n, 1);
    if (!x || !y) return ff_last_status();
    uint32_t mask = (uint32_t)n->ip[0];
    int axes[FF_MAX_DIMS], na = mask_axes(mask, x->layout.ndim, axes);
    if (!na) { /* a 0-d input: the identity */
        gi[0] = ff_tensor_retain((ff_tensor *)g);
        return FF_OK;
    }
    ff_expr e = {0};
    ff_tensor *yk = FF_EX(&e, ff_reduce_keepdim(y, x, mask));
    ff_tensor *hit = FF_EX(&e, ff_eq(x, yk));
    hit = FF_EX(&e, ff_astype(hit, g->dtype));
    ff_tensor *cnt = FF_EX(&e, ff_sum(hit, na, axes, true));
    ff_tensor *w = FF_EX(&e, ff_div(hit, cnt));
    ff_tensor *ge = FF_EX(&e, ff_reduce_grad_expand(g, n->inputs[0], mask));
    ff_tensor *r = FF_EX(&e, ff_mul(ge, w));
    gi[0] = ff_expr_result(&e, r);
    ff_expr_free(&e);
    return gi[0] ? FF_OK : ff_last_status();
}

static ff_tensor *extreme(ff_reduce_op op, const ff_tensor *x, int naxes, const int *axes, bool keepdim,
                          const char *fn)
{
    uint32_t mask;
    if (ff_reduce_axes(x, naxes, axes, &mask, NULL, fn) || check_nonempty(x, mask, fn)) return NULL;
    ff_tensor *out = ff_reduce_raw(op, x, mask, x->dtype, keepdim, fn);
    if (out && ff_dtype_is_float(x->dtype)) {
        const ff_tensor *save[2] = {x, out};
        ff_node *node = ff_op_record_node(&out, op == FF_REDUCE_MAX ? "amax" : "amin", extreme_backward, 1, &x, 2,
                                          save);
        if (node) node->ip[0] = mask;
    }
    return out;
}

ff_tensor *ff_amax(const ff_tensor *x, int naxes, const int *axes, bool keepdim)
{
    return extreme(FF_REDUCE_MAX, x, naxes, axes, keepdim, "ff_amax");
}

ff_tensor *ff_amin(const ff_tensor *x, int naxes, const int *axes, bool keepdim)
{
    return extreme(FF_REDUCE_MIN, x, naxes, axes, keepdim, "ff_amin");
}

/* ---- argmax / argmin: one axis, i64, not differentiable ------------------------ */
static ff_tensor *arg_extreme(ff_reduce_op op, const ff_tensor *x, int axis, bool keepdim, const char *fn)
{
    if (!x) return ff_error(FF_ERR_INVALID, "%s: tensor is NULL", fn), NULL;
    uint32_t mask = 0;
    if (x->layout.ndim == 0) { /* a 0-d tensor: axis 0 or -1 names the scalar itself (PyTorch) */
        if (axis != 0 && axis != -1)
            return ff_error(FF_ERR_INVALID, "%s: axis %d out of range for a 0-d tensor", fn, axis), NULL;
    } else {
        int a;
        if (ff_layout_normalize_axis(axis, x->layout.ndim, &a, fn)) return NULL;
        mask = 1u << a;
        if (check_nonempty(x, mask, fn)) return NULL;
    }
    return ff_reduce_raw(op, x, mask, FF_I64, keepdim, fn);
}

ff_tensor *ff_argmax(const ff_tensor *x, int axis, bool keepdim)
{
    return arg_extreme(FF_REDUCE_ARGMAX, x, axis, keepdim, "ff_argmax");
}

ff_tensor *ff_argmin(const ff_tensor *x, int axis, bool keepdim)
{
    return arg_extreme(FF_REDUCE_ARGMIN, x, axis, keepdim, "ff_argmin");
}

/* ---- any / all: bool, not differentiable --------------------------------------- */
static ff_tensor *logical_reduce(ff_reduce_op op, const ff_tensor *x, int naxes, const int *axes, bool keepdim,
                                 const char *fn)
{
    uint32_t mask;
    if (ff_reduce_axes(x, naxes, axes, &mask, NULL, fn)) return NULL;
    return ff_reduce_raw(op, x, mask, FF_BOOL, keepdim, fn);
}

ff_tensor *ff_any(const ff_tensor *x, int naxes, const int *axes, bool keepdim)
{
    return logical_reduce(FF_REDUCE_ANY, x, naxes, axes, keepdim, "ff_any");
}

ff_tensor *ff_all(const ff_tensor *x, int naxes, const int *axes, bool keepdim)
{
    return logical_reduce(FF_REDUCE_ALL, x, naxes, axes, keepdim, "ff_all");
}
