/* det, inverse, solve, lstsq, cholesky, qr, svd (ops/decomp.c) on the reference: values
 * worked by hand, the error paths (each leaves nothing behind: the suite runs under
 * ASan/LSan), gradcheck of every op, and matrix_power's negative powers. */
#include "ff_test.h"

static void test_hand_values(void)
{
    ff_tensor *a = ff_test_tensor(FF_F64, 2, SHAPE(2, 2), VALS(4, 7, 2, 6));
    ff_tensor *d = ff_det(a), *inv = ff_inverse(a);
    CHECK_TENSOR(d, 0, NULL, VALS(10), 1e-12);
    CHECK_TENSOR(inv, 2, SHAPE(2, 2), VALS(0.6, -0.7, -0.2, 0.4), 1e-12);
    ff_tensor *b = ff_test_tensor(FF_F64, 1, SHAPE(2), VALS(1, 2)), *x = ff_solve(a, b);
    CHECK_TENSOR(x, 1, SHAPE(2), VALS(-0.8, 0.6), 1e-12);
    ff_tensor *s = ff_test_tensor(FF_F32, 2, SHAPE(2, 2), VALS(4, 2, 2, 5)), *l = ff_cholesky(s, false);
    CHECK_TENSOR(l, 2, SHAPE(2, 2), VALS(2, 0, 1, 2), 1e-6);
    ff_tensor *u = ff_cholesky(s, true);
    CHECK_TENSOR(u, 2, SHAPE(2, 2), VALS(2, 1, 0, 2), 1e-6);
    /* qr of [[3, 1], [4, 2]]: LAPACK's signs give R = [[-5, -2.2], [0, 0.4]] (the last column has nothing below the diagonal: no reflection) */
    ff_tensor *m = ff_test_tensor(FF_F64, 2, SHAPE(2, 2), VALS(3, 1, 4, 2)), *q = NULL, *r = NULL;
    CHECK(ff_qr(m, false, &q, &r) == FF_OK);
    CHECK_TENSOR(q, 2, SHAPE(2, 2), VALS(-0.6, -0.8, -0.8, 0.6), 1e-12);
    CHECK_TENSOR(r, 2, SHAPE(2, 2), VALS(-5, -2.2, 0, 0.4), 1e-12);
    /* svd of diag(3, -4) padded to 3 x 2: S = [4, 3] */
    ff_tensor *g = ff_test_tensor(FF_F64, 2, SHAPE(3, 2), VALS(3, 0, 0, -4, 0, 0)), *U = NULL, *S = NULL, *Vh = NULL;
    CHECK(ff_svd(g, true, &U, &S, &Vh) == FF_OK);
    CHECK_TENSOR(S, 1, SHAPE(2), VALS(4, 3), 1e-12);
    CHECK(ff_tensor_dim(U, 1) == 3 && ff_tensor_dim(Vh, 0) == 2);
    /* lstsq of an overdetermined consistent system: the exact solution */
    ff_tensor *A = ff_test_tensor(FF_F64, 2, SHAPE(3, 2), VALS(1, 0, 0, 1, 1, 1));
    ff_tensor *B = ff_test_tensor(FF_F64, 1, SHAPE(3), VALS(2, 3, 5)), *X = ff_lstsq(A, B);
    CHECK_TENSOR(X, 1, SHAPE(2), VALS(2, 3), 1e-12);
    ff_tensor *p = ff_matrix_power(a, -2), *ii = ff_matmul(inv, inv);
    CHECK(p && ii);
    ff_tensor *diff = ff_sub(p, ii), *mx = ff_amax(diff, 0, NULL, false);
    CHECK_TENSOR(mx, 0, NULL, VALS(0), 1e-12);
    RELEASE(a, d, inv, b, x, s, l, u, m, q, r, g, U, S, Vh, A, B, X, p, ii, diff, mx);
}

