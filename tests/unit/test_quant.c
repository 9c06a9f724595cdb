/*
 * int8 quantization (include/ff/quant.h): quantize / dequantize against the formulas in
 * the header, the weight observer's scales, and ff_linear_dynamic_int8 on cpu and
 * cpu_blas (oneDNN's int8 matmul where the CPU has VNNI or AMX) against an exact integer
 * loop written here, with odd M, N, K; then the error paths.
 */
#include <stdlib.h>

#include "ff_impl.h"
#include "ff_test.h"
#include "ff/quant.h"

static uint64_t rng = 0x9E3779B97F4A7C15ull;

static double unit(void)
{
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (double)(rng >> 11) / 9007199254740992.0;
}

static void test_per_tensor(void)
{
    ff_tensor *x = ff_test_tensor(FF_F32, 1, SHAPE(6), VALS(-1.0, 0.0, 0.5, 1.26, 20.0, -20.0));
    ff_tensor *q = ff_quantize_per_tensor(x, 0.1, 10, FF_QUINT8);
    /* round(x / 0.1) + 10, clamped to [0, 255] */
    CHECK_TENSOR(q, 1, SHAPE(6), VALS(0, 10, 15, 23, 210, 0), 0);
    ff_tensor *d = ff_dequantize_per_tensor(q, 0.1, 10, FF_QUINT8);
    CHECK_TENSOR(d, 1, SHAPE(6), VALS(-1.0, 0.0, 0.5, 1.3, 20.0, -1.0), 1e-6);
    ff_tensor *qs = ff_quantize_per_tensor(x, 0.1, 0, FF_QINT8);
    /* s8 bytes: 20 / 0.1 = 200 saturates to 127, -200 to -128 (0x80) */
    CHECK_TENSOR(qs, 1, SHAPE(6), VALS(246, 0, 5, 13, 127, 128), 0);
    ff_tensor *ds = ff_dequantize_per_tensor(qs, 0.1, 0, FF_QINT8);
    CHECK_TENSOR(ds, 1, SHAPE(6), VALS(-1.0, 0.0, 0.5, 1.3, 12.7, -12.8), 1e-6);
    RELEASE(x, q, d, qs, ds);
}

static void test_per_channel(void)
{
    ff_tensor *x = ff_test_tensor(FF_F32, 2, SHAPE(2, 3), VALS(1.0, -2.0, 3.0, 0.25, 0.5, -0.75));
    ff_tensor *s = ff_test_tensor(FF_F32, 1, SHAPE(2), VALS(0.5, 0.25));
    ff_tensor *z = ff_test_tensor(FF_I64, 1, SHAPE(2), VALS(1, -2));
    ff_tensor *q = ff_quantize_per_channel(x, s, z, 0, FF_QINT8);
    CHECK_TENSOR(q, 2, SHAPE(2, 3), VALS(3, 253, 7, 255, 0, 251), 0); /* 3, -3, 7 | -1, 0, -5 */
    ff_tensor *d = ff_dequantize_per_channel(q, s, z, 0, FF_QINT8);
    CHECK_TENSOR(d, 2, SHAPE(2, 3), VALS(1.0, -2.0, 3.0, 0.25, 0.5, -0.75), 1e-6);
    ff_tensor *wq = NULL, *ws = NULL;
    CHECK(ff_quantize_weight_s8(x, &wq, &ws) == FF_OK);
    /* max |w| / 127.5 per row; +max maps to 127.5 -> 128 -> 127, -max to -128 (ties to even) */
    CHECK_TENSOR(ws, 1, SHAPE(2), VALS(3.0 / 127.5, 0.75 / 127.5), 1e-7);
    CHECK_TENSOR(wq, 2, SHAPE(2, 3), VALS(42, 171, 127, 42, 85, 128), 0);
    RELEASE(x, s, z, q, d, wq, ws);
}

