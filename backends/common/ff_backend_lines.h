/*
 * The line entries on host memory, shared by the in-tree backends: where a line along one
 * axis starts, and the scan (cumsum / cumprod) and argsort entries' checks and reference
 * loops. Header-only, like ff_backend_scalar.h.
 */
#ifndef FF_BACKEND_LINES_H
#define FF_BACKEND_LINES_H

#include "ff_backend_checks.h"

/* ---- lines along one axis (scan, argsort) -------------------------------------------- */
/* Where line n (row-major over the shape without `axis`) of two same-shaped views starts. */
static inline FFB_HD void ffb_line_start(const ff_view *a, const ff_view *b, int axis, int64_t n, int64_t *oa, int64_t *ob)
{
    int64_t rest = n;
    *oa = a->offset, *ob = b->offset;
    for (int d = b->ndim - 1; d >= 0; d--) {
        if (d == axis) continue;
        int64_t c = rest % b->shape[d];
        rest /= b->shape[d];
        *oa += c * a->strides[d];
        *ob += c * b->strides[d];
    }
}

/* ---- scan (cumsum / cumprod) ------------------------------------------------------ */
/* The optional scan entry on host memory: every dtype but bool; floats accumulate in
 * double and each prefix is rounded once at its store, integers wrap in 64 bits. */
static inline int ffb_scan_supported(int op, ff_dtype t) { return (op == 0 || op == 1) && ffb_dtype_ok(t) && t != FF_BOOL; }

/* The scan entry's argument checks, with messages "<backend> scan: ..."; F16/BF16 too
 * with half_ok (a backend that scans them natively: sums in double, each prefix rounded
 * once to the half). */
static inline ff_status ffb_scan_check_as(const ff_host_api *host, const char *backend, int op, const ff_view *dst,
                                          const ff_view *src, int axis, int half_ok)
{
    ff_status st;
    if ((st = ffb_check_view_as(host, backend, "scan", "dst", dst, half_ok)) ||
        (st = ffb_check_view_as(host, backend, "scan", "src", src, half_ok)))
        return st;
    int rank = src->ndim ? src->ndim : 1;
    if (!ffb_scan_supported(op, half_ok && ffb_is_half(src->dtype) ? FF_F32 : src->dtype))
        return ffb_fail(host, FF_ERR_UNSUPPORTED, "%s scan: op %d is not supported on %s", backend, op,
                        ffb_dtype_name(src->dtype));
    if (dst->dtype != src->dtype || !ffb_same_shape(dst, src))
        return ffb_fail(host, FF_ERR_INVALID, "%s scan: dst must have src's dtype and shape", backend);
    if (axis < 0 || axis >= rank)
        return ffb_fail(host, FF_ERR_INVALID, "%s scan: axis %d out of range for rank %d", backend, axis,
                        (int)src->ndim);
    return FF_OK;
}

static inline ff_status ffb_scan_check(const ff_host_api *host, const char *backend, int op, const ff_view *dst,
                                       const ff_view *src, int axis)
{
    return ffb_scan_check_as(host, backend, op, dst, src, axis, 0);
}

/* Scans one line of len elements of dtype t: src at sp, dst at dp, strides ss, ds in
 * elements (dst may be src: each element is read before it is written). Also the cuda
 * backend's device code (FFB_HD). */
static inline FFB_HD void ffb_scan_line(int op, ff_dtype t, const char *sp, int64_t ss, char *dp, int64_t ds,
                                        int64_t len)
{
    int64_t es = (int64_t)ff_dtype_size(t);
    if (ffb_is_float(t) || ffb_is_half(t)) {
        double acc = op ? 1.0 : 0.0;
        for (int64_t i = 0; i < len; i++) {
            double x = ffb_ld_f64(sp + i * ss * es, t);
            acc = op ? acc * x : acc + x;
            ffb_st_f64(dp + i * ds * es, t, acc);
        }
    } else {
        uint64_t acc = op ? 1u : 0u;
        for (int64_t i = 0; i < len; i++) {
            uint64_t x = (uint64_t)ffb_ld_i64(sp + i * ss * es, t);
            acc = op ? acc * x : acc + x;
            ffb_st_i64(dp + i * ds * es, t, ffb_u64_to_i64(acc));
        }
    }
}

/* Scans every line of src along axis into dst (same shape and dtype, host buffers; dst
 * may be src itself: each element is read before it is written). */
static inline void ffb_scan_host(int op, const ff_view *dst, const ff_view *src, int axis)
{
    ff_dtype t = src->dtype;
    int64_t es = (int64_t)ff_dtype_size(t), len = src->ndim ? src->shape[axis] : 1;
    int64_t ss = src->ndim ? src->strides[axis] : 0, ds = dst->ndim ? dst->strides[axis] : 0;
    int64_t lines = len ? ff_view_numel(src) / len : 0;
    for (int64_t n = 0; n < lines; n++) {
        int64_t so, dof;
        ffb_line_start(dst, src, axis, n, &dof, &so);
        ffb_scan_line(op, t, (const char *)src->buf + so * es, ss, (char *)dst->buf + dof * es, ds, len);
    }
}

/* ---- argsort ------------------------------------------------------------------------ */
/* The optional argsort entry on host memory: a stable bottom-up merge sort of each line's
 * indices (keys loaded once per line), NaN above every number, -0 == +0. */
