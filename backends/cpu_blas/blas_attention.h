/*
 * Private to the attention entry (blas_attention.c and its two instantiations,
 * blas_attention_f32.c and blas_attention_f64.c, of the tile loops in
 * blas_attention_tiles.h): the job every worker shares and the tile I/O, which reads
 * and writes any strides and dtype (F16/BF16 widened to f32, rounded back once).
 */
#ifndef FF_BLAS_ATTENTION_H
#define FF_BLAS_ATTENTION_H

#include <stdatomic.h>

#include "blas_impl.h"

/* One [T, W] matrix of a 4-D view at a fixed (batch, head): its first element (bytes)
 * and element strides of rows and columns. */
typedef struct at_mat {
    char *p;
    int64_t rs, cs;
} at_mat;

typedef struct at_job {
    blas_ctx *c;
    ff_dtype t;      /* q's dtype; the tiles are f32 (F32, F16, BF16) or f64 */
    double scale;
    int causal, mask; /* ff_attention_mask */
    double dropout_p; /* 0: none; else backend_abi.h's rule, keyed by seed */
    uint64_t seed;
    int64_t B, H, Tq, Tk, D, Dv;
    int64_t bq, bk;   /* tile rows of q and of k/v */
    int64_t nqt, nkt; /* tiles along Tq and Tk */
    const ff_view *q, *k, *v, *o, *lse, *go, *m; /* m: the mask, NULL without one */
    const ff_view *gq, *gk, *gv;                 /* backward's outputs */
    char *scratch;     /* per-worker scratch, `per_worker` bytes each */
    size_t per_worker;
    int64_t ntasks;    /* forward: (b, h, q tile); backward: (b, h) */
    int64_t head;      /* at_backward_head*: the head b * H + h being split */
    atomic_llong next; /* the next task a worker takes */
    atomic_int slot;   /* the next scratch slot */
} at_job;

at_mat at_slice(const ff_view *v, int64_t b, int64_t h);
/* Multiplies x (n rows from query i0, nk columns from key j0, row stride ld) by the
 * dropout factors of head (b, h) (backend_abi.h's rule). Without dropout: nothing. */
void at_dropout_f32(const at_job *j, int64_t b, int64_t h, int64_t i0, int64_t n, int64_t j0, int64_t nk, float *x,
                    int64_t ld);
void at_dropout_f64(const at_job *j, int64_t b, int64_t h, int64_t i0, int64_t n, int64_t j0, int64_t nk, double *x,
                    int64_t ld);
/* The backward's tile with dropout, one draw an element: dp becomes ds = pt (f dp - di[r])
 * and pt becomes f pt (for gv), f the element's factor. */
void at_dropout_ds_f32(const at_job *j, int64_t b, int64_t h, int64_t i0, int64_t n, int64_t j0, int64_t nk, float *pt,
                       float *dp, int64_t ld, const float *di);
void at_dropout_ds_f64(const at_job *j, int64_t b, int64_t h, int64_t i0, int64_t n, int64_t j0, int64_t nk, double *pt,
                       double *dp, int64_t ld, const double *di);
/* Rows [r0, r0 + n) of m (w columns, dtype t) as a dense-enough matrix: a pointer into
 * the view itself when it already is one (same dtype, unit column stride), else a copy
 * in buf (n x w). *ld: its row stride. */
const float *at_rows_f32(const at_mat *m, ff_dtype t, int64_t r0, int64_t n, int64_t w, float *buf, int64_t *ld);
const double *at_rows_f64(const at_mat *m, ff_dtype t, int64_t r0, int64_t n, int64_t w, double *buf, int64_t *ld);
/* Writes n x w values (row stride ld) to rows [r0, r0 + n) of m, rounded once to t. */
void at_store_f32(const at_mat *m, ff_dtype t, int64_t r0, int64_t n, int64_t w, const float *src, int64_t ld);
void at_store_f64(const at_mat *m, ff_dtype t, int64_t r0, int64_t n, int64_t w, const double *src, int64_t ld);
/* Adds the mask of rows [i0, i0 + n) and columns [j0, j0 + nk) (bool: -inf where false)
 * and the causal -inf (j > i) to the scores s (row stride lds). */
void at_mask_f32(const at_job *j, int64_t b, int64_t h, int64_t i0, int64_t n, int64_t j0, int64_t nk, float *s,
                 int64_t lds);
void at_mask_f64(const at_job *j, int64_t b, int64_t h, int64_t i0, int64_t n, int64_t j0, int64_t nk, double *s,
                 int64_t lds);

/* blas_sgemm_ab, with small products (short sequences' tiles) in own registers
 * (blas_attention_gemm.c) */
void at_gemm_f32(const blas_ctx *c, int ta, int tb, int64_t M, int64_t N, int64_t K, float alpha, const float *A,
                 int64_t lda, const float *B, int64_t ldb, float beta, float *C, int64_t ldc);

/* The workers (blas_parallel_for tasks): each takes a scratch slot, then tasks from
 * job->next until none is left. */
void at_forward_f32(void *job, int64_t begin, int64_t end);
void at_forward_f64(void *job, int64_t begin, int64_t end);
void at_backward_f32(void *job, int64_t begin, int64_t end);
void at_backward_f64(void *job, int64_t begin, int64_t end);
/* Backward with fewer heads than workers: head job->head's k tiles across the workers
 * (job->next counts k tiles), then its gq from the first `used` workers' partial sums. */
void at_backward_head_f32(void *job, int64_t begin, int64_t end);
void at_backward_head_f64(void *job, int64_t begin, int64_t end);
void at_backward_head_gq_f32(const at_job *j, int used);
void at_backward_head_gq_f64(const at_job *j, int used);
/* Scratch bytes one worker needs (the same for both instantiations' element size). */
size_t at_scratch_bytes(const at_job *j, size_t es);

#endif /* FF_BLAS_ATTENTION_H */
