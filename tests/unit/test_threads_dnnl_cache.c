/* cpu_blas's cache of oneDNN matmul primitives (backends/cpu_blas/blas_dnnl_cache.c) from
 * several threads at once: bf16 matmuls and dynamic int8 Linears of shapes shared
 * between the threads (the same key in several threads' entries) and of shapes only one
 * thread uses, with each thread's list held to 3 primitives (FF_DNNL_CACHE_CAPACITY) so
 * that entries are evicted while others are in use, and the lists of threads that exit
 * (the test's own) are freed while the pool's stay. Every result must match the one computed
 * alone beforehand. Run under ThreadSanitizer by `make test` (label "threads") and under
 * ASan/LSan (the cache is freed at shutdown). On a CPU where oneDNN declines (no bf16
 * or VNNI hardware) the same calls take the other paths and must still agree.
 *
 * "Match" is to within 2^-7 of the largest value (one or two bf16 ulps there; bf16) and
 * 1e-5 of it (int8):
 * a product run on the calling thread while the pool is busy is split into different
 * row slices, which oneDNN may block differently. */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>

#include "ff/quant.h"
#include "ff_test.h"

#define NTHREADS 4
#define ROUNDS 3
#define NSHAPES 4

/* [M, K] x [K, N]; each thread adds its own M offset to the last one */
static const int64_t shapes[NSHAPES][3] = {{64, 96, 80}, {128, 64, 64}, {40, 256, 48}, {96, 128, 32}};

typedef struct want {
    ff_tensor *a, *b, *bf16, *x, *wq, *ws, *int8;
} want;

static want wants[NTHREADS][NSHAPES];

static int make(want *w, int64_t M, int64_t K, int64_t N, uint64_t seed)
{
    ff_tensor *a = ff_rand_uniform(2, SHAPE(M, K), FF_F32, -2, 2, seed), *b = ff_rand_uniform(2, SHAPE(K, N), FF_F32, -2, 2, seed + 1);
    ff_tensor *wt = ff_rand_uniform(2, SHAPE(N, K), FF_F32, -1, 1, seed + 2);
    w->a = a ? ff_astype(a, FF_BF16) : NULL, w->b = b ? ff_astype(b, FF_BF16) : NULL, w->x = a;
    int bad = !w->a || !w->b || !wt || ff_quantize_weight_s8(wt, &w->wq, &w->ws) != FF_OK;
    w->bf16 = bad ? NULL : ff_matmul(w->a, w->b);
    w->int8 = bad ? NULL : ff_linear_dynamic_int8(w->x, w->wq, w->ws, NULL, false);
    RELEASE(b, wt);
    return bad || !w->bf16 || !w->int8;
}

static double max_abs(const ff_tensor *t)
{
    ff_tensor *z = ff_zeros(ff_tensor_ndim(t), ff_tensor_shape(t), ff_tensor_dtype(t));
    double m = z ? ff_test_max_diff(t, z) : INFINITY;
    RELEASE(z);
    return m;
}

static void *worker(void *arg)
{
    want *w = arg;
    intptr_t bad = 0;
    for (int r = 0; r < ROUNDS; r++)
        for (int s = 0; s < NSHAPES; s++) {
            ff_tensor *y = ff_matmul(w[s].a, w[s].b);
            ff_tensor *q = ff_linear_dynamic_int8(w[s].x, w[s].wq, w[s].ws, NULL, false);
            bad += !y || ff_test_max_diff(y, w[s].bf16) > 0x1p-7 * max_abs(w[s].bf16);
            bad += !q || ff_test_max_diff(q, w[s].int8) > 1e-5 * max_abs(w[s].int8);
            RELEASE(y, q);
        }
    return (void *)bad;
}

static void test_concurrent(void)
{
    for (int t = 0; t < NTHREADS; t++)
        for (int s = 0; s < NSHAPES; s++) {
            /* the last shape differs per thread; the others are shared */
            int64_t M = shapes[s][0] + (s == NSHAPES - 1 ? 8 * t : 0);
            CHECK(make(&wants[t][s], M, shapes[s][1], shapes[s][2], 100u * (unsigned)t + 10u * (unsigned)s) == 0);
        }
    pthread_t tid[NTHREADS];
    for (int t = 0; t < NTHREADS; t++) CHECK(pthread_create(&tid[t], NULL, worker, wants[t]) == 0);
    for (int t = 0; t < NTHREADS; t++) {
        void *bad = NULL;
        pthread_join(tid[t], &bad);
        CHECK(bad == NULL);
    }
    for (int t = 0; t < NTHREADS; t++)
        for (int s = 0; s < NSHAPES; s++) {
            want *w = &wants[t][s];
            RELEASE(w->a, w->b, w->bf16, w->x, w->wq, w->ws, w->int8);
        }
}

int main(void)
{
    setenv("FF_DNNL_CACHE_CAPACITY", "3", 0); /* evictions while other entries are held */
    static const ff_test_case cases[] = {TEST(test_concurrent)};
    return ff_test_run("threads_dnnl_cache", cases, 1);
}
