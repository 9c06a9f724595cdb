/*
 * The layer_norm entry on host memory, shared by the in-tree CPU backends: the argument
 * checks and the readable per-element loops over strided views (the reference's whole
 * implementation; cpu_blas's fallback beside its contiguous fast path). Header-only.
 */
#ifndef FF_BACKEND_LAYER_NORM_H
#define FF_BACKEND_LAYER_NORM_H

#include "ff_backend_checks.h"

/* Every float dtype: the halves are read and written through double (one rounding). */
static inline int ffb_layer_norm_supported(int op, ff_dtype t)
{
    return (op == 0 || op == 1) && (ffb_is_float(t) || ffb_is_half(t));
}

/* The entry's argument checks, with messages "<backend> layer_norm: ...". */
static inline ff_status ffb_layer_norm_check(const ff_host_api *host, const char *backend, int op, const ff_view *dst,
                                             int n_dst, const ff_view *src, int n_src)
{
    if (op != 0 && op != 1) return ffb_fail(host, FF_ERR_INVALID, "%s layer_norm: invalid op %d", backend, op);
    int want_src = op ? 5 : 3;
    if (!dst || !src || n_dst != 3 || n_src != want_src)
        return ffb_fail(host, FF_ERR_INVALID, "%s layer_norm: op %d takes 3 outputs and %d inputs, got %d and %d",
                        backend, op, want_src, n_dst, n_src);
    ff_status st;
    for (int i = 0; i < n_src; i++)
        if ((st = ffb_check_view_as(host, backend, "layer_norm", "src", &src[i], 1))) return st;
    for (int i = 0; i < n_dst; i++)
        if ((st = ffb_check_view_as(host, backend, "layer_norm", "dst", &dst[i], 1))) return st;
    const ff_view *x = &src[op ? 1 : 0];
    if (!ffb_layer_norm_supported(op, x->dtype))
        return ffb_fail(host, FF_ERR_UNSUPPORTED, "%s layer_norm: not supported on %s", backend, ffb_dtype_name(x->dtype));
    if (x->ndim != 2 || x->shape[1] < 1)
        return ffb_fail(host, FF_ERR_INVALID, "%s layer_norm: x must be [R, D] with D >= 1, got rank %d", backend,
                        (int)x->ndim);
    int64_t r = x->shape[0], d = x->shape[1];
    /* per view, in src then dst order: 0 [R, D] of x's dtype, 1 [D] of x's, 2 [R] F64 */
    static const int fwd[6] = {0, 1, 1, 0, 2, 2}, bwd[8] = {0, 0, 2, 2, 1, 0, 1, 1};
    for (int i = 0; i < n_src + n_dst; i++) {
        const ff_view *v = i < n_src ? &src[i] : &dst[i - n_src];
        int k = op ? bwd[i] : fwd[i];
        ff_dtype want = k == 2 ? FF_F64 : x->dtype;
        int ok = k == 0 ? ffb_same_shape(v, x) : v->ndim == 1 && v->shape[0] == (k == 1 ? d : r);
        if (v->dtype == want && ok) continue;
        if (k == 0)
            return ffb_fail(host, FF_ERR_INVALID, "%s layer_norm: view %d must be %s [%lld, %lld], got %s of rank %d",
                            backend, i, ffb_dtype_name(want), (long long)r, (long long)d, ffb_dtype_name(v->dtype),
                            (int)v->ndim);
        return ffb_fail(host, FF_ERR_INVALID, "%s layer_norm: view %d must be %s [%lld], got %s of rank %d", backend, i,
                        ffb_dtype_name(want), (long long)(k == 1 ? d : r), ffb_dtype_name(v->dtype), (int)v->ndim);
    }
    return FF_OK;
}

static inline double ffb_ln_ld(const ff_view *v, int64_t off)
{
    return ffb_ld_f64((const char *)v->buf + off * (int64_t)ff_dtype_size(v->dtype), v->dtype);
}
static inline void ffb_ln_st(const ff_view *v, int64_t off, double x)
{
    ffb_st_f64((char *)v->buf + off * (int64_t)ff_dtype_size(v->dtype), v->dtype, x);
}
/* Element (i, k) of an [R, D] view, element i of a 1-D one. */
static inline int64_t ffb_ln_at(const ff_view *v, int64_t i, int64_t k)
{
    return v->offset + i * v->strides[0] + k * v->strides[1];
}
static inline int64_t ffb_ln_vec(const ff_view *v, int64_t i) { return v->offset + i * v->strides[0]; }

