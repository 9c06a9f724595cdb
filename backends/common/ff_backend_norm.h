/*
 * The batch_norm entry on host memory, shared by the in-tree CPU backends: the argument
 * checks and the readable per-element loops over strided views (the reference's whole
 * implementation; cpu_blas's fallback beside its contiguous fast path). Header-only.
 */
#ifndef FF_BACKEND_NORM_H
#define FF_BACKEND_NORM_H

#include "ff_backend_checks.h"

/* Half x too: its loops widen each element to double and round y and gx once. */
static inline int ffb_batch_norm_supported(int op, ff_dtype t)
{
    return op >= 0 && op <= 2 && (ffb_is_float(t) || ffb_is_half(t));
}

/* The batch_norm entry's argument checks, with messages "<backend> batch_norm: ...". */
static inline ff_status ffb_batch_norm_check(const ff_host_api *host, const char *backend, int op, const ff_view *dst,
                                             int n_dst, const ff_view *src, int n_src)
{
    if (op < 0 || op > 2) return ffb_fail(host, FF_ERR_INVALID, "%s batch_norm: invalid op %d", backend, op);
    int want_dst = op == 0 ? 4 : op == 1 ? 3 : 1, want_src = op == 1 ? 5 : 3;
    if (!dst || !src || n_dst != want_dst || n_src != want_src)
        return ffb_fail(host, FF_ERR_INVALID, "%s batch_norm: op %d takes %d outputs and %d inputs, got %d and %d",
                        backend, op, want_dst, want_src, n_dst, n_src);
    ff_status st;
    for (int i = 0; i < n_src; i++) /* halves: supported() below decides, the dtype loop checks */
        if ((st = ffb_check_view_as(host, backend, "batch_norm", "src", &src[i], 1))) return st;
    for (int i = 0; i < n_dst; i++)
        if ((st = ffb_check_view_as(host, backend, "batch_norm", "dst", &dst[i], 1))) return st;
    const ff_view *x = &src[op == 1];
    if (!ffb_batch_norm_supported(op, x->dtype))
        return ffb_fail(host, FF_ERR_UNSUPPORTED, "%s batch_norm: not supported on %s", backend, ffb_dtype_name(x->dtype));
    if (x->ndim < 2) return ffb_fail(host, FF_ERR_INVALID, "%s batch_norm: x needs rank >= 2, got %d", backend, (int)x->ndim);
    int64_t c = x->shape[1];
    ff_dtype vt = ffb_is_half(x->dtype) ? FF_F32 : x->dtype; /* the [C] views' dtype */
    for (int i = 0; i < n_src + n_dst; i++) {
        const ff_view *v = i < n_src ? &src[i] : &dst[i - n_src];
        int full = i < n_src ? (op == 1 ? i <= 1 : i == 0) : i == n_src; /* x, g, y, gx: x's shape; the rest [C] */
        if (v->dtype != (full ? x->dtype : vt))
            return ffb_fail(host, FF_ERR_INVALID, "%s batch_norm: view %d is %s, expected %s (x is %s)", backend, i,
                            ffb_dtype_name(v->dtype), ffb_dtype_name(full ? x->dtype : vt), ffb_dtype_name(x->dtype));
        if (full ? !ffb_same_shape(v, x) : (v->ndim != 1 || v->shape[0] != c))
            return ffb_fail(host, FF_ERR_INVALID, "%s batch_norm: view %d has the wrong shape (x's, or [%lld])", backend, i,
                            (long long)c);
    }
    return FF_OK;
}

/* Element k (0 <= k < M, row-major over every dim but 1) of channel c of v. */
static inline int64_t ffb_bn_offset(const ff_view *v, int64_t c, int64_t k)
{
    int64_t off = v->offset + c * v->strides[1];
    for (int d = v->ndim - 1; d >= 0; d--) {
        if (d == 1) continue;
        off += (k % v->shape[d]) * v->strides[d];
        k /= v->shape[d];
    }
    return off;
}

