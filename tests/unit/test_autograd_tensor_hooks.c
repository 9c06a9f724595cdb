/* ff_tensor_register_hook and ff_retain_grad: a hook sees a tensor's whole gradient of the
 * pass and may replace it; retain_grad keeps a non-leaf's gradient in its place among the
 * hooks; removal, failures and the lists' memory (freed with the tensor, for LSan). */
#include "ff_test.h"

static void test_hook_sees_every_use_and_replaces(void)
{
    ff_tensor *x = ff_test_tensor(FF_F64, 1, SHAPE(2), VALS(1, 2));
    ff_set_requires_grad(x, true);
    ff_tensor *two = ff_scalar_tensor(2.0, FF_F64), *y = ff_mul(x, two);
    ff_tensor *early = ff_mul(y, y); /* a use made before the hook: still in y's gradient */
    ff_test_hook seen = {0}, doubler = {.scale = 2.0}, after = {0};
    CHECK(ff_tensor_register_hook(y, ff_test_record_hook, &seen) > 0);
    CHECK(ff_retain_grad(y) == FF_OK && ff_retains_grad(y) && ff_retains_grad(x));
    int64_t id = ff_tensor_register_hook(y, ff_test_record_hook, &doubler);
    CHECK(id > 0 && ff_tensor_register_hook(y, ff_test_record_hook, &after) > id);
    ff_tensor *s = ff_add(early, y), *l = ff_sum(s, 0, NULL, false); /* dl/dy = 2y + 1 = 5, 9 */
    ff_backward_opts keep = {.retain_graph = true};
    CHECK(ff_backward(l, NULL, &keep) == FF_OK);
    CHECK(seen.calls == 1 && seen.seen[0] == 5 && seen.seen[1] == 9);
    CHECK(after.calls == 1 && after.seen[0] == 10 && after.seen[1] == 18); /* after the doubling */
    ff_tensor *gy = ff_grad(y), *gx = ff_grad(x);
    CHECK_TENSOR(gy, 1, SHAPE(2), VALS(5, 9), 1e-12); /* retained before the doubling */
    CHECK_TENSOR(gx, 1, SHAPE(2), VALS(20, 36), 1e-12);
    RELEASE(gy, gx, l, s);
    /* removed: the next pass is not doubled; retain_grad accumulates */
    CHECK(ff_tensor_remove_hook(y, id) == FF_OK && ff_tensor_remove_hook(y, 12345) == FF_OK);
    ff_zero_grad(x);
    ff_tensor *l2 = ff_sum(y, 0, NULL, false);
    CHECK(ff_backward(l2, NULL, NULL) == FF_OK);
    gy = ff_grad(y), gx = ff_grad(x);
    CHECK_TENSOR(gy, 1, SHAPE(2), VALS(6, 10), 1e-12);
    CHECK_TENSOR(gx, 1, SHAPE(2), VALS(2, 2), 1e-12);
    CHECK(doubler.calls == 1 && seen.calls == 2);
    RELEASE(gy, gx, l2, early, y, two, x); /* y dies with its hook list: LSan checks */
}

static void test_errors_leave_grad_alone(void)
{
    ff_tensor *c = ff_test_tensor(FF_F32, 1, SHAPE(2), VALS(1, 2));
    ff_test_hook h = {0};
    CHECK_ERROR(ff_tensor_register_hook(c, ff_test_record_hook, &h) < 0, FF_ERR_AUTOGRAD, "does not require grad");
    CHECK_ERROR(ff_retain_grad(c) != FF_OK, FF_ERR_AUTOGRAD, "does not require grad");
    CHECK_ERROR(ff_tensor_register_hook(NULL, ff_test_record_hook, &h) < 0, FF_ERR_INVALID, "must not be NULL");
    ff_set_requires_grad(c, true);
    CHECK_ERROR(ff_tensor_register_hook(c, NULL, &h) < 0, FF_ERR_INVALID, "must not be NULL");
    ff_tensor *y = ff_exp(c), *l = ff_sum(y, 0, NULL, false);
    ff_test_hook failing = {.fail = FF_ERR_INVALID};
    CHECK(ff_tensor_register_hook(y, ff_test_record_hook, &failing) > 0);
    CHECK_ERROR(ff_backward(l, NULL, NULL) != FF_OK, FF_ERR_INVALID, "tensor hook failed");
    ff_tensor *g = ff_grad(c);
    CHECK(g == NULL && failing.calls == 1);
    RELEASE(l, y, c);
}

FF_TEST_MAIN("autograd_tensor_hooks", TEST(test_hook_sees_every_use_and_replaces), TEST(test_errors_leave_grad_alone))
