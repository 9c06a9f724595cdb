/* Arguments at the edge of what an op takes (issue 30): conv2d strides near INT64_MAX
 * (one window, computed as PyTorch does, on the entry path and the composition alike)
 * and paddings that overflow, interpolate's scales (NaN, inf, <= 0: a clear error),
 * einsum with more operands than one step's scratch arena holds, with and without grad. */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include <stdint.h>
#include <stdlib.h>

#include "ff_test.h"

/* y = conv2d(x, w, stride, pad 1) and the gradients of sum(y * y) to x and w. */
static void conv_run(const char *mode, ff_tensor *x, ff_tensor *w, int64_t sh, int64_t sw, double *y, double *gx,
                     double *gw)
{
    if (mode) setenv("FF_CONV2D", mode, 1);
    else unsetenv("FF_CONV2D");
    ff_tensor *out = ff_conv2d(x, w, NULL, sh, sw, 1, 1), *o2 = out ? ff_mul(out, out) : NULL;
    ff_tensor *l = o2 ? ff_sum(o2, 0, NULL, false) : NULL, *g[2] = {NULL, NULL}, *in[2] = {x, w};
    CHECK(out && ff_tensor_ndim(out) == 4 && ff_tensor_shape(out)[2] == 1 && ff_tensor_shape(out)[3] == 1);
    CHECK(l && ff_autograd_grad(l, NULL, 2, in, g, NULL) == FF_OK);
    CHECK(out && ff_test_values(out, y, 2) == 0);
    CHECK(g[0] && ff_test_values(g[0], gx, 16) == 0);
    CHECK(g[1] && ff_test_values(g[1], gw, 18) == 0);
    RELEASE(out, o2, l, g[0], g[1]);
    unsetenv("FF_CONV2D");
}

/* A 4x4 input padded to 6x6 under a 3x3 kernel: any stride >= 4 gives the one window at
 * (0, 0), so INT64_MAX must give what stride 6 gives, forward and backward, on the
 * backend's entries (cpu_blas: oneDNN, which refuses such strides) and composed (whose
 * strided slice once dropped the gradient). */
static void check_conv_huge_stride(void)
{
    ff_tensor *x = ff_rand_normal(4, SHAPE(1, 1, 4, 4), FF_F64, 0, 1, 31);
    ff_tensor *w = ff_rand_normal(4, SHAPE(2, 1, 3, 3), FF_F64, 0, 1, 32);
    CHECK(ff_set_requires_grad(x, true) == FF_OK && ff_set_requires_grad(w, true) == FF_OK);
    const char *modes[] = {NULL, "compose"};
    for (int m = 0; m < 2; m++) {
        double y[2][2], gx[2][16], gw[2][18];
        conv_run(modes[m], x, w, 6, 6, y[0], gx[0], gw[0]);
        conv_run(modes[m], x, w, INT64_MAX, INT64_MAX, y[1], gx[1], gw[1]);
        for (int i = 0; i < 2; i++) CHECK_NEAR(y[1][i], y[0][i], 1e-12);
        for (int i = 0; i < 16; i++) CHECK_NEAR(gx[1][i], gx[0][i], 1e-12);
        for (int i = 0; i < 18; i++) CHECK_NEAR(gw[1][i], gw[0][i], 1e-12);
        double nonzero = 0;
        for (int i = 0; i < 16; i++) nonzero += fabs(gx[1][i]);
        CHECK(nonzero > 0); /* the window's inputs get a gradient */
    }
    RELEASE(x, w);
}

static void check_conv_overflow(void)
{
    ff_tensor *x = ff_zeros(4, SHAPE(1, 1, 4, 4), FF_F32), *w = ff_zeros(4, SHAPE(1, 1, 3, 3), FF_F32);
    CHECK_ERROR(!ff_conv2d(x, w, NULL, 1, 1, INT64_MAX, 0), FF_ERR_OVERFLOW, "ff_conv2d: padded size");
    CHECK_ERROR(!ff_conv2d(x, w, NULL, 1, 1, INT64_MAX / 2 - 1, 0), FF_ERR_OVERFLOW, "ff_conv2d: padded size");
    CHECK_ERROR(!ff_conv2d(x, w, NULL, 0, 1, 0, 0), FF_ERR_INVALID, "ff_conv2d: stride (0, 1) must be >= 1");
    CHECK_ERROR(!ff_conv2d(x, w, NULL, INT64_MIN, 1, 0, 0), FF_ERR_INVALID, "ff_conv2d: stride");
    RELEASE(x, w);
}

