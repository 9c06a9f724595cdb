/* sort, argsort, topk, kthvalue and median along one axis, on the backend's optional
 * argsort entry (stable; NaN above every number; -0 == +0). Values are always
 * gather(x, axis, indices), so their gradient is gather's (scattered back to where each
 * value came from) and every backend agrees with its own argsort. A backend without the
 * entry gets "backend X does not support argsort". As PyTorch: indices are i64; topk's
 * NaN counts as the largest; median is the lower of the two middle values, and NaN when
 * the line holds one (the index then points at a NaN). */
#include <math.h>
#include <string.h>

#include "expr.h"

ff_tensor *ff_argsort(const ff_tensor *x, int axis, bool descending)
{
    static const char fn[] = "ff_argsort";
    if (!x) return ff_error(FF_ERR_INVALID, "%s: tensor is NULL", fn), NULL;
    int nd = x->layout.ndim, ax = 0;
    if (nd == 0 ? (axis != 0 && axis != -1) : ff_layout_normalize_axis(axis, nd, &ax, fn) != FF_OK)
        return nd == 0 ? (ff_error(FF_ERR_INVALID, "%s: axis %d out of range for a 0-d tensor", fn, axis), NULL) : NULL;
    ff_tensor *r = ff_tensor_new(x->storage->backend, nd, x->layout.shape, FF_I64, fn);
    if (r && ff_kernel_argsort(r, x, ax, descending, fn)) {
        ff_tensor_release(r);
        return NULL;
    }
    return r;
}

/* values = gather(x, axis, idx): differentiable; a 0-d x is its own value */
static ff_tensor *take(const ff_tensor *x, int axis, const ff_tensor *idx)
{
    return x->layout.ndim == 0 ? ff_tensor_retain((ff_tensor *)x) : ff_gather(x, axis, idx);
}

/* Fills the caller's out-pointers (either may be NULL) and releases what they do not take. */
static ff_status deliver(ff_tensor *v, ff_tensor *i, ff_tensor **values, ff_tensor **indices, const char *fn)
{
    if (!v || !i) {
        ff_tensor_release(v);
        ff_tensor_release(i);
        ff_error_prefix(fn);
        return ff_last_status();
    }
    if (values) *values = v;
    else ff_tensor_release(v);
    if (indices) *indices = i;
    else ff_tensor_release(i);
    return FF_OK;
}

ff_status ff_sort(const ff_tensor *x, int axis, bool descending, ff_tensor **values, ff_tensor **indices)
{
    static const char fn[] = "ff_sort";
    if (values) *values = NULL;
    if (indices) *indices = NULL;
    ff_tensor *i = ff_argsort(x, axis, descending);
    ff_tensor *v = i ? take(x, axis, i) : NULL;
    return deliver(v, i, values, indices, fn);
}

/* The normalized axis (0 for 0-d) and its length, after clearing the out-pointers. */
static ff_status line_axis(const ff_tensor *x, int axis, int *ax, int64_t *len, ff_tensor **values,
                           ff_tensor **indices, const char *fn)
{
    if (values) *values = NULL;
    if (indices) *indices = NULL;
    if (!x) return ff_error(FF_ERR_INVALID, "%s: tensor is NULL", fn);
    *ax = 0;
    if (x->layout.ndim && ff_layout_normalize_axis(axis, x->layout.ndim, ax, fn)) return ff_last_status();
    *len = x->layout.ndim ? x->layout.shape[*ax] : 1;
    return FF_OK;
}

ff_status ff_topk(const ff_tensor *x, int64_t k, int axis, bool largest, ff_tensor **values, ff_tensor **indices)
{
    static const char fn[] = "ff_topk";
    int ax = 0;
    int64_t len = 0;
    if (line_axis(x, axis, &ax, &len, values, indices, fn)) return ff_last_status();
    if (k < 0 || k > len)
        return ff_error(FF_ERR_INVALID, "%s: k = %lld is outside [0, %lld] (the size along axis %d)", fn, (long long)k,
                        (long long)len, axis);
    ff_tensor *all = ff_argsort(x, axis, largest);
    ff_tensor *i = all && x->layout.ndim ? ff_narrow(all, ax, 0, k) : (all ? ff_tensor_retain(all) : NULL);
    ff_tensor_release(all);
    ff_tensor *v = i ? take(x, ax, i) : NULL;
    return deliver(v, i, values, indices, fn);
}

