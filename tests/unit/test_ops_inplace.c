/* In-place ops: values through strided views, broadcasting and casting rules,
 * aliasing operands, refusals under autograd, and the version counter. */
#include "ff_test.h"

static void test_binary_inplace_values(void)
{
    ff_tensor *x = ff_test_tensor(FF_F32, 2, SHAPE(2, 3), VALS(1, 2, 3, 4, 5, 6));
    ff_tensor *row = ff_test_tensor(FF_F32, 1, SHAPE(3), VALS(10, 20, 30));
    CHECK(ff_add_(x, row) == FF_OK);
    CHECK_TENSOR(x, 2, SHAPE(2, 3), VALS(11, 22, 33, 14, 25, 36), 0);
    ff_tensor *col = ff_test_tensor(FF_F64, 2, SHAPE(2, 1), VALS(1, 2)); /* f64 operand into f32: fine */
    CHECK(ff_sub_(x, col) == FF_OK && ff_tensor_dtype(x) == FF_F32);
    CHECK_TENSOR(x, 2, SHAPE(2, 3), VALS(10, 21, 32, 12, 23, 34), 0);
    CHECK(ff_mul_(x, row) == FF_OK);
    CHECK(ff_div_(x, row) == FF_OK);
    CHECK_TENSOR(x, 2, SHAPE(2, 3), VALS(10, 21, 32, 12, 23, 34), 1e-5);
    CHECK(ff_add_scalar_(x, 0.5) == FF_OK && ff_mul_scalar_(x, 2) == FF_OK);
    CHECK_TENSOR(x, 2, SHAPE(2, 3), VALS(21, 43, 65, 25, 47, 69), 0);
    /* x's shape is the result's: y must broadcast to it, not the other way */
    ff_tensor *big = ff_ones(2, SHAPE(3, 3), FF_F32);
    CHECK_ERROR(ff_add_(row, big) != FF_OK, FF_ERR_INVALID, "does not broadcast");
    RELEASE(x, row, col, big);
}

static void test_views_and_aliasing(void)
{
    ff_tensor *x = ff_test_tensor(FF_F64, 2, SHAPE(3, 3), VALS(1, 2, 3, 4, 5, 6, 7, 8, 9));
    /* through a transposed view */
    ff_tensor *t = ff_transpose(x, 0, 1), *r = ff_test_tensor(FF_F64, 1, SHAPE(3), VALS(100, 200, 300));
    CHECK(ff_add_(t, r) == FF_OK); /* t[i][j] += r[j] -> x[j][i] += r[j] */
    CHECK_TENSOR(x, 2, SHAPE(3, 3), VALS(101, 102, 103, 204, 205, 206, 307, 308, 309), 0);
    /* operand aliasing the target through another view: x += x^T must read the old x */
    ff_tensor *y = ff_test_tensor(FF_F64, 2, SHAPE(2, 2), VALS(1, 2, 3, 4)), *yt = ff_transpose(y, 0, 1);
    CHECK(ff_add_(y, yt) == FF_OK);
    CHECK_TENSOR(y, 2, SHAPE(2, 2), VALS(2, 5, 5, 8), 0);
    CHECK(ff_mul_(y, y) == FF_OK); /* identical view: allowed directly */
    CHECK_TENSOR(y, 2, SHAPE(2, 2), VALS(4, 25, 25, 64), 0);
    /* a slice: only the viewed elements change */
    ff_tensor *s = ff_slice(x, 1, 0, 3, 2);
    CHECK(ff_fill_(s, -1) == FF_OK);
    CHECK_TENSOR(x, 2, SHAPE(3, 3), VALS(-1, 102, -1, -1, 205, -1, -1, 308, -1), 0);
    CHECK(ff_zero_(s) == FF_OK);
    CHECK_TENSOR(s, 2, SHAPE(3, 2), VALS(0, 0, 0, 0, 0, 0), 0);
    /* a broadcast view has several elements per location: refused for arithmetic */
    ff_tensor *one = ff_test_tensor(FF_F64, 2, SHAPE(1, 3), VALS(1, 2, 3)), *e = ff_expand(one, 2, SHAPE(2, 3));
    CHECK_ERROR(ff_add_scalar_(e, 1) != FF_OK, FF_ERR_INVALID, "broadcast");
    RELEASE(x, t, r, y, yt, s, one, e);
}

