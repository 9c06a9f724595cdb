/*
 * The cpu_blas backend: vtable, lifecycle, supports(), host transfers and messages.
 *
 * Thread count: FF_NUM_THREADS (default: the cores this process may run on), read at
 * init. There is one pool: matmul splits C across it and each thread calls a
 * single-threaded OpenBLAS gemm (openblas_set_num_threads(1)), so OpenBLAS's own
 * threads never run and never spin against ours between ops.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "blas_complex.h"
#include "ff_backend_host_entries.h"
#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#endif

/* From OpenBLAS (cblas.h); declared here so this file needs no BLAS header. */
void openblas_set_num_threads(int num_threads);

ff_status blas_error(void *ctx, ff_status st, const char *fmt, ...)
{
    blas_ctx *c = ctx;
    va_list ap;
    va_start(ap, fmt);
    st = ffb_verror(c ? c->host : NULL, st, fmt, ap);
    va_end(ap);
    return st;
}

ff_status blas_check_view(void *ctx, const char *entry, const char *what, const ff_view *v)
{
    blas_ctx *c = ctx;
    return ffb_check_view(c ? c->host : NULL, "cpu_blas", entry, what, v);
}

ff_status blas_check_storage_view(void *ctx, const char *entry, const char *what, const ff_view *v)
{
    blas_ctx *c = ctx;
    return ffb_check_view_as(c ? c->host : NULL, "cpu_blas", entry, what, v, 1);
}

int blas_same_shape(const ff_view *a, const ff_view *b) { return ffb_same_shape(a, b); }

ff_status blas_shape_error(void *ctx, const char *entry, const ff_view *a, const ff_view *b)
{
    char sa[160], sb[160];
    ffb_shape_str(a, sa, sizeof sa);
    ffb_shape_str(b, sb, sizeof sb);
    return blas_error(ctx, FF_ERR_INVALID, "cpu_blas %s: shapes %s and %s do not match", entry, sa, sb);
}

int blas_cpu_flags(void)
{
    static atomic_int cached = -1;
    int f = atomic_load_explicit(&cached, memory_order_relaxed);
    if (f < 0) {
#if defined(__x86_64__) && defined(__GNUC__)
        __builtin_cpu_init();
        f = (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") ? BLAS_CPU_AVX2_FMA : 0) |
            (__builtin_cpu_supports("avx512f") ? BLAS_CPU_AVX512F : 0);
        /* F16C from CPUID leaf 1 (ECX bit 29): clang's __builtin_cpu_supports has no
         * "f16c"; its ymm form needs the AVX state, which the avx2 answer implies */
        unsigned eax, ebx, ecx, edx;
        if ((f & BLAS_CPU_AVX2_FMA) && __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & (1u << 29))) f |= BLAS_CPU_F16C;
        /* VNNI from CPUID leaf 7 (clang 14 knows no "avxvnni"): AVX512_VNNI is subleaf 0's
         * ECX bit 11 (with the AVX-512 state), AVX-VNNI subleaf 1's EAX bit 4 */
        if ((f & BLAS_CPU_AVX512F) && __get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) && (ecx & (1u << 11)))
            f |= BLAS_CPU_VNNI;
        if ((f & BLAS_CPU_AVX2_FMA) && __get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx) && (eax & (1u << 4)))
            f |= BLAS_CPU_VNNI;
#else
        f = 0;
#endif
        atomic_store_explicit(&cached, f, memory_order_relaxed);
    }
    return f;
}

/* ---- lifecycle ------------------------------------------------------------------- */

static ff_status blas_init(const ff_host_api *host, void **ctx)
{
    if (!host || !host->set_error || !ctx) return FF_ERR_INVALID;
    blas_ctx *c = calloc(1, sizeof *c);
    if (!c) {
        host->set_error("cpu_blas init: out of memory allocating the backend context");
        return FF_ERR_OOM;
    }
    c->host = host;
    c->alloc = blas_alloc_create();
    if (!c->alloc) {
        free(c);
        host->set_error("cpu_blas init: out of memory allocating the allocator state");
        return FF_ERR_OOM;
    }
    int n = blas_default_threads();
    const char *env = getenv("FF_NUM_THREADS");
    if (env && *env) {
        char *end = NULL;
        long v = strtol(env, &end, 10);
        if (end == env || *end || v < 1 || v > 256) {
            blas_alloc_destroy(c->alloc);
            free(c);
            host->set_error("cpu_blas init: FF_NUM_THREADS='%s' is not a thread count in [1, 256]", env);
            return FF_ERR_INVALID;
        }
        n = (int)v;
    }
    c->pool = blas_pool_create(n);
    c->nthreads = c->pool ? n : 1;
    /* matmul splits its work across our pool and calls single-threaded gemms */
    openblas_set_num_threads(1);
    blas_gemm_kind g = blas_gemm_pick();
    c->own_gemm = g == BLAS_GEMM_OWN;
    c->dnnl_gemm = g == BLAS_GEMM_DNNL;
    /* FF_GEMM names one gemm for every f32 product (ctest compares each with the reference) */
    const char *forced = getenv("FF_GEMM");
    /* FF_BLAS_ISA=avx2 keeps the hand kernels that have an 8-lane form (the attention's
     * small products, the skinny gemm, vmath) on it, so that tests cover it on AVX-512 machines */
    const char *isa = getenv("FF_BLAS_ISA");
    int narrow = isa && !strcmp(isa, "avx2");
    __builtin_cpu_init();
    c->wide_vectors = __builtin_cpu_supports("avx512f") && !narrow;
    c->skinny_gemm = forced && *forced ? BLAS_SKINNY_OFF : blas_skinny_pick(c->wide_vectors);
    blas_vmath_set_wide(c->wide_vectors);
    if (host->log)
        host->log("cpu_blas: %d thread(s), f32 gemm: %s, f16/bf16 conversions: %s", c->nthreads, blas_gemm_name(g),
                  blas_half_isa_name());
    blas_fft_context_up();
    *ctx = c;
    return FF_OK;
}

