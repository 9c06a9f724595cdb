/*
 * The opencl backend's private interface: the context, the buffer handle, the kernel
 * table and the helpers the entry files share.
 *
 * Layout of the backend (one concern per file):
 *   ocl_backend.c    vtable, init/shutdown, supports(), messages
 *   ocl_device.c     platform/device choice (FF_OPENCL_DEVICE) and its description
 *   ocl_program.c    the kernel program: op-code prelude + embedded source, disk cache
 *   ocl_mem.c        cl_mem caching allocator, upload/download/sync, memory stats
 *   ocl_launch.c     views -> kernel arguments (dim merging), the locked launch
 *   ocl_elementwise.c fill, copy, unary, binary, where
 *   ocl_reduce.c     reduce, softmax, scan, argsort
 *   ocl_index.c      gather, scatter_add, random
 *   ocl_matmul.c     matmul: CLBlast for f32/f64, the own kernel for integers
 *   ocl_fused.c      the fused entry: the interpreter kernel, or a generated one once hot
 *   ocl_fused_gen.c  the fused entry's kernel source generator
 *   ocl_attention.c  attention: forward and backward, flash style (kernels/attention.cl)
 *   ocl_qmatmul.c    int8 qmatmul: exact int sums, one work-item per output (kernels/qmatmul.cl)
 *   ocl_layer_norm.c layer_norm: a work-group per row, column sums in blocks (kernels/layer_norm.cl)
 *   kernels/         the OpenCL C source (.cl files), embedded at build time
 */
#ifndef FF_OCL_IMPL_H
#define FF_OCL_IMPL_H

#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <pthread.h>

#include "ff/backend_abi.h"
#include "ff_backend_checks.h"

/* A buffer handle (what alloc returns as void *): the cl_mem and its size class. */
typedef struct ocl_buf {
    cl_mem mem;
    size_t nbytes; /* requested */
    size_t cap;    /* the cl_mem's size */
    int cls;       /* size class, or -1 for an uncached block */
    struct ocl_buf *next;
} ocl_buf;

/* The kernels of the program, by index. */
typedef enum ocl_kernel_id {
    OK_FILL, OK_COPY, OK_UNARY, OK_UNARY_F32, OK_BINARY, OK_BINARY_F32, OK_WHERE, OK_REDUCE, OK_REDUCE_FINISH, OK_SOFTMAX,
    OK_INDEX_CHECK, OK_GATHER, OK_SCATTER_ADD, OK_RANDOM, OK_MATMUL, OK_SCAN, OK_ARGSORT, OK_FUSED,
    OK_ATT_FWD, OK_ATT_DQ, OK_ATT_DKV, OK_QMATMUL, OK_QDYN_RANGE, OK_QDYN_FOLD, OK_QDYN_QUANTIZE,
    OK_LN_FWD, OK_LN_BWD, OK_LN_COLS, OK_LN_COLS_SUM, OK_GATHER_ROWS_U8, OK_GATHER_ROWS_U16,
    OK_GATHER_ROWS_U32, OK_GATHER_ROWS_U64, OK_SCATTER_ADD_ROWS_F32, OK_SCATTER_ADD_ROWS_F64,
    OK_SCATTER_ADD_ROWS_CPU_F32, OK_SCATTER_ADD_ROWS_CPU_F64, OK_SUM_ROWS_F32, OK_SUM_ROWS_F64, OK_COUNT
} ocl_kernel_id;

#define OCL_NCLASS 160

typedef struct ocl_fused_kernel ocl_fused_kernel; /* ocl_fused.c */

typedef struct ocl_ctx {
    const ff_host_api *host;
    cl_platform_id platform;
    cl_device_id device;
    cl_context context;
    cl_command_queue queue;
    cl_program program;
    cl_kernel kernels[OK_COUNT];
    pthread_mutex_t launch_lock; /* clSetKernelArg + enqueue are one step per kernel object */
    /* the device, for ff-info and messages */
    char platform_name[128], device_name[128], device_version[128];
    cl_ulong global_mem, max_alloc;
    cl_uint compute_units;
    int cpu_device; /* CL_DEVICE_TYPE_CPU (PoCL): kernels shaped for a few wide cores */
    size_t max_wg;
    /* allocator (ocl_mem.c) */
    pthread_mutex_t alloc_lock;
    ocl_buf *free_list[OCL_NCLASS];
    size_t in_use, cached, peak, cache_max;
    /* poison mode (FF_POISON_FREED, ocl_mem.c): freed buffers, poisoned, out of reuse
     * until the queue has drained */
    int poison;
    ocl_buf *quarantine;
    size_t n_quarantined, quarantined; /* buffers, bytes */
    /* the fused entry's signatures seen and their generated kernels (ocl_fused.c) */
    pthread_mutex_t fused_lock;
    ocl_fused_kernel *fused;
    int n_fused;
    int fused_mode; /* FF_OPENCL_FUSED: OCL_FUSED_AUTO, _JIT (always generate), _INTERP (never) */
} ocl_ctx;

