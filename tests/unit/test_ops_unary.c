/* Unary ops: values against libm closed forms, dtype rules, NaN/Inf, strided, 0-d and
 * empty inputs, and every gradient through ff_gradcheck (f64). */
#include <math.h>

#include "ff_test.h"

typedef ff_tensor *(*unary_fn)(const ff_tensor *);

static double gelu_exact(double x) { return 0.5 * x * (1.0 + erf(x / sqrt(2.0))); }
static double gelu_tanh(double x)
{
    return 0.5 * x * (1.0 + tanh(0.7978845608028654 /* sqrt(2 / pi) */ * (x + 0.044715 * x * x * x)));
}
static double sigmoid(double x) { return 1.0 / (1.0 + exp(-x)); }

typedef struct {
    const char *name;
    unary_fn f;
    double (*ref)(double);
    bool positive_only; /* domain (0, inf) */
} unary_case;

static double ref_neg(double x) { return -x; }
static double ref_sign(double x) { return (x > 0) - (x < 0); }
static double ref_rsqrt(double x) { return 1.0 / sqrt(x); }
static double ref_square(double x) { return x * x; }
static double ref_recip(double x) { return 1.0 / x; }
static double ref_relu(double x) { return x > 0 ? x : 0; }
static double ref_silu(double x) { return x * sigmoid(x); }
static double ref_softplus(double x) { return log1p(exp(x)); }
static ff_tensor *gelu_t(const ff_tensor *x) { return ff_gelu(x, true); }
static ff_tensor *gelu_e(const ff_tensor *x) { return ff_gelu(x, false); }

static const unary_case cases[] = {
    {"neg", ff_neg, ref_neg, false},          {"abs", ff_abs, fabs, false},
    {"sign", ff_sign, ref_sign, false},       {"exp", ff_exp, exp, false},
    {"log", ff_log, log, true},               {"log1p", ff_log1p, log1p, true},
    {"expm1", ff_expm1, expm1, false},        {"sqrt", ff_sqrt, sqrt, true},
    {"rsqrt", ff_rsqrt, ref_rsqrt, true},     {"square", ff_square, ref_square, false},
    {"reciprocal", ff_reciprocal, ref_recip, false}, {"sin", ff_sin, sin, false},
    {"cos", ff_cos, cos, false},              {"tanh", ff_tanh, tanh, false},
    {"sigmoid", ff_sigmoid, sigmoid, false},  {"relu", ff_relu, ref_relu, false},
    {"gelu_tanh", gelu_t, gelu_tanh, false},  {"gelu", gelu_e, gelu_exact, false},
    {"silu", ff_silu, ref_silu, false},       {"softplus", ff_softplus, ref_softplus, false},
    {"erf", ff_erf, erf, false},              {"floor", ff_floor, floor, false},
    {"ceil", ff_ceil, ceil, false},
};
#define NCASES ((int)(sizeof cases / sizeof cases[0]))

static const double xs_any[6] = {-1.7, -0.6, 0.3, 0.45, 1.2, 2.6};
static const double xs_pos[6] = {0.2, 0.45, 0.9, 1.3, 2.2, 3.7};

static void test_values_f64_and_f32(void)
{
    for (int c = 0; c < NCASES; c++) {
        const double *xs = cases[c].positive_only ? xs_pos : xs_any;
        double want[6];
        for (int i = 0; i < 6; i++) want[i] = cases[c].ref(xs[i]);
        for (int k = 0; k < 2; k++) {
            ff_dtype dt = k ? FF_F32 : FF_F64;
            ff_tensor *x = ff_test_tensor(dt, 2, SHAPE(2, 3), xs);
            ff_tensor *y = cases[c].f(x);
            CHECK(y && ff_tensor_dtype(y) == dt);
            if (!ff_test_tensor_equals(y, 2, SHAPE(2, 3), want, k ? 2e-6 * 8 : 1e-14, __FILE__, __LINE__)) {
                fprintf(stderr, "  op %s dtype %s\n", cases[c].name, ff_dtype_name(dt));
                CHECK(0);
            }
            ff_tensor_release(x);
            ff_tensor_release(y);
        }
    }
}

