/* ff_linear_act (ops/linear.c) and cpu_blas's linear entry (blas_linear.c, the bf16
 * oneDNN post-ops of blas_half_dnnl.c): in inference a bf16 Linear + GELU of MiniLM's
 * shape comes out within one rounding of the exact value (the composition rounds after
 * the product, the bias and the activation, and strays further); with autograd the op
 * is the composition, gradients included; under autocast the bias joins y's dtype; many
 * shapes and views in one process (what a backend caches per shape must be keyed by all
 * of it) stay within a rounding of the f32 composition; bad arguments are refused with a
 * message naming the shapes. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ff_impl.h"
#include "ff_test.h"

static const char *const *backends;
/* FF_TEST_LINEAR_BACKEND: one plugin instead (tests/cuda_emu: the emulated cuBLASLt entry) */
static int n_backends(void) { return ff_test_backends("FF_TEST_LINEAR_BACKEND", &backends); }
static ff_status use(const char *name) { return ff_backend_set_default(ff_backend_load(name)); }

static double gelu(double v) { return 0.5 * v * (1 + erf(v / sqrt(2.0))); }

/* The largest |got - exact| in units of the bf16 ulp at the exact value, or at 2^-4
 * where the value is smaller: GELU's output near 0 (inputs below -3) is tiny beside the
 * sum it came from, whose own last bit it cannot be more exact than. */
static double worst_ulps(const double *got, const double *exact, int64_t n)
{
    double worst = 0;
    for (int64_t i = 0; i < n; i++) {
        double e = fabs(exact[i]), ulp = ldexp(1.0, (e > 0x1p-4 ? ilogb(e) : -4) - 7);
        double u = fabs(got[i] - exact[i]) / ulp;
        worst = u > worst ? u : worst;
    }
    return worst;
}

static void test_bf16_gelu_rounds_once(void)
{
    const int64_t M = 40, K = 384, N = 1536;
    for (int bi = 0; bi < n_backends(); bi++) {
        CHECK(use(backends[bi]) == FF_OK);
        ff_tensor *x = ff_test_lcg_tensor(FF_BF16, 2, SHAPE(M, K), 7, -1, 1);
        ff_tensor *w = ff_test_lcg_tensor(FF_BF16, 2, SHAPE(N, K), 8, -0.12, 0.12);
        ff_tensor *b = ff_test_lcg_tensor(FF_BF16, 1, SHAPE(N), 9, -0.5, 0.5);
        double *hx = malloc(sizeof(double) * (size_t)(M * K)), *hw = malloc(sizeof(double) * (size_t)(N * K));
        double *hb = malloc(sizeof(double) * (size_t)N), *exact = malloc(sizeof(double) * (size_t)(M * N));
        double *got = malloc(sizeof(double) * (size_t)(M * N));
        CHECK(hx && hw && hb && exact && got);
        CHECK(ff_test_values(x, hx, M * K) == 0 && ff_test_values(w, hw, N * K) == 0 && ff_test_values(b, hb, N) == 0);
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < N; j++) {
                double s = hb[j];
                for (int64_t k = 0; k < K; k++) s += hx[i * K + k] * hw[j * K + k];
                exact[i * N + j] = gelu(s);
            }
        bool grad = ff_set_grad_enabled(false);
        ff_tensor *y = ff_linear_act(x, w, b, FF_UNARY_GELU_ERF);
        ff_ops_force_compose(FF_KIND_LINEAR, true);
        ff_tensor *yc = ff_linear_act(x, w, b, FF_UNARY_GELU_ERF);
        ff_ops_force_compose(FF_KIND_LINEAR, false);
        ff_set_grad_enabled(grad);
        CHECK(y && yc && ff_tensor_dtype(y) == FF_BF16 && ff_tensor_ndim(y) == 2 && ff_tensor_shape(y)[1] == N);
        CHECK(ff_test_values(y, got, M * N) == 0);
        double fused = worst_ulps(got, exact, M * N);
        CHECK(ff_test_values(yc, got, M * N) == 0);
        double composed = worst_ulps(got, exact, M * N);
        /* one rounding: half an ulp, plus the f32 sum's error and the GELU's (a few f32
         * ulps of the sum, about 1e-4 of a bf16 ulp); the composition's three roundings
         * (the last of them after GELU amplified the first two) reach about 3 ulps on
         * this data. cpu has no entry: both are the composition there. */
        if (!strcmp(backends[bi], "cpu_blas")) CHECK(fused <= 0.51);
        CHECK(composed <= 4);
        CHECK(strcmp(backends[bi], "cpu_blas") || composed > 0.51);
        free(hx), free(hw), free(hb), free(exact), free(got);
        RELEASE(x, w, b, y, yc);
    }
    CHECK(use("cpu") == FF_OK);
}

