/*
 * blas_gemm_skinny.c's product, C = A W^T at few rows with W's rows read in place, for
 * CPUs with AVX2 and FMA but no AVX-512: 16 ymm registers instead of 32 zmm.
 *
 * Why: on a Zen 1 EPYC, MiniLM at batch 1 (11 tokens) is compute-bound, not bound by
 * reading W: oneDNN's sgemm ran its forward at ~18 GFLOP/s, packing W^T on every call,
 * against ~27 for ONNX Runtime's kernels (13.0 against 8.7 ms). An earlier try with the
 * zmm-shaped code lost here: gcc splits a 16-lane vector type into ymm halves through the
 * stack on AVX2 (see blas_attention_gemm.c); this one is written in ymm intrinsics.
 *
 * Shape: a tile is 3 rows of A against 4 rows of W, 12 accumulators that each hold 8
 * partial sums of one C element; per 8 k, 3 A loads (kept) and 4 W loads (one at a time)
 * feed 12 FMAs, 16 registers in all. The partial sums of 8 columns are reduced together
 * (two levels of hadd and a lane swap: 8 vectors into one of 8 sums). Columns past N read
 * W's last row again (never stored); K's tail is a masked load. Accumulates in f32 in its
 * own order (8 interleaved partial sums).
 */
#include "blas_impl.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define S2_MR 3  /* rows of A per tile */
#define S2_NR 4  /* rows of W per tile */
#define S2_NB 8  /* columns per reduction: one ymm of results */
#define S2_PF_ROWS 8 /* W rows prefetched ahead, as the zmm kernel */

#define S2_TARGET __attribute__((target("avx2,fma")))
#define S2_UNROLL _Pragma("GCC unroll 8")

/* R[j * rs + i] = the 8 partial sums of A row i . W row j, i < mr, j < S2_NR. */
static inline __attribute__((always_inline)) S2_TARGET void tile(const int mr, int64_t K, const float *A,
                                                                 int64_t lda, const float *const w[S2_NR],
                                                                 __m256i tail, int64_t pf, __m256 *R, int64_t rs)
{
    __m256 acc[S2_MR][S2_NR];
    S2_UNROLL for (int i = 0; i < mr; i++)
        S2_UNROLL for (int j = 0; j < S2_NR; j++) acc[i][j] = _mm256_setzero_ps();
    int64_t k = 0;
    for (; k + 8 <= K; k += 8) {
        __m256 a[S2_MR];
        S2_UNROLL for (int i = 0; i < mr; i++) a[i] = _mm256_loadu_ps(A + i * lda + k);
        if (pf) S2_UNROLL for (int j = 0; j < S2_NR; j++) _mm_prefetch((const char *)(w[j] + pf + k), _MM_HINT_T0);
        S2_UNROLL for (int j = 0; j < S2_NR; j++) {
            __m256 wv = _mm256_loadu_ps(w[j] + k);
            S2_UNROLL for (int i = 0; i < mr; i++) acc[i][j] = _mm256_fmadd_ps(a[i], wv, acc[i][j]);
        }
    }
    if (K - k) {
        __m256 a[S2_MR];
        S2_UNROLL for (int i = 0; i < mr; i++) a[i] = _mm256_maskload_ps(A + i * lda + k, tail);
        S2_UNROLL for (int j = 0; j < S2_NR; j++) {
            __m256 wv = _mm256_maskload_ps(w[j] + k, tail);
            S2_UNROLL for (int i = 0; i < mr; i++) acc[i][j] = _mm256_fmadd_ps(a[i], wv, acc[i][j]);
        }
    }
    S2_UNROLL for (int i = 0; i < mr; i++)
        S2_UNROLL for (int j = 0; j < S2_NR; j++) R[j * rs + i] = acc[i][j];
}

