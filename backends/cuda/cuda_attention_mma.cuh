/*
 * The attention kernels on tensor cores (issue 52), FlashAttention-2 style: included by
 * cuda_attention.cu after its helpers (att_args, att_view). They take F16/BF16 views on
 * mma.m16n8k16 and F32 views on mma.m16n8k8 TF32 as 3xTF32 (each operand split into a
 * TF32 hi and lo, three products: about f32's precision at the tensor cores' rate, as
 * PyTorch's f32 SDPA does through CUTLASS's FastF32), causal or not, with or without a
 * bool or additive mask (read element by element where a score is used), dropout for F32
 * (the mask drawn per element from its Philox counter, att_drop; the halves' dropout is
 * the core's composition), head dims D, Dv <= 128 and Tq, Tk >= 1, on devices of compute
 * capability 8.0 and later; opt-in with FF_CUDA_ATTENTION=mma until a GPU run of
 * scripts/gpu-check.sh has passed with them.
 *
 * A block has 4 warps and 64 rows (queries for the forward and gq, keys for gk/gv); each
 * warp owns 16 of them as the A side of the MMA (cuda_mma.cuh), and the other side
 * streams through shared memory in tiles (64 rows; 32 for f32), double-buffered with
 * cp.async so the next tile's copy overlaps this tile's products. Head dims are
 * zero-padded to DP (32, 64 or 128) in shared memory, which leaves every product
 * unchanged; shared rows are padded by 16 bytes so that the rows a fragment read touches
 * fall in different banks (the halves' 8 ldmatrix rows in 8 bank groups; f32's scalar
 * reads in 32 banks).
 *
 * forward (k_fa_fwd): S = Q K^T into f32 fragments, scaled by scale log2(e) (the softmax
 * in base 2: exp2 is one instruction), masked to -inf past Tk, causal past the row, and
 * where the mask says so; a row whose every key is masked keeps m = -inf and l = 0 (o = 0,
 * lse = -inf, zero gradients, as the ABI says). The online softmax keeps the running max
 * m and sum l of each of the lane's two rows (max over the 4 lanes of a quad by two
 * shuffles; l summed over the quad once at the end); P is used as the A fragments of P V
 * in the registers it is in (halves: rounded to the input type, the f32 accumulator
 * layout of two 16 x 8 tiles being the A layout of one 16 x 16; f32: split, with the
 * keys of each 8 reordered, fa_accum). o = acc / l rounded once; lse = (m + log2 l) ln 2.
 *
 * backward, deterministic as the other kernels (nothing summed by two blocks, no atomics;
 * the price is S and dP computed twice): delta = rowsum(go * o) (k_fa_delta), then
 *   k_fa_dq  over query tiles: P = exp2(S - lse), dP = dO V^T, dS = P (dP - delta),
 *            dQ += dS K (dS as the A side);
 *   k_fa_dkv over key tiles: S^T = K Q^T and dP^T = V dO^T (the keys as the A side),
 *            dV += P^T dO and dK += dS^T Q, with Q, dO and their rows' lse and delta
 *            streaming through shared memory.
 * The halves' roundings of P and dS to the input type before their products are
 * FlashAttention's own; the sums are f32 (the tensor cores'), every output rounds once.
 *
 * Under FF_CUDA_EMU these run as real blocks (CUDA_EMU_BLOCKS, cuda_emu_blocks.h: fibers
 * with barriers, the fragments exchanged lane by lane, TF32 operands cut to their 19
 * bits), so the fragment bookkeeping, the splits, the barriers and the masks are checked
 * by the conformance suite on the host.
 */
#ifndef FF_CUDA_ATTENTION_MMA_CUH
#define FF_CUDA_ATTENTION_MMA_CUH

#include "cuda_mma.cuh"

#define FA_ROWS 64   /* rows a block (4 warps x 16) */
#define FA_THREADS 128
#define FA_DMAX 128  /* the largest padded head dim */
#define FA_LOG2E 1.4426950408889634f
#define FA_LN2 0.6931471805599453f

/* The element kinds: the halves on m16n8k16, f32 on m16n8k8 TF32 as 3xTF32. */
#define FA_F16 0
#define FA_BF16 1
#define FA_F32 2

/* E: a shared tile's element; TILE: the rows of a streamed tile. f32 streams 32 rows: its
 * rows are twice as wide and each fragment is held twice (hi and lo), so 64 would double
 * both the shared memory (198 KiB a block at DP 128) and the registers. */
