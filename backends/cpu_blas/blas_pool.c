/* The optional pool2d entry. Contiguous f32 views (as the layers make them): plane by
 * plane (one (n, c)) with plain pointer loops, planes split across the pool; the
 * gradient of a max window goes to one element (MAX_BACKWARD_FIRST, PyTorch's rule) or,
 * for ABI v1's op, is split evenly among its maxima, without a mask or a window stack in
 * memory; the first-max backward of overlapping windows scans a row of windows per
 * vector step (pick_row_f32). Anything else: the shared strided loops of ff_backend_pool.h. F16/BF16 max and
 * avg (not adaptive): the f32 plane loops on widened tiles, or bf16 2 x 2 max straight on
 * the halves; either way the core's f32 detour's values bit for bit (see half_job). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "blas_impl.h"
#include "ff_backend_pool.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define POOL_AVX512 1
#endif

/* The offset (i * W + k) in an nh x nw window at xw (rows W apart) that its max m's
 * gradient goes to under MAX_BACKWARD_FIRST, -1 if none: the first element equal to m,
 * or the last NaN when m is NaN (as ffb_pool2d_pick). */
static int64_t pick_f32(const float *xw, int64_t W, int64_t nh, int64_t nw, float m)
{
    int64_t pick = -1;
    for (int64_t i = 0; i < nh; i++)
        for (int64_t k = 0; k < nw; k++) {
            float v = xw[i * W + k];
            if (m != m ? v != v : v == m && pick < 0) pick = i * W + k;
        }
    return pick;
}

/* pick_f32 for a row of windows at once: the windows ow in [ow0, ow1) of one output row,
 * rows [ha, hb) of the plane, each wholly inside the plane in w (ow * sw - pw >= 0, + kw
 * <= W). idx[ow] gets what pick_f32 returns, as a plane offset: the same scan in the same
 * order (row by row, left to right), one window element for every window per step, so
 * the vectorizer runs it across the row (strides 1 and 2 spelled out as constants); m is
 * the row's maxima (the forward's y). */
#define PICK_STEP(S)                                                                         \
    for (int64_t ow = ow0; ow < ow1; ow++) {                                                 \
        float v = r[ow * (S)], y = m[ow];                                                    \
        int32_t cur = idx[ow];                                                               \
        int hit = y != y ? v != v : (v == y && cur < 0);                                     \
        idx[ow] = hit ? base + (int32_t)(ow * (S)) : cur;                                    \
    }
BLAS_CLONES static void pick_row_f32(const float *xs, int64_t W, int64_t ha, int64_t hb, int64_t kw, int64_t sw,
                                     int64_t pw, const float *m, int64_t ow0, int64_t ow1, int32_t *idx)
{
    for (int64_t ow = ow0; ow < ow1; ow++) idx[ow] = -1;
    for (int64_t h = ha; h < hb; h++)
        for (int64_t dw = 0; dw < kw; dw++) {
            const int32_t base = (int32_t)(h * W + dw - pw);
            const float *r = xs + base;
            if (sw == 1) {
                PICK_STEP(1)
            } else if (sw == 2) {
                PICK_STEP(2)
            } else {
                PICK_STEP(sw)
            }
        }
}
#undef PICK_STEP

typedef struct pool_job {
    int op;
    const ff_view *dst, *src;
    const ff_pool2d_params *p;
} pool_job;

/* Non-overlapping windows (stride = kernel, no padding; the usual 2 x 2 pooling): no
 * bounds per window, and the backward writes each covered element of gx exactly once (no
 * zeroing pass, no read-modify-write); rows and columns past the last window get zeros. */
