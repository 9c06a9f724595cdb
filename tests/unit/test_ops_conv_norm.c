/* conv2d, max/avg_pool2d, layer_norm, batch_norm (ops/conv.c, pool.c, norm.c) and
 * their modules (nn/conv.c, nn/norm.c): values hand-computed or against a naive loop,
 * error messages, gradients by ff_gradcheck (f64). */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include <stdlib.h>

#include "ff_test.h"

static ff_tensor *T(ff_dtype dt, int nd, const int64_t *shape, const double *v) { return ff_test_tensor(dt, nd, shape, v); }

static ff_gradcheck_opts gc_opts(void)
{
    ff_gradcheck_opts o = {.eps = 1e-6, .atol = 1e-6, .rtol = 1e-4};
    return o;
}

/* 1..16 as [1, 1, 4, 4] (times sign). */
static ff_tensor *grid4(ff_dtype dt, double sign)
{
    double v[16];
    for (int i = 0; i < 16; i++) v[i] = sign * (i + 1);
    return T(dt, 4, SHAPE(1, 1, 4, 4), v);
}

/* ---- conv2d ------------------------------------------------------------------------ */
/* Channel 0: a ones kernel (window sums); channel 1: taps at (2, 2) and 10 x (0, 1),
 * which also pins cross-correlation orientation. Stride 2, padding 1 on 4x4 -> 2x2. */
static void check_conv_known(void)
{
    ff_tensor *x = grid4(FF_F32, 1);
    double wv[18] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 10, 0, 0, 0, 0, 0, 0, 1};
    ff_tensor *w = T(FF_F32, 4, SHAPE(2, 1, 3, 3), wv), *b = T(FF_F32, 1, SHAPE(2), VALS(0.5, -1));
    ff_tensor *y = ff_conv2d(x, w, b, 2, 2, 1, 1);
    CHECK(y && ff_tensor_dtype(y) == FF_F32);
    CHECK_TENSOR(y, 4, SHAPE(1, 2, 2, 2), VALS(14.5, 30.5, 57.5, 99.5, 5, 7, 63, 85), 1e-5);
    ff_tensor *y0 = ff_conv2d(x, w, NULL, 1, 1, 0, 0); /* valid 3x3 on 4x4 -> 2x2 */
    CHECK_TENSOR(y0, 4, SHAPE(1, 2, 2, 2), VALS(54, 63, 90, 99, 31, 42, 75, 86), 1e-5);
    RELEASE(x, w, b, y, y0);
}

/* Against a naive loop: N 2, C 3, 5x6 input, kernel 3x2, stride (2, 1), pad (1, 2). */
static void check_conv_naive(void)
{
    enum { N = 2, C = 3, H = 5, W = 6, O = 4, KH = 3, KW = 2, SH = 2, SW = 1, PH = 1, PW = 2 };
    enum { OH = (H + 2 * PH - KH) / SH + 1, OW = (W + 2 * PW - KW) / SW + 1 };
    ff_tensor *x = ff_rand_normal(4, SHAPE(N, C, H, W), FF_F64, 0, 1, 11);
    ff_tensor *w = ff_rand_normal(4, SHAPE(O, C, KH, KW), FF_F64, 0, 1, 12);
    ff_tensor *b = ff_rand_normal(1, SHAPE(O), FF_F64, 0, 1, 13);
    static double xv[N * C * H * W], wv[O * C * KH * KW], bv[O], ref[N * O * OH * OW];
    CHECK(ff_test_values(x, xv, N * C * H * W) == 0 && ff_test_values(w, wv, O * C * KH * KW) == 0 &&
          ff_test_values(b, bv, O) == 0);
    for (int n = 0; n < N; n++)
        for (int o = 0; o < O; o++)
            for (int i = 0; i < OH; i++)
                for (int j = 0; j < OW; j++) {
                    double s = bv[o];
                    for (int c = 0; c < C; c++)
                        for (int p = 0; p < KH; p++)
                            for (int q = 0; q < KW; q++) {
                                int r = i * SH + p - PH, col = j * SW + q - PW;
                                if (r >= 0 && r < H && col >= 0 && col < W)
                                    s += xv[((n * C + c) * H + r) * W + col] * wv[((o * C + c) * KH + p) * KW + q];
                            }
                    ref[((n * O + o) * OH + i) * OW + j] = s;
                }
    ff_tensor *y = ff_conv2d(x, w, b, SH, SW, PH, PW);
    CHECK_TENSOR(y, 4, SHAPE(N, O, OH, OW), ref, 1e-12);
    /* a non-contiguous input (a transposed view) gives the same answer */
    ff_tensor *xt = ff_transpose(x, 2, 3), *xtc = xt ? ff_contiguous(xt) : NULL;
    ff_tensor *xv2 = xtc ? ff_transpose(xtc, 2, 3) : NULL;
    ff_tensor *y2 = xv2 ? ff_conv2d(xv2, w, b, SH, SW, PH, PW) : NULL;
    CHECK_TENSOR(y2, 4, SHAPE(N, O, OH, OW), ref, 1e-12);
    RELEASE(x, w, b, y, xt, xtc, xv2, y2);
}

