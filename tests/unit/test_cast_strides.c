/* A cast keeps a dense view's strides (PyTorch's memory_format=preserve_format): a
 * transpose or permute cast to another dtype has the same strides and values, any other
 * view comes back contiguous, copies between dense layouts of the same order land in the
 * right elements at any offset, and gradients route back through the strided result.
 * Values are small multiples of 1/4, exact in every float dtype, so every check is exact. */
#include "ff_test.h"

static ff_tensor *ramp(ff_dtype dt, int ndim, const int64_t *shape)
{
    double v[64];
    int64_t n = 1;
    for (int d = 0; d < ndim; d++) n *= shape[d];
    for (int64_t i = 0; i < n; i++) v[i] = (double)(i % 13) * 0.25 - 1.5 + (double)(i / 13);
    return ff_test_tensor(dt, ndim, shape, v);
}

static bool strides_are(const ff_tensor *t, int ndim, const int64_t *want)
{
    if (!t || ff_tensor_ndim(t) != ndim) return false;
    for (int d = 0; d < ndim; d++)
        if (ff_tensor_strides(t)[d] != want[d]) return false;
    return true;
}

static void test_cast_keeps_transpose_and_permute_strides(void)
{
    static const ff_dtype dts[] = {FF_BF16, FF_F16, FF_F64};
    ff_tensor *x = ramp(FF_F32, 2, SHAPE(3, 5)), *t = ff_transpose(x, 0, 1);
    ff_tensor *y = ramp(FF_F32, 3, SHAPE(2, 3, 4)), *p = ff_permute(y, (const int[]){2, 0, 1});
    for (size_t i = 0; i < sizeof dts / sizeof dts[0]; i++) {
        ff_tensor *ct = ff_astype(t, dts[i]), *cp = ff_astype(p, dts[i]);
        CHECK(strides_are(ct, 2, SHAPE(1, 5)) && ff_tensor_offset(ct) == 0);
        CHECK(strides_are(cp, 3, SHAPE(1, 12, 4)) && ff_tensor_offset(cp) == 0);
        CHECK(ff_test_max_diff(ct, t) == 0 && ff_test_max_diff(cp, p) == 0);
        /* and back: the round trip keeps them too */
        ff_tensor *back = ff_astype(ct, FF_F32);
        CHECK(strides_are(back, 2, SHAPE(1, 5)) && ff_test_max_diff(back, t) == 0);
        RELEASE(ct, cp, back);
    }
    RELEASE(x, t, y, p);
}

/* Views that are not dense (a step, a broadcast) and an offset view come back contiguous
 * from offset 0, with their values. */
static void test_cast_of_other_views_is_contiguous(void)
{
    ff_tensor *x = ramp(FF_F32, 2, SHAPE(4, 6));
    ff_tensor *step = ff_slice(x, 1, 0, 6, 2), *tstep = step ? ff_transpose(step, 0, 1) : NULL;
    ff_tensor *row = ff_slice(x, 0, 1, 2, 1), *bc = row ? ff_expand(row, 2, SHAPE(3, 6)) : NULL;
    ff_tensor *sel = ff_select(x, 0, 2); /* dense, offset 12 */
    ff_tensor *views[] = {step, tstep, bc, sel};
    for (size_t i = 0; i < sizeof views / sizeof views[0]; i++) {
        ff_tensor *c = ff_astype(views[i], FF_BF16);
        CHECK(c && ff_tensor_is_contiguous(c) && ff_tensor_offset(c) == 0);
        CHECK(ff_test_max_diff(c, views[i]) == 0);
        ff_tensor_release(c);
    }
    RELEASE(x, step, tstep, row, bc, sel);
}

/* ff_copy_ between two transposes of different dtypes (the straight pass over storage
 * order), into a dense view at an offset: only that view's elements change. */