static void pool_f32_tiled(const pool_job *j, int64_t pl)
{
    int op = j->op, fwd = op == FF_POOL2D_MAX_FORWARD || op == FF_POOL2D_AVG_FORWARD;
    const ff_view *xv = fwd ? &j->src[0] : j->dst, *yv = fwd ? j->dst : &j->src[0];
    int64_t H = xv->shape[2], W = xv->shape[3], OH = yv->shape[2], OW = yv->shape[3];
    int64_t kh = j->p->kernel[0], kw = j->p->kernel[1];
    float inv_area = 1.0f / (float)(kh * kw);
    int max_bwd = op == FF_POOL2D_MAX_BACKWARD || op == FF_POOL2D_MAX_BACKWARD_FIRST;
    float *x = (float *)xv->buf + xv->offset + pl * H * W;
    float *y = (float *)yv->buf + yv->offset + pl * OH * OW;
    const float *xs = max_bwd ? (const float *)j->src[1].buf + j->src[1].offset + pl * H * W : NULL;
    const float *ys = max_bwd ? (const float *)j->src[2].buf + j->src[2].offset + pl * OH * OW : NULL;
    for (int64_t oh = 0; oh < OH; oh++) {
        float *row = x + oh * kh * W, *yo = y + oh * OW;
        const float *xrow = xs ? xs + oh * kh * W : NULL;
        if (op == FF_POOL2D_MAX_BACKWARD && kh == 2 && kw == 2) { /* branch-free: the hot loop of CNN training */
            const float *ym = ys + oh * OW;
            for (int64_t ow = 0; ow < OW; ow++) {
                const float *p0 = xrow + 2 * ow, *p1 = p0 + W;
                float m = ym[ow];
                float ea = (float)(p0[0] == m), eb = (float)(p0[1] == m), ec = (float)(p1[0] == m), ed = (float)(p1[1] == m);
                float t = ea + eb + ec + ed, g = t > 0 ? yo[ow] / t : 0.0f;
                float *q0 = row + 2 * ow, *q1 = q0 + W;
                /* selects, not g * e: a negative g times 0 is -0, and the gradient there is +0 */
                q0[0] = ea > 0 ? g : 0.0f, q0[1] = eb > 0 ? g : 0.0f, q1[0] = ec > 0 ? g : 0.0f, q1[1] = ed > 0 ? g : 0.0f;
            }
        } else if (op == FF_POOL2D_MAX_BACKWARD_FIRST && kh == 2 && kw == 2) {
            const float *ym = ys + oh * OW;
            for (int64_t ow = 0; ow < OW; ow++) {
                const float *p0 = xrow + 2 * ow, *p1 = p0 + W;
                float m = ym[ow], g = yo[ow], a = p0[0], b = p0[1], c = p1[0], d = p1[1];
                int k = m == m ? (a == m ? 0 : b == m ? 1 : c == m ? 2 : d == m ? 3 : -1)
                               : (d != d ? 3 : c != c ? 2 : b != b ? 1 : a != a ? 0 : -1);
                float *q0 = row + 2 * ow, *q1 = q0 + W;
                q0[0] = k == 0 ? g : 0.0f, q0[1] = k == 1 ? g : 0.0f, q1[0] = k == 2 ? g : 0.0f, q1[1] = k == 3 ? g : 0.0f;
            }
        } else if (op == FF_POOL2D_MAX_FORWARD && kh == 2 && kw == 2) {
            for (int64_t ow = 0; ow < OW; ow++) {
                float a = row[2 * ow], b = row[2 * ow + 1], c = row[W + 2 * ow], d = row[W + 2 * ow + 1];
                float m = a > b ? a : b, n = c > d ? c : d;
                m = m > n ? m : n;
                yo[ow] = (a != a || b != b || c != c || d != d) ? NAN : m;
            }
        } else {
        for (int64_t ow = 0; ow < OW; ow++) {
            float *win = row + ow * kw;
            if (op == FF_POOL2D_MAX_FORWARD) {
                float m = -INFINITY;
                int nan = 0;
                for (int64_t i = 0; i < kh; i++)
                    for (int64_t k = 0; k < kw; k++) {
                        float v = win[i * W + k];
                        nan |= v != v;
                        m = v > m ? v : m;
                    }
                yo[ow] = nan ? NAN : m;
            } else if (op == FF_POOL2D_AVG_FORWARD) {
                float acc = 0.0f;
                for (int64_t i = 0; i < kh; i++)
                    for (int64_t k = 0; k < kw; k++) acc += win[i * W + k];
                yo[ow] = acc * inv_area;
            } else if (op == FF_POOL2D_AVG_BACKWARD) {
                float g = yo[ow] * inv_area;
                for (int64_t i = 0; i < kh; i++)
                    for (int64_t k = 0; k < kw; k++) win[i * W + k] = g;
            } else if (op == FF_POOL2D_MAX_BACKWARD_FIRST) {
                int64_t k0 = pick_f32(xrow + ow * kw, W, kh, kw, ys[oh * OW + ow]);
                for (int64_t i = 0; i < kh; i++)
                    for (int64_t k = 0; k < kw; k++) win[i * W + k] = i * W + k == k0 ? yo[ow] : 0.0f;
            } else {
                const float *xw = xrow + ow * kw;
                float m = ys[oh * OW + ow];
                int ties = 0;
                for (int64_t i = 0; i < kh; i++)
                    for (int64_t k = 0; k < kw; k++) ties += xw[i * W + k] == m;
                float g = ties ? yo[ow] / (float)ties : 0.0f;
                for (int64_t i = 0; i < kh; i++)
                    for (int64_t k = 0; k < kw; k++) win[i * W + k] = xw[i * W + k] == m ? g : 0.0f;
            }
        }
        }
        if (!fwd)
            for (int64_t i = 0; i < kh; i++)
                for (int64_t w = OW * kw; w < W; w++) row[i * W + w] = 0.0f;
    }
    if (!fwd)
        for (int64_t i = OH * kh * W; i < H * W; i++) x[i] = 0.0f;
}