static inline double ffb_bn_ld(const ff_view *v, int64_t off) { return ffb_ld_f64((const char *)v->buf + off * (int64_t)ff_dtype_size(v->dtype), v->dtype); }
static inline void ffb_bn_st(const ff_view *v, int64_t off, double x) { ffb_st_f64((char *)v->buf + off * (int64_t)ff_dtype_size(v->dtype), v->dtype, x); }
/* Element c of a [C] view. */
static inline double ffb_bn_vec(const ff_view *v, int64_t c) { return ffb_bn_ld(v, v->offset + c * v->strides[0]); }
static inline void ffb_bn_vec_put(const ff_view *v, int64_t c, double x) { ffb_bn_st(v, v->offset + c * v->strides[0], x); }

/* Channels [c0, c1) of the entry, element by element through the strides. */
static inline void ffb_batch_norm_channels(int op, const ff_view *dst, const ff_view *src, double eps, int64_t c0,
                                           int64_t c1)
{
    const ff_view *x = &src[op == 1];
    int64_t m = x->shape[1] ? ff_view_numel(x) / x->shape[1] : 0;
    for (int64_t c = c0; c < c1; c++) {
        if (op == 2) {
            double sc = ffb_bn_vec(&src[1], c), sh = ffb_bn_vec(&src[2], c);
            for (int64_t k = 0; k < m; k++)
                ffb_bn_st(&dst[0], ffb_bn_offset(&dst[0], c, k), ffb_bn_ld(x, ffb_bn_offset(x, c, k)) * sc + sh);
        } else if (op == 0) {
            double s = 0, q = 0;
            for (int64_t k = 0; k < m; k++) s += ffb_bn_ld(x, ffb_bn_offset(x, c, k));
            double mean = m ? s / (double)m : 0;
            for (int64_t k = 0; k < m; k++) {
                double d = ffb_bn_ld(x, ffb_bn_offset(x, c, k)) - mean;
                q += d * d;
            }
            double var = m ? q / (double)m : 0, inv = 1 / sqrt(var + eps);
            double w = ffb_bn_vec(&src[1], c);
            double b = ffb_bn_vec(&src[2], c);
            for (int64_t k = 0; k < m; k++)
                ffb_bn_st(&dst[0], ffb_bn_offset(&dst[0], c, k), (ffb_bn_ld(x, ffb_bn_offset(x, c, k)) - mean) * inv * w + b);
            ffb_bn_vec_put(&dst[1], c, mean);
            ffb_bn_vec_put(&dst[2], c, inv);
            ffb_bn_vec_put(&dst[3], c, var);
        } else {
            const ff_view *g = &src[0];
            double mean = ffb_bn_vec(&src[2], c);
            double inv = ffb_bn_vec(&src[3], c);
            double w = ffb_bn_vec(&src[4], c);
            double sg = 0, sgx = 0;
            for (int64_t k = 0; k < m; k++) {
                double gk = ffb_bn_ld(g, ffb_bn_offset(g, c, k));
                sg += gk;
                sgx += gk * (ffb_bn_ld(x, ffb_bn_offset(x, c, k)) - mean) * inv;
            }
            double a = m ? sg / (double)m : 0, bq = m ? sgx / (double)m : 0;
            for (int64_t k = 0; k < m; k++) {
                double xh = (ffb_bn_ld(x, ffb_bn_offset(x, c, k)) - mean) * inv;
                double gk = ffb_bn_ld(g, ffb_bn_offset(g, c, k));
                ffb_bn_st(&dst[0], ffb_bn_offset(&dst[0], c, k), w * inv * (gk - a - xh * bq));
            }
            ffb_bn_vec_put(&dst[1], c, sgx);
            ffb_bn_vec_put(&dst[2], c, sg);
        }
    }
}

#endif /* FF_BACKEND_NORM_H */