static void test_round_half_even_and_sign_zero(void)
{
    ff_tensor *x = ff_test_tensor(FF_F32, 1, SHAPE(6), VALS(0.5, 1.5, 2.5, -0.5, -2.5, 2.6));
    ff_tensor *r = ff_round(x);
    CHECK_TENSOR(r, 1, SHAPE(6), VALS(0, 2, 2, -0.0, -2, 3), 0);
    ff_tensor *z = ff_test_tensor(FF_F64, 1, SHAPE(3), VALS(0.0, -0.0, NAN));
    ff_tensor *s = ff_sign(z);
    CHECK_TENSOR(s, 1, SHAPE(3), VALS(0, 0, NAN), 0);
    ff_tensor_release(x);
    ff_tensor_release(r);
    ff_tensor_release(z);
    ff_tensor_release(s);
}

static void test_integer_dtypes(void)
{
    ff_tensor *x = ff_test_tensor(FF_I32, 1, SHAPE(4), VALS(-3, -1, 0, 4));
    ff_tensor *n = ff_neg(x), *a = ff_abs(x), *s = ff_sign(x), *q = ff_square(x), *r = ff_relu(x), *f = ff_floor(x);
    CHECK(n && ff_tensor_dtype(n) == FF_I32);
    CHECK_TENSOR(n, 1, SHAPE(4), VALS(3, 1, 0, -4), 0);
    CHECK_TENSOR(a, 1, SHAPE(4), VALS(3, 1, 0, 4), 0);
    CHECK_TENSOR(s, 1, SHAPE(4), VALS(-1, -1, 0, 1), 0);
    CHECK_TENSOR(q, 1, SHAPE(4), VALS(9, 1, 0, 16), 0);
    CHECK_TENSOR(r, 1, SHAPE(4), VALS(0, 0, 0, 4), 0);
    CHECK(f && ff_tensor_dtype(f) == FF_I32);
    CHECK_TENSOR(f, 1, SHAPE(4), VALS(-3, -1, 0, 4), 0);
    /* float-valued ops promote integers to f32 */
    ff_tensor *e = ff_exp(x), *sq = ff_sqrt(x);
    CHECK(e && ff_tensor_dtype(e) == FF_F32);
    CHECK_TENSOR(e, 1, SHAPE(4), VALS(exp(-3.0), exp(-1.0), 1, exp(4.0)), 1e-4);
    CHECK_TENSOR(sq, 1, SHAPE(4), VALS(NAN, NAN, 0, 2), 0);
    ff_tensor *b = ff_test_tensor(FF_BOOL, 1, SHAPE(2), VALS(0, 1));
    ff_tensor *sb = ff_sigmoid(b);
    CHECK(sb && ff_tensor_dtype(sb) == FF_F32);
    CHECK_TENSOR(sb, 1, SHAPE(2), VALS(0.5, sigmoid(1.0)), 1e-7);
    CHECK_ERROR(ff_neg(b) == NULL, FF_ERR_INVALID, "logical_not");
    ff_tensor *u = ff_test_tensor(FF_U8, 1, SHAPE(2), VALS(4, 9));
    ff_tensor *su = ff_sqrt(u);
    CHECK(su && ff_tensor_dtype(su) == FF_F32);
    CHECK_TENSOR(su, 1, SHAPE(2), VALS(2, 3), 0);
    ff_tensor *ts[] = {x, n, a, s, q, r, f, e, sq, b, sb, u, su};
    for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) ff_tensor_release(ts[i]);
}

