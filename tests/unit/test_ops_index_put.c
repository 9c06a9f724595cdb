/* Advanced indexing (ops/index_put.c): several index tensors, masks, NULL (':')
 * entries and the adjacency rule for reading; index_put with and without accumulate
 * (duplicates), the in-place forms through views, gradients, and errors that leave the
 * target untouched. The Python tests compare the same ops with PyTorch. */
#include <math.h>

#include "ff_test.h"

static ff_tensor *I64(int n, const int64_t *v) { return ff_from_data(v, 1, (int64_t[]){n}, FF_I64); }

static void test_index_read(void)
{
    /* x[i, j] = 10 i + j on [3, 4] */
    ff_tensor *x = ff_test_tensor(FF_F32, 2, SHAPE(3, 4), VALS(0, 1, 2, 3, 10, 11, 12, 13, 20, 21, 22, 23));
    ff_tensor *i = I64(2, (int64_t[]){2, -3}), *j = I64(2, (int64_t[]){1, 3});
    ff_tensor *r1 = ff_index(x, 2, (const ff_tensor *[]){i, j}); /* pairs: x[2,1], x[0,3] */
    CHECK_TENSOR(r1, 1, SHAPE(2), VALS(21, 3), 0);
    ff_tensor *r2 = ff_index(x, 2, (const ff_tensor *[]){NULL, j}); /* x[:, [1, 3]] */
    CHECK_TENSOR(r2, 2, SHAPE(3, 2), VALS(1, 3, 11, 13, 21, 23), 0);
    ff_tensor *m = ff_test_tensor(FF_BOOL, 1, SHAPE(3), VALS(1, 0, 1));
    ff_tensor *r3 = ff_index(x, 1, (const ff_tensor *[]){m}); /* rows 0 and 2 */
    CHECK_TENSOR(r3, 2, SHAPE(2, 4), VALS(0, 1, 2, 3, 20, 21, 22, 23), 0);
    /* non-adjacent advanced dims on [2, 3, 4]: the broadcast shape goes first */
    ff_tensor *y = ff_rand_normal(3, SHAPE(2, 3, 4), FF_F32, 0, 1, 5);
    ff_tensor *a = I64(2, (int64_t[]){0, 1}), *c = I64(2, (int64_t[]){3, 2});
    ff_tensor *r4 = ff_index(y, 3, (const ff_tensor *[]){a, NULL, c});
    CHECK(r4 && ff_tensor_ndim(r4) == 2 && ff_tensor_dim(r4, 0) == 2 && ff_tensor_dim(r4, 1) == 3);
    ff_tensor *three = I64(1, (int64_t[]){3});
    CHECK_ERROR(ff_index(x, 1, (const ff_tensor *[]){three}) == NULL, FF_ERR_INDEX,
                "index 3 is out of bounds for dimension 0 with size 3");
    RELEASE(x, i, j, r1, r2, m, r3, y, a, c, r4, three);
}

static void test_index_put_values(void)
{
    ff_tensor *x = ff_zeros(2, SHAPE(3, 2), FF_F64);
    ff_tensor *i = I64(4, (int64_t[]){0, 2, 0, -1});
    ff_tensor *v = ff_test_tensor(FF_F64, 2, SHAPE(4, 2), VALS(1, 2, 3, 4, 5, 6, 7, 8));
    ff_tensor *acc = ff_index_put(x, 1, (const ff_tensor *[]){i}, v, true); /* row 0: 1+5, 2+6; row 2: 3+7, 4+8 */
    CHECK_TENSOR(acc, 2, SHAPE(3, 2), VALS(6, 8, 0, 0, 10, 12), 0);
    ff_tensor *last = ff_index_put(x, 1, (const ff_tensor *[]){i}, v, false); /* the last occurrence wins */
    CHECK_TENSOR(last, 2, SHAPE(3, 2), VALS(5, 6, 0, 0, 7, 8), 0);
    ff_tensor *s = ff_scalar_tensor(9, FF_I64); /* a broadcast value, cast to x's dtype */
    ff_tensor *one = I64(1, (int64_t[]){1});
    ff_tensor *b = ff_index_put(x, 2, (const ff_tensor *[]){NULL, one}, s, false);
    CHECK_TENSOR(b, 2, SHAPE(3, 2), VALS(0, 9, 0, 9, 0, 9), 0);
    CHECK_TENSOR(x, 2, SHAPE(3, 2), VALS(0, 0, 0, 0, 0, 0), 0); /* out of place */
    RELEASE(x, i, v, acc, last, s, one, b);
}