/* The element at sorted position pos[...] (an i64 tensor of x's shape with size 1 along
 * axis) of every line, as values and indices (keepdim form, squeezed unless keepdim). */
static ff_status pick(const ff_tensor *x, int ax, const ff_tensor *pos, bool keepdim, ff_tensor **values,
                      ff_tensor **indices, const char *fn)
{
    ff_expr e = {0};
    ff_tensor *order = FF_EX(&e, ff_argsort(x, ax, false));
    ff_tensor *i = FF_EX(&e, ff_gather(order, ax, pos));
    ff_tensor *v = FF_EX(&e, take(x, ax, i));
    if (!keepdim && x->layout.ndim) {
        i = FF_EX(&e, ff_squeeze(i, ax));
        v = FF_EX(&e, ff_squeeze(v, ax));
    }
    ff_tensor *vr = e.failed ? NULL : ff_tensor_retain(v), *ir = e.failed ? NULL : ff_tensor_retain(i);
    ff_expr_free(&e);
    return deliver(vr, ir, values, indices, fn);
}

/* x's shape with size 1 along ax, filled with p (i64). */
static ff_tensor *position(const ff_tensor *x, int ax, int64_t p)
{
    int64_t shape[FF_MAX_DIMS];
    for (int d = 0; d < x->layout.ndim; d++) shape[d] = d == ax ? 1 : x->layout.shape[d];
    return ff_full_on(x->storage->backend, x->layout.ndim, shape, FF_I64, (double)p);
}

ff_status ff_kthvalue(const ff_tensor *x, int64_t k, int axis, bool keepdim, ff_tensor **values, ff_tensor **indices)
{
    static const char fn[] = "ff_kthvalue";
    int ax = 0;
    int64_t len = 0;
    if (line_axis(x, axis, &ax, &len, values, indices, fn)) return ff_last_status();
    if (k < 1 || k > len)
        return ff_error(FF_ERR_INVALID, "%s: k = %lld is outside [1, %lld] (the size along axis %d)", fn, (long long)k,
                        (long long)len, axis);
    ff_tensor *pos = position(x, ax, k - 1);
    ff_status st = pos ? pick(x, ax, pos, keepdim, values, indices, fn) : ff_last_status();
    ff_tensor_release(pos);
    return st;
}

ff_status ff_median(const ff_tensor *x, int axis, bool keepdim, ff_tensor **values, ff_tensor **indices)
{
    static const char fn[] = "ff_median";
    int ax = 0;
    int64_t len = 0;
    if (line_axis(x, axis, &ax, &len, values, indices, fn)) return ff_last_status();
    if (len == 0) return ff_error(FF_ERR_INVALID, "%s: median of an empty axis %d", fn, axis);
    ff_expr e = {0};
    ff_tensor *pos = FF_EX(&e, position(x, ax, (len - 1) / 2));
    if (ff_dtype_is_float(x->dtype)) { /* a NaN in the line: its first NaN, at len - count */
        bool prev = ff_set_grad_enabled(false);
        ff_tensor *nan = FF_EX(&e, ff_isnan(x));
        ff_tensor *cnt = x->layout.ndim ? FF_EX(&e, ff_sum(nan, 1, &ax, true)) : FF_EX(&e, ff_astype(nan, FF_I64));
        ff_tensor *has = FF_EX(&e, ff_binary_scalar(FF_BINARY_GT, cnt, 0.0));
        ff_tensor *lens = FF_EX(&e, position(x, ax, len));
        ff_tensor *at = FF_EX(&e, ff_sub(lens, cnt)); /* i64 - i64 stays i64 */
        pos = FF_EX(&e, ff_where(has, at, pos));
        ff_set_grad_enabled(prev);
    }
    ff_status st = e.failed ? ff_last_status() : pick(x, ax, pos, keepdim, values, indices, fn);
    ff_expr_free(&e);
    return st;
}

/* Where each of values (along the last axis) would go in sorted_seq's last axis to keep it
 * sorted: the count of elements < v (right: <= v). One stable argsort of the two merged,
 * values first (left: they land before equal elements) or last (right: after); a value's
 * merged position minus the values before it is its count. Exact, O((M + N) log). */
