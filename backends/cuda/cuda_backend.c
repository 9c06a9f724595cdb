/*
 * The cuda backend: vtable, lifecycle, supports(), device_info and messages.
 *
 * Buffers are device pointers from a caching allocator (flags is 0: the core never
 * dereferences them); all work goes into one non-blocking stream per context, entries
 * return once their kernels are queued, and download()/sync() are where the host waits.
 * Without a device or a driver, init fails with a message and nothing else is touched.
 * See README.md (unverified on a GPU: written and built on a machine without one).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_impl.h"
#ifdef FF_CUDA_NCCL
#include "cuda_coll.h"
#endif
#include "ff_backend_fused.h"
#include "ff_backend_layer_norm.h"
#include "ff_backend_lines.h"

ff_status cuda_error(cuda_ctx *c, ff_status st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    st = ffb_verror(c ? c->host : NULL, st, fmt, ap);
    va_end(ap);
    return st;
}

ff_status cuda_fail(cuda_ctx *c, const char *entry, const char *call, cudaError_t err)
{
    ff_status st = err == cudaErrorMemoryAllocation ? FF_ERR_OOM : FF_ERR_BACKEND;
    /* a failing call also records err as the thread's last error: clear it here, or the
     * next entry's cudaGetLastError (cuda_launch_check) reports it against a launch that
     * succeeded (sticky errors come back anyway) */
    cudaGetLastError();
    return cuda_error(c, st, "cuda %s: %s failed: %s: %s", entry, call, cudaGetErrorName(err), cudaGetErrorString(err));
}

ff_status cuda_launch_check(cuda_ctx *c, const char *entry, const char *kernel)
{
    cudaError_t err = cudaGetLastError();
    return err == cudaSuccess ? FF_OK : cuda_fail(c, entry, kernel, err);
}

ff_status cuda_use_device(cuda_ctx *c, const char *entry)
{
    /* the runtime's current device is per host thread, and entries come from any thread.
     * Asked each time, not cached per thread: other code on the thread (PyTorch through
     * DLPack, the application) may switch it between entries, and a stale cache would
     * cudaMalloc on that device and launch into c->stream from it. cudaGetDevice is a
     * thread-local read. */
    int current = -1;
    if (cudaGetDevice(&current) == cudaSuccess && current == c->device) return FF_OK;
    cudaGetLastError();
    cudaError_t err = cudaSetDevice(c->device);
    if (err != cudaSuccess) return cuda_fail(c, entry, "cudaSetDevice", err);
    return FF_OK;
}

ff_status cuda_check_view(cuda_ctx *c, const char *entry, const char *what, const ff_view *v, int half_ok)
{
    return ffb_check_view_as(c ? c->host : NULL, "cuda", entry, what, v, half_ok);
}

ff_status cuda_shape_error(cuda_ctx *c, const char *entry, const ff_view *a, const ff_view *b)
{
    char sa[160], sb[160];
    ffb_shape_str(a, sa, sizeof sa);
    ffb_shape_str(b, sb, sizeof sb);
    return cuda_error(c, FF_ERR_INVALID, "cuda %s: shapes %s and %s do not match", entry, sa, sb);
}

/* ---- lifecycle ------------------------------------------------------------------- */

static void cuda_shutdown(void *ctx)
{
    cuda_ctx *c = ctx;
    if (!c) return;
    if (c->stream) {
        cudaSetDevice(c->device);
        cudaStreamSynchronize(c->stream);
    }
#ifdef FF_CUDA_NCCL
    cuda_coll_destroy_all(c);
#endif
    cuda_lt_destroy(c);
    cuda_blas_destroy(c);
    cuda_dnn_destroy(c);
    cuda_fft_destroy(c);
    cuda_solver_destroy(c);
    cuda_alloc_destroy(c);
    if (c->staging) cudaFreeHost(c->staging);
    if (c->stream) cudaStreamDestroy(c->stream);
    pthread_mutex_destroy(&c->alloc_lock);
    pthread_mutex_destroy(&c->staging_lock);
    pthread_mutex_destroy(&c->blas_lock);
    pthread_mutex_destroy(&c->comm_lock);
    pthread_mutex_destroy(&c->dnn_lock);
    pthread_mutex_destroy(&c->fft_lock);
    pthread_mutex_destroy(&c->solver_lock);
    free(c);
}

