/*
 * The cpu reference backend: vtable, lifecycle, supports() and memory.
 *
 * This backend is the oracle: plain C11, every dtype it accepts, any strides and
 * offsets, float math in double rounded once. Other backends are tested against it,
 * so it favours being obviously right over being fast (while avoiding needlessly
 * slow loop orders). The compute kernels live in one file per op family.
 */
#include <stdlib.h>

#include "cpu_impl.h"
#include "ff_backend_host_entries.h"

/* ---- lifecycle ----------------------------------------------------------- */

static ff_status cpu_init(const ff_host_api *host, void **ctx)
{
    if (!host || !host->set_error || !ctx) return FF_ERR_INVALID;
    cpu_ctx *c = calloc(1, sizeof *c);
    if (!c) {
        host->set_error("cpu init: out of memory allocating the backend context");
        return FF_ERR_OOM;
    }
    c->host = host;
    atomic_init(&c->in_use, 0);
    atomic_init(&c->peak, 0);
    *ctx = c;
    return FF_OK;
}

static void cpu_shutdown(void *ctx) { free(ctx); }

/* The single source of truth for what this backend computes. Each family's
 * predicate lives next to its kernel, and the kernel refuses exactly what the
 * predicate refuses. See README.md for the table. Op codes are named, never bounded
 * ("op < COUNT"): a code appended to the ABI later is declined until it is written
 * (backend_abi.h, "Growing the op enums"); kinds whose op argument means nothing
 * accept only the 0 the core sends. */
static int cpu_supports(void *ctx, ff_op_kind kind, int op, ff_dtype dtype)
{
    (void)ctx;
    if (kind == FF_KIND_FILL) return op == 0 && ffb_dtype_storage_ok(dtype); /* F16/BF16 too */
    if (kind == FF_KIND_COPY) /* op = source dtype; every pair of the storage and complex dtypes */
        return cpu_copy_dtype_ok(dtype) && op >= 0 && op < FF_DTYPE_COUNT && cpu_copy_dtype_ok((ff_dtype)op);
    if (ff_dtype_is_complex(dtype)) return cpu_complex_supported(kind, op); /* cpu_complex.c: the oracle */
    if (kind == FF_KIND_LAYER_NORM) return ffb_layer_norm_supported(op, dtype); /* F16/BF16 too, in double */
    if (kind == FF_KIND_BATCH_NORM && ffb_is_half(dtype)) return ffb_batch_norm_supported(op, dtype); /* f32 [C] */
    if (kind == FF_KIND_LINEAR) return cpu_linear_supported(op, dtype);
    if (!cpu_dtype_ok(dtype)) return 0;
    switch (kind) {
    case FF_KIND_UNARY: return cpu_unary_supported((ff_unary_op)op, dtype);
    case FF_KIND_BINARY: return cpu_binary_supported((ff_binary_op)op, dtype);
    case FF_KIND_REDUCE: return cpu_reduce_supported((ff_reduce_op)op, dtype);
    case FF_KIND_MATMUL: return op == 0 && cpu_matmul_supported(dtype);
    case FF_KIND_WHERE: return op == 0;
    case FF_KIND_GATHER: return op == 0;
    case FF_KIND_SCATTER_ADD: return op == 0;
    case FF_KIND_RANDOM: return cpu_random_supported((ff_random_dist)op, dtype);
    case FF_KIND_SOFTMAX: return (op == 0 || op == 1) && cpu_softmax_supported(dtype); /* op = log flag */
    case FF_KIND_CONV2D: return cpu_conv2d_supported(op, dtype);
    case FF_KIND_ATTENTION:
        return (op == FF_ATTENTION_FORWARD || op == FF_ATTENTION_BACKWARD || op == FF_ATTENTION_DROPOUT) && ffb_is_float(dtype);
    case FF_KIND_QMATMUL: return (op == 0 && dtype == FF_U8) || (op == FF_QMATMUL_DYNAMIC && dtype == FF_F32);
    default: return ffb_host_entry_supported(kind, op, dtype); /* scan ... pool2d, fused */
    }
}

/* ---- memory -------------------------------------------------------------- */

/* Every block starts with a 64-byte header holding its size, so free() can keep
 * memory_stats exact; the pointer handed out is 64-byte aligned past the header. */
#define CPU_ALIGN 64u