template <int K> struct fa_kind {
    typedef uint16_t E;
    static constexpr int TILE = 64;
};
template <> struct fa_kind<FA_F32> {
    typedef float E;
    static constexpr int TILE = 32;
};
/* Elements in 16 bytes: the unit of a cp.async, and the padding after each shared row. */
#define FA_VEC(E) ((int)(16 / sizeof(E)))

/* The views a block copies with cp.async (bit: 1 q, 2 k, 4 v, 8 go): d stride 1 and
 * every row 16-byte aligned. */
typedef struct fa_args {
    att_args a;
    unsigned vec;
    float sl2; /* scale log2(e) */
} fa_args;

/* Element `at` of a view of kind K, as f32; and x stored there, rounded once. */
template <int K> __device__ __forceinline__ float fa_ld(const void *buf, int64_t at)
{
    if constexpr (K == FA_F32) return ((const float *)buf)[at];
    else return cuda_half_f32<K == FA_BF16>(((const uint16_t *)buf)[at]);
}
template <int K> __device__ __forceinline__ void fa_st(void *buf, int64_t at, float x)
{
    if constexpr (K == FA_F32) ((float *)buf)[at] = x;
    else ((uint16_t *)buf)[at] = cuda_half_of<K == FA_BF16>(x);
}

/* Rows r0 .. r0+R-1 (the first `valid` of them real) of v at (b, h), DP columns (the first
 * `cols` real), into a shared tile of row stride DP + FA_VEC(E); zeros elsewhere. */
template <int DP, int R, typename E>
__device__ __forceinline__ void fa_tile_ld(E *tile, const att_view &v, int64_t b, int64_t h, int64_t r0,
                                           int64_t valid, int64_t cols, bool vec)
{
    constexpr int V = FA_VEC(E), LD = DP + V;
    const E *base = (const E *)v.buf + v.offset + b * v.s[0] + h * v.s[1];
    for (int e = (int)threadIdx.x; e < R * (DP / V); e += (int)blockDim.x) {
        int r = e / (DP / V), c = e % (DP / V);
        E *dst = tile + r * LD + c * V;
        if (r < valid && vec && (c + 1) * V <= cols) {
            cuda_cp_async16(dst, base + (r0 + r) * v.s[2] + c * V);
        } else {
            CUDA_SMEM_WRITTEN(dst, 16);
            for (int j = 0; j < V; j++) {
                int64_t d = c * V + j;
                dst[j] = r < valid && d < cols ? base[(r0 + r) * v.s[2] + d * v.s[3]] : (E)0;
            }
        }
    }
}

/* The key tile from key j0 (keys < kend real) into buffer `buf` of the double-buffered
 * K and V tiles. */
template <int DP, int K, typename E>
__device__ __forceinline__ void fa_kv_ld(E *Ks, E *Vs, const fa_args &f, int64_t b, int64_t h, int64_t j0,
                                         int64_t kend, int buf)
{
    constexpr int TL = fa_kind<K>::TILE, LD = DP + FA_VEC(E);
    fa_tile_ld<DP, TL>(Ks + buf * TL * LD, f.a.k, b, h, j0, kend - j0, f.a.D, f.vec & 2);
    fa_tile_ld<DP, TL>(Vs + buf * TL * LD, f.a.v, b, h, j0, kend - j0, f.a.Dv, f.vec & 4);
}

/* This lane's ldmatrix row within a 16 x 16 block at (row0, col0) of a half tile, as the
 * A side (matrix m = lane / 8: rows + 8 (m % 2), columns + 8 (m / 2)) or as the B side of
 * two 8-column n-tiles (rows + 8 (m / 2), columns + 8 (m % 2)). */
template <int DP> __device__ __forceinline__ const uint16_t *fa_a_row(const uint16_t *tile, int row0, int col0)
{
    int l = (int)threadIdx.x % 32, m = l / 8;
    return tile + (row0 + (m % 2) * 8 + l % 8) * (DP + FA_VEC(uint16_t)) + col0 + (m / 2) * 8;
}
template <int DP> __device__ __forceinline__ const uint16_t *fa_b_row(const uint16_t *tile, int row0, int col0)
{
    int l = (int)threadIdx.x % 32, m = l / 8;
    return tile + (row0 + (m / 2) * 8 + l % 8) * (DP + FA_VEC(uint16_t)) + col0 + (m % 2) * 8;
}

/* f32 tile element (row, col) split for 3xTF32. The f32 tiles' rows are DP + 4 floats,
 * 4 banks past a multiple of 32: the fragment reads (row g, column t) and the P V reads
 * (row 2t, column g) both fall in 32 different banks. */