static void check_conv_errors(void)
{
    ff_tensor *x = ff_zeros(4, SHAPE(1, 2, 4, 4), FF_F32), *w = ff_zeros(4, SHAPE(3, 2, 3, 3), FF_F32);
    ff_tensor *w1 = ff_zeros(4, SHAPE(3, 1, 3, 3), FF_F32), *wd = ff_zeros(4, SHAPE(3, 2, 3, 3), FF_F64);
    ff_tensor *x3 = ff_zeros(3, SHAPE(2, 4, 4), FF_F32), *b2 = ff_zeros(1, SHAPE(2), FF_F32);
    ff_tensor *xi = ff_zeros(4, SHAPE(1, 2, 4, 4), FF_I32), *wbig = ff_zeros(4, SHAPE(3, 2, 7, 1), FF_F32);
    CHECK_ERROR(ff_conv2d(x, w1, NULL, 1, 1, 0, 0) == NULL, FF_ERR_INVALID, "ff_conv2d: x [1, 2, 4, 4] has 2 channels but w [3, 1, 3, 3]");
    CHECK_ERROR(ff_conv2d(x3, w, NULL, 1, 1, 0, 0) == NULL, FF_ERR_INVALID, "ff_conv2d: expected x [N, C, H, W]");
    CHECK_ERROR(ff_conv2d(x, wd, NULL, 1, 1, 0, 0) == NULL, FF_ERR_INVALID, "one floating dtype");
    CHECK_ERROR(ff_conv2d(xi, w, NULL, 1, 1, 0, 0) == NULL, FF_ERR_INVALID, "one floating dtype");
    CHECK_ERROR(ff_conv2d(x, w, b2, 1, 1, 0, 0) == NULL, FF_ERR_INVALID, "bias must have shape [3]");
    CHECK_ERROR(ff_conv2d(x, w, NULL, 0, 1, 0, 0) == NULL, FF_ERR_INVALID, "ff_conv2d: stride (0, 1)");
    CHECK_ERROR(ff_conv2d(x, w, NULL, 1, 1, -1, 0) == NULL, FF_ERR_INVALID, "padding (-1, 0)");
    CHECK_ERROR(ff_conv2d(x, wbig, NULL, 1, 1, 1, 0) == NULL, FF_ERR_INVALID, "larger than the padded input (6, 4)");
    CHECK_ERROR(ff_conv2d(NULL, w, NULL, 1, 1, 0, 0) == NULL, FF_ERR_INVALID, "ff_conv2d");
    RELEASE(x, w, w1, wd, x3, b2, xi, wbig);
}

typedef struct conv_args {
    int64_t sh, sw, ph, pw;
} conv_args;

static ff_tensor *f_conv(int n, ff_tensor *const *in, void *u)
{
    const conv_args *a = u;
    return ff_conv2d(in[0], in[1], n > 2 ? in[2] : NULL, a->sh, a->sw, a->ph, a->pw);
}

static void check_conv_grad(void)
{
    ff_tensor *x = ff_rand_normal(4, SHAPE(2, 2, 5, 4), FF_F64, 0, 1, 21);
    ff_tensor *w = ff_rand_normal(4, SHAPE(3, 2, 3, 2), FF_F64, 0, 1, 22);
    ff_tensor *b = ff_rand_normal(1, SHAPE(3), FF_F64, 0, 1, 23);
    ff_gradcheck_opts o = gc_opts();
    conv_args a = {2, 1, 1, 1}, a0 = {1, 1, 0, 0};
    CHECK(ff_gradcheck(f_conv, &a, 3, (ff_tensor *[]){x, w, b}, &o) == FF_OK);
    CHECK(ff_gradcheck(f_conv, &a0, 2, (ff_tensor *[]){x, w}, &o) == FF_OK);
    RELEASE(x, w, b);
}

/* ---- pooling ----------------------------------------------------------------------- */
static void check_pool_values(void)
{
    ff_tensor *x = grid4(FF_F32, 1), *xn = grid4(FF_F32, -1);
    ff_tensor *m2 = ff_max_pool2d(x, 2, 2, 2, 2, 0, 0);
    CHECK_TENSOR(m2, 4, SHAPE(1, 1, 2, 2), VALS(6, 8, 14, 16), 0);
    ff_tensor *m3 = ff_max_pool2d(x, 3, 3, 2, 2, 1, 1);
    CHECK_TENSOR(m3, 4, SHAPE(1, 1, 2, 2), VALS(6, 8, 14, 16), 0);
    ff_tensor *mn = ff_max_pool2d(xn, 3, 3, 2, 2, 1, 1); /* all negative: -inf padding never wins */
    CHECK_TENSOR(mn, 4, SHAPE(1, 1, 2, 2), VALS(-1, -2, -5, -6), 0);
    ff_tensor *mr = ff_max_pool2d(x, 1, 3, 1, 1, 0, 1); /* rectangular, row-wise max of 3 */
    CHECK_TENSOR(mr, 4, SHAPE(1, 1, 4, 4), VALS(2, 3, 4, 4, 6, 7, 8, 8, 10, 11, 12, 12, 14, 15, 16, 16), 0);
    ff_tensor *a2 = ff_avg_pool2d(x, 2, 2, 2, 2, 0, 0);
    CHECK_TENSOR(a2, 4, SHAPE(1, 1, 2, 2), VALS(3.5, 5.5, 11.5, 13.5), 1e-6);
    ff_tensor *a3 = ff_avg_pool2d(x, 3, 3, 2, 2, 1, 1); /* padding counts: always / 9 */
    CHECK_TENSOR(a3, 4, SHAPE(1, 1, 2, 2), VALS(14. / 9, 30. / 9, 57. / 9, 99. / 9), 1e-6);
    CHECK_ERROR(ff_max_pool2d(x, 2, 2, 2, 2, 2, 0) == NULL, FF_ERR_INVALID, "ff_max_pool2d: padding (2, 0) must be at most half");
    CHECK_ERROR(ff_avg_pool2d(x, 0, 2, 2, 2, 0, 0) == NULL, FF_ERR_INVALID, "ff_avg_pool2d: kernel size (0, 2)");
    CHECK_ERROR(ff_avg_pool2d(x, 5, 2, 1, 1, 0, 0) == NULL, FF_ERR_INVALID, "larger than the padded input");
    ff_tensor *xi = ff_zeros(4, SHAPE(1, 1, 2, 2), FF_I64), *x3 = ff_zeros(3, SHAPE(1, 2, 2), FF_F32);
    CHECK_ERROR(ff_max_pool2d(xi, 2, 2, 2, 2, 0, 0) == NULL, FF_ERR_INVALID, "floating point");
    CHECK_ERROR(ff_max_pool2d(x3, 2, 2, 2, 2, 0, 0) == NULL, FF_ERR_INVALID, "expected x [N, C, H, W], got rank 3");
    RELEASE(x, xn, m2, m3, mn, mr, a2, a3, xi, x3);
}