static void test_bool_outputs_nan_inf(void)
{
    ff_tensor *x = ff_test_tensor(FF_F32, 1, SHAPE(5), VALS(1.0, NAN, INFINITY, -INFINITY, 0.0));
    ff_tensor *a = ff_isnan(x), *b = ff_isinf(x), *c = ff_logical_not(x);
    CHECK(a && ff_tensor_dtype(a) == FF_BOOL && ff_tensor_dtype(c) == FF_BOOL);
    CHECK_TENSOR(a, 1, SHAPE(5), VALS(0, 1, 0, 0, 0), 0);
    CHECK_TENSOR(b, 1, SHAPE(5), VALS(0, 0, 1, 1, 0), 0);
    CHECK_TENSOR(c, 1, SHAPE(5), VALS(0, 0, 0, 0, 1), 0);
    ff_tensor *e = ff_exp(x), *l = ff_log(x), *t = ff_tanh(x), *s = ff_sigmoid(x);
    CHECK_TENSOR(e, 1, SHAPE(5), VALS(exp(1.0), NAN, INFINITY, 0, 1), 1e-6);
    CHECK_TENSOR(l, 1, SHAPE(5), VALS(0, NAN, INFINITY, NAN, -INFINITY), 0);
    CHECK_TENSOR(t, 1, SHAPE(5), VALS(tanh(1.0), NAN, 1, -1, 0), 1e-7);
    CHECK_TENSOR(s, 1, SHAPE(5), VALS(sigmoid(1.0), NAN, 1, 0, 0.5), 1e-7);
    /* logical_not / isnan of integers: no NaN, zero is false */
    ff_tensor *i = ff_test_tensor(FF_I64, 1, SHAPE(3), VALS(0, 5, -2));
    ff_tensor *ni = ff_logical_not(i), *in = ff_isnan(i);
    CHECK_TENSOR(ni, 1, SHAPE(3), VALS(1, 0, 0), 0);
    CHECK_TENSOR(in, 1, SHAPE(3), VALS(0, 0, 0), 0);
    /* not differentiable: no history even when the input requires grad */
    ff_tensor *xf = ff_test_tensor(FF_F64, 1, SHAPE(2), VALS(1, 2));
    ff_set_requires_grad(xf, true);
    ff_tensor *nn = ff_isnan(xf);
    CHECK(nn && !ff_requires_grad(nn) && ff_grad_fn_name(nn) == NULL);
    ff_tensor *ts[] = {x, a, b, c, e, l, t, s, i, ni, in, xf, nn};
    for (size_t k = 0; k < sizeof ts / sizeof ts[0]; k++) ff_tensor_release(ts[k]);
}

static void test_strided_zero_d_and_empty(void)
{
    /* transposed and sliced inputs */
    ff_tensor *x = ff_test_tensor(FF_F64, 2, SHAPE(2, 3), VALS(1, 2, 3, 4, 5, 6));
    ff_tensor *t = ff_transpose(x, 0, 1), *st = ff_square(t);
    CHECK_TENSOR(st, 2, SHAPE(3, 2), VALS(1, 16, 4, 25, 9, 36), 0);
    ff_tensor *sl = ff_slice(x, 1, 0, 3, 2), *ss = ff_neg(sl);
    CHECK_TENSOR(ss, 2, SHAPE(2, 2), VALS(-1, -3, -4, -6), 0);
    /* 0-d */
    ff_tensor *z = ff_scalar_tensor(0.25, FF_F32), *zs = ff_sqrt(z);
    CHECK(zs && ff_tensor_ndim(zs) == 0);
    CHECK_TENSOR(zs, 0, NULL, VALS(0.5), 0);
    /* empty */
    ff_tensor *e = ff_zeros(2, SHAPE(0, 3), FF_F32), *ee = ff_exp(e);
    CHECK(ee && ff_tensor_numel(ee) == 0 && ff_tensor_dim(ee, 1) == 3);
    CHECK_ERROR(ff_exp(NULL) == NULL, FF_ERR_INVALID, "ff_exp");
    CHECK_ERROR(ff_unary((ff_unary_op)99, x) == NULL, FF_ERR_INVALID, "invalid op");
    ff_tensor *ts[] = {x, t, st, sl, ss, z, zs, e, ee};
    for (size_t k = 0; k < sizeof ts / sizeof ts[0]; k++) ff_tensor_release(ts[k]);
}

/* ---- gradients ---------------------------------------------------------------- */
static ff_tensor *apply_unary(int n, ff_tensor *const *in, void *user)
{
    (void)n;
    return ((const unary_case *)user)->f(in[0]);
}