/* FF_CUDA_DEVICE=<index> picks the device (default 0). */
static ff_status open_device(cuda_ctx *c)
{
    int count = 0;
    cudaError_t err = cudaGetDeviceCount(&count);
    if (err != cudaSuccess || count == 0)
        return cuda_error(c, FF_ERR_BACKEND,
                          "cuda: no CUDA device found (cudaGetDeviceCount: %s); the cuda backend needs an NVIDIA GPU "
                          "and driver",
                          err != cudaSuccess ? cudaGetErrorString(err) : "0 devices");
    const char *env = getenv("FF_CUDA_DEVICE");
    if (env && *env) {
        char *end = NULL;
        long d = strtol(env, &end, 10);
        if (*end || d < 0 || d >= count)
            return cuda_error(c, FF_ERR_BACKEND, "cuda: FF_CUDA_DEVICE=\"%s\" is not a device index in [0, %d)", env,
                              count);
        c->device = (int)d;
    }
    if ((err = cudaSetDevice(c->device)) != cudaSuccess) return cuda_fail(c, "init", "cudaSetDevice", err);
    struct cudaDeviceProp p;
    if ((err = cudaGetDeviceProperties(&p, c->device)) != cudaSuccess)
        return cuda_fail(c, "init", "cudaGetDeviceProperties", err);
    snprintf(c->name, sizeof c->name, "%s", p.name);
    c->cc_major = p.major;
    c->cc_minor = p.minor;
    c->sm_count = p.multiProcessorCount;
    c->total_mem = p.totalGlobalMem;
    c->smem_optin = p.sharedMemPerBlockOptin > 48 * 1024 ? p.sharedMemPerBlockOptin : 48 * 1024;
    if ((err = cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking)) != cudaSuccess)
        return cuda_fail(c, "init", "cudaStreamCreateWithFlags", err);
    return FF_OK;
}

static ff_status cuda_init(const ff_host_api *host, void **ctx)
{
    if (!host || !host->set_error || !ctx) return FF_ERR_INVALID;
    cuda_ctx *c = calloc(1, sizeof *c);
    if (!c) {
        host->set_error("cuda init: out of memory");
        return FF_ERR_OOM;
    }
    c->host = host;
    pthread_mutex_init(&c->alloc_lock, NULL);
    pthread_mutex_init(&c->staging_lock, NULL);
    pthread_mutex_init(&c->blas_lock, NULL);
    pthread_mutex_init(&c->comm_lock, NULL);
    pthread_mutex_init(&c->dnn_lock, NULL);
    pthread_mutex_init(&c->fft_lock, NULL);
    pthread_mutex_init(&c->solver_lock, NULL);
    const char *env = getenv("FF_CUDA_TF32");
    c->tf32 = env && !strcmp(env, "1");
    ff_status st = open_device(c);
    if (!st) st = cuda_blas_init(c);
    if (st) {
        cuda_shutdown(c);
        return st;
    }
    if (host->log)
        host->log("cuda: %s (sm_%d%d, %d SMs, %zu MiB), TF32 %s", c->name, c->cc_major, c->cc_minor, c->sm_count,
                  c->total_mem >> 20, c->tf32 ? "on" : "off");
    *ctx = c;
    return FF_OK;
}

static ff_status cuda_device_info(void *ctx, char *buf, size_t cap)
{
    cuda_ctx *c = ctx;
    size_t free_b = 0, total_b = 0;
    if (cuda_use_device(c, "device_info") || cudaMemGetInfo(&free_b, &total_b) != cudaSuccess) {
        free_b = 0;
        cudaGetLastError(); /* not left for the next launch check to report */
    }
    char conv[64];
    cuda_dnn_describe(conv, sizeof conv);
    snprintf(buf, cap, "CUDA: %s (device %d, compute capability %d.%d, %d SMs), %zu MiB, %zu MiB free; matmul "
             "through cuBLAS, %s, fft %s, linalg %s, TF32 %s", c->name, c->device, c->cc_major, c->cc_minor,
             c->sm_count, c->total_mem >> 20, free_b >> 20, conv,
             cuda_fft_supported(FF_FFT_FORWARD, FF_F32) ? "through cuFFT" : "not built (no cuFFT)",
             cuda_linalg_supported(FF_LINALG_SOLVE, FF_F32) ? "through cuSOLVER" : "not built (no cuSOLVER)",
             c->tf32 ? "on (FF_CUDA_TF32=1)" : "off");
    return FF_OK;
}

