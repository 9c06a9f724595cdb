/*
 * Caching allocator over cudaMalloc, and host transfers through a pinned staging buffer.
 *
 * Why cache: cudaMalloc and cudaFree are slow and synchronise the device; a training
 * step makes hundreds of temporaries of the same few sizes. Two pools, as PyTorch's:
 *   small (<= 1 MiB): four size classes per power of two from 512 bytes (a block wastes
 *     at most 25%), one cudaMalloc per block, reused whole;
 *   large (> 1 MiB): requests rounded up to 2 MiB; a free block at least that large is
 *     split (best fit), the rest stays cached; a freed block merges with free
 *     neighbours of its segment (the cudaMalloc it came from).
 * Reuse needs no events: all work of a context runs in its one stream, so kernels that
 * still read a freed block run before any kernel of its next owner.
 * A failed cudaMalloc empties the cache and retries once, then reports FF_ERR_OOM with
 * the size. FF_CACHE_MAX_MB bounds the cache (default: no bound). memory_stats: in_use =
 * requested bytes of live buffers, cached = bytes in free blocks, peak of in_use.
 *
 * alloc returns the device pointer itself (the view's buf); a hash map from pointer to
 * block gives free() and the transfers' range checks their block (a pointer it does not
 * know is device memory imported through DLPack: transferred unchecked, never freed here).
 *
 * upload/download go through one pinned buffer (cudaMallocHost, 8 MiB, made on first
 * use, chunked beyond that) on the context's stream and return when the copy is done.
 */
#include <stdlib.h>
#include <string.h>

#include "cuda_impl.h"

#define SMALL_MAX ((size_t)1 << 20)
#define LARGE_ROUND ((size_t)2 << 20)
#define STAGING_SIZE ((size_t)8 << 20)

static size_t cache_max(void)
{
    const char *env = getenv("FF_CACHE_MAX_MB");
    return env && *env ? (size_t)strtoull(env, NULL, 10) << 20 : (size_t)-1;
}

/* Size class and capacity of a small request. */
static int size_class(size_t n, size_t *cap)
{
    if (n <= 512) {
        *cap = 512;
        return 0;
    }
    int k = 63 - __builtin_clzll((unsigned long long)(n - 1)); /* 2^k < n <= 2^(k+1), k >= 9 */
    size_t step = (size_t)1 << (k - 2);
    size_t r = (n + step - 1) / step * step;
    *cap = r;
    return 1 + (k - 9) * 4 + (int)(r / step - 5);
}

static unsigned hash_of(const void *p) { return (unsigned)(((uintptr_t)p >> 9) % CUDA_HASH); }

static void live_put(cuda_ctx *c, cuda_block *b)
{
    unsigned h = hash_of(b->ptr);
    b->next = c->live[h];
    c->live[h] = b;
}

static cuda_block *live_find(cuda_ctx *c, const void *p, int remove)
{
    for (cuda_block **pp = &c->live[hash_of(p)]; *pp; pp = &(*pp)->next)
        if ((*pp)->ptr == (const char *)p) {
            cuda_block *b = *pp;
            if (remove) *pp = b->next, b->next = NULL;
            return b;
        }
    return NULL;
}

static void large_unlink(cuda_ctx *c, cuda_block *b)
{
    for (cuda_block **pp = &c->large_free; *pp; pp = &(*pp)->next)
        if (*pp == b) {
            *pp = b->next;
            b->next = NULL;
            return;
        }
}

/* Releases every cached block that is a whole segment; called with alloc_lock held.
 * Blocks of a partly used segment stay (cudaFree takes whole segments only). */
static void drain(cuda_ctx *c)
{
    if (c->stream) cudaStreamSynchronize(c->stream); /* nothing queued may still use them */
    for (int i = 0; i < CUDA_NCLASS; i++) {
        for (cuda_block *b = c->small_free[i], *next; b; b = next) {
            next = b->next;
            c->cached -= b->size;
            cudaFree(b->ptr);
            free(b);
        }
        c->small_free[i] = NULL;
    }
    for (cuda_block **pp = &c->large_free; *pp;) {
        cuda_block *b = *pp;
        if (b->seg_prev || b->seg_next) {
            pp = &b->next;
            continue;
        }
        *pp = b->next;
        c->cached -= b->size;
        cudaFree(b->ptr);
        free(b);
    }
}

