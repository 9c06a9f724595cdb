/* where (broadcasting, cond casting, promotion, gradient), clip (bounds, ints, NaN,
 * gradient at the bounds), clamp with tensor and number bounds, and lerp. */
#include <math.h>

#include "ff_test.h"

static void test_where_values(void)
{
    ff_tensor *c = ff_test_tensor(FF_BOOL, 2, SHAPE(2, 1), VALS(1, 0));
    ff_tensor *a = ff_test_tensor(FF_I32, 1, SHAPE(3), VALS(1, 2, 3));
    ff_tensor *b = ff_test_tensor(FF_F32, 0, NULL, VALS(-1));
    ff_tensor *w = ff_where(c, a, b);
    CHECK(w && ff_tensor_dtype(w) == FF_F32);
    CHECK_TENSOR(w, 2, SHAPE(2, 3), VALS(1, 2, 3, -1, -1, -1), 0);
    /* a non-bool condition is cast: non-zero is true, NaN is true */
    ff_tensor *cf = ff_test_tensor(FF_F64, 1, SHAPE(3), VALS(0, 2.5, NAN));
    ff_tensor *w2 = ff_where(cf, a, b);
    CHECK_TENSOR(w2, 1, SHAPE(3), VALS(-1, 2, 3), 0);
    ff_tensor *bad = ff_ones(1, SHAPE(4), FF_F32);
    CHECK_ERROR(ff_where(c, a, bad) == NULL, FF_ERR_INVALID, "ff_where");
    CHECK_ERROR(ff_where(NULL, a, b) == NULL, FF_ERR_INVALID, "NULL");
    RELEASE(c, a, b, w, cf, w2, bad);
}

static ff_tensor *apply_where(int n, ff_tensor *const *in, void *user)
{
    (void)n, (void)user;
    ff_tensor *c = ff_gt(in[0], in[1]), *r = c ? ff_where(c, in[0], in[1]) : NULL;
    ff_tensor_release(c);
    return r;
}

static void test_where_gradient(void)
{
    ff_tensor *a = ff_test_tensor(FF_F64, 2, SHAPE(2, 3), VALS(0.5, -1, 2, 3, -0.2, 0.1));
    ff_tensor *b = ff_test_tensor(FF_F64, 1, SHAPE(3), VALS(0.3, 0.4, 0.7));
    ff_tensor *in[2] = {a, b};
    CHECK(ff_gradcheck(apply_where, NULL, 2, in, NULL) == FF_OK);
    ff_set_requires_grad(a, true);
    ff_set_requires_grad(b, true);
    ff_tensor *m = apply_where(2, in, NULL), *s = ff_sum(m, 0, NULL, false);
    CHECK(ff_backward(s, NULL, NULL) == FF_OK);
    ff_tensor *ga = ff_grad(a), *gb = ff_grad(b);
    CHECK_TENSOR(ga, 2, SHAPE(2, 3), VALS(1, 0, 1, 1, 0, 0), 0);
    CHECK_TENSOR(gb, 1, SHAPE(3), VALS(0, 2, 1), 0); /* summed over the broadcast rows */
    RELEASE(a, b, m, s, ga, gb);
}

static void test_clip(void)
{
    ff_tensor *x = ff_test_tensor(FF_F32, 1, SHAPE(6), VALS(-3, -1, 0, 1, 4, NAN));
    ff_tensor *c = ff_clip(x, -1, 2), *lo = ff_clip(x, 0, INFINITY), *sw = ff_clip(x, 2, -1);
    CHECK_TENSOR(c, 1, SHAPE(6), VALS(-1, -1, 0, 1, 2, NAN), 0);
    CHECK_TENSOR(lo, 1, SHAPE(6), VALS(0, 0, 0, 1, 4, NAN), 0);
    CHECK_TENSOR(sw, 1, SHAPE(6), VALS(-1, -1, -1, -1, -1, NAN), 0); /* lo > hi: hi (min(max(x, lo), hi)) */
    ff_tensor *i = ff_test_tensor(FF_I32, 1, SHAPE(3), VALS(-5, 3, 9));
    /* integer bounds (0-d integer tensors) keep the dtype; float bounds give f32, an
     * infinite one included (PyTorch: u8.clamp(-inf, 0.0) is f32) */
    ff_tensor *z0 = ff_scalar_tensor(0, FF_I64), *z5 = ff_scalar_tensor(5, FF_I64);
    ff_tensor *ci = ff_clamp(i, z0, z5), *cf = ff_clip(i, 0.5, 5), *cinf = ff_clip(i, -INFINITY, 4);
    CHECK(ci && ff_tensor_dtype(ci) == FF_I32);
    CHECK_TENSOR(ci, 1, SHAPE(3), VALS(0, 3, 5), 0);
    CHECK(cf && ff_tensor_dtype(cf) == FF_F32);
    CHECK_TENSOR(cf, 1, SHAPE(3), VALS(0.5, 3, 5), 0);
    CHECK(cinf && ff_tensor_dtype(cinf) == FF_F32);
    CHECK_TENSOR(cinf, 1, SHAPE(3), VALS(-5, 3, 4), 0);
    ff_tensor_release(z0);
    ff_tensor_release(z5);
    /* gradient passes where lo <= x <= hi, bounds included (PyTorch clamp) */
    ff_tensor *g = ff_test_tensor(FF_F64, 1, SHAPE(5), VALS(-2, -1, 0.5, 2, 3));
    ff_set_requires_grad(g, true);
    ff_tensor *gc = ff_clip(g, -1, 2), *s = ff_sum(gc, 0, NULL, false);
    CHECK(ff_backward(s, NULL, NULL) == FF_OK);
    ff_tensor *gg = ff_grad(g);
    CHECK_TENSOR(gg, 1, SHAPE(5), VALS(0, 1, 1, 1, 0), 0);
    RELEASE(x, c, lo, sw, i, ci, cf, cinf, g, gc, s, gg);
}