/* ops/common.c, exported for tests (the switch FF_POOL=compose flips without setenv) */
void ff_ops_force_compose(ff_op_kind kind, bool on);

/* A window's gradient goes to ONE element, the index PyTorch's kernel picks: the first
 * maximum in row-major order (a tie at 3: (0, 1)), or its last NaN (a NaN window: (1, 0)).
 * On the backend's entry and on the composition (ff_ops_force_compose), which must agree. */
static void check_max_pool_ties(void)
{
    static const double tie[4] = {1, 3, 3, 0}, nan[4] = {NAN, 1, NAN, 2}, ones[4] = {1, 1, 1, 1};
    for (int compose = 0; compose < 2; compose++) {
        ff_ops_force_compose(FF_KIND_POOL2D, compose);
        const double *in[3] = {tie, nan, ones};
        const double want[3][4] = {{0, 1, 0, 0}, {0, 0, 1, 0}, {1, 0, 0, 0}};
        for (int c = 0; c < 3; c++) {
            ff_tensor *x = T(FF_F64, 4, SHAPE(1, 1, 2, 2), in[c]);
            CHECK(ff_set_requires_grad(x, true) == FF_OK);
            ff_tensor *y = ff_max_pool2d(x, 2, 2, 2, 2, 0, 0);
            CHECK(y && ff_backward(y, NULL, NULL) == FF_OK);
            ff_tensor *g = ff_grad(x);
            CHECK_TENSOR(g, 4, SHAPE(1, 1, 2, 2), want[c], 0.0);
            RELEASE(x, y, g);
        }
        /* overlapping padded windows of zeros (ReLU's ties): each of the 4 x 4 windows of a
         * 3 x 3 input with padding 1 sends its 1 to its first real element (PyTorch: the same) */
        ff_tensor *z = ff_zeros(4, SHAPE(1, 1, 3, 3), FF_F64);
        CHECK(ff_set_requires_grad(z, true) == FF_OK);
        ff_tensor *y = ff_max_pool2d(z, 2, 2, 1, 1, 1, 1), *s = y ? ff_sum(y, 0, NULL, false) : NULL;
        CHECK(s && ff_backward(s, NULL, NULL) == FF_OK);
        ff_tensor *g = ff_grad(z);
        CHECK_TENSOR(g, 4, SHAPE(1, 1, 3, 3), VALS(4, 2, 2, 2, 1, 1, 2, 1, 1), 0.0);
        RELEASE(z, y, s, g);
    }
    ff_ops_force_compose(FF_KIND_POOL2D, false);
}

static ff_tensor *f_max_pool(int n, ff_tensor *const *in, void *u) { return ff_max_pool2d(in[0], 3, 2, 2, 1, 1, 1); }
static ff_tensor *f_avg_pool(int n, ff_tensor *const *in, void *u) { return ff_avg_pool2d(in[0], 3, 2, 2, 1, 1, 1); }

static void check_pool_grad(void)
{
    ff_tensor *x = ff_rand_normal(4, SHAPE(2, 2, 5, 4), FF_F64, 0, 1, 31); /* no ties */
    ff_gradcheck_opts o = gc_opts();
    CHECK(ff_gradcheck(f_max_pool, NULL, 1, &x, &o) == FF_OK);
    CHECK(ff_gradcheck(f_avg_pool, NULL, 1, &x, &o) == FF_OK);
    ff_tensor_release(x);
}

/* ---- layer norm -------------------------------------------------------------------- */
static void check_layer_norm_values(void)
{
    ff_tensor *x = ff_rand_normal(2, SHAPE(3, 5), FF_F64, 2, 3, 41);
    ff_tensor *y = ff_layer_norm(x, 1, NULL, NULL, 0.0);
    double v[15];
    CHECK(y && ff_test_values(y, v, 15) == 0);
    for (int r = 0; y && r < 3; r++) {
        double m = 0, s = 0;
        for (int k = 0; k < 5; k++) m += v[r * 5 + k] / 5;
        for (int k = 0; k < 5; k++) s += (v[r * 5 + k] - m) * (v[r * 5 + k] - m) / 5;
        CHECK_NEAR(m, 0, 1e-12);
        CHECK_NEAR(s, 1, 1e-12);
    }
    /* closed form with weight and bias: rows (1, 3) -> (-1, 1) / sqrt(1 + eps) */
    ff_tensor *x2 = T(FF_F32, 2, SHAPE(2, 2), VALS(1, 3, 5, 5));
    ff_tensor *w = T(FF_F32, 1, SHAPE(2), VALS(2, -1)), *b = T(FF_F32, 1, SHAPE(2), VALS(0.5, 0.25));
    ff_tensor *y2 = ff_layer_norm(x2, 1, w, b, 1e-5);
    double k = 1 / sqrt(1 + 1e-5);
    CHECK_TENSOR(y2, 2, SHAPE(2, 2), VALS(-2 * k + 0.5, -k + 0.25, 0.5, 0.25), 1e-6);
    /* over the last two dims of [2, 3, 4]: each [3, 4] block has mean 0 */
    ff_tensor *x3 = ff_rand_normal(3, SHAPE(2, 3, 4), FF_F64, 0, 1, 42), *y3 = ff_layer_norm(x3, 2, NULL, NULL, 1e-5);
    ff_tensor *m3 = y3 ? ff_mean(y3, 2, (int[]){1, 2}, false) : NULL;
    CHECK_TENSOR(m3, 1, SHAPE(2), VALS(0, 0), 1e-12);
    ff_tensor *w3 = ff_ones(1, SHAPE(4), FF_F64);
    CHECK_ERROR(ff_layer_norm(x3, 0, NULL, NULL, 1e-5) == NULL, FF_ERR_INVALID, "ff_layer_norm: nnorm 0 must be in [1, 3]");
    CHECK_ERROR(ff_layer_norm(x3, 2, w3, NULL, 1e-5) == NULL, FF_ERR_INVALID,
                "ff_layer_norm: weight [4] must match the last 2 dims of x [2, 3, 4]");
    CHECK_ERROR(ff_layer_norm(x3, 1, NULL, NULL, -1) == NULL, FF_ERR_INVALID, "eps");
    RELEASE(x, y, x2, w, b, y2, x3, y3, m3, w3);
}

