/* DLPack: export of strided views, import of foreign memory without copying, and the
 * ownership rule: each deleter runs exactly once, when the last user lets go. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <dlpack/dlpack.h>

#include "ff_test.h"

static void test_export_strided(void)
{
    long base = ff_debug_live_tensors();
    int64_t s[] = {3, 4};
    double v[12];
    for (int i = 0; i < 12; i++) v[i] = i;
    ff_tensor *t = ff_test_tensor(FF_F32, 2, s, v);
    ff_tensor *tt = ff_transpose(t, 0, 1);          /* [4, 3], strides [1, 4] */
    ff_tensor *sl = ff_slice(tt, 0, 1, 4, 2);       /* rows 1 and 3: [2, 3], strides [2, 4], offset 1 */
    DLManagedTensor *m = ff_to_dlpack(sl);
    CHECK(m != NULL);
    ff_tensor_release(sl);
    ff_tensor_release(tt);
    ff_tensor_release(t); /* the export keeps the memory alive on its own */
    if (m) {
        DLTensor *d = &m->dl_tensor;
        CHECK(d->device.device_type == kDLCPU && d->device.device_id == 0);
        CHECK(d->dtype.code == kDLFloat && d->dtype.bits == 32 && d->dtype.lanes == 1);
        CHECK(d->ndim == 2 && d->shape[0] == 2 && d->shape[1] == 3);
        CHECK(d->strides[0] == 2 && d->strides[1] == 4);
        CHECK(d->byte_offset == 0);
        /* element (i, j) of the view is original (j, 1 + 2i) = 4j + 1 + 2i */
        const float *p = d->data;
        int ok = 1;
        for (int i = 0; i < 2; i++)
            for (int j = 0; j < 3; j++) ok &= p[i * d->strides[0] + j * d->strides[1]] == (float)(4 * j + 1 + 2 * i);
        CHECK(ok);
        CHECK(ff_debug_live_tensors() == base + 1); /* the export's own header */
        m->deleter(m);
    }
    CHECK(ff_debug_live_tensors() == base);
    /* bool has no DLPack 0.6 type */
    ff_tensor *b = ff_ones(1, s, FF_BOOL);
    CHECK_ERROR(ff_to_dlpack(b) == NULL, FF_ERR_UNSUPPORTED, "astype(u8)");
    ff_tensor_release(b);
    CHECK_ERROR(ff_to_dlpack(NULL) == NULL, FF_ERR_INVALID, "NULL");
}

/* A producer we control: counts deleter calls and frees its buffer. */
typedef struct producer {
    DLManagedTensor m;
    int64_t shape[2], strides[2];
    double *data;
    int *calls;
} producer;

static void producer_deleter(DLManagedTensor *m)
{
    producer *p = m->manager_ctx;
    (*p->calls)++;
    free(p->data);
    free(p);
}

static DLManagedTensor *make_producer(int *calls, bool with_strides)
{
    producer *p = calloc(1, sizeof *p);
    p->data = malloc(6 * sizeof(double));
    for (int i = 0; i < 6; i++) p->data[i] = 10 + i;
    p->calls = calls;
    p->shape[0] = 2;
    p->shape[1] = 3;
    p->strides[0] = 1; /* column-major [2, 3] */
    p->strides[1] = 2;
    p->m.dl_tensor = (DLTensor){.data = p->data, .device = {kDLCPU, 0}, .ndim = 2, .dtype = {kDLFloat, 64, 1},
                                .shape = p->shape, .strides = with_strides ? p->strides : NULL, .byte_offset = 0};
    p->m.manager_ctx = p;
    p->m.deleter = producer_deleter;
    return &p->m;
}

static void test_import(void)
{
    long base = ff_debug_live_tensors();
    int calls = 0;
    DLManagedTensor *m = make_producer(&calls, true);
    void *data = m->dl_tensor.data;
    ff_tensor *t = ff_from_dlpack(m);
    CHECK(t != NULL);
    int64_t s23[] = {2, 3};
    double want[] = {10, 12, 14, 11, 13, 15}; /* column-major storage read row-major */
    CHECK_TENSOR(t, 2, s23, want, 0);
    CHECK(ff_tensor_data_ptr(t) == data); /* no copy */
    ff_tensor *v = ff_transpose(t, 0, 1);
    ff_tensor *w = ff_add_scalar(v, 1); /* a computed tensor owns fresh memory */
    ff_tensor_release(t);
    CHECK(calls == 0); /* the view still uses the memory */
    /* writes through FusionFlow are visible to the producer's buffer */
    CHECK(ff_mul_scalar_(v, 2) == FF_OK);
    CHECK(((double *)data)[1] == 22);
    ff_tensor_release(v);
    CHECK(calls == 1);
    ff_tensor_release(w);
    CHECK(calls == 1);

    /* NULL strides = compact row-major */
    calls = 0;
    m = make_producer(&calls, false);
    t = ff_from_dlpack(m);
    double rm[] = {10, 11, 12, 13, 14, 15};
    CHECK_TENSOR(t, 2, s23, rm, 0);
    CHECK(t && ff_tensor_is_contiguous(t));
    ff_tensor_release(t);
    CHECK(calls == 1);
    CHECK(ff_debug_live_tensors() == base);
}