/* With a gradient wanted the op is matmul, add and act: the same values and gradients,
 * bit for bit, as those ops written out. */
static void test_autograd_is_the_composition(void)
{
    for (int bi = 0; bi < n_backends(); bi++) {
        CHECK(use(backends[bi]) == FF_OK);
        ff_tensor *x = ff_test_lcg_tensor(FF_F32, 3, SHAPE(2, 5, 24), 1, -1, 1);
        ff_tensor *w = ff_test_lcg_tensor(FF_F32, 2, SHAPE(7, 24), 2, -0.3, 0.3);
        ff_tensor *b = ff_test_lcg_tensor(FF_F32, 1, SHAPE(7), 3, -0.3, 0.3);
        CHECK(!ff_set_requires_grad(x, true) && !ff_set_requires_grad(w, true) && !ff_set_requires_grad(b, true));
        ff_tensor *y = ff_linear_act(x, w, b, FF_UNARY_SILU), *l = y ? ff_sum(y, 0, NULL, false) : NULL;
        CHECK(l && ff_backward(l, NULL, NULL) == FF_OK);
        ff_tensor *g1[3] = {ff_grad(x), ff_grad(w), ff_grad(b)};
        ff_tensor *gx = ff_clone(g1[0]), *gw = ff_clone(g1[1]), *gb = ff_clone(g1[2]);
        CHECK(!ff_zero_grad(x) && !ff_zero_grad(w) && !ff_zero_grad(b));
        ff_tensor *wt = ff_mT(w), *p = ff_matmul(x, wt), *pb = ff_add(p, b), *y2 = ff_unary(FF_UNARY_SILU, pb);
        ff_tensor *l2 = ff_sum(y2, 0, NULL, false);
        CHECK(l2 && ff_backward(l2, NULL, NULL) == FF_OK);
        ff_tensor *g2[3] = {ff_grad(x), ff_grad(w), ff_grad(b)};
        CHECK(ff_test_max_diff(y, y2) == 0);
        CHECK(ff_test_max_diff(gx, g2[0]) == 0 && ff_test_max_diff(gw, g2[1]) == 0 && ff_test_max_diff(gb, g2[2]) == 0);
        RELEASE(x, w, b, y, l, g1[0], g1[1], g1[2], g2[0], g2[1], g2[2], gx, gw, gb, wt, p, pb, y2, l2);
    }
    CHECK(use("cpu") == FF_OK);
}

/* f32 operands under a bf16 autocast region: the product in bf16 and the bias cast to
 * it, so y stays bf16 (PyTorch's rule), with no gradient wanted as with one. */
static void test_autocast_keeps_y_in_the_region_dtype(void)
{
    ff_tensor *x = ff_test_lcg_tensor(FF_F32, 2, SHAPE(4, 6), 4, -1, 1);
    ff_tensor *w = ff_test_lcg_tensor(FF_F32, 2, SHAPE(3, 6), 5, -1, 1);
    ff_tensor *b = ff_test_lcg_tensor(FF_F32, 1, SHAPE(3), 6, -1, 1);
    CHECK(ff_autocast_set(FF_BF16) == FF_OK);
    bool grad = ff_set_grad_enabled(false);
    ff_tensor *y = ff_linear_act(x, w, b, FF_LINEAR_NO_ACT);
    ff_set_grad_enabled(grad);
    CHECK(ff_autocast_set(FF_F32) == FF_OK);
    CHECK(y && ff_tensor_dtype(y) == FF_BF16);
    ff_tensor *wt = ff_mT(w), *p = ff_matmul(x, wt), *want = ff_add(p, b);
    CHECK(ff_test_max_diff(y, want) < 0.05);
    RELEASE(x, w, b, y, wt, p, want);
}

/* One process, shapes that differ in one size at a time and views at odd offsets, each
 * twice, with and without a ReLU: every result within a rounding of the f32 composition. */
