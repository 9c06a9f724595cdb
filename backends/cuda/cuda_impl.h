/*
 * The cuda backend's private interface: the context, the allocator's block, the walk
 * struct the kernels receive by value, and the functions the entry files share.
 * Included by the C files (host code, the project's -Werror flags) and by the .cu
 * files (kernels and the entries that launch them), hence the extern "C".
 *
 * Layout of the backend (one concern per file):
 *   cuda_backend.c      vtable, init/shutdown, supports(), device_info, messages
 *   cuda_mem.c          caching allocator over cudaMalloc, pinned staging, upload/download/sync
 *   cuda_walk.c         views -> walks (dim dropping and merging), shared by every entry
 *   cuda_matmul.c       matmul: cuBLAS for f32/f64 (transposes from strides), the integer kernel
 *   cuda_conv.c         conv2d and its two backward passes through cuDNN (where it is built)
 *   cuda_fft.c          the fft entry through cuFFT (where it is built)
 *   cuda_linalg.c       the linalg entry through cuSOLVER, in f64 (where it is built)
 *   cuda_linear.c       the linear entry: cuBLASLt with its bias/ReLU epilogues
 *   cuda_fused.c        the fused entry's checks and packing (the kernel: cuda_elementwise.cu)
 *   cuda_coll.c         collectives between processes (ff_dist) over NCCL, opened with dlopen
 *   cuda_graph.c        graph_record: runs of a captured graph's launches as CUDA graphs
 *   cuda_elementwise.cu fill, copy, unary, binary, where
 *   cuda_reduce.cu      reduce (warp shuffles, two passes for long rows), softmax
 *   cuda_index.cu       gather, scatter_add, random, the integer matmul kernel
 *   cuda_lines.cu       scan (cumsum/cumprod) and argsort, one thread per line
 *   cuda_attention.cu   attention, forward and backward, flash style (shared tiles, warp shuffles);
 *                       its f32 register tiles in cuda_attention_tiled.cuh, its half
 *                       tensor-core kernels in cuda_attention_mma.cuh (over cuda_mma.cuh)
 *   cuda_layer_norm.cu  layer_norm, forward and backward (a block per row, column sums in order)
 *   cuda_device.cuh     device helpers: the walk's element offsets, the launch grid
 *   cuda_reduce_acc.h   how reduce's partial accumulators combine (host+device)
 * The per-element formulas are backends/common/ff_backend_scalar.h itself, compiled for
 * the device (its FFB_HD functions), so values agree with the reference by construction.
 */
#ifndef FF_CUDA_IMPL_H
#define FF_CUDA_IMPL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#include "ff/backend_abi.h"
#include "ff_backend_checks.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One cudaMalloc'd segment is carved into blocks (split large segments, one block per
 * small segment). Blocks of a segment are linked in address order so a freed block
 * merges with free neighbours. */
typedef struct cuda_block {
    char *ptr;
    size_t size;       /* bytes this block spans */
    size_t requested;  /* what alloc asked for, while in use */
    int free;          /* in a free list */
    int large;         /* in the large pool (splittable), else a small size class */
    struct cuda_block *seg_prev, *seg_next; /* neighbours in the same segment */
    struct cuda_block *next;                /* free-list or hash-chain link */
} cuda_block;

#define CUDA_NCLASS 64       /* small size classes: 4 per power of two, 512 B .. 1 MiB */
#define CUDA_HASH 4096       /* buckets of the pointer -> live block map */

