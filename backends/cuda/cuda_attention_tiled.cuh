/*
 * The f32 attention kernels with register tiles (issue 34), included by cuda_attention.cu
 * after its helpers (att_args, att_mask, att_p, att_smem, ATT_SYNC). They take F32 views
 * with head dims D, Dv <= ATT_DM; everything else, and FF_CUDA_ATTENTION=simple, takes
 * the general kernels of cuda_attention.cu.
 *
 * Why this shape: the general kernels score one (row, key) pair per lane and sum output
 * columns through shared memory, so every multiply-add costs a shared load or more (about
 * 4 TFLOP/s on an H100). Here one thread owns one row (a query for the forward and gq, a
 * key for gk/gv) and keeps its output sums in registers (ATT_DM floats, fully unrolled:
 * the head dim is fixed at ATT_DM, smaller ones are zero-padded in shared memory, which
 * leaves every dot product and sum unchanged). The other operand's tile (keys, or queries
 * for gk/gv) sits in shared memory and every thread of the block reads the same float4 (a
 * broadcast), so one 16-byte load feeds 4 FMAs per thread; the thread's own row is read
 * once per chunk of ATT_CH keys and feeds ATT_CH of them. No cross-thread combines at
 * all: the online softmax (running max m and sum l) is per thread, and the backward stays
 * deterministic without atomics (gq over query tiles, gk/gv over key tiles, as before).
 * Causal: key tiles past the block's last query are never loaded, and a thread stops at
 * the first chunk past its own row. Blocks run the heaviest causal tiles first.
 *
 * Sums are f32 fma in the order the general kernels use (d ascending, keys ascending);
 * the exponentials are the same expf(s - m) of scale * dot.
 *
 * Under FF_CUDA_EMU a block is one thread: ATT_EACH_THREAD loops over the ATT_TR rows the
 * block's threads would own, and the per-thread registers become arrays indexed by that
 * row (ATT_ME), so the same code runs the same sums in the same order.
 */
#ifndef FF_CUDA_ATTENTION_TILED_CUH
#define FF_CUDA_ATTENTION_TILED_CUH

#define ATT_DM 64                  /* head dims up to this take the tiled kernels */
#define ATT_TR 64                  /* rows (threads) a block */
#define ATT_TK 32                  /* keys (queries for gk/gv) of a shared tile */
#define ATT_CH 16                  /* of them, scored per pass in the forward (registers s[]) */
#define ATT_FWD_R 1                /* rows a thread in the forward (2 measured slower on an H100: 1-warp blocks) */
#define ATT_DQ_R 1                 /* and in the gq kernel (likewise) */
#define ATT_CHB 8                  /* in the backward (s[], dp[]; 16 there costs spills) */
#define ATT_LD (ATT_DM + 4)        /* a thread-owned row's stride: 8 threads of a quarter warp, 8 float4 bank groups */
#define ATT_D4 (ATT_DM / 4)
/* k_att_dq_tiled stages the block's o rows in the Ks and Vs tiles */
static_assert(ATT_TR <= 2 * ATT_TK, "the o rows of a block must fit the key and value tiles");
static_assert(ATT_TK % ATT_CH == 0 && ATT_TK % ATT_CHB == 0, "a tile is whole chunks");

#if defined(FF_CUDA_EMU)
#define ATT_TN ATT_TR
#define ATT_EACH_THREAD(t, nt) for (int t = 0; t < (nt); t++)
#define ATT_ME(t) (t)
#define ATT_BOUNDS(n)
#define ATT_UNROLL
#else
#define ATT_TN 1
#define ATT_EACH_THREAD(t, nt) for (int t = (int)threadIdx.x, t##_once = 1; t##_once; t##_once = 0)
#define ATT_ME(t) 0
#define ATT_BOUNDS(n) __launch_bounds__(n)
#define ATT_UNROLL _Pragma("unroll")
#endif
#if defined(__CUDA_ARCH__)
#define ATT_NO_UNROLL _Pragma("unroll 1")
#else
#define ATT_NO_UNROLL
#endif

/* Rows r0 .. r0+rows-1 of an f32 view into a tile (row stride ld), columns 0 .. ATT_DM-1:
 * zeros past `valid` rows and `cols` columns. Consecutive threads take consecutive
 * columns (coalesced for a dense view). */
