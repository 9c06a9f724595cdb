/* Tensors and views through the public API on the default backend: views share
 * storage and see writes, contiguous copies only when needed, errors leave inputs intact. */
#include "ff_test.h"

static ff_tensor *arange_f32(int ndim, const int64_t *shape)
{
    int64_t n = 1;
    for (int d = 0; d < ndim; d++) n *= shape[d];
    float buf[256];
    for (int64_t i = 0; i < n; i++) buf[i] = (float)i;
    return ff_from_data(buf, ndim, shape, FF_F32);
}

static void test_factories_and_readback(void)
{
    ff_tensor *z = ff_zeros(2, (int64_t[]){2, 3}, FF_I32);
    CHECK_TENSOR(z, 2, ((int64_t[]){2, 3}), ((double[]){0, 0, 0, 0, 0, 0}), 0);
    ff_tensor *f = ff_full(1, (int64_t[]){3}, FF_F64, -2.5);
    CHECK_TENSOR(f, 1, ((int64_t[]){3}), ((double[]){-2.5, -2.5, -2.5}), 0);
    ff_tensor *s = ff_scalar_tensor(7, FF_I64);
    int64_t v = 0;
    CHECK(ff_tensor_ndim(s) == 0 && ff_tensor_numel(s) == 1 && ff_tensor_item_i64(s, &v) == FF_OK && v == 7);
    ff_tensor *e = ff_empty(3, (int64_t[]){2, 0, 4}, FF_F32);
    CHECK(e && ff_tensor_numel(e) == 0);
    CHECK(ff_tensor_to_host(e, NULL, 0) == FF_OK);
    double d;
    CHECK_ERROR(ff_tensor_item(z, &d) != FF_OK, FF_ERR_INVALID, "6 elements");
    CHECK_ERROR(ff_tensor_to_host(z, (int32_t[5]){0}, 20) != FF_OK, FF_ERR_INVALID, "needs 24");
    CHECK_ERROR(ff_empty(2, (int64_t[]){1ll << 62, 4}, FF_F32) == NULL, FF_ERR_OVERFLOW, "ff_empty");
    CHECK_ERROR(ff_empty(1, (int64_t[]){4}, (ff_dtype)FF_DTYPE_COUNT) == NULL, FF_ERR_INVALID, "invalid dtype");
    ff_tensor_release(z);
    ff_tensor_release(f);
    ff_tensor_release(s);
    ff_tensor_release(e);
}

static void test_views_share_storage(void)
{
    ff_tensor *a = arange_f32(2, (int64_t[]){3, 4});
    ff_tensor *t = ff_transpose(a, 0, 1);
    CHECK(ff_tensor_shares_storage(a, t) && !ff_tensor_is_contiguous(t));
    CHECK(ff_tensor_strides(t)[0] == 1 && ff_tensor_strides(t)[1] == 4);
    CHECK_TENSOR(t, 2, ((int64_t[]){4, 3}), ((double[]){0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11}), 0);
    ff_tensor *col = ff_select(a, 1, 2); /* a[:, 2] */
    CHECK_TENSOR(col, 1, ((int64_t[]){3}), ((double[]){2, 6, 10}), 0);
    ff_tensor *st = ff_slice(a, 1, 1, 4, 2); /* a[:, 1::2] */
    CHECK_TENSOR(st, 2, ((int64_t[]){3, 2}), ((double[]){1, 3, 5, 7, 9, 11}), 0);
    /* a write through the base is seen by every view */
    CHECK(ff_fill_(a, 1.0) == FF_OK);
    CHECK_TENSOR(col, 1, ((int64_t[]){3}), ((double[]){1, 1, 1}), 0);
    ff_tensor_release(a);
    ff_tensor_release(t);
    ff_tensor_release(col);
    ff_tensor_release(st);
}

