/*
 * The opencl backend as a device: buffers that are not host memory must still work
 * through every path above the backend that reads or writes values (item, to_host,
 * ff_to both ways and its gradient, gather's index check, safetensors save and load),
 * and mixing backends in one op must be a clear error naming both. Built only when the
 * opencl plugin is (FF_BUILD_OPENCL); runs on whatever device FF_OPENCL_DEVICE picks,
 * PoCL on the CPU in CI.
 */
#define _POSIX_C_SOURCE 200809L /* getpid */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "ff/io.h"
#include "ff_test.h"

static ff_backend *ocl, *host;

static ff_tensor *on(ff_backend *be, int ndim, const int64_t *shape, const float *v)
{
    return ff_from_data_on(be, v, ndim, shape, FF_F32);
}

static void test_device_memory_is_not_host_memory(void)
{
    CHECK(ocl != NULL);
    if (!ocl) return;
    CHECK((ff_backend_flags(ocl) & FF_BACKEND_HOST_MEMORY) == 0);
    char info[512];
    CHECK(ff_backend_device_info(ocl, info, sizeof info) == FF_OK && strstr(info, "OpenCL: ") == info);
    CHECK(ff_backend_device_info(host, info, sizeof info) == FF_OK && !strcmp(info, "host memory"));
    float v[] = {1, 2, 3, 4};
    ff_tensor *t = on(ocl, 1, SHAPE(4), v);
    CHECK(t && ff_tensor_data_ptr(t) == NULL); /* nobody may dereference a cl_mem */
    double x = 0;
    ff_tensor *s = ff_sum(t, 0, NULL, false);
    CHECK(s && ff_tensor_item(s, &x) == FF_OK && x == 10.0);
    float back[4] = {0};
    CHECK(ff_tensor_to_host(t, back, sizeof back) == FF_OK && back[3] == 4.0f);
    RELEASE(t, s);
}

static void test_mixing_backends_is_an_error_naming_both(void)
{
    float v[] = {1, 2};
    ff_tensor *a = on(ocl, 1, SHAPE(2), v), *b = on(host, 1, SHAPE(2), v);
    ff_tensor *c = ff_add(a, b);
    CHECK_ERROR(c == NULL, FF_ERR_INVALID, "different backends");
    CHECK(strstr(ff_last_error(), "opencl") && strstr(ff_last_error(), ff_backend_name(host)));
    RELEASE(a, b, c);
}

/* y = sum((to(x, opencl) @ w)^2) with x on the host: the gradient comes back to the host. */
static void test_to_is_differentiable_both_ways(void)
{
    float xv[] = {1, -2, 3, 0.5f, 4, -1}, wv[] = {0.5f, -1, 2, 1, 0, 3};
    ff_tensor *x = on(host, 2, SHAPE(2, 3), xv), *w = on(ocl, 2, SHAPE(3, 2), wv);
    ff_set_requires_grad(x, true);
    ff_tensor *xd = ff_to(x, ocl), *m = ff_matmul(xd, w), *sq = ff_mul(m, m), *y = ff_sum(sq, 0, NULL, false);
    CHECK(y && ff_backward(y, NULL, NULL) == FF_OK);
    ff_tensor *g = ff_grad(x);
    CHECK(g && ff_tensor_backend(g) == host);
    /* dy/dx = 2 (x w) w^T, computed here by hand */
    double xw[2][2] = {{0}}, want[2][3] = {{0}};
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2; j++)
            for (int k = 0; k < 3; k++) xw[i][j] += xv[i * 3 + k] * wv[k * 2 + j];
    for (int i = 0; i < 2; i++)
        for (int k = 0; k < 3; k++)
            for (int j = 0; j < 2; j++) want[i][k] += 2 * xw[i][j] * wv[k * 2 + j];
    CHECK_TENSOR(g, 2, SHAPE(2, 3), ((double[]){want[0][0], want[0][1], want[0][2], want[1][0], want[1][1], want[1][2]}),
                 1e-4);
    ff_tensor *back = ff_to(m, host); /* and back to the host, values intact */
    CHECK_TENSOR(back, 2, SHAPE(2, 2), ((double[]){xw[0][0], xw[0][1], xw[1][0], xw[1][1]}), 1e-5);
    RELEASE(x, w, xd, m, sq, y, g, back);
}

