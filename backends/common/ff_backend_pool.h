/*
 * The pool2d entry on host memory, shared by the in-tree CPU backends: the argument
 * checks and the readable loops over strided views (the reference's whole
 * implementation; cpu_blas's fallback beside its contiguous f32 loops). Header-only.
 */
#ifndef FF_BACKEND_POOL_H
#define FF_BACKEND_POOL_H

#include "ff_backend_checks.h"

static inline int ffb_pool2d_supported(int op, ff_dtype t) { return op >= 0 && op < FF_POOL2D_COUNT && ffb_is_float(t); }

static inline int ffb_pool2d_is_forward(int op)
{
    return op == FF_POOL2D_MAX_FORWARD || op == FF_POOL2D_AVG_FORWARD || op == FF_POOL2D_ADAPTIVE_AVG_FORWARD;
}

static inline int ffb_pool2d_is_adaptive(int op)
{
    return op == FF_POOL2D_ADAPTIVE_AVG_FORWARD || op == FF_POOL2D_ADAPTIVE_AVG_BACKWARD;
}

/* Adaptive window i of an axis in -> out: [*a, *b) (PyTorch's start and end). */
static inline void ffb_adaptive_window(int64_t i, int64_t in, int64_t out, int64_t *a, int64_t *b)
{
    *a = i * in / out;
    *b = ((i + 1) * in + out - 1) / out;
}

static inline int64_t ffb_pool_out(int64_t in, int64_t k, int64_t s, int64_t p) { return (in + 2 * p - k) / s + 1; }

/* The entry's argument checks, with messages "<backend> pool2d: ...". dtype_ok(op, x's
 * dtype) says which dtypes the backend's kernels take (ffb_pool2d_supported: the float
 * dtypes the shared loops read; a backend with its own half kernels widens it). */
static inline ff_status ffb_pool2d_check(const ff_host_api *host, const char *backend, int op, const ff_view *dst,
                                         const ff_view *src, int n_src, const ff_pool2d_params *p,
                                         int (*dtype_ok)(int op, ff_dtype t))
{
    static const int want[FF_POOL2D_COUNT] = {1, 3, 1, 1, 3, 1, 1};
    if (op < 0 || op >= FF_POOL2D_COUNT) return ffb_fail(host, FF_ERR_INVALID, "%s pool2d: invalid op %d", backend, op);
    if (!dst || !src || !p || n_src != want[op])
        return ffb_fail(host, FF_ERR_INVALID, "%s pool2d: op %d takes %d inputs, got %d", backend, op, want[op], n_src);
    ff_status st;
    if ((st = ffb_check_view_as(host, backend, "pool2d", "dst", dst, dst && dtype_ok(op, dst->dtype)))) return st;
    for (int i = 0; i < n_src; i++)
        if ((st = ffb_check_view_as(host, backend, "pool2d", "src", &src[i], dtype_ok(op, src[i].dtype)))) return st;
    int fwd = ffb_pool2d_is_forward(op), adaptive = ffb_pool2d_is_adaptive(op);
    const ff_view *x = fwd ? &src[0] : dst, *y = fwd ? dst : &src[0]; /* the big and the pooled shape */
    if (!dtype_ok(op, x->dtype))
        return ffb_fail(host, FF_ERR_UNSUPPORTED, "%s pool2d: not supported on %s", backend, ffb_dtype_name(x->dtype));
    if (adaptive && (x->ndim != 4 || y->ndim != 4 || x->shape[0] != y->shape[0] || x->shape[1] != y->shape[1] ||
                     x->shape[2] < 1 || x->shape[3] < 1))
        return ffb_fail(host, FF_ERR_INVALID, "%s pool2d: adaptive pooling needs x [N, C, H >= 1, W >= 1] and y "
                        "[N, C, OH, OW]", backend);
    for (int i = 0; i < 2 && !adaptive; i++)
        if (p->kernel[i] < 1 || p->stride[i] < 1 || p->padding[i] < 0 || p->padding[i] > p->kernel[i] / 2)
            return ffb_fail(host, FF_ERR_INVALID, "%s pool2d: bad window (kernel %lld, stride %lld, padding %lld)",
                            backend, (long long)p->kernel[i], (long long)p->stride[i], (long long)p->padding[i]);
    if (!adaptive && (x->ndim != 4 || y->ndim != 4 || x->shape[0] != y->shape[0] || x->shape[1] != y->shape[1] ||
        x->shape[2] + 2 * p->padding[0] < p->kernel[0] || x->shape[3] + 2 * p->padding[1] < p->kernel[1] ||
        y->shape[2] != ffb_pool_out(x->shape[2], p->kernel[0], p->stride[0], p->padding[0]) ||
        y->shape[3] != ffb_pool_out(x->shape[3], p->kernel[1], p->stride[1], p->padding[1])))
        return ffb_fail(host, FF_ERR_INVALID, "%s pool2d: the pooled shape does not follow from x's and the window",
                        backend);
    for (int i = 0; i < n_src; i++) {
        int max_bwd = op == FF_POOL2D_MAX_BACKWARD || op == FF_POOL2D_MAX_BACKWARD_FIRST;
        const ff_view *v = &src[i], *like = max_bwd && i == 1 ? dst : y;
        if (v->dtype != x->dtype || !ffb_same_shape(v, fwd ? x : like))
            return ffb_fail(host, FF_ERR_INVALID, "%s pool2d: input %d has the wrong dtype or shape", backend, i);
    }
    if (dst->dtype != x->dtype) return ffb_fail(host, FF_ERR_INVALID, "%s pool2d: dst has the wrong dtype", backend);
    return FF_OK;
}