/* Rows [r0, r1) of the forward, or of the backward's gx, element by element. */
static inline void ffb_layer_norm_rows(int op, const ff_view *dst, const ff_view *src, double eps, int64_t r0,
                                       int64_t r1)
{
    const ff_view *x = &src[op ? 1 : 0];
    int64_t d = x->shape[1];
    for (int64_t i = r0; i < r1; i++) {
        if (op == 0) {
            double s = 0, q = 0;
            for (int64_t k = 0; k < d; k++) s += ffb_ln_ld(x, ffb_ln_at(x, i, k));
            double mean = s / (double)d;
            for (int64_t k = 0; k < d; k++) {
                double e = ffb_ln_ld(x, ffb_ln_at(x, i, k)) - mean;
                q += e * e;
            }
            double inv = 1 / sqrt(q / (double)d + eps);
            for (int64_t k = 0; k < d; k++) {
                double xh = (ffb_ln_ld(x, ffb_ln_at(x, i, k)) - mean) * inv;
                double y = xh * ffb_ln_ld(&src[1], ffb_ln_vec(&src[1], k)) + ffb_ln_ld(&src[2], ffb_ln_vec(&src[2], k));
                ffb_ln_st(&dst[0], ffb_ln_at(&dst[0], i, k), y);
            }
            ffb_ln_st(&dst[1], ffb_ln_vec(&dst[1], i), mean);
            ffb_ln_st(&dst[2], ffb_ln_vec(&dst[2], i), inv);
        } else {
            const ff_view *g = &src[0], *w = &src[4];
            double mean = ffb_ln_ld(&src[2], ffb_ln_vec(&src[2], i)), inv = ffb_ln_ld(&src[3], ffb_ln_vec(&src[3], i));
            double a = 0, b = 0; /* sums of gxhat and gxhat xhat */
            for (int64_t k = 0; k < d; k++) {
                double gh = ffb_ln_ld(g, ffb_ln_at(g, i, k)) * ffb_ln_ld(w, ffb_ln_vec(w, k));
                a += gh;
                b += gh * (ffb_ln_ld(x, ffb_ln_at(x, i, k)) - mean) * inv;
            }
            a /= (double)d, b /= (double)d;
            for (int64_t k = 0; k < d; k++) {
                double gh = ffb_ln_ld(g, ffb_ln_at(g, i, k)) * ffb_ln_ld(w, ffb_ln_vec(w, k));
                double xh = (ffb_ln_ld(x, ffb_ln_at(x, i, k)) - mean) * inv;
                ffb_ln_st(&dst[0], ffb_ln_at(&dst[0], i, k), inv * (gh - a - xh * b));
            }
        }
    }
}

/* Columns [k0, k1) of the backward's gw and gb: sums over every row, in double. */
static inline void ffb_layer_norm_cols(const ff_view *dst, const ff_view *src, int64_t k0, int64_t k1)
{
    const ff_view *g = &src[0], *x = &src[1];
    int64_t r = x->shape[0];
    for (int64_t k = k0; k < k1; k++) {
        double sw = 0, sb = 0;
        for (int64_t i = 0; i < r; i++) {
            double gv = ffb_ln_ld(g, ffb_ln_at(g, i, k));
            double xh = (ffb_ln_ld(x, ffb_ln_at(x, i, k)) - ffb_ln_ld(&src[2], ffb_ln_vec(&src[2], i))) *
                        ffb_ln_ld(&src[3], ffb_ln_vec(&src[3], i));
            sw += gv * xh;
            sb += gv;
        }
        ffb_ln_st(&dst[1], ffb_ln_vec(&dst[1], k), sw);
        ffb_ln_st(&dst[2], ffb_ln_vec(&dst[2], k), sb);
    }
}

#endif /* FF_BACKEND_LAYER_NORM_H */
