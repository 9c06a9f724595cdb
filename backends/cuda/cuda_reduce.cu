/*
 * reduce and softmax.
 *
 * reduce: src is seen as nout rows (dst's elements: the kept dims, an "outer" walk over
 * src and dst) of rowlen elements (the reduced dims in row-major order, an "inner" walk;
 * for ARG* that is the one axis, so the position in the row is the index along it).
 * Accumulators, folding and the final store are the reference's (ffb_reduce_acc in
 * ff_backend_scalar.h): floats sum in double, integers wrap in 64 bits. Three shapes:
 *   - short rows (< 64): one thread per row, in the reference's order (bit-identical);
 *   - long rows: a block of 256 threads per row (or per chunk of a row), each thread
 *     folding a strided part, then warp shuffles and shared memory combine the threads;
 *   - few long rows (fewer than 2 per SM): two passes, rows cut into up to 1024 chunks
 *     whose partial accumulators a second kernel combines per row, in chunk order.
 * Combining partial results compares indices: MAX/MIN fold as ARGMAX/ARGMIN (the same
 * rule on the value) so that of equal values (-0 and +0) and of NaNs the first wins, as
 * in the reference's sequential loop; ARG* return the first index of the extreme.
 * Float sums combine in a different order than the reference's loop: both in double,
 * they differ at most in the last bits of a double, within the suite's tolerance.
 *
 * softmax: one block per row (32 threads for rows up to 64 elements), three passes in
 * the block: the maximum (NaN propagating), sum of exp(x - max) in double, the store;
 * the last pass recomputes exp(x - max), so dst may be src (in place).
 */
#include "cuda_device.cuh"
#include "cuda_reduce_acc.h"

#define CHUNK_MIN 16384 /* elements per block before a row is cut into chunks */
#define MAX_CHUNKS 1024

typedef ffb_reduce_acc acc_t;

__device__ static inline void fold(acc_t *a, ff_reduce_op fop, int float_acc, const void *sb, ff_dtype t, int64_t at,
                                   int64_t k)
{
    const char *p = cuda_elem_c(sb, t, at);
    if (float_acc) ffb_reduce_acc_float(a, fop, ffb_ld_f64(p, t), k);
    else ffb_reduce_acc_int(a, fop, ffb_ld_i64(p, t), k);
}

#if !defined(FF_CUDA_EMU)
__device__ static inline acc_t shfl_down(const acc_t &a, int delta)
{
    acc_t r;
    r.f = __shfl_down_sync(0xffffffffu, a.f, delta);
    r.u = __shfl_down_sync(0xffffffffu, a.u, delta);
    r.i = __shfl_down_sync(0xffffffffu, a.i, delta);
    r.arg = __shfl_down_sync(0xffffffffu, a.arg, delta);
    return r;
}
#endif

/* Combines the block's accumulators into thread 0's (blockDim.x a multiple of 32, <= 1024). */
__device__ static void block_combine(acc_t *a, ff_reduce_op fop, int float_acc)
{
#if defined(FF_CUDA_EMU)
    (void)a, (void)fop, (void)float_acc; /* one thread: it holds the block's result */
#else
    __shared__ acc_t warps[32];
    for (int d = 16; d > 0; d /= 2) {
        acc_t o = shfl_down(*a, d);
        cuda_acc_combine(a, &o, fop, float_acc);
    }
    int lane = threadIdx.x % 32, wid = threadIdx.x / 32, nw = blockDim.x / 32;
    if (lane == 0) warps[wid] = *a;
    __syncthreads();
    if (wid == 0) {
        if (lane < nw) *a = warps[lane];
        else ffb_reduce_acc_init(a, fop);
        for (int d = 16; d > 0; d /= 2) {
            acc_t o = shfl_down(*a, d);
            cuda_acc_combine(a, &o, fop, float_acc);
        }
    }
    __syncthreads(); /* warps[] is reused by the block's next row */
#endif
}

/* One thread per row, sequential. outer: src, dst over the kept dims; inner: src over
 * the reduced ones. */
__global__ void k_reduce_rows(cuda_walk outer, cuda_walk inner, ff_reduce_op op, int float_acc, const void *sb,
                              ff_dtype t, void *db, ff_dtype dt, int64_t nout, int64_t rowlen)
{
    ff_reduce_op fop = cuda_fold_op(op);
    CUDA_FOR(r, nout) {
        int64_t o[2];
        cuda_walk_at(outer, r, 2, o);
        acc_t a;
        ffb_reduce_acc_init(&a, fop);
        for (int64_t k = 0; k < rowlen; k++) {
            int64_t at;
            cuda_walk_at(inner, k, 1, &at);
            fold(&a, fop, float_acc, sb, t, o[0] + at - inner.offset[0], k);
        }
        ffb_reduce_acc_store(&a, op, float_acc, cuda_elem(db, dt, o[1]), dt);
    }
}