static ff_tensor *f_layer_norm(int n, ff_tensor *const *in, void *u)
{
    return ff_layer_norm(in[0], *(int *)u, in[1], in[2], 1e-5);
}

static void check_layer_norm_grad(void)
{
    ff_tensor *x = ff_rand_normal(2, SHAPE(3, 4), FF_F64, 0, 1, 51);
    ff_tensor *w = ff_rand_normal(1, SHAPE(4), FF_F64, 1, 0.5, 52), *b = ff_rand_normal(1, SHAPE(4), FF_F64, 0, 1, 53);
    ff_gradcheck_opts o = gc_opts();
    int one = 1, two = 2;
    CHECK(ff_gradcheck(f_layer_norm, &one, 3, (ff_tensor *[]){x, w, b}, &o) == FF_OK);
    ff_tensor *w2 = ff_rand_normal(2, SHAPE(3, 4), FF_F64, 1, 0.5, 54), *b2 = ff_rand_normal(2, SHAPE(3, 4), FF_F64, 0, 1, 55);
    ff_tensor *x2 = ff_rand_normal(3, SHAPE(2, 3, 4), FF_F64, 0, 1, 56);
    CHECK(ff_gradcheck(f_layer_norm, &two, 3, (ff_tensor *[]){x2, w2, b2}, &o) == FF_OK);
    RELEASE(x, w, b, w2, b2, x2);
}

/* ---- batch norm -------------------------------------------------------------------- */
static void check_batch_norm_values(void)
{
    /* channel 0: 1 2 3 4 (mean 2.5, var 1.25, unbiased 5/3); channel 1: 0 0 2 2 (1, 1, 4/3) */
    ff_tensor *x = T(FF_F32, 2, SHAPE(4, 2), VALS(1, 0, 2, 0, 3, 2, 4, 2));
    ff_tensor *rm = ff_zeros(1, SHAPE(2), FF_F32), *rv = ff_ones(1, SHAPE(2), FF_F32);
    ff_tensor *y = ff_batch_norm(x, rm, rv, NULL, NULL, true, 0.1, 0.0);
    double a = 1 / sqrt(1.25);
    CHECK_TENSOR(y, 2, SHAPE(4, 2), VALS(-1.5 * a, -1, -0.5 * a, -1, 0.5 * a, 1, 1.5 * a, 1), 1e-6);
    CHECK_TENSOR(rm, 1, SHAPE(2), VALS(0.25, 0.1), 1e-6);
    CHECK_TENSOR(rv, 1, SHAPE(2), VALS(0.9 + 0.1 * 5 / 3, 0.9 + 0.1 * 4 / 3), 1e-6);
    CHECK(!ff_requires_grad(rm) && ff_grad_fn_name(rm) == NULL);
    /* eval: the running statistics normalize, weight and bias per channel */
    ff_tensor *w = T(FF_F32, 1, SHAPE(2), VALS(2, 1)), *b = T(FF_F32, 1, SHAPE(2), VALS(0, 10));
    ff_tensor *ye = ff_batch_norm(x, rm, rv, w, b, false, 0.1, 0.0);
    double s0 = 1 / sqrt(0.9 + 0.1 * 5 / 3), s1 = 1 / sqrt(0.9 + 0.1 * 4 / 3);
    CHECK_TENSOR(ye, 2, SHAPE(4, 2),
                 VALS(2 * 0.75 * s0, 10 - 0.1 * s1, 2 * 1.75 * s0, 10 - 0.1 * s1, 2 * 2.75 * s0, 10 + 1.9 * s1,
                      2 * 3.75 * s0, 10 + 1.9 * s1), 1e-5);
    CHECK_TENSOR(rm, 1, SHAPE(2), VALS(0.25, 0.1), 1e-6); /* eval leaves them alone */
    /* [N, C, H, W]: every channel normalized over N, H, W */
    ff_tensor *x4 = ff_rand_normal(4, SHAPE(2, 3, 2, 2), FF_F64, 3, 2, 61);
    ff_tensor *y4 = ff_batch_norm(x4, NULL, NULL, NULL, NULL, true, 0.1, 0.0);
    ff_tensor *m4 = y4 ? ff_mean(y4, 3, (int[]){0, 2, 3}, false) : NULL;
    ff_tensor *v4 = y4 ? ff_var(y4, 3, (int[]){0, 2, 3}, 0, false) : NULL;
    CHECK_TENSOR(m4, 1, SHAPE(3), VALS(0, 0, 0), 1e-12);
    CHECK_TENSOR(v4, 1, SHAPE(3), VALS(1, 1, 1), 1e-12);
    ff_tensor *x1 = ff_ones(2, SHAPE(1, 2), FF_F32), *xi = ff_zeros(2, SHAPE(2, 2), FF_I32);
    CHECK_ERROR(ff_batch_norm(x1, NULL, NULL, NULL, NULL, true, 0.1, 1e-5) == NULL, FF_ERR_INVALID,
                "ff_batch_norm: expected more than 1 value per channel when training, got x [1, 2]");
    CHECK_ERROR(ff_batch_norm(x, NULL, NULL, NULL, NULL, false, 0.1, 1e-5) == NULL, FF_ERR_INVALID,
                "required in eval mode");
    CHECK_ERROR(ff_batch_norm(x, rm, NULL, NULL, NULL, true, 0.1, 1e-5) == NULL, FF_ERR_INVALID, "both");
    CHECK_ERROR(ff_batch_norm(x4, rm, rv, NULL, NULL, true, 0.1, 1e-5) == NULL, FF_ERR_INVALID,
                "ff_batch_norm: running_mean [2] must be [3] for x [2, 3, 2, 2]");
    CHECK_ERROR(ff_batch_norm(xi, NULL, NULL, NULL, NULL, true, 0.1, 1e-5) == NULL, FF_ERR_INVALID, "floating point");
    CHECK_ERROR(ff_batch_norm(x, rm, rv, NULL, NULL, true, 1.5, 1e-5) == NULL, FF_ERR_INVALID, "momentum 1.5");
    CHECK_TENSOR(rm, 1, SHAPE(2), VALS(0.25, 0.1), 1e-6); /* failures leave the stats alone */
    RELEASE(x, rm, rv, y, w, b, ye, x4, y4, m4, v4, x1, xi);
}

