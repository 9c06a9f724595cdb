/*
 * gather, scatter_add, random, and the integer matmul kernel.
 *
 * gather/scatter_add: a first kernel checks every index and raises a flag in a small
 * device buffer (with the first bad value it saw), which the entry reads back before
 * anything is written: a bad index is FF_ERR_INDEX and leaves dst untouched (this waits
 * for the stream). Both walk index's shape with the other tensor's stride along axis
 * set to 0; the element is then that offset plus index value * the real stride.
 * scatter_add gives each line of index along axis to one thread, which adds its
 * elements in order: lines never share a dst element, so duplicates add up in the
 * reference's order without atomics and float results are deterministic (bit-identical
 * to the reference). The cost is parallelism: a scatter into a rank-1 dst is one line.
 *
 * random: Philox4x32-10 with the ABI's counter rule, through the ABI's own inline
 * functions compiled for the device (FF_ABI_HD): uniform samples are the CPU backends'
 * bit for bit (-fmad=false keeps p0 + (p1 - p0) * u unfused), normals within the libm
 * tolerance (CUDA's log/cos against glibc's).
 */
#include "cuda_device.cuh"

/* ---- index checks ---------------------------------------------------------------------- */

typedef struct index_flag {
    unsigned long long bad; /* 0, or 1 once an index is out of range */
    long long value;        /* the first bad value recorded */
} index_flag;

__global__ void k_index_check(cuda_walk w, const void *ib, ff_dtype it, int64_t size, int64_t n, index_flag *flag)
{
    CUDA_FOR(e, n) {
        int64_t off;
        cuda_walk_at(w, e, 1, &off);
        int64_t v = ffb_ld_i64(cuda_elem_c(ib, it, off), it);
        if ((v < 0 || v >= size) && atomicCAS(&flag->bad, 0ull, 1ull) == 0ull) flag->value = v;
    }
}

/* Checks every element of index against [0, size); FF_ERR_INDEX with the message. */
static ff_status check_indices(cuda_ctx *c, const char *entry, const ff_view *index, int64_t size, int axis)
{
    const ff_view *vs[] = {index};
    cuda_walk w = cuda_walk_of(vs, 1);
    int64_t n = cuda_walk_numel(&w);
    if (n == 0) return FF_OK;
    index_flag *flag = (index_flag *)cuda_temp(c, entry, sizeof(index_flag)), host = {0, 0};
    if (!flag) return FF_ERR_OOM;
    cudaError_t err = cudaMemsetAsync(flag, 0, sizeof *flag, c->stream);
    ff_status st = err == cudaSuccess ? FF_OK : cuda_fail(c, entry, "cudaMemsetAsync", err);
    if (!st) {
        CUDA_LAUNCH(k_index_check, cuda_blocks(n), CUDA_THREADS, c->stream)(w, index->buf, index->dtype, size, n, flag);
        st = cuda_launch_check(c, entry, "k_index_check");
    }
    if (!st && (err = cudaMemcpyAsync(&host, flag, sizeof host, cudaMemcpyDeviceToHost, c->stream)) != cudaSuccess)
        st = cuda_fail(c, entry, "cudaMemcpyAsync", err);
    if (!st && (err = cudaStreamSynchronize(c->stream)) != cudaSuccess)
        st = cuda_fail(c, entry, "cudaStreamSynchronize", err);
    cuda_free(c, flag);
    if (!st && host.bad)
        st = cuda_error(c, FF_ERR_INDEX, "cuda %s: index %lld out of range [0, %lld) at axis %d", entry, host.value,
                        (long long)size, axis);
    return st;
}

/* The checks of the reference (backends/cpu/cpu_index.c): dtypes (F16/BF16 too with
 * half_ok: gather, which only moves bytes), ranks, axis; then 0-d views become rank-1
 * views of one element (held in t[3]). */
