/* Binary ops: type promotion (tensor-tensor and weak scalars), broadcasting, NaN,
 * strided/0-d/empty operands, error messages, and gradients with broadcasting. */
#include <math.h>

#include "ff_test.h"

static void test_promotion(void)
{
    ff_tensor *i32 = ff_test_tensor(FF_I32, 1, SHAPE(2), VALS(7, -7));
    ff_tensor *f32 = ff_test_tensor(FF_F32, 1, SHAPE(2), VALS(0.5, 0.25));
    ff_tensor *u8 = ff_test_tensor(FF_U8, 1, SHAPE(2), VALS(250, 3));
    ff_tensor *b = ff_test_tensor(FF_BOOL, 1, SHAPE(2), VALS(1, 0));
    ff_tensor *i64 = ff_test_tensor(FF_I64, 1, SHAPE(2), VALS(2, 2));
    ff_tensor *f64 = ff_test_tensor(FF_F64, 1, SHAPE(2), VALS(1, 2));
    ff_tensor *r1 = ff_add(i32, f32);
    CHECK(r1 && ff_tensor_dtype(r1) == FF_F32);
    CHECK_TENSOR(r1, 1, SHAPE(2), VALS(7.5, -6.75), 0);
    ff_tensor *r2 = ff_add(b, b);
    CHECK(r2 && ff_tensor_dtype(r2) == FF_BOOL);
    CHECK_TENSOR(r2, 1, SHAPE(2), VALS(1, 0), 0);
    ff_tensor *r3 = ff_add(u8, i32);
    CHECK(r3 && ff_tensor_dtype(r3) == FF_I32);
    CHECK_TENSOR(r3, 1, SHAPE(2), VALS(257, -4), 0); /* no u8 wrap-around */
    ff_tensor *r4 = ff_div(i32, i64);
    CHECK(r4 && ff_tensor_dtype(r4) == FF_F32);
    CHECK_TENSOR(r4, 1, SHAPE(2), VALS(3.5, -3.5), 0);
    ff_tensor *r5 = ff_mul(i64, f64);
    CHECK(r5 && ff_tensor_dtype(r5) == FF_F64);
    ff_tensor *r6 = ff_add(i32, i64);
    CHECK(r6 && ff_tensor_dtype(r6) == FF_I64);
    /* weak numbers: the kind decides, not the value */
    ff_tensor *s1 = ff_add_scalar(f32, 2.0), *s2 = ff_binary_number(FF_BINARY_ADD, i32, ff_number_int(2));
    ff_tensor *s3 = ff_add_scalar(i32, 2.5);
    ff_tensor *s4 = ff_binary_number(FF_BINARY_ADD, b, ff_number_int(2));
    ff_tensor *s5 = ff_binary_number(FF_BINARY_MUL, u8, ff_number_int(2)), *s6 = ff_div_scalar(i32, 2.0);
    CHECK(s1 && ff_tensor_dtype(s1) == FF_F32);
    CHECK(s2 && ff_tensor_dtype(s2) == FF_I32);
    CHECK_TENSOR(s2, 1, SHAPE(2), VALS(9, -5), 0);
    CHECK(s3 && ff_tensor_dtype(s3) == FF_F32);
    CHECK_TENSOR(s3, 1, SHAPE(2), VALS(9.5, -4.5), 0);
    CHECK(s4 && ff_tensor_dtype(s4) == FF_I64);
    CHECK_TENSOR(s4, 1, SHAPE(2), VALS(3, 2), 0);
    CHECK(s5 && ff_tensor_dtype(s5) == FF_U8);
    CHECK_TENSOR(s5, 1, SHAPE(2), VALS(244, 6), 0); /* u8 stays u8 and wraps, as NumPy/PyTorch */
    CHECK(s6 && ff_tensor_dtype(s6) == FF_F32);
    CHECK_TENSOR(s6, 1, SHAPE(2), VALS(3.5, -3.5), 0);
    ff_tensor *rs = ff_rbinary_scalar(FF_BINARY_SUB, 1.0, f32);
    CHECK_TENSOR(rs, 1, SHAPE(2), VALS(0.5, 0.75), 0);
    /* an integral float is still a float (i32 * 2.0 -> f32), and a huge one does not wrap */
    ff_tensor *f1 = ff_mul_scalar(i32, 2.0), *f2 = ff_mul_scalar(i64, 1e30);
    CHECK(f1 && ff_tensor_dtype(f1) == FF_F32);
    CHECK_TENSOR(f1, 1, SHAPE(2), VALS(14, -14), 0);
    CHECK(f2 && ff_tensor_dtype(f2) == FF_F32);
    /* bool with a bool number stays bool; an int number gives i64 */
    ff_tensor *bb = ff_binary_number(FF_BINARY_MUL, b, ff_number_bool(true));
    CHECK(bb && ff_tensor_dtype(bb) == FF_BOOL);
    CHECK_TENSOR(bb, 1, SHAPE(2), VALS(1, 0), 0);
    /* all 64 bits of an int number survive */
    ff_tensor *big = ff_binary_number(FF_BINARY_ADD, i64, ff_number_int(INT64_C(4611686018427387905)));
    int64_t got[2] = {0, 0};
    CHECK(big && ff_tensor_to_host(big, got, sizeof got) == FF_OK && got[0] == INT64_C(4611686018427387907));
    /* a 0-d tensor does not widen a dimensioned one of its category; a higher category does */
    ff_tensor *z64 = ff_scalar_tensor(1, FF_I64), *zf64 = ff_scalar_tensor(1, FF_F64);
    ff_tensor *d1 = ff_sub(i32, z64), *d2 = ff_mul(i32, zf64), *d3 = ff_mul(f32, zf64), *d4 = ff_sub(z64, i32);
    CHECK(d1 && ff_tensor_dtype(d1) == FF_I32);
    CHECK_TENSOR(d1, 1, SHAPE(2), VALS(6, -8), 0);
    CHECK(d2 && ff_tensor_dtype(d2) == FF_F64);
    CHECK(d3 && ff_tensor_dtype(d3) == FF_F32);
    CHECK(d4 && ff_tensor_dtype(d4) == FF_I32);
    ff_tensor *zz = ff_add(z64, zf64); /* both 0-d: ordinary promotion */
    CHECK(zz && ff_tensor_dtype(zz) == FF_F64);
    RELEASE(i32, f32, u8, b, i64, f64, r1, r2, r3, r4, r5, r6, s1, s2, s3, s4, s5, s6, rs, f1, f2, bb, big, z64,
            zf64, d1, d2, d3, d4, zz);
}

