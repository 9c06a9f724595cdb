/* Statistics built from the basic reductions: var, std, logsumexp, norm. var, std and
 * logsumexp are compositions of differentiable ops (so their gradients, higher orders
 * included, come from the pieces); norm records its own node so the gradient at a zero
 * norm is 0 rather than NaN, as PyTorch. Integer inputs give f32 results.
 *
 * var, std and norm accumulate f32 (and integer) inputs in f64, as PyTorch's CPU
 * kernels do: the squares of f32 values overflow f32 (std of [1e20, -1e20, 0] would be
 * inf) long before the statistic does. The result is rounded once to f32. */
#include <math.h>

#include "expr.h"

/* x as its float compute dtype (a tracked cast, or x itself). */
static ff_tensor *as_float(ff_expr *e, const ff_tensor *x, const char *fn)
{
    return FF_EX(e, ff_op_cast(x, ff_dtype_to_float(x->dtype), fn));
}

/* x as f64 for accumulation (a tracked cast, or x itself). */
static ff_tensor *as_f64(ff_expr *e, const ff_tensor *x, const char *fn)
{
    return FF_EX(e, ff_op_cast(x, FF_F64, fn));
}

/* Squeezes the axes in mask out of a keepdim-form result (tracked), unless keepdim. */
static ff_tensor *finish_keepdim(ff_expr *e, ff_tensor *r, const ff_tensor *x, uint32_t mask, bool keepdim)
{
    if (keepdim || e->failed) return r;
    int64_t keep[FF_MAX_DIMS], shape[FF_MAX_DIMS];
    int nd;
    ff_reduced_shape(&x->layout, mask, keep, &nd, shape);
    return FF_EX(e, ff_reshape(r, nd, shape));
}

/* ---- var / std -------------------------------------------------------------------- */
/* sum((x - mean)^2) / (N - correction) in f64; N - correction <= 0 divides by 0 (inf or
 * NaN), as PyTorch. */
static ff_tensor *var_f64(ff_expr *e, const ff_tensor *x, int naxes, const int *axes, int64_t correction,
                          bool keepdim, const char *fn)
{
    uint32_t mask;
    int64_t count;
    if (ff_reduce_axes(x, naxes, axes, &mask, &count, fn)) return e->failed = true, NULL;
    if (correction < 0) {
        ff_error(FF_ERR_INVALID, "%s: correction must be >= 0, got %lld", fn, (long long)correction);
        return e->failed = true, NULL;
    }
    ff_tensor *xd = as_f64(e, x, fn);
    ff_tensor *mu = FF_EX(e, ff_mean(xd, naxes, axes, true));
    ff_tensor *d = FF_EX(e, ff_sub(xd, mu));
    d = FF_EX(e, ff_square(d));
    ff_tensor *s = FF_EX(e, ff_sum(d, naxes, axes, keepdim));
    double denom = count > correction ? (double)(count - correction) : 0.0;
    return FF_EX(e, ff_div_scalar(s, denom));
}

ff_tensor *ff_var(const ff_tensor *x, int naxes, const int *axes, int64_t correction, bool keepdim)
{
    static const char fn[] = "ff_var";
    if (!x) return ff_error(FF_ERR_INVALID, "%s: tensor is NULL", fn), NULL;
    ff_expr e = {0};
    ff_tensor *v = var_f64(&e, x, naxes, axes, correction, keepdim, fn);
    v = FF_EX(&e, ff_op_cast(v, ff_dtype_to_float(x->dtype), fn));
    ff_tensor *r = ff_expr_result(&e, v);
    ff_expr_free(&e);
    return r;
}

/* sqrt(var), with the gradient taken as 0 where var == 0 (a constant row), as PyTorch:
 * sqrt's derivative is infinite there and var's is 0, and 0 * inf would poison every
 * gradient upstream with NaN. */