static ff_tensor *f_batch_norm(int n, ff_tensor *const *in, void *u)
{
    return ff_batch_norm(in[0], NULL, NULL, in[1], in[2], true, 0.1, 1e-5);
}

/* d/dx of sum(batch_norm(x, w, b)^3 / 3), recorded (create_graph): gradcheck of this
 * checks batch norm's second derivatives (the node's closed form recomputed with history). */
static ff_tensor *f_batch_norm_grad(int n, ff_tensor *const *in, void *user)
{
    (void)n, (void)user;
    /* gradcheck's finite-difference passes run without grad mode on plain inputs: the
     * first derivative is then taken on a detached leaf (as test_ops_nn.c's softmax) */
    bool track = ff_requires_grad(in[0]), prev = ff_set_grad_enabled(true);
    ff_tensor *x = track ? ff_tensor_retain(in[0]) : ff_detach(in[0]);
    if (x && !track) ff_set_requires_grad(x, true);
    ff_tensor *y = x ? ff_batch_norm(x, NULL, NULL, in[1], in[2], true, 0.1, 1e-5) : NULL;
    ff_tensor *y2 = y ? ff_mul(y, y) : NULL, *y3 = y2 ? ff_mul(y2, y) : NULL;
    ff_tensor *l = y3 ? ff_sum(y3, 0, NULL, false) : NULL, *g = NULL;
    ff_backward_opts cg = {.create_graph = track};
    if (l && ff_autograd_grad(l, NULL, 1, &x, &g, &cg)) g = NULL;
    ff_set_grad_enabled(prev);
    RELEASE(x, y, y2, y3, l);
    return g;
}

static void check_batch_norm_grad(void)
{
    ff_tensor *x = ff_rand_normal(4, SHAPE(3, 2, 2, 2), FF_F64, 0, 1, 71);
    ff_tensor *w = ff_rand_normal(1, SHAPE(2), FF_F64, 1, 0.5, 72), *b = ff_rand_normal(1, SHAPE(2), FF_F64, 0, 1, 73);
    ff_gradcheck_opts o = gc_opts();
    CHECK(ff_gradcheck(f_batch_norm, NULL, 3, (ff_tensor *[]){x, w, b}, &o) == FF_OK);
    ff_tensor *x2 = ff_rand_normal(2, SHAPE(4, 3), FF_F64, 0, 1, 74);
    ff_tensor *w2 = ff_rand_normal(1, SHAPE(3), FF_F64, 1, 0.5, 75), *b2 = ff_rand_normal(1, SHAPE(3), FF_F64, 0, 1, 76);
    CHECK(ff_gradcheck(f_batch_norm, NULL, 3, (ff_tensor *[]){x2, w2, b2}, &o) == FF_OK);
    CHECK(ff_gradcheck(f_batch_norm_grad, NULL, 3, (ff_tensor *[]){x, w, b}, &o) == FF_OK);
    RELEASE(x, w, b, x2, w2, b2);
}

/* ---- modules ----------------------------------------------------------------------- */
static void collect_name(const char *name, ff_tensor *p, void *u)
{
    char *buf = u;
    strcat(buf, name);
    strcat(buf, ";");
}

static bool within(const ff_tensor *t, double bound)
{
    double v[512];
    int64_t n = ff_tensor_numel(t);
    if (n > 512 || ff_test_values(t, v, n)) return false;
    bool nonzero = false;
    for (int64_t i = 0; i < n; i++) {
        if (fabs(v[i]) > bound) return false;
        nonzero |= v[i] != 0;
    }
    return nonzero;
}

