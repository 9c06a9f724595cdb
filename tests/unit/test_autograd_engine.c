/* The autograd engine's behaviours: accumulation over fan-out, no_grad, detach,
 * retain_graph, zero_grad, explicit grad_output, higher-order gradients (d2/dx2 and a
 * Hessian-vector product), in-place modification of saved values, gradcheck itself. */
#include "ff_test.h"

static ff_tensor *leaf(ff_dtype dt, int nd, const int64_t *shape, const double *v)
{
    ff_tensor *t = ff_test_tensor(dt, nd, shape, v);
    ff_set_requires_grad(t, true);
    return t;
}

static void test_fan_out_accumulates(void)
{
    /* y = sum(x*x + x + exp(x)*exp(x)): dy/dx = 2x + 1 + 2 exp(2x) */
    ff_tensor *x = leaf(FF_F64, 1, SHAPE(3), VALS(-1, 0.5, 2));
    ff_tensor *xx = ff_mul(x, x), *a = ff_add(xx, x), *e = ff_exp(x), *ee = ff_mul(e, e), *b = ff_add(a, ee);
    ff_tensor *y = ff_sum(b, 0, NULL, false);
    CHECK(ff_backward(y, NULL, NULL) == FF_OK);
    ff_tensor *g = ff_grad(x);
    CHECK_TENSOR(g, 1, SHAPE(3), VALS(-1 + 2 * exp(-2.0), 2 + 2 * exp(1.0), 5 + 2 * exp(4.0)), 1e-12);
    CHECK(ff_is_leaf(x) && !ff_is_leaf(y));
    CHECK(ff_grad_fn_name(y) && strcmp(ff_grad_fn_name(y), "sum") == 0);
    RELEASE(x, xx, a, e, ee, b, y, g);
}

static void test_no_grad_and_detach(void)
{
    ff_tensor *x = leaf(FF_F32, 1, SHAPE(2), VALS(1, 2));
    bool prev = ff_set_grad_enabled(false);
    CHECK(prev == true && !ff_grad_enabled());
    ff_tensor *y = ff_mul(x, x);
    CHECK(y && !ff_requires_grad(y) && ff_grad_fn_name(y) == NULL);
    bool inner = ff_set_grad_enabled(false); /* nesting */
    ff_set_grad_enabled(inner);
    CHECK(!ff_grad_enabled());
    ff_set_grad_enabled(prev);
    CHECK(ff_grad_enabled());
    ff_tensor *d = ff_detach(x);
    CHECK(d && !ff_requires_grad(d) && ff_tensor_shares_storage(d, x));
    ff_tensor *z = ff_mul(x, d), *s = ff_sum(z, 0, NULL, false); /* d is a constant: ds/dx = d */
    CHECK(ff_backward(s, NULL, NULL) == FF_OK);
    ff_tensor *g = ff_grad(x);
    CHECK_TENSOR(g, 1, SHAPE(2), VALS(1, 2), 0);
    CHECK_ERROR(ff_backward(y, NULL, NULL) != FF_OK, FF_ERR_AUTOGRAD, "does not require grad");
    CHECK_ERROR(ff_set_requires_grad(z, false) != FF_OK, FF_ERR_AUTOGRAD, "not a leaf");
    ff_tensor *i = ff_test_tensor(FF_I32, 1, SHAPE(1), VALS(1));
    CHECK_ERROR(ff_set_requires_grad(i, true) != FF_OK, FF_ERR_AUTOGRAD, "float");
    RELEASE(x, y, d, z, s, g, i);
}

static void test_retain_graph_and_zero_grad(void)
{
    ff_tensor *x = leaf(FF_F64, 1, SHAPE(2), VALS(3, -1));
    ff_tensor *y = ff_mul(x, x), *s = ff_sum(y, 0, NULL, false);
    ff_backward_opts keep = {.retain_graph = true};
    CHECK(ff_backward(s, NULL, &keep) == FF_OK);
    CHECK(ff_backward(s, NULL, NULL) == FF_OK); /* retained: runs again and accumulates */
    ff_tensor *g = ff_grad(x);
    CHECK_TENSOR(g, 1, SHAPE(2), VALS(12, -4), 0);
    CHECK(ff_tensor_is_contiguous(g));
    CHECK_ERROR(ff_backward(s, NULL, NULL) != FF_OK, FF_ERR_AUTOGRAD, "retain_graph");
    CHECK(ff_zero_grad(x) == FF_OK);
    ff_tensor *none = ff_grad(x);
    CHECK(none == NULL);
    /* a fresh graph after zero_grad */
    ff_tensor *y2 = ff_mul_scalar(x, 5.0), *s2 = ff_sum(y2, 0, NULL, false);
    CHECK(ff_backward(s2, NULL, NULL) == FF_OK);
    ff_tensor *g2 = ff_grad(x);
    CHECK_TENSOR(g2, 1, SHAPE(2), VALS(5, 5), 0);
    /* the stored gradient is the tensor's own: a sum's expanded gradient is materialized */
    CHECK(ff_tensor_is_contiguous(g2));
    RELEASE(x, y, s, g, y2, s2, g2);
}