static void test_errors_leave_nothing(void)
{
    ff_tensor *sing = ff_ones(2, SHAPE(3, 3), FF_F64), *b = ff_ones(2, SHAPE(3, 2), FF_F64);
    ff_set_requires_grad(sing, true);
    CHECK_ERROR(ff_inverse(sing) == NULL, FF_ERR_INVALID, "singular");
    CHECK(strstr(ff_last_error(), "ff_inverse") != NULL);
    CHECK_ERROR(ff_solve(sing, b) == NULL, FF_ERR_INVALID, "singular");
    ff_tensor *neg = ff_full(2, SHAPE(2, 2), FF_F32, -1);
    CHECK_ERROR(ff_cholesky(neg, false) == NULL, FF_ERR_INVALID, "positive-definite");
    ff_tensor *rect = ff_ones(2, SHAPE(2, 3), FF_F32), *ints = ff_ones(2, SHAPE(2, 2), FF_I64);
    CHECK_ERROR(ff_det(rect) == NULL, FF_ERR_INVALID, "[2, 3]");
    CHECK_ERROR(ff_inverse(ints) == NULL, FF_ERR_INVALID, "i64");
    ff_tensor *v = ff_ones(1, SHAPE(3), FF_F32), *q = NULL, *r = NULL, *u = NULL, *s = NULL, *vh = NULL;
    CHECK_ERROR(ff_qr(v, false, &q, &r) != FF_OK, FF_ERR_INVALID, "rank 1");
    CHECK(q == NULL && r == NULL);
    CHECK_ERROR(ff_svd(v, false, &u, &s, &vh) != FF_OK, FF_ERR_INVALID, "ff_svd");
    CHECK(u == NULL && s == NULL && vh == NULL);
    ff_tensor *b32 = ff_ones(2, SHAPE(3, 2), FF_F32), *b4 = ff_ones(2, SHAPE(4, 2), FF_F64);
    CHECK_ERROR(ff_solve(sing, b32) == NULL, FF_ERR_INVALID, "one dtype");
    CHECK_ERROR(ff_lstsq(sing, b4) == NULL, FF_ERR_INVALID, "incompatible shapes");
    /* the gradient of det at a singular matrix is an error, not NaN */
    ff_tensor *d = ff_det(sing);
    CHECK(d != NULL);
    CHECK_ERROR(ff_backward(d, NULL, NULL) != FF_OK, FF_ERR_INVALID, "singular");
    RELEASE(sing, b, neg, rect, ints, v, b32, b4, d);
}

static ff_tensor *plus_eye(const ff_tensor *x, double c)
{
    int64_t n = ff_tensor_dim(x, -1);
    ff_tensor *e = ff_eye(n, n, ff_tensor_dtype(x)), *ce = ff_mul_scalar(e, c), *r = ff_add(x, ce);
    RELEASE(e, ce);
    return r;
}

