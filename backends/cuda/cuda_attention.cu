/*
 * The attention entry (backend_abi.h, "Scaled dot-product attention"), flash style: the
 * T x T scores never reach memory.
 *
 * forward (k_att_fwd): one block per (b, h, tile of qt query rows); each warp owns
 * ATT_ROWS rows and sums their output rows in shared memory (lane l the columns l, l+32,
 * ...), with a running maximum m and sum l per row (the online softmax). Tiles of ATT_KT
 * keys go through shared memory: lane l scores key l of the tile against the row (q from
 * shared memory, K rows padded to D + 1 so the 32 lanes hit 32 banks), the warp's max and
 * sum come from __shfl_xor_sync trees, and the probabilities go through shared memory
 * into the output columns. A tile rescales what came before by exp(m_old - m_new) once.
 * The sums sit in shared memory rather than registers: register arrays would need the
 * row and column loops unrolled per head dim, which cost minutes of ptxas time and 250
 * registers a thread (measured with an earlier version of this file).
 *
 * backward, deterministic (nothing is accumulated by two blocks, no atomics):
 *   k_att_dq  over query tiles as the forward: delta = rowsum(go * o) (saved for the
 *             next kernel), p = exp(s - lse) recomputed, ds = p (go v^T - delta), gq;
 *   k_att_dkv over key tiles: warps own key rows, lanes the queries of a tile of Q and
 *             go in shared memory; gk = scale ds^T q and gv = p^T go in registers.
 *
 * Sums run in the accumulation type T: float for F32/F16/BF16 (loads convert, each
 * output rounds once), double for F64; products are explicit fma() (the plugin is built
 * with -fmad=false for the elementwise formulas; the attention sums need no such care).
 * A block has 8 warps (64 rows), halved until its tiles fit the device's shared memory
 * (F64 at D = 256 needs fewer).
 *
 * Which kernels: with FF_CUDA_ATTENTION=mma (opt-in until a GPU run has passed with them),
 * F16/BF16 and F32 (3xTF32) with D, Dv <= 128 (sm_80 and later, tiles within the device's
 * shared memory) the tensor-core kernels of cuda_attention_mma.cuh; else F32 with D, Dv
 * <= 64 the register tiles of cuda_attention_tiled.cuh; everything else (F64, F32 with D
 * or Dv > 64, the halves by default, and all of it with FF_CUDA_ATTENTION=simple) the
 * general kernels below.
 *
 * Under FF_CUDA_EMU (tests/cuda_emu: one thread a launch) a warp is one lane and a block
 * one warp: the same loops, strided by ATT_LANES, run every key and column on the one
 * thread, the shuffle trees are the identity and shared memory is a host buffer.
 */
#include <stdlib.h>
#include <string.h>

#include "cuda_device.cuh"
#include "ff_backend_attention.h"

#if defined(FF_CUDA_EMU)
#define ATT_LANES 1
#define ATT_SYNC() ((void)0)
#define ATT_SYNCWARP() ((void)0)
#else
#define ATT_LANES 32
#define ATT_SYNC() __syncthreads()
#define ATT_SYNCWARP() __syncwarp()
#endif
#define ATT_ROWS 8                        /* rows (queries, or keys for dkv) a warp owns */
#define ATT_KT 32                         /* keys (queries for dkv) of a shared tile */
#define ATT_KPL (ATT_KT / ATT_LANES)      /* of them, per lane */
#define ATT_WARPS_MAX 8                   /* a block: 256 threads */

/* A 4-D view as the kernels read it: element [b, h, t, d] at offset + b s[0] + ... */
typedef struct att_view {
    void *buf;
    ff_dtype dtype;
    int64_t offset, s[4];
} att_view;

typedef struct att_args {
    att_view q, k, v, m, o, l, go, gq, gk, gv; /* m: the mask (kind != NONE); o, l: the forward's */
    void *delta;                              /* backward: rowsum(go * o), T per query row */
    int64_t B, H, Tq, Tk, D, Dv;
    double scale;
    int causal, kind;
    double drop, keep; /* dropout (F32/F64): its probability (0: none) and 1 / (1 - drop) */
    uint64_t seed;     /* keys the dropout mask's Philox */
} att_args;

__device__ __forceinline__ int64_t att_off(const att_view &v, int64_t b, int64_t h, int64_t t, int64_t d)
{
    return v.offset + b * v.s[0] + h * v.s[1] + t * v.s[2] + d * v.s[3];
}

__device__ __forceinline__ double att_ld(const att_view &v, int64_t b, int64_t h, int64_t t, int64_t d)
{
    return ffb_ld_f64(cuda_elem_c(v.buf, v.dtype, att_off(v, b, h, t, d)), v.dtype);
}

__device__ __forceinline__ void att_st(const att_view &v, int64_t b, int64_t h, int64_t t, int64_t d, double x)
{
    ffb_st_f64(cuda_elem(v.buf, v.dtype, att_off(v, b, h, t, d)), v.dtype, x);
}

