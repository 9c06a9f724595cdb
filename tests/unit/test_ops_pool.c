/* include/ff/pool.h: adaptive pooling and the pooling options (ops/adaptive_pool.c,
 * ops/pool_nd.c): values worked out by hand from PyTorch's window rules, indices, the
 * backend entry against the composition, gradients by ff_gradcheck, error messages. */
#include <math.h>

#include "ff_test.h"

/* ops/common.c, exported for tests (the switch FF_POOL=compose flips without setenv) */
void ff_ops_force_compose(ff_op_kind kind, bool on);

static ff_tensor *T(int nd, const int64_t *shape, const double *v) { return ff_test_tensor(FF_F64, nd, shape, v); }

/* [0 1 2 3 4] to 3: windows [0, 2), [1, 4), [3, 5); on the entry and composed. */
static void check_adaptive_avg_known(void)
{
    ff_tensor *x = T(3, SHAPE(1, 1, 5), VALS(0, 1, 2, 3, 4));
    ff_tensor *g = T(4, SHAPE(1, 2, 2, 2), VALS(1, 2, 3, 4, -1, 0, 0, 5));
    for (int compose = 0; compose < 2; compose++) {
        ff_ops_force_compose(FF_KIND_POOL2D, compose);
        ff_tensor *y = ff_adaptive_avg_pool(x, 1, SHAPE(3));
        CHECK_TENSOR(y, 3, SHAPE(1, 1, 3), VALS(0.5, 2, 3.5), 1e-15);
        ff_tensor *m = ff_adaptive_avg_pool(g, 2, SHAPE(1, 1)); /* global */
        CHECK_TENSOR(m, 4, SHAPE(1, 2, 1, 1), VALS(2.5, 1), 1e-15);
        RELEASE(y, m);
    }
    ff_ops_force_compose(FF_KIND_POOL2D, false);
    RELEASE(x, g);
}

/* [1 3 3 0 2] to 2: windows [0, 3) and [2, 5) both hold 3; each picks its first. */
static void check_adaptive_max_indices(void)
{
    ff_tensor *x = T(3, SHAPE(1, 1, 5), VALS(1, 3, 3, 0, 2)), *ix = NULL;
    CHECK(ff_set_requires_grad(x, true) == FF_OK);
    ff_tensor *y = ff_adaptive_max_pool(x, 1, SHAPE(2), &ix);
    CHECK_TENSOR(y, 3, SHAPE(1, 1, 2), VALS(3, 3), 0);
    CHECK(ix && ff_tensor_dtype(ix) == FF_I64);
    CHECK_TENSOR(ix, 3, SHAPE(1, 1, 2), VALS(1, 2), 0);
    ff_tensor *s = ff_sum(y, 0, NULL, false);
    CHECK(s && ff_backward(s, NULL, NULL) == FF_OK);
    ff_tensor *gx = ff_grad(x);
    CHECK_TENSOR(gx, 3, SHAPE(1, 1, 5), VALS(0, 1, 1, 0, 0), 0);
    RELEASE(x, ix, y, s, gx);
}

/* 0..4: kernel 2, stride 2 in ceil mode keeps a last half window; dilation 2 skips one. */
static void check_max_pool_options(void)
{
    ff_tensor *x = T(3, SHAPE(1, 1, 5), VALS(0, 1, 2, 3, 4)), *ix = NULL;
    ff_pool_options o = {.kernel = {2}, .stride = {2}, .dilation = {1}, .ceil_mode = true};
    ff_tensor *y = ff_max_pool(x, 1, &o, &ix);
    CHECK_TENSOR(y, 3, SHAPE(1, 1, 3), VALS(1, 3, 4), 0);
    CHECK_TENSOR(ix, 3, SHAPE(1, 1, 3), VALS(1, 3, 4), 0);
    ff_pool_options d = {.kernel = {2}, .stride = {1}, .dilation = {2}};
    ff_tensor *yd = ff_max_pool(x, 1, &d, NULL);
    CHECK_TENSOR(yd, 3, SHAPE(1, 1, 3), VALS(2, 3, 4), 0);
    RELEASE(x, ix, y, yd);
}

/* [1 2 3 4], kernel 3, stride 1, padding 1: the divisor with and without the padding,
 * and overridden. */
static void check_avg_pool_options(void)
{
    ff_tensor *x = T(3, SHAPE(1, 1, 4), VALS(1, 2, 3, 4));
    ff_pool_options o = {.kernel = {3}, .stride = {1}, .padding = {1}, .dilation = {1}, .count_include_pad = false};
    ff_tensor *a = ff_avg_pool(x, 1, &o);
    CHECK_TENSOR(a, 3, SHAPE(1, 1, 4), VALS(1.5, 2, 3, 3.5), 1e-15);
    o.count_include_pad = true;
    ff_tensor *b = ff_avg_pool(x, 1, &o);
    CHECK_TENSOR(b, 3, SHAPE(1, 1, 4), VALS(1, 2, 3, 7.0 / 3), 1e-15);
    o.divisor_override = 2;
    ff_tensor *c = ff_avg_pool(x, 1, &o);
    CHECK_TENSOR(c, 3, SHAPE(1, 1, 4), VALS(1.5, 3, 4.5, 3.5), 1e-15);
    RELEASE(x, a, b, c);
}

static ff_tensor *f_adaptive_avg(int n, ff_tensor *const *in, void *u)
{
    (void)n, (void)u;
    return ff_adaptive_avg_pool(in[0], 2, SHAPE(3, 2));
}

static ff_tensor *f_avg_ceil(int n, ff_tensor *const *in, void *u)
{
    (void)n, (void)u;
    ff_pool_options o = {.kernel = {3, 2}, .stride = {2, 2}, .padding = {1, 0}, .dilation = {1, 1}, .ceil_mode = true};
    return ff_avg_pool(in[0], 2, &o);
}

