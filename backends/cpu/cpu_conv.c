/* The optional conv2d entries, stride, padding, dilation and groups, as the definition
 * over strided views: every output element is summed in double and rounded once. The
 * sums run into a double plane per output (n, o) (per input (n, c) for the gradient to
 * the input, scattered there), so the inner loop walks one row with plain loads: 1.6x
 * the composition's time on a 3x3 conv, where summing element by element took 20x. It
 * is what the faster backends are compared with. */
#include <stdbool.h>
#include <stdlib.h>

#include "cpu_impl.h"

int cpu_conv2d_supported(int op, ff_dtype t)
{
    return ((op >= 0 && op <= 2) || op == FF_CONV2D_DILATION_GROUPS) && ffb_is_float(t);
}

static int64_t at(const ff_view *v, int64_t a, int64_t b, int64_t c, int64_t d)
{
    return v->offset + a * v->strides[0] + b * v->strides[1] + c * v->strides[2] + d * v->strides[3];
}

static inline double ld(const ff_view *v, int64_t off)
{
    return v->dtype == FF_F32 ? (double)((const float *)v->buf)[off] : ((const double *)v->buf)[off];
}

static inline void st(const ff_view *v, int64_t off, double x)
{
    if (v->dtype == FF_F32) ((float *)v->buf)[off] = (float)x;
    else ((double *)v->buf)[off] = x;
}

/* x [N, C, H, W], w [O, C / G, KH, KW], y [N, O, OH, OW]: the entries' views in their
 * roles, checked to fit together and p. */
static ff_status check(void *ctx, const char *entry, const ff_view *x, const ff_view *w, const ff_view *y,
                       const ff_conv2d_params *p)
{
    const ff_host_api *host = ctx ? ((cpu_ctx *)ctx)->host : NULL;
    ff_status s;
    if ((s = ffb_check_view(host, "cpu", entry, "x", x)) || (s = ffb_check_view(host, "cpu", entry, "w", w)) ||
        (s = ffb_check_view(host, "cpu", entry, "y", y)))
        return s;
    if (!ffb_is_float(x->dtype) || w->dtype != x->dtype || y->dtype != x->dtype)
        return ffb_fail(host, FF_ERR_UNSUPPORTED, "cpu %s: needs one float dtype (f32, f64), got %s", entry,
                        ffb_dtype_name(x->dtype));
    bool ok = p && x->ndim == 4 && w->ndim == 4 && y->ndim == 4 && p->groups >= 1;
    for (int d = 0; ok && d < 2; d++)
        ok = p->stride[d] >= 1 && p->dilation[d] >= 1 && p->padding[d] >= 0 &&
             x->shape[2 + d] + 2 * p->padding[d] >= p->dilation[d] * (w->shape[2 + d] - 1) + 1 &&
             y->shape[2 + d] == (x->shape[2 + d] + 2 * p->padding[d] - p->dilation[d] * (w->shape[2 + d] - 1) - 1) /
                                        p->stride[d] + 1;
    ok = ok && x->shape[0] == y->shape[0] && w->shape[0] == y->shape[1] && x->shape[1] == w->shape[1] * p->groups &&
         w->shape[0] % p->groups == 0;
    if (!ok) {
        char xs[96], ws[96], ys[96];
        ffb_shape_str(x, xs, sizeof xs), ffb_shape_str(w, ws, sizeof ws), ffb_shape_str(y, ys, sizeof ys);
        return ffb_fail(host, FF_ERR_INVALID, "cpu %s: x %s, w %s and y %s do not fit the geometry", entry, xs, ws, ys);
    }
    return FF_OK;
}

/* Writes a plane of sums into v[a, b] (rows, cols of v's last two dims). */
static void store_plane(const ff_view *v, int64_t a, int64_t b, const double *acc)
{
    for (int64_t r = 0; r < v->shape[2]; r++)
        for (int64_t q = 0; q < v->shape[3]; q++) st(v, at(v, a, b, r, q), acc[r * v->shape[3] + q]);
}

/* The output columns [j0, j1) whose tap at kernel column b reads inside x's W columns. */
static void col_range(int64_t b, const ff_conv2d_params *p, int64_t w_in, int64_t ow, int64_t *j0, int64_t *j1)
{
    int64_t base = b * p->dilation[1] - p->padding[1], s = p->stride[1]; /* column = j s + base */
    *j0 = base >= 0 ? 0 : (-base + s - 1) / s;
    *j1 = base >= w_in ? 0 : (w_in - 1 - base) / s + 1;
    if (*j1 > ow) *j1 = ow;
}

static ff_status oom(void *ctx, const char *entry)
{
    return ffb_fail(ctx ? ((cpu_ctx *)ctx)->host : NULL, FF_ERR_OOM, "cpu %s: out of memory for a plane", entry);
}