__device__ __forceinline__ float att_exp(float x) { return expf(x); }
__device__ __forceinline__ double att_exp(double x) { return exp(x); }
__device__ __forceinline__ float att_fma(float a, float b, float c) { return fmaf(a, b, c); }
__device__ __forceinline__ double att_fma(double a, double b, double c) { return fma(a, b, c); }
template <typename T> __device__ __forceinline__ T att_max2(T a, T b) { return a > b ? a : b; }

/* The warp's maximum and sum, in every lane (xor trees); one lane: itself. */
template <typename T> __device__ __forceinline__ T att_warp_max(T x)
{
#if !defined(FF_CUDA_EMU)
    for (int o = 16; o > 0; o /= 2) x = att_max2(x, __shfl_xor_sync(0xffffffffu, x, o));
#endif
    return x;
}

template <typename T> __device__ __forceinline__ T att_warp_sum(T x)
{
#if !defined(FF_CUDA_EMU)
    for (int o = 16; o > 0; o /= 2) x += __shfl_xor_sync(0xffffffffu, x, o);
#endif
    return x;
}

/* The block's dynamic shared memory (a host buffer under the emulation, set per launch). */
#if defined(FF_CUDA_EMU)
static thread_local void *att_emu_smem;
template <typename T> static inline T *att_smem() { return (T *)att_emu_smem; }
#else
template <typename T> __device__ __forceinline__ T *att_smem()
{
    extern __shared__ double att_smem_raw[]; /* double: aligned for either T */
    return (T *)att_smem_raw;
}
#endif

/* s with the mask applied: -inf where key j takes no part in row i. */
template <typename T>
__device__ __forceinline__ T att_mask(T s, const att_args &a, int64_t b, int64_t h, int64_t i, int64_t j)
{
    if (a.causal && j > i) return -(T)INFINITY;
    if (a.kind == FF_ATTENTION_MASK_BOOL) return *cuda_elem_c(a.m.buf, FF_BOOL, att_off(a.m, b, h, i, j)) ? s : -(T)INFINITY;
    if (a.kind == FF_ATTENTION_MASK_ADD) return s + (T)att_ld(a.m, b, h, i, j);
    return s;
}

/* The dropout factor of element (b, h, i, j) of [B, H, Tq, Tk], backend_abi.h's rule
 * (ff_dropout's mask bit for bit): 0 where the element's uniform is below drop, else
 * 1 / (1 - drop) rounded to T; 1 without dropout. */
template <typename T>
__device__ __forceinline__ T att_drop(const att_args &a, int64_t b, int64_t h, int64_t i, int64_t j)
{
    if (a.drop <= 0) return (T)1;
    uint64_t n = (uint64_t)(((b * a.H + h) * a.Tq + i) * a.Tk + j);
    if (sizeof(T) == 8) return ff_random_uniform01(a.seed, n) >= a.drop ? (T)a.keep : (T)0;
    return ff_random_uniform_f32(a.seed, n, 0.0, 1.0) >= (float)a.drop ? (T)(float)a.keep : (T)0;
}

template <typename T> __device__ __forceinline__ T att_p(T s, T lse)
{
    return s == -(T)INFINITY || lse == -(T)INFINITY ? (T)0 : att_exp(s - lse);
}

template <typename T> __device__ __forceinline__ T att_dot(const T *x, const T *y, int64_t n)
{
    T acc = 0;
    for (int64_t d = 0; d < n; d++) acc = att_fma(x[d], y[d], acc);
    return acc;
}

/* Rows r0 .. r0+n-1 of a view into a shared tile (row stride ld), zeros past `valid` rows. */
template <typename T>
__device__ __forceinline__ void att_load(T *tile, int64_t ld, const att_view &v, int64_t b, int64_t h, int64_t r0,
                                         int64_t n, int64_t valid, int64_t cols)
{
    for (int64_t e = threadIdx.x; e < n * cols; e += blockDim.x) {
        int64_t r = e / cols, d = e - r * cols;
        tile[r * ld + d] = r < valid ? (T)att_ld(v, b, h, r0 + r, d) : (T)0;
    }
}

/* ---- forward ---------------------------------------------------------------------- */

/* Shared memory (T): Qs qt x D, Os qt x Dv (the output rows being summed), Ms and Ls qt
 * (running maximum and sum), Ks KT x (D + 1), Vs KT x Dv, Ps KT per warp. A warp's rows
 * are its own: their Os, Ms, Ls entries are touched by that warp only. */