/* A block per (row, chunk): chunks > 1 writes partial accumulators to part[row * chunks + chunk]. */
__global__ void k_reduce_blocks(cuda_walk outer, cuda_walk inner, ff_reduce_op op, int float_acc, const void *sb,
                                ff_dtype t, void *db, ff_dtype dt, int64_t nout, int64_t rowlen, int64_t chunks,
                                acc_t *part)
{
    ff_reduce_op fop = cuda_fold_op(op);
    int64_t per = (rowlen + chunks - 1) / chunks;
    for (int64_t b = blockIdx.x; b < nout * chunks; b += gridDim.x) {
        int64_t r = b / chunks, ch = b - r * chunks;
        int64_t o[2];
        cuda_walk_at(outer, r, 2, o);
        int64_t lo = ch * per, hi = lo + per < rowlen ? lo + per : rowlen;
        acc_t a;
        ffb_reduce_acc_init(&a, fop);
        for (int64_t k = lo + threadIdx.x; k < hi; k += blockDim.x) {
            int64_t at;
            cuda_walk_at(inner, k, 1, &at);
            fold(&a, fop, float_acc, sb, t, o[0] + at - inner.offset[0], k);
        }
        block_combine(&a, fop, float_acc);
        if (threadIdx.x == 0) {
            if (chunks == 1) ffb_reduce_acc_store(&a, op, float_acc, cuda_elem(db, dt, o[1]), dt);
            else part[b] = a;
        }
    }
}

__global__ void k_reduce_finish(cuda_walk outer, ff_reduce_op op, int float_acc, void *db, ff_dtype dt, int64_t nout,
                                int64_t chunks, const acc_t *part)
{
    ff_reduce_op fop = cuda_fold_op(op);
    CUDA_FOR(r, nout) {
        int64_t o[2];
        cuda_walk_at(outer, r, 2, o);
        acc_t a = part[r * chunks];
        for (int64_t ch = 1; ch < chunks; ch++) cuda_acc_combine(&a, &part[r * chunks + ch], fop, float_acc);
        ffb_reduce_acc_store(&a, op, float_acc, cuda_elem(db, dt, o[1]), dt);
    }
}

extern "C" ff_status cuda_reduce(void *ctx, ff_reduce_op op, const ff_view *dst, const ff_view *src, uint32_t axes_mask)
{
    cuda_ctx *c = (cuda_ctx *)ctx;
    int axis = -1;
    /* F16/BF16 views are checked under the F32 rules they follow (cuda_rule_dtype) */
    ff_view dr = dst ? *dst : (ff_view){}, sr = src ? *src : (ff_view){};
    dr.dtype = cuda_rule_dtype(dr.dtype), sr.dtype = cuda_rule_dtype(sr.dtype);
    ff_status st = ffb_reduce_check(c->host, "cuda", op, dst ? &dr : NULL, src ? &sr : NULL, axes_mask, &axis);
    if (st) return st;
    int64_t nout = ff_view_numel(dst);
    if (nout == 0) return FF_OK;
    if (ff_view_numel(src) == 0 && (op == FF_REDUCE_MAX || op == FF_REDUCE_MIN || ffb_reduce_is_arg(op)))
        return cuda_error(c, FF_ERR_INVALID, "cuda reduce: %s of an empty set", ffb_reduce_name(op));
    if ((st = cuda_use_device(c, "reduce"))) return st;
    cuda_walk outer, inner;
    cuda_walk_split(dst, src, axes_mask, &outer, &inner);
    int64_t rowlen = cuda_walk_numel(&inner);
    int float_acc = ffb_is_float(sr.dtype) || ((op == FF_REDUCE_SUM || op == FF_REDUCE_PROD) && ffb_is_float(dr.dtype));
    if (rowlen < 64) {
        CUDA_LAUNCH(k_reduce_rows, cuda_blocks(nout), CUDA_THREADS, c->stream)(outer, inner, op, float_acc, src->buf,
                                                                        src->dtype, dst->buf, dst->dtype, nout, rowlen);
        return cuda_launch_check(c, "reduce", "k_reduce_rows");
    }
    int64_t chunks = 1;
    if (nout < 2 * (int64_t)c->sm_count && rowlen >= 2 * CHUNK_MIN) {
        chunks = rowlen / CHUNK_MIN;
        if (chunks > MAX_CHUNKS) chunks = MAX_CHUNKS;
    }
    acc_t *part = NULL;
    if (chunks > 1 && !(part = (acc_t *)cuda_temp(c, "reduce", (size_t)(nout * chunks) * sizeof(acc_t))))
        return FF_ERR_OOM;
    int64_t blocks = nout * chunks < 65536 ? nout * chunks : 65536;
    CUDA_LAUNCH(k_reduce_blocks, (unsigned)blocks, CUDA_THREADS, c->stream)(outer, inner, op, float_acc, src->buf, src->dtype,
                                                                    dst->buf, dst->dtype, nout, rowlen, chunks, part);
    st = cuda_launch_check(c, "reduce", "k_reduce_blocks");
    if (!st && chunks > 1) {
        CUDA_LAUNCH(k_reduce_finish, cuda_blocks(nout), CUDA_THREADS, c->stream)(outer, op, float_acc, dst->buf, dst->dtype,
                                                                          nout, chunks, part);
        st = cuda_launch_check(c, "reduce", "k_reduce_finish");
    }
    if (part) cuda_free(c, part); /* stream order: reused only by later work */
    return st;
}