static void *cpu_alloc(void *ctx, size_t nbytes)
{
    cpu_ctx *c = ctx;
    size_t body = nbytes == 0 ? CPU_ALIGN : nbytes;
    if (body > SIZE_MAX - 2 * CPU_ALIGN) {
        cpu_error(ctx, FF_ERR_OOM, "cpu alloc: %zu bytes is too large", nbytes);
        return NULL;
    }
    body = (body + CPU_ALIGN - 1) / CPU_ALIGN * CPU_ALIGN; /* aligned_alloc wants a multiple */
    unsigned char *base = aligned_alloc(CPU_ALIGN, CPU_ALIGN + body);
    if (!base) {
        cpu_error(ctx, FF_ERR_OOM, "cpu alloc: out of memory allocating %zu bytes", nbytes);
        return NULL;
    }
    memcpy(base, &nbytes, sizeof nbytes);
    if (c) {
        size_t now = atomic_fetch_add(&c->in_use, nbytes) + nbytes;
        size_t peak = atomic_load(&c->peak);
        while (now > peak && !atomic_compare_exchange_weak(&c->peak, &peak, now)) {
        }
    }
    return base + CPU_ALIGN;
}

static void cpu_free(void *ctx, void *buf)
{
    cpu_ctx *c = ctx;
    if (!buf) return;
    unsigned char *base = (unsigned char *)buf - CPU_ALIGN;
    size_t nbytes;
    memcpy(&nbytes, base, sizeof nbytes);
    if (c) atomic_fetch_sub(&c->in_use, nbytes);
    free(base);
}

static ff_status cpu_upload(void *ctx, void *buf, size_t byte_offset, const void *host, size_t nbytes)
{
    if (nbytes == 0) return FF_OK;
    if (!buf || !host) return cpu_error(ctx, FF_ERR_INVALID, "cpu upload: NULL %s", buf ? "host pointer" : "buffer");
    memcpy((unsigned char *)buf + byte_offset, host, nbytes);
    return FF_OK;
}

static ff_status cpu_download(void *ctx, const void *buf, size_t byte_offset, void *host, size_t nbytes)
{
    if (nbytes == 0) return FF_OK;
    if (!buf || !host)
        return cpu_error(ctx, FF_ERR_INVALID, "cpu download: NULL %s", buf ? "host pointer" : "buffer");
    memcpy(host, (const unsigned char *)buf + byte_offset, nbytes);
    return FF_OK;
}

/* Every kernel finishes before it returns: nothing to wait for. */
static ff_status cpu_sync(void *ctx)
{
    (void)ctx;
    return FF_OK;
}

/* No allocator cache: cached is always 0 and empty_cache has nothing to do. */
static ff_status cpu_memory_stats(void *ctx, size_t *in_use, size_t *cached, size_t *peak)
{
    cpu_ctx *c = ctx;
    if (!c) return FF_ERR_INVALID;
    if (in_use) *in_use = atomic_load(&c->in_use);
    if (cached) *cached = 0;
    if (peak) *peak = atomic_load(&c->peak);
    return FF_OK;
}

static ff_status cpu_empty_cache(void *ctx)
{
    (void)ctx;
    return FF_OK;
}

/* ---- the vtable ----------------------------------------------------------- */

static const ff_backend_vtable cpu_vtable = {
    .abi_version = FF_ABI_VERSION,
    .struct_size = (uint32_t)sizeof(ff_backend_vtable),
    .abi_step = FF_ABI_STEP,
    .name = "cpu",
    .version = "0.1.0",
    .description = "reference CPU backend (plain C11, any strides, the conformance oracle)",
    .flags = FF_BACKEND_HOST_MEMORY,
    /* lifecycle */
    .init = cpu_init,
    .shutdown = cpu_shutdown,
    .supports = cpu_supports,
    /* memory */
    .alloc = cpu_alloc,
    .free = cpu_free,
    .upload = cpu_upload,
    .download = cpu_download,
    .sync = cpu_sync,
    /* compute */
    .fill = cpu_fill,
    .copy = cpu_copy,
    .unary = cpu_unary,
    .binary = cpu_binary,
    .reduce = cpu_reduce,
    .matmul = cpu_matmul,
    .where = cpu_where,
    .gather = cpu_gather,
    .scatter_add = cpu_scatter_add,
    .random = cpu_random,
    /* optional */
    .softmax = cpu_softmax,
    .scan = cpu_scan,
    .argsort = cpu_argsort,
    .linalg = cpu_linalg,
    .fft = cpu_fft,
    .batch_norm = cpu_batch_norm,
    .pool2d = cpu_pool2d,
    .conv2d = cpu_conv2d,
    .conv2d_backward_input = cpu_conv2d_backward_input,
    .conv2d_backward_weight = cpu_conv2d_backward_weight,
    .fused = cpu_fused,
    .memory_stats = cpu_memory_stats,
    .empty_cache = cpu_empty_cache,
    .attention = cpu_attention,
    .qmatmul = cpu_qmatmul,
    .layer_norm = cpu_layer_norm,
    .linear = cpu_linear,
};

/* The one exported symbol (the build hides everything else). */
FF_PLUGIN_EXPORT const ff_backend_vtable *ff_backend_entry(void);
FF_PLUGIN_EXPORT const ff_backend_vtable *ff_backend_entry(void) { return &cpu_vtable; }
