/* matmul (numpy.matmul semantics: 1-D operands, batch broadcasting, dtypes, strided
 * operands, errors) and outer, with gradients. */
#include "ff_test.h"

static void test_matmul_2d_and_1d(void)
{
    ff_tensor *a = ff_test_tensor(FF_F32, 2, SHAPE(2, 3), VALS(1, 2, 3, 4, 5, 6));
    ff_tensor *b = ff_test_tensor(FF_F32, 2, SHAPE(3, 2), VALS(1, 0, 0, 1, 2, -1));
    ff_tensor *v = ff_test_tensor(FF_F32, 1, SHAPE(3), VALS(1, -1, 2));
    ff_tensor *w = ff_test_tensor(FF_F32, 1, SHAPE(2), VALS(3, 1));
    ff_tensor *ab = ff_matmul(a, b);
    CHECK_TENSOR(ab, 2, SHAPE(2, 2), VALS(7, -1, 16, -1), 0);
    ff_tensor *av = ff_matmul(a, v); /* [2,3] @ [3] -> [2] */
    CHECK_TENSOR(av, 1, SHAPE(2), VALS(5, 11), 0);
    ff_tensor *wa = ff_matmul(w, a); /* [2] @ [2,3] -> [3] */
    CHECK_TENSOR(wa, 1, SHAPE(3), VALS(7, 11, 15), 0);
    ff_tensor *vv = ff_matmul(v, v); /* -> 0-d */
    CHECK_TENSOR(vv, 0, NULL, VALS(6), 0);
    RELEASE(a, b, v, w, ab, av, wa, vv);
}

static void test_matmul_batched_broadcast(void)
{
    /* a [2, 1, 2, 2] (batch 2x1) @ b [3, 2, 1] (batch 3) -> [2, 3, 2, 1] */
    ff_tensor *a = ff_test_tensor(FF_F64, 4, SHAPE(2, 1, 2, 2), VALS(1, 0, 0, 1, 2, 1, 0, -1));
    ff_tensor *b = ff_test_tensor(FF_F64, 3, SHAPE(3, 2, 1), VALS(1, 2, 3, 4, -1, 0.5));
    ff_tensor *c = ff_matmul(a, b);
    CHECK_TENSOR(c, 4, SHAPE(2, 3, 2, 1), VALS(1, 2, 3, 4, -1, 0.5, 4, -2, 10, -4, -1.5, -0.5), 0);
    /* batched @ 1-D: [2,1,2,2] @ [2] -> [2,1,2] */
    ff_tensor *v = ff_test_tensor(FF_F64, 1, SHAPE(2), VALS(1, 1));
    ff_tensor *cv = ff_matmul(a, v);
    CHECK_TENSOR(cv, 3, SHAPE(2, 1, 2), VALS(1, 1, 3, -1), 0);
    ff_tensor *vc = ff_matmul(v, a); /* [2] @ [2,1,2,2] -> [2,1,2] */
    CHECK_TENSOR(vc, 3, SHAPE(2, 1, 2), VALS(1, 1, 2, 0), 0);
    RELEASE(a, b, c, v, cv, vc);
}

static void test_matmul_dtypes_strided_errors(void)
{
    ff_tensor *ai = ff_test_tensor(FF_I32, 2, SHAPE(2, 2), VALS(1, 2, 3, 4));
    ff_tensor *bf = ff_test_tensor(FF_F32, 2, SHAPE(2, 2), VALS(0.5, 0, 0, 2));
    ff_tensor *c = ff_matmul(ai, bf);
    CHECK(c && ff_tensor_dtype(c) == FF_F32);
    CHECK_TENSOR(c, 2, SHAPE(2, 2), VALS(0.5, 4, 1.5, 8), 0);
    ff_tensor *ii = ff_matmul(ai, ai);
    CHECK(ii && ff_tensor_dtype(ii) == FF_I32);
    CHECK_TENSOR(ii, 2, SHAPE(2, 2), VALS(7, 10, 15, 22), 0);
    /* transposed operand: a^T @ a */
    ff_tensor *t = ff_mT(bf), *tt = ff_matmul(t, ai);
    CHECK_TENSOR(tt, 2, SHAPE(2, 2), VALS(0.5, 1, 6, 8), 0);
    /* sliced operand: every other column of [2, 4] */
    ff_tensor *w = ff_test_tensor(FF_F32, 2, SHAPE(2, 4), VALS(1, 9, 2, 9, 3, 9, 4, 9)), *ws = ff_slice(w, 1, 0, 4, 2);
    ff_tensor *wsm = ff_matmul(ws, bf);
    CHECK_TENSOR(wsm, 2, SHAPE(2, 2), VALS(0.5, 4, 1.5, 8), 0);
    ff_tensor *x = ff_ones(2, SHAPE(2, 3), FF_F32), *y = ff_ones(2, SHAPE(4, 5), FF_F32);
    CHECK_ERROR(ff_matmul(x, y) == NULL, FF_ERR_INVALID, "[2, 3]");
    CHECK(strstr(ff_last_error(), "[4, 5]") != NULL);
    ff_tensor *p = ff_ones(3, SHAPE(2, 2, 3), FF_F32), *q = ff_ones(3, SHAPE(3, 3, 2), FF_F32);
    CHECK_ERROR(ff_matmul(p, q) == NULL, FF_ERR_INVALID, "ff_matmul");
    ff_tensor *s = ff_scalar_tensor(1, FF_F32);
    CHECK_ERROR(ff_matmul(s, x) == NULL, FF_ERR_INVALID, "at least 1 dim");
    ff_tensor *bb = ff_ones(2, SHAPE(2, 2), FF_BOOL);
    CHECK_ERROR(ff_matmul(bb, bb) == NULL, FF_ERR_INVALID, "bool");
    ff_tensor *e1 = ff_zeros(2, SHAPE(2, 0), FF_F32), *e2 = ff_zeros(2, SHAPE(0, 3), FF_F32), *ee = ff_matmul(e1, e2);
    CHECK_TENSOR(ee, 2, SHAPE(2, 3), VALS(0, 0, 0, 0, 0, 0), 0); /* K = 0: zeros */
    RELEASE(ai, bf, c, ii, t, tt, w, ws, wsm, x, y, p, q, s, bb, e1, e2, ee);
}

