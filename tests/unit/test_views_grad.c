/* Gradients through views: slice, select, narrow, transpose/permute, expand, reshape
 * (view and copying paths), squeeze/unsqueeze, flatten, and chains of them. Each is
 * checked by ff_gradcheck and, where the answer is simple, by value. */
#include "ff_test.h"

/* f(x) = square(view(x)), so the check sees both the routing and the values. */
typedef ff_tensor *(*view_fn)(const ff_tensor *);

static ff_tensor *v_slice(const ff_tensor *x) { return ff_slice(x, 1, 1, 4, 2); }
static ff_tensor *v_select(const ff_tensor *x) { return ff_select(x, 0, -1); }
static ff_tensor *v_narrow(const ff_tensor *x) { return ff_narrow(x, 1, 1, 2); }
static ff_tensor *v_transpose(const ff_tensor *x) { return ff_transpose(x, 0, 1); }
static ff_tensor *v_permute(const ff_tensor *x) { return ff_permute(x, (const int[]){1, 0}); }
static ff_tensor *v_expand(const ff_tensor *x)
{
    ff_tensor *u = ff_unsqueeze(x, 0), *e = u ? ff_expand(u, 3, SHAPE(2, 3, 4)) : NULL;
    ff_tensor_release(u);
    return e;
}
static ff_tensor *v_reshape_noncontig(const ff_tensor *x) /* transpose then reshape: a copy */
{
    ff_tensor *t = ff_transpose(x, 0, 1), *r = t ? ff_reshape(t, 2, SHAPE(2, 6)) : NULL;
    ff_tensor_release(t);
    return r;
}
static ff_tensor *v_flatten(const ff_tensor *x) { return ff_flatten(x, 0, -1); }
static ff_tensor *v_chain(const ff_tensor *x) /* slice of a transpose of an expand, then select */
{
    ff_tensor *e = v_expand(x), *t = e ? ff_transpose(e, 1, 2) : NULL, *s = t ? ff_slice(t, 1, 0, 4, 3) : NULL;
    ff_tensor *r = s ? ff_select(s, 2, 1) : NULL;
    ff_tensor_release(e);
    ff_tensor_release(t);
    ff_tensor_release(s);
    return r;
}
static ff_tensor *v_squeeze(const ff_tensor *x)
{
    ff_tensor *s = ff_slice(x, 0, 1, 2, 1), *q = s ? ff_squeeze(s, 0) : NULL;
    ff_tensor_release(s);
    return q;
}

static ff_tensor *apply(int n, ff_tensor *const *in, void *user)
{
    (void)n;
    ff_tensor *v = ((view_fn)user)(in[0]);
    ff_tensor *r = v ? ff_square(v) : NULL;
    ff_tensor_release(v);
    return r;
}

static void test_gradcheck_views(void)
{
    static const view_fn fns[] = {v_slice, v_select, v_narrow, v_transpose, v_permute, v_expand,
                                  v_reshape_noncontig, v_flatten, v_chain, v_squeeze};
    ff_tensor *x = ff_test_tensor(FF_F64, 2, SHAPE(3, 4), VALS(1, -2, 3, 0.5, -1, 2, 0.25, 4, 3, -3, 1.5, 2.5));
    for (size_t i = 0; i < sizeof fns / sizeof fns[0]; i++) {
        ff_status st = ff_gradcheck(apply, (void *)fns[i], 1, &x, NULL);
        if (st) fprintf(stderr, "  view #%zu: %s\n", i, ff_last_error());
        CHECK(st == FF_OK);
    }
    ff_tensor_release(x);
}

static void test_slice_and_select_gradient_values(void)
{
    ff_tensor *x = ff_zeros(2, SHAPE(2, 3), FF_F32);
    ff_set_requires_grad(x, true);
    ff_tensor *s = ff_slice(x, 1, 0, 3, 2), *r = ff_select(x, 0, 1);
    ff_tensor *ss = ff_sum(s, 0, NULL, false), *rs = ff_sum(r, 0, NULL, false), *t = ff_add(ss, rs);
    CHECK(ff_backward(t, NULL, NULL) == FF_OK);
    ff_tensor *g = ff_grad(x);
    /* slice hits columns 0 and 2 of both rows; select hits all of row 1 */
    CHECK_TENSOR(g, 2, SHAPE(2, 3), VALS(1, 0, 1, 2, 1, 2), 0);
    ff_tensor *ts[] = {x, s, r, ss, rs, t, g};
    for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) ff_tensor_release(ts[i]);
}

static void test_expand_gradient_sums(void)
{
    ff_tensor *x = ff_test_tensor(FF_F64, 2, SHAPE(1, 3), VALS(1, 2, 3));
    ff_set_requires_grad(x, true);
    ff_tensor *e = ff_expand(x, 3, SHAPE(4, 2, 3)), *s = ff_sum(e, 0, NULL, false);
    CHECK(e && ff_tensor_shares_storage(e, x));
    CHECK(ff_backward(s, NULL, NULL) == FF_OK);
    ff_tensor *g = ff_grad(x);
    CHECK_TENSOR(g, 2, SHAPE(1, 3), VALS(8, 8, 8), 0);
    ff_tensor *ts[] = {x, e, s, g};
    for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) ff_tensor_release(ts[i]);
}

/* Second order through a view: d2/dx2 sum(transpose(x)^3) = 6x. */
static void test_views_second_order(void)
{
    ff_tensor *x = ff_test_tensor(FF_F64, 2, SHAPE(2, 2), VALS(1, -1, 2, 0.5));
    ff_set_requires_grad(x, true);
    ff_tensor *t = ff_transpose(x, 0, 1), *c = ff_pow_scalar(t, 3.0), *s = ff_sum(c, 0, NULL, false);
    ff_tensor *g1 = NULL, *g2 = NULL;
    ff_backward_opts cg = {.create_graph = true};
    CHECK(ff_autograd_grad(s, NULL, 1, &x, &g1, &cg) == FF_OK);
    ff_tensor *s1 = g1 ? ff_sum(g1, 0, NULL, false) : NULL;
    CHECK(s1 && ff_autograd_grad(s1, NULL, 1, &x, &g2, NULL) == FF_OK);
    CHECK_TENSOR(g2, 2, SHAPE(2, 2), VALS(6, -6, 12, 3), 1e-12);
    ff_tensor *ts[] = {x, t, c, s, g1, g2, s1};
    for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) ff_tensor_release(ts[i]);
}

FF_TEST_MAIN("views_grad", TEST(test_gradcheck_views), TEST(test_slice_and_select_gradient_values),
             TEST(test_expand_gradient_sums), TEST(test_views_second_order))
