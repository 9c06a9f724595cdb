/* The optional layer_norm entry. Contiguous x, y, g, gx [R, D] (what the core sends):
 * each row is widened once into a double buffer (halves through blas_half.c's vector
 * conversions, never a f64 tensor), its statistics and outputs computed there with
 * several independent accumulator chains, and written back rounded once. The rows are
 * cut into a fixed number of blocks (by size, not by thread count, so gw and gb sum in
 * the same order on every machine) that the pool shares; the backward's gw and gb are
 * summed per block into partials and added up in block order at the end. Anything
 * else: the shared strided loops.
 * The F16/BF16 forward works in f32 instead (ln_row_half below), as PyTorch does. */
#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "blas_impl.h"
#include "ff_backend_layer_norm.h"

/* At most this many blocks (a gw/gb partial pair of D doubles each) per call. */
#define LN_MAX_BLOCKS 32

typedef struct ln_job {
    int op;
    const ff_view *dst, *src;
    double eps;
    int64_t r, d, nblocks;
    const double *w, *b; /* w and b (forward) or w (backward) widened to double */
    /* the F16/BF16 forward's w and b widened to f32 (NULL otherwise) */
    const float *w32, *b32;
    double *scratch;     /* per block: 3 row buffers of D, then (backward) gw and gb partials */
} ln_job;

/* f32 <-> double over a row, vectorized for what the CPU has. */
BLAS_CLONES static void ln_widen(double *restrict d, const float *restrict x, int64_t n)
{
    for (int64_t k = 0; k < n; k++) d[k] = x[k];
}

BLAS_CLONES static void ln_narrow(float *restrict d, const double *restrict x, int64_t n)
{
    for (int64_t k = 0; k < n; k++) d[k] = (float)x[k];
}

#define LN_TILE 512

/* Row i of an [R, D] view as doubles: the row itself for F64, else widened into buf. */
static const double *ln_load(const ff_view *v, int64_t i, int64_t d, double *buf)
{
    const char *p = (const char *)v->buf + (v->offset + i * d) * (int64_t)ff_dtype_size(v->dtype);
    switch (v->dtype) {
    case FF_F64: return (const double *)p;
    case FF_F32: ln_widen(buf, (const float *)p, d); return buf;
    default: {
        float t[LN_TILE];
        for (int64_t k = 0; k < d; k += LN_TILE) {
            int64_t m = d - k < LN_TILE ? d - k : LN_TILE;
            blas_half_to_f32(v->dtype, m, t, (const uint16_t *)p + k);
            ln_widen(buf + k, t, m);
        }
        return buf;
    }
    }
}

/* buf (D doubles) into row i of v, rounded once. */
static void ln_store(const ff_view *v, int64_t i, int64_t d, const double *buf)
{
    char *p = (char *)v->buf + (v->offset + i * d) * (int64_t)ff_dtype_size(v->dtype);
    switch (v->dtype) {
    case FF_F64:
        if ((double *)p != buf)
            for (int64_t k = 0; k < d; k++) ((double *)p)[k] = buf[k];
        break;
    case FF_F32: ln_narrow((float *)p, buf, d); break;
    default: blas_f64_to_half(v->dtype, d, p, buf); break; /* rounded once (f32 rounded to odd) */
    }
}

/* Sums with 8 independent chains (one chain would wait on the adder's latency every
 * element; the compiler may not reassociate doubles). */
BLAS_CLONES static double ln_sum(const double *restrict x, int64_t n)
{
    double a[8] = {0};
    int64_t k = 0;
    for (; k + 8 <= n; k += 8)
        for (int u = 0; u < 8; u++) a[u] += x[k + u];
    for (; k < n; k++) a[0] += x[k];
    return ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7]));
}

BLAS_CLONES static double ln_sqdev(const double *restrict x, int64_t n, double mean)
{
    double a[8] = {0};
    int64_t k = 0;
    for (; k + 8 <= n; k += 8)
        for (int u = 0; u < 8; u++) {
            double e = x[k + u] - mean;
            a[u] += e * e;
        }
    for (; k < n; k++) a[0] += (x[k] - mean) * (x[k] - mean);
    return ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7]));
}

BLAS_CLONES static void ln_affine(double *restrict y, const double *restrict x, int64_t n, double mean, double inv,
                                  const double *restrict w, const double *restrict b)
{
    for (int64_t k = 0; k < n; k++) y[k] = (x[k] - mean) * inv * w[k] + b[k];
}

/* The backward's row sums: a = sum g w, c = sum g w xhat, on two 8-double vector chains
 * each; the scalar 8-chain form came out as shuffles, a fifth of the backward. An 8-double
 * chain is a pair of 32-byte vectors (lanes 0-3, 4-7): gcc moves a 64-byte vector through
 * the stack on AVX2, and a pair gives the same bits on every ISA. */
