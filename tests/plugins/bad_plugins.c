/*
 * Deliberately broken backend plugins for the loader's failure tests
 * (tests/unit/test_loader.c). One source, built once per flaw; exactly one of these
 * is defined per library (see CMakeLists.txt):
 *
 *   FF_BAD_NOENTRY           exports no ff_backend_entry symbol at all
 *   FF_BAD_ABI               abi_version = FF_ABI_VERSION + 41
 *   FF_BAD_SIZE              struct_size = 16 (smaller than any real vtable)
 *   FF_BAD_INIT              init() fails with "bad_init: init refused on purpose"
 *   FF_BAD_NULL_ENTRY        ff_backend_entry() returns NULL
 *   FF_BAD_MISSING_REQUIRED  a correct header, but the required matmul entry is NULL
 *
 * Apart from its one flaw each plugin is a complete, well-formed vtable whose
 * entries all refuse with FF_ERR_UNSUPPORTED, so the loader's rejection can only
 * come from the flaw under test.
 */
#include <stddef.h>

#include "ff/backend_abi.h"

#if defined(FF_BAD_NOENTRY) + defined(FF_BAD_ABI) + defined(FF_BAD_SIZE) + defined(FF_BAD_INIT) + \
        defined(FF_BAD_NULL_ENTRY) + defined(FF_BAD_MISSING_REQUIRED) != 1
#error "define exactly one FF_BAD_* flaw"
#endif

static const ff_host_api *bad_host;

static ff_status bad_init(const ff_host_api *host, void **ctx)
{
    bad_host = host;
    *ctx = NULL;
#if defined(FF_BAD_INIT)
    if (host && host->set_error) host->set_error("bad_init: init refused on purpose");
    return FF_ERR_BACKEND;
#else
    return FF_OK;
#endif
}

static void bad_shutdown(void *ctx) { (void)ctx; }
static int bad_supports(void *ctx, ff_op_kind kind, int op, ff_dtype dtype)
{
    (void)ctx, (void)kind, (void)op, (void)dtype;
    return 0;
}

static ff_status refuse(const char *entry)
{
    if (bad_host && bad_host->set_error) bad_host->set_error("bad plugin %s: not implemented", entry);
    return FF_ERR_UNSUPPORTED;
}

static void *bad_alloc(void *ctx, size_t nbytes)
{
    (void)ctx, (void)nbytes;
    refuse("alloc");
    return NULL;
}
static void bad_free(void *ctx, void *buf) { (void)ctx, (void)buf; }
static ff_status bad_upload(void *ctx, void *buf, size_t off, const void *host, size_t n)
{
    (void)ctx, (void)buf, (void)off, (void)host, (void)n;
    return refuse("upload");
}
static ff_status bad_download(void *ctx, const void *buf, size_t off, void *host, size_t n)
{
    (void)ctx, (void)buf, (void)off, (void)host, (void)n;
    return refuse("download");
}
static ff_status bad_sync(void *ctx)
{
    (void)ctx;
    return FF_OK;
}
static ff_status bad_fill(void *ctx, const ff_view *dst, ff_scalar value)
{
    (void)ctx, (void)dst, (void)value;
    return refuse("fill");
}
static ff_status bad_copy(void *ctx, const ff_view *dst, const ff_view *src)
{
    (void)ctx, (void)dst, (void)src;
    return refuse("copy");
}
static ff_status bad_unary(void *ctx, ff_unary_op op, const ff_view *dst, const ff_view *src)
{
    (void)ctx, (void)op, (void)dst, (void)src;
    return refuse("unary");
}
static ff_status bad_binary(void *ctx, ff_binary_op op, const ff_view *dst, const ff_view *a, const ff_view *b)
{
    (void)ctx, (void)op, (void)dst, (void)a, (void)b;
    return refuse("binary");
}
static ff_status bad_reduce(void *ctx, ff_reduce_op op, const ff_view *dst, const ff_view *src, uint32_t mask)
{
    (void)ctx, (void)op, (void)dst, (void)src, (void)mask;
    return refuse("reduce");
}
#if !defined(FF_BAD_MISSING_REQUIRED)
static ff_status bad_matmul(void *ctx, const ff_view *dst, const ff_view *a, const ff_view *b)
{
    (void)ctx, (void)dst, (void)a, (void)b;
    return refuse("matmul");
}
#endif
static ff_status bad_where(void *ctx, const ff_view *dst, const ff_view *cond, const ff_view *a, const ff_view *b)
{
    (void)ctx, (void)dst, (void)cond, (void)a, (void)b;
    return refuse("where");
}
static ff_status bad_gather(void *ctx, const ff_view *dst, const ff_view *src, const ff_view *index, int axis)
{
    (void)ctx, (void)dst, (void)src, (void)index, (void)axis;
    return refuse("gather");
}
static ff_status bad_scatter_add(void *ctx, const ff_view *dst, const ff_view *index, const ff_view *src, int axis)
{
    (void)ctx, (void)dst, (void)index, (void)src, (void)axis;
    return refuse("scatter_add");
}
static ff_status bad_random(void *ctx, const ff_view *dst, ff_random_dist dist, uint64_t seed, uint64_t counter_base,
                            double p0, double p1)
{
    (void)ctx, (void)dst, (void)dist, (void)seed, (void)counter_base, (void)p0, (void)p1;
    return refuse("random");
}

static const ff_backend_vtable bad_vtable = {
#if defined(FF_BAD_ABI)
    .abi_version = FF_ABI_VERSION + 41,
#else
    .abi_version = FF_ABI_VERSION,
#endif
#if defined(FF_BAD_SIZE)
    .struct_size = 16,
#else
    .struct_size = (uint32_t)sizeof(ff_backend_vtable),
#endif
    .name = "bad",
    .version = "0.0.0",
    .description = "a deliberately broken plugin for the loader tests",
    .flags = 0,
    .init = bad_init,
    .shutdown = bad_shutdown,
    .supports = bad_supports,
    .alloc = bad_alloc,
    .free = bad_free,
    .upload = bad_upload,
    .download = bad_download,
    .sync = bad_sync,
    .fill = bad_fill,
    .copy = bad_copy,
    .unary = bad_unary,
    .binary = bad_binary,
    .reduce = bad_reduce,
#if defined(FF_BAD_MISSING_REQUIRED)
    .matmul = NULL, /* the flaw */
#else
    .matmul = bad_matmul,
#endif
    .where = bad_where,
    .gather = bad_gather,
    .scatter_add = bad_scatter_add,
    .random = bad_random,
    /* optional entries left NULL, which is allowed */
};

#if defined(FF_BAD_NOENTRY)
/* Something is exported, just not the entry point: a near-miss name. */
FF_PLUGIN_EXPORT const ff_backend_vtable *ff_backend_entry_v0(void);
FF_PLUGIN_EXPORT const ff_backend_vtable *ff_backend_entry_v0(void) { return &bad_vtable; }
#else
FF_PLUGIN_EXPORT const ff_backend_vtable *ff_backend_entry(void);
FF_PLUGIN_EXPORT const ff_backend_vtable *ff_backend_entry(void)
{
#if defined(FF_BAD_NULL_ENTRY)
    (void)bad_vtable;
    return NULL;
#else
    return &bad_vtable;
#endif
}
#endif