static ff_tensor *apply_lerp(int n, ff_tensor *const *in, void *user)
{
    (void)n, (void)user;
    return ff_lerp(in[0], in[1], 0.3);
}

static void test_lerp(void)
{
    ff_tensor *a = ff_test_tensor(FF_F64, 1, SHAPE(2), VALS(0, 10)), *b = ff_test_tensor(FF_F64, 2, SHAPE(2, 2), VALS(1, 20, -1, 0));
    ff_tensor *l = ff_lerp(a, b, 0.25);
    CHECK_TENSOR(l, 2, SHAPE(2, 2), VALS(0.25, 12.5, -0.25, 7.5), 1e-15);
    ff_tensor *in[2] = {a, b};
    CHECK(ff_gradcheck(apply_lerp, NULL, 2, in, NULL) == FF_OK);
    RELEASE(a, b, l);
}

/* Tensor bounds broadcast and get PyTorch's masks: lo where x < lo < hi, hi where x > hi
 * or hi < lo, x where lo <= x <= hi (never for NaN). */
static void test_clamp_tensor_bounds(void)
{
    ff_tensor *x = ff_test_tensor(FF_F64, 1, SHAPE(5), VALS(-2, 0.5, 3, 1, NAN));
    ff_tensor *lo = ff_test_tensor(FF_F64, 2, SHAPE(2, 1), VALS(0, 1)), *hi = ff_test_tensor(FF_F64, 1, SHAPE(5), VALS(2, 2, 2, 0, 2));
    ff_set_requires_grad(x, true);
    ff_set_requires_grad(lo, true);
    ff_set_requires_grad(hi, true);
    ff_tensor *y = ff_clamp(x, lo, hi), *s = y ? ff_sum(y, 0, NULL, false) : NULL;
    CHECK_TENSOR(y, 2, SHAPE(2, 5), VALS(0, 0.5, 2, 0, NAN, 1, 1, 2, 0, NAN), 0);
    CHECK(s && ff_backward(s, NULL, NULL) == FF_OK);
    ff_tensor *gx = ff_grad(x), *gl = ff_grad(lo), *gh = ff_grad(hi);
    CHECK_TENSOR(gx, 1, SHAPE(5), VALS(0, 1, 0, 0, 0), 0);
    CHECK_TENSOR(gl, 2, SHAPE(2, 1), VALS(1, 2), 0);
    CHECK_TENSOR(gh, 1, SHAPE(5), VALS(0, 0, 2, 2, 0), 0);
    ff_tensor *none = ff_clamp(x, NULL, NULL);
    CHECK(none && !ff_tensor_shares_storage(none, x));
    RELEASE(x, lo, hi, y, s, gx, gl, gh, none);
}

/* Number bounds join the promotion before they are converted (u8 with -1 and 5.5 is f32,
 * the -1 never 255); an int bound the integer result cannot hold is an error; NaN bounds:
 * PyTorch 1.13's rule (both given: NaN everywhere; alone: x unchanged; a tensor bound:
 * NaN at its elements), never a gradient to x there. */
static void test_clamp_number_bounds(void)
{
    ff_tensor *u = ff_test_tensor(FF_U8, 1, SHAPE(3), VALS(1, 254, 0));
    ff_number m1 = ff_number_int(-1), f55 = ff_number_float(5.5), i5 = ff_number_int(5), i300 = ff_number_int(300);
    ff_tensor *a = ff_clamp_number(u, &m1, &f55), *b = ff_clamp_number(u, &m1, &i5);
    CHECK(a && ff_tensor_dtype(a) == FF_F32);
    CHECK_TENSOR(a, 1, SHAPE(3), VALS(1, 5.5, 0), 0);
    CHECK(b && ff_tensor_dtype(b) == FF_U8); /* all ints: u8, where -1 is 255 (PyTorch) */
    CHECK_TENSOR(b, 1, SHAPE(3), VALS(5, 5, 5), 0);
    CHECK_ERROR(ff_clamp_number(u, NULL, &i300) == NULL, FF_ERR_INVALID, "out of range");
    ff_number fnan = ff_number_float(NAN), zero = ff_number_float(0);
    ff_tensor *x = ff_test_tensor(FF_F64, 1, SHAPE(2), VALS(1, -2));
    ff_set_requires_grad(x, true);
    ff_tensor *both = ff_clamp_number(x, &zero, &fnan), *alone = ff_clamp_number(x, &fnan, NULL);
    CHECK_TENSOR(both, 1, SHAPE(2), VALS(NAN, NAN), 0);
    CHECK_TENSOR(alone, 1, SHAPE(2), VALS(1, -2), 0);
    ff_tensor *s = alone ? ff_sum(alone, 0, NULL, false) : NULL;
    CHECK(s && ff_backward(s, NULL, NULL) == FF_OK);
    ff_tensor *gx = ff_grad(x);
    CHECK_TENSOR(gx, 1, SHAPE(2), VALS(0, 0), 0);
    ff_tensor *lo = ff_test_tensor(FF_F64, 1, SHAPE(2), VALS(NAN, 0)), *t = ff_clamp(x, lo, NULL);
    CHECK_TENSOR(t, 1, SHAPE(2), VALS(NAN, 0), 0);
    RELEASE(u, a, b, x, both, alone, s, gx, lo, t);
}

FF_TEST_MAIN("ops_where", TEST(test_where_values), TEST(test_where_gradient), TEST(test_clip), TEST(test_lerp),
             TEST(test_clamp_tensor_bounds), TEST(test_clamp_number_bounds))