static void test_outer(void)
{
    ff_tensor *a = ff_test_tensor(FF_F32, 1, SHAPE(2), VALS(1, 2)), *b = ff_test_tensor(FF_I32, 1, SHAPE(3), VALS(3, 4, 5));
    ff_tensor *o = ff_outer(a, b);
    CHECK(o && ff_tensor_dtype(o) == FF_F32);
    CHECK_TENSOR(o, 2, SHAPE(2, 3), VALS(3, 4, 5, 6, 8, 10), 0);
    CHECK_ERROR(ff_outer(o, a) == NULL, FF_ERR_INVALID, "1-D");
    RELEASE(a, b, o);
}

/* ---- gradients ---------------------------------------------------------------------- */
static ff_tensor *apply_matmul(int n, ff_tensor *const *in, void *user)
{
    (void)n, (void)user;
    return ff_matmul(in[0], in[1]);
}

static ff_tensor *apply_outer(int n, ff_tensor *const *in, void *user)
{
    (void)n, (void)user;
    return ff_outer(in[0], in[1]);
}

static ff_tensor *rnd(int nd, const int64_t *shape, uint64_t seed)
{
    return ff_rand_uniform(nd, shape, FF_F64, -1, 1, seed);
}

static void test_gradcheck_matmul_shapes(void)
{
    static const struct {
        int na, nb;
        int64_t sa[4], sb[4];
    } cs[] = {
        {2, 2, {2, 3}, {3, 4}},          {1, 1, {3}, {3}},          {1, 2, {3}, {3, 2}},
        {2, 1, {2, 3}, {3}},             {3, 3, {2, 2, 3}, {2, 3, 2}}, {3, 2, {2, 2, 3}, {3, 2}},
        {4, 3, {2, 1, 2, 3}, {3, 3, 2}}, {1, 3, {3}, {2, 3, 2}},    {3, 1, {2, 2, 3}, {3}},
    };
    for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) {
        ff_tensor *in[2] = {rnd(cs[i].na, cs[i].sa, 10 + i), rnd(cs[i].nb, cs[i].sb, 100 + i)};
        ff_status st = ff_gradcheck(apply_matmul, NULL, 2, in, NULL);
        if (st) fprintf(stderr, "  matmul case %zu: %s\n", i, ff_last_error());
        CHECK(st == FF_OK);
        RELEASE(in[0], in[1]);
    }
    ff_tensor *in[2] = {rnd(1, SHAPE(3), 7), rnd(1, SHAPE(2), 8)};
    CHECK(ff_gradcheck(apply_outer, NULL, 2, in, NULL) == FF_OK);
    RELEASE(in[0], in[1]);
}

/* The broadcast operand's gradient is summed over the batch: d sum(A_b @ B) / dB. */
static void test_batch_broadcast_gradient_value(void)
{
    ff_tensor *a = ff_test_tensor(FF_F64, 3, SHAPE(2, 1, 2), VALS(1, 2, 3, 4));
    ff_tensor *b = ff_test_tensor(FF_F64, 2, SHAPE(2, 1), VALS(5, 6));
    ff_set_requires_grad(a, true);
    ff_set_requires_grad(b, true);
    ff_tensor *c = ff_matmul(a, b), *s = ff_sum(c, 0, NULL, false);
    CHECK(ff_backward(s, NULL, NULL) == FF_OK);
    ff_tensor *ga = ff_grad(a), *gb = ff_grad(b);
    CHECK_TENSOR(ga, 3, SHAPE(2, 1, 2), VALS(5, 6, 5, 6), 0);
    CHECK_TENSOR(gb, 2, SHAPE(2, 1), VALS(4, 6), 0);
    RELEASE(a, b, c, s, ga, gb);
}

FF_TEST_MAIN("ops_linalg", TEST(test_matmul_2d_and_1d), TEST(test_matmul_batched_broadcast),
             TEST(test_matmul_dtypes_strided_errors), TEST(test_outer), TEST(test_gradcheck_matmul_shapes),
             TEST(test_batch_broadcast_gradient_value))
