/* Creation ops: eye, arange, linspace, seeded and global-generator random fills
 * (checked against the Philox formulas of the ABI header). */
#include <math.h>

#include "ff_test.h"

static void test_eye(void)
{
    ff_tensor *a = ff_eye(3, 3, FF_F32), *b = ff_eye(2, 3, FF_I64), *c = ff_eye(3, 2, FF_BOOL), *e = ff_eye(0, 2, FF_F32);
    CHECK_TENSOR(a, 2, SHAPE(3, 3), VALS(1, 0, 0, 0, 1, 0, 0, 0, 1), 0);
    CHECK(b && ff_tensor_dtype(b) == FF_I64);
    CHECK_TENSOR(b, 2, SHAPE(2, 3), VALS(1, 0, 0, 0, 1, 0), 0);
    CHECK_TENSOR(c, 2, SHAPE(3, 2), VALS(1, 0, 0, 1, 0, 0), 0);
    CHECK(e && ff_tensor_numel(e) == 0 && ff_tensor_dim(e, 1) == 2);
    CHECK_ERROR(ff_eye(-1, 2, FF_F32) == NULL, FF_ERR_INVALID, "ff_eye");
    RELEASE(a, b, c, e);
}

static void test_arange_linspace(void)
{
    ff_tensor *a = ff_arange(0, 5, 1, FF_I64), *b = ff_arange(1, 2, 0.25, FF_F32), *c = ff_arange(5, 0, -2, FF_I32);
    ff_tensor *d = ff_arange(0, 0, 1, FF_F32), *e = ff_arange(3, 1, 1, FF_F32), *f = ff_arange(0, 1, 0.3, FF_F64);
    CHECK(a && ff_tensor_dtype(a) == FF_I64);
    CHECK_TENSOR(a, 1, SHAPE(5), VALS(0, 1, 2, 3, 4), 0);
    CHECK_TENSOR(b, 1, SHAPE(4), VALS(1, 1.25, 1.5, 1.75), 0);
    CHECK_TENSOR(c, 1, SHAPE(3), VALS(5, 3, 1), 0);
    CHECK(d && ff_tensor_numel(d) == 0);
    CHECK(e && ff_tensor_numel(e) == 0); /* wrong direction: empty, as NumPy */
    CHECK_TENSOR(f, 1, SHAPE(4), VALS(0, 0.3, 0.6, 0.3 * 3), 1e-15);
    CHECK_ERROR(ff_arange(0, 1, 0, FF_F32) == NULL, FF_ERR_INVALID, "step");
    ff_tensor *l = ff_linspace(0, 1, 5, FF_F32), *l1 = ff_linspace(2, 3, 1, FF_F64), *l0 = ff_linspace(0, 1, 0, FF_F32);
    ff_tensor *li = ff_linspace(0, 10, 4, FF_I64), *lr = ff_linspace(1, -1, 3, FF_F64);
    CHECK_TENSOR(l, 1, SHAPE(5), VALS(0, 0.25, 0.5, 0.75, 1), 0);
    CHECK_TENSOR(l1, 1, SHAPE(1), VALS(2), 0);
    CHECK(l0 && ff_tensor_numel(l0) == 0);
    CHECK_TENSOR(li, 1, SHAPE(4), VALS(0, 3, 6, 10), 0);
    CHECK_TENSOR(lr, 1, SHAPE(3), VALS(1, 0, -1), 0);
    CHECK_ERROR(ff_linspace(0, 1, -1, FF_F32) == NULL, FF_ERR_INVALID, "num");
    RELEASE(a, b, c, d, e, f, l, l1, l0, li, lr);
}

static void test_seeded_random(void)
{
    ff_tensor *u = ff_rand_uniform(2, SHAPE(3, 4), FF_F64, -2, 3, 1234);
    ff_tensor *u2 = ff_rand_uniform(2, SHAPE(3, 4), FF_F64, -2, 3, 1234);
    ff_tensor *u3 = ff_rand_uniform(2, SHAPE(3, 4), FF_F64, -2, 3, 1235);
    double v[12], v2[12], v3[12];
    CHECK(ff_test_values(u, v, 12) == 0 && ff_test_values(u2, v2, 12) == 0 && ff_test_values(u3, v3, 12) == 0);
    int differ = 0;
    for (int i = 0; i < 12; i++) {
        CHECK_NEAR(v[i], -2 + 5 * ff_random_uniform01(1234, (uint64_t)i), 1e-15);
        CHECK(v[i] == v2[i] && v[i] >= -2 && v[i] < 3);
        differ += v[i] != v3[i];
    }
    CHECK(differ == 12);
    ff_tensor *n = ff_rand_normal(1, SHAPE(4), FF_F32, 1, 0.5, 99);
    double nv[4];
    CHECK(ff_test_values(n, nv, 4) == 0);
    for (int i = 0; i < 4; i++) CHECK_NEAR(nv[i], 1 + 0.5 * ff_random_normal01(99, (uint64_t)i), 1e-6);
    /* moments of a large sample */
    ff_tensor *big = ff_rand_normal(1, SHAPE(20000), FF_F64, 3, 2, 5);
    ff_tensor *m = ff_mean(big, 0, NULL, false), *s = ff_std(big, 0, NULL, 1, false);
    double mv = 0, sv = 0;
    CHECK(ff_tensor_item(m, &mv) == FF_OK && ff_tensor_item(s, &sv) == FF_OK);
    CHECK_NEAR(mv, 3, 0.05);
    CHECK_NEAR(sv, 2, 0.05);
    CHECK_ERROR(ff_rand_uniform(1, SHAPE(2), FF_I32, 0, 1, 1) == NULL, FF_ERR_INVALID, "float or complex dtype");
    CHECK_ERROR(ff_rand_normal(1, SHAPE(2), FF_F32, 0, -1, 1) == NULL, FF_ERR_INVALID, "std");
    RELEASE(u, u2, u3, n, big, m, s);
}

static void test_global_generator(void)
{
    ff_manual_seed(42);
    ff_tensor *a = ff_rand(1, SHAPE(3), FF_F64), *b = ff_randn(1, SHAPE(2), FF_F64);
    ff_manual_seed(42);
    ff_tensor *a2 = ff_rand(1, SHAPE(3), FF_F64);
    double va[3], vb[2], va2[3];
    CHECK(ff_test_values(a, va, 3) == 0 && ff_test_values(b, vb, 2) == 0 && ff_test_values(a2, va2, 3) == 0);
    for (int i = 0; i < 3; i++) {
        CHECK(va[i] == va2[i]);
        CHECK_NEAR(va[i], ff_random_uniform01(42, (uint64_t)i), 1e-15);
    }
    /* the second draw continues the counter where the first stopped */
    for (int i = 0; i < 2; i++) CHECK_NEAR(vb[i], ff_random_normal01(42, (uint64_t)(3 + i)), 1e-12);
    RELEASE(a, b, a2);
}

FF_TEST_MAIN("ops_creation", TEST(test_eye), TEST(test_arange_linspace), TEST(test_seeded_random),
             TEST(test_global_generator))