template <int DP> __device__ __forceinline__ void fa_lds_split(const float *tile, int row, int col, uint32_t *hi,
                                                               uint32_t *lo)
{
    const float *p = tile + row * (DP + FA_VEC(float)) + col;
    CUDA_SMEM_READ(p, sizeof(float));
    cuda_tf32_split(*p, hi, lo);
}

/* The A side of a 16-column block of a warp's 16 rows: one m16n8k16 fragment for the
 * halves; for f32, two m16n8k8 steps, each split into hi and lo. */
template <int K> struct fa_afrag {
    uint32_t r[4];
};
template <> struct fa_afrag<FA_F32> {
    uint32_t hi[2][4], lo[2][4];
};

/* A's fragments for rows row0 .. row0+15, columns col0 .. col0+15 of `tile`. */
template <int DP, int K, typename E>
__device__ __forceinline__ void fa_ld_a(fa_afrag<K> &af, const E *tile, int row0, int col0)
{
    if constexpr (K == FA_F32) {
        int l = (int)threadIdx.x % 32, g = l / 4, t = l % 4;
        CUDA_UNROLL
        for (int st = 0; st < 2; st++)
            CUDA_UNROLL
            for (int i = 0; i < 4; i++)
                fa_lds_split<DP>(tile, row0 + g + 8 * (i % 2), col0 + 8 * st + t + 4 * (i / 2), &af.hi[st][i],
                                 &af.lo[st][i]);
    } else {
        cuda_ldsm_x4<false>(af.r, fa_a_row<DP>(tile, row0, col0));
    }
}

/* s[n] (16 x 8, n < TILE / 8: the tile's columns) += A B^T over columns ks*16 .. ks*16+15:
 * A the fragments af (16 rows), B the TILE rows of `bt`. */
template <int DP, int K, typename E>
__device__ __forceinline__ void fa_scores_step(float s[fa_kind<K>::TILE / 8][4], const fa_afrag<K> &af, const E *bt,
                                               int ks)
{
    constexpr int TL = fa_kind<K>::TILE;
    if constexpr (K == FA_F32) {
        int l = (int)threadIdx.x % 32, g = l / 4, t = l % 4;
        CUDA_UNROLL
        for (int n = 0; n < TL / 8; n++)
            CUDA_UNROLL
            for (int st = 0; st < 2; st++) {
                uint32_t bh[2], bl[2];
                for (int i = 0; i < 2; i++) fa_lds_split<DP>(bt, n * 8 + g, ks * 16 + 8 * st + t + 4 * i, &bh[i], &bl[i]);
                cuda_mma_1688_3xtf32(s[n], af.hi[st], af.lo[st], bh, bl);
            }
    } else {
        CUDA_UNROLL
        for (int np = 0; np < TL / 16; np++) {
            uint32_t bf[4];
            cuda_ldsm_x4<false>(bf, fa_b_row<DP>(bt, np * 16, ks * 16));
            cuda_mma_16816<K == FA_BF16>(s[2 * np], af.r, bf);
            cuda_mma_16816<K == FA_BF16>(s[2 * np + 1], af.r, bf + 2);
        }
    }
}

template <int N> __device__ __forceinline__ void fa_zero(float s[N][4])
{
    for (int n = 0; n < N; n++) s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.f;
}

/* s = A B^T over DP columns, A the warp's 16 rows of `at` from row a0 (loaded as it goes,
 * to keep registers for the accumulators), B the TILE rows of `bt`. */
template <int DP, int K, typename E>
__device__ __forceinline__ void fa_scores(float s[fa_kind<K>::TILE / 8][4], const E *at, int a0, const E *bt)
{
    fa_zero<fa_kind<K>::TILE / 8>(s);
    CUDA_UNROLL
    for (int ks = 0; ks < DP / 16; ks++) {
        fa_afrag<K> af;
        fa_ld_a<DP, K>(af, at, a0, ks * 16);
        fa_scores_step<DP, K>(s, af, bt, ks);
    }
}

/* acc[n] (16 x DP) += P V: P the f32 fragments p (16 x TILE) as the A side, V the TILE
 * rows of `vt` (the reduction over its rows). Halves: P rounded to the input type, V
 * through ldmatrix .trans. f32: P split for 3xTF32 with the keys of each 8 taken in the
 * order 0, 2, 4, 6, 1, 3, 5, 7, which makes the accumulator layout (row g: keys 2t, 2t+1)
 * the A layout (row g: k t, t+4) in the same registers; V's B side reads the same keys'
 * rows (2t, 2t+1). */