template <typename T> __global__ void k_att_fwd(att_args a)
{
    const int lane = threadIdx.x % ATT_LANES, warp = threadIdx.x / ATT_LANES, nwarps = blockDim.x / ATT_LANES;
    const int64_t D = a.D, Dv = a.Dv, qt = (int64_t)nwarps * ATT_ROWS, tiles = (a.Tq + qt - 1) / qt;
    T *Qs = att_smem<T>(), *Os = Qs + qt * D, *Ms = Os + qt * Dv, *Ls = Ms + qt, *Ks = Ls + qt;
    T *Vs = Ks + ATT_KT * (D + 1), *Ps = Vs + ATT_KT * Dv + warp * ATT_KT;
    const T scale = (T)a.scale, ninf = -(T)INFINITY;
    for (int64_t blk = blockIdx.x; blk < a.B * a.H * tiles; blk += gridDim.x) {
        int64_t bh = blk / tiles, i0 = (blk - bh * tiles) * qt, b = bh / a.H, h = bh - b * a.H;
        ATT_SYNC(); /* the previous block's tiles are consumed */
        att_load(Qs, D, a.q, b, h, i0, qt, a.Tq - i0, D);
        for (int64_t e = threadIdx.x; e < qt * Dv; e += blockDim.x) Os[e] = 0;
        for (int64_t e = threadIdx.x; e < qt; e += blockDim.x) Ms[e] = ninf, Ls[e] = 0;
        int64_t kend = a.causal && i0 + qt < a.Tk ? i0 + qt : a.Tk; /* causal: no key past the last row */
        for (int64_t j0 = 0; j0 < kend; j0 += ATT_KT) {
            int64_t n = kend - j0 < ATT_KT ? kend - j0 : ATT_KT;
            ATT_SYNC();
            att_load(Ks, D + 1, a.k, b, h, j0, n, n, D);
            att_load(Vs, Dv, a.v, b, h, j0, n, n, Dv);
            ATT_SYNC();
            for (int64_t ri = (int64_t)warp * ATT_ROWS; ri < (int64_t)(warp + 1) * ATT_ROWS; ri++) {
                int64_t i = i0 + ri;
                if (i >= a.Tq) break; /* the same for the whole warp */
                T s[ATT_KPL], tmax = ninf;
                for (int c = 0; c < ATT_KPL; c++) {
                    int64_t jj = lane + c * ATT_LANES;
                    s[c] = jj < n ? att_mask(scale * att_dot(Qs + ri * D, Ks + jj * (D + 1), D), a, b, h, i, j0 + jj) : ninf;
                    tmax = att_max2(tmax, s[c]);
                }
                tmax = att_warp_max(tmax);
                if (tmax == ninf) continue; /* nothing in this tile for row i: m, l, o stay */
                T mold = Ms[ri], mnew = att_max2(mold, tmax), corr = mold == ninf ? (T)0 : att_exp(mold - mnew), psum = 0;
                for (int c = 0; c < ATT_KPL; c++) {
                    int64_t jj = lane + c * ATT_LANES;
                    T p = s[c] == ninf ? (T)0 : att_exp(s[c] - mnew);
                    Ps[jj] = jj < n ? p * att_drop<T>(a, b, h, i, j0 + jj) : p; /* lse: undropped */
                    psum += p;
                }
                psum = att_warp_sum(psum);
                ATT_SYNCWARP(); /* every lane has read Ms[ri] and written Ps */
                if (lane == 0) Ms[ri] = mnew, Ls[ri] = Ls[ri] * corr + psum;
                for (int64_t d = lane; d < Dv; d += ATT_LANES) {
                    T acc = Os[ri * Dv + d] * corr;
                    for (int64_t jj = 0; jj < n; jj++) acc = att_fma(Ps[jj], Vs[jj * Dv + d], acc);
                    Os[ri * Dv + d] = acc;
                }
                ATT_SYNCWARP(); /* Ps is the next row's; Ms, Ls written */
            }
        }
        ATT_SYNC(); /* with no key tile, Os, Ms, Ls were set by other warps */
        for (int64_t ri = (int64_t)warp * ATT_ROWS; ri < (int64_t)(warp + 1) * ATT_ROWS; ri++) {
            int64_t i = i0 + ri;
            if (i >= a.Tq) break;
            T l = Ls[ri], inv = l > 0 ? (T)1 / l : (T)0;
            for (int64_t d = lane; d < Dv; d += ATT_LANES) att_st(a.o, b, h, i, d, (double)(Os[ri * Dv + d] * inv));
            if (lane == 0) att_st(a.l, b, h, 0, i, l > 0 ? (double)(Ms[ri] + log(l)) : -INFINITY);
        }
    }
}

/* ---- backward: gq (and delta) over query tiles --------------------------------------- */

/* Shared memory (T): Qs qt x D, Gs qt x Dv (go), Gq qt x D (sums), Lse and Dl qt, Ks
 * KT x (D + 1), Vs KT x (Dv + 1), Ps KT per warp (ds of the row). */