ff_tensor *ff_std(const ff_tensor *x, int naxes, const int *axes, int64_t correction, bool keepdim)
{
    static const char fn[] = "ff_std";
    if (!x) return ff_error(FF_ERR_INVALID, "%s: tensor is NULL", fn), NULL;
    ff_expr e = {0};
    ff_tensor *v = var_f64(&e, x, naxes, axes, correction, keepdim, fn);
    ff_tensor *v0 = FF_EX(&e, ff_binary_scalar(FF_BINARY_EQ, v, 0.0));
    ff_tensor *one = FF_EX(&e, ff_op_scalar_like(x, 1.0, FF_F64));
    ff_tensor *zero = FF_EX(&e, ff_op_scalar_like(x, 0.0, FF_F64));
    ff_tensor *safe = FF_EX(&e, ff_where(v0, one, v));
    ff_tensor *sd = FF_EX(&e, ff_sqrt(safe));
    sd = FF_EX(&e, ff_where(v0, zero, sd));
    sd = FF_EX(&e, ff_op_cast(sd, ff_dtype_to_float(x->dtype), fn));
    ff_tensor *r = ff_expr_result(&e, sd);
    ff_expr_free(&e);
    return r;
}

/* ---- logsumexp ------------------------------------------------------------------- */
/* m + log(sum(exp(x - m))) with m = max(x) held constant (detached): the gradient is
 * then exactly softmax(x) and no exp overflows. An infinite max is replaced by 0 so
 * all -inf gives -inf (not NaN); an empty reduction gives log(0) = -inf. */
ff_tensor *ff_logsumexp(const ff_tensor *x, int naxes, const int *axes, bool keepdim)
{
    static const char fn[] = "ff_logsumexp";
    uint32_t mask;
    int64_t count;
    if (ff_reduce_axes(x, naxes, axes, &mask, &count, fn)) return NULL;
    ff_expr e = {0};
    ff_tensor *xf = as_float(&e, x, fn);
    ff_tensor *m = NULL;
    if (count > 0 && ff_tensor_numel(x) > 0) {
        bool prev = ff_set_grad_enabled(false);
        m = FF_EX(&e, ff_amax(xf, naxes, axes, true));
        ff_tensor *inf = FF_EX(&e, ff_isinf(m));
        ff_tensor *zero = FF_EX(&e, ff_op_scalar_like(m, 0.0, m ? m->dtype : FF_F32));
        m = FF_EX(&e, ff_where(inf, zero, m));
        ff_set_grad_enabled(prev);
    }
    ff_tensor *sh = m ? FF_EX(&e, ff_sub(xf, m)) : xf;
    ff_tensor *ex = FF_EX(&e, ff_exp(sh));
    ff_tensor *s = FF_EX(&e, ff_sum(ex, naxes, axes, true));
    ff_tensor *r = FF_EX(&e, ff_log(s));
    if (m) r = FF_EX(&e, ff_add(r, m));
    r = finish_keepdim(&e, r, x, mask, keepdim);
    ff_tensor *out = ff_expr_result(&e, r);
    ff_expr_free(&e);
    return out;
}

/* ---- norm ------------------------------------------------------------------------- */
/* ||x||_p = (sum |x|^p)^(1/p) over the axes. p = 1, +-inf and 0 are compositions
 * (sum |x|, max/min |x|, count of non-zeros: no gradient); any other p records "norm"
 * with d/dx = sign(x) |x|^(p-1) / y^(p-1) (x / y for p = 2), taken as 0 where y = 0
 * and, for p != 2, where x = 0. Computed in f64, rounded once to the result dtype;
 * except the f32 2-norm (x.norm(2, dim) normalizing rows), which stays in f32 where f32
 * holds it faithfully: x * x rounded to f32 (2^-24 relative each), summed with the sum
 * entry's double accumulation, within an ulp of the f64 path's result, at a third of its
 * passes over x and none of its f64 copies ([256, 784]: 0.33-0.44 -> 0.15 ms, PyTorch
 * 0.06). Where squares overflow or underflow (norm2_f32_faithful) the f64 path runs. */