static void test_copy_between_same_order_layouts(void)
{
    ff_tensor *big = ff_zeros(3, SHAPE(2, 4, 3), FF_F32), *slab = big ? ff_select(big, 0, 1) : NULL;
    ff_tensor *dst = slab ? ff_transpose(slab, 0, 1) : NULL; /* [3, 4], strides (1, 3), offset 12 */
    ff_tensor *src0 = ramp(FF_BF16, 2, SHAPE(4, 3)), *src = src0 ? ff_transpose(src0, 0, 1) : NULL;
    CHECK(dst && ff_tensor_offset(dst) == 12 && strides_are(dst, 2, SHAPE(1, 3)));
    CHECK(ff_copy_(dst, src) == FF_OK);
    CHECK(ff_test_max_diff(dst, src) == 0);
    double v[24];
    CHECK(ff_test_values(big, v, 24) == 0);
    bool first_untouched = true;
    for (int i = 0; i < 12; i++) first_untouched &= v[i] == 0;
    CHECK(first_untouched);
    RELEASE(big, slab, dst, src0, src);
}

/* d/dx sum(astype(x^T, bf16) * w) = w^T, in x's dtype and x's own layout. */
static void test_gradient_through_a_strided_cast(void)
{
    ff_tensor *x = ramp(FF_F32, 2, SHAPE(3, 4));
    ff_set_requires_grad(x, true);
    ff_tensor *w = ramp(FF_BF16, 2, SHAPE(4, 3));
    ff_tensor *t = ff_transpose(x, 0, 1), *c = t ? ff_astype(t, FF_BF16) : NULL;
    ff_tensor *m = c ? ff_mul(c, w) : NULL, *s = m ? ff_sum(m, 0, NULL, false) : NULL;
    CHECK(strides_are(c, 2, SHAPE(1, 4)));
    CHECK(s && ff_backward(s, NULL, NULL) == FF_OK);
    ff_tensor *g = ff_grad(x), *wt = ff_transpose(w, 0, 1);
    CHECK(g && ff_tensor_dtype(g) == FF_F32 && ff_tensor_dim(g, 0) == 3 && ff_tensor_dim(g, 1) == 4);
    CHECK(ff_test_max_diff(g, wt) == 0);
    RELEASE(x, w, t, c, m, s, g, wt);
}

/* Autocast's matmul on a Linear's x @ W^T: the bf16 W^T keeps W's layout; the product and
 * W's gradient equal those of the contiguous bf16 operands. */
static void test_autocast_matmul_on_a_transposed_weight(void)
{
    ff_tensor *x = ramp(FF_F32, 2, SHAPE(5, 6)), *w = ramp(FF_F32, 2, SHAPE(4, 6));
    ff_set_requires_grad(w, true);
    CHECK(ff_autocast_set(FF_BF16) == FF_OK);
    ff_tensor *wt = ff_mT(w), *y = wt ? ff_matmul(x, wt) : NULL;
    CHECK(ff_autocast_set(FF_F32) == FF_OK);
    ff_tensor *s = y ? ff_sum(y, 0, NULL, false) : NULL;
    CHECK(s && ff_backward(s, NULL, NULL) == FF_OK);
    /* the same with contiguous bf16 copies, no autocast */
    ff_tensor *xb = ff_astype(x, FF_BF16), *wc = ff_contiguous(wt), *wb = wc ? ff_astype(wc, FF_BF16) : NULL;
    ff_tensor *want = wb ? ff_matmul(xb, wb) : NULL;
    CHECK(y && ff_tensor_dtype(y) == FF_BF16 && ff_test_max_diff(y, want) == 0);
    /* d sum(x W^T) / dW[o, i] = sum_r x[r, i], rounded to bf16 through the cast's backward */
    ff_tensor *one = ff_ones(2, SHAPE(4, 5), FF_F32), *gw = ff_grad(w), *gwant = ff_matmul(one, x);
    CHECK(ff_test_max_diff(gw, gwant) == 0);
    RELEASE(x, w, wt, y, s, xb, wc, wb, want, one, gw, gwant);
}

FF_TEST_MAIN("cast_strides", TEST(test_cast_keeps_transpose_and_permute_strides),
             TEST(test_cast_of_other_views_is_contiguous), TEST(test_copy_between_same_order_layouts),
             TEST(test_gradient_through_a_strided_cast), TEST(test_autocast_matmul_on_a_transposed_weight))