ff_tensor *ff_searchsorted(const ff_tensor *sorted_seq, const ff_tensor *values, bool right)
{
    static const char fn[] = "ff_searchsorted";
    if (!sorted_seq || !values) return ff_error(FF_ERR_INVALID, "%s: NULL argument", fn), NULL;
    int sd = sorted_seq->layout.ndim, vd = values->layout.ndim;
    if (sd < 1) return ff_error(FF_ERR_INVALID, "%s: sorted_sequence must have rank >= 1", fn), NULL;
    bool flat = sd == 1; /* a 1-d sequence serves values of any shape */
    if (!flat && (vd != sd || memcmp(sorted_seq->layout.shape, values->layout.shape, sizeof(int64_t) * (size_t)(sd - 1))))
        return ff_error(FF_ERR_INVALID, "%s: a %d-d sorted_sequence needs values with the same leading dims", fn, sd),
               NULL;
    int64_t m = sorted_seq->layout.shape[sd - 1], nv = ff_tensor_numel(values);
    ff_expr e = {0};
    bool prev = ff_set_grad_enabled(false);
    ff_dtype dt = ff_result_type(sorted_seq, values);
    ff_tensor *s = FF_EX(&e, ff_astype(sorted_seq, dt)), *v = FF_EX(&e, ff_astype(values, dt));
    if (flat) v = FF_EX(&e, ff_reshape(v, 1, &nv)); /* all values against the one sequence */
    int ax = (flat ? 1 : vd) - 1;
    int64_t n = flat ? nv : values->layout.shape[vd - 1];
    ff_tensor *parts[2] = {right ? s : v, right ? v : s};
    ff_tensor *merged = FF_EX(&e, ff_concat(2, parts, ax));
    ff_tensor *order = FF_EX(&e, ff_argsort(merged, ax, false));
    /* is_value in sorted order, and each value's merged position (the inverse permutation) */
    int64_t total = m + n, v0 = right ? m : 0;
    ff_tensor *ar = FF_EX(&e, ff_arange(0, (double)total, 1, FF_I64));
    ff_tensor *arb = FF_EX(&e, ff_to(ar, merged->storage->backend));
    ff_tensor *arx = FF_EX(&e, ff_broadcast_to(arb, merged->layout.ndim, merged->layout.shape));
    ff_tensor *zero = FF_EX(&e, ff_full_on(merged->storage->backend, merged->layout.ndim, merged->layout.shape, FF_I64, 0));
    ff_tensor *inv = FF_EX(&e, ff_scatter_add(zero, ax, order, arx)); /* inv[order[j]] = j */
    ff_tensor *ge = FF_EX(&e, ff_binary_scalar(FF_BINARY_GE, order, (double)v0));
    ff_tensor *lt = FF_EX(&e, ff_binary_scalar(FF_BINARY_LT, order, (double)(v0 + n)));
    ff_tensor *isv = FF_EX(&e, ff_logical_and(ge, lt));
    ff_tensor *seen = FF_EX(&e, ff_cumsum(isv, ax)); /* values up to each sorted position */
    ff_tensor *pos = FF_EX(&e, ff_narrow(inv, ax, v0, n));
    ff_tensor *before = FF_EX(&e, ff_gather(seen, ax, pos));
    ff_tensor *cnt = FF_EX(&e, ff_sub(pos, before));
    ff_tensor *one = FF_EX(&e, ff_full_on(merged->storage->backend, 0, NULL, FF_I64, 1.0));
    ff_tensor *ri = FF_EX(&e, ff_add(cnt, one)); /* seen counts the value itself; i64 throughout */
    if (flat) ri = FF_EX(&e, ff_reshape(ri, vd, values->layout.shape));
    ff_tensor *out = e.failed ? NULL : ff_tensor_retain(ri);
    ff_set_grad_enabled(prev);
    ff_expr_free(&e);
    if (!out) ff_error_prefix(fn);
    return out;
}

ff_tensor *ff_bucketize(const ff_tensor *x, const ff_tensor *boundaries, bool right)
{
    if (boundaries && boundaries->layout.ndim != 1)
        return ff_error(FF_ERR_INVALID, "ff_bucketize: boundaries must be 1-d, got rank %d", boundaries->layout.ndim),
               NULL;
    return ff_searchsorted(boundaries, x, right);
}

/* torch.multinomial on rows of non-negative weights (1-d: one row), i64 samples drawn
 * from the global generator. Without replacement: the top num_samples of
 * log(w) - log(-log(u)) (Gumbel keys: each draw picks the next with probability
 * proportional to its weight among those left; zero weights are never picked, and asking
 * for more samples than there are positive weights is an error, as PyTorch). With
 * replacement: the count of cumulative weights <= u * total, for u uniform. */