template <typename T> __global__ void k_att_dq(att_args a)
{
    const int lane = threadIdx.x % ATT_LANES, warp = threadIdx.x / ATT_LANES, nwarps = blockDim.x / ATT_LANES;
    const int64_t D = a.D, Dv = a.Dv, qt = (int64_t)nwarps * ATT_ROWS, tiles = (a.Tq + qt - 1) / qt;
    T *Qs = att_smem<T>(), *Gs = Qs + qt * D, *Gq = Gs + qt * Dv, *Lse = Gq + qt * D, *Dl = Lse + qt, *Ks = Dl + qt;
    T *Vs = Ks + ATT_KT * (D + 1), *Ps = Vs + ATT_KT * (Dv + 1) + warp * ATT_KT, *delta = (T *)a.delta;
    const T scale = (T)a.scale, ninf = -(T)INFINITY;
    for (int64_t blk = blockIdx.x; blk < a.B * a.H * tiles; blk += gridDim.x) {
        int64_t bh = blk / tiles, i0 = (blk - bh * tiles) * qt, b = bh / a.H, h = bh - b * a.H;
        ATT_SYNC();
        att_load(Qs, D, a.q, b, h, i0, qt, a.Tq - i0, D);
        att_load(Gs, Dv, a.go, b, h, i0, qt, a.Tq - i0, Dv);
        for (int64_t e = threadIdx.x; e < qt * D; e += blockDim.x) Gq[e] = 0;
        ATT_SYNC();
        for (int64_t ri = (int64_t)warp * ATT_ROWS; ri < (int64_t)(warp + 1) * ATT_ROWS; ri++) {
            int64_t i = i0 + ri;
            T part = 0;
            for (int64_t d = lane; i < a.Tq && d < Dv; d += ATT_LANES)
                part = att_fma(Gs[ri * Dv + d], (T)att_ld(a.o, b, h, i, d), part);
            part = att_warp_sum(part);
            if (lane == 0) {
                Dl[ri] = part, Lse[ri] = i < a.Tq ? (T)att_ld(a.l, b, h, 0, i) : ninf;
                if (i < a.Tq) delta[bh * a.Tq + i] = part;
            }
        }
        int64_t kend = a.causal && i0 + qt < a.Tk ? i0 + qt : a.Tk;
        for (int64_t j0 = 0; j0 < kend; j0 += ATT_KT) {
            int64_t n = kend - j0 < ATT_KT ? kend - j0 : ATT_KT;
            ATT_SYNC(); /* also publishes Lse, Dl the first time */
            att_load(Ks, D + 1, a.k, b, h, j0, n, n, D);
            att_load(Vs, Dv + 1, a.v, b, h, j0, n, n, Dv);
            ATT_SYNC();
            for (int64_t ri = (int64_t)warp * ATT_ROWS; ri < (int64_t)(warp + 1) * ATT_ROWS; ri++) {
                int64_t i = i0 + ri;
                T lse = Lse[ri], dl = Dl[ri];
                if (i >= a.Tq) break;      /* warp-uniform */
                if (lse == ninf) continue; /* every key masked: zero gradient */
                for (int c = 0; c < ATT_KPL; c++) {
                    int64_t jj = lane + c * ATT_LANES;
                    T ds = 0;
                    if (jj < n) {
                        T p = att_p(att_mask(scale * att_dot(Qs + ri * D, Ks + jj * (D + 1), D), a, b, h, i, j0 + jj), lse);
                        if (p != 0)
                            ds = p * (att_dot(Gs + ri * Dv, Vs + jj * (Dv + 1), Dv) * att_drop<T>(a, b, h, i, j0 + jj) - dl);
                    }
                    Ps[jj] = ds;
                }
                ATT_SYNCWARP();
                for (int64_t d = lane; d < D; d += ATT_LANES) {
                    T acc = Gq[ri * D + d];
                    for (int64_t jj = 0; jj < n; jj++) acc = att_fma(Ps[jj], Ks[jj * (D + 1) + d], acc);
                    Gq[ri * D + d] = acc;
                }
                ATT_SYNCWARP();
            }
        }
        for (int64_t ri = (int64_t)warp * ATT_ROWS; ri < (int64_t)(warp + 1) * ATT_ROWS; ri++) {
            int64_t i = i0 + ri;
            if (i >= a.Tq) break;
            for (int64_t d = lane; d < D; d += ATT_LANES) att_st(a.gq, b, h, i, d, (double)(scale * Gq[ri * D + d]));
        }
    }
}

/* ---- backward: gk, gv over key tiles ------------------------------------------------- */

/* Shared memory (T): Ks kt x D, Vs kt x Dv, Gk kt x D, Gv kt x Dv (sums), Qs KT x (D + 1),
 * Gs KT x (Dv + 1) (go), Lq and Dl KT (lse, delta of the queries), Ps and Ds KT per warp. */
