/*
 * Tensor-core primitives for the kernels that use them (sm_80 and later; the host checks
 * the device's compute capability before it launches one): warp-wide fragment loads from
 * shared memory (ldmatrix), the m16n8k16 half-precision MMA with f32 accumulators, the
 * m16n8k8 TF32 MMA and the 3xTF32 split that gives f32 products on it, 16-byte
 * asynchronous copies global -> shared (cp.async), and packing two floats into a half2
 * register with one rounding each. Fragment layouts are the PTX ISA's for mma.m16n8k16
 * and mma.m16n8k8 (spelled out, and emulated lane by lane, in cuda_emu_blocks.h). Under
 * FF_CUDA_EMU the same calls run on the emulated blocks; the copies are synchronous there.
 */
#ifndef FF_CUDA_MMA_CUH
#define FF_CUDA_MMA_CUH

#include <stdint.h>

#include "cuda_device.cuh"

#if !defined(FF_CUDA_EMU)
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#endif

#if defined(__CUDA_ARCH__)
#define CUDA_UNROLL _Pragma("unroll")
#else
#define CUDA_UNROLL
#endif

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
#define CUDA_MMA_NONE 1 /* compiled for an older device: the kernels trap, the host never launches them */
#endif

/* Four 8 x 8 b16 matrices from shared memory: `row` is this lane's row (lane l: row l % 8
 * of matrix l / 8, 16 bytes, 16-byte aligned); with trans, each matrix is transposed. */
template <bool TRANS> __device__ __forceinline__ void cuda_ldsm_x4(uint32_t r[4], const void *row)
{
#if defined(FF_CUDA_EMU)
    cuda_emu_ldmatrix_x4(r, row, TRANS);
#elif defined(CUDA_MMA_NONE)
    (void)r, (void)row;
    __trap();
#else
    unsigned a = (unsigned)__cvta_generic_to_shared(row);
    if (TRANS)
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                     : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(a));
    else
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                     : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(a));
#endif
}

/* d += A B: A 16 x 16 (a[4]), B 16 x 8 (b[2]), both bf16 (BF16) or f16, d 16 x 8 f32. */
template <bool BF16> __device__ __forceinline__ void cuda_mma_16816(float d[4], const uint32_t a[4], const uint32_t b[2])
{
#if defined(FF_CUDA_EMU)
    cuda_emu_mma_16816(d, a, b, BF16);
#elif defined(CUDA_MMA_NONE)
    (void)d, (void)a, (void)b;
    __trap();
#else
    if (BF16)
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
                     "{%8, %9}, {%0, %1, %2, %3};\n"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
    else
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
                     "{%8, %9}, {%0, %1, %2, %3};\n"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#endif
}

/* x rounded to TF32 (10 fraction bits; to nearest, ties away from zero: cvt.rna), as the
 * f32 bits an m16n8k8 tf32 MMA reads; a NaN stays a NaN. */
__device__ __forceinline__ uint32_t cuda_tf32_of(float x)
{
#if defined(FF_CUDA_EMU) || defined(CUDA_MMA_NONE)
    uint32_t u;
    memcpy(&u, &x, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) return 0x7fffffffu;
    return (u + 0x1000u) & 0xffffe000u; /* a carry past the largest finite value makes inf, as rounding does */
#else
    uint32_t r;
    asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(r) : "f"(x));
    return r;
#endif
}

/* x as hi + lo for 3xTF32: hi = tf32(x), lo = tf32(x - hi); together about 21 bits of x. */
__device__ __forceinline__ void cuda_tf32_split(float x, uint32_t *hi, uint32_t *lo)
{
    *hi = cuda_tf32_of(x);
    float h;
    memcpy(&h, hi, 4);
    *lo = cuda_tf32_of(x - h);
}

/* d += A B: A 16 x 8 (a[4]), B 8 x 8 (b[2]), both TF32, d 16 x 8 f32. Fragments (PTX ISA,
 * "mma.m16n8k8", g = lane / 4, t = lane % 4): a[0] (g, t), a[1] (g+8, t), a[2] (g, t+4),
 * a[3] (g+8, t+4); b[0] (k t, n g), b[1] (k t+4, n g); d as for m16n8k16. */
