/* Ops whose output size depends on the data: nonzero, bincount, histc and unique. Each reads one scalar
 * back from the backend (the count, or the largest value) to size its result, then fills
 * it with ordinary ops, so they run on every backend with an argsort entry (nonzero) or
 * scatter_add (bincount). Neither is differentiable (as PyTorch). */
#include <math.h>

#include "expr.h"

ff_tensor *ff_nonzero(const ff_tensor *x)
{
    static const char fn[] = "ff_nonzero";
    if (!x) return ff_error(FF_ERR_INVALID, "%s: tensor is NULL", fn), NULL;
    int nd = x->layout.ndim;
    int64_t numel = ff_tensor_numel(x), count = 0;
    ff_expr e = {0};
    bool prev = ff_set_grad_enabled(false);
    ff_tensor *mask = FF_EX(&e, ff_astype(x, FF_BOOL)); /* x != 0, NaN included, as PyTorch */
    ff_tensor *flat = FF_EX(&e, ff_reshape(mask, 1, &numel));
    ff_tensor *cnt = FF_EX(&e, ff_sum(flat, 0, NULL, false));
    if (!e.failed && ff_tensor_item_i64(cnt, &count)) e.failed = true;
    /* the positions of the trues, in order: a stable descending argsort puts them first */
    ff_tensor *order = FF_EX(&e, ff_argsort(flat, 0, true));
    ff_tensor *pos = FF_EX(&e, ff_narrow(order, 0, 0, count));
    ff_tensor *cols[FF_MAX_DIMS];
    int64_t stride = 1;
    for (int d = nd - 1; d >= 0 && !e.failed; d--) { /* coordinate d = (pos / stride) % shape[d] */
        ff_tensor *s = FF_EX(&e, ff_full_on(x->storage->backend, 0, NULL, FF_I64, (double)stride));
        ff_tensor *m = FF_EX(&e, ff_full_on(x->storage->backend, 0, NULL, FF_I64, (double)x->layout.shape[d]));
        ff_tensor *q = FF_EX(&e, ff_floor_divide(pos, s));
        cols[d] = FF_EX(&e, ff_remainder(q, m));
        stride *= x->layout.shape[d];
    }
    ff_tensor *r = NULL;
    if (!e.failed)
        r = nd ? ff_stack(nd, cols, 1) : ff_empty_on(x->storage->backend, 2, (int64_t[]){count, 0}, FF_I64);
    ff_set_grad_enabled(prev);
    ff_expr_free(&e);
    if (!r) ff_error_prefix(fn);
    return r;
}

ff_tensor *ff_bincount(const ff_tensor *x, const ff_tensor *weights, int64_t minlength)
{
    static const char fn[] = "ff_bincount";
    if (!x) return ff_error(FF_ERR_INVALID, "%s: tensor is NULL", fn), NULL;
    if (x->layout.ndim != 1 || ff_dtype_is_float(x->dtype) || x->dtype == FF_BOOL)
        return ff_error(FF_ERR_INVALID, "%s: expected a 1-d tensor of integers, got rank %d %s", fn, x->layout.ndim,
                        ff_dtype_name(x->dtype)), NULL;
    if (weights && (weights->layout.ndim != 1 || weights->layout.shape[0] != x->layout.shape[0]))
        return ff_error(FF_ERR_INVALID, "%s: weights must be 1-d with x's %lld elements", fn,
                        (long long)x->layout.shape[0]), NULL;
    if (minlength < 0) return ff_error(FF_ERR_INVALID, "%s: minlength %lld must be >= 0", fn, (long long)minlength), NULL;
    int64_t n = x->layout.shape[0], lo = 0, hi = -1;
    ff_expr e = {0};
    bool prev = ff_set_grad_enabled(false);
    if (n > 0) {
        ff_tensor *mn = FF_EX(&e, ff_amin(x, 0, NULL, false)), *mx = FF_EX(&e, ff_amax(x, 0, NULL, false));
        if (!e.failed && (ff_tensor_item_i64(mn, &lo) || ff_tensor_item_i64(mx, &hi))) e.failed = true;
        if (!e.failed && lo < 0) {
            ff_error(FF_ERR_INVALID, "%s: x must be non-negative, found %lld", fn, (long long)lo);
            e.failed = true;
        }
    }
    int64_t len = hi + 1 > minlength ? hi + 1 : minlength;
    /* PyTorch sums f32 weights in f32 and converts any other weights to f64 first (ints,
     * bool, f16, bf16: the sums of small types would wrap or round) */
    ff_dtype dt = !weights ? FF_I64 : weights->dtype == FF_F32 ? FF_F32 : FF_F64;
    ff_tensor *r = NULL;
    if (!e.failed) {
        ff_tensor *zero = FF_EX(&e, ff_full_on(x->storage->backend, 1, &len, dt, 0.0));
        ff_tensor *idx = FF_EX(&e, ff_astype(x, FF_I64));
        ff_tensor *src = weights ? FF_EX(&e, ff_op_cast(weights, dt, fn))
                                 : FF_EX(&e, ff_full_on(x->storage->backend, 1, &n, dt, 1.0));
        r = n ? FF_EX(&e, ff_scatter_add(zero, 0, idx, src)) : zero;
        if (r) ff_tensor_retain(r);
    }
    ff_set_grad_enabled(prev);
    ff_expr_free(&e);
    if (!r) ff_error_prefix(fn);
    return r;
}