template <int DP, int K, typename E>
__device__ __forceinline__ void fa_accum(float acc[DP / 8][4], const float p[fa_kind<K>::TILE / 8][4], const E *vt)
{
    constexpr int TL = fa_kind<K>::TILE;
    if constexpr (K == FA_F32) {
        int l = (int)threadIdx.x % 32, g = l / 4, t = l % 4;
        CUDA_UNROLL
        for (int n = 0; n < TL / 8; n++) {
            uint32_t ah[4], al[4];
            cuda_tf32_split(p[n][0], &ah[0], &al[0]);
            cuda_tf32_split(p[n][2], &ah[1], &al[1]);
            cuda_tf32_split(p[n][1], &ah[2], &al[2]);
            cuda_tf32_split(p[n][3], &ah[3], &al[3]);
            CUDA_UNROLL
            for (int dn = 0; dn < DP / 8; dn++) {
                uint32_t bh[2], bl[2];
                for (int i = 0; i < 2; i++) fa_lds_split<DP>(vt, n * 8 + 2 * t + i, dn * 8 + g, &bh[i], &bl[i]);
                cuda_mma_1688_3xtf32(acc[dn], ah, al, bh, bl);
            }
        }
    } else {
        constexpr bool BF16 = K == FA_BF16;
        CUDA_UNROLL
        for (int kk = 0; kk < TL / 16; kk++) {
            uint32_t pa[4] = {cuda_pack_half2<BF16>(p[2 * kk][0], p[2 * kk][1]),
                              cuda_pack_half2<BF16>(p[2 * kk][2], p[2 * kk][3]),
                              cuda_pack_half2<BF16>(p[2 * kk + 1][0], p[2 * kk + 1][1]),
                              cuda_pack_half2<BF16>(p[2 * kk + 1][2], p[2 * kk + 1][3])};
            CUDA_UNROLL
            for (int dp = 0; dp < DP / 16; dp++) {
                uint32_t vb[4];
                cuda_ldsm_x4<true>(vb, fa_a_row<DP>(vt, kk * 16, dp * 16));
                cuda_mma_16816<BF16>(acc[2 * dp], pa, vb);
                cuda_mma_16816<BF16>(acc[2 * dp + 1], pa, vb + 2);
            }
        }
    }
}

/* The tile's f32 fragments stored, scaled, as rows r0 + (this warp's) of the view of
 * kind K (rows < valid, columns < cols). */
template <int DP, int K>
__device__ __forceinline__ void fa_store(const att_view &v, int64_t b, int64_t h, int64_t r0, int64_t valid,
                                         int64_t cols, const float acc[DP / 8][4], float scale)
{
    int l = (int)threadIdx.x % 32, w = (int)threadIdx.x / 32, g = l / 4, t = l % 4;
    int64_t base = v.offset + b * v.s[0] + h * v.s[1];
    CUDA_UNROLL
    for (int r = 0; r < 2; r++) {
        int64_t i = w * 16 + g + 8 * r;
        if (i >= valid) continue;
        CUDA_UNROLL
        for (int n = 0; n < DP / 8; n++)
            CUDA_UNROLL
            for (int e = 0; e < 2; e++) {
                int64_t d = n * 8 + 2 * t + e;
                if (d < cols) fa_st<K>(v.buf, base + (r0 + i) * v.s[2] + d * v.s[3], acc[n][2 * r + e] * scale);
            }
    }
}

/* Keys [0, kend) a block of queries from q0 needs: causal stops after its last row. */
__device__ __forceinline__ int64_t fa_key_end(const att_args &a, int64_t q0)
{
    return a.causal && q0 + FA_ROWS < a.Tk ? q0 + FA_ROWS : a.Tk;
}

/* The score x (q . k) of query i and key j at (b, h) as the softmax in base 2 takes it:
 * scale x (+ the additive mask) times log2(e), or -inf where the key takes no part (past
 * Tq or Tk, causal j > i, a false in the bool mask). */
template <int K>
__device__ __forceinline__ float fa_masked(const fa_args &f, float x, int64_t b, int64_t h, int64_t i, int64_t j)
{
    const att_args &a = f.a;
    if (j >= a.Tk || i >= a.Tq || (a.causal && j > i)) return -INFINITY;
    if (a.kind == FF_ATTENTION_MASK_NONE) return x * f.sl2;
    int64_t at = att_off(a.m, b, h, i, j);
    if (a.kind == FF_ATTENTION_MASK_BOOL) return ((const unsigned char *)a.m.buf)[at] ? x * f.sl2 : -INFINITY;
    return (x * (float)a.scale + fa_ld<K>(a.m.buf, at)) * FA_LOG2E;
}

