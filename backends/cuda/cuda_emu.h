/*
 * Host emulation of the little CUDA C++ the kernels use, for tests/cuda_emu only: with
 * FF_CUDA_EMU defined, g++ compiles the .cu files as plain C++ and a kernel launch calls
 * the kernel once, on the calling thread, as a grid of one block of one thread. Every
 * kernel is a grid-stride loop (or loops over its rows or its part of a row), so that one
 * thread covers the whole launch; the block-wide combines of cuda_reduce.cu are the
 * identity for one thread. With a fake runtime over host memory (tests/cuda_emu) the
 * whole backend then runs ff-conformance on a machine without a GPU: everything but the
 * device compiler, CUDA's libm and the shuffle trees (test_cuda_reduce replays those).
 * Kernels whose threads cooperate (the tensor-core attention) launch through
 * CUDA_EMU_BLOCKS instead (cuda_emu_blocks.h): real blocks of fibers, with barriers.
 */
#ifndef FF_CUDA_EMU_H
#define FF_CUDA_EMU_H

/* cuda_runtime_api.h gave them attribute meanings for host compilers: plain C++ here */
#undef __global__
#undef __device__
#undef __host__
#undef __forceinline__
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)

/* blockIdx, threadIdx, blockDim, gridDim (one thread's unless a block launch runs),
 * barriers, shuffles, ldmatrix and mma for kernels launched as whole blocks */
#include "cuda_emu_blocks.h"

/* CUDA_LAUNCH(k, grid, block, stream)(args): k(args), once; while the stream captures
 * (tests/cuda_emu/cuda_emu_graph.c) the call is recorded, its arguments by value, and
 * made at each launch of the graph instead. */
template <typename K> struct cuda_emu_launch_of {
    K k;
    template <typename... A> void operator()(const A &...a) const
    {
        K kk = k;
        cuda_emu_enqueue([=]() { kk(a...); });
    }
};
#define CUDA_LAUNCH(k, grid, block, stream) (void)(grid), (void)(block), (void)(stream), cuda_emu_launch_of<decltype(&k)>{&k}

static inline unsigned long long atomicCAS(unsigned long long *p, unsigned long long cmp, unsigned long long val)
{
    unsigned long long old = *p;
    if (old == cmp) *p = val;
    return old;
}

#endif /* FF_CUDA_EMU_H */
