/* ff_tensor_from_buffer / ff_tensor_buffer: tensors over memory a backend holds for
 * someone else (the PyTorch device's allocations). The view reads and writes that memory in
 * place; every element must fit the buffer; the release runs exactly once, when the last
 * view over the memory is gone; nothing is released when the wrap is refused. */
#include <stdint.h>
#include <string.h>

#include "ff_test.h"

static int released;
static void count_release(void *ctx)
{
    released++;
    *(int *)ctx = 1;
}

static void test_view_reads_and_writes_in_place(void)
{
    long base = ff_debug_live_tensors();
    ff_backend *be = ff_backend_load("cpu");
    float mem[12];
    for (int i = 0; i < 12; i++) mem[i] = (float)i;
    int64_t shape[2] = {2, 3}, strides[2] = {1, 4}; /* a transposed [3, 4] block, offset 1 */
    int flag = 0;
    released = 0;
    ff_tensor *t = ff_tensor_from_buffer(be, mem, sizeof mem, FF_F32, 2, shape, strides, 1, count_release, &flag);
    CHECK(t != NULL);
    if (!t) return;
    size_t nbytes = 0;
    CHECK(ff_tensor_buffer(t, &nbytes) == mem && nbytes == sizeof mem);
    CHECK(ff_tensor_offset(t) == 1 && ff_tensor_strides(t)[1] == 4);
    int64_t idx[2] = {1, 2};
    double v = 0;
    CHECK(ff_tensor_get(t, idx, &v) == FF_OK && v == 10.0); /* 1 + 1 * 1 + 2 * 4 */
    ff_tensor *view = ff_transpose(t, 0, 1);
    CHECK(ff_tensor_shares_storage(view, t));
    CHECK(ff_fill_(view, 7.0) == FF_OK); /* writes the caller's memory */
    CHECK(mem[1] == 7.0f && mem[2] == 7.0f && mem[5] == 7.0f && mem[10] == 7.0f && mem[0] == 0.0f && mem[3] == 3.0f);
    ff_tensor_release(t);
    CHECK(released == 0); /* the transposed view still holds the memory */
    ff_tensor_release(view);
    CHECK(released == 1 && flag == 1);
    CHECK(ff_debug_live_tensors() == base);
    /* no release function: the caller keeps the memory alive past every view */
    int64_t n = 12, one = 1;
    ff_tensor *all = ff_tensor_from_buffer(be, mem, sizeof mem, FF_F32, 1, &n, &one, 0, NULL, NULL);
    CHECK(all != NULL);
    ff_tensor *s = ff_sum(all, 0, NULL, false);
    double total = 0;
    CHECK(s && ff_tensor_item(s, &total) == FF_OK && total == 7 * 6 + (0 + 3 + 4 + 7 + 8 + 11)); /* 1, 2, 5, 6, 9, 10 are 7 */
    ff_tensor_release(s);
    ff_tensor_release(all);
    CHECK(ff_debug_live_tensors() == base);
    CHECK(ff_tensor_buffer(NULL, &nbytes) == NULL);
}

static void test_refused_wraps_release_nothing(void)
{
    long base = ff_debug_live_tensors();
    ff_backend *be = ff_backend_load("cpu");
    float mem[8];
    int flag = 0;
    released = 0;
    int64_t shape[2] = {2, 4}, strides[2] = {4, 1};
    /* one element past the end: offset 1 + (1 * 4 + 3 * 1) = 8 */
    CHECK_ERROR(ff_tensor_from_buffer(be, mem, sizeof mem, FF_F32, 2, shape, strides, 1, count_release, &flag) == NULL,
                FF_ERR_INVALID, "does not fit");
    int64_t neg[2] = {-4, 1};
    CHECK_ERROR(ff_tensor_from_buffer(be, mem, sizeof mem, FF_F32, 2, shape, neg, 4, count_release, &flag) == NULL,
                FF_ERR_INVALID, "negative stride");
    int64_t bad_shape[2] = {2, -1};
    CHECK_ERROR(ff_tensor_from_buffer(be, mem, sizeof mem, FF_F32, 2, bad_shape, strides, 0, count_release, &flag) == NULL,
                FF_ERR_INVALID, "negative size");
    int64_t huge[2] = {2, INT64_MAX / 2};
    CHECK_ERROR(ff_tensor_from_buffer(be, mem, sizeof mem, FF_F32, 2, shape, huge, 0, count_release, &flag) == NULL,
                FF_ERR_OVERFLOW, "overflow");
    CHECK_ERROR(ff_tensor_from_buffer(be, mem, sizeof mem, FF_F32, 2, shape, strides, -1, count_release, &flag) == NULL,
                FF_ERR_INVALID, "negative offset");
    CHECK_ERROR(ff_tensor_from_buffer(NULL, mem, sizeof mem, FF_F32, 2, shape, strides, 0, NULL, NULL) == NULL,
                FF_ERR_INVALID, "backend is NULL");
    CHECK_ERROR(ff_tensor_from_buffer(be, NULL, 16, FF_F32, 2, shape, strides, 0, NULL, NULL) == NULL, FF_ERR_INVALID,
                "buffer is NULL");
    CHECK_ERROR(ff_tensor_from_buffer(be, mem, sizeof mem, (ff_dtype)99, 2, shape, strides, 0, NULL, NULL) == NULL,
                FF_ERR_INVALID, "invalid dtype");
    CHECK_ERROR(ff_tensor_from_buffer(be, mem, sizeof mem, FF_F32, FF_MAX_DIMS + 1, shape, strides, 0, NULL, NULL) == NULL,
                FF_ERR_INVALID, "ndim");
    CHECK(released == 0 && flag == 0);
    /* an empty view fits any buffer, a NULL one included */
    int64_t zero[1] = {0}, unit[1] = {1};
    ff_tensor *e = ff_tensor_from_buffer(be, NULL, 0, FF_F32, 1, zero, unit, 0, NULL, NULL);
    CHECK(e != NULL && ff_tensor_numel(e) == 0);
    ff_tensor_release(e);
    CHECK(ff_debug_live_tensors() == base);
}

FF_TEST_MAIN("tensor_from_buffer", TEST(test_view_reads_and_writes_in_place), TEST(test_refused_wraps_release_nothing))