static ff_status check_args(cuda_ctx *c, const char *entry, const ff_view **dstp, const ff_view **srcp,
                            const ff_view **indexp, int axis, int half_ok, ff_view t[3])
{
    const ff_view *dst = *dstp, *src = *srcp, *index = *indexp;
    ff_status st;
    if ((st = cuda_check_view(c, entry, "dst", dst, half_ok)) || (st = cuda_check_view(c, entry, "src", src, half_ok)) ||
        (st = cuda_check_view(c, entry, "index", index, 0)))
        return st;
    if (dst->dtype != src->dtype)
        return cuda_error(c, FF_ERR_INVALID, "cuda %s: dst (%s) and src (%s) differ in dtype", entry,
                          ffb_dtype_name(dst->dtype), ffb_dtype_name(src->dtype));
    if (index->dtype != FF_I64 && index->dtype != FF_I32)
        return cuda_error(c, FF_ERR_INVALID, "cuda %s: index must be i64 (or i32), got %s", entry,
                          ffb_dtype_name(index->dtype));
    if (dst->ndim != src->ndim || index->ndim != src->ndim)
        return cuda_error(c, FF_ERR_INVALID, "cuda %s: ranks differ (dst %d, src %d, index %d)", entry, (int)dst->ndim,
                          (int)src->ndim, (int)index->ndim);
    int rank = src->ndim > 0 ? src->ndim : 1;
    if (axis < 0 || axis >= rank)
        return cuda_error(c, FF_ERR_INVALID, "cuda %s: axis %d out of range for rank %d", entry, axis, (int)src->ndim);
    *dstp = ffb_as_rank1(dst, &t[0]), *srcp = ffb_as_rank1(src, &t[1]), *indexp = ffb_as_rank1(index, &t[2]);
    return FF_OK;
}

static ff_status check_fits(cuda_ctx *c, const char *entry, const ff_view *index, const ff_view *v, const char *what,
                            int axis, int skip_axis)
{
    for (int d = 0; d < index->ndim; d++)
        if (!(skip_axis && d == axis) && index->shape[d] > v->shape[d])
            return cuda_error(c, FF_ERR_INVALID, "cuda %s: index size %lld exceeds %s size %lld at dim %d", entry,
                              (long long)index->shape[d], what, (long long)v->shape[d], d);
    return FF_OK;
}

/* ---- gather ----------------------------------------------------------------------------- */

/* w: dst, index, src (stride 0 along axis) over index's shape. */
__global__ void k_gather(cuda_walk w, void *db, const void *ib, ff_dtype it, const void *sb, ff_dtype t, int64_t size,
                         int64_t step, int64_t n)
{
    size_t sz = ff_dtype_size(t);
    CUDA_FOR(e, n) {
        int64_t off[3];
        cuda_walk_at(w, e, 3, off);
        int64_t v = ffb_ld_i64(cuda_elem_c(ib, it, off[1]), it);
        if (v < 0 || v >= size) continue; /* checked before the launch */
        memcpy(cuda_elem(db, t, off[0]), cuda_elem_c(sb, t, off[2] + v * step), sz);
    }
}

extern "C" ff_status cuda_gather(void *ctx, const ff_view *dst, const ff_view *src, const ff_view *index, int axis)
{
    cuda_ctx *c = (cuda_ctx *)ctx;
    ff_view t[3];
    ff_status st = check_args(c, "gather", &dst, &src, &index, axis, 1, t);
    if (st) return st;
    if (!ffb_same_shape(dst, index)) return cuda_shape_error(c, "gather", dst, index);
    if ((st = check_fits(c, "gather", index, src, "src", axis, 1))) return st;
    int64_t size = src->shape[axis], step = src->strides[axis];
    ff_view src0 = *src;
    src0.strides[axis] = 0;
    const ff_view *vs[] = {dst, index, &src0}; /* dst has index's shape */
    cuda_walk w = cuda_walk_of(vs, 3);
    int64_t n = cuda_walk_numel(&w);
    if (n == 0) return FF_OK;
    if ((st = cuda_use_device(c, "gather")) || (st = check_indices(c, "gather", index, size, axis))) return st;
    CUDA_LAUNCH(k_gather, cuda_blocks(n), CUDA_THREADS, c->stream)(w, dst->buf, index->buf, index->dtype, src->buf,
                                                            src->dtype, size, step, n);
    return cuda_launch_check(c, "gather", "k_gather");
}