__device__ __forceinline__ void att_tile_ld(float *tile, int ld, const att_view &v, int64_t b, int64_t h, int64_t r0,
                                            int rows, int64_t valid, int64_t cols)
{
    const float *base = (const float *)v.buf + v.offset + b * v.s[0] + h * v.s[1];
    for (int e = (int)threadIdx.x; e < rows * ATT_DM; e += (int)blockDim.x) {
        int r = e / ATT_DM, d = e % ATT_DM;
        tile[r * ld + d] = r < valid && d < cols ? base[(r0 + r) * v.s[2] + d * v.s[3]] : 0.f;
    }
}

/* The tile's rows (stride ATT_LD) to an f32 view, `valid` rows and `cols` columns. */
__device__ __forceinline__ void att_tile_st(const float *tile, const att_view &v, int64_t b, int64_t h, int64_t r0,
                                            int64_t valid, int64_t cols)
{
    float *base = (float *)v.buf + v.offset + b * v.s[0] + h * v.s[1];
    for (int e = (int)threadIdx.x; e < ATT_TR * ATT_DM; e += (int)blockDim.x) {
        int r = e / ATT_DM, d = e % ATT_DM;
        if (r < valid && d < cols) base[(r0 + r) * v.s[2] + d * v.s[3]] = tile[r * ATT_LD + d];
    }
}

/* acc[c] += x . y[c] over the ATT_DM columns, for CH rows y[c] of a broadcast tile
 * (x: the thread's row, stride-1 float4s; y rows ATT_D4 float4s apart). */
template <int CH> __device__ __forceinline__ void att_dots(float *acc, const float4 *x, const float4 *y)
{
    /* not unrolled: fully unrolled, ptxas hoists all ATT_D4 x CH loads and spills */
    ATT_NO_UNROLL
    for (int d4 = 0; d4 < ATT_D4; d4++) {
        float4 xv = x[d4];
        ATT_UNROLL
        for (int c = 0; c < CH; c++) {
            float4 yv = y[c * ATT_D4 + d4];
            acc[c] = fmaf(xv.x, yv.x, acc[c]);
            acc[c] = fmaf(xv.y, yv.y, acc[c]);
            acc[c] = fmaf(xv.z, yv.z, acc[c]);
            acc[c] = fmaf(xv.w, yv.w, acc[c]);
        }
    }
}

/* acc += sum_c w[c] y[c] (keys ascending), y rows of a broadcast tile. */
template <int CH> __device__ __forceinline__ void att_axpys(float *acc, const float *w, const float4 *y)
{
    ATT_UNROLL
    for (int c = 0; c < CH; c++) {
        ATT_UNROLL
        for (int d4 = 0; d4 < ATT_D4; d4++) {
            float4 yv = y[c * ATT_D4 + d4];
            acc[4 * d4] = fmaf(w[c], yv.x, acc[4 * d4]);
            acc[4 * d4 + 1] = fmaf(w[c], yv.y, acc[4 * d4 + 1]);
            acc[4 * d4 + 2] = fmaf(w[c], yv.z, acc[4 * d4 + 2]);
            acc[4 * d4 + 3] = fmaf(w[c], yv.w, acc[4 * d4 + 3]);
        }
    }
}

/* The same for R rows a thread (row r at x + r * xs float4s): each broadcast load feeds R
 * rows, halving (R = 2) the shared loads per FMA. */
template <int R, int CH> __device__ __forceinline__ void att_dots_r(float (*acc)[CH], const float4 *x, int xs, const float4 *y)
{
    ATT_NO_UNROLL
    for (int d4 = 0; d4 < ATT_D4; d4++) {
        float4 xv[R];
        ATT_UNROLL
        for (int r = 0; r < R; r++) xv[r] = x[r * xs + d4];
        ATT_UNROLL
        for (int c = 0; c < CH; c++) {
            float4 yv = y[c * ATT_D4 + d4];
            ATT_UNROLL
            for (int r = 0; r < R; r++) {
                acc[r][c] = fmaf(xv[r].x, yv.x, acc[r][c]);
                acc[r][c] = fmaf(xv[r].y, yv.y, acc[r][c]);
                acc[r][c] = fmaf(xv[r].z, yv.z, acc[r][c]);
                acc[r][c] = fmaf(xv[r].w, yv.w, acc[r][c]);
            }
        }
    }
}