static void test_dtype_rules(void)
{
    ff_tensor *i = ff_test_tensor(FF_I32, 1, SHAPE(3), VALS(1, 2, 3));
    ff_tensor *f = ff_test_tensor(FF_F32, 1, SHAPE(3), VALS(0.5, 0.5, 0.5));
    ff_tensor *l = ff_test_tensor(FF_I64, 1, SHAPE(3), VALS(10, 20, 30));
    CHECK_ERROR(ff_add_(i, f) != FF_OK, FF_ERR_INVALID, "f32");
    CHECK_ERROR(ff_div_(i, l) != FF_OK, FF_ERR_INVALID, "cannot be stored");
    CHECK(ff_add_(i, l) == FF_OK && ff_tensor_dtype(i) == FF_I32); /* same kind, narrower: allowed */
    CHECK_TENSOR(i, 1, SHAPE(3), VALS(11, 22, 33), 0);
    CHECK(ff_add_scalar_(i, 2.9) == FF_OK); /* the scalar is converted to i32: + 2 */
    CHECK_TENSOR(i, 1, SHAPE(3), VALS(13, 24, 35), 0);
    CHECK(ff_copy_(i, f) == FF_OK); /* copy_ casts (truncates) */
    CHECK_TENSOR(i, 1, SHAPE(3), VALS(0, 0, 0), 0);
    ff_tensor *b = ff_zeros(2, SHAPE(2, 3), FF_BOOL);
    CHECK(ff_copy_(b, l) == FF_OK); /* broadcast [3] into [2, 3], cast to bool */
    CHECK_TENSOR(b, 2, SHAPE(2, 3), VALS(1, 1, 1, 1, 1, 1), 0);
    CHECK_ERROR(ff_add_(b, i) != FF_OK, FF_ERR_INVALID, "bool");
    ff_tensor *x = ff_zeros(1, SHAPE(3), FF_F64);
    CHECK(ff_axpy_(x, -2, f) == FF_OK);
    CHECK_TENSOR(x, 1, SHAPE(3), VALS(-1, -1, -1), 0);
    RELEASE(i, f, l, b, x);
}

static void test_autograd_refusals(void)
{
    ff_tensor *w = ff_ones(1, SHAPE(2), FF_F32), *g = ff_ones(1, SHAPE(2), FF_F32);
    ff_set_requires_grad(w, true);
    CHECK_ERROR(ff_add_(w, g) != FF_OK, FF_ERR_AUTOGRAD, "a leaf Variable that requires grad");
    CHECK(strstr(ff_last_error(), "ff_add_") != NULL);
    CHECK_ERROR(ff_axpy_(w, 0.1, g) != FF_OK, FF_ERR_AUTOGRAD, "ff_set_grad_enabled(false)");
    CHECK_ERROR(ff_zero_(w) != FF_OK, FF_ERR_AUTOGRAD, "leaf");
    ff_tensor *v = ff_slice(w, 0, 0, 1, 1);
    CHECK_ERROR(ff_fill_(v, 3) != FF_OK, FF_ERR_AUTOGRAD, "a view of a leaf Variable that requires grad");
    CHECK_TENSOR(w, 1, SHAPE(2), VALS(1, 1), 0); /* refused before anything was written */
    /* an optimizer step: allowed under no_grad, bumps nothing the graph cares about */
    FF_NO_GRAD_BEGIN
    CHECK(ff_axpy_(w, -0.5, g) == FF_OK);
    FF_NO_GRAD_END
    CHECK_TENSOR(w, 1, SHAPE(2), VALS(0.5, 0.5), 0);
    CHECK(ff_requires_grad(w) && ff_is_leaf(w));
    RELEASE(w, g, v);
}

/* Recorded in-place ops (autograd/view_history.c): an operand that requires grad makes a
 * plain tensor require grad; a tensor with history is rebased (the nodes that used its old
 * value keep it); a write into a view reaches the base's gradient, and a view made before
 * the write sees it. Hand-computed gradients. */