/* ---- scatter_add ------------------------------------------------------------------------- */

/* w: index, src, dst (stride 0 along axis) over index's shape with axis collapsed: one
 * line per element; each line walks len elements along axis (strides is_, ss). */
__global__ void k_scatter_add(cuda_walk w, const void *ib, ff_dtype it, int64_t is_, const void *sb, int64_t ss,
                              void *db, ff_dtype t, int64_t step, int64_t len, int64_t lines)
{
    int is_float = ffb_is_float(t);
    CUDA_FOR(l, lines) {
        int64_t off[3];
        cuda_walk_at(w, l, 3, off);
        for (int64_t j = 0; j < len; j++) {
            int64_t v = ffb_ld_i64(cuda_elem_c(ib, it, off[0] + j * is_), it);
            char *d = cuda_elem(db, t, off[2] + v * step);
            const char *s = cuda_elem_c(sb, t, off[1] + j * ss);
            if (is_float) ffb_st_f64(d, t, ffb_ld_f64(d, t) + ffb_ld_f64(s, t));
            else ffb_st_i64(d, t, ffb_u64_to_i64((uint64_t)ffb_ld_i64(d, t) + (uint64_t)ffb_ld_i64(s, t)));
        }
    }
}

extern "C" ff_status cuda_scatter_add(void *ctx, const ff_view *dst, const ff_view *index, const ff_view *src, int axis)
{
    cuda_ctx *c = (cuda_ctx *)ctx;
    ff_view t[3];
    ff_status st = check_args(c, "scatter_add", &dst, &src, &index, axis, 0, t);
    if (st) return st;
    if ((st = check_fits(c, "scatter_add", index, src, "src", axis, 0)) ||
        (st = check_fits(c, "scatter_add", index, dst, "dst", axis, 1)))
        return st;
    if (ff_view_numel(index) == 0) return FF_OK;
    int64_t size = dst->shape[axis], step = dst->strides[axis], len = index->shape[axis];
    if ((st = cuda_use_device(c, "scatter_add")) || (st = check_indices(c, "scatter_add", index, size, axis))) return st;
    ff_view iv = *index, sv = *src, dv = *dst; /* axis collapsed: one position per line */
    iv.shape[axis] = 1;
    dv.strides[axis] = 0;
    const ff_view *vs[] = {&iv, &sv, &dv};
    cuda_walk w = cuda_walk_of(vs, 3);
    int64_t lines = cuda_walk_numel(&w);
    CUDA_LAUNCH(k_scatter_add, cuda_blocks(lines), CUDA_THREADS, c->stream)(w, index->buf, index->dtype,
                                                                     index->strides[axis], src->buf, src->strides[axis],
                                                                     dst->buf, dst->dtype, step, len, lines);
    return cuda_launch_check(c, "scatter_add", "k_scatter_add");
}

/* ---- random ------------------------------------------------------------------------------ */

__global__ void k_random(cuda_walk w, void *db, ff_dtype t, int normal, uint64_t seed, uint64_t counter_base, double p0,
                         double p1, int64_t n)
{
    CUDA_FOR(e, n) {
        int64_t off;
        cuda_walk_at(w, e, 1, &off);
        uint64_t ctr = counter_base + (uint64_t)e; /* row-major logical index: merging keeps it */
        double v = normal ? p0 + p1 * ff_random_normal01(seed, ctr)
                   : t == FF_F32 ? (double)ff_random_uniform_f32(seed, ctr, p0, p1)
                                 : p0 + (p1 - p0) * ff_random_uniform01(seed, ctr);
        ffb_st_f64(cuda_elem(db, t, off), t, v);
    }
}