template <int R, int CH> __device__ __forceinline__ void att_axpys_r(float (*acc)[ATT_DM], const float (*w)[CH], const float4 *y)
{
    ATT_UNROLL
    for (int c = 0; c < CH; c++) {
        ATT_UNROLL
        for (int d4 = 0; d4 < ATT_D4; d4++) {
            float4 yv = y[c * ATT_D4 + d4];
            ATT_UNROLL
            for (int r = 0; r < R; r++) {
                acc[r][4 * d4] = fmaf(w[r][c], yv.x, acc[r][4 * d4]);
                acc[r][4 * d4 + 1] = fmaf(w[r][c], yv.y, acc[r][4 * d4 + 1]);
                acc[r][4 * d4 + 2] = fmaf(w[r][c], yv.z, acc[r][4 * d4 + 2]);
                acc[r][4 * d4 + 3] = fmaf(w[r][c], yv.w, acc[r][4 * d4 + 3]);
            }
        }
    }
}

/* Block blk's (b, h) and first row: tiles outer, so neighbouring blocks share a tile
 * index; `heavy_last`: causal work grows with the tile index, so those run first. */
__device__ __forceinline__ void att_block(const att_args &a, int64_t blk, int64_t tiles, int heavy_last, int64_t *b,
                                          int64_t *h, int64_t *r0)
{
    int64_t BH = a.B * a.H, bh = blk % BH, tile = blk / BH;
    *r0 = (heavy_last ? tiles - 1 - tile : tile) * ATT_TR;
    *b = bh / a.H, *h = bh - *b * a.H;
}

/* ---- forward ---------------------------------------------------------------------- */

/* Shared: Qs ATT_TR x ATT_LD (then the outputs), Ks and Vs ATT_TK x ATT_DM. A block has
 * ATT_TR / R threads; thread t owns rows t, t + NT, ... (conflict-free own-row loads). */
template <int R, int CH> __global__ void ATT_BOUNDS(ATT_TR / R) k_att_fwd_tiled(att_args a)
{
    constexpr int NT = ATT_TR / R;
    float *Qs = att_smem<float>(), *Ks = Qs + ATT_TR * ATT_LD, *Vs = Ks + ATT_TK * ATT_DM;
    const int64_t tiles = (a.Tq + ATT_TR - 1) / ATT_TR;
    const float scale = (float)a.scale, ninf = -INFINITY;
    float o[ATT_TN][R][ATT_DM], m[ATT_TN][R], l[ATT_TN][R];
    for (int64_t blk = blockIdx.x; blk < a.B * a.H * tiles; blk += gridDim.x) {
        int64_t b, h, i0;
        att_block(a, blk, tiles, a.causal, &b, &h, &i0);
        ATT_SYNC(); /* the previous block's outputs are stored */
        att_tile_ld(Qs, ATT_LD, a.q, b, h, i0, ATT_TR, a.Tq - i0, a.D);
        for (int u = 0; u < ATT_TN; u++) { /* every (emulated) thread's registers */
            ATT_UNROLL
            for (int r = 0; r < R; r++) {
                m[u][r] = ninf, l[u][r] = 0;
                ATT_UNROLL
                for (int d = 0; d < ATT_DM; d++) o[u][r][d] = 0;
            }
        }
        int64_t kend = a.causal && i0 + ATT_TR < a.Tk ? i0 + ATT_TR : a.Tk; /* causal: no key past the last row */
        for (int64_t j0 = 0; j0 < kend; j0 += ATT_TK) {
            int64_t n = kend - j0 < ATT_TK ? kend - j0 : ATT_TK;
            ATT_SYNC();
            att_tile_ld(Ks, ATT_DM, a.k, b, h, j0, ATT_TK, n, a.D);
            att_tile_ld(Vs, ATT_DM, a.v, b, h, j0, ATT_TK, n, a.Dv);
            ATT_SYNC();
            ATT_EACH_THREAD(t, NT) {
                int u = ATT_ME(t);
                if (i0 + t >= a.Tq) continue; /* its other rows are further */
                for (int c0 = 0; c0 < n; c0 += CH) {
                    if (a.causal && j0 + c0 > i0 + t + (R - 1) * NT) break; /* masked for all its rows */
                    float s[R][CH];
                    ATT_UNROLL
                    for (int r = 0; r < R; r++) {
                        ATT_UNROLL
                        for (int c = 0; c < CH; c++) s[r][c] = 0;
                    }
                    att_dots_r<R, CH>(s, (const float4 *)(Qs + t * ATT_LD), NT * ATT_LD / 4,
                                      (const float4 *)(Ks + c0 * ATT_DM));
                    ATT_UNROLL
                    for (int r = 0; r < R; r++) {
                        int64_t i = i0 + t + r * NT;
                        float tmax = ninf, psum = 0;
                        ATT_UNROLL
                        for (int c = 0; c < CH; c++) {
                            s[r][c] = c0 + c < n && i < a.Tq ? att_mask(scale * s[r][c], a, b, h, i, j0 + c0 + c) : ninf;
                            tmax = s[r][c] > tmax ? s[r][c] : tmax;
                        }
                        if (tmax == ninf) { /* nothing here for row i: m, l, o stay */
                            ATT_UNROLL
                            for (int c = 0; c < CH; c++) s[r][c] = 0;
                            continue;
                        }
                        float mnew = m[u][r] > tmax ? m[u][r] : tmax, corr = m[u][r] == ninf ? 0.f : expf(m[u][r] - mnew);
                        ATT_UNROLL
                        for (int c = 0; c < CH; c++) {
                            s[r][c] = s[r][c] == ninf ? 0.f : expf(s[r][c] - mnew);
                            psum += s[r][c];
                        }
                        m[u][r] = mnew, l[u][r] = l[u][r] * corr + psum;
                        if (corr != 1.f) {
                            ATT_UNROLL
                            for (int d = 0; d < ATT_DM; d++) o[u][r][d] *= corr;
                        }
                    }
                    att_axpys_r<R, CH>(o[u], s, (const float4 *)(Vs + c0 * ATT_DM));
                }
            }
        }
        ATT_SYNC(); /* Qs is free: it takes the outputs */
        ATT_EACH_THREAD(t, NT) {
            int u = ATT_ME(t);
            ATT_UNROLL
            for (int r = 0; r < R; r++) {
                int64_t i = i0 + t + r * NT;
                float inv = l[u][r] > 0 ? 1.f / l[u][r] : 0.f;
                ATT_UNROLL
                for (int d = 0; d < ATT_DM; d++) Qs[(t + r * NT) * ATT_LD + d] = o[u][r][d] * inv;
                if (i < a.Tq)
                    ((float *)a.l.buf)[att_off(a.l, b, h, 0, i)] =
                        l[u][r] > 0 ? (float)((double)m[u][r] + log((double)l[u][r])) : ninf;
            }
        }
        ATT_SYNC();
        att_tile_st(Qs, a.o, b, h, i0, a.Tq - i0, a.Dv);
    }
}

