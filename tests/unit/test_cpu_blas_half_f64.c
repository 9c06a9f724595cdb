/*
 * cpu_blas's copy entry between f64 and F16/BF16 (blas_half.c: f64 rounded to odd in f32,
 * then to nearest even in the half dtype) against the reference's one rounding
 * (ffb_f64_to_bf16 / ffb_f64_to_f16), bit for bit: random doubles over the half dtypes'
 * whole exponent range and past it, every value just below, on and just above the
 * half-way points between neighbouring halves (where a double rounding to nearest would
 * go wrong), subnormals, the overflow threshold, +-0, +-inf and NaN (any quiet NaN).
 * The way back, half -> f64, must be exact.
 */
#include <math.h>
#include <stdlib.h>

#include "ff_backend_scalar.h"
#include "ff_impl.h"
#include "ff_test.h"

static ff_backend *be;

enum { N = 1 << 16 };

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint64_t next(void)
{
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return rng;
}

/* Values to round into t: random, and around the half-way points. */
static void fill(ff_dtype t, double *x)
{
    int64_t i = 0;
    x[i++] = 0.0, x[i++] = -0.0, x[i++] = INFINITY, x[i++] = -INFINITY, x[i++] = NAN;
    x[i++] = t == FF_F16 ? 65520.0 : 0x1.ff8p127, x[i++] = t == FF_F16 ? 65519.99 : 0x1.ff7ffffffffffp127;
    while (i < N / 2) { /* half-way points between neighbouring halves, and their neighbours */
        uint16_t h = (uint16_t)(next() & 0x7fff);
        double a = t == FF_F16 ? ffb_f16_to_f32(h) : ffb_bf16_to_f32(h);
        double b = t == FF_F16 ? ffb_f16_to_f32((uint16_t)(h + 1)) : ffb_bf16_to_f32((uint16_t)(h + 1));
        if (!isfinite(a) || !isfinite(b)) continue;
        double mid = (a + b) / 2, sign = next() & 1 ? -1.0 : 1.0;
        x[i++] = sign * mid, x[i++] = sign * nextafter(mid, 0), x[i++] = sign * nextafter(mid, INFINITY);
    }
    while (i < N) { /* exponents 2^-160 .. 2^140 */
        double m = 1.0 + (double)(next() >> 11) * 0x1p-53;
        x[i++] = ldexp(next() & 1 ? -m : m, (int)(next() % 301) - 160);
    }
}

static void test_f64_to_half(void)
{
    static const ff_dtype types[2] = {FF_BF16, FF_F16};
    for (int k = 0; k < 2; k++) {
        ff_dtype t = types[k];
        double *x = malloc(sizeof(double) * N), *back = malloc(sizeof(double) * N);
        uint16_t *h = malloc(2 * N);
        fill(t, x);
        void *src = be->vt->alloc(be->ctx, sizeof(double) * N), *dst = be->vt->alloc(be->ctx, 2 * N);
        void *wide = be->vt->alloc(be->ctx, sizeof(double) * N);
        CHECK(src && dst && wide);
        be->vt->upload(be->ctx, src, 0, x, sizeof(double) * N);
        ff_view vs = {.buf = src, .dtype = FF_F64, .ndim = 1, .shape = {N}, .strides = {1}};
        ff_view vd = {.buf = dst, .dtype = t, .ndim = 1, .shape = {N}, .strides = {1}};
        ff_view vw = {.buf = wide, .dtype = FF_F64, .ndim = 1, .shape = {N}, .strides = {1}};
        CHECK(be->vt->copy(be->ctx, &vd, &vs) == FF_OK);
        CHECK(be->vt->copy(be->ctx, &vw, &vd) == FF_OK);
        be->vt->download(be->ctx, dst, 0, h, 2 * N);
        be->vt->download(be->ctx, wide, 0, back, sizeof(double) * N);
        int bad = 0, bad_back = 0;
        for (int64_t i = 0; i < N; i++) {
            uint16_t want = t == FF_F16 ? ffb_f64_to_f16(x[i]) : ffb_f64_to_bf16(x[i]);
            double got = t == FF_F16 ? ffb_f16_to_f32(h[i]) : ffb_bf16_to_f32(h[i]);
            int same = h[i] == want || (isnan(x[i]) && isnan(got));
            if (!same && bad++ < 3)
                fprintf(stderr, "%s: %a rounded to 0x%04x, want 0x%04x\n", ff_dtype_name(t), x[i], h[i], want);
            if (!(back[i] == got || (isnan(got) && isnan(back[i]))) && bad_back++ < 3)
                fprintf(stderr, "%s: 0x%04x widened to %a, want %a\n", ff_dtype_name(t), h[i], back[i], got);
        }
        CHECK(bad == 0);
        CHECK(bad_back == 0);
        be->vt->free(be->ctx, src), be->vt->free(be->ctx, dst), be->vt->free(be->ctx, wide);
        free(x), free(back), free(h);
    }
}

static void setup(void)
{
    be = ff_backend_load("cpu_blas");
    if (!be) {
        fprintf(stderr, "cannot load cpu_blas: %s\n", ff_last_error());
        exit(1);
    }
}

FF_TEST_MAIN("cpu_blas_half_f64", TEST(setup), TEST(test_f64_to_half))
