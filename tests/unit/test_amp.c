/* Mixed precision (include/ff/amp.h): which ops autocast changes and to what, that the
 * casts are differentiable so f32 parameters get f32 gradients, that backward runs with
 * autocast off, and the grad scaler: exact unscaling, skipped steps on overflow, the
 * scale's back-off and growth, and the f16 gradient underflow it exists to prevent. */
#include <math.h>
#include <string.h>

#include "ff_test.h"
#include "ops_impl.h" /* ff_autocast_cache_stats */

static ff_tensor *leaf(ff_dtype dt, int ndim, const int64_t *shape, const double *v)
{
    ff_tensor *t = ff_test_tensor(dt, ndim, shape, v);
    ff_set_requires_grad(t, true);
    return t;
}

static ff_tensor *randn(int64_t r, int64_t c, uint64_t seed)
{
    return ff_rand_normal(2, SHAPE(r, c), FF_F32, 0, 1, seed);
}

static void test_autocast_mode(void)
{
    CHECK(ff_autocast_get() == FF_F32);
    CHECK_ERROR(ff_autocast_set(FF_F64) != FF_OK, FF_ERR_INVALID, "ff_autocast_set");
    CHECK(ff_autocast_get() == FF_F32); /* a refused call changes nothing */
    CHECK(ff_autocast_set(FF_BF16) == FF_OK && ff_autocast_get() == FF_BF16);
    CHECK(ff_autocast_set(FF_F32) == FF_OK && ff_autocast_get() == FF_F32);
}

/* matmul-like ops go to the autocast dtype, with the values of casting first */
static void test_matmul_and_conv_cast_down(void)
{
    ff_tensor *a = randn(5, 7, 1), *b = randn(7, 3, 2);
    ff_tensor *a64 = ff_astype(a, FF_F64), *b64 = ff_astype(b, FF_F64);
    ff_dtype modes[2] = {FF_BF16, FF_F16};
    for (int m = 0; m < 2; m++) {
        ff_tensor *ah = ff_astype(a, modes[m]), *bh = ff_astype(b, modes[m]);
        ff_tensor *want = ff_matmul(ah, bh);
        CHECK(ff_autocast_set(modes[m]) == FF_OK);
        ff_tensor *got = ff_matmul(a, b), *mixed = ff_matmul(ah, b), *wide = ff_matmul(a64, b64);
        ff_tensor *x = ff_rand_normal(4, SHAPE(2, 3, 6, 6), FF_F32, 0, 1, 3), *w = ff_rand_normal(4, SHAPE(4, 3, 3, 3), FF_F32, 0, 1, 4);
        ff_tensor *y = ff_conv2d(x, w, NULL, 1, 1, 1, 1);
        ff_tensor *s = ff_add(a, a); /* not a matmul-like op: unchanged */
        CHECK(ff_autocast_set(FF_F32) == FF_OK);
        CHECK(got && ff_tensor_dtype(got) == modes[m] && mixed && ff_tensor_dtype(mixed) == modes[m]);
        CHECK(wide && ff_tensor_dtype(wide) == FF_F64); /* f64 is left alone */
        CHECK(y && ff_tensor_dtype(y) == modes[m] && s && ff_tensor_dtype(s) == FF_F32);
        double gv[15], wv[15];
        CHECK(ff_test_values(got, gv, 15) == 0 && ff_test_values(want, wv, 15) == 0);
        CHECK(memcmp(gv, wv, sizeof gv) == 0);
        RELEASE(ah, bh, want, got, mixed, wide, x, w, y, s);
    }
    RELEASE(a, b, a64, b64);
}

/* softmax, losses and norms compute half inputs in f32 under autocast, not without it */
static void test_precise_ops_cast_up(void)
{
    ff_tensor *z = randn(4, 10, 5), *zh = ff_astype(z, FF_BF16);
    ff_tensor *y = ff_test_tensor(FF_I64, 1, SHAPE(4), VALS(1, 0, 9, 3));
    ff_tensor *off = ff_softmax(zh, 1);
    CHECK(off && ff_tensor_dtype(off) == FF_BF16);
    CHECK(ff_autocast_set(FF_BF16) == FF_OK);
    ff_tensor *sm = ff_softmax(zh, 1), *lsm = ff_log_softmax(zh, 1), *ce = ff_cross_entropy(zh, y);
    ff_tensor *ln = ff_layer_norm(zh, 1, NULL, NULL, 1e-5), *mse = ff_mse_loss(zh, zh);
    CHECK(ff_autocast_set(FF_F32) == FF_OK);
    CHECK(sm && ff_tensor_dtype(sm) == FF_F32 && lsm && ff_tensor_dtype(lsm) == FF_F32);
    CHECK(ce && ff_tensor_dtype(ce) == FF_F32 && ln && ff_tensor_dtype(ln) == FF_F32);
    CHECK(mse && ff_tensor_dtype(mse) == FF_F32);
    ff_tensor *z32 = ff_astype(zh, FF_F32), *want = ff_cross_entropy(z32, y);
    double a = 0, b = 1;
    CHECK(ff_tensor_item(ce, &a) == FF_OK && ff_tensor_item(want, &b) == FF_OK && a == b);
    RELEASE(z, zh, y, off, sm, lsm, ce, ln, mse, z32, want);
}