/* y of the dynamic Linear from the header's definition, in double over exact sums. */
static void linear_ref(const float *x, int64_t M, int64_t K, const ff_tensor *wq, const ff_tensor *ws,
                       const float *bias, bool rr, double *y)
{
    int64_t N = ff_tensor_dim(wq, 0);
    uint8_t *w = malloc((size_t)(N * K));
    float *s = malloc((size_t)N * sizeof(float));
    CHECK(!ff_tensor_to_host(wq, w, (size_t)(N * K)) && !ff_tensor_to_host(ws, s, (size_t)N * sizeof(float)));
    float lo = 0, hi = 0, sa;
    int32_t za;
    for (int64_t i = 0; i < M * K; i++) lo = fminf(lo, x[i]), hi = fmaxf(hi, x[i]);
    ff_quant_choose_params(lo, hi, rr, &sa, &za);
    for (int64_t m = 0; m < M; m++)
        for (int64_t n = 0; n < N; n++) {
            int64_t acc = 0;
            for (int64_t k = 0; k < K; k++) {
                float v = fminf(fmaxf(nearbyintf(x[m * K + k] * (1.0f / sa)) + (float)za, 0.0f), rr ? 127.0f : 255.0f);
                acc += ((int64_t)v - za) * (int8_t)w[n * K + k];
            }
            y[m * N + n] = (double)acc * (double)(sa * s[n]) + (bias ? bias[n] : 0.0);
        }
    free(w), free(s);
}

static void linear_case(const char *be_name, int64_t M, int64_t N, int64_t K, bool rr)
{
    ff_backend *be = ff_backend_load(be_name);
    CHECK(be != NULL);
    if (!be) return;
    float *x = malloc((size_t)(M * K) * sizeof(float)), *w = malloc((size_t)(N * K) * sizeof(float));
    float *b = malloc((size_t)N * sizeof(float));
    double *want = malloc((size_t)(M * N) * sizeof(double)), *got = malloc((size_t)(M * N) * sizeof(double));
    for (int64_t i = 0; i < M * K; i++) x[i] = (float)(4 * unit() - 1.5);
    for (int64_t i = 0; i < N * K; i++) w[i] = (float)(unit() - 0.5);
    for (int64_t i = 0; i < N; i++) b[i] = (float)(unit() - 0.5);
    ff_tensor *tx = ff_from_data_on(be, x, 2, SHAPE(M, K), FF_F32), *tw = ff_from_data_on(be, w, 2, SHAPE(N, K), FF_F32);
    ff_tensor *tb = ff_from_data_on(be, b, 1, SHAPE(N), FF_F32), *wq = NULL, *ws = NULL;
    CHECK(ff_quantize_weight_s8(tw, &wq, &ws) == FF_OK);
    ff_tensor *y = ff_linear_dynamic_int8(tx, wq, ws, tb, rr);
    CHECK(y && ff_tensor_dim(y, 0) == M && ff_tensor_dim(y, 1) == N);
    if (y && wq) {
        linear_ref(x, M, K, wq, ws, b, rr, want);
        ff_test_values(y, got, M * N);
        int64_t bad = 0;
        for (int64_t i = 0; i < M * N; i++) /* the f32 scale and bias steps: a few ulps */
            if (fabs(got[i] - want[i]) > 1e-6 * fabs(want[i]) + 1e-6) {
                if (!bad) fprintf(stderr, "%s M=%lld N=%lld K=%lld: y[%lld] = %.9g, want %.9g\n", be_name, (long long)M,
                                  (long long)N, (long long)K, (long long)i, got[i], want[i]);
                bad++;
            }
        CHECK(bad == 0);
    }
    RELEASE(tx, tw, tb, wq, ws, y);
    free(x), free(w), free(b), free(want), free(got);
}

static void test_linear(void)
{
    const char *bes[] = {"cpu", FF_TEST_HAVE_CPU_BLAS ? "cpu_blas" : "cpu"};
    for (int i = 0; i < 2; i++) {
        linear_case(bes[i], 1, 1, 1, false);
        linear_case(bes[i], 7, 13, 29, true);
        linear_case(bes[i], 33, 65, 384, false); /* big enough for oneDNN's kernels */
        linear_case(bes[i], 64, 96, 257, true);
    }
}

static void test_leading_dims(void)
{
    ff_tensor *x = ff_rand_uniform(3, SHAPE(2, 3, 8), FF_F32, -1, 1, 7);
    ff_tensor *w = ff_rand_uniform(2, SHAPE(5, 8), FF_F32, -1, 1, 8), *wq = NULL, *ws = NULL;
    CHECK(ff_quantize_weight_s8(w, &wq, &ws) == FF_OK);
    ff_tensor *y = ff_linear_dynamic_int8(x, wq, ws, NULL, false);
    CHECK(y && ff_tensor_ndim(y) == 3 && ff_tensor_dim(y, 2) == 5);
    /* close to the f32 Linear: x in [-1, 1] over 255 steps, w over 255 */
    ff_tensor *wt = ff_mT(w), *ref = ff_matmul(x, wt), *diff = y && ref ? ff_sub(y, ref) : NULL, *m = diff ? ff_abs(diff) : NULL;
    ff_tensor *mx = m ? ff_amax(m, 0, NULL, false) : NULL;
    double e = 1;
    CHECK(mx && !ff_tensor_item(mx, &e));
    CHECK(e < 0.05);
    RELEASE(x, w, wt, wq, ws, y, ref, diff, m, mx);
}

