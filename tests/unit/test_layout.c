/* Layout math (core/layout.c) checked directly: strides, views, reshape-without-copy,
 * broadcasting, overflow. No backend involved. */
#include "ff_impl.h"
#include "ff_test.h"

static void test_contiguous_strides(void)
{
    ff_layout l;
    CHECK(ff_layout_init_contiguous(&l, 3, (int64_t[]){2, 3, 4}, "t") == FF_OK);
    CHECK(l.strides[0] == 12 && l.strides[1] == 4 && l.strides[2] == 1);
    CHECK(ff_layout_is_contiguous(&l));
    int64_t n;
    CHECK(ff_layout_numel(&l, &n) == FF_OK && n == 24);
    CHECK(ff_layout_init_contiguous(&l, 0, NULL, "t") == FF_OK && l.ndim == 0);
    CHECK(ff_layout_numel(&l, &n) == FF_OK && n == 1);
    CHECK(ff_layout_init_contiguous(&l, 2, (int64_t[]){0, 5}, "t") == FF_OK);
    CHECK(ff_layout_numel(&l, &n) == FF_OK && n == 0);
}

static void test_bad_shapes(void)
{
    ff_layout l;
    CHECK_ERROR(ff_layout_init_contiguous(&l, 9, (int64_t[9]){1}, "ff_x") != FF_OK, FF_ERR_INVALID, "rank 9");
    CHECK_ERROR(ff_layout_init_contiguous(&l, 2, (int64_t[]){3, -1}, "ff_x") != FF_OK, FF_ERR_INVALID, "negative");
    CHECK_ERROR(ff_layout_init_contiguous(&l, 3, (int64_t[]){1ll << 40, 1ll << 20, 1ll << 4}, "ff_x") != FF_OK,
                FF_ERR_OVERFLOW, "ff_x");
}

static void test_permute_and_contiguity(void)
{
    ff_layout l, p;
    ff_layout_init_contiguous(&l, 3, (int64_t[]){2, 3, 4}, "t");
    CHECK(ff_layout_permute(&l, (int[]){2, 0, 1}, &p, "t") == FF_OK);
    CHECK(p.shape[0] == 4 && p.shape[1] == 2 && p.shape[2] == 3);
    CHECK(p.strides[0] == 1 && p.strides[1] == 12 && p.strides[2] == 4);
    CHECK(!ff_layout_is_contiguous(&p));
    CHECK_ERROR(ff_layout_permute(&l, (int[]){0, 0, 1}, &p, "ff_permute") != FF_OK, FF_ERR_INVALID, "repeated");
    CHECK_ERROR(ff_layout_permute(&l, (int[]){0, 1, 3}, &p, "ff_permute") != FF_OK, FF_ERR_INVALID, "axis 3");
}

static void test_slice_rules(void)
{
    ff_layout l, s;
    ff_layout_init_contiguous(&l, 2, (int64_t[]){5, 10}, "t");
    CHECK(ff_layout_slice(&l, 1, 1, 9, 3, &s, "t") == FF_OK); /* 1, 4, 7 */
    CHECK(s.shape[1] == 3 && s.strides[1] == 3 && s.offset == 1);
    CHECK(ff_layout_slice(&l, 0, -2, 100, 1, &s, "t") == FF_OK); /* rows 3, 4 */
    CHECK(s.shape[0] == 2 && s.offset == 30);
    CHECK(ff_layout_slice(&l, -1, 7, 2, 1, &s, "t") == FF_OK && s.shape[1] == 0); /* empty, not an error */
    CHECK_ERROR(ff_layout_slice(&l, 0, 0, 5, 0, &s, "ff_slice") != FF_OK, FF_ERR_INVALID, "step");
    CHECK(ff_layout_select(&l, 0, -1, &s, "t") == FF_OK && s.ndim == 1 && s.offset == 40 && s.shape[0] == 10);
    CHECK_ERROR(ff_layout_select(&l, 0, 5, &s, "ff_select") != FF_OK, FF_ERR_INDEX, "index 5");
}