/* torch.histc: bins equal-width bins over [min, max] (min == max: the data's range, widened
 * by 1 on each side when that is a single value too); elements outside, and NaN, are
 * ignored; x == max falls in the last bin. Counts in x's dtype (floats only). */
ff_tensor *ff_histc(const ff_tensor *x, int64_t bins, double min, double max)
{
    static const char fn[] = "ff_histc";
    if (!x) return ff_error(FF_ERR_INVALID, "%s: tensor is NULL", fn), NULL;
    if (!ff_dtype_is_float(x->dtype))
        return ff_error(FF_ERR_INVALID, "%s: x must be floating point, got %s", fn, ff_dtype_name(x->dtype)), NULL;
    if (bins < 1) return ff_error(FF_ERR_INVALID, "%s: bins = %lld must be >= 1", fn, (long long)bins), NULL;
    if (!(min <= max)) return ff_error(FF_ERR_INVALID, "%s: min %g must not exceed max %g", fn, min, max), NULL;
    int64_t n = ff_tensor_numel(x);
    ff_expr e = {0};
    bool prev = ff_set_grad_enabled(false);
    ff_tensor *flat = FF_EX(&e, ff_reshape(x, 1, &n));
    if (min == max && n > 0) {
        ff_tensor *lo = FF_EX(&e, ff_amin(flat, 0, NULL, false)), *hi = FF_EX(&e, ff_amax(flat, 0, NULL, false));
        if (!e.failed && (ff_tensor_item(lo, &min) || ff_tensor_item(hi, &max))) e.failed = true;
        if (!e.failed && !(isfinite(min) && isfinite(max))) { /* a NaN or inf in x, as PyTorch */
            ff_error(FF_ERR_INVALID, "%s: the data's range [%g, %g] is not finite", fn, min, max);
            e.failed = true;
        }
    }
    if (min == max) min -= 1, max += 1;
    ff_tensor *ge = FF_EX(&e, ff_binary_scalar(FF_BINARY_GE, flat, min));
    ff_tensor *le = FF_EX(&e, ff_binary_scalar(FF_BINARY_LE, flat, max));
    ff_tensor *in = FF_EX(&e, ff_logical_and(ge, le)); /* NaN: false */
    ff_tensor *shifted = FF_EX(&e, ff_add_scalar(flat, -min));
    ff_tensor *scaled = FF_EX(&e, ff_mul_scalar(shifted, (double)bins / (max - min)));
    ff_tensor *fl = FF_EX(&e, ff_floor(scaled));
    ff_tensor *last = FF_EX(&e, ff_op_scalar_like(fl, (double)(bins - 1), fl->dtype));
    ff_tensor *zero = FF_EX(&e, ff_op_scalar_like(fl, 0.0, fl->dtype));
    ff_tensor *top = FF_EX(&e, ff_binary_scalar(FF_BINARY_GE, fl, (double)bins));
    ff_tensor *b1 = FF_EX(&e, ff_where(top, last, fl));   /* x == max: the last bin */
    ff_tensor *b2 = FF_EX(&e, ff_where(in, b1, zero));    /* outside: bin 0, weight 0 */
    ff_tensor *idx = FF_EX(&e, ff_astype(b2, FF_I64));
    ff_tensor *w = FF_EX(&e, ff_astype(in, x->dtype));
    ff_tensor *h = FF_EX(&e, ff_bincount(idx, w, bins));
    h = FF_EX(&e, ff_op_cast(h, x->dtype, fn)); /* bincount's f64 for f16/bf16 weights: back to x's */
    ff_tensor *r = e.failed ? NULL : ff_tensor_retain(h);
    ff_set_grad_enabled(prev);
    ff_expr_free(&e);
    if (!r) ff_error_prefix(fn);
    return r;
}