typedef double ln_v4 __attribute__((vector_size(32)));
/* macros, not functions: a vector passed by value would change the ABI between clones */
#define LN_LD8(v, p) memcpy((v), (p), sizeof(v))
#define LN_HSUM8(v) ((((v)[0][0] + (v)[0][1]) + ((v)[0][2] + (v)[0][3])) + (((v)[1][0] + (v)[1][1]) + ((v)[1][2] + (v)[1][3])))

BLAS_CLONES static void ln_bwd_sums(const double *restrict g, const double *restrict x, const double *restrict w,
                                    int64_t n, double mean, double inv, double *a_out, double *c_out)
{
    ln_v4 a0[2] = {{0}}, a1[2] = {{0}}, c0[2] = {{0}}, c1[2] = {{0}};
    int64_t k = 0;
    for (; k + 16 <= n; k += 16) {
        ln_v4 g0[2], g1[2], w0[2], w1[2], x0[2], x1[2];
        LN_LD8(g0, g + k), LN_LD8(g1, g + k + 8), LN_LD8(w0, w + k), LN_LD8(w1, w + k + 8);
        LN_LD8(x0, x + k), LN_LD8(x1, x + k + 8);
        for (int h = 0; h < 2; h++) {
            ln_v4 h0 = g0[h] * w0[h], h1 = g1[h] * w1[h];
            a0[h] += h0, a1[h] += h1;
            c0[h] += h0 * ((x0[h] - mean) * inv), c1[h] += h1 * ((x1[h] - mean) * inv);
        }
    }
    ln_v4 as[2] = {a0[0] + a1[0], a0[1] + a1[1]}, cs[2] = {c0[0] + c1[0], c0[1] + c1[1]};
    double a = LN_HSUM8(as), c = LN_HSUM8(cs);
    for (; k < n; k++) {
        double gh = g[k] * w[k];
        a += gh;
        c += gh * ((x[k] - mean) * inv);
    }
    *a_out = a, *c_out = c;
}

/* gx = inv (g w - a - xhat c) for a and c the row means; gw += g xhat, gb += g. */
BLAS_CLONES static void ln_bwd_row(double *restrict gx, const double *restrict g, const double *restrict x,
                                   const double *restrict w, int64_t n, double mean, double inv, double a, double c,
                                   double *restrict gw, double *restrict gb)
{
    for (int64_t k = 0; k < n; k++) {
        double xh = (x[k] - mean) * inv;
        gx[k] = inv * (g[k] * w[k] - a - xh * c);
        gw[k] += g[k] * xh;
        gb[k] += g[k];
    }
}

/* The F16/BF16 forward in f32: the row widened once, the statistics in two passes on two
 * 16-float vector chains, y rounded once from f32. Accuracy without double arithmetic per
 * element: the second pass also sums the deviations from the first pass's mean, which
 * corrects the mean and the variance for the first sum's rounding (the corrected two-pass
 * form), and the mean enters y as a hi + lo pair of floats, so x - mean keeps its bits
 * when |mean| >> std (1000 + noise). y is then within the f32 error of the exact value,
 * one half ulp from the reference's at worst (a value on a rounding boundary). */
/* a 16-float chain as a pair of 32-byte vectors (floats 0-7, 8-15), as ln_v4 above */
typedef float ln_v8f __attribute__((vector_size(32)));
#define LN_HSUM8F(v) ((((v)[0] + (v)[1]) + ((v)[2] + (v)[3])) + (((v)[4] + (v)[5]) + ((v)[6] + (v)[7])))
#define LN_HSUM16(v) (LN_HSUM8F((v)[0]) + LN_HSUM8F((v)[1]))

BLAS_CLONES static float ln_sum32(const float *restrict x, int64_t n)
{
    ln_v8f a0[2] = {{0}}, a1[2] = {{0}};
    int64_t k = 0;
    for (; k + 32 <= n; k += 32) {
        ln_v8f x0[2], x1[2];
        memcpy(x0, x + k, sizeof x0), memcpy(x1, x + k + 16, sizeof x1);
        for (int h = 0; h < 2; h++) a0[h] += x0[h], a1[h] += x1[h];
    }
    ln_v8f as[2] = {a0[0] + a1[0], a0[1] + a1[1]};
    float s = LN_HSUM16(as);
    for (; k < n; k++) s += x[k];
    return s;
}