static void pool_f32_task(void *arg, int64_t p0, int64_t p1)
{
    const pool_job *j = arg;
    int op = j->op, fwd = op == FF_POOL2D_MAX_FORWARD || op == FF_POOL2D_AVG_FORWARD;
    const ff_view *xv = fwd ? &j->src[0] : j->dst, *yv = fwd ? j->dst : &j->src[0];
    int64_t H = xv->shape[2], W = xv->shape[3], OH = yv->shape[2], OW = yv->shape[3];
    int64_t kh = j->p->kernel[0], kw = j->p->kernel[1], sh = j->p->stride[0], sw = j->p->stride[1];
    int64_t ph = j->p->padding[0], pw = j->p->padding[1];
    float inv_area = 1.0f / (float)(kh * kw);
    int max_bwd = op == FF_POOL2D_MAX_BACKWARD || op == FF_POOL2D_MAX_BACKWARD_FIRST;
    if (sh == kh && sw == kw && ph == 0 && pw == 0) {
        for (int64_t pl = p0; pl < p1; pl++) pool_f32_tiled(j, pl);
        return;
    }
    /* MAX_BACKWARD_FIRST: the windows wholly inside the plane in w, [owa, owb), pick a row
     * at a time (pick_row_f32); the clipped ones at the edges one by one below */
    int64_t owa = OW, owb = OW;
    int32_t *picks = NULL;
    if (op == FF_POOL2D_MAX_BACKWARD_FIRST && H * W <= INT32_MAX && (picks = malloc((size_t)OW * sizeof *picks))) {
        owa = (pw + sw - 1) / sw, owb = W + pw - kw >= 0 ? (W + pw - kw) / sw + 1 : 0;
        owa = owa > OW ? OW : owa, owb = owb > OW ? OW : owb < owa ? owa : owb;
    }
    for (int64_t pl = p0; pl < p1; pl++) {
        float *x = (float *)xv->buf + xv->offset + pl * H * W; /* gx when backward */
        float *y = (float *)yv->buf + yv->offset + pl * OH * OW; /* gy when backward */
        const float *xs = max_bwd ? (const float *)j->src[1].buf + j->src[1].offset + pl * H * W : NULL;
        const float *ys = max_bwd ? (const float *)j->src[2].buf + j->src[2].offset + pl * OH * OW : NULL;
        if (!fwd)
            for (int64_t i = 0; i < H * W; i++) x[i] = 0.0f;
        for (int64_t oh = 0; oh < OH; oh++) {
            int64_t h0 = oh * sh - ph, ha = h0 < 0 ? 0 : h0, hb = h0 + kh > H ? H : h0 + kh;
            for (int64_t ow = 0; ow < OW; ow++) {
                if (ow == owa && owa < owb) { /* gx gets the same sums in the same order */
                    pick_row_f32(xs, W, ha, hb, kw, sw, pw, ys + oh * OW, owa, owb, picks);
                    for (int64_t q = owa; q < owb; q++)
                        if (picks[q] >= 0) x[picks[q]] += y[oh * OW + q];
                    if ((ow = owb) >= OW) break;
                }
                int64_t w0 = ow * sw - pw, wa = w0 < 0 ? 0 : w0, wb = w0 + kw > W ? W : w0 + kw;
                float *yo = y + oh * OW + ow;
                if (op == FF_POOL2D_MAX_FORWARD) {
                    float m = -INFINITY;
                    int nan = 0;
                    for (int64_t h = ha; h < hb; h++)
                        for (int64_t w = wa; w < wb; w++) {
                            float v = x[h * W + w];
                            nan |= v != v;
                            m = v > m ? v : m;
                        }
                    *yo = nan ? NAN : m;
                } else if (op == FF_POOL2D_AVG_FORWARD) {
                    float s = 0.0f;
                    for (int64_t h = ha; h < hb; h++)
                        for (int64_t w = wa; w < wb; w++) s += x[h * W + w];
                    *yo = s * inv_area;
                } else if (op == FF_POOL2D_AVG_BACKWARD) {
                    float g = *yo * inv_area;
                    for (int64_t h = ha; h < hb; h++)
                        for (int64_t w = wa; w < wb; w++) x[h * W + w] += g;
                } else if (op == FF_POOL2D_MAX_BACKWARD_FIRST) {
                    int64_t k0 = pick_f32(xs + ha * W + wa, W, hb - ha, wb - wa, ys[oh * OW + ow]);
                    if (k0 >= 0) x[ha * W + wa + k0] += *yo;
                } else {
                    float m = ys[oh * OW + ow];
                    int ties = 0;
                    for (int64_t h = ha; h < hb; h++)
                        for (int64_t w = wa; w < wb; w++) ties += xs[h * W + w] == m;
                    if (!ties) continue;
                    float g = *yo / (float)ties;
                    for (int64_t h = ha; h < hb; h++)
                        for (int64_t w = wa; w < wb; w++)
                            if (xs[h * W + w] == m) x[h * W + w] += g;
                }
            }
        }
    }
    free(picks);
}