void cuda_alloc_destroy(cuda_ctx *c)
{
    pthread_mutex_lock(&c->alloc_lock);
    drain(c);
    pthread_mutex_unlock(&c->alloc_lock);
}

ff_status cuda_empty_cache(void *ctx)
{
    cuda_ctx *c = ctx;
    ff_status st = cuda_use_device(c, "empty_cache");
    if (st) return st;
    cuda_alloc_destroy(c);
    return FF_OK;
}

/* A cached block for the request, split when large; alloc_lock held. The block is marked
 * in use here, under the lock: cuda_alloc relocks only later, and a neighbour freed in
 * between would otherwise see free == 1, merge the block and free its struct while it is
 * being handed out. */
static cuda_block *take_cached(cuda_ctx *c, int cls, size_t cap)
{
    if (cls >= 0) {
        cuda_block *b = c->small_free[cls];
        if (b) c->small_free[cls] = b->next, c->cached -= b->size, b->free = 0;
        return b;
    }
    cuda_block *best = NULL;
    for (cuda_block *b = c->large_free; b; b = b->next)
        if (b->size >= cap && (!best || b->size < best->size)) best = b;
    if (!best) return NULL;
    large_unlink(c, best);
    best->free = 0;
    c->cached -= best->size;
    if (best->size - cap >= LARGE_ROUND) { /* split: the tail stays cached */
        cuda_block *rest = calloc(1, sizeof *rest);
        if (rest) {
            rest->ptr = best->ptr + cap;
            rest->size = best->size - cap;
            rest->free = 1;
            rest->large = 1;
            rest->seg_prev = best;
            rest->seg_next = best->seg_next;
            if (best->seg_next) best->seg_next->seg_prev = rest;
            best->seg_next = rest;
            best->size = cap;
            rest->next = c->large_free;
            c->large_free = rest;
            c->cached += rest->size;
        }
    }
    return best;
}

static cudaError_t device_malloc(cuda_ctx *c, cuda_block **out, size_t cap, int large)
{
    void *p = NULL;
    cudaError_t err = cudaMalloc(&p, cap);
    if (err == cudaErrorMemoryAllocation) { /* give the cache back and try once more */
        cudaGetLastError();
        pthread_mutex_lock(&c->alloc_lock);
        drain(c);
        pthread_mutex_unlock(&c->alloc_lock);
        err = cudaMalloc(&p, cap);
    }
    if (err != cudaSuccess) {
        cudaGetLastError();
        return err;
    }
    cuda_block *b = calloc(1, sizeof *b);
    if (!b) {
        cudaFree(p);
        return cudaErrorMemoryAllocation;
    }
    b->ptr = p;
    b->size = cap;
    b->large = large;
    *out = b;
    return cudaSuccess;
}