/* DLPack: kDLCUDA and the device index; waits for the whole device (every stream, PyTorch's
 * too), since legacy DLPack hands memory over without a stream handshake. */
static ff_status cuda_dlpack_device(void *ctx, int32_t *device_type, int32_t *device_id)
{
    cuda_ctx *c = ctx;
    ff_status st = cuda_use_device(c, "dlpack_device");
    if (st) return st;
    cudaError_t err = cudaDeviceSynchronize();
    if (err != cudaSuccess) return cuda_fail(c, "dlpack_device", "cudaDeviceSynchronize", err);
    *device_type = 2; /* kDLCUDA */
    *device_id = c->device;
    return FF_OK;
}

/* ---- supports ---------------------------------------------------------------------- */

int cuda_unary_supported(ff_unary_op op, ff_dtype t)
{
    /* LGAMMA: CUDA's double lgamma is several ulps off on (-11, -2.26), beyond the
     * suite's tolerance; declined, the core reports it (README.md) */
    return op != FF_UNARY_LGAMMA && ffb_unary_supported(op, t);
}

static int cuda_supports(void *ctx, ff_op_kind kind, int op, ff_dtype dtype)
{
    (void)ctx;
    /* F16/BF16: copy, fill, attention, layer_norm, matmul, unary, binary, where, reduce, softmax,
     * gather, scan, argsort and fused; the core computes the rest in f32 */
    if (kind == FF_KIND_FILL) return op == 0 && ffb_dtype_storage_ok(dtype);
    if (kind == FF_KIND_COPY)
        return op >= 0 && op < FF_DTYPE_COUNT && ffb_dtype_storage_ok((ff_dtype)op) && ffb_dtype_storage_ok(dtype);
    /* attention loads every float dtype itself and sums F16/BF16 in f32 (cuda_attention.cu) */
    if (kind == FF_KIND_ATTENTION) {
        if (op == FF_ATTENTION_DROPOUT) return cuda_attention_drops(dtype);
        return (op == FF_ATTENTION_FORWARD || op == FF_ATTENTION_BACKWARD) && (ffb_is_float(dtype) || ffb_is_half(dtype));
    }
    /* layer_norm likewise: every float dtype, statistics and arithmetic in double */
    if (kind == FF_KIND_LAYER_NORM) return ffb_layer_norm_supported(op, dtype);
    /* conv2d: cuDNN's F32, F64, F16 and BF16 (f32 sums for the halves), where it is built */
    if (kind == FF_KIND_CONV2D) return cuda_conv2d_supported(op, dtype);
    if (kind == FF_KIND_FFT) return cuda_fft_supported(op, dtype); /* cuFFT, where built */
    if (kind == FF_KIND_LINALG) return cuda_linalg_supported(op, dtype); /* cuSOLVER, where built */
    if (kind == FF_KIND_LINEAR) return cuda_linear_supported(op, dtype); /* cuBLASLt: F32, F16, BF16 */
    /* F16/BF16 follow the F32 rules in matmul (cuBLAS's GemmEx: f32 sums on the tensor
     * cores, one rounding) and in unary, binary, where, reduce and softmax (the general
     * kernels: loads to double, one rounding at the store); gather copies the elements'
     * bytes (an embedding lookup in bf16 without two conversions around it); argsort
     * orders the values as they are (topk and sort of bf16 logits), scan sums in double
     * and rounds each prefix once; fused programs round every value to the half, as the
     * unary and binary kernels round each result */
    if (ffb_is_half(dtype)) {
        if (kind != FF_KIND_MATMUL && kind != FF_KIND_UNARY && kind != FF_KIND_BINARY && kind != FF_KIND_WHERE &&
            kind != FF_KIND_REDUCE && kind != FF_KIND_SOFTMAX && kind != FF_KIND_GATHER && kind != FF_KIND_SORT &&
            kind != FF_KIND_SCAN && kind != FF_KIND_FUSED)
            return 0;
        dtype = cuda_rule_dtype(dtype);
    }
    if (!ffb_dtype_ok(dtype)) return 0;
    switch (kind) {
    case FF_KIND_UNARY: return cuda_unary_supported((ff_unary_op)op, dtype);
    case FF_KIND_BINARY: return ffb_binary_supported((ff_binary_op)op, dtype);
    case FF_KIND_REDUCE: return ffb_reduce_supported((ff_reduce_op)op, dtype);
    case FF_KIND_MATMUL: return op == 0 && dtype != FF_BOOL;
    case FF_KIND_WHERE: return op == 0;
    case FF_KIND_GATHER: return op == 0;
    case FF_KIND_SCATTER_ADD: return op == 0;
    case FF_KIND_RANDOM: return (op == FF_RANDOM_UNIFORM || op == FF_RANDOM_NORMAL) && ffb_is_float(dtype);
    case FF_KIND_SOFTMAX: return (op == 0 || op == 1) && ffb_is_float(dtype);
    case FF_KIND_FUSED: return ffb_fused_supported(op, dtype); /* F32, F64; halves by the F32 rules above */
    case FF_KIND_SCAN: return ffb_scan_supported(op, dtype);
    case FF_KIND_SORT: return ffb_sort_supported(op, dtype);
#ifdef FF_CUDA_NCCL
    case FF_KIND_COLLECTIVE: return cuda_coll_supported(op, dtype);
#endif
    default: return 0; /* batch_norm, pool2d: entries left NULL */
    }
}