/* Sum of n contiguous floats in 8 independent accumulators (vectorizes without fast-math). */
static float sum_f32(const float *x, int64_t n)
{
    float acc[8] = {0};
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int k = 0; k < 8; k++) acc[k] += x[i + k];
    float s = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
    for (; i < n; i++) s += x[i];
    return s;
}

/* Adaptive average pooling, contiguous f32 planes: a global window (a classifier head's
 * pooling) is one contiguous sum; other windows are summed row by row. */
static void adaptive_f32_task(void *arg, int64_t p0, int64_t p1)
{
    const pool_job *j = arg;
    int fwd = j->op == FF_POOL2D_ADAPTIVE_AVG_FORWARD;
    const ff_view *xv = fwd ? &j->src[0] : j->dst, *yv = fwd ? j->dst : &j->src[0];
    int64_t H = xv->shape[2], W = xv->shape[3], OH = yv->shape[2], OW = yv->shape[3];
    for (int64_t pl = p0; pl < p1; pl++) {
        float *x = (float *)xv->buf + xv->offset + pl * H * W; /* gx when backward */
        float *y = (float *)yv->buf + yv->offset + pl * OH * OW; /* gy when backward */
        if (OH == 1 && OW == 1) {
            float inv = 1.0f / (float)(H * W);
            if (fwd) y[0] = sum_f32(x, H * W) * inv;
            else
                for (int64_t i = 0; i < H * W; i++) x[i] = y[0] * inv;
            continue;
        }
        if (!fwd)
            for (int64_t i = 0; i < H * W; i++) x[i] = 0.0f;
        for (int64_t oh = 0; oh < OH; oh++) {
            int64_t ha, hb;
            ffb_adaptive_window(oh, H, OH, &ha, &hb);
            for (int64_t ow = 0; ow < OW; ow++) {
                int64_t wa, wb;
                ffb_adaptive_window(ow, W, OW, &wa, &wb);
                float inv = 1.0f / (float)((hb - ha) * (wb - wa));
                if (fwd) {
                    float s = 0.0f;
                    for (int64_t h = ha; h < hb; h++) s += sum_f32(x + h * W + wa, wb - wa);
                    y[oh * OW + ow] = s * inv;
                } else {
                    float g = y[oh * OW + ow] * inv;
                    for (int64_t h = ha; h < hb; h++)
                        for (int64_t w = wa; w < wb; w++) x[h * W + w] += g;
                }
            }
        }
    }
}

static void pool_strided_task(void *arg, int64_t p0, int64_t p1)
{
    const pool_job *j = arg;
    ffb_pool2d_planes(j->op, j->dst, j->src, j->p, p0, p1);
}

/* F16/BF16: batches of (n, c) planes of every view are widened into contiguous f32
 * tiles, pooled by the f32 plane loops above and the output rounded once. The core's f32
 * detour hands those same loops contiguous f32 copies, so the results are its bit for
 * bit (max picks an input, so it is exact; averages and split gradients sum in f32 and
 * round once), while the tiles stay in cache and nothing tensor-sized is allocated.
 * Whole batches convert in one call where a view is contiguous: per row, the 7- and
 * 14-wide rows of a small CNN would convert mostly in the converters' scalar tails. */