typedef struct cuda_ctx {
    const ff_host_api *host;
    int device;
    cudaStream_t stream;
    void *cublas; /* cublasHandle_t, created in cuda_matmul.c */
    void *cublaslt; /* cublasLtHandle_t (cuda_linear.c), made at the first linear call, under blas_lock */
    struct cuda_lt_cache *lt_cache; /* cuda_linear.c: the heuristic's answers by shape, under blas_lock */
    pthread_mutex_t blas_lock; /* a cuBLAS handle is not for concurrent calls */
    int tf32;                 /* FF_CUDA_TF32=1 */
    /* the device, for ff-info and messages */
    char name[256];
    int cc_major, cc_minor, sm_count;
    size_t total_mem;
    size_t smem_optin; /* shared memory a block may opt in to (the attention kernels' tiles) */
    /* allocator (cuda_mem.c) */
    pthread_mutex_t alloc_lock;
    cuda_block *small_free[CUDA_NCLASS];
    cuda_block *large_free;
    cuda_block *live[CUDA_HASH];
    size_t in_use, cached, peak;
    /* pinned staging buffer for upload/download */
    pthread_mutex_t staging_lock;
    void *staging;
    size_t staging_size;
    /* cuDNN (cuda_conv.c): the handle and its algorithm cache, made at the first convolution */
    pthread_mutex_t dnn_lock;
    struct cuda_dnn *dnn;
    /* cuFFT (cuda_fft.c): cached plans, made at the first transform */
    pthread_mutex_t fft_lock;
    struct cuda_fft_plans *fft;
    /* cuSOLVER (cuda_linalg.c): its handle, made at the first linalg call */
    pthread_mutex_t solver_lock;
    void *solver;
    /* NCCL groups still open (cuda_coll.c), freed at shutdown */
    pthread_mutex_t comm_lock;
    struct cuda_comm *comms;
    /* a graph_record recording (cuda_graph.c) and the thread that opened it, under alloc_lock */
    struct cuda_record *recording;
    pthread_t recorder;
} cuda_ctx;
typedef struct cuda_record cuda_record;
typedef struct cuda_comm cuda_comm;