static void test_broadcast_and_errors(void)
{
    ff_tensor *a = ff_test_tensor(FF_F32, 3, SHAPE(2, 1, 3), VALS(1, 2, 3, 4, 5, 6));
    ff_tensor *b = ff_test_tensor(FF_F32, 2, SHAPE(2, 1), VALS(10, 20));
    ff_tensor *c = ff_add(a, b);
    CHECK_TENSOR(c, 3, SHAPE(2, 2, 3), VALS(11, 12, 13, 21, 22, 23, 14, 15, 16, 24, 25, 26), 0);
    ff_tensor *d = ff_test_tensor(FF_F32, 1, SHAPE(4), VALS(1, 2, 3, 4));
    ff_tensor *m = ff_ones(2, SHAPE(2, 3), FF_F32);
    CHECK_ERROR(ff_add(m, d) == NULL, FF_ERR_INVALID, "ff_add");
    CHECK(strstr(ff_last_error(), "[2, 3]") && strstr(ff_last_error(), "[4]"));
    /* 0-d with anything, and empty */
    ff_tensor *z = ff_scalar_tensor(2, FF_F32), *zm = ff_mul(z, a);
    CHECK(zm && ff_tensor_ndim(zm) == 3);
    ff_tensor *e = ff_zeros(2, SHAPE(0, 3), FF_F32), *ee = ff_add(e, m);
    CHECK(ee == NULL); /* [0,3] with [2,3]: incompatible */
    ff_clear_error();
    ff_tensor *r3 = ff_test_tensor(FF_F32, 1, SHAPE(3), VALS(1, 2, 3)), *e3 = ff_add(e, r3);
    CHECK(e3 && ff_tensor_numel(e3) == 0 && ff_tensor_dim(e3, 1) == 3);
    CHECK_ERROR(ff_add(NULL, a) == NULL, FF_ERR_INVALID, "NULL");
    RELEASE(a, b, c, d, m, z, zm, e, r3, e3);
}