/* One vector whose lane c is the sum of v[c * vs]'s 8 lanes. */
static S2_TARGET __m256 reduce8(const __m256 *v, int64_t vs)
{
    __m256 t0 = _mm256_hadd_ps(v[0], v[vs]), t1 = _mm256_hadd_ps(v[2 * vs], v[3 * vs]);
    __m256 t2 = _mm256_hadd_ps(v[4 * vs], v[5 * vs]), t3 = _mm256_hadd_ps(v[6 * vs], v[7 * vs]);
    /* u0 = [sums of v0..v3's low halves | their high halves], u1 the same for v4..v7 */
    __m256 u0 = _mm256_hadd_ps(t0, t1), u1 = _mm256_hadd_ps(t2, t3);
    return _mm256_add_ps(_mm256_permute2f128_ps(u0, u1, 0x20), _mm256_permute2f128_ps(u0, u1, 0x31));
}

/* C[:, n0 .. n0 + nv) (nv <= S2_NB) from W rows n0.., R scratch of S2_NB * M vectors. */
static S2_TARGET void block(int64_t M, int64_t K, const float *A, int64_t lda, const float *W, int64_t ldw,
                            int64_t n0, int64_t nv, float *C, int64_t crs, int64_t ccs, void *scratch)
{
    __m256 *R = scratch;
    const int kt = (int)(K % 8);
    const __m256i tail = _mm256_setr_epi32(kt > 0 ? -1 : 0, kt > 1 ? -1 : 0, kt > 2 ? -1 : 0, kt > 3 ? -1 : 0,
                                           kt > 4 ? -1 : 0, kt > 5 ? -1 : 0, kt > 6 ? -1 : 0, 0);
    for (int64_t t = 0; t < S2_NB; t += S2_NR) {
        if (t >= nv) { /* columns with no W row: zero sums, never stored */
            for (int64_t q = t * M; q < S2_NB * M; q++) R[q] = _mm256_setzero_ps();
            break;
        }
        const float *w[S2_NR];
        for (int j = 0; j < S2_NR; j++) w[j] = W + (n0 + (t + j < nv ? t + j : nv - 1)) * ldw;
        for (int64_t m0 = 0; m0 < M; m0 += S2_MR) {
            const float *Am = A + m0 * lda;
            const int64_t pf = m0 ? 0 : S2_PF_ROWS * ldw; /* once per W line: the first row block */
            __m256 *Rt = R + t * M + m0;
            switch (M - m0 < S2_MR ? (int)(M - m0) : S2_MR) {
            case 1: tile(1, K, Am, lda, w, tail, pf, Rt, M); break;
            case 2: tile(2, K, Am, lda, w, tail, pf, Rt, M); break;
            default: tile(3, K, Am, lda, w, tail, pf, Rt, M); break;
            }
        }
    }
    for (int64_t i = 0; i < M; i++) {
        float lanes[S2_NB];
        _mm256_storeu_ps(lanes, reduce8(R + i, M));
        float *c = C + i * crs + n0 * ccs;
        if (ccs == 1 && nv == S2_NB)
            memcpy(c, lanes, sizeof lanes);
        else
            for (int64_t j = 0; j < nv; j++) c[j * ccs] = lanes[j];
    }
}

int blas_sgemm_skinny_avx2(blas_ctx *c, int64_t M, int64_t N, int64_t K, const float *A, int64_t lda, const float *W,
                           int64_t ldw, float *C, int64_t crs, int64_t ccs)
{
    blas_skinny_job j = {.ctx = c, .M = M, .N = N, .K = K, .lda = lda, .ldw = ldw, .crs = crs, .ccs = ccs,
                         .A = A, .W = W, .C = C, .nb = S2_NB, .scratch = S2_NB * sizeof(__m256), .block = block};
    return blas_skinny_run(&j, 8); /* blocks of 8 W rows: as many rows per thread as the zmm form */
}
#else
int blas_sgemm_skinny_avx2(blas_ctx *c, int64_t M, int64_t N, int64_t K, const float *A, int64_t lda, const float *W,
                           int64_t ldw, float *C, int64_t crs, int64_t ccs)
{
    (void)c, (void)M, (void)N, (void)K, (void)A, (void)lda, (void)W, (void)ldw, (void)C, (void)crs, (void)ccs;
    return -1;
}
#endif