static ff_tensor *norm_forward(const ff_tensor *xf, double p, int naxes, const int *axes, bool keepdim)
{
    ff_expr e = {0};
    ff_tensor *r;
    if (p == 2.0) {
        ff_tensor *t = FF_EX(&e, ff_square(xf));
        t = FF_EX(&e, ff_sum(t, naxes, axes, keepdim));
        r = FF_EX(&e, ff_sqrt(t));
    } else {
        ff_tensor *t = FF_EX(&e, ff_abs(xf));
        t = FF_EX(&e, ff_pow_scalar(t, p));
        t = FF_EX(&e, ff_sum(t, naxes, axes, keepdim));
        r = FF_EX(&e, ff_pow_scalar(t, 1.0 / p));
    }
    ff_tensor *out = ff_expr_result(&e, r);
    ff_expr_free(&e);
    return out;
}

static ff_status norm_backward(ff_node *n, const ff_tensor *g, ff_tensor **gi)
{
    const ff_tensor *x = ff_node_saved(n, 0), *ysaved = ff_node_saved(n, 1);
    if (!x || !ysaved) return ff_last_status();
    uint32_t mask = (uint32_t)n->ip[0];
    double p = n->dp[0];
    int axes[FF_MAX_DIMS], na = 0;
    for (int d = 0; d < x->layout.ndim; d++)
        if (mask & (1u << d)) axes[na++] = d;
    ff_expr e = {0};
    /* recorded backward (create_graph): recompute y from x so its dependence counts */
    ff_tensor *y = ff_grad_enabled() && na ? FF_EX(&e, norm_forward(x, p, na, axes, true))
                                           : FF_EX(&e, ff_reduce_keepdim(ysaved, x, mask));
    ff_tensor *ge = FF_EX(&e, ff_reduce_grad_expand(g, n->inputs[0], mask));
    ff_tensor *num, *den;
    if (p == 2.0) {
        num = FF_EX(&e, ff_tensor_retain((ff_tensor *)x));
        den = y;
    } else {
        ff_tensor *a = FF_EX(&e, ff_abs(x));
        a = FF_EX(&e, ff_pow_scalar(a, p - 1.0));
        ff_tensor *s = FF_EX(&e, ff_sign(x));
        num = FF_EX(&e, ff_mul(s, a));
        /* 0 where x == 0: |0|^(p-1) is inf for p < 1, and sign(0) * inf is NaN (PyTorch masks it) */
        ff_tensor *x0 = FF_EX(&e, ff_binary_scalar(FF_BINARY_EQ, x, 0.0));
        ff_tensor *z = FF_EX(&e, ff_op_scalar_like(x, 0.0, x->dtype));
        num = FF_EX(&e, ff_where(x0, z, num));
        den = FF_EX(&e, ff_pow_scalar(y, p - 1.0));
    }
    ff_tensor *y0 = FF_EX(&e, ff_binary_scalar(FF_BINARY_EQ, y, 0.0));
    ff_tensor *one = FF_EX(&e, ff_op_scalar_like(x, 1.0, x->dtype));
    ff_tensor *zero = FF_EX(&e, ff_op_scalar_like(x, 0.0, x->dtype));
    ff_tensor *safe = FF_EX(&e, ff_where(y0, one, den));
    ff_tensor *q = FF_EX(&e, ff_div(num, safe));
    q = FF_EX(&e, ff_where(y0, zero, q));
    ff_tensor *r = FF_EX(&e, ff_mul(ge, q));
    gi[0] = ff_expr_result(&e, r);
    ff_expr_free(&e);
    return gi[0] ? FF_OK : ff_last_status();
}

