/*
 * The opencl backend: vtable, lifecycle, supports() and messages.
 *
 * Buffers are cl_mem handles on the chosen device (not host memory: flags is 0), all
 * work goes into one in-order queue, and every entry returns once its commands are
 * enqueued; download() and sync() are where the host waits. See README.md.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ocl_impl.h"
#include "ff_backend_fused.h"
#include "ff_backend_lines.h"

ff_status ocl_error(ocl_ctx *c, ff_status st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    st = ffb_verror(c ? c->host : NULL, st, fmt, ap);
    va_end(ap);
    return st;
}

const char *ocl_cl_error_name(cl_int err)
{
    switch (err) {
#define E(x) case x: return #x;
    E(CL_DEVICE_NOT_FOUND) E(CL_DEVICE_NOT_AVAILABLE) E(CL_COMPILER_NOT_AVAILABLE)
    E(CL_MEM_OBJECT_ALLOCATION_FAILURE) E(CL_OUT_OF_RESOURCES) E(CL_OUT_OF_HOST_MEMORY)
    E(CL_BUILD_PROGRAM_FAILURE) E(CL_INVALID_VALUE) E(CL_INVALID_DEVICE) E(CL_INVALID_CONTEXT)
    E(CL_INVALID_COMMAND_QUEUE) E(CL_INVALID_MEM_OBJECT) E(CL_INVALID_BINARY) E(CL_INVALID_PROGRAM)
    E(CL_INVALID_KERNEL_NAME) E(CL_INVALID_KERNEL) E(CL_INVALID_ARG_INDEX) E(CL_INVALID_ARG_VALUE)
    E(CL_INVALID_ARG_SIZE) E(CL_INVALID_KERNEL_ARGS) E(CL_INVALID_WORK_GROUP_SIZE)
    E(CL_INVALID_WORK_ITEM_SIZE) E(CL_INVALID_GLOBAL_WORK_SIZE) E(CL_INVALID_BUFFER_SIZE)
    E(CL_INVALID_PLATFORM) E(CL_MISALIGNED_SUB_BUFFER_OFFSET)
    E(CL_INVALID_OPERATION) E(CL_INVALID_EVENT_WAIT_LIST)
#undef E
    default: return "an OpenCL error";
    }
}

ff_status ocl_cl_fail(ocl_ctx *c, const char *entry, const char *call, cl_int err)
{
    ff_status st = err == CL_MEM_OBJECT_ALLOCATION_FAILURE || err == CL_OUT_OF_RESOURCES || err == CL_OUT_OF_HOST_MEMORY
                       ? FF_ERR_OOM
                       : FF_ERR_BACKEND;
    return ocl_error(c, st, "opencl %s: %s failed: %s (%d)", entry, call, ocl_cl_error_name(err), (int)err);
}

ff_status ocl_check_view(ocl_ctx *c, const char *entry, const char *what, const ff_view *v)
{
    return ffb_check_view(c ? c->host : NULL, "opencl", entry, what, v);
}

ff_status ocl_check_storage_view(ocl_ctx *c, const char *entry, const char *what, const ff_view *v)
{
    return ffb_check_view_as(c ? c->host : NULL, "opencl", entry, what, v, 1);
}

int ocl_same_shape(const ff_view *a, const ff_view *b) { return ffb_same_shape(a, b); }

ff_status ocl_shape_error(ocl_ctx *c, const char *entry, const ff_view *a, const ff_view *b)
{
    char sa[160], sb[160];
    ffb_shape_str(a, sa, sizeof sa);
    ffb_shape_str(b, sb, sizeof sb);
    return ocl_error(c, FF_ERR_INVALID, "opencl %s: shapes %s and %s do not match", entry, sa, sb);
}

/* ---- lifecycle ------------------------------------------------------------------- */