static void test_recorded_inplace(void)
{
    ff_tensor *w = ff_test_tensor(FF_F64, 1, SHAPE(2), VALS(1, 2));
    ff_set_requires_grad(w, true);
    ff_tensor *plain = ff_zeros(1, SHAPE(2), FF_F64);
    CHECK(ff_add_(plain, w) == FF_OK && ff_requires_grad(plain) && !ff_is_leaf(plain));
    ff_tensor *old = ff_add(plain, plain);           /* uses plain = w: 2w */
    CHECK(ff_mul_scalar_(plain, 3.0) == FF_OK);      /* plain = 3w, rebased */
    ff_tensor *s1 = ff_sum(old, 0, NULL, false), *s2 = ff_sum(plain, 0, NULL, false);
    ff_tensor *s = ff_add(s1, s2);                   /* 5 w1 + 5 w2 */
    CHECK(ff_backward(s, NULL, NULL) == FF_OK);
    ff_tensor *g = ff_grad(w);
    CHECK_TENSOR(g, 1, SHAPE(2), VALS(5, 5), 1e-12);
    /* a view of a non-leaf, written in place: the base's gradient goes through the write */
    ff_tensor *x = ff_test_tensor(FF_F64, 1, SHAPE(3), VALS(1, 2, 3));
    ff_set_requires_grad(x, true);
    ff_tensor *y = ff_mul_scalar(x, 2.0);            /* y = 2x */
    ff_tensor *tail = ff_slice(y, 0, 1, 3, 1), *head = ff_slice(y, 0, 0, 2, 1);
    CHECK(ff_mul_(tail, tail) == FF_OK);             /* y = [2x0, 4x1^2, 4x2^2] */
    CHECK_TENSOR(y, 1, SHAPE(3), VALS(2, 16, 36), 1e-12);
    ff_tensor *sh = ff_sum(head, 0, NULL, false);    /* head was made before: 2x0 + 4x1^2 */
    CHECK(ff_backward(sh, NULL, NULL) == FF_OK);
    ff_tensor *gx = ff_grad(x);
    CHECK_TENSOR(gx, 1, SHAPE(3), VALS(2, 16, 0), 1e-12);
    CHECK(strcmp(ff_grad_fn_name(y), "copy_slices") == 0);
    RELEASE(w, plain, old, s1, s2, s, g, x, y, tail, head, sh, gx);
}

/* The storage version catches a saved input modified through another view. */
static void test_saved_input_modified_through_alias(void)
{
    ff_tensor *x = ff_test_tensor(FF_F64, 1, SHAPE(3), VALS(1, 2, 3));
    ff_tensor *w = ff_test_tensor(FF_F64, 1, SHAPE(3), VALS(1, 1, 1));
    ff_set_requires_grad(w, true);
    ff_tensor *y = ff_mul(w, x), *s = ff_sum(y, 0, NULL, false); /* mul saves x */
    ff_tensor *alias = ff_slice(x, 0, 1, 2, 1);
    CHECK(ff_fill_(alias, 7) == FF_OK); /* x does not require grad: allowed */
    CHECK_ERROR(ff_backward(s, NULL, NULL) != FF_OK, FF_ERR_AUTOGRAD, "modified by an inplace operation");
    RELEASE(x, w, y, s, alias);
}

/* Destination-passing forms: results into an existing buffer (a strided view too),
 * aliasing the identical view, shape/dtype checks, and the autograd refusal. */
static void test_out_forms(void)
{
    ff_tensor *a = ff_test_tensor(FF_F32, 2, SHAPE(2, 3), VALS(0, 1, 2, 3, 4, 5));
    ff_tensor *b = ff_test_tensor(FF_F32, 1, SHAPE(3), VALS(10, 20, 30));
    ff_tensor *out = ff_zeros(2, SHAPE(2, 3), FF_F32);
    CHECK(ff_binary_out(FF_BINARY_ADD, out, a, b) == FF_OK); /* broadcasting */
    CHECK_TENSOR(out, 2, SHAPE(2, 3), VALS(10, 21, 32, 13, 24, 35), 0);
    ff_tensor *big = ff_zeros(2, SHAPE(3, 2), FF_F32), *view = ff_mT(big); /* a transposed destination */
    CHECK(ff_unary_out(FF_UNARY_NEG, view, a) == FF_OK);
    CHECK_TENSOR(big, 2, SHAPE(3, 2), VALS(0, -3, -1, -4, -2, -5), 0);
    CHECK(ff_unary_out(FF_UNARY_SQUARE, out, out) == FF_OK); /* the identical view */
    CHECK_TENSOR(out, 2, SHAPE(2, 3), VALS(100, 441, 1024, 169, 576, 1225), 0);
    CHECK(ff_binary_out(FF_BINARY_SUB, view, a, view) == FF_OK); /* view and out are the same view */
    CHECK_TENSOR(view, 2, SHAPE(2, 3), VALS(0, 2, 4, 6, 8, 10), 0);
    ff_tensor *m = ff_zeros(1, SHAPE(2), FF_F32);
    CHECK(ff_matmul_out(m, a, b) == FF_OK); /* [2,3] @ [3] */
    CHECK_TENSOR(m, 1, SHAPE(2), VALS(80, 260), 0);
    ff_tensor *i = ff_zeros(2, SHAPE(2, 3), FF_I32);
    CHECK_ERROR(ff_binary_out(FF_BINARY_ADD, i, a, b) != FF_OK, FF_ERR_INVALID, "out is i32 [2, 3], ff_add gives f32 [2, 3]");
    CHECK_ERROR(ff_matmul_out(m, a, a) != FF_OK, FF_ERR_INVALID, "not aligned");
    ff_set_requires_grad(b, true);
    CHECK_ERROR(ff_binary_out(FF_BINARY_ADD, out, a, b) != FF_OK, FF_ERR_AUTOGRAD, "not recorded by autograd");
    RELEASE(a, b, out, big, view, m, i);
}

