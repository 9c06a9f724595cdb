/*
 * cpu_blas's layer_norm forward on F16/BF16 (blas_layer_norm.c: statistics and y in f32,
 * y rounded once) against a double computation here on the same half inputs. Each y must
 * be within half an ulp of the half dtype (the one rounding) plus f32's error on the terms
 * of xhat w + b; mean and invstd within f32's error. The rows are the hard ones: a large
 * mean with a small spread (1000 + noise, and 1000 with a single element one half ulp
 * above, where the f32 mean of the first pass is off by more than the spread allows),
 * large negative values, tiny ones, a constant row, deviations whose squares overflow f32
 * (bf16 1e30), inf and NaN (the whole row NaN, as in the reference), D = 1, 3, 384, 1000
 * and 4096, and an eps larger than the variance.
 */
#include <math.h>
#include <stdlib.h>

#include "ff_backend_scalar.h"
#include "ff_impl.h"
#include "ff_test.h"

static ff_backend *be;

enum { KINDS = 10 };

static uint64_t rng = 0x2545F4914F6CDD1Dull;
static double uniform(void) /* [0, 1) */
{
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (double)(rng >> 11) * 0x1p-53;
}

static uint16_t to_half(ff_dtype t, double v) { return t == FF_F16 ? ffb_f64_to_f16(v) : ffb_f64_to_bf16(v); }
static double from_half(ff_dtype t, uint16_t h) { return t == FF_F16 ? ffb_f16_to_f32(h) : ffb_bf16_to_f32(h); }

/* The spacing of t's values at magnitude a (subnormals included). */
static double half_ulp_at(ff_dtype t, double a)
{
    int p = t == FF_F16 ? 10 : 7, emin = t == FF_F16 ? -14 : -126, e;
    frexp(a, &e); /* a = m 2^e, m in [0.5, 1) */
    return ldexp(1.0, (e - 1 > emin ? e - 1 : emin) - p);
}

/* got within tol of want; inf and NaN (the whole row NaN after an inf or a NaN) exactly. */
static int near(double got, double want, double tol)
{
    if (isnan(want)) return isnan(got);
    return isinf(want) ? got == want : fabs(got - want) <= tol;
}

/* Row `kind` of x, D values rounded to t. */
static void fill_row(ff_dtype t, int kind, int64_t d, uint16_t *x)
{
    double u1000 = half_ulp_at(t, 1000);
    for (int64_t k = 0; k < d; k++) {
        double v;
        switch (kind) {
        case 0: v = 1 + 6 * (uniform() - 0.5); break;                     /* plain */
        case 1: v = 1000 + u1000 * floor(5 * uniform() - 2); break;       /* 1000 + noise */
        case 2: v = k == d / 2 ? 1000 + u1000 : 1000; break;             /* one element apart */
        case 3: v = -30000 + 16 * floor(9 * uniform()); break;            /* large and negative */
        case 4: v = 1e-3 * (uniform() - 0.5); break;                      /* tiny */
        case 5: v = 1.5; break;                                           /* constant */
        case 6: v = k % 2 ? (t == FF_BF16 ? 1e30 : 60000) : -3; break;    /* bf16: squares past f32 */
        case 7: v = k == d - 1 ? INFINITY : uniform(); break;            /* inf */
        case 8: v = k == 0 ? NAN : uniform(); break;                     /* NaN */
        default: v = 3 + half_ulp_at(t, 3) * floor(3 * uniform()); break; /* variance below eps */
        }
        x[k] = to_half(t, v);
    }
}