ff_tensor *ff_multinomial(const ff_tensor *w, int64_t num_samples, bool replacement)
{
    static const char fn[] = "ff_multinomial";
    if (!w) return ff_error(FF_ERR_INVALID, "%s: tensor is NULL", fn), NULL;
    int nd = w->layout.ndim;
    if (nd < 1 || nd > 2 || !ff_dtype_is_float(w->dtype))
        return ff_error(FF_ERR_INVALID, "%s: expected 1-d or 2-d floating weights, got rank %d %s", fn, nd,
                        ff_dtype_name(w->dtype)), NULL;
    int64_t n = w->layout.shape[nd - 1], rows = nd == 2 ? w->layout.shape[0] : 1;
    if (num_samples < 1 || (!replacement && num_samples > n))
        return ff_error(FF_ERR_INVALID, "%s: num_samples = %lld must be in [1, %lld]%s", fn, (long long)num_samples,
                        (long long)(replacement ? INT64_MAX : n), replacement ? "" : " without replacement"), NULL;
    ff_expr e = {0};
    bool prev = ff_set_grad_enabled(false);
    ff_tensor *x = FF_EX(&e, ff_astype(w, FF_F64));
    ff_tensor *x2 = FF_EX(&e, ff_reshape(x, 2, (int64_t[]){rows, n}));
    /* the weights must be usable: finite, non-negative, some positive in every row */
    ff_tensor *neg = FF_EX(&e, ff_binary_scalar(FF_BINARY_LT, x2, 0.0));
    ff_tensor *bad = FF_EX(&e, ff_any(neg, 0, NULL, false));
    ff_tensor *pos = FF_EX(&e, ff_binary_scalar(FF_BINARY_GT, x2, 0.0));
    int ax = 1;
    ff_tensor *npos = FF_EX(&e, ff_sum(pos, 1, &ax, false));
    ff_tensor *least = FF_EX(&e, ff_amin(npos, 0, NULL, false));
    ff_tensor *tot = FF_EX(&e, ff_sum(x2, 0, NULL, false));
    int64_t any_bad = 0, min_pos = 0;
    double total = 0;
    if (!e.failed && (ff_tensor_item_i64(bad, &any_bad) || ff_tensor_item_i64(least, &min_pos) ||
                      ff_tensor_item(tot, &total)))
        e.failed = true;
    if (!e.failed && (any_bad || !isfinite(total))) {
        ff_error(FF_ERR_INVALID, "%s: weights must be finite and non-negative", fn);
        e.failed = true;
    } else if (!e.failed && min_pos < (replacement ? 1 : num_samples)) {
        ff_error(FF_ERR_INVALID, "%s: a row has %lld positive weights, %lld samples asked%s", fn, (long long)min_pos,
                 (long long)num_samples, replacement ? "" : " without replacement");
        e.failed = true;
    }
    ff_tensor *r = NULL;
    if (!replacement) {
        ff_tensor *u = FF_EX(&e, ff_rand(2, (int64_t[]){rows, n}, FF_F64));
        ff_tensor *ub = FF_EX(&e, ff_to(u, x2->storage->backend));
        ff_tensor *lu = FF_EX(&e, ff_log(ub)), *nlu = FF_EX(&e, ff_neg(lu)), *g = FF_EX(&e, ff_log(nlu));
        ff_tensor *lw = FF_EX(&e, ff_log(x2)); /* -inf for zero weights: never among the top */
        ff_tensor *key = FF_EX(&e, ff_sub(lw, g));
        ff_tensor *idx = NULL;
        if (!e.failed && ff_topk(key, num_samples, 1, true, NULL, &idx) == FF_OK) r = FF_EX(&e, idx);
        else e.failed = true;
    } else {
        ff_tensor *cdf = FF_EX(&e, ff_cumsum(x2, 1));
        ff_tensor *last = FF_EX(&e, ff_narrow(cdf, 1, n - 1, 1));
        ff_tensor *u = FF_EX(&e, ff_rand(2, (int64_t[]){rows, num_samples}, FF_F64));
        ff_tensor *ub = FF_EX(&e, ff_to(u, x2->storage->backend));
        ff_tensor *t = FF_EX(&e, ff_mul(ub, last)); /* u * the row's total */
        r = FF_EX(&e, ff_searchsorted(cdf, t, true));
    }
    if (r && nd == 1) r = FF_EX(&e, ff_reshape(r, 1, &num_samples));
    ff_tensor *out = e.failed ? NULL : ff_tensor_retain(r);
    ff_set_grad_enabled(prev);
    ff_expr_free(&e);
    if (!out) ff_error_prefix(fn);
    return out;
}