typedef struct ffb_sort_key {
    double f;  /* float dtypes */
    int64_t i; /* integer dtypes and bool */
    int64_t idx;
} ffb_sort_key;

/* a strictly before b? (stability: the caller merges left before right on ties) */
static inline FFB_HD int ffb_sort_before(const ffb_sort_key *a, const ffb_sort_key *b, int is_float, int desc)
{
    if (is_float) {
        int an = isnan(a->f), bn = isnan(b->f);
        if (an || bn) return desc ? (an && !bn) : (!an && bn);
        return desc ? a->f > b->f : a->f < b->f;
    }
    return desc ? a->i > b->i : a->i < b->i;
}

/* Sorts k[0..n) stably using tmp[0..n) as scratch; returns k or tmp, whichever holds the result. */
static inline FFB_HD ffb_sort_key *ffb_merge_sort(ffb_sort_key *k, ffb_sort_key *tmp, int64_t n, int is_float, int desc)
{
    ffb_sort_key *from = k, *to = tmp;
    for (int64_t w = 1; w < n; w *= 2) {
        for (int64_t lo = 0; lo < n; lo += 2 * w) {
            int64_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n, i = lo, j = mid, o = lo;
            while (i < mid && j < hi) to[o++] = ffb_sort_before(&from[j], &from[i], is_float, desc) ? from[j++] : from[i++];
            while (i < mid) to[o++] = from[i++];
            while (j < hi) to[o++] = from[j++];
        }
        ffb_sort_key *t = from;
        from = to, to = t;
    }
    return from;
}

static inline int ffb_sort_supported(int op, ff_dtype t) { return (op == 0 || op == 1) && ffb_dtype_ok(t); }

/* The argsort entry's argument checks: dst i64 with src's shape, axis in range; src F16
 * or BF16 too with half_ok (a backend that sorts the halves' values as they are: their
 * order is their f32 values' order). */
static inline ff_status ffb_argsort_check_as(const ff_host_api *host, const char *backend, const ff_view *dst,
                                             const ff_view *src, int axis, int half_ok)
{
    ff_status st;
    if ((st = ffb_check_view(host, backend, "argsort", "dst", dst)) ||
        (st = ffb_check_view_as(host, backend, "argsort", "src", src, half_ok)))
        return st;
    int rank = src->ndim ? src->ndim : 1;
    if (dst->dtype != FF_I64 || !ffb_same_shape(dst, src))
        return ffb_fail(host, FF_ERR_INVALID, "%s argsort: dst must be i64 with src's shape", backend);
    if (axis < 0 || axis >= rank)
        return ffb_fail(host, FF_ERR_INVALID, "%s argsort: axis %d out of range for rank %d", backend, axis,
                        (int)src->ndim);
    return FF_OK;
}

static inline ff_status ffb_argsort_check(const ff_host_api *host, const char *backend, const ff_view *dst,
                                          const ff_view *src, int axis)
{
    return ffb_argsort_check_as(host, backend, dst, src, axis, 0);
}

/* Sorts one line of len elements of dtype t (src at sp, stride ss) into dst's indices
 * (dp, stride ds), with keys[0 .. 2 len) as scratch. Also the cuda backend's device code. */
static inline FFB_HD void ffb_argsort_line(ff_dtype t, const char *sp, int64_t ss, int64_t *dp, int64_t ds, int64_t len,
                                           int desc, ffb_sort_key *keys)
{
    int is_float = ffb_is_float(t) || ffb_is_half(t);
    int64_t es = (int64_t)ff_dtype_size(t);
    for (int64_t j = 0; j < len; j++) {
        const char *p = sp + j * ss * es;
        keys[j].idx = j;
        if (is_float) keys[j].f = ffb_ld_f64(p, t);
        else keys[j].i = ffb_ld_i64(p, t);
    }
    ffb_sort_key *sorted = ffb_merge_sort(keys, keys + len, len, is_float, desc);
    for (int64_t j = 0; j < len; j++) dp[j * ds] = sorted[j].idx;
}

/* Checks, then sorts every line; FF_ERR_OOM if the scratch cannot be had. */
static inline ff_status ffb_argsort_host(const ff_host_api *host, const char *backend, const ff_view *dst,
                                         const ff_view *src, int axis, int desc)
{
    ff_status st = ffb_argsort_check(host, backend, dst, src, axis);
    if (st) return st;
    int64_t len = src->ndim ? src->shape[axis] : 1;
    ffb_sort_key *keys = NULL;
    if (len > 0 && !(keys = (ffb_sort_key *)malloc(sizeof *keys * 2 * (size_t)len)))
        return ffb_fail(host, FF_ERR_OOM, "%s argsort: out of memory for a line of %lld", backend, (long long)len);
    ff_dtype t = src->dtype;
    int64_t es = (int64_t)ff_dtype_size(t), ss = src->ndim ? src->strides[axis] : 0, ds = dst->ndim ? dst->strides[axis] : 0;
    int64_t lines = len ? ff_view_numel(src) / len : 0;
    for (int64_t n = 0; n < lines; n++) {
        int64_t so, dof;
        ffb_line_start(dst, src, axis, n, &dof, &so);
        ffb_argsort_line(t, (const char *)src->buf + so * es, ss, (int64_t *)dst->buf + dof, ds, len, desc, keys);
    }
    free(keys);
    return FF_OK;
}

#endif /* FF_BACKEND_LINES_H */
