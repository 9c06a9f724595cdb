/* Layout math: shape + strides (in elements) + offset. Pure functions, no memory;
 * every view op in FusionFlow is one of these plus a new tensor header. */
#include <stdio.h>
#include <string.h>

#include "ff_impl.h"

const char *ff_shape_str(int ndim, const int64_t *shape, char *buf, size_t n)
{
    size_t used = 0;
    used += (size_t)snprintf(buf + used, n - used, "[");
    for (int d = 0; d < ndim && used < n; d++)
        used += (size_t)snprintf(buf + used, n - used, d ? ", %lld" : "%lld", (long long)shape[d]);
    if (used < n) snprintf(buf + used, n - used, "]");
    return buf;
}

ff_status ff_layout_init_contiguous(ff_layout *l, int ndim, const int64_t *shape, const char *fn)
{
    if (ndim < 0 || ndim > FF_MAX_DIMS)
        return ff_error(FF_ERR_INVALID, "%s: rank %d out of range [0, %d]", fn, ndim, FF_MAX_DIMS);
    if (ndim > 0 && !shape) return ff_error(FF_ERR_INVALID, "%s: shape is NULL", fn);
    memset(l, 0, sizeof *l);
    l->ndim = ndim;
    int64_t stride = 1;
    for (int d = ndim - 1; d >= 0; d--) {
        if (shape[d] < 0)
            return ff_error(FF_ERR_INVALID, "%s: negative size %lld at dim %d", fn, (long long)shape[d], d);
        l->shape[d] = shape[d];
        l->strides[d] = stride;
        /* A zero-size dim makes the tensor empty; keep strides well-defined anyway. */
        if (ff_mul_overflow_i64(stride, shape[d] ? shape[d] : 1, &stride)) {
            char b[160];
            return ff_error(FF_ERR_OVERFLOW, "%s: shape %s has more than 2^63 elements", fn,
                            ff_shape_str(ndim, shape, b, sizeof b));
        }
    }
    return FF_OK;
}

ff_status ff_layout_numel(const ff_layout *l, int64_t *numel)
{
    int64_t n = 1;
    for (int d = 0; d < l->ndim; d++)
        if (ff_mul_overflow_i64(n, l->shape[d], &n)) return ff_error(FF_ERR_OVERFLOW, "element count overflows");
    *numel = n;
    return FF_OK;
}

bool ff_layout_is_contiguous(const ff_layout *l)
{
    int64_t expect = 1;
    for (int d = l->ndim - 1; d >= 0; d--) {
        if (l->shape[d] == 0) return true;
        if (l->shape[d] != 1 && l->strides[d] != expect) return false;
        expect *= l->shape[d];
    }
    return true;
}

bool ff_layout_is_dense(const ff_layout *l)
{
    int64_t sh[FF_MAX_DIMS], st[FF_MAX_DIMS];
    int n = 0;
    for (int d = 0; d < l->ndim; d++) {
        if (l->shape[d] == 0) return false;
        if (l->shape[d] == 1) continue; /* any stride: it is never stepped over */
        /* insertion by stride, innermost first */
        int i = n++;
        for (; i > 0 && st[i - 1] > l->strides[d]; i--) sh[i] = sh[i - 1], st[i] = st[i - 1];
        sh[i] = l->shape[d], st[i] = l->strides[d];
    }
    int64_t expect = 1;
    for (int i = 0; i < n; i++) {
        if (st[i] != expect) return false;
        expect *= sh[i];
    }
    return true;
}

void ff_layout_span(const ff_layout *l, int64_t *lo, int64_t *hi)
{
    int64_t last = l->offset;
    for (int d = 0; d < l->ndim; d++) {
        if (l->shape[d] == 0) {
            *lo = *hi = l->offset;
            return;
        }
        last += (l->shape[d] - 1) * l->strides[d];
    }
    *lo = l->offset;
    *hi = last + 1;
}

ff_status ff_layout_normalize_axis(int axis, int ndim, int *out, const char *fn)
{
    int a = axis < 0 ? axis + ndim : axis;
    if (a < 0 || a >= ndim)
        return ff_error(FF_ERR_INVALID, "%s: axis %d out of range for a tensor of rank %d", fn, axis, ndim);
    *out = a;
    return FF_OK;
}

ff_status ff_layout_permute(const ff_layout *in, const int *perm, ff_layout *out, const char *fn)
{
    ff_layout r = *in;
    bool seen[FF_MAX_DIMS] = {false};
    for (int d = 0; d < in->ndim; d++) {
        int p = 0;
        if (ff_layout_normalize_axis(perm[d], in->ndim, &p, fn)) return FF_ERR_INVALID;
        if (seen[p]) return ff_error(FF_ERR_INVALID, "%s: axis %d repeated in permutation", fn, perm[d]);
        seen[p] = true;
        r.shape[d] = in->shape[p];
        r.strides[d] = in->strides[p];
    }
    *out = r;
    return FF_OK;
}

