/*
 * cl_mem caching allocator and host transfers.
 *
 * Why cache: clCreateBuffer + first use costs a driver round trip (and on a GPU a
 * device allocation) per tensor; a training step makes hundreds of temporaries of the
 * same few sizes. Freed buffers go to size-class free lists (four classes per power of
 * two, so a buffer wastes at most 25%) and are handed out again. Reuse is safe without
 * events: the queue is in order, so commands that still read a freed buffer run before
 * any command that writes it under its new owner.
 *
 * The cache is bounded (FF_CACHE_MAX_MB, default half the device's memory); a failed
 * allocation empties the cache and retries once. empty_cache() releases everything.
 * memory_stats: in_use = requested bytes of live buffers, cached, peak of in_use.
 *
 * upload/download block (the host memory may be reused as soon as they return);
 * download therefore also waits for the kernels that produce what it reads.
 *
 * Poison mode (FF_POISON_FREED=1; ff-conformance sets it): a freed buffer is
 * overwritten with 0xFF bytes (NaN in every float dtype, -1 in every integer one) by a
 * fill enqueued behind the commands already reading it, and kept in quarantine, out of
 * reuse, until the queue has drained (recycle_quarantine). An entry that frees its
 * scratch before the last command reading it is enqueued then reads the poison on every
 * run, where the plain cache gives wrong values only when another thread wins the race
 * for the block; and ocl_launch refuses a kernel argument that is a buffer in quarantine
 * (ocl_mem_freed), which catches a freed scratch that its kernel writes before it reads.
 * Correct code never sees the poison: the queue is in order, so the fill runs after
 * every command enqueued before the free.
 */
#include <stdbool.h>
#include <stdlib.h>

#include "ocl_impl.h"

/* Size class and capacity for a request: 256-byte steps up to 1 KiB, then 2^k *
 * {1.25, 1.5, 1.75, 2}. Classes past OCL_NCLASS are not cached. */
static int size_class(size_t n, size_t *cap)
{
    if (n <= 1024) {
        size_t r = n <= 256 ? 256 : (n + 255) / 256 * 256;
        *cap = r;
        return (int)(r / 256) - 1; /* 0..3 */
    }
    int k = 63 - __builtin_clzll((unsigned long long)(n - 1)); /* 2^k < n <= 2^(k+1), k >= 10 */
    size_t step = (size_t)1 << (k - 2);
    size_t r = (n + step - 1) / step * step;
    int cls = 4 + (k - 10) * 4 + (int)(r / step - 5);
    *cap = r;
    return cls < OCL_NCLASS ? cls : -1;
}

static void release(ocl_buf *b)
{
    clReleaseMemObject(b->mem);
    free(b);
}

static void release_list(ocl_buf *b)
{
    for (ocl_buf *next; b; b = next) {
        next = b->next;
        release(b);
    }
}

/* Releases the cache and the quarantine (the runtime keeps a cl_mem alive for the
 * commands still using it); under alloc_lock. */
static void drain(ocl_ctx *c)
{
    for (int i = 0; i < OCL_NCLASS; i++) {
        release_list(c->free_list[i]);
        c->free_list[i] = NULL;
    }
    release_list(c->quarantine);
    c->quarantine = NULL;
    c->cached = c->n_quarantined = c->quarantined = 0;
}

/* A free block into its size class's list, or released when the cache is full. */
static void cache_or_release(ocl_ctx *c, ocl_buf *b)
{
    pthread_mutex_lock(&c->alloc_lock);
    if (b->cls >= 0 && c->cached + b->cap <= c->cache_max) {
        b->next = c->free_list[b->cls];
        c->free_list[b->cls] = b;
        c->cached += b->cap;
        b = NULL;
    }
    pthread_mutex_unlock(&c->alloc_lock);
    if (b) release(b);
}

/* Poison mode: past these the next alloc drains the queue and recycles the quarantine
 * (a bound on the memory held, and on ocl_mem_freed's walk at every launch). */
