/*
 * oneDNN matmul primitives kept between calls (blas_dnnl_cache.c), for the bf16 matmul
 * (blas_half_dnnl.c) and the int8 qmatmul (blas_qmatmul.c): one cache for both.
 *
 * Why our own cache on top of oneDNN's: oneDNN 2.6's primitive cache is found through a
 * primitive descriptor, so every call still paid the descriptor (brgemm's blocking
 * set-up), the hashing, a stream and three memory objects: 3-5% of a 1024^3 bf16
 * product on AMX, more at 512. Here a call with a key seen before only sets three
 * data handles and executes.
 *
 * Only built where oneDNN is (FF_BLAS_HAVE_DNNL).
 */
#ifndef FF_BLAS_DNNL_CACHE_H
#define FF_BLAS_DNNL_CACHE_H

#include <dnnl.h>
#include <stdint.h>

/* What the primitive computes: src x weights -> dst dtypes. */
typedef enum blas_dnnl_kind {
    BLAS_DNNL_BF16_BF16 = 1, /* bf16 x bf16 -> bf16 */
    BLAS_DNNL_BF16_F32,      /* bf16 x bf16 -> f32 */
    BLAS_DNNL_U8S8_S32,      /* u8 x s8 -> s32 */
} blas_dnnl_kind;

/* Everything that changes the primitive oneDNN builds: the product [m, k] x [k, n] ->
 * [m, n] and each matrix's element strides (rows, cols); the OpenMP thread count the
 * caller runs it on (oneDNN blocks for it; blas_dnnl_threads sets it). The ISA oneDNN may
 * use (ONEDNN_MAX_CPU_ISA, read by oneDNN once per process) is added by the cache. */
typedef struct blas_dnnl_key {
    int32_t kind, threads;
    int32_t bias; /* 1: a bias row [1, n] of the weights' dtype is added to the sum */
    int32_t post; /* a dnnl_alg_kind_t eltwise applied after the bias (dnnl_eltwise_swish
                   * with alpha 1, the others with alpha 0), or 0 for none */
    int64_t m, n, k;
    int64_t ars, acs, brs, bcs, crs, ccs;
} blas_dnnl_key;

/* One primitive with its stream and memory objects (their data handles set per call).
 * Made, run and released by one thread (acquire only finds the calling thread's own);
 * destroyed by whichever thread evicts or clears it, which the user-mode scratchpad
 * makes safe. */
typedef struct blas_dnnl_prim {
    blas_dnnl_key key;
    int isa;      /* dnnl_get_effective_cpu_isa() when made */
    int accepted; /* the caller's accept(pd) said yes; no primitive is made otherwise */
    const char *impl; /* oneDNN's name for the implementation it picked */
    dnnl_primitive_desc_t pd;
    dnnl_primitive_t prim;
    dnnl_stream_t stream;
    dnnl_memory_t mem[5]; /* src, weights, dst, scratchpad (NULL when it needs none), bias (NULL: none) */
    size_t scratch_bytes; /* the scratchpad each execution needs from the caller */
    struct blas_dnnl_prim *prev, *next;
} blas_dnnl_prim;

/* The process's CPU engine (made once; NULL when oneDNN cannot make one). */
dnnl_engine_t blas_dnnl_engine(void);

/* The primitive for *key, from the cache or made now (accept decides, once per key,
 * whether the implementation oneDNN picked may be used; NULL accepts any). NULL on
 * failure (out of memory, oneDNN refused the shapes). The caller checks ->accepted,
 * and hands the primitive back with blas_dnnl_release in every case. */
blas_dnnl_prim *blas_dnnl_acquire(const blas_dnnl_key *key, int (*accept)(const_dnnl_primitive_desc_t));
void blas_dnnl_release(blas_dnnl_prim *p);

/* One execution on a, b (, bias: the key's bias row, else NULL) -> c, finished on
 * return; scratch: scratch_bytes of memory (64-byte aligned; blas_scratch) that no other
 * execution uses meanwhile, or NULL when scratch_bytes is 0. */
dnnl_status_t blas_dnnl_execute(blas_dnnl_prim *p, const void *a, const void *b, const void *bias, void *c,
                                void *scratch);

/* Destroys every primitive not held (at backend shutdown and plugin unload). */
void blas_dnnl_cache_clear(void);

#endif /* FF_BLAS_DNNL_CACHE_H */
