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

#if defined(FF_CUDA_EMU)
#include "cuda_emu.h" /* tests/cuda_emu: the kernels on the host */
#else
/* CUDA_LAUNCH(k, grid, block, stream)(args): the launch, spelled so that the host
 * emulation of tests/cuda_emu can turn it into a plain call */
#define CUDA_LAUNCH(k, grid, block, stream) k<<<(grid), (block), 0, (stream)>>>
#endif

#define CUDA_THREADS 256

/* cuda_walk_at (cuda_impl.h): element offsets of a walk, shared with the host tests. */
__device__ __forceinline__ void cuda_walk_at(const cuda_walk &w, int64_t n, int nv, int64_t *off)
{
    cuda_walk_offsets(&w, n, nv, off);
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

/* The halves of the kernels that template on their type (BF16: bf16, else f16): a value,
 * exact in float, and a double rounded once to the half (to nearest, ties to even), as
 * bits, which is what ffb_st_f64 stores. */
template <bool BF16> __device__ __forceinline__ float cuda_half_f32(uint16_t h)
{
    return BF16 ? ffb_bf16_to_f32(h) : ffb_f16_to_f32(h);
}

template <bool BF16> __device__ __forceinline__ uint16_t cuda_half_bits(double x)
{
    return BF16 ? ffb_f64_to_bf16(x) : ffb_f64_to_f16(x);
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

/* The sum of every thread's s over the block, returned to every thread (blockDim.x a
 * multiple of 32, <= 1024, every thread of the block calling): warp shuffles, then the
 * warps' sums in warp order, so a row sums in the same order on every run. The trailing
 * barrier lets the next call reuse the shared slots at once. */
__device__ static inline double cuda_block_sum(double s)
{
#if defined(FF_CUDA_EMU)
    return s; /* one thread */
#else
    __shared__ double w[32];
    for (int d = 16; d > 0; d /= 2) s += __shfl_down_sync(0xffffffffu, s, d);
    int lane = threadIdx.x % 32, wid = threadIdx.x / 32, nw = blockDim.x / 32;
    if (lane == 0) w[wid] = s;
    __syncthreads();
    s = 0.0;
    for (int i = 0; i < nw; i++) s += w[i];
    __syncthreads();
    return s;
#endif
}

#endif /* FF_CUDA_DEVICE_CUH */