#define OCL_QUARANTINE_MAX 256
#define OCL_QUARANTINE_BYTES ((size_t)64 << 20)

static void quarantine(ocl_ctx *c, ocl_buf *b)
{
    static const cl_uchar poison = 0xFF;
    /* enqueued before the block joins the list, so that recycle_quarantine's clFinish
     * covers it */
    clEnqueueFillBuffer(c->queue, b->mem, &poison, 1, 0, b->cap, 0, NULL, NULL);
    pthread_mutex_lock(&c->alloc_lock);
    b->next = c->quarantine;
    c->quarantine = b;
    c->n_quarantined++;
    c->quarantined += b->cap;
    pthread_mutex_unlock(&c->alloc_lock);
}

/* The quarantine into the cache once the queue has drained. Every block taken here was
 * freed before it was taken, so every command that legitimately reads it, and its
 * poison fill, was enqueued before the clFinish below. Called from alloc, never from
 * free: an entry that frees its scratch and then launches the kernel that reads it
 * allocates nothing in between, so the block is still in quarantine at that launch. */
static void recycle_quarantine(ocl_ctx *c)
{
    pthread_mutex_lock(&c->alloc_lock);
    bool full = c->n_quarantined >= OCL_QUARANTINE_MAX || c->quarantined > OCL_QUARANTINE_BYTES;
    ocl_buf *list = full ? c->quarantine : NULL;
    if (full) c->quarantine = NULL, c->n_quarantined = c->quarantined = 0;
    pthread_mutex_unlock(&c->alloc_lock);
    if (!list) return;
    clFinish(c->queue);
    for (ocl_buf *b = list, *next; b; b = next) {
        next = b->next;
        cache_or_release(c, b);
    }
}

int ocl_mem_freed(ocl_ctx *c, cl_mem m)
{
    if (!c->poison || !m) return 0;
    pthread_mutex_lock(&c->alloc_lock);
    const ocl_buf *b = c->quarantine;
    while (b && b->mem != m) b = b->next;
    pthread_mutex_unlock(&c->alloc_lock);
    return b != NULL;
}

void ocl_alloc_destroy(ocl_ctx *c) { drain(c); }

ff_status ocl_empty_cache(void *ctx)
{
    ocl_ctx *c = ctx;
    pthread_mutex_lock(&c->alloc_lock);
    drain(c);
    pthread_mutex_unlock(&c->alloc_lock);
    return FF_OK;
}

static cl_mem device_buffer(ocl_ctx *c, size_t cap, cl_int *err)
{
    cl_mem m = clCreateBuffer(c->context, CL_MEM_READ_WRITE, cap, NULL, err);
    return m;
}

void *ocl_alloc(void *ctx, size_t nbytes)
{
    ocl_ctx *c = ctx;
    if (c->max_alloc && nbytes > c->max_alloc) {
        ocl_error(c, FF_ERR_OOM, "opencl alloc: %zu bytes is more than the device's largest buffer (%llu bytes, "
                  "CL_DEVICE_MAX_MEM_ALLOC_SIZE of \"%s\")", nbytes, (unsigned long long)c->max_alloc, c->device_name);
        return NULL;
    }
    size_t cap;
    int cls = size_class(nbytes, &cap);
    if (c->poison) recycle_quarantine(c);
    pthread_mutex_lock(&c->alloc_lock);
    if (cls >= 0 && c->free_list[cls]) {
        ocl_buf *b = c->free_list[cls];
        c->free_list[cls] = b->next;
        c->cached -= b->cap;
        c->in_use += nbytes;
        if (c->in_use > c->peak) c->peak = c->in_use;
        pthread_mutex_unlock(&c->alloc_lock);
        b->nbytes = nbytes;
        b->next = NULL;
        return b;
    }
    pthread_mutex_unlock(&c->alloc_lock);

    ocl_buf *b = calloc(1, sizeof *b);
    if (!b) {
        ocl_error(c, FF_ERR_OOM, "opencl alloc: out of host memory");
        return NULL;
    }
    cl_int err = CL_SUCCESS;
    b->mem = device_buffer(c, cap, &err);
    if (!b->mem) { /* give the cache back and try once more */
        ocl_empty_cache(c);
        b->mem = device_buffer(c, cap, &err);
    }
    if (!b->mem) {
        free(b);
        ocl_error(c, FF_ERR_OOM, "opencl alloc: out of device memory allocating %zu bytes on \"%s\" (%s)", nbytes,
                  c->device_name, ocl_cl_error_name(err));
        return NULL;
    }
    b->nbytes = nbytes;
    b->cap = cap;
    b->cls = cls;
    pthread_mutex_lock(&c->alloc_lock);
    c->in_use += nbytes;
    if (c->in_use > c->peak) c->peak = c->in_use;
    pthread_mutex_unlock(&c->alloc_lock);
    return b;
}