static void test_explicit_grad_output(void)
{
    ff_tensor *x = leaf(FF_F64, 2, SHAPE(2, 2), VALS(1, 2, 3, 4));
    ff_tensor *y = ff_mul_scalar(x, 3.0);
    ff_tensor *go = ff_test_tensor(FF_F64, 2, SHAPE(2, 2), VALS(1, -1, 0.5, 2));
    CHECK_ERROR(ff_backward(y, NULL, NULL) != FF_OK, FF_ERR_INVALID, "grad_output");
    ff_tensor *bad = ff_ones(1, SHAPE(4), FF_F64);
    CHECK_ERROR(ff_backward(y, bad, NULL) != FF_OK, FF_ERR_INVALID, "does not match");
    CHECK(ff_backward(y, go, NULL) == FF_OK);
    ff_tensor *g = ff_grad(x);
    CHECK_TENSOR(g, 2, SHAPE(2, 2), VALS(3, -3, 1.5, 6), 0);
    /* the user's grad_output is not aliased by the stored gradient */
    ff_tensor *x2 = leaf(FF_F64, 2, SHAPE(2, 2), VALS(1, 2, 3, 4));
    ff_tensor *y2 = ff_add_scalar(x2, 1.0);
    CHECK(ff_backward(y2, go, NULL) == FF_OK);
    ff_tensor *g2 = ff_grad(x2);
    CHECK(g2 && !ff_tensor_shares_storage(g2, go));
    RELEASE(x, y, go, bad, g, x2, y2, g2);
}

/* d2/dx2 x^3 = 6x, through pow and through a product x*x*x. */
static void test_second_derivative_of_cube(void)
{
    for (int form = 0; form < 2; form++) {
        ff_tensor *x = leaf(FF_F64, 1, SHAPE(3), VALS(-2, 0.5, 3));
        ff_tensor *xx = form ? ff_mul(x, x) : NULL;
        ff_tensor *y = form ? ff_mul(xx, x) : ff_pow_scalar(x, 3.0);
        ff_tensor *s = ff_sum(y, 0, NULL, false), *g1 = NULL, *g2 = NULL;
        ff_backward_opts cg = {.create_graph = true};
        CHECK(ff_autograd_grad(s, NULL, 1, &x, &g1, &cg) == FF_OK);
        CHECK_TENSOR(g1, 1, SHAPE(3), VALS(12, 0.75, 27), 1e-12);
        CHECK(g1 && ff_requires_grad(g1));
        ff_tensor *s1 = g1 ? ff_sum(g1, 0, NULL, false) : NULL;
        CHECK(s1 && ff_autograd_grad(s1, NULL, 1, &x, &g2, NULL) == FF_OK);
        CHECK_TENSOR(g2, 1, SHAPE(3), VALS(-12, 3, 18), 1e-12);
        /* autograd_grad leaves .grad alone */
        ff_tensor *none = ff_grad(x);
        CHECK(none == NULL);
        RELEASE(x, xx, y, s, g1, g2, s1);
    }
}