void *cuda_alloc(void *ctx, size_t nbytes)
{
    cuda_ctx *c = ctx;
    if (cuda_use_device(c, "alloc")) return NULL;
    if (nbytes > ((size_t)1 << 62)) {
        cuda_error(c, FF_ERR_OOM, "cuda alloc: %zu bytes is more than any device holds", nbytes);
        return NULL;
    }
    size_t cap;
    int cls = -1;
    if (nbytes <= SMALL_MAX) cls = size_class(nbytes, &cap);
    else cap = (nbytes + LARGE_ROUND - 1) / LARGE_ROUND * LARGE_ROUND;
    pthread_mutex_lock(&c->alloc_lock);
    /* while a graph records: a temporary an earlier call of the recording freed, if one fits */
    void *kept = c->recording ? cuda_record_reuse_locked(c, nbytes) : NULL;
    if (kept) {
        cuda_block *k = live_find(c, kept, 0);
        c->in_use += nbytes - k->requested;
        k->requested = nbytes;
        if (c->in_use > c->peak) c->peak = c->in_use;
        pthread_mutex_unlock(&c->alloc_lock);
        return kept;
    }
    cuda_block *b = take_cached(c, cls, cap);
    pthread_mutex_unlock(&c->alloc_lock);
    if (!b) {
        cudaError_t err = device_malloc(c, &b, cap, cls < 0);
        if (err != cudaSuccess && err != cudaErrorMemoryAllocation) {
            /* not a full device: e.g. the sticky error of a kernel that faulted earlier */
            cuda_fail(c, "alloc", "cudaMalloc", err);
            return NULL;
        }
        if (err != cudaSuccess) {
            size_t free_b = 0, total_b = 0;
            cudaMemGetInfo(&free_b, &total_b);
            cudaGetLastError();
            cuda_error(c, FF_ERR_OOM, "cuda alloc: out of device memory allocating %zu bytes on %s (cudaMalloc: %s; "
                       "%zu MiB free of %zu MiB)", nbytes, c->name, cudaGetErrorString(err), free_b >> 20, total_b >> 20);
            return NULL;
        }
    }
    pthread_mutex_lock(&c->alloc_lock);
    b->free = 0;
    b->requested = nbytes;
    live_put(c, b);
    c->in_use += nbytes;
    if (c->in_use > c->peak) c->peak = c->in_use;
    pthread_mutex_unlock(&c->alloc_lock);
    return b->ptr;
}

void cuda_free(void *ctx, void *buf)
{
    cuda_ctx *c = ctx;
    if (!buf) return;
    cuda_use_device(c, "free"); /* a drain below calls cudaFree */
    pthread_mutex_lock(&c->alloc_lock);
    /* while a graph records, its temporaries stay with the record (cuda_graph.c): each launch
     * writes them again */
    cuda_block *k = c->recording ? live_find(c, buf, 0) : NULL;
    if (k && cuda_record_keep_locked(c, buf, k->size)) {
        pthread_mutex_unlock(&c->alloc_lock);
        return;
    }
    cuda_block *b = live_find(c, buf, 1);
    if (!b) { /* not ours: nothing to do (the core never does this) */
        pthread_mutex_unlock(&c->alloc_lock);
        return;
    }
    c->in_use -= b->requested;
    b->free = 1;
    if (!b->large) {
        int cls = size_class(b->size, &(size_t){0});
        b->next = c->small_free[cls];
        c->small_free[cls] = b;
    } else {
        /* merge with free neighbours of the same segment */
        cuda_block *n = b->seg_next, *p = b->seg_prev;
        if (n && n->free) {
            large_unlink(c, n);
            c->cached -= n->size;
            b->size += n->size;
            b->seg_next = n->seg_next;
            if (n->seg_next) n->seg_next->seg_prev = b;
            free(n);
        }
        if (p && p->free) {
            large_unlink(c, p);
            c->cached -= p->size;
            p->size += b->size;
            p->seg_next = b->seg_next;
            if (b->seg_next) b->seg_next->seg_prev = p;
            free(b);
            b = p;
        }
        b->next = c->large_free;
        c->large_free = b;
    }
    c->cached += b->size;
    if (c->cached > cache_max()) drain(c);
    pthread_mutex_unlock(&c->alloc_lock);
}

void *cuda_temp(cuda_ctx *c, const char *entry, size_t nbytes)
{
    void *p = cuda_alloc(c, nbytes);
    if (!p) cuda_error(c, FF_ERR_OOM, "cuda %s: out of device memory for a %zu-byte temporary", entry, nbytes);
    return p;
}

ff_status cuda_memory_stats(void *ctx, size_t *in_use, size_t *cached, size_t *peak)
{
    cuda_ctx *c = ctx;
    pthread_mutex_lock(&c->alloc_lock);
    if (in_use) *in_use = c->in_use;
    if (cached) *cached = c->cached;
    if (peak) *peak = c->peak;
    pthread_mutex_unlock(&c->alloc_lock);
    return FF_OK;
}