/* ---- messages (cuda_backend.c) ---- */
ff_status cuda_error(cuda_ctx *c, ff_status st, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
/* "cuda <entry>: <call> failed: <name>: <string>"; FF_ERR_OOM for cudaErrorMemoryAllocation. */
ff_status cuda_fail(cuda_ctx *c, const char *entry, const char *call, cudaError_t err);
/* The error of the last launch (cudaGetLastError), as cuda_fail. */
ff_status cuda_launch_check(cuda_ctx *c, const char *entry, const char *kernel);
/* Makes c's device current on the calling thread (the runtime's device is per thread). */
ff_status cuda_use_device(cuda_ctx *c, const char *entry);
ff_status cuda_check_view(cuda_ctx *c, const char *entry, const char *what, const ff_view *v, int half_ok);
/* The dtype whose rules (which ops, which results) a view follows: F16/BF16 compute as
 * F32 does (loaded to double, rounded once at the store), in the entries that take them. */
static inline ff_dtype cuda_rule_dtype(ff_dtype t) { return ffb_is_half(t) ? FF_F32 : t; }
/* The device address of v's first element (what a library call takes). */
static inline void *cuda_view_ptr(const ff_view *v) { return (char *)v->buf + v->offset * (int64_t)ff_dtype_size(v->dtype); }
ff_status cuda_shape_error(cuda_ctx *c, const char *entry, const ff_view *a, const ff_view *b);

/* ---- memory (cuda_mem.c) ---- */
void *cuda_alloc(void *ctx, size_t nbytes);
void cuda_free(void *ctx, void *buf);
ff_status cuda_upload(void *ctx, void *buf, size_t byte_offset, const void *host, size_t nbytes);
ff_status cuda_download(void *ctx, const void *buf, size_t byte_offset, void *host, size_t nbytes);
ff_status cuda_sync(void *ctx);
ff_status cuda_memory_stats(void *ctx, size_t *in_use, size_t *cached, size_t *peak);
ff_status cuda_empty_cache(void *ctx);
void cuda_alloc_destroy(cuda_ctx *c);
/* A device temporary through the cache (set_error'd on failure) and its release. */
void *cuda_temp(cuda_ctx *c, const char *entry, size_t nbytes);
/* cuda_graph.c, called by the allocator under alloc_lock: 1 when buf (a block of cap
 * bytes) is a temporary freed while this thread records (the record keeps it until it is
 * released), else 0 (cuda_free frees it); and a kept block of at least nbytes for a later
 * call of the same recording, or NULL. */
int cuda_record_keep_locked(cuda_ctx *c, void *buf, size_t cap);
void *cuda_record_reuse_locked(cuda_ctx *c, size_t nbytes);
ff_status cuda_graph_record(void *ctx, int op, void **handle);

/* ---- walks (cuda_walk.c) ---- */
/* What a kernel receives by value: one shape, and per operand an element offset and
 * strides. Element n (row-major over shape) of operand i lives at
 * offset[i] + sum_d idx_d(n) * strides[i][d] elements into its buffer. */
#define CUDA_WALK_MAX 4
typedef struct cuda_walk {
    int32_t ndim, nv;
    int64_t shape[FF_MAX_DIMS];
    int64_t offset[CUDA_WALK_MAX];
    int64_t strides[CUDA_WALK_MAX][FF_MAX_DIMS];
} cuda_walk;

#if defined(__CUDACC__)
#define CUDA_HD __host__ __device__ __forceinline__
#else
#define CUDA_HD inline
#endif

/* Offsets of element n (row-major over w's shape) for the first nv operands of w, 64-bit
 * indexing throughout. The kernels' index math, also compiled into the host unit test
 * (tests/unit/test_cuda_walk.c), which checks it against the views it came from. */
static CUDA_HD void cuda_walk_offsets(const cuda_walk *w, int64_t n, int nv, int64_t *off)
{
    for (int i = 0; i < nv; i++) off[i] = w->offset[i];
    if (w->ndim == 1) {
        for (int i = 0; i < nv; i++) off[i] += n * w->strides[i][0];
        return;
    }
    for (int d = w->ndim - 1; d >= 0; d--) {
        int64_t s = w->shape[d], q = n / s, k = n - q * s;
        n = q;
        for (int i = 0; i < nv; i++) off[i] += k * w->strides[i][d];
    }
}

/* The walk of n views of one shape (vs[0]'s), size-1 dims dropped and dims that are
 * contiguous in every view merged: contiguous, broadcast-scalar and most permuted
 * operands end up rank 0 or 1. */
cuda_walk cuda_walk_of(const ff_view *const *vs, int n);
/* Drops size-1 dims and merges mergeable ones in place. */
void cuda_walk_merge(cuda_walk *w);
/* reduce's two walks: outer (src, dst) over the dims not in mask (the rows, dst's
 * elements), inner (src) over those in it (a row, row-major); both merged. Element k of
 * row r is at outer offset[0] + inner offset[0] - src->offset. */
void cuda_walk_split(const ff_view *dst, const ff_view *src, uint32_t mask, cuda_walk *outer, cuda_walk *inner);
/* 1 when every operand of w is dense (rank <= 1, stride 1 or rank 0). */
int cuda_walk_dense(const cuda_walk *w);
int64_t cuda_walk_numel(const cuda_walk *w);

/* ---- compute entries ---- */
ff_status cuda_fill(void *ctx, const ff_view *dst, ff_scalar value);
ff_status cuda_copy(void *ctx, const ff_view *dst, const ff_view *src);
ff_status cuda_unary(void *ctx, ff_unary_op op, const ff_view *dst, const ff_view *src);
ff_status cuda_binary(void *ctx, ff_binary_op op, const ff_view *dst, const ff_view *a, const ff_view *b);
ff_status cuda_where(void *ctx, const ff_view *dst, const ff_view *cond, const ff_view *a, const ff_view *b);
ff_status cuda_reduce(void *ctx, ff_reduce_op op, const ff_view *dst, const ff_view *src, uint32_t axes_mask);
ff_status cuda_softmax(void *ctx, const ff_view *dst, const ff_view *src, int axis, int want_log);
ff_status cuda_gather(void *ctx, const ff_view *dst, const ff_view *src, const ff_view *index, int axis);
ff_status cuda_scatter_add(void *ctx, const ff_view *dst, const ff_view *index, const ff_view *src, int axis);
ff_status cuda_random(void *ctx, const ff_view *dst, ff_random_dist dist, uint64_t seed, uint64_t counter_base,
                      double p0, double p1);
ff_status cuda_matmul(void *ctx, const ff_view *dst, const ff_view *a, const ff_view *b);
ff_status cuda_blas_init(cuda_ctx *c);
/* The matrix (last two dims, rows x cols) of v as cuBLAS can read it: row-major with
 * leading dimension *ld (*col_major = 0) or column-major (*col_major = 1); 0 if neither. */
int cuda_mat_layout(const ff_view *v, int64_t rows, int64_t cols, int *col_major, int64_t *ld);
/* A contiguous temporary standing in for v (*out views it; fill_it: v's values copied
 * in); NULL on failure. */
void *cuda_contiguous_copy(cuda_ctx *c, const ff_view *v, ff_view *out, int fill_it);
/* An operand of rows x cols as cuBLAS reads it: *v in place (*tmp NULL), or a row-major
 * copy (*tmp, viewed by *copy, *v pointed at it); *cm and *ld as cuda_mat_layout says. */
ff_status cuda_mat_operand(cuda_ctx *c, const ff_view **v, int64_t rows, int64_t cols, ff_view *copy, void **tmp,
                           int *cm, int64_t *ld);
void cuda_blas_destroy(cuda_ctx *c);
/* The integer product (cuda_index.cu): dst = a @ b for one batch walk over the leading
 * dims (w: dst, a, b over dst's batch shape), wrapping in 64 bits. */
ff_status cuda_matmul_int(cuda_ctx *c, const ff_view *dst, const ff_view *a, const ff_view *b);

/* The fused entry (cuda_fused.c checks and packs, cuda_elementwise.cu runs): the program
 * by value, one thread per element, temporaries in the thread's registers/local memory. */
#define CUDA_FUSED_MAX_INST 64
typedef struct cuda_fused_args {
    int32_t dtype, ndim, n_views, n_inst;
    int64_t shape[FF_MAX_DIMS];
    void *buf[FF_FUSED_MAX_VIEWS];
    int64_t offset[FF_FUSED_MAX_VIEWS];
    int64_t strides[FF_FUSED_MAX_VIEWS][FF_MAX_DIMS];
    uint8_t inst[CUDA_FUSED_MAX_INST][5]; /* kind (0 unary, 1 binary), op, dst, src0, src1 */
} cuda_fused_args;
ff_status cuda_fused(void *ctx, const ff_fused_program *prog);
ff_status cuda_scan(void *ctx, int op, const ff_view *dst, const ff_view *src, int axis);
ff_status cuda_argsort(void *ctx, const ff_view *dst, const ff_view *src, int axis, int descending);
ff_status cuda_fused_launch(cuda_ctx *c, const cuda_fused_args *a, int64_t numel);
int cuda_attention_drops(ff_dtype t); /* nonzero: the dtypes whose attention entry honors dropout */
ff_status cuda_attention(void *ctx, int op, const ff_view *dst, int n_dst, const ff_view *src, int n_src,
                         const ff_attention_params *p);
/* conv2d (cuda_conv.c): cuDNN where FF_CUDA_CUDNN is built, else declined */
int cuda_conv2d_supported(int which, ff_dtype t);
ff_status cuda_conv2d(void *ctx, const ff_view *y, const ff_view *x, const ff_view *w, const ff_conv2d_params *p);
ff_status cuda_conv2d_backward_input(void *ctx, const ff_view *gx, const ff_view *gy, const ff_view *w,
                                     const ff_conv2d_params *p);
ff_status cuda_conv2d_backward_weight(void *ctx, const ff_view *gw, const ff_view *gy, const ff_view *x,
                                      const ff_conv2d_params *p);
void cuda_dnn_destroy(cuda_ctx *c);
/* "conv2d through cuDNN 9.19.0" or "conv2d composed (built without cuDNN)", for device_info */
void cuda_dnn_describe(char *buf, size_t cap);
/* fft (cuda_fft.c): cuFFT where FF_CUDA_CUFFT is built, else declined */
int cuda_fft_supported(int op, ff_dtype t);
ff_status cuda_fft(void *ctx, int op, const ff_view *dst, const ff_view *src, int axis);
void cuda_fft_destroy(cuda_ctx *c);
/* linalg (cuda_linalg.c): cuSOLVER where FF_CUDA_CUSOLVER is built, else declined */
int cuda_linalg_supported(int op, ff_dtype t);
ff_status cuda_linalg(void *ctx, int op, const ff_view *dst, int n_dst, const ff_view *src, int n_src);
void cuda_solver_destroy(cuda_ctx *c);
/* linear (cuda_linear.c): cuBLASLt with its bias/ReLU epilogues; the other activations
 * through cuda_linear_epilogue (cuda_elementwise.cu): dst = act(src + bias), src F32. */
int cuda_linear_supported(int act, ff_dtype t);
ff_status cuda_linear(void *ctx, const ff_view *dst, const ff_view *src, int n_src, int act);
ff_status cuda_linear_epilogue(cuda_ctx *c, const ff_view *dst, const ff_view *src, const ff_view *bias, int act);
void cuda_lt_destroy(cuda_ctx *c);
ff_status cuda_layer_norm(void *ctx, int op, const ff_view *dst, int n_dst, const ff_view *src, int n_src, double eps);

/* Leaves every NCCL group still open (shutdown; cuda_coll.c). */
void cuda_coll_destroy_all(cuda_ctx *c);
int cuda_coll_supported(int op, ff_dtype t);

/* The unary ops the backend computes (ffb_unary_supported minus LGAMMA, see README). */
int cuda_unary_supported(ff_unary_op op, ff_dtype t);

#ifdef __cplusplus
}
#endif
#endif /* FF_CUDA_IMPL_H */
