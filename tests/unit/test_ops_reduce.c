/* Reductions: values over axes sets / negative axes / keepdim, result dtypes, NaN,
 * empty and 0-d inputs, strided inputs, errors, and gradients (gradcheck + values at
 * ties and zeros). */
#include <math.h>

#include "ff_test.h"

#define AXES(...) ((const int[]){__VA_ARGS__})

/* x = [[[0,1,2,3],[4,5,6,7],[8,9,10,11]], [[12..15],[16..19],[20..23]]] */
static ff_tensor *iota234(ff_dtype dt)
{
    double v[24];
    for (int i = 0; i < 24; i++) v[i] = i;
    return ff_test_tensor(dt, 3, SHAPE(2, 3, 4), v);
}

static void test_sum_axes_keepdim(void)
{
    ff_tensor *x = iota234(FF_F32);
    ff_tensor *all = ff_sum(x, 0, NULL, false);
    CHECK_TENSOR(all, 0, NULL, VALS(276), 0);
    ff_tensor *a0 = ff_sum(x, 1, AXES(0), false);
    CHECK_TENSOR(a0, 2, SHAPE(3, 4), VALS(12, 14, 16, 18, 20, 22, 24, 26, 28, 30, 32, 34), 0);
    ff_tensor *am = ff_sum(x, 1, AXES(-1), true);
    CHECK_TENSOR(am, 3, SHAPE(2, 3, 1), VALS(6, 22, 38, 54, 70, 86), 0);
    ff_tensor *a02 = ff_sum(x, 2, AXES(2, 0), false);
    CHECK_TENSOR(a02, 1, SHAPE(3), VALS(6 + 54, 22 + 70, 38 + 86), 0);
    ff_tensor *k = ff_sum(x, 0, NULL, true);
    CHECK_TENSOR(k, 3, SHAPE(1, 1, 1), VALS(276), 0);
    CHECK(ff_tensor_dtype(all) == FF_F32);
    CHECK_ERROR(ff_sum(x, 1, AXES(3), false) == NULL, FF_ERR_INVALID, "ff_sum");
    CHECK_ERROR(ff_sum(x, 2, AXES(1, -2), false) == NULL, FF_ERR_INVALID, "repeated");
    RELEASE(x, all, a0, am, a02, k);
}

static void test_sum_prod_dtypes(void)
{
    ff_tensor *i = ff_test_tensor(FF_I32, 1, SHAPE(3), VALS(2000000000, 2000000000, 1));
    ff_tensor *si = ff_sum(i, 0, NULL, false);
    CHECK(si && ff_tensor_dtype(si) == FF_I64);
    CHECK_TENSOR(si, 0, NULL, VALS(4000000001.0), 0); /* no i32 overflow */
    ff_tensor *b = ff_test_tensor(FF_BOOL, 1, SHAPE(4), VALS(1, 0, 1, 1));
    ff_tensor *sb = ff_sum(b, 0, NULL, false);
    CHECK(sb && ff_tensor_dtype(sb) == FF_I64);
    CHECK_TENSOR(sb, 0, NULL, VALS(3), 0);
    ff_tensor *u = ff_test_tensor(FF_U8, 1, SHAPE(3), VALS(200, 100, 3));
    ff_tensor *su = ff_sum(u, 0, NULL, false), *pu = ff_prod(u, 0, NULL, false);
    CHECK(su && ff_tensor_dtype(su) == FF_I64);
    CHECK_TENSOR(su, 0, NULL, VALS(303), 0);
    CHECK_TENSOR(pu, 0, NULL, VALS(60000), 0);
    ff_tensor *f = ff_test_tensor(FF_F64, 2, SHAPE(2, 2), VALS(1.5, -2, 4, 0.5));
    ff_tensor *pf = ff_prod(f, 1, AXES(1), false);
    CHECK(pf && ff_tensor_dtype(pf) == FF_F64);
    CHECK_TENSOR(pf, 1, SHAPE(2), VALS(-3, 2), 0);
    ff_tensor *mi = ff_mean(i, 0, NULL, false);
    CHECK(mi && ff_tensor_dtype(mi) == FF_F32); /* we promote ints to f32 (PyTorch refuses) */
    CHECK_TENSOR(mi, 0, NULL, VALS(4000000001.0 / 3), 200);
    RELEASE(i, si, b, sb, u, su, pu, f, pf, mi);
}

