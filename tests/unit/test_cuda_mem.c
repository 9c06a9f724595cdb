/* The cuda backend's caching allocator and transfers (backends/cuda/cuda_mem.c) on the
 * host, built only with FF_BUILD_CUDA, over the CUDA runtime of tests/cuda_emu (host
 * memory; a limit makes cudaMalloc fail like a full GPU), so the pool logic runs here
 * without a GPU: size
 * classes and reuse, splitting and merging of large blocks, memory_stats, empty_cache,
 * the empty-the-cache-and-retry-once path and its FF_ERR_OOM message, and chunked
 * transfers through the staging buffer, alloc/free from two threads. */
#define _POSIX_C_SOURCE 200809L /* rand_r */
#include <stdlib.h>

#include "cuda_impl.h"
#include "ff_test.h"

/* the CUDA runtime over malloc: tests/cuda_emu/cuda_emu_runtime.c */
extern size_t cuda_emu_used, cuda_emu_limit;
extern int cuda_emu_mallocs, cuda_emu_copies;

/* cuda_error and friends: tests/cuda_emu/cuda_emu_messages.c */
extern char cuda_emu_last_msg[];

/* ---- tests ---------------------------------------------------------------------------------- */

static cuda_ctx ctx;

static void setup(void)
{
    memset(&ctx, 0, sizeof ctx);
    pthread_mutex_init(&ctx.alloc_lock, NULL);
    pthread_mutex_init(&ctx.staging_lock, NULL);
    ctx.stream = (cudaStream_t)&ctx; /* any non-NULL handle */
    snprintf(ctx.name, sizeof ctx.name, "fake GPU");
}

static void stats(size_t *in_use, size_t *cached, size_t *peak) { cuda_memory_stats(&ctx, in_use, cached, peak); }

static void test_small_reuse(void)
{
    size_t in_use, cached, peak;
    void *a = cuda_alloc(&ctx, 100), *z = cuda_alloc(&ctx, 0);
    CHECK(a && z && a != z);
    stats(&in_use, &cached, &peak);
    CHECK(in_use == 100 && cached == 0);
    int mallocs = cuda_emu_mallocs;
    cuda_free(&ctx, a);
    stats(&in_use, &cached, &peak);
    CHECK(in_use == 0 && cached == 512 && peak == 100);
    void *b = cuda_alloc(&ctx, 300); /* the same 512-byte class: the cached block again */
    CHECK(b == a && cuda_emu_mallocs == mallocs);
    void *c = cuda_alloc(&ctx, 1000); /* another class: a new block */
    CHECK(c && c != a && cuda_emu_mallocs == mallocs + 1);
    cuda_free(&ctx, b);
    cuda_free(&ctx, c);
    cuda_free(&ctx, z);
    cuda_free(&ctx, NULL);
    CHECK(cuda_empty_cache(&ctx) == FF_OK);
    stats(&in_use, &cached, &peak);
    CHECK(in_use == 0 && cached == 0 && cuda_emu_used == 0);
}

static void test_large_split_and_merge(void)
{
    size_t in_use, cached;
    const size_t MB = (size_t)1 << 20;
    char *big = cuda_alloc(&ctx, 10 * MB);
    CHECK(big != NULL);
    cuda_free(&ctx, big);
    stats(&in_use, &cached, NULL);
    CHECK(in_use == 0 && cached == 10 * MB);
    int mallocs = cuda_emu_mallocs;
    /* 3 MB rounds to 4 MB: split from the cached 10 MB, the 6 MB rest stays cached */
    char *a = cuda_alloc(&ctx, 3 * MB), *b = cuda_alloc(&ctx, 5 * MB);
    CHECK(a == big && b == big + 4 * MB && cuda_emu_mallocs == mallocs);
    stats(&in_use, &cached, NULL);
    CHECK(in_use == 8 * MB && cached == 0); /* b took the 6 MB rest whole (a 0 MB rest is not split off) */
    char *c = cuda_alloc(&ctx, 4 * MB); /* nothing cached fits: a new segment */
    CHECK(c && cuda_emu_mallocs == mallocs + 1);
    /* a block of a partly used segment is not released by empty_cache */
    cuda_free(&ctx, a);
    CHECK(cuda_empty_cache(&ctx) == FF_OK);
    stats(&in_use, &cached, NULL);
    CHECK(cached == 4 * MB && cuda_emu_used == 14 * MB);
    /* freeing b merges a, b and the tail back into one 10 MB segment, released whole */
    cuda_free(&ctx, b);
    cuda_free(&ctx, c);
    stats(&in_use, &cached, NULL);
    CHECK(in_use == 0 && cached == 14 * MB);
    CHECK(cuda_empty_cache(&ctx) == FF_OK);
    stats(&in_use, &cached, NULL);
    CHECK(cached == 0 && cuda_emu_used == 0);
}

