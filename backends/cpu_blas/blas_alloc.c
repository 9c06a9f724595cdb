/*
 * The caching allocator.
 *
 * Why: a fresh 64 MB buffer costs ~16k page faults on first touch (PyTorch's allocating
 * 16M-float add is 6x slower than the same add into an existing buffer). Freed blocks
 * are kept in size-class free lists and handed out again, already faulted in.
 *
 * Size classes: 64-byte steps up to 256 bytes, then four classes per power of two
 * (2^k * {1.25, 1.5, 1.75, 2}), so a block wastes at most 25%. Every block starts with
 * a 64-byte header (its class and the requested size) and the pointer handed out is
 * 64-byte aligned after it. Blocks of 1 MiB and more are 2 MiB aligned, so that where
 * the system makes every mapping transparent huge pages (THP "always") they can be.
 *
 * They are not advised as huge pages (MADV_HUGEPAGE) ourselves: the cache already takes
 * the faults out of the steady state, and the first touch is where a huge page loses on
 * the virtual machines we run on. A fresh 2 MiB page comes from memory the hypervisor has
 * not yet backed: 600 MB of fresh 4 MB blocks took 0.47-0.67 GB/s to first touch as huge
 * pages against 2.4 GB/s as 4 KiB ones (a Zen 5 EPYC guest), and resnet18's first
 * training step (tests/programs imagenet, 280 MB of new blocks) 0.85 -> 0.37 s of CPU time,
 * the process's system time 1.5-1.8 -> 0.5-0.7 s. Only in memory the guest touched before
 * are huge pages faster (18 against 2.5 GB/s), and there the cache is faster still.
 *
 * The cache is bounded (FF_CACHE_MAX_MB, default min(4 GiB, RAM / 4)); blocks past
 * the bound go back to the system. empty_cache() returns everything cached. An
 * allocation that fails empties the cache and retries once before reporting OOM.
 *
 * memory_stats: in_use = requested bytes of live blocks (as the reference reports),
 * cached = bytes held in the free lists, peak = high-water mark of in_use.
 */
#define _POSIX_C_SOURCE 200112L /* posix_memalign under -std=c11 */
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include "blas_impl.h"

#define HDR 64u
#define NCLASS 160
#define BIG_BLOCK ((size_t)1 << 20)
#define HUGE_ALIGN ((size_t)2 << 20)
#define MAGIC 0xFFB1A5u

typedef struct block_hdr {
    uint32_t magic;
    uint32_t cls;        /* size class, or NCLASS for an uncached block */
    size_t nbytes;       /* requested */
    size_t cap;          /* usable bytes after the header */
    struct block_hdr *next;
} block_hdr;
_Static_assert(sizeof(block_hdr) <= HDR, "the header fits in its 64 bytes");

struct blas_alloc_state {
    pthread_mutex_t lock;
    block_hdr *free_list[NCLASS];
    size_t in_use, cached, peak, cache_max;
};

/* Class index and usable size for a request. */
static int size_class(size_t n, size_t *cap)
{
    if (n <= 256) {
        size_t r = n <= 64 ? 64 : (n + 63) / 64 * 64;
        *cap = r;
        return (int)(r / 64) - 1; /* 0..3 */
    }
    int k = 63 - __builtin_clzll((unsigned long long)(n - 1)); /* 2^k < n <= 2^(k+1) */
    size_t step = (size_t)1 << (k - 2);
    size_t r = (n + step - 1) / step * step; /* 5..8 steps */
    int cls = 4 + (k - 8) * 4 + (int)(r / step - 5);
    *cap = r;
    return cls < NCLASS ? cls : NCLASS;
}

blas_alloc_state *blas_alloc_create(void)
{
    blas_alloc_state *a = calloc(1, sizeof *a);
    if (!a) return NULL;
    pthread_mutex_init(&a->lock, NULL);
    const char *env = getenv("FF_CACHE_MAX_MB");
    if (env && *env) {
        a->cache_max = (size_t)strtoull(env, NULL, 10) << 20;
    } else {
        long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
        size_t ram = pages > 0 && psz > 0 ? (size_t)pages * (size_t)psz : ((size_t)4 << 30);
        a->cache_max = ram / 4 < ((size_t)4 << 30) ? ram / 4 : ((size_t)4 << 30);
    }
    return a;
}

static void release_block(block_hdr *h) { free(h); }

