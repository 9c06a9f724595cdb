/* layer_norm and batch_norm, composed from mean, sub, square, rsqrt, mul and add, so
 * their gradients (including through the batch statistics) come from autograd. The
 * variance is the two-pass mean((x - mean)^2), biased, as PyTorch normalizes with.
 * f32 inputs are normalized in f64 and rounded once: (x - mean)^2 of f32 values
 * overflows f32 (layer norm of [1e30, 1, 2] would be all zeros). */
#include <stdio.h>

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

/* x in the dtype its statistics are computed in: f64 for f32 (tracked cast). */
static ff_tensor *widen(const ff_tensor *x, const char *fn)
{
    return ff_op_cast(x, x->dtype == FF_F32 ? FF_F64 : x->dtype, fn);
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
    y = FF_EX(&e, ff_op_cast(y, x->dtype, fn));
    if (weight) y = FF_EX(&e, ff_mul(y, weight));
    if (bias) y = FF_EX(&e, ff_add(y, bias));
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

ff_tensor *ff_batch_norm(const ff_tensor *x, ff_tensor *running_mean, ff_tensor *running_var,
                         const ff_tensor *weight, const ff_tensor *bias, bool training, double momentum, double eps)
{
    static const char fn[] = "ff_batch_norm";
    if (!x) return ff_error(FF_ERR_INVALID, "%s: x is NULL", fn), NULL;
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
    ff_expr e = {0};
    ff_tensor *mean, *var, *xs = FF_EX(&e, widen(x, fn));
    if (training) {
        mean = FF_EX(&e, ff_mean(xs, na, axes, true));
        ff_tensor *xc0 = FF_EX(&e, ff_sub(xs, mean));
        ff_tensor *sq = FF_EX(&e, ff_square(xc0));
        var = FF_EX(&e, ff_mean(sq, na, axes, true));
    } else {
        mean = FF_EX(&e, ff_reshape(running_mean, nd, bshape));
        var = FF_EX(&e, ff_reshape(running_var, nd, bshape));
    }
    ff_tensor *xc = FF_EX(&e, ff_sub(xs, mean));
    ff_tensor *ve = FF_EX(&e, ff_add_scalar(var, eps));
    ff_tensor *inv = FF_EX(&e, ff_rsqrt(ve));
    ff_tensor *y = FF_EX(&e, ff_mul(xc, inv));
    y = FF_EX(&e, ff_op_cast(y, x->dtype, fn));
    if (weight) {
        ff_tensor *wb = FF_EX(&e, ff_reshape(weight, nd, bshape));
        y = FF_EX(&e, ff_mul(y, wb));
    }
    if (bias) {
        ff_tensor *bb = FF_EX(&e, ff_reshape(bias, nd, bshape));
        y = FF_EX(&e, ff_add(y, bb));
    }
    ff_tensor *r = ff_expr_result(&e, y);
    if (r && training && running_mean && update_running(running_mean, running_var, mean, var, count, momentum)) {
        ff_tensor_release(r);
        r = NULL;
    }
    ff_expr_free(&e);
    if (!r) ff_error_prefix(fn);
    return r;
}