/* ---- backward: gq (and delta) over query tiles --------------------------------------- */

/* Shared: Qs and Gs (go) ATT_TR x ATT_LD, Ks and Vs ATT_TK x ATT_DM (first the o rows for
 * delta, ATT_TR x ATT_DM across both); the gq rows go out through Qs. */
template <int R, int CH> __global__ void ATT_BOUNDS(ATT_TR / R) k_att_dq_tiled(att_args a)
{
    constexpr int NT = ATT_TR / R;
    float *Qs = att_smem<float>(), *Gs = Qs + ATT_TR * ATT_LD, *Ks = Gs + ATT_TR * ATT_LD, *Vs = Ks + ATT_TK * ATT_DM;
    float *delta = (float *)a.delta;
    const int64_t tiles = (a.Tq + ATT_TR - 1) / ATT_TR;
    const float scale = (float)a.scale, ninf = -INFINITY;
    float gq[ATT_TN][R][ATT_DM], lse[ATT_TN][R], dl[ATT_TN][R];
    for (int64_t blk = blockIdx.x; blk < a.B * a.H * tiles; blk += gridDim.x) {
        int64_t b, h, i0;
        att_block(a, blk, tiles, a.causal, &b, &h, &i0);
        ATT_SYNC();
        att_tile_ld(Qs, ATT_LD, a.q, b, h, i0, ATT_TR, a.Tq - i0, a.D);
        att_tile_ld(Gs, ATT_LD, a.go, b, h, i0, ATT_TR, a.Tq - i0, a.Dv);
        att_tile_ld(Ks, ATT_DM, a.o, b, h, i0, ATT_TR, a.Tq - i0, a.Dv); /* Ks and Vs: o's rows */
        ATT_SYNC();
        ATT_EACH_THREAD(t, NT) {
            int u = ATT_ME(t);
            ATT_UNROLL
            for (int r = 0; r < R; r++) {
                int ri = t + r * NT;
                int64_t i = i0 + ri;
                float part = 0;
                for (int d = 0; d < ATT_DM; d++) part = fmaf(Gs[ri * ATT_LD + d], Ks[ri * ATT_DM + d], part);
                dl[u][r] = part, lse[u][r] = i < a.Tq ? ((const float *)a.l.buf)[att_off(a.l, b, h, 0, i)] : ninf;
                if (i < a.Tq) delta[(b * a.H + h) * a.Tq + i] = part;
                ATT_UNROLL
                for (int d = 0; d < ATT_DM; d++) gq[u][r][d] = 0;
            }
        }
        int64_t kend = a.causal && i0 + ATT_TR < a.Tk ? i0 + ATT_TR : a.Tk;
        for (int64_t j0 = 0; j0 < kend; j0 += ATT_TK) {
            int64_t n = kend - j0 < ATT_TK ? kend - j0 : ATT_TK;
            ATT_SYNC(); /* also: every thread has read its o rows */
            att_tile_ld(Ks, ATT_DM, a.k, b, h, j0, ATT_TK, n, a.D);
            att_tile_ld(Vs, ATT_DM, a.v, b, h, j0, ATT_TK, n, a.Dv);
            ATT_SYNC();
            ATT_EACH_THREAD(t, NT) {
                int u = ATT_ME(t);
                if (i0 + t >= a.Tq) continue; /* its other rows are further */
                for (int c0 = 0; c0 < n; c0 += CH) {
                    if (a.causal && j0 + c0 > i0 + t + (R - 1) * NT) break;
                    float s[R][CH], dp[R][CH];
                    ATT_UNROLL
                    for (int r = 0; r < R; r++) {
                        ATT_UNROLL
                        for (int c = 0; c < CH; c++) s[r][c] = 0, dp[r][c] = 0;
                    }
                    att_dots_r<R, CH>(s, (const float4 *)(Qs + t * ATT_LD), NT * ATT_LD / 4, (const float4 *)(Ks + c0 * ATT_DM));
                    att_dots_r<R, CH>(dp, (const float4 *)(Gs + t * ATT_LD), NT * ATT_LD / 4, (const float4 *)(Vs + c0 * ATT_DM));
                    ATT_UNROLL
                    for (int r = 0; r < R; r++) {
                        int64_t i = i0 + t + r * NT;
                        /* past the end or every key masked (lse = -inf): p = 0, zero gradient */
                        ATT_UNROLL
                        for (int c = 0; c < CH; c++) {
                            float p = c0 + c < n && i < a.Tq ? att_p(att_mask(scale * s[r][c], a, b, h, i, j0 + c0 + c), lse[u][r]) : 0.f;
                            s[r][c] = p != 0 ? p * (dp[r][c] - dl[u][r]) : 0.f; /* ds */
                        }
                    }
                    att_axpys_r<R, CH>(gq[u], s, (const float4 *)(Ks + c0 * ATT_DM));
                }
            }
        }
        ATT_SYNC();
        ATT_EACH_THREAD(t, NT) {
            int u = ATT_ME(t);
            ATT_UNROLL
            for (int r = 0; r < R; r++) {
                ATT_UNROLL
                for (int d = 0; d < ATT_DM; d++) Qs[(t + r * NT) * ATT_LD + d] = scale * gq[u][r][d];
            }
        }
        ATT_SYNC();
        att_tile_st(Qs, a.gq, b, h, i0, a.Tq - i0, a.D);
    }
}