/* The F32 dropout factor of element n of [B, H, Tq, Tk] (att_drop's rule), kept out of
 * line and given scalars only: inlined, the Philox rounds would take registers from every
 * kernel, dropout or not, and a struct by reference would put the arguments in local
 * memory. */
#if defined(FF_CUDA_EMU)
static float fa_drop_factor(uint64_t seed, uint64_t n, float drop, float keep)
#else
static __device__ __noinline__ float fa_drop_factor(uint64_t seed, uint64_t n, float drop, float keep)
#endif
{
    return ff_random_uniform_f32(seed, n, 0.0, 1.0) >= drop ? keep : 0.f;
}

/* x[n][e] *= the dropout factor of its element: fragment rows r0 + g (+ 8), columns c0 +
 * n 8 + 2t (+ 1), queries x keys, or with KEYS_ROWS keys x queries (k_fa_dkv's tiles). */
template <int N, bool KEYS_ROWS>
__device__ __forceinline__ void fa_dropout(float x[N][4], const att_args &a, int64_t b, int64_t h, int64_t r0,
                                           int64_t c0)
{
    int l = (int)threadIdx.x % 32, g = l / 4, t = l % 4;
    float drop = (float)a.drop, keep = (float)a.keep;
    uint64_t seed = a.seed;
    int64_t bh = b * a.H + h;
    CUDA_UNROLL
    for (int n = 0; n < N; n++)
        CUDA_UNROLL
        for (int e = 0; e < 4; e++) {
            int64_t r = r0 + g + 8 * (e / 2), c = c0 + n * 8 + 2 * t + e % 2;
            int64_t i = KEYS_ROWS ? c : r, j = KEYS_ROWS ? r : c;
            x[n][e] *= fa_drop_factor(seed, (uint64_t)((bh * a.Tq + i) * a.Tk + j), drop, keep);
        }
}