static void check_conv_module(void)
{
    ff_module *m = ff_conv2d_module(3, 4, 3, 2, 2, 1, true, 7);
    CHECK(m && strcmp(ff_module_type_name(m), "Conv2d") == 0);
    char names[64] = "";
    CHECK(ff_module_named_parameters(m, collect_name, names) == 2 && strcmp(names, "weight;bias;") == 0);
    ff_tensor *w = ff_module_get_parameter(m, "weight"), *b = ff_module_get_parameter(m, "bias");
    CHECK(w && ff_tensor_ndim(w) == 4 && ff_tensor_dim(w, 0) == 4 && ff_tensor_dim(w, 1) == 3 &&
          ff_tensor_dim(w, 2) == 3 && ff_tensor_dim(w, 3) == 2);
    CHECK(b && ff_tensor_ndim(b) == 1 && ff_tensor_dim(b, 0) == 4);
    double bound = 1 / sqrt(3.0 * 3 * 2);
    CHECK(w && within(w, bound) && b && within(b, bound));
    ff_tensor *x = ff_rand_normal(4, SHAPE(2, 3, 7, 6), FF_F32, 0, 1, 8);
    ff_tensor *y = ff_module_forward(m, x);
    CHECK(y && ff_tensor_ndim(y) == 4 && ff_tensor_dim(y, 0) == 2 && ff_tensor_dim(y, 1) == 4 &&
          ff_tensor_dim(y, 2) == 4 && ff_tensor_dim(y, 3) == 4);
    ff_tensor *ref = ff_conv2d(x, w, b, 2, 2, 1, 1), *d = ref && y ? ff_sub(y, ref) : NULL;
    ff_tensor *dm = d ? ff_amax(d, 0, NULL, false) : NULL;
    double dv = 1;
    CHECK(dm && ff_tensor_item(dm, &dv) == FF_OK && dv == 0);
    ff_tensor *xbad = ff_zeros(4, SHAPE(1, 2, 4, 4), FF_F32);
    CHECK_ERROR(ff_module_forward(m, xbad) == NULL, FF_ERR_INVALID, "Conv2d(3, 4, kernel 3x2) expects x [N, 3, H, W]");
    ff_module *nb = ff_conv2d_module(1, 2, 3, 3, 1, 0, false, 1);
    CHECK(nb && ff_module_num_parameters(nb) == 18);
    CHECK_ERROR(ff_conv2d_module(0, 2, 3, 3, 1, 0, true, 1) == NULL, FF_ERR_INVALID, "ff_conv2d_module");
    ff_module *pool = ff_max_pool2d_module(2, 0);
    ff_tensor *g = grid4(FF_F32, 1), *p = pool ? ff_module_forward(pool, g) : NULL;
    CHECK(pool && strcmp(ff_module_type_name(pool), "MaxPool2d") == 0 && ff_module_num_parameters(pool) == 0);
    CHECK_TENSOR(p, 4, SHAPE(1, 1, 2, 2), VALS(6, 8, 14, 16), 0);
    CHECK_ERROR(ff_max_pool2d_module(0, 1) == NULL, FF_ERR_INVALID, "ff_max_pool2d_module");
    RELEASE(w, b, x, y, ref, d, dm, xbad, g, p);
    ff_module_release(m);
    ff_module_release(nb);
    ff_module_release(pool);
}

static void check_norm_modules(void)
{
    ff_module *ln = ff_layer_norm_module(4, 1e-5);
    char names[64] = "";
    CHECK(ln && strcmp(ff_module_type_name(ln), "LayerNorm") == 0);
    CHECK(ff_module_named_parameters(ln, collect_name, names) == 2 && strcmp(names, "weight;bias;") == 0);
    ff_tensor *lw = ff_module_get_parameter(ln, "weight"), *lb = ff_module_get_parameter(ln, "bias");
    CHECK_TENSOR(lw, 1, SHAPE(4), VALS(1, 1, 1, 1), 0);
    CHECK_TENSOR(lb, 1, SHAPE(4), VALS(0, 0, 0, 0), 0);
    ff_tensor *x = T(FF_F32, 2, SHAPE(1, 4), VALS(1, 2, 3, 4)), *y = ln ? ff_module_forward(ln, x) : NULL;
    double k = 1 / sqrt(1.25 + 1e-5);
    CHECK_TENSOR(y, 2, SHAPE(1, 4), VALS(-1.5 * k, -0.5 * k, 0.5 * k, 1.5 * k), 1e-6);
    ff_tensor *x3 = ff_zeros(2, SHAPE(1, 3), FF_F32);
    CHECK_ERROR(ln && ff_module_forward(ln, x3) == NULL, FF_ERR_INVALID, "LayerNorm(4)");

    ff_module *bn = ff_batch_norm_module(2, 0.0, 0.1);
    names[0] = 0;
    CHECK(bn && ff_module_named_parameters(bn, collect_name, names) == 2 && strcmp(names, "weight;bias;") == 0);
    CHECK(bn && ff_module_num_parameters(bn) == 4); /* running stats are not parameters */
    ff_tensor *rm = NULL, *rv = NULL;
    CHECK(bn && ff_batch_norm_module_running_stats(bn, &rm, &rv) == FF_OK);
    CHECK_TENSOR(rm, 1, SHAPE(2), VALS(0, 0), 0);
    CHECK_TENSOR(rv, 1, SHAPE(2), VALS(1, 1), 0);
    ff_tensor *xb = T(FF_F32, 2, SHAPE(4, 2), VALS(1, 0, 2, 0, 3, 2, 4, 2));
    ff_tensor *yt = bn ? ff_module_forward(bn, xb) : NULL; /* training by default */
    CHECK(yt != NULL);
    CHECK_TENSOR(rm, 1, SHAPE(2), VALS(0.25, 0.1), 1e-6);
    CHECK_TENSOR(rv, 1, SHAPE(2), VALS(0.9 + 0.1 * 5 / 3, 0.9 + 0.1 * 4 / 3), 1e-6);
    /* the output feeds back to weight and bias */
    ff_tensor *s = yt ? ff_sum(yt, 0, NULL, false) : NULL;
    CHECK(s && ff_backward(s, NULL, NULL) == FF_OK);
    ff_tensor *bw = ff_module_get_parameter(bn, "bias"), *gb = bw ? ff_grad(bw) : NULL;
    CHECK_TENSOR(gb, 1, SHAPE(2), VALS(4, 4), 1e-6);
    CHECK(bn && ff_module_train(bn, false) == FF_OK);
    ff_tensor *ye = bn ? ff_module_forward(bn, xb) : NULL;
    double s1 = 1 / sqrt(0.9 + 0.1 * 4 / 3);
    double yv[8];
    CHECK(ye && ff_test_values(ye, yv, 8) == 0);
    CHECK_NEAR(yv[1], -0.1 * s1, 1e-6);
    CHECK_TENSOR(rm, 1, SHAPE(2), VALS(0.25, 0.1), 1e-6); /* eval does not update */
    ff_tensor *x3c = ff_zeros(3, SHAPE(2, 3, 2), FF_F32);
    CHECK_ERROR(bn && ff_module_forward(bn, x3c) == NULL, FF_ERR_INVALID, "BatchNorm(2)");
    CHECK_ERROR(ff_batch_norm_module_running_stats(ln, &rm, &rv) != FF_OK, FF_ERR_INVALID, "not a BatchNorm");
    CHECK_ERROR(ff_batch_norm_module(2, 1e-5, 2) == NULL, FF_ERR_INVALID, "momentum");
    CHECK_ERROR(ff_layer_norm_module(0, 1e-5) == NULL, FF_ERR_INVALID, "ff_layer_norm_module");
    RELEASE(lw, lb, x, y, x3, rm, rv, xb, yt, s, bw, gb, ye, x3c);
    ff_module_release(ln);
    ff_module_release(bn);
}