static void test_bad_index_on_the_device_is_an_error(void)
{
    float v[] = {1, 2, 3};
    int64_t iv[] = {0, 7};
    ff_tensor *src = on(ocl, 1, SHAPE(3), v), *ix = ff_from_data_on(ocl, iv, 1, SHAPE(2), FF_I64);
    ff_tensor *g = ff_gather(src, 0, ix);
    CHECK_ERROR(g == NULL, FF_ERR_INDEX, "7");
    RELEASE(src, ix, g);
}

static void test_safetensors_round_trip_through_the_device(void)
{
    char path[256];
    snprintf(path, sizeof path, "/tmp/ff_test_opencl_%ld.safetensors", (long)getpid());
    float v[] = {1.5f, -2, 3, 4, 5, 6};
    ff_tensor *t = on(ocl, 2, SHAPE(2, 3), v), *tt = ff_transpose(t, 0, 1); /* a strided view */
    const char *names[] = {"w"};
    CHECK(tt && ff_safetensors_save(path, 1, names, &tt, NULL) == FF_OK);
    ff_tensor_dict *d = ff_safetensors_load_on(ocl, path, 0);
    ff_tensor *w = d ? ff_tensor_dict_get(d, "w") : NULL;
    CHECK(w && ff_tensor_backend(w) == ocl);
    CHECK_TENSOR(w, 2, SHAPE(3, 2), VALS(1.5, 4, -2, 5, 3, 6), 0);
    ff_tensor_dict_free(d);
    remove(path);
    RELEASE(t, tt, w);
}

/* DLPack: a device tensor refuses export (no host pointer to share); a host array
 * imported onto the device is copied, and the producer's deleter runs once (ASan
 * checks the once). */
static void test_dlpack_export_refused_import_copied(void)
{
    float v[] = {1, 2, 3, 4, 5, 6};
    ff_tensor *d = on(ocl, 2, SHAPE(2, 3), v), *h = on(host, 2, SHAPE(2, 3), v);
    struct DLManagedTensor *bad = ff_to_dlpack(d);
    CHECK_ERROR(bad == NULL, FF_ERR_UNSUPPORTED, "opencl");
    ff_tensor *ht = ff_transpose(h, 0, 1); /* strided: the copy follows the strides */
    struct DLManagedTensor *m = ht ? ff_to_dlpack(ht) : NULL;
    CHECK(m != NULL);
    ff_tensor *r = m ? ff_from_dlpack_on(ocl, m) : NULL;
    CHECK(r && ff_tensor_backend(r) == ocl);
    CHECK_TENSOR(r, 2, SHAPE(3, 2), VALS(1, 4, 2, 5, 3, 6), 0);
    if (m && !r) ff_dlpack_free(m);
    RELEASE(d, h, ht, r);
}

static void test_memory_comes_back(void)
{
    size_t before = 0, after = 0, cached = 0, peak = 0;
    CHECK(ff_backend_memory_stats(ocl, &before, NULL, NULL) == FF_OK);
    ff_tensor *t = ff_full_on(ocl, 1, SHAPE(1000), FF_F32, 0.0);
    CHECK(ff_backend_memory_stats(ocl, &after, &cached, &peak) == FF_OK && after == before + 4000 && peak >= after);
    ff_tensor_release(t);
    CHECK(ff_backend_memory_stats(ocl, &after, &cached, NULL) == FF_OK && after == before && cached >= 4000);
    CHECK(ff_backend_empty_cache(ocl) == FF_OK);
    CHECK(ff_backend_memory_stats(ocl, NULL, &cached, NULL) == FF_OK && cached == 0);
}

int main(void)
{
    ocl = ff_backend_load("opencl");
    host = ff_backend_load(FF_TEST_HAVE_CPU_BLAS ? "cpu_blas" : "cpu");
    if (!ocl) fprintf(stderr, "opencl: %s\n", ff_last_error());
    static const ff_test_case cases[] = {
        {"device_memory_is_not_host_memory", test_device_memory_is_not_host_memory},
        {"mixing_backends_is_an_error_naming_both", test_mixing_backends_is_an_error_naming_both},
        {"to_is_differentiable_both_ways", test_to_is_differentiable_both_ways},
        {"bad_index_on_the_device_is_an_error", test_bad_index_on_the_device_is_an_error},
        {"safetensors_round_trip_through_the_device", test_safetensors_round_trip_through_the_device},
        {"dlpack_export_refused_import_copied", test_dlpack_export_refused_import_copied},
        {"memory_comes_back", test_memory_comes_back},
    };
    if (!ocl || !host) return 1;
    return ff_test_run("opencl_device", cases, (int)(sizeof cases / sizeof cases[0]));
}
