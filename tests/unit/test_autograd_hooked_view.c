/* ff_hooked_view: the hook sees the gradient passing back through the view, may replace it,
 * may stop backward with a status; without grad it is a plain view and never calls back. */
#include "ff_test.h"

static void test_hook_sees_and_replaces_the_gradient(void)
{
    ff_tensor *x = ff_test_tensor(FF_F64, 1, SHAPE(2), VALS(1, 2));
    ff_set_requires_grad(x, true);
    ff_test_hook h = {0};
    /* y = sum(3 * view(x) * x): the view's gradient is 3x, x gets 3x (direct) + 3x (view) */
    ff_tensor *v = ff_hooked_view(x, ff_test_record_hook, &h);
    CHECK(v && ff_tensor_shares_storage(v, x) && strcmp(ff_grad_fn_name(v), "hooked_view") == 0);
    ff_tensor *three = ff_scalar_tensor(3.0, FF_F64), *a = ff_mul(v, three), *b = ff_mul(a, x);
    ff_tensor *y = ff_sum(b, 0, NULL, false);
    CHECK(ff_backward(y, NULL, NULL) == FF_OK);
    CHECK(h.calls == 1 && h.seen[0] == 3.0 && h.seen[1] == 6.0);
    ff_tensor *g = ff_grad(x);
    CHECK_TENSOR(g, 1, SHAPE(2), VALS(6, 12), 1e-12);
    RELEASE(v, a, b, y, g);
    /* a replacement is what flows on: the view's share doubled */
    ff_zero_grad(x);
    ff_test_hook h2 = {.scale = 2.0};
    ff_tensor *v2 = ff_hooked_view(x, ff_test_record_hook, &h2), *a2 = ff_mul(v2, three), *b2 = ff_mul(a2, x);
    ff_tensor *y2 = ff_sum(b2, 0, NULL, false);
    CHECK(ff_backward(y2, NULL, NULL) == FF_OK);
    ff_tensor *g2 = ff_grad(x);
    CHECK(h2.calls == 1);
    CHECK_TENSOR(g2, 1, SHAPE(2), VALS(9, 18), 1e-12);
    RELEASE(x, three, v2, a2, b2, y2, g2);
}

static void test_failing_hook_stops_backward(void)
{
    ff_tensor *x = ff_test_tensor(FF_F32, 1, SHAPE(3), VALS(1, 2, 3));
    ff_set_requires_grad(x, true);
    ff_test_hook h = {.fail = FF_ERR_INVALID};
    ff_tensor *v = ff_hooked_view(x, ff_test_record_hook, &h), *y = ff_sum(v, 0, NULL, false);
    CHECK_ERROR(ff_backward(y, NULL, NULL) != FF_OK, FF_ERR_INVALID, "hook failed");
    ff_tensor *g = ff_grad(x);
    CHECK(h.calls == 1 && g == NULL); /* nothing reached x */
    RELEASE(x, v, y);
}

static void test_plain_view_without_grad(void)
{
    ff_test_hook h = {0};
    ff_tensor *x = ff_test_tensor(FF_F32, 1, SHAPE(2), VALS(1, 2));
    ff_tensor *v = ff_hooked_view(x, ff_test_record_hook, &h);
    CHECK(v && !ff_requires_grad(v) && ff_grad_fn_name(v) == NULL && ff_tensor_shares_storage(v, x));
    ff_set_requires_grad(x, true);
    bool prev = ff_set_grad_enabled(false);
    ff_tensor *w = ff_hooked_view(x, ff_test_record_hook, &h);
    ff_set_grad_enabled(prev);
    CHECK(w && !ff_requires_grad(w) && h.calls == 0);
    CHECK_ERROR(ff_hooked_view(x, NULL, &h) == NULL, FF_ERR_INVALID, "ff_hooked_view");
    CHECK_ERROR(ff_hooked_view(NULL, ff_test_record_hook, &h) == NULL, FF_ERR_INVALID, "ff_hooked_view");
    RELEASE(x, v, w);
}

FF_TEST_MAIN("autograd_hooked_view", TEST(test_hook_sees_and_replaces_the_gradient),
             TEST(test_failing_hook_stops_backward), TEST(test_plain_view_without_grad))