typedef struct half_job {
    int op, n_src;
    const ff_view *dst, *src;
    const ff_pool2d_params *p;
    int64_t planes, n_slots, batch, slot_floats; /* slot_floats: one plane of every view */
    float *scratch;
    int bf16_2x2; /* pool_bf16_2x2's case: no tiles */
    int avx512;   /* ... on 16 windows at a time (blas_half_isa() == 2; FF_HALF_ISA caps it) */
} half_job;

enum { HALF_TILE_FLOATS = 16384 }; /* a batch's tiles: 64 KiB, within L2 */

static int64_t plane_numel(const ff_view *v) { return v->shape[2] * v->shape[3]; }

/* Planes [pl, pl + nb) of v from or to the contiguous tile t. */
static void planes_move(const ff_view *v, int64_t pl, int64_t nb, float *t, int store)
{
    int64_t C = v->shape[1], H = v->shape[2], W = v->shape[3], s3 = v->strides[3];
    if (blas_view_contiguous(v)) {
        uint16_t *b = (uint16_t *)v->buf + v->offset + pl * H * W;
        if (store) blas_f32_to_half(v->dtype, nb * H * W, b, t);
        else blas_half_to_f32(v->dtype, nb * H * W, t, b);
        return;
    }
    for (int64_t q = pl; q < pl + nb; q++) {
        uint16_t *b = (uint16_t *)v->buf + v->offset + q / C * v->strides[0] + q % C * v->strides[1];
        for (int64_t h = 0; h < H; h++, t += W) {
            uint16_t *r = b + h * v->strides[2];
            if (s3 == 1 || W == 1) {
                if (store) blas_f32_to_half(v->dtype, W, r, t);
                else blas_half_to_f32(v->dtype, W, t, r);
            } else
                for (int64_t w = 0; w < W; w++) {
                    if (store) blas_f32_to_half(v->dtype, 1, r + w * s3, t + w);
                    else blas_half_to_f32(v->dtype, 1, t + w, r + w * s3);
                }
        }
    }
}

static ff_view tile_view(const ff_view *v, int64_t nb, float *t)
{
    ff_view tv = {.buf = t, .offset = 0, .dtype = FF_F32, .ndim = 4,
                  .shape = {1, nb, v->shape[2], v->shape[3]},
                  .strides = {nb * plane_numel(v), plane_numel(v), v->shape[3], 1}};
    return tv;
}