static void test_mean_var_std(void)
{
    ff_tensor *x = ff_test_tensor(FF_F64, 2, SHAPE(2, 3), VALS(1, 2, 6, -1, 0, 4));
    ff_tensor *m = ff_mean(x, 1, AXES(1), false), *m0 = ff_mean(x, 1, AXES(0), true);
    CHECK_TENSOR(m, 1, SHAPE(2), VALS(3, 1), 1e-15);
    CHECK_TENSOR(m0, 2, SHAPE(1, 3), VALS(0, 1, 5), 1e-15);
    /* row 0: deviations -2, -1, 3 -> ss 14; row 1: -2, -1, 3 -> 14 */
    ff_tensor *v1 = ff_var(x, 1, AXES(-1), 1, false), *v0 = ff_var(x, 1, AXES(1), 0, true);
    CHECK_TENSOR(v1, 1, SHAPE(2), VALS(7, 7), 1e-14);
    CHECK_TENSOR(v0, 2, SHAPE(2, 1), VALS(14.0 / 3, 14.0 / 3), 1e-14);
    ff_tensor *s = ff_std(x, 0, NULL, 1, false); /* all: mean 2, ss = 1+0+16+9+4+4 = 34 */
    CHECK_TENSOR(s, 0, NULL, VALS(sqrt(34.0 / 5)), 1e-14);
    ff_tensor *one = ff_test_tensor(FF_F32, 1, SHAPE(1), VALS(5));
    ff_tensor *vn = ff_var(one, 0, NULL, 1, false); /* N - correction = 0 -> 0/0 */
    CHECK_TENSOR(vn, 0, NULL, VALS(NAN), 0);
    ff_tensor *e = ff_zeros(2, SHAPE(0, 2), FF_F32), *me = ff_mean(e, 1, AXES(0), false);
    CHECK_TENSOR(me, 1, SHAPE(2), VALS(NAN, NAN), 0);
    ff_tensor *ii = ff_test_tensor(FF_I32, 1, SHAPE(2), VALS(1, 3)), *vi = ff_var(ii, 0, NULL, 0, false);
    CHECK(vi && ff_tensor_dtype(vi) == FF_F32);
    CHECK_TENSOR(vi, 0, NULL, VALS(1), 0);
    RELEASE(x, m, m0, v1, v0, s, one, vn, e, me, ii, vi);
}

static void test_amax_amin_arg(void)
{
    ff_tensor *x = ff_test_tensor(FF_F32, 2, SHAPE(2, 4), VALS(3, 7, 7, -1, 2, NAN, 9, 0));
    ff_tensor *mx = ff_amax(x, 1, AXES(1), false), *mn = ff_amin(x, 1, AXES(1), false);
    CHECK_TENSOR(mx, 1, SHAPE(2), VALS(7, NAN), 0); /* NaN propagates */
    CHECK_TENSOR(mn, 1, SHAPE(2), VALS(-1, NAN), 0);
    ff_tensor *am = ff_argmax(x, 1, false), *an = ff_argmin(x, -1, true);
    CHECK(am && ff_tensor_dtype(am) == FF_I64);
    CHECK_TENSOR(am, 1, SHAPE(2), VALS(1, 1), 0); /* first of the tie; NaN counts as the max */
    CHECK_TENSOR(an, 2, SHAPE(2, 1), VALS(3, 1), 0);
    ff_tensor *i = ff_test_tensor(FF_I32, 2, SHAPE(2, 2), VALS(5, -3, 2, 8));
    ff_tensor *mi = ff_amax(i, 1, AXES(0), false);
    CHECK(mi && ff_tensor_dtype(mi) == FF_I32);
    CHECK_TENSOR(mi, 1, SHAPE(2), VALS(5, 8), 0);
    ff_tensor *a0 = ff_argmin(i, 0, false);
    CHECK_TENSOR(a0, 1, SHAPE(2), VALS(1, 0), 0);
    ff_tensor *e = ff_zeros(2, SHAPE(0, 3), FF_F32);
    CHECK_ERROR(ff_amax(e, 1, AXES(0), false) == NULL, FF_ERR_INVALID, "no identity");
    CHECK_ERROR(ff_argmax(e, 0, false) == NULL, FF_ERR_INVALID, "no identity");
    ff_tensor *ok = ff_amax(e, 1, AXES(1), false); /* reduces over size 3: fine, result empty */
    CHECK(ok && ff_tensor_numel(ok) == 0);
    RELEASE(x, mx, mn, am, an, i, mi, a0, e, ok);
}

