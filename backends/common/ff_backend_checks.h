/*
 * The argument checks every backend makes before it computes, shared so that each entry
 * accepts and refuses the same calls with the same messages ("<backend> <entry>: ..."):
 * error reporting through the host, the view checks, and the reduce, matmul, gather and
 * scatter_add argument checks. Host code only; the per-element formulas these calls lead
 * to are in ff_backend_scalar.h (device code too, for the cuda backend).
 */
#ifndef FF_BACKEND_CHECKS_H
#define FF_BACKEND_CHECKS_H

#include "ff_backend_scalar.h"

/* ---- error reporting ----------------------------------------------------------- */

/* Formats a message, hands it to host->set_error (when there is one) and returns st. */
#if defined(__GNUC__)
__attribute__((format(printf, 3, 0)))
#endif
static inline ff_status ffb_verror(const ff_host_api *host, ff_status st, const char *fmt, va_list ap)
{
    if (!host || !host->set_error) return st;
    char msg[512];
    vsnprintf(msg, sizeof msg, fmt, ap);
    host->set_error("%s", msg);
    return st;
}

/* ---- view checks shared by the backends ------------------------------------------- */

/* The checks every entry makes on a view the core passed: a computable dtype (or, with
 * half_ok, for copy and fill, F16/BF16 too), a rank in [0, FF_MAX_DIMS], non-negative
 * offset, sizes and strides, a buffer when there are elements. Messages read
 * "<backend> <entry>: <what> ...". */
static inline ff_status ffb_check_view_as(const ff_host_api *host, const char *backend, const char *entry,
                                          const char *what, const ff_view *v, int half_ok)
{
    char msg[256];
    ff_status st = FF_OK;
    if (!v) {
        snprintf(msg, sizeof msg, "%s %s: %s view is NULL", backend, entry, what), st = FF_ERR_INVALID;
    } else if ((ffb_is_half(v->dtype) || ffb_is_narrow_int(v->dtype)) && !half_ok) {
        snprintf(msg, sizeof msg, "%s %s: %s has dtype %s, which %s does not compute on", backend, entry, what,
                 ffb_dtype_name(v->dtype), backend);
        st = FF_ERR_UNSUPPORTED;
    } else if (!ffb_dtype_storage_ok(v->dtype) && !ff_dtype_is_complex(v->dtype)) { /* complex: where supports() took it */
        snprintf(msg, sizeof msg, "%s %s: %s has invalid dtype %d", backend, entry, what, (int)v->dtype), st = FF_ERR_INVALID;
    } else if (v->ndim < 0 || v->ndim > FF_MAX_DIMS) {
        snprintf(msg, sizeof msg, "%s %s: %s has rank %d outside [0, %d]", backend, entry, what, (int)v->ndim,
                 FF_MAX_DIMS);
        st = FF_ERR_INVALID;
    } else if (v->offset < 0) {
        snprintf(msg, sizeof msg, "%s %s: %s has negative offset %lld", backend, entry, what, (long long)v->offset);
        st = FF_ERR_INVALID;
    } else {
        for (int d = 0; d < v->ndim && !st; d++)
            if (v->shape[d] < 0 || v->strides[d] < 0) {
                snprintf(msg, sizeof msg, "%s %s: %s has shape %lld / stride %lld at dim %d", backend, entry, what,
                         (long long)v->shape[d], (long long)v->strides[d], d);
                st = FF_ERR_INVALID;
            }
        if (!st && !v->buf && ff_view_numel(v) > 0) {
            snprintf(msg, sizeof msg, "%s %s: %s has elements but no buffer", backend, entry, what);
            st = FF_ERR_INVALID;
        }
    }
    if (st && host && host->set_error) host->set_error("%s", msg);
    return st;
}

/* ffb_check_view_as for the compute entries: F16/BF16 are FF_ERR_UNSUPPORTED. */
static inline ff_status ffb_check_view(const ff_host_api *host, const char *backend, const char *entry,
                                       const char *what, const ff_view *v)
{
    return ffb_check_view_as(host, backend, entry, what, v, 0);
}

static inline int ffb_same_shape(const ff_view *a, const ff_view *b)
{
    if (a->ndim != b->ndim) return 0;
    for (int d = 0; d < a->ndim; d++)
        if (a->shape[d] != b->shape[d]) return 0;
    return 1;
}

/* "[2, 3]" */
static inline void ffb_shape_str(const ff_view *v, char *buf, size_t cap)
{
    size_t len = (size_t)snprintf(buf, cap, "[");
    for (int d = 0; d < v->ndim && len < cap; d++)
        len += (size_t)snprintf(buf + len, cap - len, d ? ", %lld" : "%lld", (long long)v->shape[d]);
    if (len < cap) snprintf(buf + len, cap - len, "]");
}

/* ---- argument checks of reduce and matmul, shared by the backends ---------------------- */
/* Messages "<backend> <entry>: ..." through host->set_error; FF_OK when the call is well formed. */
#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
static inline ff_status ffb_fail(const ff_host_api *host, ff_status st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    st = ffb_verror(host, st, fmt, ap);
    va_end(ap);
    return st;
}

/* reduce: dtypes (SUM/PROD any dst, MAX/MIN src's, ARG* I64, ANY/ALL BOOL), the mask within
 * the rank, dst in keepdim form, ARG* over at most one axis; *axis gets the last reduced
 * axis (-1 if none). An empty source for MAX/MIN/ARG* is left to the caller. */