static void test_oom_retries_then_reports(void)
{
    const size_t MB = (size_t)1 << 20;
    cuda_emu_limit = 16 * MB;
    void *a = cuda_alloc(&ctx, 8 * MB);
    cuda_free(&ctx, a); /* 8 MB cached */
    void *b = cuda_alloc(&ctx, 12 * MB); /* fails, empties the cache, succeeds */
    CHECK(b != NULL && cuda_emu_used == 12 * MB);
    void *c = cuda_alloc(&ctx, 6 * MB); /* 12 + 6 > 16 even with an empty cache */
    CHECK(c == NULL);
    CHECK(strstr(cuda_emu_last_msg, "out of device memory allocating 6291456 bytes on fake GPU") != NULL);
    cuda_free(&ctx, b);
    cuda_empty_cache(&ctx);
    cuda_emu_limit = (size_t)1 << 40;
    CHECK(cuda_emu_used == 0);
}

static void test_transfers(void)
{
    /* 20 MB: three chunks through the 8 MB staging buffer, both ways, at an offset */
    size_t n = (size_t)20 << 20;
    unsigned char *host = malloc(n), *back = malloc(n);
    char *d = cuda_alloc(&ctx, n + 64);
    CHECK(host && back && d);
    if (host && back && d) {
        for (size_t i = 0; i < n; i++) host[i] = (unsigned char)(i * 7 + 3);
        cuda_emu_copies = 0;
        CHECK(cuda_upload(&ctx, d, 64, host, n) == FF_OK);
        CHECK(cuda_emu_copies == 3);
        memset(back, 0, n);
        CHECK(cuda_download(&ctx, d, 64, back, n) == FF_OK);
        CHECK(memcmp(host, back, n) == 0);
        CHECK(cuda_upload(&ctx, d, 65, host, n) == FF_ERR_INVALID); /* one byte past the end */
        CHECK(strstr(cuda_emu_last_msg, "outside the") != NULL);
        CHECK(cuda_download(&ctx, d, 0, back, 0) == FF_OK);
    }
    cuda_free(&ctx, d);
    free(host);
    free(back);
    cuda_alloc_destroy(&ctx);
    if (ctx.staging) cudaFreeHost(ctx.staging);
    ctx.staging = NULL;
    CHECK(cuda_emu_used == 0);
}

/* Two threads allocating and freeing large blocks split from one cached segment: the
 * block take_cached hands out must be marked in use under the lock, or a neighbour freed
 * before cuda_alloc relocks merges it and frees its struct (a use-after-free that ASan
 * reported here within 200000 steps). The pool must come out whole. */
static void *alloc_free_worker(void *arg)
{
    unsigned seed = (unsigned)(uintptr_t)arg;
    void *held[4] = {NULL, NULL, NULL, NULL};
    for (int it = 0; it < 200000; it++) {
        int k = rand_r(&seed) % 4;
        if (held[k]) {
            cuda_free(&ctx, held[k]);
            held[k] = NULL;
        } else {
            held[k] = cuda_alloc(&ctx, (size_t)(1 + rand_r(&seed) % 3) << 21);
        }
    }
    for (int k = 0; k < 4; k++) cuda_free(&ctx, held[k]);
    return NULL;
}

static void test_threads_alloc_free(void)
{
    void *seg = cuda_alloc(&ctx, (size_t)64 << 20); /* one 64 MiB segment, then cached */
    CHECK(seg != NULL);
    cuda_free(&ctx, seg);
    pthread_t t[2];
    for (int i = 0; i < 2; i++) CHECK(pthread_create(&t[i], NULL, alloc_free_worker, (void *)(uintptr_t)(i + 1)) == 0);
    for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
    size_t in_use, cached, peak;
    stats(&in_use, &cached, &peak);
    CHECK(in_use == 0 && cached >= ((size_t)64 << 20));
    CHECK(cuda_empty_cache(&ctx) == FF_OK); /* every segment merged whole again: all released */
    CHECK(cuda_emu_used == 0);
}

FF_TEST_MAIN("cuda_mem", TEST(setup), TEST(test_small_reuse), TEST(test_large_split_and_merge),
             TEST(test_oom_retries_then_reports), TEST(test_transfers), TEST(test_threads_alloc_free))