static void test_logsumexp_any_all_norm(void)
{
    ff_tensor *x = ff_test_tensor(FF_F64, 2, SHAPE(2, 2), VALS(1000, 1000, -INFINITY, -INFINITY));
    ff_tensor *l = ff_logsumexp(x, 1, AXES(1), false);
    CHECK_TENSOR(l, 1, SHAPE(2), VALS(1000 + log(2.0), -INFINITY), 1e-12);
    ff_tensor *y = ff_test_tensor(FF_F32, 1, SHAPE(3), VALS(0.5, -1, 2));
    ff_tensor *ly = ff_logsumexp(y, 0, NULL, true);
    CHECK_TENSOR(ly, 1, SHAPE(1), VALS(log(exp(0.5) + exp(-1.0) + exp(2.0))), 1e-6);
    ff_tensor *b = ff_test_tensor(FF_F32, 2, SHAPE(2, 3), VALS(0, 0, 1, 0, 0, 0));
    ff_tensor *an = ff_any(b, 1, AXES(1), false), *al = ff_all(b, 1, AXES(1), false);
    CHECK(an && ff_tensor_dtype(an) == FF_BOOL);
    CHECK_TENSOR(an, 1, SHAPE(2), VALS(1, 0), 0);
    CHECK_TENSOR(al, 1, SHAPE(2), VALS(0, 0), 0);
    ff_tensor *e = ff_zeros(1, SHAPE(0), FF_BOOL), *ea = ff_all(e, 0, NULL, false), *eo = ff_any(e, 0, NULL, false);
    CHECK_TENSOR(ea, 0, NULL, VALS(1), 0);
    CHECK_TENSOR(eo, 0, NULL, VALS(0), 0);
    ff_tensor *v = ff_test_tensor(FF_F64, 2, SHAPE(2, 2), VALS(3, -4, 0, 1));
    ff_tensor *n2 = ff_norm(v, 2, 1, AXES(1), false), *n1 = ff_norm(v, 1, 0, NULL, false);
    ff_tensor *ni = ff_norm(v, INFINITY, 0, NULL, false), *n3 = ff_norm(v, 3, 0, NULL, false);
    ff_tensor *n0 = ff_norm(v, 0, 0, NULL, false);
    CHECK_TENSOR(n2, 1, SHAPE(2), VALS(5, 1), 1e-14);
    CHECK_TENSOR(n1, 0, NULL, VALS(8), 0);
    CHECK_TENSOR(ni, 0, NULL, VALS(4), 0);
    CHECK_TENSOR(n3, 0, NULL, VALS(cbrt(27 + 64 + 1)), 1e-13);
    CHECK_TENSOR(n0, 0, NULL, VALS(3), 0);
    RELEASE(x, l, y, ly, b, an, al, e, ea, eo, v, n2, n1, ni, n3, n0);
}

