/* The guarded test backend: the reference backend's kernels behind opaque handles whose
 * memory is PROT_NONE outside this backend's own entries. Every entry takes the lock,
 * opens the buffers its views name, runs the reference kernel on host addresses, and
 * closes them again; so anything else that touches device memory (the core, Python
 * through ctypes, NumPy or DLPack) faults instead of silently reading host memory.
 * This file: lifecycle, memory and the vtable; guarded_compute.c: the compute entries. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "guarded_impl.h"

/* ---- lifecycle ----------------------------------------------------------- */

static ff_status g_init(const ff_host_api *host, void **ctx)
{
    if (!host || !host->set_error || !ctx) return FF_ERR_INVALID;
    guarded_ctx *c = calloc(1, sizeof *c);
    if (!c) {
        host->set_error("guarded init: out of memory allocating the backend context");
        return FF_ERR_OOM;
    }
    c->host = host;
    c->base = ff_guarded_base_entry();
    const char *nq = getenv("FF_GUARDED_NO_QMATMUL_DYNAMIC");
    c->no_qdyn = nq && *nq && strcmp(nq, "0") != 0;
    ff_status st = c->base->init(host, &c->base_ctx);
    if (st != FF_OK) {
        free(c);
        return st;
    }
    pthread_mutex_init(&c->lock, NULL);
    atomic_init(&c->in_use, 0);
    atomic_init(&c->peak, 0);
    *ctx = c;
    return FF_OK;
}

static void g_shutdown(void *ctx)
{
    guarded_ctx *c = ctx;
    c->base->shutdown(c->base_ctx);
    pthread_mutex_destroy(&c->lock);
    free(c);
}

static int g_supports(void *ctx, ff_op_kind kind, int op, ff_dtype dtype)
{
    guarded_ctx *c = ctx;
    if (c->no_qdyn && kind == FF_KIND_QMATMUL && op == FF_QMATMUL_DYNAMIC) return 0;
    return c->base->supports(c->base_ctx, kind, op, dtype);
}

/* ---- memory -------------------------------------------------------------- */

static void *g_alloc(void *ctx, size_t nbytes)
{
    guarded_ctx *c = ctx;
    pthread_mutex_lock(&c->lock);
    void *h = ff_guarded_mem_alloc(c, nbytes);
    pthread_mutex_unlock(&c->lock);
    return h;
}

static void g_free(void *ctx, void *buf)
{
    guarded_ctx *c = ctx;
    pthread_mutex_lock(&c->lock);
    ff_guarded_mem_free(c, buf);
    pthread_mutex_unlock(&c->lock);
}

/* Opens buf and checks [off, off + n) lies inside it. */
static char *open_range(guarded_ctx *c, guarded_window *w, const void *buf, size_t off, size_t n, const char *fn)
{
    size_t nbytes;
    char *data = ff_guarded_mem_open(c, buf, &nbytes, fn);
    if (!data) return NULL;
    w->open[w->n++] = buf;
    if (off > nbytes || n > nbytes - off) {
        c->host->set_error("guarded %s: bytes [%zu, %zu) of a %zu-byte buffer", fn, off, off + n, nbytes);
        return NULL;
    }
    return data;
}

static ff_status g_upload(void *ctx, void *buf, size_t byte_offset, const void *host, size_t nbytes)
{
    GUARDED_ENTER("upload");
    char *data = open_range(c, &w, buf, byte_offset, nbytes, fname);
    if (!data) goto out;
    if (nbytes) memcpy(data + byte_offset, host, nbytes);
    st = FF_OK;
    GUARDED_LEAVE;
}

static ff_status g_download(void *ctx, const void *buf, size_t byte_offset, void *host, size_t nbytes)
{
    GUARDED_ENTER("download");
    char *data = open_range(c, &w, buf, byte_offset, nbytes, fname);
    if (!data) goto out;
    if (nbytes) memcpy(host, data + byte_offset, nbytes);
    st = FF_OK;
    GUARDED_LEAVE;
}

/* Nothing is ever queued: every entry has finished when it returns. */
static ff_status g_sync(void *ctx)
{
    guarded_ctx *c = ctx;
    pthread_mutex_lock(&c->lock);
    pthread_mutex_unlock(&c->lock);
    return FF_OK;
}

static ff_status g_memory_stats(void *ctx, size_t *in_use, size_t *cached, size_t *peak)
{
    guarded_ctx *c = ctx;
    if (in_use) *in_use = atomic_load(&c->in_use);
    if (cached) *cached = 0;
    if (peak) *peak = atomic_load(&c->peak);
    return FF_OK;
}

static ff_status g_empty_cache(void *ctx)
{
    (void)ctx;
    return FF_OK; /* no cache: free unmaps at once */
}

static ff_status g_device_info(void *ctx, char *buf, size_t cap)
{
    (void)ctx;
    snprintf(buf, cap, "guarded test memory: host mappings, PROT_NONE outside the backend's entries");
    return FF_OK;
}

/* ---- the vtable ------------------------------------------------------------- */

static ff_backend_vtable guarded_vtable;
static pthread_once_t guarded_once = PTHREAD_ONCE_INIT;

static void guarded_vtable_build(void)
{
    guarded_vtable = (ff_backend_vtable){
        .abi_version = FF_ABI_VERSION,
        .struct_size = (uint32_t)sizeof(ff_backend_vtable),
        .name = "guarded",
        .version = "0.1.0",
        .description = "test backend: opaque handles to memory mapped PROT_NONE outside its own entries",
        .flags = 0, /* not host memory; no dlpack_device either, so no zero-copy export */
        .init = g_init, .shutdown = g_shutdown, .supports = g_supports,
        .alloc = g_alloc, .free = g_free, .upload = g_upload, .download = g_download, .sync = g_sync,
        .memory_stats = g_memory_stats, .empty_cache = g_empty_cache, .device_info = g_device_info,
        .abi_step = FF_ABI_STEP, /* held to today's rules, as the reference it wraps */
    };
    ff_guarded_compute_entries(&guarded_vtable, ff_guarded_base_entry());
}

FF_PLUGIN_EXPORT const ff_backend_vtable *ff_backend_entry(void)
{
    pthread_once(&guarded_once, guarded_vtable_build);
    return &guarded_vtable;
}