template <int DP, int K> __global__ void __launch_bounds__(FA_THREADS) k_fa_fwd(fa_args f)
{
    typedef typename fa_kind<K>::E E;
    constexpr int TL = fa_kind<K>::TILE, LD = DP + FA_VEC(E);
    const att_args &a = f.a;
    E *Qs = CUDA_DYN_SMEM(E), *Ks = Qs + FA_ROWS * LD, *Vs = Ks + 2 * TL * LD;
    int l = (int)threadIdx.x % 32, w = (int)threadIdx.x / 32, g = l / 4, t = l % 4;
    int64_t BH = a.B * a.H, ntq = (a.Tq + FA_ROWS - 1) / FA_ROWS;
    for (int64_t blk = blockIdx.x; blk < BH * ntq; blk += gridDim.x) {
        int64_t bh = blk % BH, b = bh / a.H, h = bh % a.H, q0 = (ntq - 1 - blk / BH) * FA_ROWS; /* heaviest first */
        int64_t kend = fa_key_end(a, q0);
        int nkt = (int)((kend + TL - 1) / TL);
        __syncthreads(); /* the previous block's reads of the tiles are done */
        fa_tile_ld<DP, FA_ROWS>(Qs, a.q, b, h, q0, a.Tq - q0, a.D, f.vec & 1);
        fa_kv_ld<DP, K>(Ks, Vs, f, b, h, 0, kend, 0);
        cuda_cp_async_commit();
        float acc[DP / 8][4], m[2] = {-INFINITY, -INFINITY}, lsum[2] = {0.f, 0.f};
        /* the halves keep the warp's rows of Q as A fragments for every key tile; f32's
         * (split, twice the registers) are read again from shared memory each tile */
        fa_afrag<K> qf[K == FA_F32 ? 1 : DP / 16];
        CUDA_UNROLL
        for (int n = 0; n < DP / 8; n++) acc[n][0] = acc[n][1] = acc[n][2] = acc[n][3] = 0.f;
        for (int kt = 0; kt < nkt; kt++) {
            int64_t j0 = (int64_t)kt * TL;
            const E *Kt = Ks + (kt & 1) * TL * LD, *Vt = Vs + (kt & 1) * TL * LD;
            if (kt + 1 < nkt) fa_kv_ld<DP, K>(Ks, Vs, f, b, h, j0 + TL, kend, (kt + 1) & 1);
            cuda_cp_async_commit();
            cuda_cp_async_wait<1>(); /* this tile's copies (and Q's) have landed */
            __syncthreads();
            float s[TL / 8][4];
            if constexpr (K == FA_F32) {
                fa_scores<DP, K>(s, Qs, w * 16, Kt);
            } else {
                if (kt == 0)
                    for (int ks = 0; ks < DP / 16; ks++) fa_ld_a<DP, K>(qf[ks], Qs, w * 16, ks * 16);
                fa_zero<TL / 8>(s);
                CUDA_UNROLL
                for (int ks = 0; ks < DP / 16; ks++) fa_scores_step<DP, K>(s, qf[ks], Kt, ks);
            }
            CUDA_UNROLL
            for (int r = 0; r < 2; r++) {
                int64_t i = q0 + w * 16 + g + 8 * r;
                float mx = -INFINITY;
                CUDA_UNROLL
                for (int n = 0; n < TL / 8; n++)
                    CUDA_UNROLL
                    for (int e = 0; e < 2; e++) {
                        float x = fa_masked<K>(f, s[n][2 * r + e], b, h, i, j0 + n * 8 + 2 * t + e);
                        s[n][2 * r + e] = x;
                        mx = fmaxf(mx, x);
                    }
                mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
                mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
                float mn = fmaxf(m[r], mx), base = mn == -INFINITY ? 0.f : mn, alpha = exp2f(m[r] - base);
                m[r] = mn;
                lsum[r] *= alpha;
                CUDA_UNROLL
                for (int n = 0; n < DP / 8; n++) acc[n][2 * r] *= alpha, acc[n][2 * r + 1] *= alpha;
                CUDA_UNROLL
                for (int n = 0; n < TL / 8; n++)
                    CUDA_UNROLL
                    for (int e = 0; e < 2; e++) {
                        float p = exp2f(s[n][2 * r + e] - base);
                        s[n][2 * r + e] = p;
                        lsum[r] += p;
                    }
            }
            if (K == FA_F32 && a.drop > 0) fa_dropout<TL / 8, false>(s, a, b, h, q0 + w * 16, j0); /* after l: lse is undropped */
            fa_accum<DP, K>(acc, s, Vt);
            __syncthreads(); /* the next iteration copies into the other buffers */
        }
        cuda_cp_async_wait<0>(); /* nothing in flight into the tiles the next block loads */
        CUDA_UNROLL
        for (int r = 0; r < 2; r++) {
            float sum = lsum[r] + __shfl_xor_sync(0xffffffffu, lsum[r], 1);
            sum += __shfl_xor_sync(0xffffffffu, sum, 2);
            float inv = sum > 0.f ? 1.f / sum : 0.f;
            CUDA_UNROLL
            for (int n = 0; n < DP / 8; n++) acc[n][2 * r] *= inv, acc[n][2 * r + 1] *= inv;
            int64_t i = q0 + w * 16 + g + 8 * r;
            if (t == 0 && i < a.Tq) {
                float *lse = (float *)a.l.buf + a.l.offset + b * a.l.s[0] + h * a.l.s[1] + i * a.l.s[3];
                *lse = sum > 0.f ? (m[r] + log2f(sum)) * FA_LN2 : -INFINITY;
            }
        }
        fa_store<DP, K>(a.o, b, h, q0, a.Tq - q0, a.Dv, acc, 1.f);
    }
}

/* delta[bh Tq + i] = sum_d go[i, d] o[i, d] in f32 (a thread a row). */
__global__ void k_fa_delta(att_args a)
{
    CUDA_FOR(n, a.B * a.H * a.Tq) {
        int64_t i = n % a.Tq, bh = n / a.Tq, b = bh / a.H, h = bh % a.H;
        float acc = 0.f;
        for (int64_t d = 0; d < a.Dv; d++)
            acc = fmaf((float)att_ld(a.go, b, h, i, d), (float)att_ld(a.o, b, h, i, d), acc);
        ((float *)a.delta)[n] = acc;
    }
}

/* lse (base 2) and delta of query row i of (b, h): -inf and 0 past Tq. */
__device__ __forceinline__ void fa_row_stats(const fa_args &f, int64_t b, int64_t h, int64_t i, float *lse2, float *dl)
{
    const att_args &a = f.a;
    if (i >= a.Tq) {
        *lse2 = -INFINITY, *dl = 0.f;
        return;
    }
    float lse = *((const float *)a.l.buf + a.l.offset + b * a.l.s[0] + h * a.l.s[1] + i * a.l.s[3]);
    *lse2 = lse * FA_LOG2E;
    *dl = ((const float *)a.delta)[(b * a.H + h) * a.Tq + i];
}

__device__ __forceinline__ float fa_prob(float x, float lse2) { return x == -INFINITY || lse2 == -INFINITY ? 0.f : exp2f(x - lse2); }