static void test_strided_and_zero_d(void)
{
    ff_tensor *x = iota234(FF_F64);
    ff_tensor *t = ff_permute(x, (const int[]){2, 0, 1}); /* [4, 2, 3] */
    ff_tensor *s = ff_sum(t, 1, AXES(0), false);        /* = sum over x's last axis, as [2, 3] */
    CHECK_TENSOR(s, 2, SHAPE(2, 3), VALS(6, 22, 38, 54, 70, 86), 0);
    ff_tensor *sl = ff_slice(x, 2, 1, 4, 2);            /* columns 1 and 3 */
    ff_tensor *mx = ff_amax(sl, 2, AXES(0, 1), false);
    CHECK_TENSOR(mx, 1, SHAPE(2), VALS(21, 23), 0);
    ff_tensor *z = ff_scalar_tensor(2.5, FF_F32);
    ff_tensor *zs = ff_sum(z, 0, NULL, false), *zm = ff_amax(z, 0, NULL, true), *za = ff_argmax(z, 0, false);
    CHECK_TENSOR(zs, 0, NULL, VALS(2.5), 0);
    CHECK_TENSOR(zm, 0, NULL, VALS(2.5), 0);
    CHECK_TENSOR(za, 0, NULL, VALS(0), 0);
    RELEASE(x, t, s, sl, mx, z, zs, zm, za);
}

/* ---- gradients -------------------------------------------------------------------- */
typedef struct {
    int which;
    int naxes;
    int axes[3];
    bool keepdim;
    double p;
} red_case;

static ff_tensor *apply(int n, ff_tensor *const *in, void *user)
{
    (void)n;
    const red_case *c = user;
    const ff_tensor *x = in[0];
    switch (c->which) {
    case 0: return ff_sum(x, c->naxes, c->axes, c->keepdim);
    case 1: return ff_mean(x, c->naxes, c->axes, c->keepdim);
    case 2: return ff_prod(x, c->naxes, c->axes, c->keepdim);
    case 3: return ff_amax(x, c->naxes, c->axes, c->keepdim);
    case 4: return ff_amin(x, c->naxes, c->axes, c->keepdim);
    case 5: return ff_var(x, c->naxes, c->axes, 1, c->keepdim);
    case 6: return ff_std(x, c->naxes, c->axes, 0, c->keepdim);
    case 7: return ff_logsumexp(x, c->naxes, c->axes, c->keepdim);
    default: return ff_norm(x, c->p, c->naxes, c->axes, c->keepdim);
    }
}

static void test_gradcheck_reductions(void)
{
    /* distinct values (no ties), one zero in row 1 (prod) */
    ff_tensor *x = ff_test_tensor(FF_F64, 3, SHAPE(2, 2, 3),
                                  VALS(0.5, -1.2, 2.1, 1.7, -0.3, 0.9, 1.1, 0.0, -2.4, 0.6, 1.4, -0.8));
    static const red_case cs[] = {
        {0, 0, {0}, false, 0}, {0, 2, {0, -1}, true, 0}, {1, 1, {1}, false, 0}, {1, 0, {0}, true, 0},
        {2, 1, {2}, false, 0}, {2, 1, {0}, true, 0},     {3, 1, {2}, false, 0}, {3, 0, {0}, false, 0},
        {4, 2, {0, 1}, true, 0}, {5, 1, {2}, false, 0},  {5, 0, {0}, false, 0}, {6, 1, {-1}, true, 0},
        {7, 1, {2}, false, 0}, {7, 0, {0}, true, 0},     {8, 1, {2}, false, 2}, {8, 0, {0}, false, 1},
        {8, 1, {1}, false, 3}, {8, 1, {2}, true, INFINITY}, {8, 0, {0}, false, 2.5},
    };
    for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) {
        ff_status st = ff_gradcheck(apply, (void *)&cs[i], 1, &x, NULL);
        if (st) fprintf(stderr, "  case %zu (op %d): %s\n", i, cs[i].which, ff_last_error());
        CHECK(st == FF_OK);
    }
    ff_tensor_release(x);
}

static ff_tensor *grad_of(ff_tensor *(*f)(const ff_tensor *), const double *v, int64_t n)
{
    ff_tensor *x = ff_test_tensor(FF_F64, 1, &n, v);
    ff_set_requires_grad(x, true);
    ff_tensor *y = f(x), *g = NULL;
    if (y && ff_autograd_grad(y, NULL, 1, &x, &g, NULL)) g = NULL;
    ff_tensor_release(x);
    ff_tensor_release(y);
    return g;
}