ff_status cpu_conv2d(void *ctx, const ff_view *y, const ff_view *x, const ff_view *w, const ff_conv2d_params *p)
{
    ff_status s = check(ctx, "conv2d", x, w, y, p);
    if (s) return s;
    int64_t cg = w->shape[1], og = w->shape[0] / p->groups, oh = y->shape[2], ow = y->shape[3];
    double *acc = malloc(sizeof(double) * (size_t)(oh * ow + 1));
    if (!acc) return oom(ctx, "conv2d");
    for (int64_t n = 0; n < y->shape[0]; n++)
        for (int64_t o = 0; o < y->shape[1]; o++) {
            for (int64_t e = 0; e < oh * ow; e++) acc[e] = 0;
            for (int64_t c = 0; c < cg; c++)
                for (int64_t a = 0; a < w->shape[2]; a++)
                    for (int64_t b = 0; b < w->shape[3]; b++) {
                        double wv = ld(w, at(w, o, c, a, b));
                        int64_t j0, j1, xc = o / og * cg + c;
                        col_range(b, p, x->shape[3], ow, &j0, &j1);
                        for (int64_t i = 0; i < oh; i++) {
                            int64_t r = i * p->stride[0] + a * p->dilation[0] - p->padding[0];
                            if (r < 0 || r >= x->shape[2]) continue;
                            int64_t x0 = at(x, n, xc, r, b * p->dilation[1] - p->padding[1]), xs = p->stride[1] * x->strides[3];
                            for (int64_t j = j0; j < j1; j++) acc[i * ow + j] += wv * ld(x, x0 + j * xs);
                        }
                    }
            store_plane(y, n, o, acc);
        }
    free(acc);
    return FF_OK;
}

ff_status cpu_conv2d_backward_input(void *ctx, const ff_view *gx, const ff_view *gy, const ff_view *w,
                                    const ff_conv2d_params *p)
{
    ff_status s = check(ctx, "conv2d_backward_input", gx, w, gy, p);
    if (s) return s;
    int64_t cg = w->shape[1], og = w->shape[0] / p->groups, hw = gx->shape[2] * gx->shape[3];
    double *acc = malloc(sizeof(double) * (size_t)(hw + 1));
    if (!acc) return oom(ctx, "conv2d_backward_input");
    for (int64_t n = 0; n < gx->shape[0]; n++)
        for (int64_t ci = 0; ci < gx->shape[1]; ci++) {
            for (int64_t e = 0; e < hw; e++) acc[e] = 0;
            int64_t g = ci / cg, c = ci % cg;
            for (int64_t o = g * og; o < (g + 1) * og; o++)
                for (int64_t a = 0; a < w->shape[2]; a++)
                    for (int64_t b = 0; b < w->shape[3]; b++) {
                        double wv = ld(w, at(w, o, c, a, b));
                        int64_t j0, j1;
                        col_range(b, p, gx->shape[3], gy->shape[3], &j0, &j1);
                        for (int64_t i = 0; i < gy->shape[2]; i++) {
                            int64_t r = i * p->stride[0] + a * p->dilation[0] - p->padding[0];
                            if (r < 0 || r >= gx->shape[2]) continue;
                            int64_t base = r * gx->shape[3] + b * p->dilation[1] - p->padding[1], y0 = at(gy, n, o, i, 0);
                            for (int64_t j = j0; j < j1; j++) acc[base + j * p->stride[1]] += wv * ld(gy, y0 + j * gy->strides[3]);
                        }
                    }
            store_plane(gx, n, ci, acc);
        }
    free(acc);
    return FF_OK;
}

ff_status cpu_conv2d_backward_weight(void *ctx, const ff_view *gw, const ff_view *gy, const ff_view *x,
                                     const ff_conv2d_params *p)
{
    ff_status s = check(ctx, "conv2d_backward_weight", x, gw, gy, p);
    if (s) return s;
    int64_t cg = gw->shape[1], og = gw->shape[0] / p->groups;
    for (int64_t o = 0; o < gw->shape[0]; o++)
        for (int64_t c = 0; c < cg; c++)
            for (int64_t a = 0; a < gw->shape[2]; a++)
                for (int64_t b = 0; b < gw->shape[3]; b++) {
                    double sum = 0;
                    int64_t j0, j1, xc = o / og * cg + c;
                    col_range(b, p, x->shape[3], gy->shape[3], &j0, &j1);
                    for (int64_t n = 0; n < gy->shape[0]; n++)
                        for (int64_t i = 0; i < gy->shape[2]; i++) {
                            int64_t r = i * p->stride[0] + a * p->dilation[0] - p->padding[0];
                            if (r < 0 || r >= x->shape[2]) continue;
                            int64_t x0 = at(x, n, xc, r, b * p->dilation[1] - p->padding[1]), xs = p->stride[1] * x->strides[3];
                            int64_t y0 = at(gy, n, o, i, 0);
                            for (int64_t j = j0; j < j1; j++) sum += ld(gy, y0 + j * gy->strides[3]) * ld(x, x0 + j * xs);
                        }
                    st(gw, at(gw, o, c, a, b), sum);
                }
    return FF_OK;
}