static void test_inplace_through_views(void)
{
    ff_tensor *x = ff_zeros(2, SHAPE(3, 4), FF_F32);
    ff_tensor *view = ff_slice(x, 0, 1, 3, 1); /* rows 1, 2 */
    ff_tensor *m = ff_test_tensor(FF_BOOL, 2, SHAPE(2, 4), VALS(1, 0, 0, 1, 0, 1, 0, 0));
    ff_tensor *v = ff_scalar_tensor(5, FF_F32);
    CHECK(ff_index_put_(view, 1, (const ff_tensor *[]){m}, v, false) == FF_OK);
    CHECK_TENSOR(x, 2, SHAPE(3, 4), VALS(0, 0, 0, 0, 5, 0, 0, 5, 0, 5, 0, 0), 0);
    ff_tensor *col0 = ff_test_tensor(FF_BOOL, 1, SHAPE(4), VALS(1, 0, 0, 0)); /* broadcast over rows */
    CHECK(ff_masked_fill_(x, col0, v) == FF_OK);
    CHECK_TENSOR(x, 2, SHAPE(3, 4), VALS(5, 0, 0, 0, 5, 0, 0, 5, 5, 5, 0, 0), 0);
    ff_tensor *idx = I64(2, (int64_t[]){3, 3}), *src = ff_ones(2, SHAPE(3, 2), FF_F32);
    CHECK(ff_index_add_(x, 1, idx, src, 2.0) == FF_OK); /* column 3 += 2 twice */
    CHECK_TENSOR(x, 2, SHAPE(3, 4), VALS(5, 0, 0, 4, 5, 0, 0, 9, 5, 5, 0, 4), 0);
    /* a bad index writes nothing */
    ff_tensor *bad = I64(2, (int64_t[]){0, 4});
    CHECK_ERROR(ff_index_copy_(x, 1, bad, src) != FF_OK, FF_ERR_INDEX, "index 4 is out of bounds for dimension 1");
    CHECK_TENSOR(x, 2, SHAPE(3, 4), VALS(5, 0, 0, 4, 5, 0, 0, 9, 5, 5, 0, 4), 0);
    ff_tensor *wrong = ff_ones(1, SHAPE(3), FF_F32), *zero = I64(1, (int64_t[]){0});
    CHECK_ERROR(ff_index_put_(x, 1, (const ff_tensor *[]){zero}, wrong, false) != FF_OK, FF_ERR_INVALID,
                "values of shape [3] do not broadcast to the indexed shape [1, 4]");
    RELEASE(x, view, m, v, col0, idx, src, bad, wrong, zero);
}

static void test_gradients(void)
{
    ff_tensor *x = ff_rand_normal(2, SHAPE(4, 3), FF_F64, 0, 1, 1), *v = ff_rand_normal(2, SHAPE(3, 3), FF_F64, 0, 1, 2);
    ff_set_requires_grad(x, true);
    ff_set_requires_grad(v, true);
    ff_tensor *i = I64(3, (int64_t[]){1, 1, 3});
    ff_tensor *y = ff_index_put(x, 1, (const ff_tensor *[]){i}, v, false), *s = y ? ff_sum(y, 0, NULL, false) : NULL;
    CHECK(s && ff_backward(s, NULL, NULL) == FF_OK);
    ff_tensor *gx = ff_grad(x), *gv = ff_grad(v);
    CHECK_TENSOR(gx, 2, SHAPE(4, 3), VALS(1, 1, 1, 0, 0, 0, 1, 1, 1, 0, 0, 0), 0);
    CHECK_TENSOR(gv, 2, SHAPE(3, 3), VALS(1, 1, 1, 1, 1, 1, 1, 1, 1), 0); /* every occurrence, as PyTorch */
    /* assign keeps history: the new header's gradient reaches the source */
    ff_tensor *z = ff_zeros(2, SHAPE(4, 3), FF_F64), *w = ff_mul_scalar(x, 3.0);
    ff_tensor *zz = ff_assign(z, w), *s2 = zz ? ff_sum(zz, 0, NULL, false) : NULL;
    ff_zero_grad(x);
    CHECK(s2 && ff_backward(s2, NULL, NULL) == FF_OK);
    ff_tensor *gx2 = ff_grad(x);
    CHECK_TENSOR(gx2, 2, SHAPE(4, 3), VALS(3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3), 0);
    CHECK(zz && ff_tensor_shares_storage(zz, z));
    CHECK_ERROR(ff_assign(x, w) == NULL, FF_ERR_AUTOGRAD, "leaf");
    RELEASE(x, v, i, y, s, gx, gv, z, w, zz, s2, gx2);
}

FF_TEST_MAIN("ops_index_put", TEST(test_index_read), TEST(test_index_put_values), TEST(test_inplace_through_views),
             TEST(test_gradients))