static ff_tensor *prod_all(const ff_tensor *x) { return ff_prod(x, 0, NULL, false); }
static ff_tensor *amax_all(const ff_tensor *x) { return ff_amax(x, 0, NULL, false); }
static ff_tensor *norm2_all(const ff_tensor *x) { return ff_norm(x, 2, 0, NULL, false); }

static void test_gradient_values_at_zeros_and_ties(void)
{
    ff_tensor *g1 = grad_of(prod_all, VALS(2, 0, 3), 3), *g2 = grad_of(prod_all, VALS(0, 5, 0), 3);
    ff_tensor *g3 = grad_of(prod_all, VALS(2, -1, 4), 3);
    CHECK_TENSOR(g1, 1, SHAPE(3), VALS(0, 6, 0), 0);
    CHECK_TENSOR(g2, 1, SHAPE(3), VALS(0, 0, 0), 0);
    CHECK_TENSOR(g3, 1, SHAPE(3), VALS(-4, 8, -2), 1e-15);
    ff_tensor *g4 = grad_of(amax_all, VALS(1, 3, 3, 3), 4); /* ties split evenly */
    CHECK_TENSOR(g4, 1, SHAPE(4), VALS(0, 1.0 / 3, 1.0 / 3, 1.0 / 3), 1e-15);
    ff_tensor *g5 = grad_of(norm2_all, VALS(0, 0), 2); /* 0 at a zero norm, not NaN */
    CHECK_TENSOR(g5, 1, SHAPE(2), VALS(0, 0), 0);
    RELEASE(g1, g2, g3, g4, g5);
}

/* d2/dx2 of prod and norm, through create_graph. */
static void test_reduce_second_order(void)
{
    ff_tensor *x = ff_test_tensor(FF_F64, 1, SHAPE(3), VALS(2, -1, 4));
    ff_set_requires_grad(x, true);
    ff_tensor *p = ff_prod(x, 0, NULL, false), *g1 = NULL, *g2 = NULL;
    ff_backward_opts cg = {.create_graph = true};
    CHECK(ff_autograd_grad(p, NULL, 1, &x, &g1, &cg) == FF_OK);
    /* sum_i d/dx_j (prod / x_i) = sum_{i != j} prod / (x_i x_j) */
    ff_tensor *s1 = g1 ? ff_sum(g1, 0, NULL, false) : NULL;
    CHECK(s1 && ff_autograd_grad(s1, NULL, 1, &x, &g2, NULL) == FF_OK);
    CHECK_TENSOR(g2, 1, SHAPE(3), VALS(-1 + 4, 2 + 4, 2 - 1), 1e-12);
    ff_tensor *n = ff_norm(x, 2, 0, NULL, false), *h1 = NULL, *h2 = NULL;
    CHECK(ff_autograd_grad(n, NULL, 1, &x, &h1, &cg) == FF_OK);
    ff_tensor *v = ff_test_tensor(FF_F64, 1, SHAPE(3), VALS(1, 0, 0));
    ff_tensor *hv = h1 ? ff_mul(h1, v) : NULL, *hs = hv ? ff_sum(hv, 0, NULL, false) : NULL;
    CHECK(hs && ff_autograd_grad(hs, NULL, 1, &x, &h2, NULL) == FF_OK);
    /* H = (I - x x^T / r^2) / r, r = sqrt(21); first row */
    double r = sqrt(21.0);
    CHECK_TENSOR(h2, 1, SHAPE(3), VALS((1 - 4 / 21.0) / r, (2 / 21.0) / r, (-8 / 21.0) / r), 1e-12);
    RELEASE(x, p, g1, g2, s1, n, h1, h2, v, hv, hs);
}

FF_TEST_MAIN("ops_reduce", TEST(test_sum_axes_keepdim), TEST(test_sum_prod_dtypes), TEST(test_mean_var_std),
             TEST(test_amax_amin_arg), TEST(test_logsumexp_any_all_norm), TEST(test_strided_and_zero_d),
             TEST(test_gradcheck_reductions), TEST(test_gradient_values_at_zeros_and_ties),
             TEST(test_reduce_second_order))