template <int DP, int K> __global__ void __launch_bounds__(FA_THREADS) k_fa_dq(fa_args f)
{
    typedef typename fa_kind<K>::E E;
    constexpr int TL = fa_kind<K>::TILE, LD = DP + FA_VEC(E);
    const att_args &a = f.a;
    E *Qs = CUDA_DYN_SMEM(E), *Gs = Qs + FA_ROWS * LD, *Ks = Gs + FA_ROWS * LD, *Vs = Ks + 2 * TL * LD;
    int l = (int)threadIdx.x % 32, w = (int)threadIdx.x / 32, g = l / 4, t = l % 4;
    int64_t BH = a.B * a.H, ntq = (a.Tq + FA_ROWS - 1) / FA_ROWS;
    for (int64_t blk = blockIdx.x; blk < BH * ntq; blk += gridDim.x) {
        int64_t bh = blk % BH, b = bh / a.H, h = bh % a.H, q0 = (ntq - 1 - blk / BH) * FA_ROWS;
        int64_t kend = fa_key_end(a, q0);
        int nkt = (int)((kend + TL - 1) / TL);
        __syncthreads();
        fa_tile_ld<DP, FA_ROWS>(Qs, a.q, b, h, q0, a.Tq - q0, a.D, f.vec & 1);
        fa_tile_ld<DP, FA_ROWS>(Gs, a.go, b, h, q0, a.Tq - q0, a.Dv, f.vec & 8);
        fa_kv_ld<DP, K>(Ks, Vs, f, b, h, 0, kend, 0);
        cuda_cp_async_commit();
        float lse2[2], dl[2], dq[DP / 8][4];
        CUDA_UNROLL
        for (int r = 0; r < 2; r++) fa_row_stats(f, b, h, q0 + w * 16 + g + 8 * r, &lse2[r], &dl[r]);
        CUDA_UNROLL
        for (int n = 0; n < DP / 8; n++) dq[n][0] = dq[n][1] = dq[n][2] = dq[n][3] = 0.f;
        for (int kt = 0; kt < nkt; kt++) {
            int64_t j0 = (int64_t)kt * TL;
            const E *Kt = Ks + (kt & 1) * TL * LD, *Vt = Vs + (kt & 1) * TL * LD;
            if (kt + 1 < nkt) fa_kv_ld<DP, K>(Ks, Vs, f, b, h, j0 + TL, kend, (kt + 1) & 1);
            cuda_cp_async_commit();
            cuda_cp_async_wait<1>();
            __syncthreads();
            float s[TL / 8][4], dp[TL / 8][4];
            fa_scores<DP, K>(s, Qs, w * 16, Kt);
            fa_scores<DP, K>(dp, Gs, w * 16, Vt);
            if (K == FA_F32 && a.drop > 0) fa_dropout<TL / 8, false>(dp, a, b, h, q0 + w * 16, j0);
            CUDA_UNROLL
            for (int n = 0; n < TL / 8; n++)
                CUDA_UNROLL
                for (int e = 0; e < 4; e++) {
                    int r = e / 2;
                    int64_t i = q0 + w * 16 + g + 8 * r, j = j0 + n * 8 + 2 * t + e % 2;
                    float p = fa_prob(fa_masked<K>(f, s[n][e], b, h, i, j), lse2[r]);
                    s[n][e] = p * (dp[n][e] - dl[r]); /* dS */
                }
            fa_accum<DP, K>(dq, s, Kt);
            __syncthreads();
        }
        cuda_cp_async_wait<0>();
        fa_store<DP, K>(a.gq, b, h, q0, a.Tq - q0, a.D, dq, (float)a.scale);
    }
}