template <typename T> __global__ void k_att_dkv(att_args a)
{
    const int lane = threadIdx.x % ATT_LANES, warp = threadIdx.x / ATT_LANES, nwarps = blockDim.x / ATT_LANES;
    const int64_t D = a.D, Dv = a.Dv, kt = (int64_t)nwarps * ATT_ROWS, tiles = (a.Tk + kt - 1) / kt;
    T *Ks = att_smem<T>(), *Vs = Ks + kt * D, *Gk = Vs + kt * Dv, *Gv = Gk + kt * D, *Qs = Gv + kt * Dv;
    T *Gs = Qs + ATT_KT * (D + 1), *Lq = Gs + ATT_KT * (Dv + 1), *Dl = Lq + ATT_KT, *Ps = Dl + ATT_KT + warp * 2 * ATT_KT;
    T *Ds = Ps + ATT_KT;
    const T *delta = (const T *)a.delta;
    const T scale = (T)a.scale;
    for (int64_t blk = blockIdx.x; blk < a.B * a.H * tiles; blk += gridDim.x) {
        int64_t bh = blk / tiles, j0 = (blk - bh * tiles) * kt, b = bh / a.H, h = bh - b * a.H;
        ATT_SYNC();
        att_load(Ks, D, a.k, b, h, j0, kt, a.Tk - j0, D);
        att_load(Vs, Dv, a.v, b, h, j0, kt, a.Tk - j0, Dv);
        for (int64_t e = threadIdx.x; e < kt * D; e += blockDim.x) Gk[e] = 0;
        for (int64_t e = threadIdx.x; e < kt * Dv; e += blockDim.x) Gv[e] = 0;
        /* causal: query i sees key j only when i >= j, so the queries start at the first key */
        for (int64_t q0 = a.causal ? j0 : 0; q0 < a.Tq; q0 += ATT_KT) {
            int64_t n = a.Tq - q0 < ATT_KT ? a.Tq - q0 : ATT_KT;
            ATT_SYNC();
            att_load(Qs, D + 1, a.q, b, h, q0, n, n, D);
            att_load(Gs, Dv + 1, a.go, b, h, q0, n, n, Dv);
            for (int64_t e = threadIdx.x; e < n; e += blockDim.x) {
                Lq[e] = (T)att_ld(a.l, b, h, 0, q0 + e);
                Dl[e] = delta[bh * a.Tq + q0 + e];
            }
            ATT_SYNC();
            for (int64_t rj = (int64_t)warp * ATT_ROWS; rj < (int64_t)(warp + 1) * ATT_ROWS; rj++) {
                int64_t j = j0 + rj;
                if (j >= a.Tk) break; /* warp-uniform */
                for (int c = 0; c < ATT_KPL; c++) {
                    int64_t ii = lane + c * ATT_LANES;
                    T p = 0, ds = 0;
                    if (ii < n) {
                        p = att_p(att_mask(scale * att_dot(Qs + ii * (D + 1), Ks + rj * D, D), a, b, h, q0 + ii, j), Lq[ii]);
                        T f = att_drop<T>(a, b, h, q0 + ii, j);
                        if (p != 0) ds = p * (att_dot(Gs + ii * (Dv + 1), Vs + rj * Dv, Dv) * f - Dl[ii]);
                        p *= f; /* gv = drop(p)^T go */
                    }
                    Ps[ii] = p, Ds[ii] = ds;
                }
                ATT_SYNCWARP();
                for (int64_t d = lane; d < Dv; d += ATT_LANES) {
                    T acc = Gv[rj * Dv + d];
                    for (int64_t ii = 0; ii < n; ii++) acc = att_fma(Ps[ii], Gs[ii * (Dv + 1) + d], acc);
                    Gv[rj * Dv + d] = acc;
                }
                for (int64_t d = lane; d < D; d += ATT_LANES) {
                    T acc = Gk[rj * D + d];
                    for (int64_t ii = 0; ii < n; ii++) acc = att_fma(Ds[ii], Qs[ii * (D + 1) + d], acc);
                    Gk[rj * D + d] = acc;
                }
                ATT_SYNCWARP();
            }
        }
        ATT_SYNC(); /* with no query tile, Gk and Gv were zeroed by other warps */
        for (int64_t rj = (int64_t)warp * ATT_ROWS; rj < (int64_t)(warp + 1) * ATT_ROWS; rj++) {
            int64_t j = j0 + rj;
            if (j >= a.Tk) break;
            for (int64_t d = lane; d < D; d += ATT_LANES) att_st(a.gk, b, h, j, d, (double)(scale * Gk[rj * D + d]));
            for (int64_t d = lane; d < Dv; d += ATT_LANES) att_st(a.gv, b, h, j, d, (double)Gv[rj * Dv + d]);
        }
    }
}

#include "cuda_attention_tiled.cuh" /* the f32 kernels with register tiles */
#include "cuda_attention_mma.cuh"   /* the half kernels on tensor cores */

/* ---- host side ------------------------------------------------------------------------- */

static att_view att_view_of(const ff_view *v)
{
    att_view r;
    r.buf = v->buf, r.dtype = v->dtype, r.offset = v->offset;
    for (int d = 0; d < 4; d++) r.s[d] = d < v->ndim ? v->strides[d] : 0;
    return r;
}

/* lse is [B, H, Tq]: read as [B, H, 0, t] with the row stride in s[3]. */
static att_view att_lse_view(const ff_view *v)
{
    att_view r = att_view_of(v);
    r.s[2] = 0, r.s[3] = v->strides[2];
    return r;
}

/* Shared bytes of each kernel (0 fwd, 1 dq, 2 dkv) for `warps` warps a block. */
static size_t att_shared(int kernel, int64_t warps, int64_t D, int64_t Dv, size_t esize)
{
    int64_t rows = warps * ATT_ROWS, kt = ATT_KT, n;
    if (kernel == 0) n = rows * (D + Dv + 2) + kt * (D + 1) + kt * Dv + warps * kt;
    else if (kernel == 1) n = rows * (2 * D + Dv + 2) + kt * (D + 1) + kt * (Dv + 1) + warps * kt;
    else n = rows * 2 * (D + Dv) + kt * (D + 1) + kt * (Dv + 1) + 2 * kt + warps * 2 * kt;
    return (size_t)n * esize;
}