/* f32 statistics in f64: (x - mean)^2 of 1e30 would overflow f32 and zero the output.
 * The running mean blends as (1 - m) r + m s: an infinite one stays infinite (lerp's
 * r + m (s - r) made it NaN). */
static void check_norm_extremes(void)
{
    ff_tensor *x = T(FF_F32, 1, SHAPE(3), VALS(1e30, 1, 2));
    ff_tensor *y = ff_layer_norm(x, 1, NULL, NULL, 0.0);
    CHECK_TENSOR(y, 1, SHAPE(3), VALS(sqrt(2.0), -1 / sqrt(2.0), -1 / sqrt(2.0)), 1e-5);
    ff_tensor *xb = T(FF_F32, 2, SHAPE(2, 2), VALS(1e30, 1, -1e30, 3));
    ff_tensor *rm = T(FF_F32, 1, SHAPE(2), VALS(INFINITY, -INFINITY)), *rv = ff_ones(1, SHAPE(2), FF_F32);
    ff_tensor *yb = ff_batch_norm(xb, rm, rv, NULL, NULL, true, 0.1, 0.0);
    CHECK_TENSOR(yb, 2, SHAPE(2, 2), VALS(1, -1, -1, 1), 1e-5);
    CHECK_TENSOR(rm, 1, SHAPE(2), VALS(INFINITY, -INFINITY), 0);
    RELEASE(x, y, xb, rm, rv, yb);
}

/* A small CNN end to end: conv -> relu -> pool -> batch norm -> flatten -> linear. */
static void check_cnn_backward(void)
{
    ff_module *net = ff_sequential_take(6, (ff_module *[]){ff_conv2d_module(1, 2, 3, 3, 1, 1, true, 1),
                                                          ff_relu_module(), ff_max_pool2d_module(2, 2),
                                                          ff_batch_norm_module(2, 1e-5, 0.1), ff_flatten_module(),
                                                          ff_linear(8, 3, true, 5)});
    CHECK(net != NULL);
    ff_tensor *x = ff_rand_normal(4, SHAPE(2, 1, 4, 4), FF_F32, 0, 1, 3);
    ff_tensor *y = net ? ff_module_forward(net, x) : NULL;
    CHECK(y && ff_tensor_ndim(y) == 2 && ff_tensor_dim(y, 0) == 2 && ff_tensor_dim(y, 1) == 3);
    ff_tensor *s = y ? ff_sum(y, 0, NULL, false) : NULL;
    CHECK(s && ff_backward(s, NULL, NULL) == FF_OK);
    ff_tensor *cw = net ? ff_module_get_parameter(net, "0.weight") : NULL, *g = cw ? ff_grad(cw) : NULL;
    CHECK(g && ff_tensor_ndim(g) == 4 && ff_tensor_dim(g, 0) == 2);
    RELEASE(x, y, s, cw, g);
    ff_module_release(net);
}

/* Second-order gradients of conv2d on the backend's entries (cpu_blas: oneDNN, whose
 * three passes differentiate into each other) against the composition
 * (FF_CONV2D=compose): z = |dL/dx|^2 + |dL/dw|^2 with L = sum(conv(x, w)^2), then dz/dx
 * and dz/dw, on a stride with unread rows. On a backend without the entries both runs
 * compose, and the check still holds. */
