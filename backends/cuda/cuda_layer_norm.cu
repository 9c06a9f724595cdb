/*
 * layer_norm (backend_abi.h's entry): x seen as [R, D], every float dtype, halves
 * included (loaded to double, each result rounded once at the store, as the reference).
 *
 * Forward: a block per row (32 to 256 threads, by D). Each thread folds the columns
 * tid, tid + blockDim, ... in double and the block adds them up (cuda_block_sum: the
 * same order on every run); two passes for the statistics, mean and then the squares
 * about it, as the contract asks (one pass of sums and squares cancels when |mean| >>
 * std), and a third that stores y. mean and invstd are stored as F64.
 * Backward: gx a block per row, as the forward; gw and gb are column sums over R, done
 * without atomics so the bits never depend on scheduling: one thread per (block of
 * LN_RB rows, column) writes a partial into a scratch of doubles, then one thread per
 * column adds the blocks in order.
 */
#include "cuda_device.cuh"
#include "ff_backend_layer_norm.h"

#define LN_RB 32 /* rows per block of the column sums */

/* One operand of the kernels: an [R, D] view (s0, s1) or a 1-D one (s0). */
typedef struct ln_view {
    void *buf;
    int64_t off, s0, s1;
    ff_dtype t;
} ln_view;

static ln_view ln_view_of(const ff_view *v)
{
    ln_view l = {v->buf, v->offset, v->ndim > 0 ? v->strides[0] : 0, v->ndim > 1 ? v->strides[1] : 0, v->dtype};
    return l;
}

__device__ static inline double ln_ld(const ln_view &v, int64_t i, int64_t k)
{
    return ffb_ld_f64(cuda_elem_c(v.buf, v.t, v.off + i * v.s0 + k * v.s1), v.t);
}
__device__ static inline void ln_st(const ln_view &v, int64_t i, int64_t k, double x)
{
    ffb_st_f64(cuda_elem(v.buf, v.t, v.off + i * v.s0 + k * v.s1), v.t, x);
}
/* element i of a 1-D view */
__device__ static inline double ln_ld1(const ln_view &v, int64_t i) { return ln_ld(v, i, 0); }
__device__ static inline void ln_st1(const ln_view &v, int64_t i, double x) { ln_st(v, i, 0, x); }

/* y = (x - mean) invstd w + b */
__global__ void k_ln_fwd(ln_view x, ln_view w, ln_view b, ln_view y, ln_view mean, ln_view inv, int64_t R, int64_t D,
                         double eps)
{
    for (int64_t i = blockIdx.x; i < R; i += gridDim.x) {
        double s = 0.0;
        for (int64_t k = threadIdx.x; k < D; k += blockDim.x) s += ln_ld(x, i, k);
        double mu = cuda_block_sum(s) / (double)D, q = 0.0;
        for (int64_t k = threadIdx.x; k < D; k += blockDim.x) {
            double e = ln_ld(x, i, k) - mu;
            q += e * e;
        }
        double is = 1.0 / sqrt(cuda_block_sum(q) / (double)D + eps);
        for (int64_t k = threadIdx.x; k < D; k += blockDim.x)
            ln_st(y, i, k, (ln_ld(x, i, k) - mu) * is * ln_ld1(w, k) + ln_ld1(b, k));
        if (threadIdx.x == 0) {
            ln_st1(mean, i, mu);
            ln_st1(inv, i, is);
        }
    }
}

/* gx = invstd (gxhat - mean_D(gxhat) - xhat mean_D(gxhat xhat)), gxhat = g w */
__global__ void k_ln_bwd(ln_view g, ln_view x, ln_view mean, ln_view inv, ln_view w, ln_view gx, int64_t R, int64_t D)
{
    for (int64_t i = blockIdx.x; i < R; i += gridDim.x) {
        double mu = ln_ld1(mean, i), is = ln_ld1(inv, i), sa = 0.0, sb = 0.0;
        for (int64_t k = threadIdx.x; k < D; k += blockDim.x) {
            double gh = ln_ld(g, i, k) * ln_ld1(w, k);
            sa += gh;
            sb += gh * ((ln_ld(x, i, k) - mu) * is);
        }
        double a = cuda_block_sum(sa) / (double)D, cc = cuda_block_sum(sb) / (double)D;
        for (int64_t k = threadIdx.x; k < D; k += blockDim.x) {
            double gh = ln_ld(g, i, k) * ln_ld1(w, k), xh = (ln_ld(x, i, k) - mu) * is;
            ln_st(gx, i, k, is * (gh - a - xh * cc));
        }
    }
}