template <int DP, int K> __global__ void __launch_bounds__(FA_THREADS) k_fa_dkv(fa_args f)
{
    typedef typename fa_kind<K>::E E;
    constexpr int TL = fa_kind<K>::TILE, LD = DP + FA_VEC(E);
    const att_args &a = f.a;
    E *Ks = CUDA_DYN_SMEM(E), *Vs = Ks + FA_ROWS * LD, *Qs = Vs + FA_ROWS * LD, *Gs = Qs + 2 * TL * LD;
    float *Ls = (float *)(Gs + 2 * TL * LD), *Dls = Ls + 2 * TL; /* lse (base 2), delta of the query tiles */
    int l = (int)threadIdx.x % 32, w = (int)threadIdx.x / 32, g = l / 4, t = l % 4;
    int64_t BH = a.B * a.H, ntk = (a.Tk + FA_ROWS - 1) / FA_ROWS;
    for (int64_t blk = blockIdx.x; blk < BH * ntk; blk += gridDim.x) {
        /* causal: the first key tiles see the most queries */
        int64_t bh = blk % BH, b = bh / a.H, h = bh % a.H, j0 = (blk / BH) * FA_ROWS;
        int64_t qbeg = a.causal ? j0 / TL * TL : 0; /* query i sees key j only when i >= j */
        int nqt = qbeg < a.Tq ? (int)((a.Tq - qbeg + TL - 1) / TL) : 0;
        __syncthreads();
        fa_tile_ld<DP, FA_ROWS>(Ks, a.k, b, h, j0, a.Tk - j0, a.D, f.vec & 2);
        fa_tile_ld<DP, FA_ROWS>(Vs, a.v, b, h, j0, a.Tk - j0, a.Dv, f.vec & 4);
        float dk[DP / 8][4], dv[DP / 8][4];
                for (int n = 0; n < DP / 8; n++)
                        for (int e = 0; e < 4; e++) dk[n][e] = dv[n][e] = 0.f;
        if (nqt > 0) {
            fa_tile_ld<DP, TL>(Qs, a.q, b, h, qbeg, a.Tq - qbeg, a.D, f.vec & 1);
            fa_tile_ld<DP, TL>(Gs, a.go, b, h, qbeg, a.Tq - qbeg, a.Dv, f.vec & 8);
            for (int e = (int)threadIdx.x; e < TL; e += (int)blockDim.x) {
                CUDA_SMEM_WRITTEN(&Ls[e], sizeof(float)), CUDA_SMEM_WRITTEN(&Dls[e], sizeof(float));
                fa_row_stats(f, b, h, qbeg + e, &Ls[e], &Dls[e]);
            }
        }
        cuda_cp_async_commit();
        for (int qt = 0; qt < nqt; qt++) {
            int64_t i0 = qbeg + (int64_t)qt * TL;
            int cur = qt & 1;
            const E *Qt = Qs + cur * TL * LD, *Gt = Gs + cur * TL * LD;
            const float *Lt = Ls + cur * TL, *Dt = Dls + cur * TL;
            if (qt + 1 < nqt) {
                int nx = cur ^ 1;
                int64_t i1 = i0 + TL;
                fa_tile_ld<DP, TL>(Qs + nx * TL * LD, a.q, b, h, i1, a.Tq - i1, a.D, f.vec & 1);
                fa_tile_ld<DP, TL>(Gs + nx * TL * LD, a.go, b, h, i1, a.Tq - i1, a.Dv, f.vec & 8);
                for (int e = (int)threadIdx.x; e < TL; e += (int)blockDim.x) {
                    float *l2 = &Ls[nx * TL + e], *dl = &Dls[nx * TL + e];
                    CUDA_SMEM_WRITTEN(l2, sizeof(float)), CUDA_SMEM_WRITTEN(dl, sizeof(float));
                    fa_row_stats(f, b, h, i1 + e, l2, dl);
                }
            }
            cuda_cp_async_commit();
            cuda_cp_async_wait<1>();
            __syncthreads();
            float s[TL / 8][4], dp[TL / 8][4];
            fa_scores<DP, K>(s, Ks, w * 16, Qt);  /* S^T: keys x queries */
            fa_scores<DP, K>(dp, Vs, w * 16, Gt); /* dP^T */
            if (K == FA_F32 && a.drop > 0) fa_dropout<TL / 8, true>(dp, a, b, h, j0 + w * 16, i0);
                        for (int n = 0; n < TL / 8; n++)
                                for (int e = 0; e < 4; e++) {
                    int c = n * 8 + 2 * t + e % 2;
                    int64_t j = j0 + w * 16 + g + 8 * (e / 2);
                    CUDA_SMEM_READ(&Lt[c], sizeof(float)), CUDA_SMEM_READ(&Dt[c], sizeof(float));
                    float p = fa_prob(fa_masked<K>(f, s[n][e], b, h, i0 + c, j), Lt[c]);
                    s[n][e] = p;
                    dp[n][e] = p * (dp[n][e] - Dt[c]); /* dS^T */
                }
            if (K == FA_F32 && a.drop > 0) fa_dropout<TL / 8, true>(s, a, b, h, j0 + w * 16, i0); /* gv = drop(P)^T dO */
            fa_accum<DP, K>(dv, s, Gt);
            fa_accum<DP, K>(dk, dp, Qt);
            __syncthreads();
        }
        cuda_cp_async_wait<0>();
        fa_store<DP, K>(a.gk, b, h, j0, a.Tk - j0, a.D, dk, (float)a.scale);
        fa_store<DP, K>(a.gv, b, h, j0, a.Tk - j0, a.Dv, dv, 1.f);
    }
}

#endif /* FF_CUDA_ATTENTION_MMA_CUH */