/* Python slice semantics for positive steps: negative start/stop count from the end,
 * out-of-range bounds clamp. */
ff_status ff_layout_slice(const ff_layout *in, int axis, int64_t start, int64_t stop, int64_t step,
                          ff_layout *out, const char *fn)
{
    int a = 0;
    if (ff_layout_normalize_axis(axis, in->ndim, &a, fn)) return FF_ERR_INVALID;
    if (step <= 0)
        return ff_error(FF_ERR_INVALID, "%s: step must be positive, got %lld (use ff_flip to reverse)", fn,
                        (long long)step);
    ff_slice_bounds(in->shape[a], &start, &stop);
    ff_layout r = *in;
    /* 0 <= stop - start <= size: no overflow for any step, INT64_MAX included; a step that
     * takes two or more elements is below the size, so stride * step stays in range */
    r.shape[a] = stop > start ? (stop - start - 1) / step + 1 : 0;
    r.offset = in->offset + (r.shape[a] ? start * in->strides[a] : 0);
    r.strides[a] = r.shape[a] > 1 ? in->strides[a] * step : in->strides[a];
    *out = r;
    return FF_OK;
}

ff_status ff_layout_select(const ff_layout *in, int axis, int64_t index, ff_layout *out, const char *fn)
{
    int a = 0;
    if (ff_layout_normalize_axis(axis, in->ndim, &a, fn)) return FF_ERR_INVALID;
    int64_t n = in->shape[a];
    int64_t i = index < 0 ? index + n : index;
    if (i < 0 || i >= n)
        return ff_error(FF_ERR_INDEX, "%s: index %lld out of range for axis %d of size %lld", fn,
                        (long long)index, a, (long long)n);
    ff_layout r = *in;
    r.offset = in->offset + i * in->strides[a];
    for (int d = a; d < in->ndim - 1; d++) {
        r.shape[d] = in->shape[d + 1];
        r.strides[d] = in->strides[d + 1];
    }
    r.ndim = in->ndim - 1;
    r.shape[r.ndim] = 0;
    r.strides[r.ndim] = 0;
    *out = r;
    return FF_OK;
}

/* Right-aligned like NumPy; size-1 (or new leading) dims become stride 0; -1 keeps. */
ff_status ff_layout_expand(const ff_layout *in, int ndim, const int64_t *shape, ff_layout *out,
                           const char *fn)
{
    char b1[160], b2[160];
    if (ndim < in->ndim || ndim > FF_MAX_DIMS)
        return ff_error(FF_ERR_INVALID, "%s: cannot expand shape %s to rank %d", fn,
                        ff_shape_str(in->ndim, in->shape, b1, sizeof b1), ndim);
    ff_layout r;
    memset(&r, 0, sizeof r);
    r.ndim = ndim;
    r.offset = in->offset;
    int lead = ndim - in->ndim;
    for (int d = 0; d < ndim; d++) {
        int64_t want = shape[d];
        if (d < lead) {
            if (want < 0) goto bad;
            r.shape[d] = want;
            r.strides[d] = 0;
            continue;
        }
        int64_t have = in->shape[d - lead];
        if (want == -1 || want == have) {
            r.shape[d] = have;
            r.strides[d] = in->strides[d - lead];
        } else if (have == 1 && want >= 0) {
            r.shape[d] = want;
            r.strides[d] = 0;
        } else {
            goto bad;
        }
    }
    *out = r;
    return FF_OK;
bad:
    return ff_error(FF_ERR_INVALID, "%s: cannot expand shape %s to %s (only size-1 dims can grow)", fn,
                    ff_shape_str(in->ndim, in->shape, b1, sizeof b1), ff_shape_str(ndim, shape, b2, sizeof b2));
}

ff_status ff_layout_squeeze(const ff_layout *in, int axis, ff_layout *out, const char *fn)
{
    int a = 0;
    if (ff_layout_normalize_axis(axis, in->ndim, &a, fn)) return FF_ERR_INVALID;
    if (in->shape[a] != 1)
        return ff_error(FF_ERR_INVALID, "%s: axis %d has size %lld, not 1", fn, axis, (long long)in->shape[a]);
    return ff_layout_select(in, a, 0, out, fn);
}

ff_status ff_layout_unsqueeze(const ff_layout *in, int axis, ff_layout *out, const char *fn)
{
    if (in->ndim >= FF_MAX_DIMS)
        return ff_error(FF_ERR_INVALID, "%s: rank would exceed FF_MAX_DIMS = %d", fn, FF_MAX_DIMS);
    int a = 0;
    if (ff_layout_normalize_axis(axis, in->ndim + 1, &a, fn)) return FF_ERR_INVALID;
    ff_layout r = *in;
    r.ndim = in->ndim + 1;
    for (int d = r.ndim - 1; d > a; d--) {
        r.shape[d] = in->shape[d - 1];
        r.strides[d] = in->strides[d - 1];
    }
    r.shape[a] = 1;
    r.strides[a] = a + 1 < r.ndim ? r.shape[a + 1] * r.strides[a + 1] : 1;
    *out = r;
    return FF_OK;
}