static void test_comparisons_nan_fmod_pow(void)
{
    ff_tensor *a = ff_test_tensor(FF_F64, 1, SHAPE(4), VALS(1, NAN, 3, -7.5));
    ff_tensor *b = ff_test_tensor(FF_F64, 1, SHAPE(4), VALS(2, 1, NAN, 2));
    ff_tensor *mx = ff_maximum(a, b), *mn = ff_minimum(a, b), *lt = ff_lt(a, b), *ne = ff_ne(a, b);
    CHECK_TENSOR(mx, 1, SHAPE(4), VALS(2, NAN, NAN, 2), 0);
    CHECK_TENSOR(mn, 1, SHAPE(4), VALS(1, NAN, NAN, -7.5), 0);
    CHECK(lt && ff_tensor_dtype(lt) == FF_BOOL);
    CHECK_TENSOR(lt, 1, SHAPE(4), VALS(1, 0, 0, 1), 0);
    CHECK_TENSOR(ne, 1, SHAPE(4), VALS(1, 1, 1, 1), 0); /* NaN != anything */
    ff_tensor *fm = ff_fmod(a, b);
    CHECK_TENSOR(fm, 1, SHAPE(4), VALS(1, NAN, NAN, -1.5), 0); /* sign of the dividend */
    ff_tensor *p = ff_pow_scalar(b, 2.0);
    CHECK_TENSOR(p, 1, SHAPE(4), VALS(4, 1, NAN, 4), 0);
    ff_tensor *t = ff_test_tensor(FF_BOOL, 1, SHAPE(4), VALS(1, 1, 0, 0)), *f = ff_test_tensor(FF_BOOL, 1, SHAPE(4), VALS(1, 0, 1, 0));
    ff_tensor *la = ff_logical_and(t, f), *lo = ff_logical_or(t, f), *lx = ff_logical_xor(t, f);
    CHECK_TENSOR(la, 1, SHAPE(4), VALS(1, 0, 0, 0), 0);
    CHECK_TENSOR(lo, 1, SHAPE(4), VALS(1, 1, 1, 0), 0);
    CHECK_TENSOR(lx, 1, SHAPE(4), VALS(0, 1, 1, 0), 0);
    RELEASE(a, b, mx, mn, lt, ne, fm, p, t, f, la, lo, lx);
}

static void test_strided_operands(void)
{
    ff_tensor *x = ff_test_tensor(FF_F32, 2, SHAPE(2, 3), VALS(1, 2, 3, 4, 5, 6));
    ff_tensor *t = ff_transpose(x, 0, 1);              /* [[1,4],[2,5],[3,6]] */
    ff_tensor *s = ff_slice(x, 1, 0, 3, 2);            /* [[1,3],[4,6]] */
    ff_tensor *ts = ff_slice(t, 0, 1, 3, 1);           /* [[2,5],[3,6]] */
    ff_tensor *r = ff_sub(ts, s);
    CHECK_TENSOR(r, 2, SHAPE(2, 2), VALS(1, 2, -1, 0), 0);
    RELEASE(x, t, s, ts, r);
}

/* ---- gradients -------------------------------------------------------------------- */
static ff_tensor *apply_binary(int n, ff_tensor *const *in, void *user)
{
    (void)n;
    return ff_binary((ff_binary_op)(intptr_t)user, in[0], in[1]);
}

static void test_gradcheck_broadcasting(void)
{
    ff_tensor *a = ff_test_tensor(FF_F64, 2, SHAPE(2, 3), VALS(0.7, 1.3, 2.1, 0.4, 1.9, 0.8));
    ff_tensor *b = ff_test_tensor(FF_F64, 1, SHAPE(3), VALS(1.1, 0.6, 1.6));
    ff_tensor *c = ff_test_tensor(FF_F32, 2, SHAPE(2, 1), VALS(0.9, 1.45));
    static const ff_binary_op ops[] = {FF_BINARY_ADD, FF_BINARY_SUB, FF_BINARY_MUL, FF_BINARY_DIV,
                                       FF_BINARY_POW, FF_BINARY_MAXIMUM, FF_BINARY_MINIMUM, FF_BINARY_FMOD};
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
        ff_tensor *ab[2] = {a, b}, *ca[2] = {c, a};
        ff_status s1 = ff_gradcheck(apply_binary, (void *)(intptr_t)ops[i], 2, ab, NULL);
        if (s1) fprintf(stderr, "  op %d [2,3]x[3]: %s\n", (int)ops[i], ff_last_error());
        ff_status s2 = ff_gradcheck(apply_binary, (void *)(intptr_t)ops[i], 2, ca, NULL);
        if (s2) fprintf(stderr, "  op %d [2,1]x[2,3]: %s\n", (int)ops[i], ff_last_error());
        CHECK(s1 == FF_OK && s2 == FF_OK);
    }
    RELEASE(a, b, c);
}