/* Hessian-vector product of f(x) = x^T A x: H = A + A^T, so Hv = (A + A^T) v. */
static void test_hessian_vector_product(void)
{
    ff_tensor *a = ff_test_tensor(FF_F64, 2, SHAPE(3, 3), VALS(1, 2, 0, -1, 3, 4, 0.5, 0, 2));
    ff_tensor *x = leaf(FF_F64, 1, SHAPE(3), VALS(0.3, -1.2, 2));
    ff_tensor *v = ff_test_tensor(FF_F64, 1, SHAPE(3), VALS(1, 2, -1));
    ff_tensor *ax = ff_matmul(a, x), *f = ff_matmul(x, ax); /* 0-d */
    CHECK(f && ff_tensor_ndim(f) == 0);
    ff_tensor *g = NULL, *hv = NULL;
    ff_backward_opts cg = {.create_graph = true};
    CHECK(ff_autograd_grad(f, NULL, 1, &x, &g, &cg) == FF_OK);
    /* grad = (A + A^T) x */
    CHECK_TENSOR(g, 1, SHAPE(3), VALS(2 * 0.3 + 1 * -1.2 + 0.5 * 2, 1 * 0.3 + 6 * -1.2 + 4 * 2, 0.5 * 0.3 + 4 * -1.2 + 4 * 2),
                 1e-12);
    ff_tensor *gv = g ? ff_mul(g, v) : NULL, *s = gv ? ff_sum(gv, 0, NULL, false) : NULL;
    CHECK(s && ff_autograd_grad(s, NULL, 1, &x, &hv, NULL) == FF_OK);
    /* (A + A^T) = [[2, 1, 0.5], [1, 6, 4], [0.5, 4, 4]] times v = [1, 2, -1] */
    CHECK_TENSOR(hv, 1, SHAPE(3), VALS(2 + 2 - 0.5, 1 + 12 - 4, 0.5 + 8 - 4), 1e-12);
    RELEASE(a, x, v, ax, f, g, hv, gv, s);
}

/* Second order through an operand of another dtype (the cast is tracked). */
static void test_second_order_mixed_dtype(void)
{
    ff_tensor *x = leaf(FF_F32, 1, SHAPE(2), VALS(1.5, -2));
    ff_tensor *c = ff_test_tensor(FF_F64, 1, SHAPE(2), VALS(2, 3));
    ff_tensor *xx = ff_mul(x, x), *y = ff_mul(xx, c), *s = ff_sum(y, 0, NULL, false); /* c x^2 */
    CHECK(y && ff_tensor_dtype(y) == FF_F64);
    ff_tensor *g1 = NULL, *g2 = NULL;
    ff_backward_opts cg = {.create_graph = true};
    CHECK(ff_autograd_grad(s, NULL, 1, &x, &g1, &cg) == FF_OK);
    CHECK(g1 && ff_tensor_dtype(g1) == FF_F32);
    CHECK_TENSOR(g1, 1, SHAPE(2), VALS(6, -12), 1e-6);
    ff_tensor *s1 = g1 ? ff_sum(g1, 0, NULL, false) : NULL;
    CHECK(s1 && ff_autograd_grad(s1, NULL, 1, &x, &g2, NULL) == FF_OK);
    CHECK_TENSOR(g2, 1, SHAPE(2), VALS(4, 6), 1e-6);
    RELEASE(x, c, xx, y, s, g1, g2, s1);
}

static void test_modified_saved_value_detected(void)
{
    ff_tensor *x = leaf(FF_F64, 1, SHAPE(2), VALS(0.5, 1));
    ff_tensor *y = ff_exp(x), *s = ff_sum(y, 0, NULL, false);
    FF_NO_GRAD_BEGIN
    CHECK(ff_add_scalar_(y, 1.0) == FF_OK);
    FF_NO_GRAD_END
    CHECK_ERROR(ff_backward(s, NULL, NULL) != FF_OK, FF_ERR_AUTOGRAD,
                "modified by an inplace operation: [f64 [2]], saved by 'exp', is at version 1; expected version 0");
    CHECK(strstr(ff_last_error(), "exp") != NULL);
    /* an unrelated in-place write does not trip it */
    ff_tensor *x2 = leaf(FF_F64, 1, SHAPE(2), VALS(0.5, 1));
    ff_tensor *other = ff_zeros(1, SHAPE(2), FF_F64);
    ff_tensor *y2 = ff_mul(x2, x2), *s2 = ff_sum(y2, 0, NULL, false);
    CHECK(ff_add_scalar_(other, 1.0) == FF_OK);
    CHECK(ff_backward(s2, NULL, NULL) == FF_OK);
    RELEASE(x, y, s, x2, other, y2, s2);
}

static void test_autograd_grad_errors_and_unreachable(void)
{
    ff_tensor *x = leaf(FF_F64, 1, SHAPE(2), VALS(1, 2)), *u = leaf(FF_F64, 1, SHAPE(2), VALS(1, 2));
    ff_tensor *y = ff_sum(x, 0, NULL, false);
    ff_tensor *ins[2] = {x, u}, *gs[2] = {NULL, NULL};
    CHECK(ff_autograd_grad(y, NULL, 2, ins, gs, NULL) == FF_OK);
    CHECK_TENSOR(gs[0], 1, SHAPE(2), VALS(1, 1), 0);
    CHECK(gs[1] == NULL); /* unreachable */
    ff_tensor *c = ff_ones(1, SHAPE(2), FF_F64), *gc = NULL;
    CHECK_ERROR(ff_autograd_grad(y, NULL, 1, &c, &gc, NULL) != FF_OK, FF_ERR_AUTOGRAD, "does not require grad");
    RELEASE(x, u, y, gs[0], c);
}