extern "C" ff_status cuda_random(void *ctx, const ff_view *dst, ff_random_dist dist, uint64_t seed,
                                 uint64_t counter_base, double p0, double p1)
{
    cuda_ctx *c = (cuda_ctx *)ctx;
    ff_status st = cuda_check_view(c, "random", "dst", dst, 0);
    if (st) return st;
    if (dist != FF_RANDOM_UNIFORM && dist != FF_RANDOM_NORMAL)
        return cuda_error(c, FF_ERR_INVALID, "cuda random: invalid distribution %d", (int)dist);
    if (!ffb_is_float(dst->dtype))
        return cuda_error(c, FF_ERR_UNSUPPORTED, "cuda random: %s fill is not supported on %s",
                          dist == FF_RANDOM_UNIFORM ? "uniform" : "normal", ffb_dtype_name(dst->dtype));
    const ff_view *vs[] = {dst};
    cuda_walk w = cuda_walk_of(vs, 1);
    int64_t n = cuda_walk_numel(&w);
    if (n == 0) return FF_OK;
    if ((st = cuda_use_device(c, "random"))) return st;
    CUDA_LAUNCH(k_random, cuda_blocks(n), CUDA_THREADS, c->stream)(w, dst->buf, dst->dtype, dist == FF_RANDOM_NORMAL, seed,
                                                            counter_base, p0, p1, n);
    return cuda_launch_check(c, "random", "k_random");
}

/* ---- integer matmul ---------------------------------------------------------------------- */

/* w: dst, a, b over the batch dims; one thread per dst element, sums wrap in uint64. */
__global__ void k_matmul_int(cuda_walk w, void *db, const void *ab, const void *bb, ff_dtype t, int64_t M, int64_t N,
                             int64_t K, int64_t sdm, int64_t sdn, int64_t sam, int64_t sak, int64_t sbk, int64_t sbn,
                             int64_t n)
{
    CUDA_FOR(e, n) {
        int64_t mn = M * N, bt = e / mn, ij = e - bt * mn, i = ij / N, j = ij - i * N;
        int64_t off[3];
        cuda_walk_at(w, bt, 3, off);
        uint64_t acc = 0;
        for (int64_t k = 0; k < K; k++)
            acc += (uint64_t)ffb_ld_i64(cuda_elem_c(ab, t, off[1] + i * sam + k * sak), t) *
                   (uint64_t)ffb_ld_i64(cuda_elem_c(bb, t, off[2] + k * sbk + j * sbn), t);
        ffb_st_i64(cuda_elem(db, t, off[0] + i * sdm + j * sdn), t, ffb_u64_to_i64(acc));
    }
}

extern "C" ff_status cuda_matmul_int(cuda_ctx *c, const ff_view *dst, const ff_view *a, const ff_view *b)
{
    int r = dst->ndim;
    cuda_walk w;
    memset(&w, 0, sizeof w);
    w.ndim = r - 2, w.nv = 3;
    const ff_view *vs[] = {dst, a, b};
    for (int i = 0; i < 3; i++) {
        w.offset[i] = vs[i]->offset;
        for (int d = 0; d < r - 2; d++) w.strides[i][d] = vs[i]->strides[d];
    }
    for (int d = 0; d < r - 2; d++) w.shape[d] = dst->shape[d];
    cuda_walk_merge(&w);
    int64_t M = dst->shape[r - 2], N = dst->shape[r - 1], K = a->shape[r - 1];
    int64_t n = cuda_walk_numel(&w) * M * N;
    if (n == 0) return FF_OK;
    CUDA_LAUNCH(k_matmul_int, cuda_blocks(n), CUDA_THREADS, c->stream)(
        w, dst->buf, a->buf, b->buf, dst->dtype, M, N, K, dst->strides[r - 2], dst->strides[r - 1], a->strides[r - 2],
        a->strides[r - 1], b->strides[r - 2], b->strides[r - 1], n);
    return cuda_launch_check(c, "matmul", "k_matmul_int");
}