static inline ff_status ffb_reduce_check(const ff_host_api *host, const char *backend, ff_reduce_op op,
                                         const ff_view *dst, const ff_view *src, uint32_t mask, int *axis)
{
    ff_status st;
    if ((st = ffb_check_view(host, backend, "reduce", "dst", dst)) || (st = ffb_check_view(host, backend, "reduce", "src", src)))
        return st;
    const char *name = ffb_reduce_name(op);
    if (!name) return ffb_fail(host, FF_ERR_INVALID, "%s reduce: invalid op %d", backend, (int)op);
    ff_dtype want = dst->dtype;
    if (op == FF_REDUCE_MAX || op == FF_REDUCE_MIN) want = src->dtype;
    if (ffb_reduce_is_arg(op)) want = FF_I64;
    if (op == FF_REDUCE_ANY || op == FF_REDUCE_ALL) want = FF_BOOL;
    if (dst->dtype != want)
        return ffb_fail(host, FF_ERR_INVALID, "%s reduce: %s of %s writes %s, but dst is %s", backend, name,
                        ffb_dtype_name(src->dtype), ffb_dtype_name(want), ffb_dtype_name(dst->dtype));
    if ((mask >> src->ndim) != 0) /* ndim <= FF_MAX_DIMS < 32: a defined shift */
        return ffb_fail(host, FF_ERR_INVALID, "%s reduce: axes mask 0x%x names axes beyond rank %d", backend,
                        (unsigned)mask, (int)src->ndim);
    if (dst->ndim != src->ndim)
        return ffb_fail(host, FF_ERR_INVALID, "%s reduce: dst rank %d != src rank %d (dst must be in keepdim form)",
                        backend, (int)dst->ndim, (int)src->ndim);
    int naxes = 0;
    *axis = -1;
    for (int d = 0; d < src->ndim; d++) {
        int reduced = (mask >> d) & 1u;
        if (reduced) naxes++, *axis = d;
        if (dst->shape[d] != (reduced ? 1 : src->shape[d]))
            return ffb_fail(host, FF_ERR_INVALID, "%s reduce: dst size %lld at dim %d, expected %lld", backend,
                            (long long)dst->shape[d], d, reduced ? 1LL : (long long)src->shape[d]);
    }
    if (ffb_reduce_is_arg(op) && naxes > 1)
        return ffb_fail(host, FF_ERR_INVALID, "%s reduce: %s reduces exactly one axis, mask 0x%x has %d", backend,
                        name, (unsigned)mask, naxes);
    return FF_OK;
}

/* matmul: one dtype (not bool), equal ranks >= 2, equal batch dims, [M, K] @ [K, N] -> [M, N]. */
static inline ff_status ffb_matmul_check(const ff_host_api *host, const char *backend, const ff_view *dst,
                                         const ff_view *a, const ff_view *b)
{
    ff_status st;
    if ((st = ffb_check_view(host, backend, "matmul", "dst", dst)) || (st = ffb_check_view(host, backend, "matmul", "a", a)) ||
        (st = ffb_check_view(host, backend, "matmul", "b", b)))
        return st;
    if (a->dtype != dst->dtype || b->dtype != dst->dtype)
        return ffb_fail(host, FF_ERR_INVALID, "%s matmul: dtypes differ (dst %s, a %s, b %s)", backend,
                        ffb_dtype_name(dst->dtype), ffb_dtype_name(a->dtype), ffb_dtype_name(b->dtype));
    if (dst->dtype == FF_BOOL) return ffb_fail(host, FF_ERR_UNSUPPORTED, "%s matmul: not supported on bool", backend);
    int r = dst->ndim;
    if (r < 2 || a->ndim != r || b->ndim != r)
        return ffb_fail(host, FF_ERR_INVALID, "%s matmul: ranks must be equal and >= 2 (dst %d, a %d, b %d)", backend,
                        (int)dst->ndim, (int)a->ndim, (int)b->ndim);
    for (int d = 0; d < r - 2; d++)
        if (a->shape[d] != dst->shape[d] || b->shape[d] != dst->shape[d])
            return ffb_fail(host, FF_ERR_INVALID, "%s matmul: batch dim %d differs (dst %lld, a %lld, b %lld)", backend,
                            d, (long long)dst->shape[d], (long long)a->shape[d], (long long)b->shape[d]);
    if (a->shape[r - 2] != dst->shape[r - 2] || b->shape[r - 1] != dst->shape[r - 1] || a->shape[r - 1] != b->shape[r - 2])
        return ffb_fail(host, FF_ERR_INVALID, "%s matmul: [%lld x %lld] @ [%lld x %lld] cannot give [%lld x %lld]",
                        backend, (long long)a->shape[r - 2], (long long)a->shape[r - 1], (long long)b->shape[r - 2],
                        (long long)b->shape[r - 1], (long long)dst->shape[r - 2], (long long)dst->shape[r - 1]);
    return FF_OK;
}

/* ---- gather / scatter_add ---------------------------------------------------------------- */

/* A 0-d view as a rank-1 view of one element (in *tmp); other views pass through. */
static inline const ff_view *ffb_as_rank1(const ff_view *v, ff_view *tmp)
{
    if (v->ndim != 0) return v;
    *tmp = *v;
    tmp->ndim = 1;
    tmp->shape[0] = 1;
    tmp->strides[0] = 0;
    return tmp;
}

#endif /* FF_BACKEND_CHECKS_H */