/* The sums of e = x - m and of e * e. */
BLAS_CLONES static void ln_dev32(const float *restrict x, int64_t n, float m, float *se_out, float *sq_out)
{
    ln_v8f e0[2] = {{0}}, e1[2] = {{0}}, q0[2] = {{0}}, q1[2] = {{0}};
    int64_t k = 0;
    for (; k + 32 <= n; k += 32) {
        ln_v8f x0[2], x1[2];
        memcpy(x0, x + k, sizeof x0), memcpy(x1, x + k + 16, sizeof x1);
        for (int h = 0; h < 2; h++) {
            x0[h] -= m, x1[h] -= m;
            e0[h] += x0[h], e1[h] += x1[h], q0[h] += x0[h] * x0[h], q1[h] += x1[h] * x1[h];
        }
    }
    ln_v8f es[2] = {e0[0] + e1[0], e0[1] + e1[1]}, qs[2] = {q0[0] + q1[0], q0[1] + q1[1]};
    float se = LN_HSUM16(es), sq = LN_HSUM16(qs);
    for (; k < n; k++) {
        float e = x[k] - m;
        se += e, sq += e * e;
    }
    *se_out = se, *sq_out = sq;
}

/* x = ((x - mh) - ml) inv w + b in place. */
BLAS_CLONES static void ln_affine32(float *restrict x, int64_t n, float mh, float ml, float inv,
                                    const float *restrict w, const float *restrict b)
{
    for (int64_t k = 0; k < n; k++) x[k] = ((x[k] - mh) - ml) * inv * w[k] + b[k];
}

/* Row i of the F16/BF16 forward through buf (D floats). false, with nothing written, when
 * f32 cannot hold the sum of squares faithfully: past FLT_MAX (deviations of about 1e19),
 * inf or NaN in the row, or below 2^-80, where squares under 2^-126 (subnormal, each off
 * by up to 2^-149) could matter (a constant row's 0 included). The double path then does
 * the row, as the reference would. */
static bool ln_row_half(const ln_job *j, int64_t i, float *buf)
{
    const ff_view *x = &j->src[0], *y = &j->dst[0];
    int64_t d = j->d;
    blas_half_to_f32(x->dtype, d, buf, (const uint16_t *)x->buf + x->offset + i * d);
    float m0 = ln_sum32(buf, d) / (float)d, se, sq;
    ln_dev32(buf, d, m0, &se, &sq);
    if (!(sq >= 0x1p-80f && sq <= FLT_MAX)) return false;
    double mean = m0 + (double)se / (double)d, var = ((double)sq - (double)se * se / (double)d) / (double)d;
    double inv = 1 / sqrt((var > 0 ? var : 0) + j->eps);
    float mh = (float)mean;
    ln_affine32(buf, d, mh, (float)(mean - mh), (float)inv, j->w32, j->b32);
    blas_f32_to_half(y->dtype, d, (uint16_t *)y->buf + y->offset + i * d, buf);
    ffb_ln_st(&j->dst[1], ffb_ln_vec(&j->dst[1], i), mean);
    ffb_ln_st(&j->dst[2], ffb_ln_vec(&j->dst[2], i), inv);
    return true;
}

static double ln_vec(const ff_view *v, int64_t i) { return ffb_ln_ld(v, ffb_ln_vec(v, i)); }

static void ln_block(const ln_job *j, int64_t blk)
{
    int64_t d = j->d, per = (j->r + j->nblocks - 1) / j->nblocks;
    int64_t r0 = blk * per, r1 = r0 + per < j->r ? r0 + per : j->r;
    double *s = j->scratch + blk * (j->op ? 5 : 3) * d, *b0 = s, *b1 = s + d, *b2 = s + 2 * d;
    for (int64_t i = r0; i < r1; i++) {
        if (j->op == 0 && j->w32 && ln_row_half(j, i, (float *)b1)) continue;
        if (j->op == 0) {
            const double *x = ln_load(&j->src[0], i, d, b0);
            double mean = ln_sum(x, d) / (double)d;
            double inv = 1 / sqrt(ln_sqdev(x, d, mean) / (double)d + j->eps);
            double *y = j->dst[0].dtype == FF_F64 ? (double *)j->dst[0].buf + j->dst[0].offset + i * d : b1;
            ln_affine(y, x, d, mean, inv, j->w, j->b);
            ln_store(&j->dst[0], i, d, y);
            ffb_ln_st(&j->dst[1], ffb_ln_vec(&j->dst[1], i), mean);
            ffb_ln_st(&j->dst[2], ffb_ln_vec(&j->dst[2], i), inv);
        } else {
            const double *g = ln_load(&j->src[0], i, d, b0), *x = ln_load(&j->src[1], i, d, b1);
            double mean = ln_vec(&j->src[2], i), inv = ln_vec(&j->src[3], i), a, c;
            ln_bwd_sums(g, x, j->w, d, mean, inv, &a, &c);
            double *gx = j->dst[0].dtype == FF_F64 ? (double *)j->dst[0].buf + j->dst[0].offset + i * d : b2;
            ln_bwd_row(gx, g, x, j->w, d, mean, inv, a / (double)d, c / (double)d, s + 3 * d, s + 4 * d);
            ln_store(&j->dst[0], i, d, gx);
        }
    }
}