/* ---- transfers ---------------------------------------------------------------------- */

static ff_status check_range(cuda_ctx *c, const char *entry, const void *buf, size_t off, size_t n)
{
    if (!buf) return cuda_error(c, FF_ERR_INVALID, "cuda %s: buffer is NULL", entry);
    pthread_mutex_lock(&c->alloc_lock);
    cuda_block *b = live_find(c, buf, 0);
    size_t size = b ? b->requested : 0;
    pthread_mutex_unlock(&c->alloc_lock);
    if (!b) return FF_OK; /* memory imported through DLPack: its producer knows its size, the core checked it */
    if (off > size || n > size - off)
        return cuda_error(c, FF_ERR_INVALID, "cuda %s: bytes [%zu, %zu) are outside the %zu-byte buffer", entry, off,
                          off + n, size);
    return FF_OK;
}

/* The pinned buffer, made on first use; staging_lock held. NULL when pinned memory is
 * not available: the transfer then goes from pageable memory directly. */
static void *staging(cuda_ctx *c)
{
    if (!c->staging && cudaMallocHost(&c->staging, STAGING_SIZE) == cudaSuccess) c->staging_size = STAGING_SIZE;
    if (!c->staging) cudaGetLastError();
    return c->staging;
}

/* One transfer in chunks of the staging buffer; to_device selects the direction. */
static ff_status transfer(cuda_ctx *c, const char *entry, char *dev, char *host, size_t nbytes, int to_device)
{
    ff_status st = cuda_use_device(c, entry);
    if (st || nbytes == 0) return st;
    cudaError_t err = cudaSuccess;
    const char *call = "cudaMemcpyAsync";
    pthread_mutex_lock(&c->staging_lock);
    char *pin = staging(c);
    if (!pin) {
        err = cudaMemcpyAsync(to_device ? (void *)dev : (void *)host, to_device ? (void *)host : (void *)dev, nbytes,
                              to_device ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost, c->stream);
        if (err == cudaSuccess) call = "cudaStreamSynchronize", err = cudaStreamSynchronize(c->stream);
    }
    for (size_t done = 0; pin && done < nbytes && err == cudaSuccess;) {
        size_t n = nbytes - done < c->staging_size ? nbytes - done : c->staging_size;
        if (to_device) memcpy(pin, host + done, n);
        err = cudaMemcpyAsync(to_device ? (void *)(dev + done) : (void *)pin, to_device ? (void *)pin : (void *)(dev + done),
                              n, to_device ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost, c->stream);
        /* the staging buffer is reused by the next chunk: wait for this one */
        if (err == cudaSuccess) call = "cudaStreamSynchronize", err = cudaStreamSynchronize(c->stream);
        if (err == cudaSuccess && !to_device) memcpy(host + done, pin, n);
        done += n;
    }
    pthread_mutex_unlock(&c->staging_lock);
    return err == cudaSuccess ? FF_OK : cuda_fail(c, entry, call, err);
}

ff_status cuda_upload(void *ctx, void *buf, size_t byte_offset, const void *host, size_t nbytes)
{
    cuda_ctx *c = ctx;
    ff_status st = check_range(c, "upload", buf, byte_offset, nbytes);
    if (st) return st;
    return transfer(c, "upload", (char *)buf + byte_offset, (char *)(uintptr_t)host, nbytes, 1);
}

ff_status cuda_download(void *ctx, const void *buf, size_t byte_offset, void *host, size_t nbytes)
{
    cuda_ctx *c = ctx;
    ff_status st = check_range(c, "download", buf, byte_offset, nbytes);
    if (st) return st;
    return transfer(c, "download", (char *)(uintptr_t)buf + byte_offset, host, nbytes, 0);
}

ff_status cuda_sync(void *ctx)
{
    cuda_ctx *c = ctx;
    ff_status st = cuda_use_device(c, "sync");
    if (st) return st;
    cudaError_t err = cudaStreamSynchronize(c->stream);
    return err == cudaSuccess ? FF_OK : cuda_fail(c, "sync", "cudaStreamSynchronize", err);
}
