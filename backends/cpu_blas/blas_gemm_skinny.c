/*
 * f32 products with few rows and a transposed right operand: C = A W^T, A [M, K] and W
 * [N, K] both with unit stride along K, M small. That is every Linear layer at batch 1
 * (a sentence of ~11 tokens through MiniLM, one LSTM step, a decoder's next token).
 *
 * Why a kernel of our own: there the product is bound by reading W, once, from memory
 * (MiniLM's encoder is 42 MB of weights against a 105 MB L3 shared with the machine's
 * other tenants; one core streams ~10.5 GB/s whether they are in L3 or not). BLAS packs
 * W^T into its panel layout on every call, so W is read, written and read again: oneDNN's
 * sgemm took 490-610 us for [11, 384] x [384, 1536] with the weights out of cache, where
 * W is 2.36 MB, 225 us at that bandwidth; this kernel 460-490 us, and in a whole forward
 * the gap is wider (ff-embed at batch 1: 10.1 -> 6.3 ms, the packs' writes no longer
 * evicting the next layer's weights). Here W's rows are read in place, in order, once:
 * every A row is a dot product against them, and A (M x K, 17 KB for MiniLM) stays in L1.
 *
 * Shape: a tile is SK_MR rows of A against SK_NR rows of W, 24 zmm accumulators that each
 * hold 16 partial sums of one C element; per 16 k, 4 W loads and 6 A loads feed 24 FMAs.
 * The partial sums of 16 columns are parked in a small buffer and reduced together, a
 * butterfly of shuffles that turns 16 vectors into one vector of 16 sums (15 two-input
 * permutes and adds, where 16 horizontal sums would cost ~4x that): K is short here
 * (384), so the reduction is a visible share of the work and must not be scalar.
 * Columns past N read W's last row again (its sums are never stored), K's tail is a
 * masked load, so no input is read out of bounds. Accumulates in f32 like BLAS, in its
 * own order (16 interleaved partial sums).
 *
 * Taken on CPUs with AVX-512F (blas_skinny_pick), and not while FF_GEMM forces one gemm
 * for every product; CPUs with AVX2 + FMA but no AVX-512 get the ymm form of the same
 * design (blas_gemm_skinny_avx2.c). Measured: a Xeon (608cdaa), a Zen 1 EPYC (ymm form)
 * and a Zen 5 EPYC, where MiniLM at batch 1 took 3.9 ms through oneDNN's sgemm, 2.6 with
 * the ymm form and 2.2 with this one; Zen 4 and Intel CPUs without AVX-512 are not
 * measured, and take the form of their vector width by the same argument (W read once,
 * in place, against BLAS's pack). The column blocks of 16 are split across the pool.
 */
#include "blas_impl.h"

/* Blocks [b, e) of nb columns each, with a scratch of nb partial-sum vectors per row of A. */
static void skinny_slice(void *arg, int64_t b, int64_t e)
{
    blas_skinny_job *j = arg;
    void *R = blas_scratch(j->ctx, j->scratch * (size_t)j->M);
    if (!R) {
        atomic_store(&j->failed, 1);
        return;
    }
    for (int64_t q = b; q < e; q++) {
        int64_t n0 = q * j->nb, nv = j->N - n0 < j->nb ? j->N - n0 : j->nb;
        j->block(j->M, j->K, j->A, j->lda, j->W, j->ldw, n0, nv, j->C, j->crs, j->ccs, R);
    }
    blas_free(j->ctx, R);
}