/* A Linear layer under autocast: bf16 output, f32 gradients close to the f32 ones;
 * backward itself runs with autocast off even when called inside the region. */
static void test_linear_training_gradients(void)
{
    ff_module *lin = ff_linear(8, 4, true, 11);
    ff_tensor *ps[2];
    CHECK(ff_module_parameters(lin, ps, 2) == 2);
    ff_tensor *x = randn(16, 8, 12);
    double g32[2][32];
    for (int pass = 0; pass < 2; pass++) {
        ff_module_zero_grad(lin);
        if (pass) CHECK(ff_autocast_set(FF_BF16) == FF_OK);
        ff_tensor *out = ff_module_forward(lin, x), *sq = out ? ff_mul(out, out) : NULL;
        ff_tensor *loss = sq ? ff_mean(sq, 0, NULL, false) : NULL;
        CHECK(out && ff_tensor_dtype(out) == (pass ? FF_BF16 : FF_F32));
        CHECK(loss && ff_backward(loss, NULL, NULL) == FF_OK);
        CHECK(ff_autocast_get() == (pass ? FF_BF16 : FF_F32)); /* restored after backward */
        CHECK(ff_autocast_set(FF_F32) == FF_OK);
        for (int i = 0; i < 2; i++) {
            ff_tensor *g = ff_grad(ps[i]);
            CHECK(g && ff_tensor_dtype(g) == FF_F32);
            double v[32];
            int n = i ? 4 : 32;
            CHECK(g && ff_tensor_numel(g) == n && ff_test_values(g, v, 32) == 0);
            for (int k = 0; k < n; k++) {
                if (!pass) g32[i][k] = v[k];
                else CHECK_NEAR(v[k], g32[i][k], 0.03 * fabs(g32[i][k]) + 0.02);
            }
            ff_tensor_release(g);
        }
        RELEASE(out, sq, loss);
    }
    ff_tensor_release(x);
    ff_module_release(lin);
}

/* loss = 1e-6 * mean(x @ w), the product in f16 and the rest in f32: the gradient that
 * reaches the f16 product, 1e-6 / 1024 per element, is below f16's smallest subnormal
 * (6e-8), so without scaling it flushes to zero; with the scaler it survives. */
static void f16_step(ff_tensor *x, ff_tensor *w, ff_grad_scaler *sc)
{
    CHECK(ff_autocast_set(FF_F16) == FF_OK);
    ff_tensor *y = ff_matmul(x, w);
    CHECK(ff_autocast_set(FF_F32) == FF_OK);
    ff_tensor *y32 = y ? ff_astype(y, FF_F32) : NULL, *s = y32 ? ff_mean(y32, 0, NULL, false) : NULL;
    ff_tensor *loss = s ? ff_mul_scalar(s, 1e-6) : NULL;
    ff_tensor *scaled = sc ? ff_grad_scaler_scale(sc, loss) : ff_tensor_retain(loss);
    CHECK(scaled && ff_backward(scaled, NULL, NULL) == FF_OK);
    RELEASE(y, y32, s, loss, scaled);
}