/* Blocks for rows_total rows of every (b, h) in blocks of `rows` rows, capped (the kernels
 * loop over the rest). */
static int64_t att_blocks(const att_args &a, int64_t rows, int64_t rows_total)
{
    int64_t blocks = a.B * a.H * ((rows_total + rows - 1) / rows);
    return blocks > (int64_t)1 << 30 ? (int64_t)1 << 30 : blocks;
}

#if !defined(FF_CUDA_EMU)
/* k<<<blocks, threads, smem>>>(args) on the backend's stream, shared memory above 48 KiB
 * opted in: every attention kernel's launch. */
template <typename A>
static ff_status att_device_launch(cuda_ctx *c, void (*k)(A), const char *name, const A &args, int64_t blocks,
                                   int64_t threads, size_t smem)
{
    if (smem > 48 * 1024) {
        cudaError_t err = cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
        if (err != cudaSuccess) return cuda_fail(c, "attention", "cudaFuncSetAttribute", err);
    }
    k<<<(unsigned)blocks, (unsigned)threads, smem, c->stream>>>(args);
    return cuda_launch_check(c, "attention", name);
}
#endif

/* Launches kernel k over blocks of `threads` threads that own `rows` rows each, with `smem`
 * bytes. */
static ff_status att_launch(cuda_ctx *c, void (*k)(att_args), const char *name, const att_args &a, int64_t threads,
                            int64_t rows, int64_t rows_total, size_t smem)
{
    int64_t blocks = att_blocks(a, rows, rows_total);
    if (blocks == 0) return FF_OK;
#if defined(FF_CUDA_EMU)
    (void)c, (void)name, (void)threads;
    att_args args = a;
    cuda_emu_enqueue([=]() { /* now, or at each launch of a graph being recorded */
        att_emu_smem = malloc(smem ? smem : 1);
        if (!att_emu_smem) cuda_emu_die("out of host memory for the emulated shared memory");
        k(args);
        free(att_emu_smem);
        att_emu_smem = NULL;
    });
    return FF_OK;
#else
    return att_device_launch(c, k, name, a, blocks, threads, smem);
#endif
}

/* Warps a block for kernel `kernel`: 8, halved until its tiles fit the shared memory. */
static ff_status att_warps(cuda_ctx *c, int kernel, const att_args &a, size_t esize, int64_t *warps)
{
#if defined(FF_CUDA_EMU)
    (void)c, (void)kernel, (void)a, (void)esize;
    *warps = 1; /* one thread: a warp of one lane */
    return FF_OK;
#else
    size_t optin = c->smem_optin;
    int64_t w = ATT_WARPS_MAX;
    while (w > 1 && att_shared(kernel, w, a.D, a.Dv, esize) > optin) w /= 2;
    size_t need = att_shared(kernel, w, a.D, a.Dv, esize);
    if (need > optin)
        return cuda_error(c, FF_ERR_UNSUPPORTED, "cuda attention: head dims D = %lld, Dv = %lld in %s need %zu bytes of "
                          "shared memory a block, the device offers %zu", (long long)a.D, (long long)a.Dv,
                          esize == 8 ? "f64" : "f32", need, optin);
    *warps = w;
    return FF_OK;
#endif
}

template <typename T> static ff_status att_run(cuda_ctx *c, int op, att_args &a)
{
    size_t es = sizeof(T);
    int64_t w;
    ff_status st;
    if (op == FF_ATTENTION_FORWARD) {
        if ((st = att_warps(c, 0, a, es, &w))) return st;
        return att_launch(c, k_att_fwd<T>, "k_att_fwd", a, w * 32, w * ATT_ROWS, a.Tq, att_shared(0, w, a.D, a.Dv, es));
    }
    a.delta = cuda_temp(c, "attention", (size_t)(a.B * a.H * a.Tq > 0 ? a.B * a.H * a.Tq : 1) * es);
    if (!a.delta) return FF_ERR_OOM;
    if (!(st = att_warps(c, 1, a, es, &w)))
        st = att_launch(c, k_att_dq<T>, "k_att_dq", a, w * 32, w * ATT_ROWS, a.Tq, att_shared(1, w, a.D, a.Dv, es));
    if (!st && !(st = att_warps(c, 2, a, es, &w)))
        st = att_launch(c, k_att_dkv<T>, "k_att_dkv", a, w * 32, w * ATT_ROWS, a.Tk, att_shared(2, w, a.D, a.Dv, es));
    cuda_free(c, a.delta); /* stream order: reused only by later work */
    return st;
}

/* The tiled f32 kernels (cuda_attention_tiled.cuh): F32 with D, Dv <= ATT_DM, unless
 * FF_CUDA_ATTENTION=simple asks for the general ones (read per call, so a benchmark or a
 * check on new hardware can compare both in one process). */
static bool att_tiled_fits(const att_args &a, ff_dtype t)
{
    const char *e = getenv("FF_CUDA_ATTENTION");
    if (e && strcmp(e, "simple") == 0) return false;
    return t == FF_F32 && a.D <= ATT_DM && a.Dv <= ATT_DM && a.drop <= 0; /* no dropout in them */
}