static float bf16_wide(uint16_t b)
{
    uint32_t u = (uint32_t)b << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* Plane pl of a 2 x 2 bf16 job: x [H, W] and y [OH, OW] (gx and gy when backward, with
 * the forward's x and y as xs and ys). */
typedef struct plane2x2 {
    int fwd;
    int64_t H, W, OH, OW;
    uint16_t *x, *y;
    const uint16_t *xs, *ys;
} plane2x2;

static plane2x2 plane_of(const half_job *h, int64_t pl)
{
    plane2x2 q = {.fwd = h->op == FF_POOL2D_MAX_FORWARD};
    const ff_view *xv = q.fwd ? &h->src[0] : h->dst, *yv = q.fwd ? h->dst : &h->src[0];
    q.H = xv->shape[2], q.W = xv->shape[3], q.OH = yv->shape[2], q.OW = yv->shape[3];
    q.x = (uint16_t *)xv->buf + xv->offset + pl * q.H * q.W;
    q.y = (uint16_t *)yv->buf + yv->offset + pl * q.OH * q.OW;
    if (!q.fwd) {
        q.xs = (const uint16_t *)h->src[1].buf + h->src[1].offset + pl * q.H * q.W;
        q.ys = (const uint16_t *)h->src[2].buf + h->src[2].offset + pl * q.OH * q.OW;
    }
    return q;
}

/* BF16 (widening is a shift), contiguous, 2 x 2 windows at stride 2 without padding: the
 * CNN's max pooling straight on the halves, the f32 tiled loops' exact decisions. The
 * forward's max is an input, so its bits are the result; a NaN window writes what the
 * detour's rounding of NAN writes (nan_bits). The backward writes gy's bits where the
 * f32 gradient would be gy widened (a NaN gy is rounded as the detour rounds it). */
static void pool_bf16_2x2(const half_job *h, int64_t pl, uint16_t nan_bits)
{
    plane2x2 q = plane_of(h, pl);
    int fwd = q.fwd;
    int64_t H = q.H, W = q.W, OH = q.OH, OW = q.OW;
    uint16_t *x = q.x, *y = q.y;
    const uint16_t *xs = q.xs, *ys = q.ys;
    for (int64_t oh = 0; oh < OH; oh++) {
        uint16_t *r0 = x + 2 * oh * W, *r1 = r0 + W, *yo = y + oh * OW;
        if (fwd) {
            for (int64_t ow = 0; ow < OW; ow++) {
                float a = bf16_wide(r0[2 * ow]), b = bf16_wide(r0[2 * ow + 1]);
                float c = bf16_wide(r1[2 * ow]), d = bf16_wide(r1[2 * ow + 1]);
                float m = a > b ? a : b, n = c > d ? c : d;
                m = m > n ? m : n;
                uint32_t u;
                memcpy(&u, &m, sizeof u);
                yo[ow] = (a != a || b != b || c != c || d != d) ? nan_bits : (uint16_t)(u >> 16);
            }
            continue;
        }
        const uint16_t *p0 = xs + 2 * oh * W, *p1 = p0 + W, *ym = ys + oh * OW;
        for (int64_t ow = 0; ow < OW; ow++) {
            float m = bf16_wide(ym[ow]), a = bf16_wide(p0[2 * ow]), b = bf16_wide(p0[2 * ow + 1]);
            float c = bf16_wide(p1[2 * ow]), d = bf16_wide(p1[2 * ow + 1]), gf = bf16_wide(yo[ow]);
            int k = m == m ? (a == m ? 0 : b == m ? 1 : c == m ? 2 : d == m ? 3 : -1)
                           : (d != d ? 3 : c != c ? 2 : b != b ? 1 : a != a ? 0 : -1);
            uint16_t g = yo[ow];
            if (gf != gf) blas_f32_to_half(FF_BF16, 1, &g, &gf);
            uint16_t *q0 = r0 + 2 * ow, *q1 = r1 + 2 * ow;
            q0[0] = k == 0 ? g : 0, q0[1] = k == 1 ? g : 0, q1[0] = k == 2 ? g : 0, q1[1] = k == 3 ? g : 0;
        }
        for (int64_t w = 2 * OW; w < W; w++) r0[w] = 0, r1[w] = 0;
    }
    if (!fwd)
        for (int64_t i = 2 * OH * W; i < H * W; i++) x[i] = 0;
}

#ifdef POOL_AVX512
/* 16 bf16 from p as zero-extended 32-bit lanes, of which the caller uses the first few;
 * avail values are readable from p (the rest of the plane): a row's 7 or 14 values read
 * on into the next row, and only the plane's last 15 go through a copy (16-bit masked
 * loads need AVX512BW; a memcpy per row was 6% of the CNN's bf16 epoch). */
__attribute__((target("avx512f"))) static __m512i load_bf16x16(const uint16_t *p, int64_t avail)
{
    uint16_t t[16] = {0};
    if (avail >= 16) return _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)p));
    for (int64_t i = 0; i < avail; i++) t[i] = p[i];
    return _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)t));
}

/* pool_bf16_2x2 on 16 windows at a time, the same decisions: a window's two columns are
 * one 32-bit lane (the even one in the low half), so a row pair is two loads and each
 * value widens with one shift or mask. MAXPS(a, b) is a > b ? a : b, NaN and -0 included,
 * the scalar loop's comparison. */
