/*
 * ff_linear_dynamic_int8 / _rows where the backend quantizes x itself (qmatmul's dynamic
 * mode, backend_abi.h): the core hands x to the entry on its own backend (F64 converted
 * there, a transposed or 3-D x as a view or a copy there). opencl and cpu quantize by the
 * same rule and scale the exact sums in double, so their y agree bit for bit; cpu_blas's
 * f32 scaling stays within a few ulps of cpu's. x has a row of zeros, and in one variant
 * +inf and -inf (the per-tensor range's ends become +-FLT_MAX: y may overflow to inf, on
 * every backend alike). With FF_TEST_QDYN_HOST_BACKEND naming a plugin that declines the
 * dynamic mode (ctest's test_quant_host_path_guarded), that plugin's y, through the
 * core's host quantization and u8 upload, equals cpu's bit for bit too: one rule.
 */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ff_test.h"
#include "ff/quant.h"

static uint64_t rng = 0x2545F4914F6CDD1Dull;

static double unit(void)
{
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (double)(rng >> 11) / 9007199254740992.0;
}

/* x: 0 F32 [2, M/2, K] dense, 1 F32 [M, K] transposed storage, 2 F64 [M, K] */
static ff_tensor *make_x(ff_backend *be, const float *x, int64_t M, int64_t K, int kind)
{
    if (kind == 0) return ff_from_data_on(be, x, 3, SHAPE(2, M / 2, K), FF_F32);
    if (kind == 2) {
        double *d = malloc((size_t)(M * K) * sizeof(double));
        for (int64_t i = 0; d && i < M * K; i++) d[i] = x[i];
        ff_tensor *t = d ? ff_from_data_on(be, d, 2, SHAPE(M, K), FF_F64) : NULL;
        free(d);
        return t;
    }
    float *h = malloc((size_t)(M * K) * sizeof(float));
    for (int64_t m = 0; h && m < M; m++)
        for (int64_t k = 0; k < K; k++) h[k * M + m] = x[m * K + k];
    ff_tensor *s = h ? ff_from_data_on(be, h, 2, SHAPE(K, M), FF_F32) : NULL, *t = s ? ff_transpose(s, 0, 1) : NULL;
    ff_tensor_release(s);
    free(h);
    return t;
}

/* y of the dynamic Linear on be (mode 0 per tensor, 1 with 7 bits, 2 per row) into got. */
static int run_on(const char *name, const float *x, const float *w, const float *b, int64_t M, int64_t K, int64_t N,
                  int kind, int mode, double *got)
{
    ff_backend *be = ff_backend_load(name);
    CHECK(be != NULL);
    if (!be) return -1;
    const char *host = getenv("FF_TEST_QDYN_HOST_BACKEND");
    CHECK(ff_backend_supports(be, FF_KIND_QMATMUL, FF_QMATMUL_DYNAMIC, FF_F32) == !(host && !strcmp(host, name)));
    ff_tensor *tx = make_x(be, x, M, K, kind), *tw = ff_from_data_on(be, w, 2, SHAPE(N, K), FF_F32);
    ff_tensor *tb = ff_from_data_on(be, b, 1, SHAPE(N), FF_F32), *wq = NULL, *ws = NULL, *y = NULL;
    CHECK(tx && tw && tb && ff_quantize_weight_s8(tw, &wq, &ws) == FF_OK);
    if (wq) y = mode == 2 ? ff_linear_dynamic_int8_rows(tx, wq, ws, tb) : ff_linear_dynamic_int8(tx, wq, ws, tb, mode == 1);
    CHECK(y && ff_tensor_numel(y) == M * N && ff_tensor_dtype(y) == (kind == 2 ? FF_F64 : FF_F32));
    int ok = y && ff_test_values(y, got, M * N) == 0 ? 0 : -1;
    RELEASE(tx, tw, tb, wq, ws, y);
    return ok;
}

static void cases(void)
{
    const int64_t M = 6, K = 37, N = 11;
    float x[6 * 37], w[11 * 37], b[11];
    double cpu[6 * 11], got[6 * 11];
    for (int v = 0; v < 2; v++)
        for (int kind = 0; kind < 3; kind++)
            for (int mode = 0; mode < 3; mode++) {
                for (int64_t i = 0; i < M * K; i++) x[i] = (float)(6 * unit() - 2);
                for (int64_t k = 0; k < K; k++) x[2 * K + k] = 0; /* a row of zeros */
                if (v) x[4 * K + 1] = INFINITY, x[4 * K + 5] = -INFINITY;
                for (int64_t i = 0; i < N * K; i++) w[i] = (float)(unit() - 0.5);
                for (int64_t i = 0; i < N; i++) b[i] = (float)(unit() - 0.5);
                if (run_on("cpu", x, w, b, M, K, N, kind, mode, cpu)) continue;
                const char *host = getenv("FF_TEST_QDYN_HOST_BACKEND");
                if (host && *host && !run_on(host, x, w, b, M, K, N, kind, mode, got)) {
                    int64_t bad = 0;
                    for (int64_t i = 0; i < M * N; i++) bad += !(got[i] == cpu[i]);
                    if (bad) fprintf(stderr, "host path v=%d kind=%d mode=%d: %lld of y differ from cpu's\n", v, kind, mode, (long long)bad);
                    CHECK(bad == 0);
                }
                if (!run_on("opencl", x, w, b, M, K, N, kind, mode, got)) {
                    int64_t bad = 0;
                    for (int64_t i = 0; i < M * N; i++) bad += !(got[i] == cpu[i]);
                    if (bad) fprintf(stderr, "opencl v=%d kind=%d mode=%d: %lld of y differ from cpu's\n", v, kind, mode, (long long)bad);
                    CHECK(bad == 0);
                }
                if (FF_TEST_HAVE_CPU_BLAS && !run_on("cpu_blas", x, w, b, M, K, N, kind, mode, got)) {
                    int64_t bad = 0;
                    for (int64_t i = 0; i < M * N; i++)
                        bad += isinf(got[i]) || isinf(cpu[i])
                                   ? !(got[i] * cpu[i] > 0 && fmin(fabs(got[i]), fabs(cpu[i])) >= FLT_MAX * 0.999)
                                   : !(fabs(got[i] - cpu[i]) <= 1e-6 * (fabs(cpu[i]) + 1));
                    if (bad) fprintf(stderr, "cpu_blas v=%d kind=%d mode=%d: %lld of y off cpu's\n", v, kind, mode, (long long)bad);
                    CHECK(bad == 0);
                }
            }
}

FF_TEST_MAIN("opencl_quant_dynamic", TEST(cases))
