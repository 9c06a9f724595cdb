#define _POSIX_C_SOURCE 200809L /* setenv */
/* The cuda backend without a usable device (built only with FF_BUILD_CUDA): the loader
 * reports init's message as FF_ERR_BACKEND, registers nothing, and the library stays
 * usable on the cpu backend afterwards. CUDA_VISIBLE_DEVICES=-1 hides every GPU, so this
 * holds on a machine with one too (and on this one, which has no driver at all). */
#include <stdlib.h>

#include "ff_test.h"

static void hide_devices(void)
{
    /* before the first CUDA call in the process: the runtime reads it once */
    CHECK(setenv("CUDA_VISIBLE_DEVICES", "-1", 1) == 0);
}

static void test_load_fails_with_message(void)
{
    CHECK_ERROR(ff_backend_load("cuda") == NULL, FF_ERR_BACKEND, "cuda: no CUDA device found (cudaGetDeviceCount: ");
    CHECK(strstr(ff_last_error(), "the cuda backend needs an NVIDIA GPU and driver") != NULL);
    CHECK(strstr(ff_last_error(), "libff_backend_cuda.so") != NULL);
    CHECK(ff_backend_count() == 0);
    /* a second attempt fails the same way (init ran its cleanup the first time) */
    CHECK_ERROR(ff_backend_load("cuda") == NULL, FF_ERR_BACKEND, "no CUDA device found");
    CHECK(ff_backend_count() == 0);
}

static void test_default_cuda_fails_loudly(void)
{
    setenv("FF_BACKEND", "cuda", 1);
    CHECK_ERROR(ff_backend_default() == NULL, FF_ERR_BACKEND, "no CUDA device found");
    CHECK_ERROR(ff_zeros(1, SHAPE(2), FF_F32) == NULL, FF_ERR_BACKEND, "no CUDA device found");
    unsetenv("FF_BACKEND");
}

static void test_cpu_still_works(void)
{
    ff_backend *cpu = ff_backend_load("cpu");
    CHECK(cpu != NULL);
    CHECK(cpu && ff_backend_set_default(cpu) == FF_OK);
    ff_tensor *a = ff_test_tensor(FF_F32, 2, SHAPE(2, 2), VALS(1, 2, 3, 4));
    ff_tensor *b = ff_test_tensor(FF_F32, 2, SHAPE(2, 2), VALS(10, 20, 30, 40));
    ff_tensor *s = a && b ? ff_add(a, b) : NULL, *m = a && b ? ff_matmul(a, b) : NULL;
    CHECK(s && ff_tensor_backend(s) == cpu);
    CHECK_TENSOR(s, 2, SHAPE(2, 2), VALS(11, 22, 33, 44), 0);
    CHECK_TENSOR(m, 2, SHAPE(2, 2), VALS(70, 100, 150, 220), 0);
    RELEASE(a, b, s, m);
}

FF_TEST_MAIN("cuda_init", TEST(hide_devices), TEST(test_load_fails_with_message), TEST(test_default_cuda_fails_loudly),
             TEST(test_cpu_still_works))
