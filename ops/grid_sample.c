/* grid_sample and affine_grid (include/ff/unfold.h; PyTorch's F.grid_sample and
 * F.affine_grid) as compositions, so gradients to the
 * input and to the grid (and to theta) come from the ops: the grid is unnormalized to
 * pixel coordinates, border/reflection map them into the image, and each output is the
 * corners gathered from x [N, C, H W] weighted by the distances (bilinear) or the nearest
 * pixel (nearest, rounding half to even as PyTorch's nearbyint); in zeros mode corners
 * outside the image get weight 0. floor and round carry no gradient, as in PyTorch. */
#include <math.h>
#include <stdlib.h>

#include "ff/unfold.h"
#include "ops_impl.h"

enum { MAX_TMP = 256 }; /* bilinear zeros-mode sampling keeps about 120 */
typedef struct arena {
    ff_tensor *t[MAX_TMP];
    int n;
    bool failed;
} arena;

/* Keeps t for release at the end; a NULL marks the arena failed (later steps skip). */
static ff_tensor *keep(arena *a, ff_tensor *t)
{
    if (!t || a->n == MAX_TMP) {
        if (t) ff_tensor_release(t), ff_error(FF_ERR_OOM, "ff_grid_sample: more than %d temporaries", MAX_TMP);
        a->failed = true;
        return NULL;
    }
    return a->t[a->n++] = t;
}

static void arena_free(arena *a)
{
    for (int i = 0; i < a->n; i++) ff_tensor_release(a->t[i]);
}

#define K(expr) (a->failed ? NULL : keep(a, (expr)))

/* Pixel coordinate of normalized g along an axis of size n. */
static ff_tensor *unnormalize(arena *a, const ff_tensor *g, int64_t n, bool align)
{
    /* align: ((g + 1) / 2) (n - 1); else ((g + 1) n - 1) / 2, in PyTorch's order of
     * operations: the gradient jumps where a coordinate is an integer, so its rounding counts */
    ff_tensor *p = K(ff_add_scalar(g, 1.0));
    if (align) return K(ff_mul_scalar(K(ff_div_scalar(p, 2.0)), (double)(n - 1)));
    return K(ff_div_scalar(K(ff_sub_scalar(K(ff_mul_scalar(p, (double)n)), 1.0)), 2.0));
}

/* c clipped to [0, n - 1] with PyTorch's gradient: none where c <= 0 or c >= n - 1. */
static ff_tensor *clip(arena *a, ff_tensor *c, int64_t n)
{
    ff_number z = ff_number_float(0), m = ff_number_float((double)(n - 1));
    ff_tensor *gt = K(ff_binary_scalar(FF_BINARY_GT, c, 0.0)), *lt = K(ff_binary_scalar(FF_BINARY_LT, c, (double)(n - 1)));
    ff_tensor *in = gt && lt ? K(ff_logical_and(gt, lt)) : NULL;
    ff_tensor *fixed = in ? K(ff_clamp_number(K(ff_detach(c)), &z, &m)) : NULL;
    return fixed ? K(ff_where(in, c, fixed)) : NULL;
}

/* PyTorch's reflect_coordinates over [lo2 / 2, hi2 / 2], then clipped to [0, n - 1]. */
static ff_tensor *reflect(arena *a, ff_tensor *c, int64_t n, bool align)
{
    double lo = align ? 0.0 : -0.5, hi = align ? (double)(n - 1) : (double)n - 0.5, span = hi - lo;
    ff_tensor *r = c;
    if (span > 0) {
        ff_tensor *in = K(ff_abs(K(ff_sub_scalar(c, lo))));
        ff_tensor *extra = K(ff_binary_scalar(FF_BINARY_FMOD, in, span));
        ff_tensor *flips = K(ff_floor(K(ff_div_scalar(in, span))));
        ff_tensor *odd = K(ff_binary_scalar(FF_BINARY_NE, K(ff_binary_scalar(FF_BINARY_FMOD, flips, 2.0)), 0.0));
        ff_tensor *even_v = K(ff_add_scalar(extra, lo)), *odd_v = K(ff_rbinary_scalar(FF_BINARY_SUB, span + lo, extra));
        r = odd && even_v && odd_v ? K(ff_where(odd, odd_v, even_v)) : NULL;
    } else {
        r = K(ff_mul_scalar(c, 0.0));
    }
    return r ? clip(a, r, n) : NULL;
}

/* 1 where 0 <= c <= n - 1 (as x's dtype). */
static ff_tensor *inside(arena *a, const ff_tensor *c, int64_t n)
{
    ff_tensor *ge = K(ff_binary_scalar(FF_BINARY_GE, c, 0.0)), *le = K(ff_binary_scalar(FF_BINARY_LE, c, (double)(n - 1)));
    ff_tensor *both = ge && le ? K(ff_logical_and(ge, le)) : NULL;
    return both ? K(ff_astype(both, c->dtype)) : NULL;
}