static const ff_backend_vtable cuda_vtable = {
    .abi_version = FF_ABI_VERSION,
    .struct_size = (uint32_t)sizeof(ff_backend_vtable),
    .abi_step = FF_ABI_STEP,
#if defined(FF_CUDA_EMU)
    .name = "cuda_emu", /* tests/cuda_emu: the kernels emulated on the host */
#else
    .name = "cuda",
#endif
    .version = "0.1.0",
    .description = "CUDA device backend: cudaMalloc caching allocator, CUDA kernels, cuBLAS matmul",
    .flags = 0, /* buffers are device pointers, never host memory */
    .init = cuda_init,
    .shutdown = cuda_shutdown,
    .supports = cuda_supports,
    .alloc = cuda_alloc,
    .free = cuda_free,
    .upload = cuda_upload,
    .download = cuda_download,
    .sync = cuda_sync,
    .fill = cuda_fill,
    .copy = cuda_copy,
    .unary = cuda_unary,
    .binary = cuda_binary,
    .reduce = cuda_reduce,
    .matmul = cuda_matmul,
    .where = cuda_where,
    .gather = cuda_gather,
    .scatter_add = cuda_scatter_add,
    .random = cuda_random,
    .softmax = cuda_softmax,
    .memory_stats = cuda_memory_stats,
    .empty_cache = cuda_empty_cache,
    .device_info = cuda_device_info,
    .scan = cuda_scan,
    .argsort = cuda_argsort,
    .fused = cuda_fused,
    .dlpack_device = cuda_dlpack_device,
    .attention = cuda_attention,
    .layer_norm = cuda_layer_norm,
    .conv2d = cuda_conv2d,
    .fft = cuda_fft,
    .linalg = cuda_linalg,
    .linear = cuda_linear,
    .graph_record = cuda_graph_record,
    .conv2d_backward_input = cuda_conv2d_backward_input,
    .conv2d_backward_weight = cuda_conv2d_backward_weight,
#ifdef FF_CUDA_NCCL
    .coll_id = cuda_coll_id,
    .coll_init = cuda_coll_init,
    .coll_run = cuda_coll_run,
    .coll_wait = cuda_coll_wait,
    .coll_free = cuda_coll_free,
#endif
};

FF_PLUGIN_EXPORT const ff_backend_vtable *ff_backend_entry(void) { return &cuda_vtable; }