static inline int64_t ffb_at4(const ff_view *v, int64_t n, int64_t c, int64_t h, int64_t w)
{
    return v->offset + n * v->strides[0] + c * v->strides[1] + h * v->strides[2] + w * v->strides[3];
}

static inline double ffb_ld4(const ff_view *v, int64_t off)
{
    return ffb_ld_f64((const char *)v->buf + off * (int64_t)ff_dtype_size(v->dtype), v->dtype);
}

static inline void ffb_st4(const ff_view *v, int64_t off, double x)
{
    ffb_st_f64((char *)v->buf + off * (int64_t)ff_dtype_size(v->dtype), v->dtype, x);
}

/* The element of window rows [ha, hb) x columns [wa, wb) of plane (n, c) of x that a max
 * window's gradient goes to, as h * W + w (-1 if none equals m): the first equal to m in
 * row-major order, the last NaN when m is NaN (PyTorch's argmax, see ff_pool2d_op). */
static inline int64_t ffb_pool2d_pick(const ff_view *x, double m, int64_t n, int64_t c, int64_t ha, int64_t hb,
                                      int64_t wa, int64_t wb)
{
    int64_t pick = -1, W = x->shape[3];
    for (int64_t h = ha; h < hb; h++)
        for (int64_t w = wa; w < wb; w++) {
            double v = ffb_ld4(x, ffb_at4(x, n, c, h, w));
            if (m != m ? v != v : v == m && pick < 0) pick = h * W + w;
        }
    return pick;
}

