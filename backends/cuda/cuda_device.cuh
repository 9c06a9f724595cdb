/*
 * Device helpers shared by the .cu files: element offsets of a walk, the grid of a
 * grid-stride loop, element addresses. Kernels compute with the FFB_HD functions of
 * backends/common/ff_backend_scalar.h (loads, stores, op formulas), exactly as the
 * reference does on the host; the whole plugin is compiled with -fmad=false so that
 * no a * b + c is contracted into an FMA the reference does not do.
 */
#ifndef FF_CUDA_DEVICE_CUH
#define FF_CUDA_DEVICE_CUH

#include "cuda_impl.h"

#define CUDA_THREADS 256

/* Offsets of element n for the first nv operands of w (64-bit indexing throughout). */
__device__ __forceinline__ void cuda_walk_at(const cuda_walk &w, int64_t n, int nv, int64_t *off)
{
    for (int i = 0; i < nv; i++) off[i] = w.offset[i];
    if (w.ndim == 1) {
        for (int i = 0; i < nv; i++) off[i] += n * w.strides[i][0];
        return;
    }
    for (int d = w.ndim - 1; d >= 0; d--) {
        int64_t s = w.shape[d], q = n / s, k = n - q * s;
        n = q;
        for (int i = 0; i < nv; i++) off[i] += k * w.strides[i][d];
    }
}

/* The byte address of element `at` of a buffer of dtype t. */
__device__ __forceinline__ char *cuda_elem(void *buf, ff_dtype t, int64_t at)
{
    return (char *)buf + at * (int64_t)ff_dtype_size(t);
}

__device__ __forceinline__ const char *cuda_elem_c(const void *buf, ff_dtype t, int64_t at)
{
    return (const char *)buf + at * (int64_t)ff_dtype_size(t);
}

#define CUDA_FOR(n, total) \
    for (int64_t n = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; n < (total); n += (int64_t)gridDim.x * blockDim.x)

/* Blocks for a grid-stride loop over n elements: enough to fill the device, capped so
 * the grid stays within limits (the loop covers the rest). */
static inline unsigned cuda_blocks(int64_t n)
{
    int64_t b = (n + CUDA_THREADS - 1) / CUDA_THREADS;
    if (b > 65536) b = 65536;
    return (unsigned)(b > 0 ? b : 1);
}

#endif /* FF_CUDA_DEVICE_CUH */