/* torch.unique over all elements (flattened): the distinct values, ascending; NaNs are
 * each their own value (NaN != NaN), as PyTorch. Optionally, for every element the index
 * of its value (inverse, x's shape) and each value's count. One sort, then a scalar read
 * of how many distinct values there are. Not differentiable (as PyTorch). */
ff_status ff_unique(const ff_tensor *x, ff_tensor **values, ff_tensor **inverse, ff_tensor **counts)
{
    static const char fn[] = "ff_unique";
    if (values) *values = NULL;
    if (inverse) *inverse = NULL;
    if (counts) *counts = NULL;
    if (!x) return ff_error(FF_ERR_INVALID, "%s: tensor is NULL", fn);
    int64_t n = ff_tensor_numel(x), k = 0;
    ff_backend *be = x->storage->backend;
    ff_expr e = {0};
    bool prev = ff_set_grad_enabled(false);
    ff_tensor *flat = FF_EX(&e, ff_reshape(x, 1, &n)), *v = NULL, *order = NULL;
    if (!e.failed && ff_sort(flat, 0, false, &v, &order)) e.failed = true;
    FF_EX(&e, v), FF_EX(&e, order);
    /* new[j]: sorted element j starts a value (j == 0, or differs from j - 1) */
    ff_tensor *isnew = NULL;
    if (n > 0) {
        ff_tensor *head = FF_EX(&e, ff_full_on(be, 1, (int64_t[]){1}, FF_BOOL, 1.0));
        ff_tensor *a = FF_EX(&e, ff_narrow(v, 0, 1, n - 1)), *b = FF_EX(&e, ff_narrow(v, 0, 0, n - 1));
        ff_tensor *ne = FF_EX(&e, ff_binary(FF_BINARY_NE, a, b));
        isnew = FF_EX(&e, ff_concat(2, (ff_tensor *[]){head, ne}, 0));
        ff_tensor *cnt = FF_EX(&e, ff_sum(isnew, 0, NULL, false));
        if (!e.failed && ff_tensor_item_i64(cnt, &k)) e.failed = true;
    } else {
        isnew = FF_EX(&e, ff_full_on(be, 1, &n, FF_BOOL, 0.0));
    }
    ff_tensor *starts = FF_EX(&e, ff_argsort(isnew, 0, true)); /* positions of the firsts, in order */
    starts = FF_EX(&e, ff_narrow(starts, 0, 0, k));
    ff_tensor *uv = FF_EX(&e, ff_gather(v, 0, starts));
    ff_tensor *gid = FF_EX(&e, ff_cumsum(isnew, 0)); /* 1 + the value index of each sorted element */
    ff_tensor *one = FF_EX(&e, ff_full_on(be, 0, NULL, FF_I64, 1.0));
    ff_tensor *g0 = FF_EX(&e, ff_sub(gid, one));
    ff_tensor *inv = NULL, *cnts = NULL;
    if (inverse) { /* inv[order[j]] = g0[j] */
        ff_tensor *zero = FF_EX(&e, ff_full_on(be, 1, &n, FF_I64, 0.0));
        ff_tensor *flat_inv = FF_EX(&e, ff_scatter_add(zero, 0, order, g0));
        inv = FF_EX(&e, ff_reshape(flat_inv, x->layout.ndim, x->layout.shape));
    }
    if (counts) cnts = FF_EX(&e, ff_bincount(g0, NULL, k));
    ff_status st = e.failed ? ff_last_status() : FF_OK;
    if (!st) {
        if (values) *values = ff_tensor_retain(uv);
        if (inverse) *inverse = ff_tensor_retain(inv);
        if (counts) *counts = ff_tensor_retain(cnts);
    }
    ff_set_grad_enabled(prev);
    ff_expr_free(&e);
    if (st) ff_error_prefix(fn);
    return st;
}