static ff_status att_run_tiled(cuda_ctx *c, int op, att_args &a)
{
    if (op == FF_ATTENTION_FORWARD)
        return att_launch(c, k_att_fwd_tiled<ATT_FWD_R, ATT_CH / ATT_FWD_R>, "k_att_fwd_tiled", a, ATT_TR / ATT_FWD_R,
                          ATT_TR, a.Tq, att_tiled_shared(0));
    a.delta = cuda_temp(c, "attention", (size_t)(a.B * a.H * a.Tq > 0 ? a.B * a.H * a.Tq : 1) * sizeof(float));
    if (!a.delta) return FF_ERR_OOM;
    ff_status st = att_launch(c, k_att_dq_tiled<ATT_DQ_R, ATT_CHB>, "k_att_dq_tiled", a, ATT_TR / ATT_DQ_R, ATT_TR, a.Tq,
                              att_tiled_shared(1));
    if (!st) st = att_launch(c, k_att_dkv_tiled, "k_att_dkv_tiled", a, ATT_TR, ATT_TR, a.Tk, att_tiled_shared(2));
    cuda_free(c, a.delta); /* stream order: reused only by later work */
    return st;
}

/* Shared bytes of k_fa_fwd (0), k_fa_dq (1), k_fa_dkv (2) at padded head dim dp for
 * elements of `es` bytes (streamed tiles of `tile` rows). */
static size_t fa_shared(int kernel, int dp, size_t es, int tile)
{
    size_t row = (size_t)dp * es + 16;
    if (kernel == 0) return (FA_ROWS + 4 * tile) * row;
    return (2 * FA_ROWS + 4 * tile) * row + (kernel == 2 ? 4 * tile * sizeof(float) : 0);
}

/* The head dim the kernels pad D and Dv to (32, 64 or 128). */
static int fa_dp(const att_args &a)
{
    int64_t dm = a.D > a.Dv ? a.D : a.Dv;
    return dm <= 32 ? 32 : dm <= 64 ? 64 : 128;
}

/* The tensor-core kernels (cuda_attention_mma.cuh): F16/BF16 and F32 (3xTF32), any mask,
 * D, Dv <= FA_DMAX, Tq, Tk >= 1, compute capability 8.0 or later, every kernel the op
 * needs within the device's shared memory a block, with FF_CUDA_ATTENTION=mma: opt-in
 * until scripts/gpu-check.sh (which sets it) has passed with them on a GPU, as the issue's
 * rule for a new kernel has it; the tiled (F32) or general kernels take them otherwise. */
static bool att_mma_fits(const cuda_ctx *c, int op, const att_args &a, ff_dtype t)
{
    const char *e = getenv("FF_CUDA_ATTENTION");
    if (!e || strcmp(e, "mma") != 0) return false;
    if (!(ffb_is_half(t) || t == FF_F32) || a.D > FA_DMAX || a.Dv > FA_DMAX || a.Tq < 1 || a.Tk < 1 || c->cc_major < 8)
        return false;
    size_t es = t == FF_F32 ? 4 : 2;
    int tile = t == FF_F32 ? fa_kind<FA_F32>::TILE : fa_kind<FA_F16>::TILE;
    for (int k = op == FF_ATTENTION_FORWARD ? 0 : 1; k <= (op == FF_ATTENTION_FORWARD ? 0 : 2); k++)
        if (fa_shared(k, fa_dp(a), es, tile) > c->smem_optin) return false;
    return true;
}

/* A block may copy the view's rows 16 bytes at a time: d stride 1 and every row of every
 * (b, h) 16-byte aligned (elements of es bytes). */
static bool fa_vec(const att_view &v, size_t es)
{
    int64_t n = (int64_t)(16 / es);
    uintptr_t base = (uintptr_t)v.buf + (uintptr_t)(v.offset * (int64_t)es);
    return v.s[3] == 1 && base % 16 == 0 && v.s[0] % n == 0 && v.s[1] % n == 0 && v.s[2] % n == 0;
}

static ff_status fa_launch(cuda_ctx *c, void (*k)(fa_args), const char *name, const fa_args &f, int64_t rows_total,
                           size_t smem)
{
    int64_t blocks = att_blocks(f.a, FA_ROWS, rows_total);
    if (blocks == 0) return FF_OK;
#if defined(FF_CUDA_EMU)
    (void)c, (void)name;
    CUDA_EMU_BLOCKS(dim3((unsigned)blocks), dim3(FA_THREADS), smem, k(f)); /* real blocks: they cooperate */
    return FF_OK;
#else
    return att_device_launch(c, k, name, f, blocks, FA_THREADS, smem);
#endif
}

