/* The guarded test backend: the reference backend's kernels behind opaque handles whose
 * memory is PROT_NONE outside this backend's own entries. Every entry takes the lock,
 * opens the buffers its views name, runs the reference kernel on host addresses, and
 * closes them again; so anything else that touches device memory (the core, Python
 * through ctypes, NumPy or DLPack) faults instead of silently reading host memory. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "guarded_impl.h"

/* The buffers one entry has opened; the most views an entry takes is a fused program's. */
typedef struct guarded_window {
    const void *open[FF_FUSED_MAX_VIEWS + 8];
    int n;
} guarded_window;

static void window_close(guarded_window *w)
{
    for (int i = 0; i < w->n; i++) ff_guarded_mem_close(w->open[i]);
    w->n = 0;
}

/* Translates one view to host addresses, opening its buffer; refuses a view that
 * reaches past its buffer, which a host backend would read silently. */
static int window_view(guarded_ctx *c, guarded_window *w, const ff_view *in, ff_view *out, const char *fn)
{
    *out = *in;
    if (!in->buf) return 0;
    size_t nbytes;
    char *data = ff_guarded_mem_open(c, in->buf, &nbytes, fn);
    if (!data) return -1;
    w->open[w->n++] = in->buf;
    out->buf = data;
    if (ff_view_numel(in) > 0) {
        int64_t last = in->offset;
        for (int d = 0; d < in->ndim; d++) last += (in->shape[d] - 1) * in->strides[d];
        size_t end = (size_t)(last + 1) * ff_dtype_size(in->dtype);
        if (in->offset < 0 || end > nbytes) {
            c->host->set_error("guarded %s: a view reaches byte %zu of a %zu-byte buffer", fn, end, nbytes);
            return -1;
        }
    }
    return 0;
}

/* Opens n views into out[]; on failure closes what it opened. */
static int window_views(guarded_ctx *c, guarded_window *w, const ff_view *in, ff_view *out, int n, const char *fn)
{
    for (int i = 0; i < n; i++)
        if (window_view(c, w, &in[i], &out[i], fn)) return -1;
    return 0;
}

#define ENTER(fn)                                                                                                  \
    guarded_ctx *c = ctx;                                                                                          \
    guarded_window w = {.n = 0};                                                                                   \
    ff_status st = FF_ERR_INVALID;                                                                                 \
    const char *fname = fn;                                                                                        \
    pthread_mutex_lock(&c->lock)
#define VIEW(v, src)                                                                                               \
    ff_view v;                                                                                                     \
    if (window_view(c, &w, src, &v, fname)) goto out
#define LEAVE                                                                                                      \
    out:                                                                                                           \
    window_close(&w);                                                                                              \
    pthread_mutex_unlock(&c->lock);                                                                                \
    return st

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
    ENTER("upload");
    char *data = open_range(c, &w, buf, byte_offset, nbytes, fname);
    if (!data) goto out;
    if (nbytes) memcpy(data + byte_offset, host, nbytes);
    st = FF_OK;
    LEAVE;
}