static void ln_task(void *arg, int64_t b0, int64_t b1)
{
    for (int64_t b = b0; b < b1; b++) ln_block(arg, b);
}

static void ln_strided_task(void *arg, int64_t r0, int64_t r1)
{
    const ln_job *j = arg;
    ffb_layer_norm_rows(j->op, j->dst, j->src, j->eps, r0, r1);
}

static void ln_strided_cols(void *arg, int64_t k0, int64_t k1)
{
    const ln_job *j = arg;
    ffb_layer_norm_cols(j->dst, j->src, k0, k1);
}

/* The contiguous path; FF_ERR_OOM when its buffers cannot be had. */
static ff_status ln_fast(blas_ctx *c, ln_job *j)
{
    int64_t d = j->d, work = j->r * d;
    j->nblocks = work < BLAS_PAR_MIN ? 1 : work / (BLAS_PAR_MIN / 4);
    if (j->nblocks > LN_MAX_BLOCKS) j->nblocks = LN_MAX_BLOCKS;
    if (j->nblocks > j->r) j->nblocks = j->r > 0 ? j->r : 1;
    size_t per = (size_t)(j->op ? 5 : 3) * (size_t)d;
    int half = !j->op && ffb_is_half(j->src[0].dtype);
    double *wb = malloc(sizeof(double) * ((half ? 3 : 2) * (size_t)d + per * (size_t)j->nblocks));
    if (!wb) return blas_error(c, FF_ERR_OOM, "cpu_blas layer_norm: out of memory for %lld x %lld buffers",
                               (long long)j->nblocks, (long long)d);
    const ff_view *w = &j->src[j->op ? 4 : 1], *b = &j->src[2];
    for (int64_t k = 0; k < d; k++) {
        wb[k] = ln_vec(w, k);
        wb[d + k] = j->op ? 0 : ln_vec(b, k);
    }
    j->w = wb, j->b = wb + d, j->scratch = wb + 2 * d;
    if (half) { /* f32 copies of w and b after the row buffers */
        float *w32 = (float *)(j->scratch + per * (size_t)j->nblocks);
        for (int64_t k = 0; k < d; k++) w32[k] = (float)wb[k], w32[d + k] = (float)wb[d + k];
        j->w32 = w32, j->b32 = w32 + d;
    }
    if (j->op)
        for (int64_t blk = 0; blk < j->nblocks; blk++)
            for (int64_t k = 0; k < 2 * d; k++) j->scratch[blk * (int64_t)per + 3 * d + k] = 0;
    blas_parallel_for(c, j->nblocks, 2, 1, ln_task, j);
    if (j->op) /* the partials in block order */
        for (int64_t k = 0; k < d; k++) {
            double sw = 0, sb = 0;
            for (int64_t blk = 0; blk < j->nblocks; blk++) {
                sw += j->scratch[blk * (int64_t)per + 3 * d + k];
                sb += j->scratch[blk * (int64_t)per + 4 * d + k];
            }
            ffb_ln_st(&j->dst[1], ffb_ln_vec(&j->dst[1], k), sw);
            ffb_ln_st(&j->dst[2], ffb_ln_vec(&j->dst[2], k), sb);
        }
    free(wb);
    return FF_OK;
}

ff_status blas_layer_norm(void *ctx, int op, const ff_view *dst, int n_dst, const ff_view *src, int n_src, double eps)
{
    ff_status st = ffb_layer_norm_check(ctx ? ((blas_ctx *)ctx)->host : NULL, "cpu_blas", op, dst, n_dst, src, n_src);
    if (st) return st;
    const ff_view *x = &src[op ? 1 : 0];
    int64_t r = x->shape[0], d = x->shape[1];
    ln_job j = {.op = op, .dst = dst, .src = src, .eps = eps, .r = r, .d = d};
    int fast = blas_view_contiguous(x) && blas_view_contiguous(&dst[0]) && (!op || blas_view_contiguous(&src[0]));
    if (fast) return ln_fast(ctx, &j);
    int64_t min_par = BLAS_PAR_MIN / d > 1 ? BLAS_PAR_MIN / d : 1;
    blas_parallel_for(ctx, r, min_par, 1, ln_strided_task, &j);
    if (op) blas_parallel_for(ctx, d, min_par, 1, ln_strided_cols, &j);
    return FF_OK;
}