static ff_tensor *f_solve(int n, ff_tensor *const *in, void *u)
{
    (void)n, (void)u;
    ff_tensor *a = plus_eye(in[0], 3), *r = ff_solve(a, in[1]);
    RELEASE(a);
    return r;
}
static ff_tensor *f_det(int n, ff_tensor *const *in, void *u)
{
    (void)n, (void)u;
    ff_tensor *a = plus_eye(in[0], 2), *r = ff_det(a);
    RELEASE(a);
    return r;
}
static ff_tensor *f_cholesky(int n, ff_tensor *const *in, void *u)
{
    (void)n, (void)u;
    ff_tensor *t = ff_mT(in[0]), *g = ff_matmul(in[0], t), *a = plus_eye(g, 1), *r = ff_cholesky(a, *(bool *)u);
    RELEASE(t, g, a);
    return r;
}
static ff_tensor *f_qr(int n, ff_tensor *const *in, void *u)
{
    (void)n;
    ff_tensor *q = NULL, *r = NULL, *out = NULL;
    if (ff_qr(in[0], false, &q, &r) == FF_OK) {
        ff_tensor *qf = ff_flatten(q, 0, -1), *rf = ff_flatten(r, 0, -1), *both[2] = {qf, rf};
        out = *(int *)u ? ff_concat(2, both, 0) : ff_tensor_retain(qf);
        RELEASE(qf, rf);
    }
    RELEASE(q, r);
    return out;
}
/* S and the projector U U^T: what the SVD fixes */
static ff_tensor *f_svd(int n, ff_tensor *const *in, void *u)
{
    (void)n, (void)u;
    ff_tensor *U = NULL, *S = NULL, *Vh = NULL, *out = NULL;
    if (ff_svd(in[0], false, &U, &S, &Vh) == FF_OK) {
        ff_tensor *Ut = ff_mT(U), *P = ff_matmul(U, Ut), *pf = ff_flatten(P, 0, -1), *sf = ff_flatten(S, 0, -1);
        ff_tensor *both[2] = {sf, pf};
        out = ff_concat(2, both, 0);
        RELEASE(Ut, P, pf, sf);
    }
    RELEASE(U, S, Vh);
    return out;
}
static ff_tensor *f_lstsq(int n, ff_tensor *const *in, void *u)
{
    (void)n, (void)u;
    return ff_lstsq(in[0], in[1]);
}
static ff_tensor *f_power(int n, ff_tensor *const *in, void *u)
{
    (void)n, (void)u;
    ff_tensor *a = plus_eye(in[0], 3), *r = ff_matrix_power(a, -2);
    RELEASE(a);
    return r;
}

static ff_tensor *rnd(int nd, const int64_t *shape, uint64_t seed)
{
    ff_manual_seed(seed);
    return ff_randn(nd, shape, FF_F64);
}

static void test_gradcheck_every_op(void)
{
    bool lower = false, upper = true;
    int q_only = 0, q_and_r = 1;
    struct {
        const char *name;
        ff_gradcheck_fn f;
        void *user;
        int n, nd0, nd1;
        int64_t s0[3], s1[3];
    } cs[] = {
        {"solve", f_solve, NULL, 2, 3, 3, {2, 3, 3}, {2, 3, 2}},
        {"solve_vec", f_solve, NULL, 2, 2, 1, {4, 4}, {4}},
        {"det", f_det, NULL, 1, 3, 0, {2, 3, 3}, {0}},
        {"cholesky", f_cholesky, &lower, 1, 2, 0, {3, 3}, {0}},
        {"cholesky_upper", f_cholesky, &upper, 1, 2, 0, {3, 3}, {0}},
        {"qr_tall_q", f_qr, &q_only, 1, 2, 0, {5, 3}, {0}},
        {"qr_wide", f_qr, &q_and_r, 1, 2, 0, {3, 5}, {0}},
        {"qr_square_batch", f_qr, &q_and_r, 1, 3, 0, {2, 3, 3}, {0}},
        {"svd_tall", f_svd, NULL, 1, 2, 0, {5, 3}, {0}},
        {"svd_wide_batch", f_svd, NULL, 1, 3, 0, {2, 3, 4}, {0}},
        {"lstsq_tall", f_lstsq, NULL, 2, 2, 2, {5, 3}, {5, 2}},
        {"lstsq_wide", f_lstsq, NULL, 2, 2, 2, {2, 4}, {2, 3}},
        {"matrix_power_-2", f_power, NULL, 1, 2, 0, {3, 3}, {0}},
    };
    for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) {
        ff_tensor *in[2] = {rnd(cs[i].nd0, cs[i].s0, 10 + i), cs[i].n > 1 ? rnd(cs[i].nd1, cs[i].s1, 50 + i) : NULL};
        ff_status st = ff_gradcheck(cs[i].f, cs[i].user, cs[i].n, in, NULL);
        if (st) fprintf(stderr, "  %s: %s\n", cs[i].name, ff_last_error());
        CHECK(st == FF_OK);
        RELEASE(in[0], in[1]);
    }
}

FF_TEST_MAIN("ops_decomp", TEST(test_hand_values), TEST(test_errors_leave_nothing), TEST(test_gradcheck_every_op))