static void test_shapes_and_views_in_one_process(void)
{
    static const int64_t dims[][3] = {{8, 12, 16}, {8, 20, 16}, {8, 12, 24}, {9, 12, 16}, {33, 17, 64}, {8, 12, 16}};
    for (int bi = 0; bi < n_backends(); bi++) {
        CHECK(use(backends[bi]) == FF_OK);
        bool grad = ff_set_grad_enabled(false);
        for (int half = 0; half < 2; half++) {
            ff_dtype dt = half ? FF_BF16 : FF_F32;
            double tol = half ? 1.0 / 128 : 1e-5;
            for (size_t i = 0; i < sizeof dims / sizeof dims[0]; i++)
                for (int off = 0; off < 2; off++)
                    for (int rep = 0; rep < 2; rep++) {
                        int64_t M = dims[i][0], K = dims[i][1], N = dims[i][2];
                        int act = (int)(i + rep) % 2 ? FF_UNARY_RELU : FF_LINEAR_NO_ACT;
                        /* row strides 40 and 32 whatever K is, so sizes alone tell calls apart, and
                         * offsets 0 and 1 differ in alignment alone */
                        ff_tensor *xw = ff_test_lcg_tensor(dt, 2, SHAPE(M, 40), 11 + (unsigned)i, -1, 1);
                        ff_tensor *x = ff_narrow(xw, 1, off, K); /* off 1: rows start 2 or 4 bytes in */
                        ff_tensor *ww = ff_test_lcg_tensor(dt, 2, SHAPE(N, 32), 12 + (unsigned)i, -0.5, 0.5);
                        ff_tensor *w = ff_narrow(ww, 1, 0, K);
                        ff_tensor *b = ff_test_lcg_tensor(dt, 1, SHAPE(N), 13 + (unsigned)i, -0.5, 0.5);
                        ff_tensor *y = ff_linear_act(x, w, b, act);
                        ff_tensor *x32 = ff_astype(x, FF_F32), *w32 = ff_astype(w, FF_F32), *b32 = ff_astype(b, FF_F32);
                        ff_tensor *wt = ff_mT(w32), *p = ff_matmul(x32, wt), *pb = ff_add(p, b32);
                        ff_tensor *want = act == FF_UNARY_RELU ? ff_relu(pb) : ff_clone(pb);
                        ff_tensor *z = want ? ff_zeros_like(want) : NULL;
                        double d = ff_test_max_diff(y, want), scale = fmax(1.0, ff_test_max_diff(want, z));
                        if (!(d <= tol * scale))
                            fprintf(stderr, "%s [%lld x %lld] @ [%lld x %lld]^T, offset %d, act %d: off by %g\n",
                                    ff_dtype_name(dt), (long long)M, (long long)K, (long long)N, (long long)K, off, act, d);
                        CHECK(d <= tol * scale);
                        RELEASE(xw, x, ww, w, b, y, x32, w32, b32, wt, p, pb, want, z);
                    }
        }
        ff_set_grad_enabled(grad);
    }
    CHECK(use("cpu") == FF_OK);
}

static void test_bad_arguments(void)
{
    ff_tensor *x = ff_zeros(2, SHAPE(4, 6), FF_F32), *w = ff_zeros(2, SHAPE(3, 6), FF_F32), *b = ff_zeros(1, SHAPE(3), FF_F32);
    ff_tensor *w5 = ff_zeros(2, SHAPE(3, 5), FF_F32), *b4 = ff_zeros(1, SHAPE(4), FF_F32), *w1 = ff_zeros(1, SHAPE(6), FF_F32);
    CHECK_ERROR(ff_linear_act(NULL, w, b, FF_LINEAR_NO_ACT) == NULL, FF_ERR_INVALID, "ff_linear_act: NULL x");
    CHECK_ERROR(ff_linear_act(x, w5, b, FF_LINEAR_NO_ACT) == NULL, FF_ERR_INVALID, "x [4, 6], weight [3, 5]");
    CHECK_ERROR(ff_linear_act(x, w, b4, FF_LINEAR_NO_ACT) == NULL, FF_ERR_INVALID, "bias [4]");
    CHECK_ERROR(ff_linear_act(x, w1, NULL, FF_LINEAR_NO_ACT) == NULL, FF_ERR_INVALID, "weight [N, K]");
    CHECK_ERROR(ff_linear_act(x, w, b, FF_UNARY_COUNT) == NULL, FF_ERR_INVALID, "neither an ff_unary_op");
    RELEASE(x, w, b, w5, b4, w1);
}

FF_TEST_MAIN("linear_act", TEST(test_bf16_gelu_rounds_once), TEST(test_autograd_is_the_composition),
             TEST(test_autocast_keeps_y_in_the_region_dtype), TEST(test_shapes_and_views_in_one_process),
             TEST(test_bad_arguments))