static void blas_shutdown(void *ctx)
{
    blas_ctx *c = ctx;
    if (!c) return;
    blas_fft_context_down();
    blas_dnnl_cache_clear();
    blas_pool_destroy(c->pool);
    blas_alloc_destroy(c->alloc);
    free(c);
}

/* F16/BF16 (blas_half.c, blas_half_wide.c): the elementwise entries, where, reduce,
 * matmul, gather and softmax compute on them natively, each result the f32 entry's
 * rounded once, as the core's f32 detour gives it. Declined, so the core detours: random
 * (the detour's double rounding through f32 is the reference's value), scatter_add
 * (the detour rounds the f32 sums once, per-add rounding in half would not), the
 * optional entries past softmax but max/avg pool2d, and fused programs (the core runs them op by op
 * through the half entries). FF_BLAS_HALF=0 declines everything but copy and fill, to
 * measure or check against the detour. */
static int blas_half_supports(ff_op_kind kind, int op, ff_dtype dtype)
{
    static atomic_int off = -1;
    int o = atomic_load_explicit(&off, memory_order_relaxed);
    if (o < 0) {
        const char *e = getenv("FF_BLAS_HALF");
        o = e && strcmp(e, "0") == 0;
        atomic_store_explicit(&off, o, memory_order_relaxed);
    }
    if (o) return 0;
    switch (kind) {
    case FF_KIND_UNARY: return blas_unary_supported((ff_unary_op)op, FF_F32); /* every float op */
    case FF_KIND_BINARY: return blas_binary_supported((ff_binary_op)op, FF_F32);
    case FF_KIND_REDUCE: return ffb_reduce_supported((ff_reduce_op)op, FF_F32);
    case FF_KIND_MATMUL: case FF_KIND_WHERE: case FF_KIND_GATHER: return op == 0;
    case FF_KIND_SOFTMAX: return op == 0 || op == 1;
    case FF_KIND_POOL2D: /* max and avg in f32 tiles per plane (blas_pool.c); adaptive declined: the
                          * core composes it on halves (the reference too), rounding per op */
        return op == FF_POOL2D_MAX_FORWARD || op == FF_POOL2D_MAX_BACKWARD || op == FF_POOL2D_AVG_FORWARD ||
               op == FF_POOL2D_AVG_BACKWARD || op == FF_POOL2D_MAX_BACKWARD_FIRST;
    case FF_KIND_ATTENTION: return op == FF_ATTENTION_FORWARD || op == FF_ATTENTION_BACKWARD; /* f32 tiles */
    case FF_KIND_CONV2D: return blas_conv2d_supported(op, dtype); /* bf16 on oneDNN */
    case FF_KIND_BATCH_NORM: return ffb_batch_norm_supported(op, dtype); /* f32 [C] views */
    default: return 0;
    }
}

/* The same table as the reference backend: every family's predicate, and the kernels
 * refuse exactly what it refuses. Op codes are named, never bounded by a *_COUNT: an op
 * code appended to the ABI after this backend was written is declined
 * (backend_abi.h, "Growing the op enums"); kinds whose op argument means nothing
 * accept only the 0 the core sends. */