static void check_interpolate_scales(void)
{
    ff_tensor *x = ff_test_tensor(FF_F32, 3, SHAPE(1, 1, 4), VALS(1, 2, 3, 4));
    const double bad[] = {NAN, INFINITY, -INFINITY, 0.0, -0.5};
    for (int i = 0; i < 5; i++)
        for (int mode = 0; mode < 2; mode++)
            CHECK_ERROR(!ff_interpolate(x, 1, SHAPE(8), &bad[i], (ff_interp_mode)mode, false), FF_ERR_INVALID,
                        "ff_interpolate: scale");
    /* a huge scale (a tiny scale_factor) is odd but defined: every output past the first
     * takes the last input */
    ff_tensor *y = ff_interpolate(x, 1, SHAPE(3), VALS(1e300), FF_INTERP_NEAREST, false);
    CHECK_TENSOR(y, 3, SHAPE(1, 1, 3), VALS(1, 4, 4), 0);
    ff_tensor *z = ff_interpolate(x, 1, SHAPE(8), VALS(0.5), FF_INTERP_NEAREST, false); /* still fine */
    CHECK_TENSOR(z, 3, SHAPE(1, 1, 8), VALS(1, 1, 2, 2, 3, 3, 4, 4), 0);
    RELEASE(x, y, z);
}

/* 27 operands [2] contracted to a scalar: the product of their sums. Each step's
 * intermediates once all shared one arena of 32, so this failed even without grad. */
static void check_einsum_many_operands(void)
{
    enum { N = 27 };
    ff_tensor *ops[N];
    char eq[2 * N + 4] = {0};
    double want = 1;
    for (int k = 0; k < N; k++) {
        double a = 0.5, b = 0.5 + 0.01 * k;
        ops[k] = ff_test_tensor(FF_F64, 1, SHAPE(2), VALS(a, b));
        want *= a + b;
        eq[2 * k] = (char)(k < 26 ? 'a' + k : 'A' + k - 26);
        eq[2 * k + 1] = k + 1 < N ? ',' : '-';
    }
    eq[2 * N] = '>';
    ff_tensor *r = ff_einsum(eq, N, ops);
    CHECK_TENSOR(r, 0, NULL, VALS(want), 1e-12 * want);
    /* and with grad: d(prod)/d ops[0][i] = prod / sum(ops[0]) = want / 1.0 */
    CHECK(ff_set_requires_grad(ops[0], true) == FF_OK);
    ff_tensor *rg = ff_einsum(eq, N, ops), *g = NULL;
    CHECK(rg && ff_autograd_grad(rg, NULL, 1, &ops[0], &g, NULL) == FF_OK);
    CHECK_TENSOR(g, 1, SHAPE(2), VALS(want, want), 1e-12 * want);
    RELEASE(r, rg, g);
    for (int k = 0; k < N; k++) ff_tensor_release(ops[k]);
}

/* Repeated labels: "aaaaaaaa->a" takes 7 diagonals of one operand in one step. */
static void check_einsum_many_diagonals(void)
{
    int64_t shape[8] = {2, 2, 2, 2, 2, 2, 2, 2};
    double v[256];
    for (int i = 0; i < 256; i++) v[i] = i;
    ff_tensor *x = ff_test_tensor(FF_F64, 8, shape, v);
    ff_tensor *r = ff_einsum("aaaaaaaa->a", 1, &x);
    CHECK_TENSOR(r, 1, SHAPE(2), VALS(0, 255), 0);
    RELEASE(x, r);
}

/* A slice whose step passes the end takes one element; its gradient re-slices
 * start + count * step, which overflowed for a step near INT64_MAX and came back empty. */
static void check_slice_huge_step(void)
{
    ff_tensor *x = ff_ones(2, SHAPE(4, 3), FF_F64);
    CHECK(ff_set_requires_grad(x, true) == FF_OK);
    ff_tensor *s = ff_slice(x, 0, 1, 4, INT64_MAX), *l = s ? ff_sum(s, 0, NULL, false) : NULL, *g = NULL;
    CHECK(s && ff_tensor_ndim(s) == 2 && ff_tensor_shape(s)[0] == 1 && ff_tensor_shape(s)[1] == 3);
    CHECK(l && ff_autograd_grad(l, NULL, 1, &x, &g, NULL) == FF_OK);
    CHECK_TENSOR(g, 2, SHAPE(4, 3), VALS(0, 0, 0, 1, 1, 1, 0, 0, 0, 0, 0, 0), 0);
    ff_tensor *t = ff_slice(x, 1, 0, 3, INT64_MAX - 1), *e = ff_slice(x, 0, 3, 1, INT64_MAX);
    CHECK(t && ff_tensor_shape(t)[0] == 4 && ff_tensor_shape(t)[1] == 1);
    CHECK(e && ff_tensor_shape(e)[0] == 0);
    ff_tensor *k = ff_slice(x, 0, 0, 4, 3); /* rows 0 and 3 */
    CHECK(k && ff_tensor_shape(k)[0] == 2);
    RELEASE(x, s, l, g, t, e, k);
}

FF_TEST_MAIN("ops_arg_limits", TEST(check_slice_huge_step), TEST(check_conv_huge_stride), TEST(check_conv_overflow),
             TEST(check_interpolate_scales), TEST(check_einsum_many_operands), TEST(check_einsum_many_diagonals))