static void test_scaler_rescues_f16_gradients(void)
{
    ff_tensor *x = ff_full(2, SHAPE(64, 32), FF_F32, 0.5), *w = ff_full(2, SHAPE(32, 16), FF_F32, 0.25);
    ff_set_requires_grad(w, true);
    f16_step(x, w, NULL);
    ff_tensor *g = ff_grad(w);
    double v[512];
    CHECK(g && ff_test_values(g, v, 512) == 0 && v[0] == 0 && v[511] == 0); /* underflowed */
    ff_tensor_release(g);
    ff_zero_grad(w);
    ff_optimizer *opt = ff_sgd(&w, 1, &(ff_sgd_opts){.lr = 0.0});
    ff_grad_scaler *sc = ff_grad_scaler_new(NULL);
    CHECK(opt && sc && ff_grad_scaler_get_scale(sc) == 65536.0);
    f16_step(x, w, sc);
    bool stepped = false;
    CHECK(ff_grad_scaler_step(sc, opt, &stepped) == FF_OK && stepped);
    g = ff_grad(w);
    /* d loss / d w[k][j] = 1e-6 / (64 * 16) * sum_i x[i][k] = 1e-6 * 0.5 / 16 */
    CHECK(g && ff_test_values(g, v, 512) == 0);
    CHECK_NEAR(v[0], 1e-6 * 0.5 / 16, 3e-3 * 1e-6 * 0.5 / 16); /* f16 rounding of the scaled gradients */
    CHECK(v[0] == v[511]);
    RELEASE(x, w, g);
    ff_optimizer_release(opt);
    ff_grad_scaler_free(sc);
}

static void test_scaler_skips_overflow_and_adapts(void)
{
    ff_tensor *p = leaf(FF_F32, 1, SHAPE(3), VALS(1, 2, 3));
    ff_optimizer *opt = ff_sgd(&p, 1, &(ff_sgd_opts){.lr = 0.5});
    ff_grad_scaler_opts o = ff_grad_scaler_defaults();
    o.init_scale = 1024, o.growth_interval = 2;
    ff_grad_scaler *sc = ff_grad_scaler_new(&o);
    CHECK(opt && sc);
    double vals[3];
    for (int step = 0; step < 4; step++) {
        /* step 1 overflows: loss * scale is inf, so every gradient is NaN or inf */
        double c = step == 1 ? INFINITY : 1.0;
        ff_tensor *sq = ff_mul(p, p), *l = sq ? ff_sum(sq, 0, NULL, false) : NULL, *lc = l ? ff_mul_scalar(l, c) : NULL;
        ff_tensor *scaled = ff_grad_scaler_scale(sc, lc);
        CHECK(ff_optimizer_zero_grad(opt) == FF_OK && scaled && ff_backward(scaled, NULL, NULL) == FF_OK);
        CHECK(ff_test_values(p, vals, 3) == 0);
        double before = vals[0], scale = ff_grad_scaler_get_scale(sc);
        CHECK(ff_grad_scaler_unscale(sc, opt) == FF_OK && ff_grad_scaler_unscale(sc, opt) == FF_OK); /* once */
        bool stepped = true;
        CHECK(ff_grad_scaler_step(sc, opt, &stepped) == FF_OK);
        CHECK(ff_test_values(p, vals, 3) == 0);
        if (step == 1) {
            CHECK(!stepped && vals[0] == before && ff_grad_scaler_get_scale(sc) == scale / 2);
        } else {
            CHECK(stepped && vals[0] == 0 && vals[2] == 0); /* p - 0.5 * 2p: the unscaled gradient, exactly */
            CHECK(ff_grad_scaler_get_scale(sc) == (step == 3 ? scale * 2 : scale)); /* 2 clean steps: grows */
        }
        RELEASE(sq, l, lc, scaled);
        /* restart from the same point each step */
        ff_tensor *fresh = ff_test_tensor(FF_F32, 1, SHAPE(3), VALS(1, 2, 3));
        bool prev = ff_set_grad_enabled(false);
        CHECK(ff_copy_(p, fresh) == FF_OK);
        ff_set_grad_enabled(prev);
        ff_tensor_release(fresh);
    }
    CHECK(ff_grad_scaler_skipped_steps(sc) == 1);
    o.backoff_factor = 1.0;
    CHECK_ERROR(ff_grad_scaler_new(&o) == NULL, FF_ERR_INVALID, "backoff_factor");
    CHECK_ERROR(ff_grad_scaler_scale(sc, NULL) == NULL, FF_ERR_INVALID, "loss");
    ff_grad_scaler_free(sc);
    ff_optimizer_release(opt);
    ff_tensor_release(p);
}

/* n values of t, as doubles */
static void values(const ff_tensor *t, double *v, int64_t n) { CHECK(t && ff_test_values(t, v, n) == 0); }

/* The autocast cache: a parameter used twice in a region is cast once (same values as a
 * fresh cast, gradients from both uses), an in-place update inside the region or an
 * optimizer step between regions gives a fresh cast, and leaving the region releases
 * every cached reference. */