static void check_pool_grad(void)
{
    ff_tensor *x = ff_rand_normal(4, SHAPE(2, 2, 5, 5), FF_F64, 0, 1, 7);
    ff_gradcheck_opts o = {.eps = 1e-6, .atol = 1e-6, .rtol = 1e-4};
    CHECK(ff_gradcheck(f_adaptive_avg, NULL, 1, &x, &o) == FF_OK);
    CHECK(ff_gradcheck(f_avg_ceil, NULL, 1, &x, &o) == FF_OK);
    RELEASE(x);
}

static void check_pool_errors(void)
{
    ff_tensor *x = ff_zeros(4, SHAPE(1, 1, 4, 4), FF_F64), *xi = ff_zeros(4, SHAPE(1, 1, 4, 4), FF_I64);
    ff_tensor *ix = NULL;
    CHECK_ERROR(ff_adaptive_avg_pool(x, 4, SHAPE(1, 1, 1, 1)) == NULL, FF_ERR_INVALID, "nd must be 1, 2 or 3");
    CHECK_ERROR(ff_adaptive_max_pool(x, 1, SHAPE(2), &ix) == NULL && !ix, FF_ERR_INVALID, "rank 2 or 3");
    CHECK_ERROR(ff_adaptive_avg_pool(x, 2, SHAPE(-1, 2)) == NULL, FF_ERR_INVALID, "output size -1");
    CHECK_ERROR(ff_adaptive_avg_pool(xi, 2, SHAPE(2, 2)) == NULL, FF_ERR_INVALID, "floating point, got i64");
    ff_pool_options bad = {.kernel = {2, 2}, .stride = {1, 1}, .padding = {2, 0}, .dilation = {1, 1}};
    CHECK_ERROR(ff_max_pool(x, 2, &bad, NULL) == NULL, FF_ERR_INVALID, "ff_max_pool: axis 0: kernel 2");
    ff_pool_options dil = {.kernel = {2, 2}, .stride = {1, 1}, .dilation = {2, 1}};
    CHECK_ERROR(ff_avg_pool(x, 2, &dil) == NULL, FF_ERR_INVALID, "avg: dilation 1");
    ff_pool_options big = {.kernel = {5, 2}, .stride = {1, 1}, .dilation = {1, 1}};
    CHECK_ERROR(ff_max_pool(x, 2, &big, NULL) == NULL, FF_ERR_INVALID, "larger than the padded input");
    RELEASE(x, xi);
}

/* [1..6] as 2 x 3, 2 x 2 blocks: two columns; fold sums each element once per block. */
static void check_unfold_fold(void)
{
    ff_tensor *x = T(4, SHAPE(1, 1, 2, 3), VALS(1, 2, 3, 4, 5, 6));
    ff_unfold_params p = {{2, 2}, {1, 1}, {0, 0}, {1, 1}};
    ff_tensor *u = ff_unfold(x, &p);
    CHECK_TENSOR(u, 3, SHAPE(1, 4, 2), VALS(1, 2, 2, 3, 4, 5, 5, 6), 0);
    ff_tensor *f = u ? ff_fold(u, SHAPE(2, 3), &p) : NULL;
    CHECK_TENSOR(f, 4, SHAPE(1, 1, 2, 3), VALS(1, 4, 3, 4, 10, 6), 0);
    CHECK_ERROR(ff_fold(u, SHAPE(3, 3), &p) == NULL, FF_ERR_INVALID, "does not fold into (3, 3)");
    ff_unfold_params bad = {{2, 2}, {0, 1}, {0, 0}, {1, 1}};
    CHECK_ERROR(ff_unfold(x, &bad) == NULL, FF_ERR_INVALID, "ff_unfold: axis 0: kernel 2, dilation 0");
    RELEASE(x, u, f);
}

/* The identity theta's grid with align_corners hits every pixel centre: grid_sample
 * returns x itself in every mode. */
static void check_grid_sample_identity(void)
{
    ff_tensor *x = T(4, SHAPE(1, 1, 2, 3), VALS(1, 2, 3, 4, 5, 6));
    ff_tensor *th = T(3, SHAPE(1, 2, 3), VALS(1, 0, 0, 0, 1, 0));
    ff_tensor *g = ff_affine_grid(th, SHAPE(1, 1, 2, 3), true);
    CHECK_TENSOR(g, 4, SHAPE(1, 2, 3, 2), VALS(-1, -1, 0, -1, 1, -1, -1, 1, 0, 1, 1, 1), 1e-15);
    for (int mode = 0; mode < 2; mode++)
        for (int pad = 0; pad < 3; pad++) {
            ff_tensor *y = g ? ff_grid_sample(x, g, mode, pad, true) : NULL;
            CHECK_TENSOR(y, 4, SHAPE(1, 1, 2, 3), VALS(1, 2, 3, 4, 5, 6), 1e-12);
            RELEASE(y);
        }
    CHECK_ERROR(ff_grid_sample(x, g, 2, 0, true) == NULL, FF_ERR_INVALID, "mode 2 (0 bilinear, 1 nearest)");
    CHECK_ERROR(ff_affine_grid(th, SHAPE(2, 1, 2, 3), true) == NULL, FF_ERR_INVALID, "theta [N, 2, 3]");
    RELEASE(x, th, g);
}

FF_TEST_MAIN("ops_pool", TEST(check_adaptive_avg_known), TEST(check_adaptive_max_indices),
             TEST(check_max_pool_options), TEST(check_avg_pool_options), TEST(check_pool_grad),
             TEST(check_pool_errors), TEST(check_unfold_fold), TEST(check_grid_sample_identity))