static void ocl_shutdown(void *ctx)
{
    ocl_ctx *c = ctx;
    if (!c) return;
    if (c->queue) clFinish(c->queue);
    ocl_alloc_destroy(c);
    ocl_fused_release(c);
    ocl_program_release(c);
    if (c->queue) clReleaseCommandQueue(c->queue);
    if (c->context) clReleaseContext(c->context);
    pthread_mutex_destroy(&c->launch_lock);
    pthread_mutex_destroy(&c->alloc_lock);
    pthread_mutex_destroy(&c->fused_lock);
    free(c);
}

static ff_status ocl_init(const ff_host_api *host, void **ctx)
{
    if (!host || !host->set_error || !ctx) return FF_ERR_INVALID;
    ocl_ctx *c = calloc(1, sizeof *c);
    if (!c) {
        host->set_error("opencl init: out of memory");
        return FF_ERR_OOM;
    }
    c->host = host;
    pthread_mutex_init(&c->launch_lock, NULL);
    pthread_mutex_init(&c->alloc_lock, NULL);
    pthread_mutex_init(&c->fused_lock, NULL);
    const char *env = getenv("FF_CACHE_MAX_MB");
    c->cache_max = env && *env ? (size_t)strtoull(env, NULL, 10) << 20 : 0; /* 0: set from the device below */
    env = getenv("FF_POISON_FREED"); /* ff-conformance sets it: ocl_mem.c, "Poison mode" */
    c->poison = env && *env && strcmp(env, "0") != 0;
    env = getenv("FF_OPENCL_FUSED");
    c->fused_mode = env && !strcmp(env, "jit") ? OCL_FUSED_JIT
                    : env && !strcmp(env, "interp") ? OCL_FUSED_INTERP
                                                    : OCL_FUSED_AUTO;
    ff_status st = ocl_device_open(c);
    if (!st) st = ocl_program_build(c);
    if (st) {
        ocl_shutdown(c);
        return st;
    }
    if (!c->cache_max) c->cache_max = (size_t)(c->global_mem / 2);
    if (host->log)
        host->log("opencl: %s on %s (%u compute units, %llu MiB), matmul through %s", c->device_name,
                  c->platform_name, c->compute_units, (unsigned long long)(c->global_mem >> 20), ocl_matmul_engine());
    *ctx = c;
    return FF_OK;
}

static ff_status ocl_device_info(void *ctx, char *buf, size_t cap)
{
    ocl_ctx *c = ctx;
    snprintf(buf, cap, "OpenCL: %s on %s (%s), %llu MiB, %u compute units; matmul through %s", c->device_name,
             c->platform_name, c->device_version, (unsigned long long)(c->global_mem >> 20), c->compute_units,
             ocl_matmul_engine());
    return FF_OK;
}

/* ---- supports ---------------------------------------------------------------------- */