static ff_status g_download(void *ctx, const void *buf, size_t byte_offset, void *host, size_t nbytes)
{
    ENTER("download");
    char *data = open_range(c, &w, buf, byte_offset, nbytes, fname);
    if (!data) goto out;
    if (nbytes) memcpy(host, data + byte_offset, nbytes);
    st = FF_OK;
    LEAVE;
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

/* ---- compute: the reference kernels on opened views ---------------------- */

static ff_status g_fill(void *ctx, const ff_view *dst, ff_scalar value)
{
    ENTER("fill");
    VIEW(d, dst);
    st = c->base->fill(c->base_ctx, &d, value);
    LEAVE;
}

static ff_status g_copy(void *ctx, const ff_view *dst, const ff_view *src)
{
    ENTER("copy");
    VIEW(d, dst);
    VIEW(s, src);
    st = c->base->copy(c->base_ctx, &d, &s);
    LEAVE;
}

static ff_status g_unary(void *ctx, ff_unary_op op, const ff_view *dst, const ff_view *src)
{
    ENTER("unary");
    VIEW(d, dst);
    VIEW(s, src);
    st = c->base->unary(c->base_ctx, op, &d, &s);
    LEAVE;
}

static ff_status g_binary(void *ctx, ff_binary_op op, const ff_view *dst, const ff_view *a, const ff_view *b)
{
    ENTER("binary");
    VIEW(d, dst);
    VIEW(x, a);
    VIEW(y, b);
    st = c->base->binary(c->base_ctx, op, &d, &x, &y);
    LEAVE;
}

static ff_status g_reduce(void *ctx, ff_reduce_op op, const ff_view *dst, const ff_view *src, uint32_t axes_mask)
{
    ENTER("reduce");
    VIEW(d, dst);
    VIEW(s, src);
    st = c->base->reduce(c->base_ctx, op, &d, &s, axes_mask);
    LEAVE;
}

static ff_status g_matmul(void *ctx, const ff_view *dst, const ff_view *a, const ff_view *b)
{
    ENTER("matmul");
    VIEW(d, dst);
    VIEW(x, a);
    VIEW(y, b);
    st = c->base->matmul(c->base_ctx, &d, &x, &y);
    LEAVE;
}

static ff_status g_where(void *ctx, const ff_view *dst, const ff_view *cond, const ff_view *a, const ff_view *b)
{
    ENTER("where");
    VIEW(d, dst);
    VIEW(k, cond);
    VIEW(x, a);
    VIEW(y, b);
    st = c->base->where(c->base_ctx, &d, &k, &x, &y);
    LEAVE;
}

static ff_status g_gather(void *ctx, const ff_view *dst, const ff_view *src, const ff_view *index, int axis)
{
    ENTER("gather");
    VIEW(d, dst);
    VIEW(s, src);
    VIEW(i, index);
    st = c->base->gather(c->base_ctx, &d, &s, &i, axis);
    LEAVE;
}

static ff_status g_scatter_add(void *ctx, const ff_view *dst, const ff_view *index, const ff_view *src, int axis)
{
    ENTER("scatter_add");
    VIEW(d, dst);
    VIEW(i, index);
    VIEW(s, src);
    st = c->base->scatter_add(c->base_ctx, &d, &i, &s, axis);
    LEAVE;
}

static ff_status g_random(void *ctx, const ff_view *dst, ff_random_dist dist, uint64_t seed, uint64_t counter_base,
                          double p0, double p1)
{
    ENTER("random");
    VIEW(d, dst);
    st = c->base->random(c->base_ctx, &d, dist, seed, counter_base, p0, p1);
    LEAVE;
}

static ff_status g_softmax(void *ctx, const ff_view *dst, const ff_view *src, int axis, int log)
{
    ENTER("softmax");
    VIEW(d, dst);
    VIEW(s, src);
    st = c->base->softmax(c->base_ctx, &d, &s, axis, log);
    LEAVE;
}

static ff_status g_conv2d(void *ctx, const ff_view *y, const ff_view *x, const ff_view *wt, const ff_conv2d_params *p)
{
    ENTER("conv2d");
    VIEW(a, y);
    VIEW(b, x);
    VIEW(k, wt);
    st = c->base->conv2d(c->base_ctx, &a, &b, &k, p);
    LEAVE;
}

static ff_status g_conv2d_bi(void *ctx, const ff_view *gx, const ff_view *gy, const ff_view *wt,
                             const ff_conv2d_params *p)
{
    ENTER("conv2d_backward_input");
    VIEW(a, gx);
    VIEW(b, gy);
    VIEW(k, wt);
    st = c->base->conv2d_backward_input(c->base_ctx, &a, &b, &k, p);
    LEAVE;
}

static ff_status g_conv2d_bw(void *ctx, const ff_view *gw, const ff_view *gy, const ff_view *x,
                             const ff_conv2d_params *p)
{
    ENTER("conv2d_backward_weight");
    VIEW(a, gw);
    VIEW(b, gy);
    VIEW(k, x);
    st = c->base->conv2d_backward_weight(c->base_ctx, &a, &b, &k, p);
    LEAVE;
}

static ff_status g_scan(void *ctx, int op, const ff_view *dst, const ff_view *src, int axis)
{
    ENTER("scan");
    VIEW(d, dst);
    VIEW(s, src);
    st = c->base->scan(c->base_ctx, op, &d, &s, axis);
    LEAVE;
}

static ff_status g_argsort(void *ctx, const ff_view *dst, const ff_view *src, int axis, int descending)
{
    ENTER("argsort");
    VIEW(d, dst);
    VIEW(s, src);
    st = c->base->argsort(c->base_ctx, &d, &s, axis, descending);
    LEAVE;
}

static ff_status g_fft(void *ctx, int op, const ff_view *dst, const ff_view *src, int axis)
{
    ENTER("fft");
    VIEW(d, dst);
    VIEW(s, src);
    st = c->base->fft(c->base_ctx, op, &d, &s, axis);
    LEAVE;
}

/* The entries that take arrays of views: at most 8 in all (batch_norm's 5 + 3). */
#define MAX_LIST 8
static int list_ok(guarded_ctx *c, int n_dst, int n_src, const char *fn)
{
    if (n_dst >= 0 && n_src >= 0 && n_dst + n_src <= MAX_LIST) return 1;
    c->host->set_error("guarded %s: %d + %d views (at most %d)", fn, n_dst, n_src, MAX_LIST);
    return 0;
}

static ff_status g_linalg(void *ctx, int op, const ff_view *dst, int n_dst, const ff_view *src, int n_src)
{
    ENTER("linalg");
    ff_view d[MAX_LIST], s[MAX_LIST];
    if (!list_ok(c, n_dst, n_src, fname) || window_views(c, &w, dst, d, n_dst, fname) ||
        window_views(c, &w, src, s, n_src, fname))
        goto out;
    st = c->base->linalg(c->base_ctx, op, d, n_dst, s, n_src);
    LEAVE;
}

static ff_status g_batch_norm(void *ctx, int op, const ff_view *dst, int n_dst, const ff_view *src, int n_src,
                              double eps)
{
    ENTER("batch_norm");
    ff_view d[MAX_LIST], s[MAX_LIST];
    if (!list_ok(c, n_dst, n_src, fname) || window_views(c, &w, dst, d, n_dst, fname) ||
        window_views(c, &w, src, s, n_src, fname))
        goto out;
    st = c->base->batch_norm(c->base_ctx, op, d, n_dst, s, n_src, eps);
    LEAVE;
}

static ff_status g_pool2d(void *ctx, int op, const ff_view *dst, const ff_view *src, int n_src,
                          const ff_pool2d_params *p)
{
    ENTER("pool2d");
    ff_view d, s[MAX_LIST];
    if (!list_ok(c, 1, n_src, fname) || window_view(c, &w, dst, &d, fname) ||
        window_views(c, &w, src, s, n_src, fname))
        goto out;
    st = c->base->pool2d(c->base_ctx, op, &d, s, n_src, p);
    LEAVE;
}

static ff_status g_fused(void *ctx, const ff_fused_program *prog)
{
    ENTER("fused");
    ff_view v[FF_FUSED_MAX_VIEWS];
    if (prog->n_views < 0 || prog->n_views > FF_FUSED_MAX_VIEWS) {
        c->host->set_error("guarded fused: %d views (at most %d)", prog->n_views, FF_FUSED_MAX_VIEWS);
        goto out;
    }
    if (window_views(c, &w, prog->views, v, prog->n_views, fname)) goto out;
    ff_fused_program p = *prog;
    p.views = v;
    st = c->base->fused(c->base_ctx, &p);
    LEAVE;
}

/* ---- the vtable: the reference's optional entries where it has them ------- */

static ff_backend_vtable guarded_vtable;
static pthread_once_t guarded_once = PTHREAD_ONCE_INIT;

#define OPTIONAL(entry, wrapper) guarded_vtable.entry = base->entry ? wrapper : NULL

static void guarded_vtable_build(void)
{
    const ff_backend_vtable *base = ff_guarded_base_entry();
    guarded_vtable = (ff_backend_vtable){
        .abi_version = FF_ABI_VERSION,
        .struct_size = (uint32_t)sizeof(ff_backend_vtable),
        .name = "guarded",
        .version = "0.1.0",
        .description = "test backend: opaque handles to memory mapped PROT_NONE outside its own entries",
        .flags = 0, /* not host memory; no dlpack_device either, so no zero-copy export */
        .init = g_init, .shutdown = g_shutdown, .supports = g_supports,
        .alloc = g_alloc, .free = g_free, .upload = g_upload, .download = g_download, .sync = g_sync,
        .fill = g_fill, .copy = g_copy, .unary = g_unary, .binary = g_binary, .reduce = g_reduce,
        .matmul = g_matmul, .where = g_where, .gather = g_gather, .scatter_add = g_scatter_add,
        .random = g_random,
        .memory_stats = g_memory_stats, .empty_cache = g_empty_cache, .device_info = g_device_info,
    };
    OPTIONAL(softmax, g_softmax);
    OPTIONAL(conv2d, g_conv2d);
    OPTIONAL(conv2d_backward_input, g_conv2d_bi);
    OPTIONAL(conv2d_backward_weight, g_conv2d_bw);
    OPTIONAL(scan, g_scan);
    OPTIONAL(argsort, g_argsort);
    OPTIONAL(linalg, g_linalg);
    OPTIONAL(fft, g_fft);
    OPTIONAL(batch_norm, g_batch_norm);
    OPTIONAL(pool2d, g_pool2d);
    OPTIONAL(fused, g_fused);
}

FF_PLUGIN_EXPORT const ff_backend_vtable *ff_backend_entry(void)
{
    pthread_once(&guarded_once, guarded_vtable_build);
    return &guarded_vtable;
}