/* ---- backward: gk, gv over key tiles ------------------------------------------------- */

/* Shared: Ks and Vs ATT_TR x ATT_LD (the block's keys, then the gk, gv rows), Qs and Gs
 * ATT_TK x ATT_DM (a tile of queries and go), Lq and Dl ATT_TK (their lse and delta). */
__global__ void ATT_BOUNDS(ATT_TR) k_att_dkv_tiled(att_args a)
{
    float *Ks = att_smem<float>(), *Vs = Ks + ATT_TR * ATT_LD, *Qs = Vs + ATT_TR * ATT_LD, *Gs = Qs + ATT_TK * ATT_DM;
    float *Lq = Gs + ATT_TK * ATT_DM, *Dl = Lq + ATT_TK;
    const float *delta = (const float *)a.delta;
    const int64_t tiles = (a.Tk + ATT_TR - 1) / ATT_TR;
    const float scale = (float)a.scale, ninf = -INFINITY;
    float gk[ATT_TN][ATT_DM], gv[ATT_TN][ATT_DM];
    for (int64_t blk = blockIdx.x; blk < a.B * a.H * tiles; blk += gridDim.x) {
        int64_t b, h, j0;
        att_block(a, blk, tiles, 0, &b, &h, &j0); /* causal: the first key tiles see the most queries */
        ATT_SYNC();
        att_tile_ld(Ks, ATT_LD, a.k, b, h, j0, ATT_TR, a.Tk - j0, a.D);
        att_tile_ld(Vs, ATT_LD, a.v, b, h, j0, ATT_TR, a.Tk - j0, a.Dv);
        for (int u = 0; u < ATT_TN; u++) {
            ATT_UNROLL
            for (int d = 0; d < ATT_DM; d++) gk[u][d] = 0, gv[u][d] = 0;
        }
        /* causal: query i sees key j only when i >= j, so the queries start at the first key */
        for (int64_t q0 = a.causal ? j0 : 0; q0 < a.Tq; q0 += ATT_TK) {
            int64_t n = a.Tq - q0 < ATT_TK ? a.Tq - q0 : ATT_TK;
            ATT_SYNC();
            att_tile_ld(Qs, ATT_DM, a.q, b, h, q0, ATT_TK, n, a.D);
            att_tile_ld(Gs, ATT_DM, a.go, b, h, q0, ATT_TK, n, a.Dv);
            for (int e = (int)threadIdx.x; e < ATT_TK; e += (int)blockDim.x) {
                Lq[e] = e < n ? ((const float *)a.l.buf)[att_off(a.l, b, h, 0, q0 + e)] : ninf;
                Dl[e] = e < n ? delta[(b * a.H + h) * a.Tq + q0 + e] : 0.f;
            }
            ATT_SYNC();
            ATT_EACH_THREAD(t, ATT_TR) {
                int u = ATT_ME(t);
                int64_t j = j0 + t;
                if (j >= a.Tk) continue;
                for (int c0 = 0; c0 < n; c0 += ATT_CHB) {
                    if (a.causal && q0 + c0 + ATT_CHB <= j) continue; /* every query of the chunk is before key j */
                    float s[ATT_CHB], dp[ATT_CHB];
                    ATT_UNROLL
                    for (int c = 0; c < ATT_CHB; c++) s[c] = 0, dp[c] = 0;
                    att_dots<ATT_CHB>(s, (const float4 *)(Ks + t * ATT_LD), (const float4 *)(Qs + c0 * ATT_DM));
                    att_dots<ATT_CHB>(dp, (const float4 *)(Vs + t * ATT_LD), (const float4 *)(Gs + c0 * ATT_DM));
                    ATT_UNROLL
                    for (int c = 0; c < ATT_CHB; c++) {
                        float p = c0 + c < n ? att_p(att_mask(scale * s[c], a, b, h, q0 + c0 + c, j), Lq[c0 + c]) : 0.f;
                        dp[c] = p != 0 ? p * (dp[c] - Dl[c0 + c]) : 0.f; /* ds */
                        s[c] = p;
                    }
                    att_axpys<ATT_CHB>(gv[u], s, (const float4 *)(Gs + c0 * ATT_DM));
                    att_axpys<ATT_CHB>(gk[u], dp, (const float4 *)(Qs + c0 * ATT_DM));
                }
            }
        }
        ATT_SYNC(); /* Ks and Vs are free: they take gk and gv */
        ATT_EACH_THREAD(t, ATT_TR) {
            int u = ATT_ME(t);
            ATT_UNROLL
            for (int d = 0; d < ATT_DM; d++) Ks[t * ATT_LD + d] = scale * gk[u][d], Vs[t * ATT_LD + d] = gv[u][d];
        }
        ATT_SYNC();
        att_tile_st(Ks, a.gk, b, h, j0, a.Tk - j0, a.D);
        att_tile_st(Vs, a.gv, b, h, j0, a.Tk - j0, a.Dv);
    }
}

/* Shared bytes of each tiled kernel (0 fwd, 1 dq, 2 dkv). */
static size_t att_tiled_shared(int kernel)
{
    size_t rows = (size_t)ATT_TR * ATT_LD, tile = (size_t)ATT_TK * ATT_DM;
    size_t n = kernel == 0 ? rows + 2 * tile : kernel == 1 ? 2 * rows + 2 * tile : 2 * rows + 2 * tile + 2 * ATT_TK;
    return n * sizeof(float);
}

#endif /* FF_CUDA_ATTENTION_TILED_CUH */