/* Planes [p0, p1) (plane = one (n, c)) of the entry, element by element. */
static inline void ffb_pool2d_planes(int op, const ff_view *dst, const ff_view *src, const ff_pool2d_params *p,
                                     int64_t p0, int64_t p1)
{
    int fwd = ffb_pool2d_is_forward(op), adaptive = ffb_pool2d_is_adaptive(op);
    if (adaptive) op = fwd ? FF_POOL2D_AVG_FORWARD : FF_POOL2D_AVG_BACKWARD; /* the windows differ, not the sums */
    const ff_view *x = fwd ? &src[0] : dst, *y = fwd ? dst : &src[0];
    int64_t C = x->shape[1], H = x->shape[2], W = x->shape[3], OH = y->shape[2], OW = y->shape[3];
    int64_t kh = adaptive ? 0 : p->kernel[0], kw = adaptive ? 0 : p->kernel[1], area = kh * kw;
    for (int64_t pl = p0; pl < p1; pl++) {
        int64_t n = pl / C, c = pl % C;
        if (!fwd)
            for (int64_t h = 0; h < H; h++)
                for (int64_t w = 0; w < W; w++) ffb_st4(dst, ffb_at4(dst, n, c, h, w), 0.0);
        for (int64_t oh = 0; oh < OH; oh++)
            for (int64_t ow = 0; ow < OW; ow++) {
                int64_t ha, hb, wa, wb;
                if (adaptive) {
                    ffb_adaptive_window(oh, H, OH, &ha, &hb);
                    ffb_adaptive_window(ow, W, OW, &wa, &wb);
                    area = (hb - ha) * (wb - wa);
                } else {
                    int64_t h0 = oh * p->stride[0] - p->padding[0], w0 = ow * p->stride[1] - p->padding[1];
                    ha = h0 < 0 ? 0 : h0, hb = h0 + kh > H ? H : h0 + kh;
                    wa = w0 < 0 ? 0 : w0, wb = w0 + kw > W ? W : w0 + kw;
                }
                int64_t yo = ffb_at4(y, n, c, oh, ow);
                if (op == FF_POOL2D_MAX_FORWARD || op == FF_POOL2D_AVG_FORWARD) {
                    double acc = op == FF_POOL2D_MAX_FORWARD ? -INFINITY : 0.0;
                    for (int64_t h = ha; h < hb; h++)
                        for (int64_t w = wa; w < wb; w++) {
                            double v = ffb_ld4(x, ffb_at4(x, n, c, h, w));
                            if (op == FF_POOL2D_AVG_FORWARD) acc += v;
                            else if (v > acc || v != v) acc = v != v || acc != acc ? NAN : v;
                        }
                    ffb_st4(dst, yo, op == FF_POOL2D_AVG_FORWARD ? acc / (double)area : acc);
                } else if (op == FF_POOL2D_AVG_BACKWARD) {
                    double g = ffb_ld4(y, yo) / (double)area;
                    for (int64_t h = ha; h < hb; h++)
                        for (int64_t w = wa; w < wb; w++) {
                            int64_t o = ffb_at4(dst, n, c, h, w);
                            ffb_st4(dst, o, ffb_ld4(dst, o) + g);
                        }
                } else if (op == FF_POOL2D_MAX_BACKWARD_FIRST) { /* src {gy, x, y}: one element */
                    int64_t o = ffb_pool2d_pick(&src[1], ffb_ld4(&src[2], ffb_at4(&src[2], n, c, oh, ow)), n, c, ha,
                                                hb, wa, wb);
                    if (o >= 0) {
                        int64_t d = ffb_at4(dst, n, c, o / W, o % W);
                        ffb_st4(dst, d, ffb_ld4(dst, d) + ffb_ld4(y, yo));
                    }
                } else { /* MAX_BACKWARD: src {gy, x, y} */
                    double m = ffb_ld4(&src[2], ffb_at4(&src[2], n, c, oh, ow));
                    int64_t ties = 0;
                    for (int64_t h = ha; h < hb; h++)
                        for (int64_t w = wa; w < wb; w++) ties += ffb_ld4(&src[1], ffb_at4(&src[1], n, c, h, w)) == m;
                    if (!ties) continue;
                    double g = ffb_ld4(y, yo) / (double)ties;
                    for (int64_t h = ha; h < hb; h++)
                        for (int64_t w = wa; w < wb; w++)
                            if (ffb_ld4(&src[1], ffb_at4(&src[1], n, c, h, w)) == m) {
                                int64_t o = ffb_at4(dst, n, c, h, w);
                                ffb_st4(dst, o, ffb_ld4(dst, o) + g);
                            }
                }
            }
    }
}

#endif /* FF_BACKEND_POOL_H */