static void test_autocast_weight_cache(void)
{
    long live0 = ff_debug_live_tensors();
    ff_tensor *w = randn(6, 5, 21), *x32 = randn(4, 6, 22), *x = ff_astype(x32, FF_BF16);
    ff_set_requires_grad(w, true);
    int64_t c0, h0, c1, h1;
    double got[20], want[20];
    CHECK(ff_autocast_set(FF_BF16) == FF_OK);
    ff_autocast_cache_stats(&c0, &h0);
    ff_tensor *y1 = ff_matmul(x, w), *y2 = ff_matmul(x, w);
    ff_autocast_cache_stats(&c1, &h1);
    CHECK(c1 - c0 == 1 && h1 - h0 == 1); /* x is bf16 already: w's one cast, then a hit */
    ff_tensor *wb = ff_astype(w, FF_BF16), *fresh = ff_matmul(x, wb);
    values(y2, got, 20), values(fresh, want, 20);
    for (int i = 0; i < 20; i++) CHECK(got[i] == want[i]);
    /* gradients reach w from both uses of the one cast */
    ff_tensor *s = ff_add(y1, y2), *loss = s ? ff_sum(s, 0, NULL, false) : NULL;
    CHECK(loss && ff_backward(loss, NULL, NULL) == FF_OK);
    ff_tensor *g = ff_grad(w), *xs = ff_sum(x32, 1, (int[]){0}, false); /* d/dw sum(x w) = colsum(x) per row */
    double gv[30], xv[6];
    values(g, gv, 30), values(xs, xv, 6);
    for (int i = 0; i < 6; i++)
        for (int j = 0; j < 5; j++) CHECK_NEAR(gv[i * 5 + j], 2 * xv[i], 0.02 * fabs(xv[i]) + 0.05);
    /* a second forward and backward in the region through the same cached cast: its
     * history survives the first backward, the gradient accumulates to 3 colsum(x) */
    ff_tensor *y5 = ff_matmul(x, w), *loss5 = y5 ? ff_sum(y5, 0, NULL, false) : NULL;
    CHECK(loss5 && ff_backward(loss5, NULL, NULL) == FF_OK);
    ff_tensor *g3 = ff_grad(w);
    values(g3, gv, 30);
    for (int i = 0; i < 6; i++)
        for (int j = 0; j < 5; j++) CHECK_NEAR(gv[i * 5 + j], 3 * xv[i], 0.03 * fabs(xv[i]) + 0.05);
    RELEASE(y5, loss5, g3);
    /* an in-place update inside the region: the version moved, so a fresh cast */
    FF_NO_GRAD_BEGIN
    CHECK(ff_mul_scalar_(w, 0.5) == FF_OK); /* exact: halving */
    FF_NO_GRAD_END
    ff_autocast_cache_stats(&c0, &h0);
    ff_tensor *y3 = ff_matmul(x, w);
    ff_autocast_cache_stats(&c1, &h1);
    CHECK(c1 - c0 == 1 && h1 == h0);
    values(y3, got, 20);
    for (int i = 0; i < 20; i++) CHECK(got[i] == want[i] * 0.5);
    CHECK(ff_autocast_set(FF_F32) == FF_OK);
    /* an optimizer step between regions: the next region casts the new values */
    ff_sgd_opts so = ff_sgd_defaults(0.1);
    ff_optimizer *opt = ff_sgd(&w, 1, &so);
    CHECK(opt && ff_optimizer_step(opt) == FF_OK);
    ff_tensor *wb2 = ff_astype(w, FF_BF16), *want2 = ff_matmul(x, wb2);
    CHECK(ff_autocast_set(FF_BF16) == FF_OK);
    ff_autocast_cache_stats(&c0, &h0);
    ff_tensor *y4 = ff_matmul(x, w);
    ff_autocast_cache_stats(&c1, &h1);
    CHECK(c1 - c0 == 1 && h1 == h0);
    values(y4, got, 20), values(want2, want, 20);
    for (int i = 0; i < 20; i++) CHECK(got[i] == want[i]);
    CHECK(ff_autocast_set(FF_F32) == FF_OK);
    ff_optimizer_release(opt);
    RELEASE(w, x32, x, y1, y2, wb, fresh, s, loss, g, xs, y3, wb2, want2, y4);
    CHECK(ff_debug_live_tensors() == live0); /* the region's end dropped the cache's references */
}

FF_TEST_MAIN("amp", TEST(test_autocast_mode), TEST(test_matmul_and_conv_cast_down), TEST(test_precise_ops_cast_up),
             TEST(test_linear_training_gradients), TEST(test_scaler_rescues_f16_gradients),
             TEST(test_scaler_skips_overflow_and_adapts), TEST(test_autocast_weight_cache))