/* x [N, C, H W] gathered at integer pixel (cx, cy) [N, P] (clamped), times w [N, P]
 * (already zero where the corner is outside): [N, C, P]. */
static ff_tensor *corner(arena *a, const ff_tensor *xf, const ff_tensor *cx, const ff_tensor *cy, const ff_tensor *w,
                         int64_t h, int64_t wd)
{
    ff_number z = ff_number_float(0), mx = ff_number_float((double)(wd - 1)), my = ff_number_float((double)(h - 1));
    ff_tensor *px = K(ff_clamp_number(cx, &z, &mx)), *py = K(ff_clamp_number(cy, &z, &my));
    ff_tensor *flat = py && px ? K(ff_add(K(ff_mul_scalar(py, (double)wd)), px)) : NULL;
    ff_tensor *idx = flat ? K(ff_astype(flat, FF_I64)) : NULL; /* exact: pixel counts < 2^24 */
    int64_t shape[3] = {xf->layout.shape[0], xf->layout.shape[1], idx ? idx->layout.shape[1] : 0};
    ff_tensor *ib = idx ? K(ff_contiguous(K(ff_broadcast_to(K(ff_unsqueeze(idx, 1)), 3, shape)))) : NULL;
    ff_tensor *v = ib ? K(ff_gather(xf, 2, ib)) : NULL;
    return v ? K(ff_mul(v, K(ff_unsqueeze(w, 1)))) : NULL;
}

ff_tensor *ff_grid_sample(const ff_tensor *x, const ff_tensor *grid, int mode, int padding_mode, bool align_corners)
{
    static const char fn[] = "ff_grid_sample";
    if (!x || !grid) return ff_error(FF_ERR_INVALID, "%s: x and grid must not be NULL", fn), NULL;
    const int64_t *xs = x->layout.shape, *gs = grid->layout.shape;
    if (x->layout.ndim != 4 || grid->layout.ndim != 4 || gs[3] != 2 || gs[0] != xs[0] || x->dtype != grid->dtype ||
        !ff_dtype_is_float(x->dtype))
        return ff_error(FF_ERR_INVALID, "%s: expected x [N, C, H, W] and grid [N, Ho, Wo, 2] of one floating dtype, "
                        "got ranks %d and %d", fn, x->layout.ndim, grid->layout.ndim), NULL;
    if (mode < 0 || mode > 1 || padding_mode < 0 || padding_mode > 2)
        return ff_error(FF_ERR_INVALID, "%s: mode %d (0 bilinear, 1 nearest) or padding_mode %d (0 zeros, 1 border, "
                        "2 reflection) unknown", fn, mode, padding_mode), NULL;
    if (xs[2] < 1 || xs[3] < 1)
        return ff_error(FF_ERR_INVALID, "%s: x has an empty image (%lld x %lld)", fn, (long long)xs[2],
                        (long long)xs[3]), NULL;
    int64_t n = xs[0], c = xs[1], h = xs[2], w = xs[3], ho = gs[1], wo = gs[2], pts = ho * wo;
    arena ar = {0}, *a = &ar;
    ff_tensor *g2 = K(ff_reshape(grid, 3, (int64_t[]){n, pts, 2}));
    ff_tensor *ix = g2 ? unnormalize(a, K(ff_select(g2, 2, 0)), w, align_corners) : NULL;
    ff_tensor *iy = g2 ? unnormalize(a, K(ff_select(g2, 2, 1)), h, align_corners) : NULL;
    if (padding_mode == 1 && ix && iy) {
        ix = clip(a, ix, w), iy = clip(a, iy, h);
    } else if (padding_mode == 2 && ix && iy) {
        ix = reflect(a, ix, w, align_corners), iy = reflect(a, iy, h, align_corners);
    }
    ff_tensor *xf = K(ff_reshape(x, 3, (int64_t[]){n, c, h * w})), *y = NULL;
    if (mode == 1 && ix && iy && xf) {
        ff_tensor *rx = K(ff_round(ix)), *ry = K(ff_round(iy));
        ff_tensor *in = rx && ry ? K(ff_mul(inside(a, rx, w), inside(a, ry, h))) : NULL;
        /* + 0 rx: the output depends on the grid with a zero gradient (torch's zeros, not none) */
        in = in ? K(ff_add(in, K(ff_mul_scalar(K(ff_add(rx, ry)), 0.0)))) : NULL;
        y = in ? corner(a, xf, rx, ry, in, h, w) : NULL;
    } else if (ix && iy && xf) {
        ff_tensor *x0 = K(ff_floor(ix)), *y0 = K(ff_floor(iy));
        ff_tensor *x1 = x0 ? K(ff_add_scalar(x0, 1.0)) : NULL, *y1 = y0 ? K(ff_add_scalar(y0, 1.0)) : NULL;
        ff_tensor *wx1 = x0 ? K(ff_sub(ix, x0)) : NULL, *wy1 = y0 ? K(ff_sub(iy, y0)) : NULL;
        ff_tensor *wx0 = wx1 ? K(ff_rbinary_scalar(FF_BINARY_SUB, 1.0, wx1)) : NULL;
        ff_tensor *wy0 = wy1 ? K(ff_rbinary_scalar(FF_BINARY_SUB, 1.0, wy1)) : NULL;
        const ff_tensor *cx[4] = {x0, x1, x0, x1}, *cy[4] = {y0, y0, y1, y1};
        const ff_tensor *wx[4] = {wx0, wx1, wx0, wx1}, *wy[4] = {wy0, wy0, wy1, wy1};
        for (int k = 0; k < 4 && !a->failed; k++) {
            ff_tensor *wk = K(ff_mul(wx[k], wy[k]));
            if (padding_mode == 0 && wk) wk = K(ff_mul(wk, K(ff_mul(inside(a, cx[k], w), inside(a, cy[k], h)))));
            ff_tensor *v = wk ? corner(a, xf, cx[k], cy[k], wk, h, w) : NULL;
            y = !v ? NULL : y ? K(ff_add(y, v)) : v;
        }
    }
    ff_tensor *r = y && !a->failed ? ff_reshape(y, 4, (int64_t[]){n, c, ho, wo}) : NULL;
    arena_free(a);
    if (!r) ff_error_prefix(fn);
    return r;
}