static int ocl_supports(void *ctx, ff_op_kind kind, int op, ff_dtype dtype)
{
    (void)ctx;
    if (kind == FF_KIND_FILL) return op == 0 && ffb_dtype_storage_ok(dtype);
    if (kind == FF_KIND_COPY)
        return ffb_dtype_storage_ok(dtype) && op >= 0 && op < FF_DTYPE_COUNT && ffb_dtype_storage_ok((ff_dtype)op);
    /* F16/BF16: the kernels load them as double, compute as every float and round once at
     * the store. Declined, so the core computes them in f32: matmul (CLBlast's half gemm
     * needs cl_khr_fp16), scatter_add and scan (rounding per addition in half is not the
     * detour's one rounding of f32 sums), random (the reference's half sample is the f32
     * sample rounded), argsort and fused programs. */
    if (ffb_is_half(dtype)) {
        switch (kind) {
        case FF_KIND_UNARY: return ffb_unary_supported((ff_unary_op)op, FF_F32);
        case FF_KIND_BINARY: return ffb_binary_supported((ff_binary_op)op, FF_F32);
        case FF_KIND_REDUCE: return ffb_reduce_supported((ff_reduce_op)op, FF_F32);
        case FF_KIND_WHERE: case FF_KIND_GATHER: return op == 0;
        case FF_KIND_SOFTMAX: return op == 0 || op == 1;
        case FF_KIND_ATTENTION: return op == FF_ATTENTION_FORWARD || op == FF_ATTENTION_BACKWARD;
        case FF_KIND_LAYER_NORM: return op == 0 || op == 1;
        default: return 0;
        }
    }
    if (!ffb_dtype_ok(dtype)) return 0;
    switch (kind) {
    case FF_KIND_UNARY: return ffb_unary_supported((ff_unary_op)op, dtype);
    case FF_KIND_BINARY: return ffb_binary_supported((ff_binary_op)op, dtype);
    case FF_KIND_REDUCE: return ffb_reduce_supported((ff_reduce_op)op, dtype);
    case FF_KIND_MATMUL: return op == 0 && ocl_matmul_supported(dtype);
    case FF_KIND_WHERE: return op == 0;
    case FF_KIND_GATHER: return op == 0;
    case FF_KIND_SCATTER_ADD: return op == 0;
    case FF_KIND_RANDOM: return (op == FF_RANDOM_UNIFORM || op == FF_RANDOM_NORMAL) && ffb_is_float(dtype);
    case FF_KIND_SOFTMAX: return (op == 0 || op == 1) && ffb_is_float(dtype);
    case FF_KIND_SCAN: return ffb_scan_supported(op, dtype);
    case FF_KIND_SORT: return ffb_sort_supported(op, dtype);
    case FF_KIND_FUSED: return ffb_fused_supported(op, dtype); /* f32, f64: init requires cl_khr_fp64 */
    case FF_KIND_ATTENTION: /* dropout on F32/F64 only: half's mask rounds as half */
        return (op == FF_ATTENTION_FORWARD || op == FF_ATTENTION_BACKWARD || op == FF_ATTENTION_DROPOUT) &&
               ffb_is_float(dtype);
    case FF_KIND_QMATMUL: return (op == 0 && dtype == FF_U8) || (op == FF_QMATMUL_DYNAMIC && dtype == FF_F32);
    case FF_KIND_LAYER_NORM: return (op == 0 || op == 1) && ffb_is_float(dtype); /* stats in double: fp64 is required */
    default: return 0;
    }
}

static const ff_backend_vtable ocl_vtable = {
    .abi_version = FF_ABI_VERSION,
    .struct_size = (uint32_t)sizeof(ff_backend_vtable),
    .abi_step = FF_ABI_STEP,
    .name = "opencl",
    .version = "0.1.0",
    .description = "OpenCL device backend: cl_mem buffers, OpenCL C kernels, CLBlast matmul",
    .flags = 0, /* buffers are cl_mem handles, never host pointers */
    .init = ocl_init,
    .shutdown = ocl_shutdown,
    .supports = ocl_supports,
    .alloc = ocl_alloc,
    .free = ocl_free,
    .upload = ocl_upload,
    .download = ocl_download,
    .sync = ocl_sync,
    .fill = ocl_fill,
    .copy = ocl_copy,
    .unary = ocl_unary,
    .binary = ocl_binary,
    .reduce = ocl_reduce,
    .matmul = ocl_matmul,
    .where = ocl_where,
    .gather = ocl_gather,
    .scatter_add = ocl_scatter_add,
    .random = ocl_random,
    .softmax = ocl_softmax,
    .memory_stats = ocl_memory_stats,
    .empty_cache = ocl_empty_cache,
    .device_info = ocl_device_info,
    .scan = ocl_scan,
    .argsort = ocl_argsort,
    .fused = ocl_fused,
    .attention = ocl_attention,
    .qmatmul = ocl_qmatmul,
    .layer_norm = ocl_layer_norm,
};

FF_PLUGIN_EXPORT const ff_backend_vtable *ff_backend_entry(void) { return &ocl_vtable; }