static void test_expand_and_broadcast(void)
{
    ff_layout l, e;
    ff_layout_init_contiguous(&l, 2, (int64_t[]){3, 1}, "t");
    CHECK(ff_layout_expand(&l, 3, (int64_t[]){2, 3, 4}, &e, "t") == FF_OK);
    CHECK(e.strides[0] == 0 && e.strides[1] == 1 && e.strides[2] == 0);
    CHECK_ERROR(ff_layout_expand(&l, 2, (int64_t[]){4, 4}, &e, "ff_expand") != FF_OK, FF_ERR_INVALID, "[3, 1]");
    int n;
    int64_t out[FF_MAX_DIMS];
    CHECK(ff_broadcast_shapes(2, (int64_t[]){3, 1}, 3, (int64_t[]){2, 1, 5}, &n, out, "t") == FF_OK);
    CHECK(n == 3 && out[0] == 2 && out[1] == 3 && out[2] == 5);
    CHECK(ff_broadcast_shapes(1, (int64_t[]){0}, 2, (int64_t[]){3, 1}, &n, out, "t") == FF_OK && out[1] == 0);
    CHECK_ERROR(ff_broadcast_shapes(1, (int64_t[]){3}, 1, (int64_t[]){4}, &n, out, "ff_add") != FF_OK,
                FF_ERR_INVALID, "not broadcastable");
}

static void test_reshape_view(void)
{
    ff_layout l, t, r;
    ff_layout_init_contiguous(&l, 3, (int64_t[]){2, 3, 4}, "t");
    CHECK(ff_layout_reshape_view(&l, 2, (int64_t[]){6, 4}, &r) == FF_OK && r.strides[0] == 4 && r.strides[1] == 1);
    /* transposed last two dims: merging them needs a copy, splitting the first does not */
    ff_layout_permute(&l, (int[]){0, 2, 1}, &t, "t");
    CHECK(ff_layout_reshape_view(&t, 2, (int64_t[]){2, 12}, &r) == FF_ERR_INVALID);
    CHECK(ff_layout_reshape_view(&t, 4, (int64_t[]){2, 2, 2, 3}, &r) == FF_OK);
    CHECK(r.strides[0] == 12 && r.strides[1] == 2 && r.strides[2] == 1 && r.strides[3] == 4);
    /* a stepped slice can still gain size-1 dims */
    ff_layout_slice(&l, 2, 0, 4, 2, &t, "t");
    CHECK(ff_layout_reshape_view(&t, 4, (int64_t[]){2, 3, 1, 2}, &r) == FF_OK && r.strides[3] == 2);
    int64_t s[FF_MAX_DIMS];
    CHECK(ff_layout_infer_shape(24, 3, (int64_t[]){4, -1, 2}, s, "t") == FF_OK && s[1] == 3);
    CHECK_ERROR(ff_layout_infer_shape(24, 2, (int64_t[]){5, -1}, s, "ff_reshape") != FF_OK, FF_ERR_INVALID, "infer");
    CHECK_ERROR(ff_layout_infer_shape(24, 2, (int64_t[]){-1, -1}, s, "ff_reshape") != FF_OK, FF_ERR_INVALID,
                "more than one");
}

static void test_squeeze_unsqueeze(void)
{
    ff_layout l, r;
    ff_layout_init_contiguous(&l, 3, (int64_t[]){2, 1, 3}, "t");
    CHECK(ff_layout_squeeze(&l, 1, &r, "t") == FF_OK && r.ndim == 2 && r.shape[1] == 3);
    CHECK_ERROR(ff_layout_squeeze(&l, 0, &r, "ff_squeeze") != FF_OK, FF_ERR_INVALID, "not 1");
    CHECK(ff_layout_unsqueeze(&l, -1, &r, "t") == FF_OK && r.ndim == 4 && r.shape[3] == 1);
    ff_layout_init_contiguous(&l, 8, (int64_t[]){1, 1, 1, 1, 1, 1, 1, 1}, "t");
    CHECK_ERROR(ff_layout_unsqueeze(&l, 0, &r, "ff_unsqueeze") != FF_OK, FF_ERR_INVALID, "FF_MAX_DIMS");
}

FF_TEST_MAIN("layout", TEST(test_contiguous_strides), TEST(test_bad_shapes), TEST(test_permute_and_contiguity),
             TEST(test_slice_rules), TEST(test_expand_and_broadcast), TEST(test_reshape_view),
             TEST(test_squeeze_unsqueeze))