/* ---- softmax -------------------------------------------------------------------------- */

__device__ static double block_max(double m)
{
#if defined(FF_CUDA_EMU)
    return m; /* one thread */
#else
    __shared__ double w[32];
    for (int d = 16; d > 0; d /= 2) {
        double o = __shfl_down_sync(0xffffffffu, m, d);
        if (isnan(o) || o > m) m = o;
    }
    int lane = threadIdx.x % 32, wid = threadIdx.x / 32, nw = blockDim.x / 32;
    if (lane == 0) w[wid] = m;
    __syncthreads();
    m = -INFINITY;
    for (int i = 0; i < nw; i++)
        if (isnan(w[i]) || w[i] > m) m = w[i];
    __syncthreads();
    return m;
#endif
}

/* outer: src, dst over every dim but the axis; rows of len elements at strides ss, ds. */
__global__ void k_softmax(cuda_walk outer, const void *sb, void *db, ff_dtype t, int64_t rows, int64_t len, int64_t ss,
                          int64_t ds, int want_log)
{
    for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
        int64_t o[2];
        cuda_walk_at(outer, r, 2, o);
        double m = -INFINITY;
        for (int64_t j = threadIdx.x; j < len; j += blockDim.x) {
            double x = ffb_ld_f64(cuda_elem_c(sb, t, o[0] + j * ss), t);
            if (isnan(x) || x > m) m = x;
        }
        m = block_max(m);
        double s = 0.0;
        for (int64_t j = threadIdx.x; j < len; j += blockDim.x) s += exp(ffb_ld_f64(cuda_elem_c(sb, t, o[0] + j * ss), t) - m);
        s = cuda_block_sum(s);
        double logs = log(s);
        for (int64_t j = threadIdx.x; j < len; j += blockDim.x) {
            double x = ffb_ld_f64(cuda_elem_c(sb, t, o[0] + j * ss), t);
            ffb_st_f64(cuda_elem(db, t, o[1] + j * ds), t, want_log ? x - m - logs : exp(x - m) / s);
        }
    }
}

extern "C" ff_status cuda_softmax(void *ctx, const ff_view *dst, const ff_view *src, int axis, int want_log)
{
    cuda_ctx *c = (cuda_ctx *)ctx;
    ff_status st;
    if ((st = cuda_check_view(c, "softmax", "dst", dst, 1)) || (st = cuda_check_view(c, "softmax", "src", src, 1)))
        return st;
    if (!ffb_is_float(cuda_rule_dtype(src->dtype)))
        return cuda_error(c, FF_ERR_UNSUPPORTED, "cuda softmax: not supported on %s", ffb_dtype_name(src->dtype));
    if (dst->dtype != src->dtype)
        return cuda_error(c, FF_ERR_INVALID, "cuda softmax: dst (%s) and src (%s) differ in dtype",
                          ffb_dtype_name(dst->dtype), ffb_dtype_name(src->dtype));
    if (!ffb_same_shape(dst, src)) return cuda_shape_error(c, "softmax", dst, src);
    int rank = src->ndim > 0 ? src->ndim : 1;
    if (axis < 0 || axis >= rank)
        return cuda_error(c, FF_ERR_INVALID, "cuda softmax: axis %d out of range for rank %d", axis, (int)src->ndim);
    int64_t len = src->ndim ? src->shape[axis] : 1, ss = src->ndim ? src->strides[axis] : 0;
    int64_t ds = dst->ndim ? dst->strides[axis] : 0;
    ff_view so = *src, dso = *dst; /* the axis collapsed: one position per row */
    if (so.ndim) so.shape[axis] = dso.shape[axis] = 1;
    const ff_view *vs[] = {&so, &dso};
    cuda_walk outer = cuda_walk_of(vs, 2);
    int64_t rows = cuda_walk_numel(&outer);
    if (len == 0 || rows == 0) return FF_OK;
    if ((st = cuda_use_device(c, "softmax"))) return st;
    unsigned threads = len <= 64 ? 32 : CUDA_THREADS;
    unsigned blocks = rows < 65536 ? (unsigned)rows : 65536u;
    CUDA_LAUNCH(k_softmax, blocks, threads, c->stream)(outer, src->buf, dst->buf, src->dtype, rows, len, ss, ds, want_log);
    return cuda_launch_check(c, "softmax", "k_softmax");
}