int blas_skinny_run(blas_skinny_job *j, int64_t min_blocks)
{
    int64_t blocks = (j->N + j->nb - 1) / j->nb, min_par = j->M * j->N * j->K >= (1 << 18) ? min_blocks : INT64_MAX;
    atomic_init(&j->failed, 0);
    blas_parallel_for(j->ctx, blocks, min_par, 1, skinny_slice, j);
    return atomic_load(&j->failed) ? -1 : 0;
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define SK_MR 6   /* rows of A per tile */
#define SK_NR 4   /* rows of W per tile */
#define SK_NB 16  /* columns per reduction: one zmm of results */
/* W's lines are prefetched this many rows ahead: each row is a short stream (1.5 KB for
 * K = 384), too short for the hardware prefetcher to learn before it ends */
#define SK_PF_ROWS 8
/* Only for a W of 256 KB and more: smaller ones stay in cache between calls, where BLAS's
 * packing costs little. In ff-embed at batch 1 (W of 576 KB to 2.4 MB) taking MiniLM's
 * 384 x 384 too was faster than leaving it to sgemm (5.8 against 6.0 ms per forward). */
#define SK_MIN_NK ((int64_t)1 << 16)

#define SK_TARGET __attribute__((target("avx512f")))
/* the tile's loops unrolled, so its 24 accumulators live in registers */
#define SK_UNROLL _Pragma("GCC unroll 8")

/* R[j * rs + i] = the 16 partial sums of A row i . W row j, i < mr, j < SK_NR. */
static inline __attribute__((always_inline)) SK_TARGET void tile(const int mr, int64_t K, const float *A,
                                                                 int64_t lda, const float *const w[SK_NR],
                                                                 __mmask16 tail, int64_t pf, __m512 *R,
                                                                 int64_t rs)
{
    __m512 acc[SK_MR][SK_NR];
    SK_UNROLL for (int i = 0; i < mr; i++)
        SK_UNROLL for (int j = 0; j < SK_NR; j++) acc[i][j] = _mm512_setzero_ps();
    int64_t k = 0;
    for (; k + 16 <= K; k += 16) {
        __m512 wv[SK_NR];
        SK_UNROLL for (int j = 0; j < SK_NR; j++) wv[j] = _mm512_loadu_ps(w[j] + k);
        if (pf) SK_UNROLL for (int j = 0; j < SK_NR; j++) _mm_prefetch((const char *)(w[j] + pf + k), _MM_HINT_T0);
        SK_UNROLL for (int i = 0; i < mr; i++) {
            __m512 a = _mm512_loadu_ps(A + i * lda + k);
            SK_UNROLL for (int j = 0; j < SK_NR; j++) acc[i][j] = _mm512_fmadd_ps(a, wv[j], acc[i][j]);
        }
    }
    if (tail) {
        __m512 wv[SK_NR];
        SK_UNROLL for (int j = 0; j < SK_NR; j++) wv[j] = _mm512_maskz_loadu_ps(tail, w[j] + k);
        SK_UNROLL for (int i = 0; i < mr; i++) {
            __m512 a = _mm512_maskz_loadu_ps(tail, A + i * lda + k);
            SK_UNROLL for (int j = 0; j < SK_NR; j++) acc[i][j] = _mm512_fmadd_ps(a, wv[j], acc[i][j]);
        }
    }
    SK_UNROLL for (int i = 0; i < mr; i++)
        SK_UNROLL for (int j = 0; j < SK_NR; j++) R[j * rs + i] = acc[i][j];
}

/* a's and b's halves of each 2s-lane segment, interleaved by segment: added, every
 * result lane holds the sum of two lanes of one input. */
static inline __attribute__((always_inline)) SK_TARGET __m512 fold(__m512 a, __m512 b, __m512i lo, __m512i hi)
{
    return _mm512_add_ps(_mm512_permutex2var_ps(a, lo, b), _mm512_permutex2var_ps(a, hi, b));
}

/* One vector whose lane c is the sum of v[c]'s 16 lanes. Four levels of fold halve the
 * vectors each time; their lanes come out in bit-reversed order of the inputs, so the
 * inputs go in bit-reversed (an involution: lane c ends up with v[c]). */
static SK_TARGET __m512 reduce16(const __m512 *v, int64_t vs)
{
    static const int rev[16] = {0, 8, 4, 12, 2, 10, 6, 14, 1, 9, 5, 13, 3, 11, 7, 15};
    const __m512i lo1 = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23);
    const __m512i hi1 = _mm512_setr_epi32(8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29, 30, 31);
    const __m512i lo2 = _mm512_setr_epi32(0, 1, 2, 3, 16, 17, 18, 19, 8, 9, 10, 11, 24, 25, 26, 27);
    const __m512i hi2 = _mm512_setr_epi32(4, 5, 6, 7, 20, 21, 22, 23, 12, 13, 14, 15, 28, 29, 30, 31);
    const __m512i lo3 = _mm512_setr_epi32(0, 1, 16, 17, 4, 5, 20, 21, 8, 9, 24, 25, 12, 13, 28, 29);
    const __m512i hi3 = _mm512_setr_epi32(2, 3, 18, 19, 6, 7, 22, 23, 10, 11, 26, 27, 14, 15, 30, 31);
    const __m512i lo4 = _mm512_setr_epi32(0, 16, 2, 18, 4, 20, 6, 22, 8, 24, 10, 26, 12, 28, 14, 30);
    const __m512i hi4 = _mm512_setr_epi32(1, 17, 3, 19, 5, 21, 7, 23, 9, 25, 11, 27, 13, 29, 15, 31);
    __m512 x[8], y[4], z[2];
    for (int i = 0; i < 8; i++) x[i] = fold(v[rev[2 * i] * vs], v[rev[2 * i + 1] * vs], lo1, hi1);
    for (int i = 0; i < 4; i++) y[i] = fold(x[2 * i], x[2 * i + 1], lo2, hi2);
    for (int i = 0; i < 2; i++) z[i] = fold(y[2 * i], y[2 * i + 1], lo3, hi3);
    return fold(z[0], z[1], lo4, hi4);
}