/* From host memory: one upload into a contiguous tensor or view, a staging copy into a
 * strided one, the version bump autograd checks, and the refusals (size, NULL, broadcast,
 * a leaf that requires grad) that leave the tensor as it was. */
static void test_copy_from_host(void)
{
    ff_tensor *x = ff_test_tensor(FF_F32, 2, SHAPE(2, 3), VALS(0, 0, 0, 0, 0, 0));
    const float six[6] = {1, 2, 3, 4, 5, 6};
    CHECK(ff_copy_from_host_(x, six, sizeof six) == FF_OK);
    CHECK_TENSOR(x, 2, SHAPE(2, 3), VALS(1, 2, 3, 4, 5, 6), 0);
    ff_tensor *row = ff_slice(x, 0, 1, 2, 1); /* contiguous view at an offset */
    const float three[3] = {7, 8, 9};
    CHECK(ff_copy_from_host_(row, three, sizeof three) == FF_OK);
    CHECK_TENSOR(x, 2, SHAPE(2, 3), VALS(1, 2, 3, 7, 8, 9), 0);
    ff_tensor *t = ff_transpose(x, 0, 1); /* [3, 2], strided: row-major data of the view */
    CHECK(ff_copy_from_host_(t, six, sizeof six) == FF_OK);
    CHECK_TENSOR(x, 2, SHAPE(2, 3), VALS(1, 3, 5, 2, 4, 6), 0);
    CHECK_ERROR(ff_copy_from_host_(x, six, 5 * sizeof(float)) != FF_OK, FF_ERR_INVALID, "20 bytes given, the f32 tensor of 6 elements takes 24");
    CHECK_ERROR(ff_copy_from_host_(x, NULL, sizeof six) != FF_OK, FF_ERR_INVALID, "source is NULL");
    ff_tensor *one = ff_zeros(2, SHAPE(1, 3), FF_F32), *e = ff_expand(one, 2, SHAPE(2, 3));
    CHECK_ERROR(ff_copy_from_host_(e, six, sizeof six) != FF_OK, FF_ERR_INVALID, "broadcast");
    ff_tensor *w = ff_zeros(1, SHAPE(3), FF_F32);
    ff_set_requires_grad(w, true);
    CHECK_ERROR(ff_copy_from_host_(w, three, sizeof three) != FF_OK, FF_ERR_AUTOGRAD, "leaf");
    CHECK_TENSOR(w, 1, SHAPE(3), VALS(0, 0, 0), 0);
    CHECK_TENSOR(x, 2, SHAPE(2, 3), VALS(1, 3, 5, 2, 4, 6), 0);
    /* a saved input overwritten from the host: backward notices */
    ff_tensor *v = ff_test_tensor(FF_F32, 1, SHAPE(3), VALS(1, 2, 3));
    ff_tensor *y = ff_mul(w, v), *s = ff_sum(y, 0, NULL, false);
    CHECK(ff_copy_from_host_(v, three, sizeof three) == FF_OK);
    CHECK_ERROR(ff_backward(s, NULL, NULL) != FF_OK, FF_ERR_AUTOGRAD, "modified by an inplace operation");
    RELEASE(x, row, t, one, e, w, v, y, s);
}

FF_TEST_MAIN("ops_inplace", TEST(test_binary_inplace_values), TEST(test_views_and_aliasing), TEST(test_dtype_rules),
             TEST(test_autograd_refusals), TEST(test_recorded_inplace), TEST(test_saved_input_modified_through_alias),
             TEST(test_out_forms),
             TEST(test_copy_from_host))