static int blas_supports(void *ctx, ff_op_kind kind, int op, ff_dtype dtype)
{
    (void)ctx;
    if (kind == FF_KIND_FILL) return op == 0 && ffb_dtype_storage_ok(dtype); /* F16/BF16 too */
    if (kind == FF_KIND_COPY) /* op = source dtype; every pair of the eight dtypes */
        return ffb_dtype_storage_ok(dtype) && op >= 0 && op < FF_DTYPE_COUNT && ffb_dtype_storage_ok((ff_dtype)op);
    if (kind == FF_KIND_LAYER_NORM) return ffb_layer_norm_supported(op, dtype); /* F16/BF16 too, in double */
    if (kind == FF_KIND_LINEAR) return blas_linear_supported(op, dtype); /* F16/BF16 too */
    if (ffb_is_half(dtype)) return blas_half_supports(kind, op, dtype);
    if (ff_dtype_is_complex(dtype)) return blas_complex_supported(kind, op); /* blas_complex.c */
    if (!blas_dtype_ok(dtype)) return 0;
    switch (kind) {
    case FF_KIND_UNARY: return blas_unary_supported((ff_unary_op)op, dtype);
    case FF_KIND_BINARY: return blas_binary_supported((ff_binary_op)op, dtype);
    case FF_KIND_REDUCE: return ffb_reduce_supported((ff_reduce_op)op, dtype);
    case FF_KIND_MATMUL: return op == 0 && dtype != FF_BOOL;
    case FF_KIND_WHERE: return op == 0;
    case FF_KIND_GATHER: return op == 0;
    case FF_KIND_SCATTER_ADD: return op == 0;
    case FF_KIND_RANDOM: return (op == FF_RANDOM_UNIFORM || op == FF_RANDOM_NORMAL) && blas_is_float(dtype);
    case FF_KIND_SOFTMAX: return (op == 0 || op == 1) && blas_is_float(dtype); /* op = log flag */
    case FF_KIND_CONV2D: return blas_conv2d_supported(op, dtype);
    case FF_KIND_ATTENTION: /* dropout too, but on F32/F64 only: half's mask rounds as half */
        return (op == FF_ATTENTION_FORWARD || op == FF_ATTENTION_BACKWARD || op == FF_ATTENTION_DROPOUT) &&
               blas_is_float(dtype);
    case FF_KIND_QMATMUL: return (op == 0 && dtype == FF_U8) || (op == FF_QMATMUL_DYNAMIC && dtype == FF_F32);
    default: return ffb_host_entry_supported(kind, op, dtype); /* scan ... pool2d, fused */
    }
}

static ff_status blas_upload(void *ctx, void *buf, size_t byte_offset, const void *host, size_t nbytes)
{
    if (nbytes == 0) return FF_OK;
    if (!buf || !host) return blas_error(ctx, FF_ERR_INVALID, "cpu_blas upload: NULL %s", buf ? "host pointer" : "buffer");
    memcpy((char *)buf + byte_offset, host, nbytes);
    return FF_OK;
}

static ff_status blas_download(void *ctx, const void *buf, size_t byte_offset, void *host, size_t nbytes)
{
    if (nbytes == 0) return FF_OK;
    if (!buf || !host)
        return blas_error(ctx, FF_ERR_INVALID, "cpu_blas download: NULL %s", buf ? "host pointer" : "buffer");
    memcpy(host, (const char *)buf + byte_offset, nbytes);
    return FF_OK;
}

/* Every kernel finishes (all threads joined) before it returns. */
static ff_status blas_sync(void *ctx)
{
    (void)ctx;
    return FF_OK;
}

static const ff_backend_vtable blas_vtable = {
    .abi_version = FF_ABI_VERSION,
    .struct_size = (uint32_t)sizeof(ff_backend_vtable),
    .abi_step = FF_ABI_STEP,
    .name = "cpu_blas",
    .version = "0.1.0",
    .description = "fast CPU backend: OpenBLAS matmul, vectorized (AVX-512/AVX2) threaded kernels, caching allocator",
    .flags = FF_BACKEND_HOST_MEMORY,
    /* lifecycle */
    .init = blas_init,
    .shutdown = blas_shutdown,
    .supports = blas_supports,
    /* memory */
    .alloc = blas_alloc,
    .free = blas_free,
    .upload = blas_upload,
    .download = blas_download,
    .sync = blas_sync,
    /* compute */
    .fill = blas_fill,
    .copy = blas_copy,
    .unary = blas_unary,
    .binary = blas_binary,
    .reduce = blas_reduce,
    .matmul = blas_matmul,
    .where = blas_where,
    .gather = blas_gather,
    .scatter_add = blas_scatter_add,
    .random = blas_random,
    /* optional */
    .softmax = blas_softmax,
    .memory_stats = blas_memory_stats,
    .empty_cache = blas_empty_cache,
    .conv2d = blas_conv2d,
    .conv2d_backward_input = blas_conv2d_backward_input,
    .conv2d_backward_weight = blas_conv2d_backward_weight,
    .scan = blas_scan,
    .argsort = blas_argsort,
    .linalg = blas_linalg,
    .fft = blas_fft,
    .batch_norm = blas_batch_norm,
    .pool2d = blas_pool2d,
    .fused = blas_fused,
    .attention = blas_attention,
    .qmatmul = blas_qmatmul,
    .layer_norm = blas_layer_norm,
    .linear = blas_linear,
};

FF_PLUGIN_EXPORT const ff_backend_vtable *ff_backend_entry(void);
FF_PLUGIN_EXPORT const ff_backend_vtable *ff_backend_entry(void) { return &blas_vtable; }