__attribute__((target("avx512f"))) static void pool_bf16_2x2_avx512(const half_job *h, int64_t pl, uint16_t nan_bits)
{
    plane2x2 q = plane_of(h, pl);
    int fwd = q.fwd;
    int64_t H = q.H, W = q.W, OH = q.OH, OW = q.OW;
    uint16_t *x = q.x, *y = q.y;
    const uint16_t *xs = q.xs, *ys = q.ys;
    const __m512i hi = _mm512_set1_epi32((int)0xFFFF0000u), nanv = _mm512_set1_epi32(nan_bits);
    const __m512i sign = _mm512_set1_epi32(0x8000), qnan = _mm512_set1_epi32(0x7FC0);
#define WIDE_LO(v) _mm512_castsi512_ps(_mm512_slli_epi32(v, 16))
#define WIDE_HI(v) _mm512_castsi512_ps(_mm512_and_si512(v, hi))
#define UNORD(v) _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q)
    for (int64_t oh = 0; oh < OH; oh++) {
        uint16_t *r0 = x + 2 * oh * W, *r1 = r0 + W, *yo = y + oh * OW;
        const uint16_t *p0 = fwd ? r0 : xs + 2 * oh * W, *p1 = p0 + W;
        for (int64_t ow = 0; ow < OW; ow += 16) {
            int64_t nw = OW - ow < 16 ? OW - ow : 16;
            __mmask16 k = (__mmask16)((1u << nw) - 1);
            __m512i w0 = _mm512_maskz_loadu_epi32(k, p0 + 2 * ow), w1 = _mm512_maskz_loadu_epi32(k, p1 + 2 * ow);
            __m512 a = WIDE_LO(w0), b = WIDE_HI(w0), c = WIDE_LO(w1), d = WIDE_HI(w1);
            __mmask16 na = UNORD(a), nb = UNORD(b), nc = UNORD(c), nd = UNORD(d);
            if (fwd) {
                __m512 m = _mm512_max_ps(_mm512_max_ps(a, b), _mm512_max_ps(c, d));
                __m512i bits = _mm512_srli_epi32(_mm512_castps_si512(m), 16);
                bits = _mm512_mask_blend_epi32(na | nb | nc | nd, bits, nanv);
                _mm512_mask_cvtepi32_storeu_epi16(yo + ow, k, bits);
                continue;
            }
            int64_t avail = (OH - oh) * OW - ow; /* values left in the plane from (oh, ow) */
            __m512 m = WIDE_LO(load_bf16x16(ys + oh * OW + ow, avail));
            __m512i g = load_bf16x16(yo + ow, avail);
            __mmask16 mn = UNORD(m), gn = UNORD(WIDE_LO(g));
            g = _mm512_mask_blend_epi32(gn, g, _mm512_or_si512(_mm512_and_si512(g, sign), qnan));
            /* the first input equal to m, or the last NaN when m is NaN */
            __mmask16 ka = _mm512_cmp_ps_mask(a, m, _CMP_EQ_OQ), kb = _mm512_cmp_ps_mask(b, m, _CMP_EQ_OQ) & ~ka;
            __mmask16 kc = _mm512_cmp_ps_mask(c, m, _CMP_EQ_OQ) & ~(ka | kb);
            __mmask16 kd = _mm512_cmp_ps_mask(d, m, _CMP_EQ_OQ) & ~(ka | kb | kc);
            kd |= mn & nd, kc |= mn & nc & ~nd, kb |= mn & nb & ~(nc | nd), ka |= mn & na & ~(nb | nc | nd);
            __m512i o0 = _mm512_or_si512(_mm512_maskz_mov_epi32(ka, g), _mm512_slli_epi32(_mm512_maskz_mov_epi32(kb, g), 16));
            __m512i o1 = _mm512_or_si512(_mm512_maskz_mov_epi32(kc, g), _mm512_slli_epi32(_mm512_maskz_mov_epi32(kd, g), 16));
            _mm512_mask_storeu_epi32(r0 + 2 * ow, k, o0);
            _mm512_mask_storeu_epi32(r1 + 2 * ow, k, o1);
        }
        if (!fwd)
            for (int64_t w = 2 * OW; w < W; w++) r0[w] = 0, r1[w] = 0;
    }
#undef WIDE_LO
#undef WIDE_HI
#undef UNORD
    if (!fwd)
        for (int64_t i = 2 * OH * W; i < H * W; i++) x[i] = 0;
}
#endif

static void pool_half_task(void *arg, int64_t s0, int64_t s1)
{
    const half_job *h = arg;
    if (h->bf16_2x2) {
        float nan = NAN;
        uint16_t nan_bits;
        blas_f32_to_half(FF_BF16, 1, &nan_bits, &nan);
        for (int64_t pl = s0; pl < s1; pl++) { /* [s0, s1): planes here */
#ifdef POOL_AVX512
            if (h->avx512) {
                pool_bf16_2x2_avx512(h, pl, nan_bits);
                continue;
            }
#endif
            pool_bf16_2x2(h, pl, nan_bits);
        }
        return;
    }
    for (int64_t s = s0; s < s1; s++) {
        int64_t end = (s + 1) * h->planes / h->n_slots;
        for (int64_t pl = s * h->planes / h->n_slots; pl < end; pl += h->batch) {
            int64_t nb = end - pl < h->batch ? end - pl : h->batch;
            float *t = h->scratch + s * h->batch * h->slot_floats;
            ff_view td = tile_view(h->dst, nb, t), ts[3];
            t += nb * plane_numel(h->dst);
            for (int i = 0; i < h->n_src; i++) {
                ts[i] = tile_view(&h->src[i], nb, t), t += nb * plane_numel(&h->src[i]);
                planes_move(&h->src[i], pl, nb, ts[i].buf, 0);
            }
            pool_job j = {h->op, &td, ts, h->p};
            if (ffb_pool2d_is_adaptive(h->op)) adaptive_f32_task(&j, 0, nb);
            else pool_f32_task(&j, 0, nb);
            planes_move(h->dst, pl, nb, td.buf, 1); /* every op overwrites all of dst */
        }
    }
}