/* gradcheck must catch a wrong gradient: x * detach(x) has analytic x, true 2x. */
static ff_tensor *half_detached_square(int n, ff_tensor *const *in, void *user)
{
    (void)n, (void)user;
    ff_tensor *d = ff_detach(in[0]), *r = ff_mul(in[0], d);
    ff_tensor_release(d);
    return r;
}

static ff_tensor *true_square(int n, ff_tensor *const *in, void *user)
{
    (void)n, (void)user;
    return ff_mul(in[0], in[0]);
}

static void test_gradcheck_detects_wrong_gradient(void)
{
    ff_tensor *x = ff_test_tensor(FF_F32, 1, SHAPE(3), VALS(1, -2, 0.5));
    ff_gradcheck_opts o = {0};
    CHECK_ERROR(ff_gradcheck(half_detached_square, NULL, 1, &x, &o) != FF_OK, FF_ERR_AUTOGRAD, "gradient mismatch");
    CHECK(o.max_abs_err > 0.5);
    CHECK(ff_gradcheck(true_square, NULL, 1, &x, &o) == FF_OK);
    CHECK(o.max_abs_err < 1e-6);
    CHECK_ERROR(ff_gradcheck(NULL, NULL, 1, &x, NULL) != FF_OK, FF_ERR_INVALID, "ff_gradcheck");
    ff_tensor_release(x);
}

/* The post-accumulate-grad hook: once per backward per leaf, after the leaf's .grad holds
 * the pass's whole gradient (a fan-out's two contributions already summed), in the order
 * backward finishes the leaves; removable; refused on a non-leaf. */
typedef struct hook_log {
    int calls;
    double seen[4];
    const ff_tensor *order[4];
} hook_log;

static void log_hook(ff_tensor *leaf, void *user)
{
    hook_log *h = user;
    ff_tensor *g = ff_grad(leaf);
    double v = -1;
    if (g) ff_tensor_item(g, &v);
    if (h->calls < 4) h->seen[h->calls] = v, h->order[h->calls] = leaf;
    h->calls++;
    ff_tensor_release(g);
}

static void test_post_accumulate_grad_hook(void)
{
    ff_tensor *a = ff_scalar_tensor(3.0, FF_F64), *b = ff_scalar_tensor(5.0, FF_F64);
    ff_set_requires_grad(a, true);
    ff_set_requires_grad(b, true);
    hook_log h = {0};
    CHECK(ff_set_post_accumulate_grad_hook(a, log_hook, &h) == FF_OK);
    CHECK(ff_set_post_accumulate_grad_hook(b, log_hook, &h) == FF_OK);
    /* y = a * a * b: dy/da = 2ab = 30 (two uses of a), dy/db = a^2 = 9 */
    ff_tensor *aa = ff_mul(a, a), *y = ff_mul(aa, b);
    CHECK(ff_backward(y, NULL, NULL) == FF_OK);
    CHECK(h.calls == 2);
    for (int i = 0; i < 2 && i < h.calls; i++) CHECK(h.seen[i] == (h.order[i] == a ? 30.0 : 9.0));
    CHECK(ff_set_post_accumulate_grad_hook(a, NULL, NULL) == FF_OK);
    ff_tensor *aa2 = ff_mul(a, a), *y2 = ff_mul(aa2, b); /* a fresh graph: the first one's saved values are gone */
    CHECK(ff_backward(y2, NULL, NULL) == FF_OK);
    CHECK(h.calls == 3 && h.order[2] == b && h.seen[2] == 18.0); /* b's .grad accumulated: 9 + 9 */
    CHECK_ERROR(ff_set_post_accumulate_grad_hook(aa, log_hook, &h) != FF_OK, FF_ERR_AUTOGRAD, "not a leaf");
    RELEASE(a, b, aa, y, aa2, y2);
}

FF_TEST_MAIN("autograd_engine", TEST(test_fan_out_accumulates), TEST(test_no_grad_and_detach),
             TEST(test_retain_graph_and_zero_grad), TEST(test_explicit_grad_output),
             TEST(test_second_derivative_of_cube), TEST(test_hessian_vector_product),
             TEST(test_second_order_mixed_dtype), TEST(test_modified_saved_value_detected),
             TEST(test_autograd_grad_errors_and_unreachable), TEST(test_gradcheck_detects_wrong_gradient),
             TEST(test_post_accumulate_grad_hook))