/* The 2-norm of f32 x in f32 (ff_norm's fast path), its node recorded on x itself. */
static ff_tensor *norm2_f32(const ff_tensor *x, int naxes, const int *axes, bool keepdim, uint32_t mask)
{
    bool prev = ff_set_grad_enabled(false);
    ff_tensor *r = norm_forward(x, 2.0, naxes, axes, keepdim);
    ff_set_grad_enabled(prev);
    if (!r) return NULL;
    const ff_tensor *save[2] = {x, r};
    ff_node *node = ff_op_record_node(&r, "norm", norm_backward, 1, &x, 2, save);
    if (node) {
        node->ip[0] = mask;
        node->dp[0] = 2.0;
    }
    return r;
}

/* Whether every norm in r came from a sum of squares that f32 held faithfully: no square
 * overflowed (the sum would be inf) and the sum is at least 2^-100, so that squares lost to
 * underflow (each below 2^-126) cannot matter. A zero norm may hide underflowed squares
 * (a row of 1e-30s): it takes the f64 path too, as does NaN. */
static bool norm2_f32_faithful(const ff_tensor *r)
{
    if (ff_tensor_numel(r) == 0) return true;
    ff_tensor *hi = ff_amax(r, 0, NULL, false), *lo = ff_amin(r, 0, NULL, false);
    double h = NAN, l = NAN;
    bool ok = hi && lo && ff_tensor_item(hi, &h) == FF_OK && ff_tensor_item(lo, &l) == FF_OK;
    ff_tensor_release(hi), ff_tensor_release(lo);
    return ok && h < 0x1p63 && l >= 0x1p-50;
}

ff_tensor *ff_norm(const ff_tensor *x, double p, int naxes, const int *axes, bool keepdim)
{
    static const char fn[] = "ff_norm";
    uint32_t mask;
    if (ff_reduce_axes(x, naxes, axes, &mask, NULL, fn)) return NULL;
    if (isnan(p)) return ff_error(FF_ERR_INVALID, "%s: p is NaN", fn), NULL;
    ff_expr e = {0};
    ff_dtype out_dt = ff_dtype_to_float(x->dtype);
    if (p == 2.0 && x->dtype == FF_F32) {
        ff_tensor *r = norm2_f32(x, naxes, axes, keepdim, mask);
        if (r && norm2_f32_faithful(r)) return r;
        ff_tensor_release(r); /* out of the f32 range's faithful part: the f64 path below */
        ff_clear_error();
    }
    ff_tensor *xf = as_f64(&e, x, fn), *r = NULL;
    if (p == 1.0) {
        ff_tensor *a = FF_EX(&e, ff_abs(xf));
        r = FF_EX(&e, ff_sum(a, naxes, axes, keepdim));
    } else if (isinf(p)) {
        ff_tensor *a = FF_EX(&e, ff_abs(xf));
        r = FF_EX(&e, p > 0 ? ff_amax(a, naxes, axes, keepdim) : ff_amin(a, naxes, axes, keepdim));
    } else if (p == 0.0) {
        ff_tensor *nz = FF_EX(&e, ff_binary_scalar(FF_BINARY_NE, xf, 0.0));
        nz = FF_EX(&e, ff_astype(nz, xf ? xf->dtype : FF_F32));
        r = FF_EX(&e, ff_sum(nz, naxes, axes, keepdim));
    } else {
        bool prev = ff_set_grad_enabled(false);
        r = FF_EX(&e, norm_forward(xf, p, naxes, axes, keepdim));
        ff_set_grad_enabled(prev);
        if (r) {
            const ff_tensor *save[2] = {xf, r};
            ff_tensor *rn = ff_tensor_retain(r);
            ff_node *node = ff_op_record_node(&rn, "norm", norm_backward, 1, (const ff_tensor *const *)&xf, 2, save);
            if (node) {
                node->ip[0] = mask;
                node->dp[0] = p;
            }
            r = FF_EX(&e, rn);
        }
    }
    r = FF_EX(&e, ff_op_cast(r, out_dt, fn));
    ff_tensor *out = ff_expr_result(&e, r);
    ff_expr_free(&e);
    return out;
}