/* The dtypes the entry takes: the shared loops' float ones, and F16/BF16 for max and avg
 * (the f32 tiles above); adaptive pooling on halves is declined (blas_half_supports). */
static int pool_dtype_ok(int op, ff_dtype t)
{
    return ffb_pool2d_supported(op, t) ||
           (ffb_is_half(t) && op >= 0 && op < FF_POOL2D_COUNT && !ffb_pool2d_is_adaptive(op));
}

static ff_status pool_half(blas_ctx *c, int op, const ff_view *dst, const ff_view *src, int n_src,
                           const ff_pool2d_params *p)
{
    ff_status st = ffb_pool2d_check(c ? c->host : NULL, "cpu_blas", op, dst, src, n_src, p, pool_dtype_ok);
    if (st) return st;
    half_job h = {op, n_src, dst, src, p, dst->shape[0] * dst->shape[1], 1, 1, plane_numel(dst), NULL, 0, 0};
    for (int i = 0; i < n_src; i++) h.slot_floats += plane_numel(&src[i]);
    if (h.planes == 0) return FF_OK;
    h.n_slots = c && c->nthreads < h.planes ? c->nthreads : h.planes;
    if (h.n_slots < 1) h.n_slots = 1;
    int fast = dst->dtype == FF_BF16 && blas_view_contiguous(dst) &&
               (op == FF_POOL2D_MAX_FORWARD || op == FF_POOL2D_MAX_BACKWARD_FIRST) && p->kernel[0] == 2 &&
               p->kernel[1] == 2 && p->stride[0] == 2 && p->stride[1] == 2 && p->padding[0] == 0 && p->padding[1] == 0;
    for (int i = 0; i < n_src; i++) fast = fast && blas_view_contiguous(&src[i]);
    if (fast) {
        h.bf16_2x2 = 1, h.avx512 = blas_half_isa() == 2;
        blas_parallel_for(c, h.planes, 2, 1, pool_half_task, &h);
        return FF_OK;
    }
    h.batch = h.slot_floats ? HALF_TILE_FLOATS / h.slot_floats : 1;
    if (h.batch < 1) h.batch = 1;
    h.scratch = malloc((size_t)(h.n_slots * h.batch * h.slot_floats + 1) * sizeof(float));
    if (!h.scratch)
        return ffb_fail(c ? c->host : NULL, FF_ERR_OOM, "cpu_blas pool2d: no memory for %lld f32 tiles of %lld",
                        (long long)h.n_slots, (long long)h.slot_floats);
    blas_parallel_for(c, h.n_slots, 2, 1, pool_half_task, &h);
    free(h.scratch);
    return FF_OK;
}

ff_status blas_pool2d(void *ctx, int op, const ff_view *dst, const ff_view *src, int n_src, const ff_pool2d_params *p)
{
    if (dst && ffb_is_half(dst->dtype)) return pool_half(ctx, op, dst, src, n_src, p);
    ff_status st = ffb_pool2d_check(ctx ? ((blas_ctx *)ctx)->host : NULL, "cpu_blas", op, dst, src, n_src, p,
                                    pool_dtype_ok);
    if (st) return st;
    int fast = dst->dtype == FF_F32 && blas_view_contiguous(dst);
    for (int i = 0; i < n_src; i++) fast = fast && blas_view_contiguous(&src[i]);
    const ff_view *x = ffb_pool2d_is_forward(op) ? &src[0] : dst;
    pool_job j = {op, dst, src, p};
    blas_task_fn task = !fast ? pool_strided_task
                                            : ffb_pool2d_is_adaptive(op) ? adaptive_f32_task : pool_f32_task;
    blas_parallel_for(ctx, x->shape[0] * x->shape[1], 2, 1, task, &j);
    return FF_OK;
}