/* torch.mode along axis: the most frequent value of each line (the smallest among equally
 * frequent ones; NaNs, unequal to everything, each count once) and the index of its last
 * occurrence, as PyTorch. From one stable sort: runs of equal values, their lengths by
 * scatter_add, the first longest run (= smallest value), and that run's last sorted element,
 * which the stable sort makes the last occurrence. Values are differentiable (gathered). */
ff_status ff_mode(const ff_tensor *x, int axis, bool keepdim, ff_tensor **values, ff_tensor **indices)
{
    static const char fn[] = "ff_mode";
    int ax = 0;
    int64_t len = 0;
    if (line_axis(x, axis, &ax, &len, values, indices, fn)) return ff_last_status();
    if (len == 0) return ff_error(FF_ERR_INVALID, "%s: mode of an empty axis %d", fn, axis);
    if (x->layout.ndim == 0) { /* one element: itself, at 0 */
        ff_tensor *v = ff_clone(x), *i = ff_full_on(x->storage->backend, 0, NULL, FF_I64, 0.0);
        return deliver(v, i, values, indices, fn);
    }
    ff_backend *be = x->storage->backend;
    ff_expr e = {0};
    ff_tensor *v = NULL, *order = NULL;
    if (ff_sort(x, ax, false, &v, &order)) e.failed = true;
    FF_EX(&e, v), FF_EX(&e, order);
    bool prev = ff_set_grad_enabled(false);
    ff_tensor *vd = FF_EX(&e, ff_detach(v));
    int64_t hshape[FF_MAX_DIMS];
    for (int d = 0; d < x->layout.ndim; d++) hshape[d] = d == ax ? 1 : x->layout.shape[d];
    ff_tensor *head = FF_EX(&e, ff_full_on(be, x->layout.ndim, hshape, FF_BOOL, 1.0));
    ff_tensor *a = FF_EX(&e, ff_narrow(vd, ax, 1, len - 1)), *b = FF_EX(&e, ff_narrow(vd, ax, 0, len - 1));
    ff_tensor *ne = FF_EX(&e, ff_binary(FF_BINARY_NE, a, b));
    ff_tensor *isnew = FF_EX(&e, ff_concat(2, (ff_tensor *[]){head, ne}, ax));
    ff_tensor *run1 = FF_EX(&e, ff_cumsum(isnew, ax)); /* 1 + the run of each sorted element */
    ff_tensor *one = FF_EX(&e, ff_full_on(be, 0, NULL, FF_I64, 1.0));
    ff_tensor *run = FF_EX(&e, ff_sub(run1, one));
    ff_tensor *zeros = FF_EX(&e, ff_full_on(be, x->layout.ndim, x->layout.shape, FF_I64, 0.0));
    ff_tensor *ones = FF_EX(&e, ff_full_on(be, x->layout.ndim, x->layout.shape, FF_I64, 1.0));
    ff_tensor *count = FF_EX(&e, ff_scatter_add(zeros, ax, run, ones)); /* count[r]: length of run r */
    ff_tensor *best = FF_EX(&e, ff_argmax(count, ax, true));           /* the first longest run */
    ff_tensor *ends = FF_EX(&e, ff_cumsum(count, ax));                 /* ends[r] - 1: run r's last */
    ff_tensor *end = FF_EX(&e, ff_gather(ends, ax, best));
    ff_tensor *last = FF_EX(&e, ff_sub(end, one));
    ff_set_grad_enabled(prev);
    ff_tensor *val = FF_EX(&e, ff_gather(v, ax, last)), *idx = FF_EX(&e, ff_gather(order, ax, last));
    if (!keepdim) {
        val = FF_EX(&e, ff_squeeze(val, ax));
        idx = FF_EX(&e, ff_squeeze(idx, ax));
    }
    ff_tensor *vr = e.failed ? NULL : ff_tensor_retain(val), *ir = e.failed ? NULL : ff_tensor_retain(idx);
    ff_expr_free(&e);
    return deliver(vr, ir, values, indices, fn);
}
