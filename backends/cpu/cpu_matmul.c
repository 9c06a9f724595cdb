/*
 * Batched matmul: dst[..., M, N] = a[..., M, K] @ b[..., K, N].
 *
 * Supported: F32, F64, I32, I64, U8 (dst, a, b all the same dtype); BOOL is not.
 * Float products accumulate in double (exact products for f32) and round once;
 * integers accumulate in uint64 and wrap. K == 0 gives zeros.
 *
 * Loop order i-k-j: for each output row, a row of accumulators is updated with
 * a[i,k] * b[k, :], so the innermost loop runs along b's and the accumulators' last
 * axis (contiguous for a row-major b) instead of striding down b's columns.
 */
#include <stdlib.h>

#include "cpu_impl.h"
#include "cpu_iter.h"

int cpu_matmul_supported(ff_dtype t)
{
    return cpu_dtype_ok(t) && t != FF_BOOL;
}

static ff_status check_matmul(void *ctx, const ff_view *dst, const ff_view *a, const ff_view *b)
{
    ff_status st;
    if ((st = cpu_check_view(ctx, "matmul", "dst", dst)) || (st = cpu_check_view(ctx, "matmul", "a", a)) ||
        (st = cpu_check_view(ctx, "matmul", "b", b)))
        return st;
    if (a->dtype != dst->dtype || b->dtype != dst->dtype)
        return cpu_error(ctx, FF_ERR_INVALID, "cpu matmul: dtypes differ (dst %s, a %s, b %s)",
                         cpu_dtype_name(dst->dtype), cpu_dtype_name(a->dtype), cpu_dtype_name(b->dtype));
    if (!cpu_matmul_supported(dst->dtype) && !ff_dtype_is_complex(dst->dtype))
        return cpu_error(ctx, FF_ERR_UNSUPPORTED, "cpu matmul: not supported on %s", cpu_dtype_name(dst->dtype));
    int r = dst->ndim;
    if (r < 2 || a->ndim != r || b->ndim != r)
        return cpu_error(ctx, FF_ERR_INVALID, "cpu matmul: ranks must be equal and >= 2 (dst %d, a %d, b %d)",
                         (int)dst->ndim, (int)a->ndim, (int)b->ndim);
    for (int d = 0; d < r - 2; d++)
        if (a->shape[d] != dst->shape[d] || b->shape[d] != dst->shape[d])
            return cpu_error(ctx, FF_ERR_INVALID, "cpu matmul: batch dim %d differs (dst %lld, a %lld, b %lld)", d,
                             (long long)dst->shape[d], (long long)a->shape[d], (long long)b->shape[d]);
    if (a->shape[r - 2] != dst->shape[r - 2] || b->shape[r - 1] != dst->shape[r - 1] ||
        a->shape[r - 1] != b->shape[r - 2])
        return cpu_error(ctx, FF_ERR_INVALID, "cpu matmul: [%lld x %lld] @ [%lld x %lld] cannot give [%lld x %lld]",
                         (long long)a->shape[r - 2], (long long)a->shape[r - 1], (long long)b->shape[r - 2],
                         (long long)b->shape[r - 1], (long long)dst->shape[r - 2], (long long)dst->shape[r - 1]);
    return FF_OK;
}

/* Copies b's K x N matrix at offset bo into packed (row-major doubles), so the inner
 * loop below is a unit-stride axpy whatever b's layout (a transposed weight, a
 * broadcast row, ...). Packing costs K*N loads against the product's M*K*N. */
static void pack_b(double *packed, const void *b, ff_dtype t, int64_t bo, int64_t sbk, int64_t sbn, int64_t K,
                   int64_t N)
{
    for (int64_t k = 0; k < K; k++)
        for (int64_t j = 0; j < N; j++) packed[k * N + j] = cpu_load_f64(b, t, bo + k * sbk + j * sbn);
}

/* One matrix product at element offsets (ao, bo, dofs); row holds N accumulators and
 * packed K * N doubles (float dtypes only). */
static void matmul_one(const ff_view *dst, const ff_view *a, const ff_view *b, int64_t dofs, int64_t ao, int64_t bo,
                       void *row, double *packed)
{
    int r = dst->ndim;
    int64_t M = dst->shape[r - 2], N = dst->shape[r - 1], K = a->shape[r - 1];
    int64_t sam = a->strides[r - 2], sak = a->strides[r - 1];
    int64_t sbk = b->strides[r - 2], sbn = b->strides[r - 1];
    int64_t sdm = dst->strides[r - 2], sdn = dst->strides[r - 1];
    ff_dtype t = dst->dtype;

    if (cpu_is_float(t)) {
        double *acc = row;
        pack_b(packed, b->buf, t, bo, sbk, sbn, K, N);
        for (int64_t i = 0; i < M; i++) {
            for (int64_t j = 0; j < N; j++) acc[j] = 0.0;
            for (int64_t k = 0; k < K; k++) {
                double aik = cpu_load_f64(a->buf, t, ao + i * sam + k * sak);
                const double *bk = packed + k * N;
                for (int64_t j = 0; j < N; j++) acc[j] += aik * bk[j];
            }
            for (int64_t j = 0; j < N; j++) cpu_store_f64(dst->buf, t, dofs + i * sdm + j * sdn, acc[j]);
        }
    } else {
        uint64_t *acc = row;
        for (int64_t i = 0; i < M; i++) {
            for (int64_t j = 0; j < N; j++) acc[j] = 0;
            for (int64_t k = 0; k < K; k++) {
                uint64_t aik = (uint64_t)cpu_load_i64(a->buf, t, ao + i * sam + k * sak);
                int64_t brow = bo + k * sbk;
                for (int64_t j = 0; j < N; j++) acc[j] += aik * (uint64_t)cpu_load_i64(b->buf, t, brow + j * sbn);
            }
            for (int64_t j = 0; j < N; j++)
                cpu_store_i64(dst->buf, t, dofs + i * sdm + j * sdn, ffb_u64_to_i64(acc[j]));
        }
    }
}

ff_status cpu_matmul(void *ctx, const ff_view *dst, const ff_view *a, const ff_view *b)
{
    ff_status st = check_matmul(ctx, dst, a, b);
    if (st) return st;
    if (ff_view_numel(dst) == 0) return FF_OK;
    if (ff_dtype_is_complex(dst->dtype)) return cpu_complex_matmul(ctx, dst, a, b);

    int r = dst->ndim;
    int64_t N = dst->shape[r - 1], K = a->shape[r - 1];
    _Static_assert(sizeof(double) == sizeof(uint64_t), "the row buffer holds doubles or uint64s");
    void *row = malloc((size_t)N * sizeof(double));
    double *packed = cpu_is_float(dst->dtype) && K > 0 ? malloc((size_t)(K * N) * sizeof(double)) : NULL;
    if (!row || (cpu_is_float(dst->dtype) && K > 0 && !packed)) {
        free(row);
        free(packed);
        return cpu_error(ctx, FF_ERR_OOM, "cpu matmul: out of memory for a %lld x %lld work buffer", (long long)K,
                         (long long)N);
    }

    /* walk the batch dims (possibly none: one row of one matrix) */
    const ff_view *vs[] = {dst, a, b};
    cpu_iter it;
    for (cpu_iter_init(&it, r - 2, dst->shape, 3, vs); !it.done; cpu_iter_next(&it))
        for (int64_t j = 0; j < it.len; j++)
            matmul_one(dst, a, b, it.off[0] + j * it.step[0], it.off[1] + j * it.step[1], it.off[2] + j * it.step[2],
                       row, packed);
    free(row);
    free(packed);
    return FF_OK;
}