static void test_gradient_dtype_and_ties(void)
{
    ff_tensor *a = ff_test_tensor(FF_F32, 1, SHAPE(3), VALS(1, 2, 3));
    ff_tensor *b = ff_test_tensor(FF_F64, 1, SHAPE(3), VALS(3, 2, 1));
    ff_set_requires_grad(a, true);
    ff_set_requires_grad(b, true);
    ff_tensor *m = ff_maximum(a, b), *s = ff_sum(m, 0, NULL, false);
    CHECK(ff_backward(s, NULL, NULL) == FF_OK);
    ff_tensor *ga = ff_grad(a), *gb = ff_grad(b);
    CHECK(ga && ff_tensor_dtype(ga) == FF_F32); /* gradient in the leaf's own dtype */
    CHECK_TENSOR(ga, 1, SHAPE(3), VALS(0, 0.5, 1), 0);
    CHECK_TENSOR(gb, 1, SHAPE(3), VALS(1, 0.5, 0), 0);
    /* comparisons carry no gradient */
    ff_tensor *lt = ff_lt(a, b);
    CHECK(lt && !ff_requires_grad(lt));
    RELEASE(a, b, m, s, ga, gb, lt);
}

/* Python's % and // on integers: exact (i64 values past 2^53), divisor's sign; bitwise ops
 * in the integer dtype, logical on bool, refused on floats. */
static void test_divmod_and_bitwise(void)
{
    int64_t av[4] = {INT64_C(9007199254740993), -7, 7, INT64_MIN}, bv[4] = {7, 2, -2, 7};
    ff_tensor *a = ff_from_data(av, 1, SHAPE(4), FF_I64), *b = ff_from_data(bv, 1, SHAPE(4), FF_I64);
    ff_tensor *r = ff_remainder(a, b), *q = ff_floor_divide(a, b);
    int64_t rv[4], qv[4];
    CHECK(r && ff_tensor_dtype(r) == FF_I64 && ff_tensor_to_host(r, rv, sizeof rv) == FF_OK);
    CHECK(q && ff_tensor_dtype(q) == FF_I64 && ff_tensor_to_host(q, qv, sizeof qv) == FF_OK);
    CHECK(rv[0] == 5 && rv[1] == 1 && rv[2] == -1 && rv[3] == 6);
    CHECK(qv[0] == INT64_C(1286742750677284) && qv[1] == -4 && qv[2] == -4 && qv[3] == INT64_C(-1317624576693539402));
    ff_tensor *f = ff_test_tensor(FF_F32, 1, SHAPE(3), VALS(1, -7, 7)), *d = ff_test_tensor(FF_F32, 1, SHAPE(3), VALS(0.1, 0, 0));
    ff_tensor *fq = ff_floor_divide(f, d);
    CHECK_TENSOR(fq, 1, SHAPE(3), VALS(9, -INFINITY, INFINITY), 0); /* 1 // 0.1 is 9 in Python */
    ff_tensor *i6 = ff_test_tensor(FF_I64, 1, SHAPE(2), VALS(6, -8)), *i3 = ff_test_tensor(FF_I64, 1, SHAPE(2), VALS(3, 7));
    ff_tensor *band = ff_bitwise_and(i6, i3), *bor = ff_bitwise_or(i6, i3), *bnot = ff_bitwise_not(i6);
    CHECK(band && ff_tensor_dtype(band) == FF_I64);
    CHECK_TENSOR(band, 1, SHAPE(2), VALS(2, 0), 0);
    CHECK_TENSOR(bor, 1, SHAPE(2), VALS(7, -1), 0);
    CHECK_TENSOR(bnot, 1, SHAPE(2), VALS(-7, 7), 0);
    CHECK_ERROR(ff_bitwise_xor(f, f) == NULL, FF_ERR_INVALID, "bitwise");
    RELEASE(a, b, r, q, f, d, fq, i6, i3, band, bor, bnot);
}

FF_TEST_MAIN("ops_binary", TEST(test_promotion), TEST(test_broadcast_and_errors), TEST(test_comparisons_nan_fmod_pow),
             TEST(test_strided_operands), TEST(test_gradcheck_broadcasting), TEST(test_gradient_dtype_and_ties),
             TEST(test_divmod_and_bitwise))