/* One row 100x the others: per-tensor scales give the small rows ~1 level; per row, each
 * keeps its 8 bits. */
static void test_rows(void)
{
    const char *bes[] = {"cpu", FF_TEST_HAVE_CPU_BLAS ? "cpu_blas" : "cpu"};
    for (int bi = 0; bi < 2; bi++) {
        ff_backend *be = ff_backend_load(bes[bi]);
        float x[6 * 64], w[16 * 64];
        for (int i = 0; i < 6 * 64; i++) x[i] = (float)(unit() - 0.5) * (i < 64 ? 100.0f : 1.0f);
        for (int i = 0; i < 16 * 64; i++) w[i] = (float)(unit() - 0.5);
        ff_tensor *tx = ff_from_data_on(be, x, 2, SHAPE(6, 64), FF_F32), *tw = ff_from_data_on(be, w, 2, SHAPE(16, 64), FF_F32);
        ff_tensor *wq = NULL, *ws = NULL;
        CHECK(ff_quantize_weight_s8(tw, &wq, &ws) == FF_OK);
        ff_tensor *yr = ff_linear_dynamic_int8_rows(tx, wq, ws, NULL), *yt = ff_linear_dynamic_int8(tx, wq, ws, NULL, false);
        ff_tensor *wt = ff_mT(tw), *ref = ff_matmul(tx, wt);
        double r[96], t[96], f[96], er = 0, et = 0;
        CHECK(yr && yt && ref && ff_test_values(yr, r, 96) == 0 && ff_test_values(yt, t, 96) == 0 &&
              ff_test_values(ref, f, 96) == 0);
        for (int i = 16; i < 96; i++) er = fmax(er, fabs(r[i] - f[i])), et = fmax(et, fabs(t[i] - f[i]));
        CHECK(er < 0.02);     /* rows of |x| <= 0.5 over 127 levels, K = 64 */
        CHECK(er * 10 < et);  /* and an order of magnitude better than per tensor there */
        RELEASE(tx, tw, wq, ws, yr, yt, wt, ref);
    }
}

static void test_errors(void)
{
    ff_tensor *x = ff_zeros(2, SHAPE(2, 4), FF_F32), *xi = ff_zeros(2, SHAPE(2, 4), FF_I32);
    ff_tensor *wq = ff_zeros(2, SHAPE(3, 5), FF_U8), *ws = ff_ones(1, SHAPE(3), FF_F32);
    CHECK_ERROR(!ff_quantize_per_tensor(x, 0.0, 0, FF_QUINT8), FF_ERR_INVALID, "scale");
    CHECK_ERROR(!ff_quantize_per_tensor(x, 1.0, 200, FF_QINT8), FF_ERR_INVALID, "zero point");
    CHECK_ERROR(!ff_quantize_per_tensor(xi, 1.0, 0, FF_QUINT8), FF_ERR_INVALID, "float");
    CHECK_ERROR(!ff_dequantize_per_tensor(x, 1.0, 0, FF_QUINT8), FF_ERR_INVALID, "U8");
    CHECK_ERROR(!ff_quantize_per_channel(x, ws, NULL, 0, FF_QINT8), FF_ERR_INVALID, "scales");
    CHECK_ERROR(!ff_linear_dynamic_int8(x, wq, ws, NULL, false), FF_ERR_INVALID, "K=4");
    ff_tensor *wq4 = ff_zeros(2, SHAPE(3, 4), FF_U8), *bad = ff_ones(1, SHAPE(2), FF_F32);
    CHECK_ERROR(!ff_linear_dynamic_int8(x, wq4, bad, NULL, false), FF_ERR_INVALID, "F32 [3]");
    ff_tensor *q = NULL, *s = NULL;
    CHECK_ERROR(ff_quantize_weight_s8(xi, &q, &s) != FF_OK, FF_ERR_INVALID, "float [N, K]");
    CHECK(!q && !s);
    RELEASE(x, xi, wq, ws, wq4, bad);
}

FF_TEST_MAIN("quant", TEST(test_per_tensor), TEST(test_per_channel), TEST(test_linear), TEST(test_leading_dims),
             TEST(test_rows), TEST(test_errors))
