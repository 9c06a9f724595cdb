/*
 * The line entries: scan (cumsum / cumprod along one axis) and argsort (stable, along one
 * axis). One thread per line runs the reference's own per-line code, compiled for the
 * device (ffb_scan_line, ffb_argsort_line in backends/common/ff_backend_lines.h): scans
 * accumulate in double (floats) or wrap in 64 bits (integers) and round each prefix once;
 * argsort is the stable bottom-up merge sort (NaN last ascending, first descending, -0 ==
 * +0), so indices equal the reference's exactly. F16/BF16: argsort keys load as their
 * exact values (the f32 detour's order without its two conversions); scans sum in double
 * and round each prefix once to the half. argsort needs a device scratch of 48 bytes per
 * element. Parallel across lines only: one long line runs on one thread (a
 * CUB segmented sort / scan is the next step for those).
 */
#include "cuda_device.cuh"
#include "ff_backend_lines.h"

/* dst, src: the entry's views by value (lines start where ffb_line_start says). */
__global__ void k_scan(ff_view dst, ff_view src, int axis, int op, int64_t lines, int64_t len)
{
    ff_dtype t = src.dtype;
    int64_t es = (int64_t)ff_dtype_size(t), ss = src.ndim ? src.strides[axis] : 0, ds = dst.ndim ? dst.strides[axis] : 0;
    CUDA_FOR(n, lines) {
        int64_t so, dof;
        ffb_line_start(&dst, &src, axis, n, &dof, &so);
        ffb_scan_line(op, t, (const char *)src.buf + so * es, ss, (char *)dst.buf + dof * es, ds, len);
    }
}

__global__ void k_argsort(ff_view dst, ff_view src, int axis, int desc, int64_t lines, int64_t len, ffb_sort_key *keys)
{
    int64_t es = (int64_t)ff_dtype_size(src.dtype), ss = src.ndim ? src.strides[axis] : 0;
    int64_t ds = dst.ndim ? dst.strides[axis] : 0;
    CUDA_FOR(n, lines) {
        int64_t so, dof;
        ffb_line_start(&dst, &src, axis, n, &dof, &so);
        ffb_argsort_line(src.dtype, (const char *)src.buf + so * es, ss, (int64_t *)dst.buf + dof, ds, len, desc,
                         keys + 2 * len * n);
    }
}

extern "C" ff_status cuda_scan(void *ctx, int op, const ff_view *dst, const ff_view *src, int axis)
{
    cuda_ctx *c = (cuda_ctx *)ctx;
    ff_status st = ffb_scan_check_as(c->host, "cuda", op, dst, src, axis, 1); /* halves too */
    if (st) return st;
    int64_t len = src->ndim ? src->shape[axis] : 1, lines = len ? ff_view_numel(src) / len : 0;
    if (lines == 0 || (st = cuda_use_device(c, "scan"))) return st;
    CUDA_LAUNCH(k_scan, cuda_blocks(lines), CUDA_THREADS, c->stream)(*dst, *src, axis, op, lines, len);
    return cuda_launch_check(c, "scan", "k_scan");
}

extern "C" ff_status cuda_argsort(void *ctx, const ff_view *dst, const ff_view *src, int axis, int descending)
{
    cuda_ctx *c = (cuda_ctx *)ctx;
    ff_status st = ffb_argsort_check_as(c->host, "cuda", dst, src, axis, 1); /* halves too */
    if (st) return st;
    int64_t len = src->ndim ? src->shape[axis] : 1, lines = len ? ff_view_numel(src) / len : 0;
    if (lines == 0 || (st = cuda_use_device(c, "argsort"))) return st;
    ffb_sort_key *keys = (ffb_sort_key *)cuda_temp(c, "argsort", (size_t)(2 * len * lines) * sizeof *keys);
    if (!keys) return FF_ERR_OOM;
    CUDA_LAUNCH(k_argsort, cuda_blocks(lines), CUDA_THREADS, c->stream)(*dst, *src, axis, descending, lines, len, keys);
    st = cuda_launch_check(c, "argsort", "k_argsort");
    cuda_free(c, keys); /* stream order: reused only by later work */
    return st;
}