static void test_gradcheck_every_op(void)
{
    for (int c = 0; c < NCASES; c++) {
        const double *xs = cases[c].positive_only ? xs_pos : xs_any;
        ff_tensor *x = ff_test_tensor(FF_F64, 2, SHAPE(3, 2), xs);
        ff_gradcheck_opts o = {0};
        ff_status st = ff_gradcheck(apply_unary, (void *)&cases[c], 1, &x, &o);
        if (st) fprintf(stderr, "  gradcheck %s: %s\n", cases[c].name, ff_last_error());
        CHECK(st == FF_OK);
        ff_tensor_release(x);
    }
    /* round: zero gradient */
    ff_tensor *x = ff_test_tensor(FF_F64, 1, SHAPE(3), VALS(0.2, 1.3, -2.2));
    static const unary_case rnd = {"round", ff_round, NULL, false};
    CHECK(ff_gradcheck(apply_unary, (void *)&rnd, 1, &x, NULL) == FF_OK);
    ff_tensor_release(x);
}

/* The named derivative values, not just consistency: relu'(0) = 0, abs'(0) = 0. */
static void test_gradient_values_at_kinks(void)
{
    ff_tensor *x = ff_test_tensor(FF_F64, 1, SHAPE(3), VALS(-1, 0, 2));
    ff_set_requires_grad(x, true);
    ff_tensor *r = ff_relu(x), *a = ff_abs(x), *s = ff_add(r, a), *l = ff_sum(s, 0, NULL, false);
    CHECK(ff_backward(l, NULL, NULL) == FF_OK);
    ff_tensor *g = ff_grad(x);
    CHECK_TENSOR(g, 1, SHAPE(3), VALS(-1, 0, 2), 0);
    CHECK(ff_grad_fn_name(r) && strcmp(ff_grad_fn_name(r), "relu") == 0);
    ff_tensor *ts[] = {x, r, a, s, l, g};
    for (size_t k = 0; k < sizeof ts / sizeof ts[0]; k++) ff_tensor_release(ts[k]);
}

/* Second derivatives of ops whose backward uses their own (saved) output. */
static void test_second_derivatives(void)
{
    static const struct {
        unary_fn f;
        double x, d2;
    } c2[] = {
        {ff_exp, 0.7, 2.0137527074704766},          /* exp(0.7) */
        {ff_tanh, 0.4, -0.6501981376737277},        /* -2 tanh sech^2 */
        {ff_sigmoid, 0.3, -0.03639618395557626},    /* s(1-s)(1-2s) */
        {ff_sqrt, 2.0, -0.08838834764831845},       /* -x^(-3/2)/4 */
        {ff_reciprocal, 2.0, 0.25},                 /* 2 / x^3 */
        {ff_rsqrt, 4.0, 0.0234375},              /* 3/4 x^(-5/2) */
    };
    for (size_t k = 0; k < sizeof c2 / sizeof c2[0]; k++) {
        ff_tensor *x = ff_scalar_tensor(c2[k].x, FF_F64);
        ff_set_requires_grad(x, true);
        ff_tensor *y = c2[k].f(x), *g1 = NULL, *g2 = NULL;
        ff_backward_opts cg = {.create_graph = true};
        CHECK(ff_autograd_grad(y, NULL, 1, &x, &g1, &cg) == FF_OK);
        CHECK(g1 && ff_autograd_grad(g1, NULL, 1, &x, &g2, NULL) == FF_OK);
        double v = 0;
        CHECK(g2 && ff_tensor_item(g2, &v) == FF_OK);
        CHECK_NEAR(v, c2[k].d2, 1e-12);
        ff_tensor_release(x);
        ff_tensor_release(y);
        ff_tensor_release(g1);
        ff_tensor_release(g2);
    }
}

FF_TEST_MAIN("ops_unary", TEST(test_values_f64_and_f32), TEST(test_round_half_even_and_sign_zero),
             TEST(test_integer_dtypes), TEST(test_bool_outputs_nan_inf), TEST(test_strided_zero_d_and_empty),
             TEST(test_gradcheck_every_op), TEST(test_gradient_values_at_kinks), TEST(test_second_derivatives))