static void test_import_refused(void)
{
    long base = ff_debug_live_tensors();
    int calls = 0;
    DLManagedTensor *m = make_producer(&calls, true);
    DLTensor *d = &m->dl_tensor;
    d->device.device_type = kDLCUDA;
    CHECK_ERROR(ff_from_dlpack(m) == NULL, FF_ERR_UNSUPPORTED, "kDLCPU");
    CHECK(strstr(ff_last_error(), "type 2, id 0") != NULL); /* CUDA memory goes to the cuda backend only */
    d->device.device_type = kDLCPU;
    d->dtype.bits = 8;
    CHECK_ERROR(ff_from_dlpack(m) == NULL, FF_ERR_UNSUPPORTED, "8 bits");
    d->dtype.code = kDLBfloat;
    d->dtype.bits = 32;
    CHECK_ERROR(ff_from_dlpack(m) == NULL, FF_ERR_UNSUPPORTED, "32 bits");
    d->dtype.code = kDLFloat;
    d->dtype.bits = 64;
    d->dtype.lanes = 4;
    CHECK_ERROR(ff_from_dlpack(m) == NULL, FF_ERR_UNSUPPORTED, "lanes");
    d->dtype.lanes = 1;
    d->strides[1] = -2;
    CHECK_ERROR(ff_from_dlpack(m) == NULL, FF_ERR_UNSUPPORTED, "negative stride");
    d->strides[1] = 2;
    d->byte_offset = 4;
    CHECK_ERROR(ff_from_dlpack(m) == NULL, FF_ERR_UNSUPPORTED, "not aligned");
    d->byte_offset = 0;
    d->ndim = 9;
    CHECK_ERROR(ff_from_dlpack(m) == NULL, FF_ERR_INVALID, "ndim 9");
    d->ndim = 2;
    d->shape[0] = -1;
    CHECK_ERROR(ff_from_dlpack(m) == NULL, FF_ERR_INVALID, "negative size");
    d->shape[0] = 2;
    d->strides[0] = INT64_MAX / 2;
    CHECK_ERROR(ff_from_dlpack(m) == NULL, FF_ERR_OVERFLOW, "overflow");
    d->strides[0] = 1;
    CHECK(calls == 0); /* a refused import leaves ownership with the caller */
    ff_dlpack_free(m);
    CHECK(calls == 1);
    CHECK_ERROR(ff_from_dlpack(NULL) == NULL, FF_ERR_INVALID, "NULL");
    CHECK(ff_debug_live_tensors() == base);
}

static void test_round_trip(void)
{
    long base = ff_debug_live_tensors();
    for (int i = 0; i < 1000; i++) {
        int64_t s[] = {4, 5};
        static const ff_dtype dts[] = {FF_F32, FF_I64, FF_F16, FF_BF16};
        ff_tensor *t = ff_full(2, s, dts[i % 4], i % 256); /* exact in every dtype */
        ff_tensor *col = ff_select(t, 1, 2);
        DLManagedTensor *m = ff_to_dlpack(col);
        ff_tensor *back = ff_from_dlpack(m);
        CHECK(back && ff_tensor_data_ptr(back) == ff_tensor_data_ptr(col));
        CHECK(back && ff_tensor_strides(back)[0] == 5 && ff_tensor_dtype(back) == ff_tensor_dtype(t));
        double x;
        int64_t i1[] = {1};
        CHECK(ff_tensor_get(back, i1, &x) == FF_OK && x == i % 256);
        ff_tensor_release(t);
        ff_tensor_release(col);
        ff_tensor_release(back);
    }
    CHECK(ff_debug_live_tensors() == base);
}

/* The DLPack device of a backend's memory: kDLCPU for the host backends (device backends
 * answer through their dlpack_device entry; cuda: kDLCUDA, checked by scripts/gpu-check.sh). */
static void test_backend_dlpack_device(void)
{
    int32_t type = -1, id = -1;
    CHECK(ff_backend_dlpack_device(ff_backend_load("cpu"), &type, &id) == FF_OK);
    CHECK(type == kDLCPU && id == 0);
    CHECK_ERROR(ff_backend_dlpack_device(NULL, &type, &id) != FF_OK, FF_ERR_INVALID, "NULL");
}

FF_TEST_MAIN("io_dlpack", TEST(test_backend_dlpack_device), TEST(test_export_strided), TEST(test_import), TEST(test_import_refused),
             TEST(test_round_trip))