/* part[blk D + k] = sum of g xhat, part[(nblk + blk) D + k] = sum of g, over the block's
 * rows in row order; adjacent threads take adjacent columns (coalesced loads). */
__global__ void k_ln_cols(ln_view g, ln_view x, ln_view mean, ln_view inv, int64_t R, int64_t D, int64_t nblk,
                          double *part)
{
    CUDA_FOR(n, nblk * D) {
        int64_t blk = n / D, k = n - blk * D, end = (blk + 1) * LN_RB < R ? (blk + 1) * LN_RB : R;
        double sw = 0.0, sb = 0.0;
        for (int64_t i = blk * LN_RB; i < end; i++) {
            double gv = ln_ld(g, i, k);
            sw += gv * ((ln_ld(x, i, k) - ln_ld1(mean, i)) * ln_ld1(inv, i));
            sb += gv;
        }
        part[n] = sw;
        part[nblk * D + n] = sb;
    }
}

/* gw and gb: the blocks' partials added in block order (zeros for R = 0) */
__global__ void k_ln_cols_sum(const double *part, int64_t nblk, int64_t D, ln_view gw, ln_view gb)
{
    CUDA_FOR(k, D) {
        double sw = 0.0, sb = 0.0;
        for (int64_t blk = 0; blk < nblk; blk++) {
            sw += part[blk * D + k];
            sb += part[(nblk + blk) * D + k];
        }
        ln_st1(gw, k, sw);
        ln_st1(gb, k, sb);
    }
}

/* Threads per row: a multiple of 32 covering D, at most 256. */
static unsigned ln_threads(int64_t d)
{
    unsigned t = 32;
    while (t < CUDA_THREADS && (int64_t)t < d) t *= 2;
    return t;
}

extern "C" ff_status cuda_layer_norm(void *ctx, int op, const ff_view *dst, int n_dst, const ff_view *src, int n_src,
                                     double eps)
{
    cuda_ctx *c = (cuda_ctx *)ctx;
    ff_status st = ffb_layer_norm_check(c->host, "cuda", op, dst, n_dst, src, n_src);
    if (st) return st;
    const ff_view *x = &src[op ? 1 : 0];
    int64_t R = x->shape[0], D = x->shape[1];
    if ((st = cuda_use_device(c, "layer_norm"))) return st;
    unsigned threads = ln_threads(D), rows = R < 65536 ? (unsigned)(R > 0 ? R : 1) : 65536u;
    if (op == 0) {
        if (R == 0) return FF_OK;
        CUDA_LAUNCH(k_ln_fwd, rows, threads, c->stream)(ln_view_of(&src[0]), ln_view_of(&src[1]), ln_view_of(&src[2]),
                                                        ln_view_of(&dst[0]), ln_view_of(&dst[1]), ln_view_of(&dst[2]),
                                                        R, D, eps);
        return cuda_launch_check(c, "layer_norm", "k_ln_fwd");
    }
    ln_view g = ln_view_of(&src[0]), xv = ln_view_of(&src[1]), mean = ln_view_of(&src[2]), inv = ln_view_of(&src[3]);
    if (R > 0) {
        CUDA_LAUNCH(k_ln_bwd, rows, threads, c->stream)(g, xv, mean, inv, ln_view_of(&src[4]), ln_view_of(&dst[0]), R, D);
        if ((st = cuda_launch_check(c, "layer_norm", "k_ln_bwd"))) return st;
    }
    int64_t nblk = (R + LN_RB - 1) / LN_RB;
    double *part = (double *)cuda_temp(c, "layer_norm", (size_t)(nblk > 0 ? 2 * nblk * D : 1) * sizeof(double));
    if (!part) return FF_ERR_OOM;
    if (nblk > 0) {
        CUDA_LAUNCH(k_ln_cols, cuda_blocks(nblk * D), CUDA_THREADS, c->stream)(g, xv, mean, inv, R, D, nblk, part);
        st = cuda_launch_check(c, "layer_norm", "k_ln_cols");
    }
    if (!st) {
        CUDA_LAUNCH(k_ln_cols_sum, cuda_blocks(D), CUDA_THREADS, c->stream)(part, nblk, D, ln_view_of(&dst[1]),
                                                                           ln_view_of(&dst[2]));
        st = cuda_launch_check(c, "layer_norm", "k_ln_cols_sum");
    }
    cuda_free(c, part); /* stream order: reused only by later work */
    return st;
}