static void drain(blas_alloc_state *a)
{
    for (int i = 0; i < NCLASS; i++) {
        block_hdr *h = a->free_list[i];
        while (h) {
            block_hdr *next = h->next;
            release_block(h);
            h = next;
        }
        a->free_list[i] = NULL;
    }
    a->cached = 0;
}

void blas_alloc_destroy(blas_alloc_state *a)
{
    if (!a) return;
    drain(a);
    pthread_mutex_destroy(&a->lock);
    free(a);
}

static block_hdr *system_block(size_t cap)
{
    if (cap > SIZE_MAX - HDR - HUGE_ALIGN) return NULL;
    void *mem = NULL;
    size_t total = HDR + cap;
    if (cap >= BIG_BLOCK) {
        total = (total + HUGE_ALIGN - 1) / HUGE_ALIGN * HUGE_ALIGN;
        if (posix_memalign(&mem, HUGE_ALIGN, total) != 0) return NULL;
    } else if (posix_memalign(&mem, 64, total) != 0) {
        return NULL;
    }
    return mem;
}

void *blas_alloc(void *ctx, size_t nbytes)
{
    blas_ctx *c = ctx;
    blas_alloc_state *a = c->alloc;
    size_t cap;
    int cls = size_class(nbytes, &cap);
    block_hdr *h = NULL;

    pthread_mutex_lock(&a->lock);
    if (cls < NCLASS && a->free_list[cls]) { /* the fast path: one lock round trip */
        h = a->free_list[cls];
        a->free_list[cls] = h->next;
        a->cached -= h->cap;
        a->in_use += nbytes;
        if (a->in_use > a->peak) a->peak = a->in_use;
        pthread_mutex_unlock(&a->lock);
        h->nbytes = nbytes;
        return (char *)h + HDR;
    }
    pthread_mutex_unlock(&a->lock);

    h = system_block(cap);
    if (!h) { /* give the cache back and try once more */
        blas_empty_cache(ctx);
        h = system_block(cap);
    }
    if (!h) {
        blas_error(ctx, FF_ERR_OOM, "cpu_blas alloc: out of memory allocating %zu bytes", nbytes);
        return NULL;
    }
    h->magic = MAGIC;
    h->cls = (uint32_t)cls;
    h->cap = cap;
    h->nbytes = nbytes;
    h->next = NULL;
    pthread_mutex_lock(&a->lock);
    a->in_use += nbytes;
    if (a->in_use > a->peak) a->peak = a->in_use;
    pthread_mutex_unlock(&a->lock);
    return (char *)h + HDR;
}

void blas_free(void *ctx, void *buf)
{
    if (!buf) return;
    blas_ctx *c = ctx;
    blas_alloc_state *a = c->alloc;
    block_hdr *h = (block_hdr *)((char *)buf - HDR);
    if (h->magic != MAGIC) {
        blas_error(ctx, FF_ERR_INVALID, "cpu_blas free: %p was not allocated by this backend", buf);
        return;
    }
    int keep = 0;
    pthread_mutex_lock(&a->lock);
    a->in_use -= h->nbytes;
    if (h->cls < NCLASS && a->cached + h->cap <= a->cache_max) {
        h->next = a->free_list[h->cls];
        a->free_list[h->cls] = h;
        a->cached += h->cap;
        keep = 1;
    }
    pthread_mutex_unlock(&a->lock);
    if (!keep) release_block(h);
}

ff_status blas_memory_stats(void *ctx, size_t *in_use, size_t *cached, size_t *peak)
{
    blas_ctx *c = ctx;
    if (!c || !c->alloc) return FF_ERR_INVALID;
    pthread_mutex_lock(&c->alloc->lock);
    if (in_use) *in_use = c->alloc->in_use;
    if (cached) *cached = c->alloc->cached;
    if (peak) *peak = c->alloc->peak;
    pthread_mutex_unlock(&c->alloc->lock);
    return FF_OK;
}

ff_status blas_empty_cache(void *ctx)
{
    blas_ctx *c = ctx;
    if (!c || !c->alloc) return FF_ERR_INVALID;
    pthread_mutex_lock(&c->alloc->lock);
    drain(c->alloc);
    pthread_mutex_unlock(&c->alloc->lock);
    return FF_OK;
}

void *blas_scratch(blas_ctx *c, size_t nbytes) { return blas_alloc(c, nbytes); }