enum { OCL_FUSED_AUTO, OCL_FUSED_JIT, OCL_FUSED_INTERP };

/* The kernels' view struct (kernels/common.cl: kview), field for field. */
typedef struct ocl_kview {
    cl_long offset;
    cl_long shape[FF_MAX_DIMS];
    cl_long strides[FF_MAX_DIMS];
    cl_int ndim;
    cl_int dtype;
} ocl_kview;

/* ---- messages (ocl_backend.c) ---- */
ff_status ocl_error(ocl_ctx *c, ff_status st, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
const char *ocl_cl_error_name(cl_int err);
/* "opencl <entry>: <call> failed: CL_... (n)"; FF_ERR_OOM for the out-of-memory codes. */
ff_status ocl_cl_fail(ocl_ctx *c, const char *entry, const char *call, cl_int err);
ff_status ocl_check_view(ocl_ctx *c, const char *entry, const char *what, const ff_view *v);
/* The same for the entries that take F16/BF16 too (copy, fill and those ocl_supports
 * lists for half). */
ff_status ocl_check_storage_view(ocl_ctx *c, const char *entry, const char *what, const ff_view *v);
/* The dtype whose rules (ops, accumulation) an F16/BF16 view follows: F32. The kernels
 * compute half in double as every float, rounding once at the store. */
static inline ff_dtype ocl_rule_dtype(ff_dtype t) { return ffb_is_half(t) ? FF_F32 : t; }
int ocl_same_shape(const ff_view *a, const ff_view *b);
ff_status ocl_shape_error(ocl_ctx *c, const char *entry, const ff_view *a, const ff_view *b);

/* ---- device and program ---- */
ff_status ocl_device_open(ocl_ctx *c);
ff_status ocl_program_build(ocl_ctx *c);
/* common.cl + formulas.cl + kernel_src, built for the device (through the disk cache). */
ff_status ocl_program_build_fused(ocl_ctx *c, const char *kernel_src, cl_program *out);
void ocl_program_release(ocl_ctx *c);

/* ---- memory (ocl_mem.c) ---- */
void *ocl_alloc(void *ctx, size_t nbytes);
void ocl_free(void *ctx, void *buf);
ff_status ocl_upload(void *ctx, void *buf, size_t byte_offset, const void *host, size_t nbytes);
ff_status ocl_download(void *ctx, const void *buf, size_t byte_offset, void *host, size_t nbytes);
ff_status ocl_sync(void *ctx);
ff_status ocl_memory_stats(void *ctx, size_t *in_use, size_t *cached, size_t *peak);
ff_status ocl_empty_cache(void *ctx);
void ocl_alloc_destroy(ocl_ctx *c);
static inline cl_mem ocl_mem_of(const void *buf) { return buf ? ((const ocl_buf *)buf)->mem : NULL; }
/* Poison mode: 1 if m is a buffer freed and still in quarantine (a use after free). */
int ocl_mem_freed(ocl_ctx *c, cl_mem m);

/* ---- launching (ocl_launch.c) ---- */
/* The kernel view of v, with v's buffer. */
ocl_kview ocl_kview_of(const ff_view *v);
/* Drops size-1 dims and merges dims that are contiguous in all n views (same shape). */
void ocl_kview_merge(ocl_kview *vs, int n);
/* One kernel argument: its size and address (for a cl_mem, sizeof(cl_mem) and &mem). */
typedef struct ocl_arg { size_t size; const void *ptr; } ocl_arg;
#define OCL_ARG(x) ((ocl_arg){sizeof(x), &(x)})
/* Sets the arguments and enqueues kernel k over `global` work-items in groups of
 * `local` (0: the runtime picks). */
ff_status ocl_launch(ocl_ctx *c, const char *entry, ocl_kernel_id k, const ocl_arg *args, int nargs, size_t global,
                     size_t local);
/* The same for a kernel outside the table (the fused entry's). */
ff_status ocl_launch_kernel(ocl_ctx *c, const char *entry, cl_kernel kern, const ocl_arg *args, int nargs,
                            size_t global, size_t local);
/* Kernel k over a 3-D range of exactly len x n2 x n1 work-items (get_global_id(0) along a
 * row, dims 1 and 2 the row's position in two leading dims), in groups of up to 64 along
 * the row and 1024 in all that divide it: the row kernels, whose items then need no
 * division to find their row nor a range guard, and which PoCL vectorizes along dim 0
 * (a row of odd length gets groups of one along it: correct, not fast). */
ff_status ocl_launch_rows(ocl_ctx *c, const char *entry, ocl_kernel_id k, const ocl_arg *args, int nargs, size_t len,
                          size_t n2, size_t n1);
/* A merged view's first `lead` (0 to 2) dims as the row kernels take them: the offset,
 * and the sizes and strides of an outer dim (n1, s1) and an inner one (n2, s2), absent
 * ones of size 1 and stride 0. */
typedef struct ocl_lead2 {
    cl_long off, n1, s1, n2, s2;
} ocl_lead2;
ocl_lead2 ocl_lead2_of(const ocl_kview *v, int lead);
/* Work-items for a grid-stride loop over n elements. */
size_t ocl_grid(const ocl_ctx *c, int64_t n);

/* ---- compute entries ---- */
ff_status ocl_fill(void *ctx, const ff_view *dst, ff_scalar value);
ff_status ocl_copy(void *ctx, const ff_view *dst, const ff_view *src);
ff_status ocl_unary(void *ctx, ff_unary_op op, const ff_view *dst, const ff_view *src);
ff_status ocl_binary(void *ctx, ff_binary_op op, const ff_view *dst, const ff_view *a, const ff_view *b);
ff_status ocl_where(void *ctx, const ff_view *dst, const ff_view *cond, const ff_view *a, const ff_view *b);
ff_status ocl_reduce(void *ctx, ff_reduce_op op, const ff_view *dst, const ff_view *src, uint32_t axes_mask);
ff_status ocl_softmax(void *ctx, const ff_view *dst, const ff_view *src, int axis, int want_log);
ff_status ocl_scan(void *ctx, int op, const ff_view *dst, const ff_view *src, int axis);
ff_status ocl_argsort(void *ctx, const ff_view *dst, const ff_view *src, int axis, int descending);
ff_status ocl_gather(void *ctx, const ff_view *dst, const ff_view *src, const ff_view *index, int axis);
ff_status ocl_scatter_add(void *ctx, const ff_view *dst, const ff_view *index, const ff_view *src, int axis);
ff_status ocl_random(void *ctx, const ff_view *dst, ff_random_dist dist, uint64_t seed, uint64_t counter_base,
                     double p0, double p1);
ff_status ocl_matmul(void *ctx, const ff_view *dst, const ff_view *a, const ff_view *b);
int ocl_matmul_supported(ff_dtype t);
const char *ocl_matmul_engine(void); /* "CLBlast" or "own kernel" */
ff_status ocl_fused(void *ctx, const ff_fused_program *prog);
ff_status ocl_qmatmul(void *ctx, const ff_view *dst, const ff_view *src, int n_src, const ff_qmatmul_params *p);
ff_status ocl_attention(void *ctx, int op, const ff_view *dst, int n_dst, const ff_view *src, int n_src,
                        const ff_attention_params *p);
ff_status ocl_layer_norm(void *ctx, int op, const ff_view *dst, int n_dst, const ff_view *src, int n_src, double eps);
void ocl_fused_release(ocl_ctx *c); /* the kernel cache, at shutdown */

/* ---- the fused entry's signatures and generated kernels (ocl_fused_gen.c) ---- */
/* A signature: dtype, merged rank, slots (views in use), load set (slots read before
 * written), store set (slots written), layout numbers as arguments (1) or in a buffer
 * (0); then 4 ints per instruction: {op, or FF_UNARY_COUNT + op for a binary one; dst;
 * src0; src1}, values numbered slots 0 .. slots-1, temporaries above. */
#define OCL_SIG_HEAD 6
/* Layout numbers passed as kernel arguments up to this many: with 16 buffers and numel,
 * 904 bytes, under the 1024 that OpenCL 1.2 guarantees for a kernel's arguments. */
#define OCL_FUSED_ARG_LONGS 96
/* Where each layout number goes in a generated kernel's list of them: the sizes of dims
 * 1 .. ndim-1 (dim 0 needs none), then per slot its offset and strides. The host fills
 * the list, the generated code names its entries, both through this one numbering. */
typedef struct ocl_layout_map {
    int size[FF_MAX_DIMS];
    int offset[FF_FUSED_MAX_VIEWS];
    int stride[FF_FUSED_MAX_VIEWS][FF_MAX_DIMS];
    int count;
} ocl_layout_map;
void ocl_layout_map_of(int ndim, int nu, ocl_layout_map *m);
/* The OpenCL C of kernel ff_fused_k for signature sig (n_sig ints); malloc'd, NULL when
 * out of memory. */
char *ocl_fused_source(const int *sig, int n_sig);

#endif /* FF_OCL_IMPL_H */