/* One forward of KINDS rows of D on cpu_blas, every result checked against double. */
static void check_forward(ff_dtype t, int64_t d, double eps)
{
    int64_t r = KINDS, n = r * d;
    uint16_t *x = malloc(2 * (size_t)n), *y = malloc(2 * (size_t)n);
    uint16_t *w = malloc(2 * (size_t)d), *b = malloc(2 * (size_t)d);
    double stats[2 * KINDS];
    CHECK(x && y && w && b);
    if (!x || !y || !w || !b) goto out;
    for (int64_t i = 0; i < r; i++) fill_row(t, (int)i, d, x + i * d);
    for (int64_t k = 0; k < d; k++) {
        w[k] = to_half(t, (k % 5 == 4 ? -1 : 1) * (0.5 + 2 * uniform()));
        b[k] = to_half(t, uniform() - 0.5);
    }
    void *bx = be->vt->alloc(be->ctx, 2 * (size_t)n), *by = be->vt->alloc(be->ctx, 2 * (size_t)n);
    void *bw = be->vt->alloc(be->ctx, 2 * (size_t)d), *bb = be->vt->alloc(be->ctx, 2 * (size_t)d);
    void *bs = be->vt->alloc(be->ctx, sizeof stats);
    CHECK(bx && by && bw && bb && bs);
    be->vt->upload(be->ctx, bx, 0, x, 2 * (size_t)n);
    be->vt->upload(be->ctx, bw, 0, w, 2 * (size_t)d);
    be->vt->upload(be->ctx, bb, 0, b, 2 * (size_t)d);
    ff_view vx = {.buf = bx, .dtype = t, .ndim = 2, .shape = {r, d}, .strides = {d, 1}};
    ff_view vy = vx;
    vy.buf = by;
    ff_view vw = {.buf = bw, .dtype = t, .ndim = 1, .shape = {d}, .strides = {1}}, vb = vw;
    vb.buf = bb;
    ff_view vm = {.buf = bs, .dtype = FF_F64, .ndim = 1, .shape = {r}, .strides = {1}}, vi = vm;
    vi.offset = r;
    ff_view dst[3] = {vy, vm, vi}, src[3] = {vx, vw, vb};
    CHECK(be->vt->layer_norm(be->ctx, 0, dst, 3, src, 3, eps) == FF_OK);
    be->vt->download(be->ctx, by, 0, y, 2 * (size_t)n);
    be->vt->download(be->ctx, bs, 0, stats, sizeof stats);
    int bad = 0;
    for (int64_t i = 0; i < r; i++) {
        const uint16_t *xr = x + i * d, *yr = y + i * d;
        double s = 0, q = 0;
        for (int64_t k = 0; k < d; k++) s += from_half(t, xr[k]);
        double mean = s / (double)d;
        for (int64_t k = 0; k < d; k++) q += (from_half(t, xr[k]) - mean) * (from_half(t, xr[k]) - mean);
        double var = q / (double)d, inv = 1 / sqrt(var + eps);
        int stat_ok = near(stats[i], mean, 0x1p-22 * (fabs(mean) + sqrt(var))) &&
                      near(stats[r + i], inv, 0x1p-20 * inv);
        if (!stat_ok && bad++ < 5)
            fprintf(stderr, "%s D=%lld eps=%g row %lld: mean %.9g invstd %.9g, want %.9g %.9g\n", ff_dtype_name(t),
                    (long long)d, eps, (long long)i, stats[i], stats[r + i], mean, inv);
        for (int64_t k = 0; k < d; k++) {
            double p = (from_half(t, xr[k]) - mean) * inv * from_half(t, w[k]), bk = from_half(t, b[k]);
            double want = p + bk, got = from_half(t, yr[k]);
            double tol = 0.5 * half_ulp_at(t, fmax(fabs(want), fabs(got))) + 0x1p-18 * (fabs(p) + fabs(bk));
            if (!near(got, want, tol) && bad++ < 5)
                fprintf(stderr, "%s D=%lld eps=%g row %lld [%lld]: got %.9g, want %.9g (tol %.3g)\n", ff_dtype_name(t),
                        (long long)d, eps, (long long)i, (long long)k, got, want, tol);
        }
    }
    CHECK(bad == 0);
    be->vt->free(be->ctx, bx), be->vt->free(be->ctx, by), be->vt->free(be->ctx, bw);
    be->vt->free(be->ctx, bb), be->vt->free(be->ctx, bs);
out:
    free(x), free(y), free(w), free(b);
}

static void test_forward_half(void)
{
    static const ff_dtype types[2] = {FF_BF16, FF_F16};
    static const int64_t ds[5] = {1, 3, 384, 1000, 4096};
    for (int ti = 0; ti < 2; ti++)
        for (int di = 0; di < 5; di++) {
            check_forward(types[ti], ds[di], 1e-5);
            check_forward(types[ti], ds[di], 0.25); /* larger than the last row's variance */
        }
}

static void setup(void)
{
    be = ff_backend_load("cpu_blas");
    if (!be) {
        fprintf(stderr, "cannot load cpu_blas: %s\n", ff_last_error());
        exit(1);
    }
    CHECK(be->vt->layer_norm != NULL);
}

FF_TEST_MAIN("cpu_blas_layer_norm_half", TEST(setup), TEST(test_forward_half))