/* C[:, n0 .. n0 + nv) (nv <= SK_NB) from W rows n0.., R scratch of SK_NB * M vectors. */
static SK_TARGET void block(int64_t M, int64_t K, const float *A, int64_t lda, const float *W, int64_t ldw,
                            int64_t n0, int64_t nv, float *C, int64_t crs, int64_t ccs, void *scratch)
{
    __m512 *R = scratch;
    const __mmask16 tail = (__mmask16)((1u << (K % 16)) - 1u);
    for (int64_t t = 0; t < SK_NB; t += SK_NR) {
        if (t >= nv) { /* columns with no W row: zero sums, never stored */
            for (int64_t q = t * M; q < SK_NB * M; q++) R[q] = _mm512_setzero_ps();
            break;
        }
        const float *w[SK_NR];
        for (int j = 0; j < SK_NR; j++) w[j] = W + (n0 + (t + j < nv ? t + j : nv - 1)) * ldw;
        for (int64_t m0 = 0; m0 < M; m0 += SK_MR) {
            const float *Am = A + m0 * lda;
            const int64_t pf = m0 ? 0 : SK_PF_ROWS * ldw; /* once per W line: the first row block */
            __m512 *Rt = R + t * M + m0;
            switch (M - m0 < SK_MR ? (int)(M - m0) : SK_MR) {
            case 1: tile(1, K, Am, lda, w, tail, pf, Rt, M); break;
            case 2: tile(2, K, Am, lda, w, tail, pf, Rt, M); break;
            case 3: tile(3, K, Am, lda, w, tail, pf, Rt, M); break;
            case 4: tile(4, K, Am, lda, w, tail, pf, Rt, M); break;
            case 5: tile(5, K, Am, lda, w, tail, pf, Rt, M); break;
            default: tile(6, K, Am, lda, w, tail, pf, Rt, M); break;
            }
        }
    }
    const __mmask16 keep = (__mmask16)(nv >= 16 ? 0xffffu : (1u << nv) - 1u);
    for (int64_t i = 0; i < M; i++) {
        __m512 s = reduce16(R + i, M);
        float *c = C + i * crs + n0 * ccs;
        if (ccs == 1) {
            _mm512_mask_storeu_ps(c, keep, s);
        } else {
            float lanes[16];
            _mm512_storeu_ps(lanes, s);
            for (int64_t j = 0; j < nv; j++) c[j * ccs] = lanes[j];
        }
    }
}

/* The form of the vector width the hand kernels use (wide: 64-byte vectors, which
 * FF_BLAS_ISA=avx2 turns off); sgemm keeps the product without AVX2 + FMA. */
int blas_skinny_pick(int wide)
{
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) return BLAS_SKINNY_OFF;
    return wide ? BLAS_SKINNY_ZMM : BLAS_SKINNY_YMM;
}

int blas_skinny_ok(const blas_ctx *c, int64_t M, int64_t N, int64_t K, int64_t acs, int64_t brs)
{
    return c->skinny_gemm && M >= 1 && M <= BLAS_SKINNY_MAX_M && N * K >= SK_MIN_NK && K >= 16 && acs == 1 && brs == 1;
}

int blas_sgemm_skinny(blas_ctx *c, int64_t M, int64_t N, int64_t K, const float *A, int64_t lda, const float *W,
                      int64_t ldw, float *C, int64_t crs, int64_t ccs)
{
    if (c->skinny_gemm == BLAS_SKINNY_YMM) return blas_sgemm_skinny_avx2(c, M, N, K, A, lda, W, ldw, C, crs, ccs);
    /* a block reads 16 W rows; parallel once there are a few per thread */
    blas_skinny_job j = {.ctx = c, .M = M, .N = N, .K = K, .lda = lda, .ldw = ldw, .crs = crs, .ccs = ccs,
                         .A = A, .W = W, .C = C, .nb = SK_NB, .scratch = SK_NB * sizeof(__m512), .block = block};
    return blas_skinny_run(&j, 4);
}
#else
int blas_skinny_pick(int wide)
{
    (void)wide;
    return BLAS_SKINNY_OFF;
}

int blas_skinny_ok(const blas_ctx *c, int64_t M, int64_t N, int64_t K, int64_t acs, int64_t brs)
{
    (void)c, (void)M, (void)N, (void)K, (void)acs, (void)brs;
    return 0;
}

int blas_sgemm_skinny(blas_ctx *c, int64_t M, int64_t N, int64_t K, const float *A, int64_t lda, const float *W,
                      int64_t ldw, float *C, int64_t crs, int64_t ccs)
{
    (void)c, (void)M, (void)N, (void)K, (void)A, (void)lda, (void)W, (void)ldw, (void)C, (void)crs, (void)ccs;
    return -1;
}
#endif