__device__ __forceinline__ void cuda_mma_1688_tf32(float d[4], const uint32_t a[4], const uint32_t b[2])
{
#if defined(FF_CUDA_EMU)
    cuda_emu_mma_1688_tf32(d, a, b);
#elif defined(CUDA_MMA_NONE)
    (void)d, (void)a, (void)b;
    __trap();
#else
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
                 "{%8, %9}, {%0, %1, %2, %3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#endif
}

/* d += A B in about f32 precision on the tensor cores (3xTF32, as CUTLASS's FastF32):
 * A = ah + al, B = bh + bl, d += al bh + ah bl + ah bh; al bl (~2^-22 of the product) is
 * left out. The small terms go first, so they are not lost against the big one. */
__device__ __forceinline__ void cuda_mma_1688_3xtf32(float d[4], const uint32_t ah[4], const uint32_t al[4],
                                                     const uint32_t bh[2], const uint32_t bl[2])
{
    cuda_mma_1688_tf32(d, al, bh);
    cuda_mma_1688_tf32(d, ah, bl);
    cuda_mma_1688_tf32(d, ah, bh);
}

/* lo and hi rounded (to nearest, ties to even) into one register, lo in the low half. */
template <bool BF16> __device__ __forceinline__ uint32_t cuda_pack_half2(float lo, float hi)
{
#if defined(FF_CUDA_EMU)
    uint16_t l = BF16 ? ffb_f64_to_bf16(lo) : ffb_f64_to_f16(lo), h = BF16 ? ffb_f64_to_bf16(hi) : ffb_f64_to_f16(hi);
    return (uint32_t)l | (uint32_t)h << 16;
#else
    uint32_t r;
    if (BF16) {
        __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
        memcpy(&r, &v, 4);
    } else {
        __half2 v = __floats2half2_rn(lo, hi);
        memcpy(&r, &v, 4);
    }
    return r;
#endif
}

/* x rounded to the half type (to nearest, ties to even), as its bits: cuda_half_bits's
 * result, by the device's conversion instruction. */
template <bool BF16> __device__ __forceinline__ uint16_t cuda_half_of(float x)
{
#if defined(FF_CUDA_EMU)
    return cuda_half_bits<BF16>(x);
#else
    return BF16 ? __bfloat16_as_ushort(__float2bfloat16_rn(x)) : __half_as_ushort(__float2half_rn(x));
#endif
}

/* The emulation's racecheck (cuda_emu_blocks.h): the running thread reads or writes n
 * bytes of shared memory at p. Nothing on a device (compute-sanitizer checks there). */
#if defined(FF_CUDA_EMU)
#define CUDA_SMEM_READ(p, n) cuda_emu_smem_access((p), (n), false)
#define CUDA_SMEM_WRITTEN(p, n) cuda_emu_smem_access((p), (n), true)
#else
#define CUDA_SMEM_READ(p, n) ((void)0)
#define CUDA_SMEM_WRITTEN(p, n) ((void)0)
#endif

/* 16 bytes global -> shared, completed by cuda_cp_async_wait (both 16-byte aligned). */
__device__ __forceinline__ void cuda_cp_async16(void *smem, const void *global)
{
#if defined(FF_CUDA_EMU)
    cuda_emu_cp_async(smem, global); /* racechecked until its wait */
#elif defined(CUDA_MMA_NONE)
    memcpy(smem, global, 16);
#else
    unsigned a = (unsigned)__cvta_generic_to_shared(smem);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(a), "l"(global));
#endif
}

__device__ __forceinline__ void cuda_cp_async_commit()
{
#if defined(FF_CUDA_EMU)
    cuda_emu_cp_commit();
#elif !defined(CUDA_MMA_NONE)
    asm volatile("cp.async.commit_group;\n" ::);
#endif
}

/* Waits until at most N committed groups are still in flight (this thread's). */
template <int N> __device__ __forceinline__ void cuda_cp_async_wait()
{
#if defined(FF_CUDA_EMU)
    cuda_emu_cp_wait(N);
#elif !defined(CUDA_MMA_NONE)
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
#endif
}

/* The block's dynamic shared memory. */
#if defined(FF_CUDA_EMU)
#define CUDA_DYN_SMEM(T) ((T *)cuda_emu_smem())
#else
#define CUDA_DYN_SMEM(T) ((T *)cuda_dyn_smem_raw)
extern __shared__ __align__(16) unsigned char cuda_dyn_smem_raw[];
#endif

#endif /* FF_CUDA_MMA_CUH */