void ocl_free(void *ctx, void *buf)
{
    ocl_ctx *c = ctx;
    ocl_buf *b = buf;
    if (!b) return;
    pthread_mutex_lock(&c->alloc_lock);
    c->in_use -= b->nbytes;
    pthread_mutex_unlock(&c->alloc_lock);
    if (c->poison) quarantine(c, b);
    else cache_or_release(c, b);
}

ff_status ocl_memory_stats(void *ctx, size_t *in_use, size_t *cached, size_t *peak)
{
    ocl_ctx *c = ctx;
    pthread_mutex_lock(&c->alloc_lock);
    if (in_use) *in_use = c->in_use;
    if (cached) *cached = c->cached + c->quarantined; /* held for reuse, poisoned or not */
    if (peak) *peak = c->peak;
    pthread_mutex_unlock(&c->alloc_lock);
    return FF_OK;
}

static ff_status check_range(ocl_ctx *c, const char *entry, const ocl_buf *b, size_t off, size_t n)
{
    if (!b) return ocl_error(c, FF_ERR_INVALID, "opencl %s: buffer is NULL", entry);
    if (off > b->nbytes || n > b->nbytes - off)
        return ocl_error(c, FF_ERR_INVALID, "opencl %s: bytes [%zu, %zu) are outside the %zu-byte buffer", entry, off,
                         off + n, b->nbytes);
    return FF_OK;
}

ff_status ocl_upload(void *ctx, void *buf, size_t byte_offset, const void *host, size_t nbytes)
{
    ocl_ctx *c = ctx;
    ff_status st = check_range(c, "upload", buf, byte_offset, nbytes);
    if (st || nbytes == 0) return st;
    cl_int err = clEnqueueWriteBuffer(c->queue, ocl_mem_of(buf), CL_TRUE, byte_offset, nbytes, host, 0, NULL, NULL);
    return err == CL_SUCCESS ? FF_OK : ocl_cl_fail(c, "upload", "clEnqueueWriteBuffer", err);
}

ff_status ocl_download(void *ctx, const void *buf, size_t byte_offset, void *host, size_t nbytes)
{
    ocl_ctx *c = ctx;
    ff_status st = check_range(c, "download", buf, byte_offset, nbytes);
    if (st || nbytes == 0) return st;
    cl_int err = clEnqueueReadBuffer(c->queue, ocl_mem_of(buf), CL_TRUE, byte_offset, nbytes, host, 0, NULL, NULL);
    return err == CL_SUCCESS ? FF_OK : ocl_cl_fail(c, "download", "clEnqueueReadBuffer", err);
}

ff_status ocl_sync(void *ctx)
{
    ocl_ctx *c = ctx;
    cl_int err = clFinish(c->queue);
    return err == CL_SUCCESS ? FF_OK : ocl_cl_fail(c, "sync", "clFinish", err);
}
