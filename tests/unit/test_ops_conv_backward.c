/* ff_conv_backward (ops/conv_backward.c): the gradients of ff_conv / ff_conv_transpose for a
 * given output gradient must be autograd's own for the same forward, on the reference backend
 * and on cpu_blas (whose conv2d entries the 1-D and 2-D cases take), for strides, padding,
 * dilation, groups, output_padding, 1 to 3 spatial dims; only the gradients asked for; no
 * history recorded; a wrong gy refused with both shapes named; nothing leaked. */
#include "ff_test.h"

typedef struct prob {
    int nd;
    bool transposed;
    int64_t n, c, o, g, s[3], k[3];
    ff_conv_opts opts;
} prob;

static const prob probs[] = {
    {2, false, 2, 3, 4, 1, {7, 6}, {3, 3}, {{1, 1}, {1, 1}, {1, 1}, {0}, 1}},
    {2, false, 2, 4, 6, 2, {9, 8}, {3, 2}, {{2, 1}, {1, 0}, {1, 2}, {0}, 2}},  /* groups, dilation */
    {2, false, 1, 2, 3, 1, {5, 5}, {3, 3}, {{7, 9}, {0, 1}, {1, 1}, {0}, 1}},  /* a stride past the input */
    {1, false, 3, 2, 4, 1, {11}, {3}, {{2}, {1}, {2}, {0}, 1}},
    {3, false, 1, 2, 2, 1, {4, 5, 3}, {2, 3, 2}, {{1, 2, 1}, {1, 0, 1}, {1, 1, 1}, {0}, 1}},
    {2, true, 2, 4, 3, 1, {5, 4}, {3, 3}, {{2, 2}, {1, 0}, {1, 1}, {1, 0}, 1}}, /* output_padding */
    {2, true, 1, 4, 4, 2, {4, 4}, {2, 3}, {{1, 2}, {0, 1}, {2, 1}, {0, 1}, 2}},
    {1, true, 2, 3, 2, 1, {6}, {4}, {{3}, {1}, {1}, {2}, 1}},
};

static void check_problem(ff_backend *be, const prob *p, ff_dtype dt, unsigned seed)
{
    int r = p->nd + 2;
    int64_t xs[5] = {p->n, p->c}, ws[5];
    if (p->transposed) ws[0] = p->c, ws[1] = p->o / p->g;
    else ws[0] = p->o, ws[1] = p->c / p->g;
    for (int d = 0; d < p->nd; d++) xs[2 + d] = p->s[d], ws[2 + d] = p->k[d];
    ff_tensor *xh = ff_test_lcg_tensor(dt, r, xs, seed, -1, 1), *wh = ff_test_lcg_tensor(dt, r, ws, seed + 1, -1, 1);
    ff_tensor *x = ff_to(xh, be), *w = ff_to(wh, be);
    ff_tensor *xl = ff_detach(x), *wl = ff_detach(w);
    CHECK(ff_set_requires_grad(xl, true) == FF_OK && ff_set_requires_grad(wl, true) == FF_OK);
    ff_tensor *y = p->transposed ? ff_conv_transpose(xl, wl, NULL, &p->opts) : ff_conv(xl, wl, NULL, &p->opts);
    CHECK(y != NULL);
    if (!y) {
        RELEASE(xh, wh, x, w, xl, wl);
        return;
    }
    ff_tensor *gh = ff_test_lcg_tensor(dt, r, ff_tensor_shape(y), seed + 2, -1, 1), *gy = ff_to(gh, be);
    ff_tensor *leaves[2] = {xl, wl}, *ref[2] = {NULL, NULL};
    CHECK(ff_autograd_grad(y, gy, 2, leaves, ref, NULL) == FF_OK);
    ff_tensor *gx = NULL, *gw = NULL;
    CHECK(ff_conv_backward(gy, x, w, &p->opts, p->transposed, &gx, &gw) == FF_OK);
    double tol = dt == FF_F64 ? 1e-12 : 1e-5;
    CHECK(gx && gw && ref[0] && ref[1]);
    if (gx && gw && ref[0] && ref[1]) {
        CHECK(ff_test_max_diff(gx, ref[0]) <= tol && ff_test_max_diff(gw, ref[1]) <= tol);
        CHECK(ff_tensor_backend(gx) == be && !ff_requires_grad(gx) && !ff_requires_grad(gw));
    }
    ff_tensor *only_w = NULL; /* one gradient asked for: the other pointer stays untouched */
    CHECK(ff_conv_backward(gy, x, w, &p->opts, p->transposed, NULL, &only_w) == FF_OK);
    CHECK(only_w && ref[1] && ff_test_max_diff(only_w, ref[1]) <= tol);
    RELEASE(xh, wh, x, w, xl, wl, y, gh, gy, ref[0], ref[1], gx, gw, only_w);
}

static void test_matches_autograd(void)
{
    long base = ff_debug_live_tensors();
    const char *names[] = {"cpu", FF_TEST_HAVE_CPU_BLAS ? "cpu_blas" : "cpu"};
    for (int b = 0; b < 2; b++) {
        ff_backend *be = ff_backend_load(names[b]);
        CHECK(be != NULL);
        if (!be) continue;
        for (size_t i = 0; i < sizeof probs / sizeof probs[0]; i++) {
            check_problem(be, &probs[i], FF_F32, 10 + (unsigned)i);
            if (i % 3 == 0) check_problem(be, &probs[i], FF_F64, 40 + (unsigned)i);
        }
    }
    CHECK(ff_debug_live_tensors() == base);
}

static void test_bad_gradient_is_refused(void)
{
    long base = ff_debug_live_tensors();
    const prob *p = &probs[0];
    ff_tensor *x = ff_test_lcg_tensor(FF_F32, 4, SHAPE(2, 3, 7, 6), 1, -1, 1);
    ff_tensor *w = ff_test_lcg_tensor(FF_F32, 4, SHAPE(4, 3, 3, 3), 2, -1, 1);
    ff_tensor *bad = ff_test_lcg_tensor(FF_F32, 4, SHAPE(2, 4, 7, 5), 3, -1, 1); /* the output is [2, 4, 7, 6] */
    ff_tensor *gx = x, *gw = w;
    CHECK_ERROR(ff_conv_backward(bad, x, w, &p->opts, false, &gx, &gw) != FF_OK, FF_ERR_INVALID,
                "gy [2, 4, 7, 5] (f32) is not the convolution's output [2, 4, 7, 6]");
    CHECK(gx == NULL && gw == NULL); /* outputs cleared on failure */
    CHECK_ERROR(ff_conv_backward(NULL, x, w, &p->opts, false, &gx, NULL) != FF_OK, FF_ERR_INVALID, "gy must not be NULL");
    ff_conv_opts zero_stride = p->opts;
    zero_stride.stride[0] = 0;
    CHECK_ERROR(ff_conv_backward(bad, x, w, &zero_stride, false, &gx, NULL) != FF_OK, FF_ERR_INVALID, "stride");
    RELEASE(x, w, bad);
    CHECK(ff_debug_live_tensors() == base);
}

int main(void)
{
    const ff_test_case cases[] = {
        {"matches_autograd", test_matches_autograd},
        {"bad_gradient_is_refused", test_bad_gradient_is_refused},
    };
    return ff_test_run("ops_conv_backward", cases, 2);
}