/* Element i of torch.linspace(-1, 1, n) as its CPU kernel computes it (from the start in
 * the first half, from the end in the second): grid_sample's gradient jumps where a
 * coordinate is an integer, so the grid's last bits must be PyTorch's. */
static double linspace_at(int64_t i, int64_t n)
{
    if (n == 1) return 0.0; /* affine_grid's special case (linspace would give -1) */
    double step = 2.0 / (double)(n - 1);
    return i < n / 2 ? -1.0 + step * (double)i : 1.0 - step * (double)(n - i - 1);
}

ff_tensor *ff_affine_grid(const ff_tensor *theta, const int64_t *size, bool align_corners)
{
    static const char fn[] = "ff_affine_grid";
    if (!theta || !size) return ff_error(FF_ERR_INVALID, "%s: theta and size must not be NULL", fn), NULL;
    const int64_t *ts = theta->layout.shape;
    if (theta->layout.ndim != 3 || ts[1] != 2 || ts[2] != 3 || ts[0] != size[0] || !ff_dtype_is_float(theta->dtype) ||
        size[2] < 1 || size[3] < 1)
        return ff_error(FF_ERR_INVALID, "%s: expected a floating theta [N, 2, 3] and size [N, C, H >= 1, W >= 1] "
                        "with the same N", fn), NULL;
    int64_t h = size[2], w = size[3], hw = h * w;
    double *base = malloc((size_t)hw * 3 * sizeof *base);
    if (!base) return ff_error(FF_ERR_OOM, "%s: out of memory", fn), NULL;
    for (int64_t i = 0; i < h; i++)
        for (int64_t j = 0; j < w; j++) {
            /* PyTorch's linspace(-1, 1, n), scaled by (n - 1) / n without align_corners */
            double bx = linspace_at(j, w), by = linspace_at(i, h);
            if (!align_corners) bx *= (double)(w - 1) / (double)w, by *= (double)(h - 1) / (double)h;
            base[(i * w + j) * 3] = bx, base[(i * w + j) * 3 + 1] = by, base[(i * w + j) * 3 + 2] = 1.0;
        }
    ff_tensor *b = ff_from_data_on(theta->storage->backend, base, 2, (int64_t[]){hw, 3}, FF_F64);
    free(base);
    ff_tensor *bc = b && theta->dtype != FF_F64 ? ff_astype(b, theta->dtype) : ff_tensor_retain(b);
    ff_tensor *tt = bc ? ff_transpose(theta, 1, 2) : NULL; /* [N, 3, 2] */
    ff_tensor *g = tt ? ff_matmul(bc, tt) : NULL;          /* [N, HW, 2] */
    ff_tensor *r = g ? ff_reshape(g, 4, (int64_t[]){size[0], h, w, 2}) : NULL;
    ff_tensor_release(b), ff_tensor_release(bc), ff_tensor_release(tt), ff_tensor_release(g);
    if (!r) ff_error_prefix(fn);
    return r;
}