static void conv_second_order(const char *mode, ff_tensor *x, ff_tensor *w, double *hx, double *hw)
{
    if (mode) setenv("FF_CONV2D", mode, 1);
    else unsetenv("FF_CONV2D");
    ff_backward_opts cg = {.create_graph = true};
    ff_tensor *y = ff_conv2d(x, w, NULL, 2, 1, 1, 0), *yy = y ? ff_mul(y, y) : NULL;
    ff_tensor *l = yy ? ff_sum(yy, 0, NULL, false) : NULL, *g[2] = {NULL, NULL}, *h[2] = {NULL, NULL};
    ff_tensor *in[2] = {x, w};
    CHECK(l && ff_autograd_grad(l, NULL, 2, in, g, &cg) == FF_OK);
    ff_tensor *gx2 = g[0] ? ff_mul(g[0], g[0]) : NULL, *gw2 = g[1] ? ff_mul(g[1], g[1]) : NULL;
    ff_tensor *sx = gx2 ? ff_sum(gx2, 0, NULL, false) : NULL, *sw = gw2 ? ff_sum(gw2, 0, NULL, false) : NULL;
    ff_tensor *z = sx && sw ? ff_add(sx, sw) : NULL;
    CHECK(z && ff_autograd_grad(z, NULL, 2, in, h, NULL) == FF_OK);
    CHECK(h[0] && ff_test_values(h[0], hx, 2 * 2 * 7 * 5) == 0);
    CHECK(h[1] && ff_test_values(h[1], hw, 3 * 2 * 3 * 3) == 0);
    RELEASE(y, yy, l, g[0], g[1], h[0], h[1], gx2, gw2, sx, sw, z);
    unsetenv("FF_CONV2D");
}

static void check_conv_entry_second_order(void)
{
    ff_tensor *x = ff_rand_normal(4, SHAPE(2, 2, 7, 5), FF_F32, 0, 1, 11);
    ff_tensor *w = ff_rand_normal(4, SHAPE(3, 2, 3, 3), FF_F32, 0, 1, 12);
    CHECK(ff_set_requires_grad(x, true) == FF_OK && ff_set_requires_grad(w, true) == FF_OK);
    static double ex[140], ew[54], cx[140], cw[54];
    conv_second_order(NULL, x, w, ex, ew);
    conv_second_order("compose", x, w, cx, cw);
    double worst = 0;
    for (int i = 0; i < 140; i++) worst = fmax(worst, fabs(ex[i] - cx[i]) / (1 + fabs(cx[i])));
    for (int i = 0; i < 54; i++) worst = fmax(worst, fabs(ew[i] - cw[i]) / (1 + fabs(cw[i])));
    CHECK(worst < 1e-4);
    CHECK(fabs(cx[3]) + fabs(cw[5]) > 0); /* the reference did compute something */
    RELEASE(x, w);
}

/* A convolution big enough for cpu_blas to split across its threads (the batch, and for
 * the weight gradient per-thread parts summed after): entries against the composition,
 * forward and both gradients. ctest runs this file with FF_NUM_THREADS=2 too. */
static void conv_big(const char *mode, ff_tensor *x, ff_tensor *w, double *y, double *gx, double *gw)
{
    if (mode) setenv("FF_CONV2D", mode, 1);
    else unsetenv("FF_CONV2D");
    ff_tensor *out = ff_conv2d(x, w, NULL, 1, 1, 1, 1), *o2 = out ? ff_mul(out, out) : NULL;
    ff_tensor *l = o2 ? ff_sum(o2, 0, NULL, false) : NULL, *g[2] = {NULL, NULL}, *in[2] = {x, w};
    CHECK(l && ff_autograd_grad(l, NULL, 2, in, g, NULL) == FF_OK);
    CHECK(out && ff_test_values(out, y, 16 * 8 * 16 * 16) == 0);
    CHECK(g[0] && ff_test_values(g[0], gx, 16 * 8 * 16 * 16) == 0);
    CHECK(g[1] && ff_test_values(g[1], gw, 8 * 8 * 3 * 3) == 0);
    RELEASE(out, o2, l, g[0], g[1]);
    unsetenv("FF_CONV2D");
}

static double rel_diff(const double *a, const double *b, int n)
{
    double worst = 0, scale = 0;
    for (int i = 0; i < n; i++) scale = fmax(scale, fabs(b[i]));
    for (int i = 0; i < n; i++) worst = fmax(worst, fabs(a[i] - b[i]) / (scale + 1e-30));
    return worst;
}

static void check_conv_entry_threads(void)
{
    ff_tensor *x = ff_rand_normal(4, SHAPE(16, 8, 16, 16), FF_F32, 0, 1, 21);
    ff_tensor *w = ff_rand_normal(4, SHAPE(8, 8, 3, 3), FF_F32, 0, 1, 22);
    CHECK(ff_set_requires_grad(x, true) == FF_OK && ff_set_requires_grad(w, true) == FF_OK);
    enum { NY = 16 * 8 * 16 * 16, NX = 16 * 8 * 16 * 16, NW = 8 * 8 * 3 * 3 };
    static double y[2][NY], gx[2][NX], gw[2][NW];
    conv_big(NULL, x, w, y[0], gx[0], gw[0]);
    conv_big("compose", x, w, y[1], gx[1], gw[1]);
    CHECK(rel_diff(y[0], y[1], NY) < 1e-5);
    CHECK(rel_diff(gx[0], gx[1], NX) < 1e-5);
    CHECK(rel_diff(gw[0], gw[1], NW) < 1e-5);
    RELEASE(x, w);
}

FF_TEST_MAIN("ops_conv_norm", TEST(check_conv_entry_second_order), TEST(check_conv_entry_threads), TEST(check_conv_known), TEST(check_conv_naive), TEST(check_conv_errors),
             TEST(check_conv_grad), TEST(check_pool_values), TEST(check_max_pool_ties), TEST(check_pool_grad),
             TEST(check_layer_norm_values), TEST(check_layer_norm_grad), TEST(check_batch_norm_values),
             TEST(check_batch_norm_grad), TEST(check_conv_module), TEST(check_norm_modules),
             TEST(check_cnn_backward), TEST(check_norm_extremes))