ff_status ff_layout_infer_shape(int64_t numel, int ndim, const int64_t *shape, int64_t *out, const char *fn)
{
    char b[160];
    if (ndim < 0 || ndim > FF_MAX_DIMS)
        return ff_error(FF_ERR_INVALID, "%s: rank %d out of range [0, %d]", fn, ndim, FF_MAX_DIMS);
    int infer = -1;
    int64_t known = 1;
    for (int d = 0; d < ndim; d++) {
        if (shape[d] == -1) {
            if (infer >= 0) return ff_error(FF_ERR_INVALID, "%s: more than one -1 in shape", fn);
            infer = d;
        } else if (shape[d] < 0) {
            return ff_error(FF_ERR_INVALID, "%s: negative size %lld in shape %s", fn, (long long)shape[d],
                            ff_shape_str(ndim, shape, b, sizeof b));
        } else if (ff_mul_overflow_i64(known, shape[d], &known)) {
            return ff_error(FF_ERR_OVERFLOW, "%s: shape %s overflows", fn, ff_shape_str(ndim, shape, b, sizeof b));
        }
        out[d] = shape[d];
    }
    if (infer >= 0) {
        if (known == 0 || numel % known != 0)
            return ff_error(FF_ERR_INVALID, "%s: cannot infer -1 in shape %s for %lld elements", fn,
                            ff_shape_str(ndim, shape, b, sizeof b), (long long)numel);
        out[infer] = numel / known;
        known = numel;
    }
    if (known != numel)
        return ff_error(FF_ERR_INVALID, "%s: shape %s has %lld elements, tensor has %lld", fn,
                        ff_shape_str(ndim, shape, b, sizeof b), (long long)known, (long long)numel);
    return FF_OK;
}

/* Reshape without copying works when each run of old dims that merges into (or
 * splits from) new dims is itself contiguous in memory. Walk the old dims from the
 * innermost, closing a "chunk" wherever contiguity breaks, and hand each chunk's new
 * dims strides from that chunk's base stride (the algorithm NumPy and PyTorch use). */
ff_status ff_layout_reshape_view(const ff_layout *in, int ndim, const int64_t *shape, ff_layout *out)
{
    ff_layout r;
    memset(&r, 0, sizeof r);
    r.ndim = ndim;
    r.offset = in->offset;
    int64_t numel = 1;
    for (int d = 0; d < ndim; d++) {
        r.shape[d] = shape[d];
        numel *= shape[d];
    }
    if (numel == 0 || in->ndim == 0) {
        /* empty, or a 0-d source (numel 1): any strides are valid; use contiguous ones */
        int64_t s = 1;
        for (int d = ndim - 1; d >= 0; d--) {
            r.strides[d] = s;
            s *= shape[d] ? shape[d] : 1;
        }
        *out = r;
        return FF_OK;
    }
    int view_d = ndim - 1;
    int64_t chunk_base = in->strides[in->ndim - 1];
    int64_t tensor_numel = 1, view_numel = 1;
    for (int td = in->ndim - 1; td >= 0; td--) {
        tensor_numel *= in->shape[td];
        bool chunk_ends = td == 0 || (in->shape[td - 1] != 1 && in->strides[td - 1] != tensor_numel * chunk_base);
        if (!chunk_ends) continue;
        while (view_d >= 0 && (view_numel < tensor_numel || shape[view_d] == 1)) {
            r.strides[view_d] = view_numel * chunk_base;
            view_numel *= shape[view_d];
            view_d--;
        }
        if (view_numel != tensor_numel) return FF_ERR_INVALID;
        if (td > 0) {
            chunk_base = in->strides[td - 1];
            tensor_numel = 1;
            view_numel = 1;
        }
    }
    if (view_d != -1) return FF_ERR_INVALID;
    *out = r;
    return FF_OK;
}

ff_status ff_broadcast_shapes(int na, const int64_t *a, int nb, const int64_t *b, int *nout, int64_t *out,
                              const char *fn)
{
    int n = na > nb ? na : nb;
    int64_t r[FF_MAX_DIMS];
    for (int d = 0; d < n; d++) {
        int ia = d - (n - na), ib = d - (n - nb);
        int64_t sa = ia >= 0 ? a[ia] : 1, sb = ib >= 0 ? b[ib] : 1;
        if (sa == sb || sb == 1) {
            r[d] = sa;
        } else if (sa == 1) {
            r[d] = sb;
        } else {
            char b1[160], b2[160];
            return ff_error(FF_ERR_INVALID, "%s: shapes %s and %s are not broadcastable (dim %d: %lld vs %lld)", fn,
                            ff_shape_str(na, a, b1, sizeof b1), ff_shape_str(nb, b, b2, sizeof b2), d,
                            (long long)sa, (long long)sb);
        }
    }
    *nout = n;
    memcpy(out, r, sizeof(int64_t) * (size_t)n);
    return FF_OK;
}