static void test_reshape_copies_only_when_needed(void)
{
    ff_tensor *a = arange_f32(3, (int64_t[]){2, 3, 4});
    ff_tensor *r = ff_reshape(a, 2, (int64_t[]){-1, 4});
    CHECK(r && ff_tensor_shares_storage(a, r) && ff_tensor_shape(r)[0] == 6);
    ff_tensor *t = ff_transpose(a, 1, 2);
    CHECK_ERROR(ff_reshape_view(t, 1, (int64_t[]){24}) == NULL, FF_ERR_INVALID, "without a copy");
    ff_tensor *flat = ff_reshape(t, 1, (int64_t[]){24});
    CHECK(flat && !ff_tensor_shares_storage(a, flat));
    double expect[24];
    for (int i = 0; i < 2; i++)
        for (int k = 0; k < 4; k++)
            for (int j = 0; j < 3; j++) expect[i * 12 + k * 3 + j] = i * 12 + j * 4 + k;
    CHECK_TENSOR(flat, 1, ((int64_t[]){24}), expect, 0);
    ff_tensor *c = ff_contiguous(a);
    CHECK(c == a); /* already contiguous: the same tensor, retained */
    ff_tensor *f = ff_flatten(a, 1, 2);
    CHECK(f && ff_tensor_ndim(f) == 2 && ff_tensor_shape(f)[1] == 12 && ff_tensor_shares_storage(a, f));
    ff_tensor *u = ff_unsqueeze(a, 0), *sq = u ? ff_squeeze(u, 0) : NULL;
    CHECK(u && ff_tensor_ndim(u) == 4 && sq && ff_tensor_ndim(sq) == 3);
    ff_tensor *row = ff_select(a, 0, 0), *e = ff_expand(row, 3, (int64_t[]){5, 3, 4});
    CHECK(e && ff_tensor_strides(e)[0] == 0);
    ff_tensor_release(row);
    ff_tensor *rs = ff_reshape(a, 2, (int64_t[]){5, 5});
    CHECK_ERROR(rs == NULL, FF_ERR_INVALID, "ff_reshape");
    ff_tensor *tensors[] = {a, r, t, flat, c, f, u, sq, e};
    for (size_t i = 0; i < sizeof tensors / sizeof tensors[0]; i++) ff_tensor_release(tensors[i]);
}

static void test_zero_d_and_empty_views(void)
{
    ff_tensor *s = ff_scalar_tensor(3.5, FF_F32);
    ff_tensor *r = ff_reshape(s, 2, (int64_t[]){1, 1});
    CHECK_TENSOR(r, 2, ((int64_t[]){1, 1}), ((double[]){3.5}), 0);
    ff_tensor *e = ff_expand(s, 2, (int64_t[]){2, 3});
    CHECK_TENSOR(e, 2, ((int64_t[]){2, 3}), ((double[]){3.5, 3.5, 3.5, 3.5, 3.5, 3.5}), 0);
    ff_tensor *z = ff_zeros(2, (int64_t[]){0, 3}, FF_F32);
    ff_tensor *zt = ff_transpose(z, 0, 1), *zr = ff_reshape(zt, 3, (int64_t[]){3, 0, 7});
    CHECK(zr && ff_tensor_numel(zr) == 0 && ff_tensor_shape(zr)[2] == 7);
    ff_tensor_release(s);
    ff_tensor_release(r);
    ff_tensor_release(e);
    ff_tensor_release(z);
    ff_tensor_release(zt);
    ff_tensor_release(zr);
}

static void test_errors_name_the_function(void)
{
    ff_tensor *a = arange_f32(2, (int64_t[]){2, 3});
    CHECK_ERROR(ff_transpose(a, 0, 2) == NULL, FF_ERR_INVALID, "ff_transpose: axis 2 out of range");
    CHECK_ERROR(ff_select(a, 1, 3) == NULL, FF_ERR_INDEX, "ff_select");
    CHECK_ERROR(ff_slice(a, 0, 0, 2, -1) == NULL, FF_ERR_INVALID, "ff_slice: step");
    CHECK_ERROR(ff_squeeze(a, 0) == NULL, FF_ERR_INVALID, "ff_squeeze");
    CHECK_ERROR(ff_narrow(a, 1, 2, 2) == NULL, FF_ERR_INDEX, "ff_narrow");
    CHECK_ERROR(ff_expand(a, 2, (int64_t[]){4, 3}) == NULL, FF_ERR_INVALID, "ff_expand");
    CHECK_ERROR(ff_permute(NULL, (int[]){0}) == NULL, FF_ERR_INVALID, "ff_permute");
    /* the input is intact after every failure */
    CHECK_TENSOR(a, 2, ((int64_t[]){2, 3}), ((double[]){0, 1, 2, 3, 4, 5}), 0);
    ff_tensor_release(a);
}

static void test_refcounts(void)
{
    ff_tensor *a = arange_f32(1, (int64_t[]){4});
    ff_tensor *v = ff_slice(a, 0, 1, 3, 1);
    ff_tensor_release(a); /* the view keeps the storage alive */
    CHECK_TENSOR(v, 1, ((int64_t[]){2}), ((double[]){1, 2}), 0);
    CHECK(ff_tensor_retain(v) == v);
    ff_tensor_release(v);
    ff_tensor_release(v);
    ff_tensor_release(NULL);
}

FF_TEST_MAIN("tensor_views", TEST(test_factories_and_readback), TEST(test_views_share_storage),
             TEST(test_reshape_copies_only_when_needed), TEST(test_zero_d_and_empty_views),
             TEST(test_errors_name_the_function), TEST(test_refcounts))