template <int DP, int K> static ff_status fa_run_as(cuda_ctx *c, int op, fa_args &f)
{
    size_t es = sizeof(typename fa_kind<K>::E);
    int tile = fa_kind<K>::TILE;
    if (op == FF_ATTENTION_FORWARD)
        return fa_launch(c, k_fa_fwd<DP, K>, "k_fa_fwd", f, f.a.Tq, fa_shared(0, DP, es, tile));
    int64_t rows = f.a.B * f.a.H * f.a.Tq;
    f.a.delta = cuda_temp(c, "attention", (size_t)(rows > 0 ? rows : 1) * sizeof(float));
    if (!f.a.delta) return FF_ERR_OOM;
    CUDA_LAUNCH(k_fa_delta, cuda_blocks(rows), CUDA_THREADS, c->stream)(f.a);
    ff_status st = cuda_launch_check(c, "attention", "k_fa_delta");
    if (!st) st = fa_launch(c, k_fa_dq<DP, K>, "k_fa_dq", f, f.a.Tq, fa_shared(1, DP, es, tile));
    if (!st) st = fa_launch(c, k_fa_dkv<DP, K>, "k_fa_dkv", f, f.a.Tk, fa_shared(2, DP, es, tile));
    cuda_free(c, f.a.delta); /* stream order: reused only by later work */
    return st;
}

template <int K> static ff_status fa_run_dt(cuda_ctx *c, int op, fa_args &f)
{
    int dp = fa_dp(f.a);
    if (dp == 32) return fa_run_as<32, K>(c, op, f);
    if (dp == 64) return fa_run_as<64, K>(c, op, f);
    return fa_run_as<128, K>(c, op, f);
}

static ff_status fa_run(cuda_ctx *c, int op, const att_args &a, ff_dtype t)
{
    fa_args f;
    memset(&f, 0, sizeof f);
    f.a = a;
    f.sl2 = (float)(a.scale * 1.4426950408889634);
    size_t es = ff_dtype_size(t);
    f.vec = (fa_vec(a.q, es) ? 1u : 0u) | (fa_vec(a.k, es) ? 2u : 0u) | (fa_vec(a.v, es) ? 4u : 0u) |
            (op == FF_ATTENTION_BACKWARD && fa_vec(a.go, es) ? 8u : 0u);
    if (t == FF_F32) return fa_run_dt<FA_F32>(c, op, f);
    return t == FF_BF16 ? fa_run_dt<FA_BF16>(c, op, f) : fa_run_dt<FA_F16>(c, op, f);
}

/* The dtypes whose entry honors dropout (supports(FF_ATTENTION_DROPOUT)): F32 and F64.
 * The halves' mask would have to be the core's half random fill compared in the half
 * type; they compose. */
extern "C" int cuda_attention_drops(ff_dtype t) { return t == FF_F32 || t == FF_F64; }

static ff_dtype q_dtype_of(int op, const ff_view *src) { return src[op == FF_ATTENTION_FORWARD ? 0 : 1].dtype; }

extern "C" ff_status cuda_attention(void *ctx, int op, const ff_view *dst, int n_dst, const ff_view *src, int n_src,
                                    const ff_attention_params *p)
{
    cuda_ctx *c = (cuda_ctx *)ctx;
    ff_status st = ffb_attention_check(c->host, "cuda", op, dst, n_dst, src, n_src, p, 1);
    if (st) return st;
    /* supports() says no to FF_ATTENTION_DROPOUT for the halves, so the core composes their
     * dropout; a caller that sends it anyway gets an error, never attention without it */
    if (p->dropout_p > 0 && !cuda_attention_drops(q_dtype_of(op, src)))
        return ffb_fail(c->host, FF_ERR_UNSUPPORTED, "cuda attention: dropout inside the entry is F32/F64 only, not %s "
                                                     "(dropout_p = %g); the core composes it",
                        ffb_dtype_name(q_dtype_of(op, src)), p->dropout_p);
    if ((st = cuda_use_device(c, "attention"))) return st;
    const ff_view *q = &src[op ? 1 : 0];
    att_args a;
    memset(&a, 0, sizeof a);
    a.q = att_view_of(q), a.k = att_view_of(q + 1), a.v = att_view_of(q + 2);
    if (p->mask) a.m = att_view_of(&src[n_src - 1]);
    if (op == FF_ATTENTION_FORWARD) {
        a.o = att_view_of(&dst[0]), a.l = att_lse_view(&dst[1]);
    } else {
        a.go = att_view_of(&src[0]), a.o = att_view_of(&src[4]), a.l = att_lse_view(&src[5]);
        a.gq = att_view_of(&dst[0]), a.gk = att_view_of(&dst[1]), a.gv = att_view_of(&dst[2]);
    }
    a.B = q->shape[0], a.H = q->shape[1], a.Tq = q->shape[2], a.D = q->shape[3];
    a.Tk = q[1].shape[2], a.Dv = q[2].shape[3];
    a.scale = p->scale, a.causal = p->causal != 0, a.kind = p->mask;
    if (p->dropout_p > 0) a.drop = p->dropout_p, a.keep = 1.0 / (1.0 - p->dropout_p), a.seed = p->seed;
    if (att_mma_fits(c, op, a, q->dtype)) return fa_run(c, op, a, q->dtype);
    if (att_tiled_fits(a, q->dtype)) return att_run_tiled(c, op, a);
    if (q->dtype == FF_F64) return att_run<double>(c, op, a);
    return att_run<float>(c, op, a);
}
