/*
 * The attention tiles' f32 products when they are small: C = alpha op(A) op(B) + beta C,
 * row-major, as blas_sgemm_ab, in registers without a library call.
 *
 * Why: short sequences make tiny tiles. MiniLM's batch of 32 sentences has T = 20, so each
 * (batch, head) runs a 20 x 20 x 32 and a 20 x 32 x 20 product; oneDNN's sgemm spends
 * about 2 us per call on dispatch and packing around ~13k multiply-adds, 11% of the bf16
 * forward. Here op(B) is copied into a zero-padded [K, 16 NB] strip (16 KiB at most),
 * then four rows of C at a time accumulate over k in 4 NB zmm-sized registers (one
 * broadcast of A per row and k). Accumulates in f32, k in order, as an sgemm would.
 * Without AVX-512 (or with FF_BLAS_ISA=avx2) the same runs in 8-lane vectors, fewer rows
 * per pass the wider N is, within AVX2's 16 registers.
 */
#include "blas_attention.h"

typedef float v16f __attribute__((vector_size(64)));

#define SG_MAX_NB 4     /* columns: at most 64 */
#define SG_MAX_B 4096   /* floats of the padded B strip */
#define SG_MAX_MNK 65536 /* past this the library's kernel wins */

#define SPLAT(c) ((v16f){c, c, c, c, c, c, c, c, c, c, c, c, c, c, c, c})

/* Rows [i0, i0 + R) of C, NB blocks of 16 columns, from the packed strip bp. */
#define SG_ROWS(R)                                                                                       \
    do {                                                                                                 \
        v16f acc[R][SG_MAX_NB];                                                                          \
        for (int r = 0; r < R; r++)                                                                      \
            for (int nb = 0; nb < SG_MAX_NB; nb++) acc[r][nb] = SPLAT(0.0f);                             \
        for (int64_t k = 0; k < K; k++) {                                                                \
            const float *brow = bp + k * np;                                                             \
            v16f b[SG_MAX_NB];                                                                           \
            for (int nb = 0; nb < NB; nb++) memcpy(&b[nb], brow + 16 * nb, sizeof b[nb]);                 \
            for (int r = 0; r < R; r++) {                                                                \
                float a = ta ? A[k * lda + i0 + r] : A[(i0 + r) * lda + k];                              \
                for (int nb = 0; nb < NB; nb++) acc[r][nb] += SPLAT(a) * b[nb];                          \
            }                                                                                            \
        }                                                                                                \
        for (int r = 0; r < R; r++) {                                                                    \
            float out[16 * SG_MAX_NB], *c = C + (i0 + r) * ldc;                                          \
            memcpy(out, acc[r], sizeof out); /* the blocks past NB are zeros */                        \
            if (beta == 0.0f)                                                                            \
                for (int64_t j = 0; j < N; j++) c[j] = alpha * out[j];                                   \
            else                                                                                         \
                for (int64_t j = 0; j < N; j++) c[j] = alpha * out[j] + beta * c[j];                     \
        }                                                                                                \
    } while (0)

/* NB as a constant, so that the accumulators live in registers. */
#define SG_KERNEL(NB_)                                                                                   \
    BLAS_CLONES static void sg_kernel_##NB_(int ta, int64_t M, int64_t N, int64_t K, float alpha,      \
                                            const float *A, int64_t lda, const float *bp, float beta,    \
                                            float *C, int64_t ldc)                                       \
    {                                                                                                    \
        const int NB = NB_;                                                                              \
        const int64_t np = 16 * NB_;                                                                     \
        int64_t i0 = 0;                                                                                  \
        for (; i0 + 4 <= M; i0 += 4) SG_ROWS(4);                                                         \
        for (; i0 < M; i0++) SG_ROWS(1);                                                                 \
    }
SG_KERNEL(1)
SG_KERNEL(2)
SG_KERNEL(3)
SG_KERNEL(4)

/* The same for CPUs without AVX-512, in 8-lane vectors. There a 16-lane v16f is two ymm
 * halves that gcc moves through the stack (vmovdqa to spill slots, broadcasts built with
 * vpinsrq): MiniLM's T = 20 products ran at ~1.5 GFLOP/s on a Zen 1 EPYC, 15% of the
 * batch-32 forward. Accumulators R x NB8 (NB8 = 8-lane blocks) within AVX2's 16 ymm, B
 * read from the strip (L1) at each use. */
typedef float v8f __attribute__((vector_size(32)));
#define SPLAT8(c) ((v8f){c, c, c, c, c, c, c, c})

#define SG8_KERNEL(NB8, R)                                                                               \
    BLAS_CLONES static void sg8_kernel_##NB8(int ta, int64_t M, int64_t N, int64_t K, float alpha,     \
                                             const float *A, int64_t lda, const float *bp, int64_t np,   \
                                             float beta, float *C, int64_t ldc)                          \
    {                                                                                                    \
        int64_t i0 = 0;                                                                                  \
        for (; i0 < M; i0 += R) {                                                                        \
            int rows = M - i0 < R ? (int)(M - i0) : R;                                                   \
            v8f acc[R][NB8];                                                                             \
            for (int r = 0; r < R; r++)                                                                  \
                for (int nb = 0; nb < NB8; nb++) acc[r][nb] = SPLAT8(0.0f);                              \
            for (int64_t k = 0; k < K; k++) {                                                            \
                const float *brow = bp + k * np;                                                         \
                for (int r = 0; r < R; r++) {                                                            \
                    int64_t i = i0 + (r < rows ? r : 0); /* past M: a repeat of row i0, not stored */   \
                    float a = ta ? A[k * lda + i] : A[i * lda + k];                                      \
                    for (int nb = 0; nb < NB8; nb++) {                                                   \
                        v8f b;                                                                           \
                        memcpy(&b, brow + 8 * nb, sizeof b);                                             \
                        acc[r][nb] += SPLAT8(a) * b;                                                     \
                    }                                                                                    \
                }                                                                                        \
            }                                                                                            \
            for (int r = 0; r < rows; r++) {                                                             \
                float out[8 * NB8], *c = C + (i0 + r) * ldc;                                             \
                memcpy(out, acc[r], sizeof out);                                                         \
                int64_t n = N < 8 * NB8 ? N : 8 * NB8;                                                   \
                if (beta == 0.0f)                                                                        \
                    for (int64_t j = 0; j < n; j++) c[j] = alpha * out[j];                               \
                else                                                                                     \
                    for (int64_t j = 0; j < n; j++) c[j] = alpha * out[j] + beta * c[j];                 \
            }                                                                                            \
        }                                                                                                \
    }
SG8_KERNEL(2, 4) /* N <= 16: 8 + 1 registers */
SG8_KERNEL(4, 3) /* N <= 32: 12 + 1 */
SG8_KERNEL(6, 2) /* N <= 48: 12 + 1 */
SG8_KERNEL(8, 1) /* N <= 64: 8 + 1 */

/* Its own frame: the strip stays off the stack of the library calls beside it. */
static __attribute__((noinline)) void sg_small(int wide, int ta, int tb, int64_t M, int64_t N, int64_t K, float alpha,
                                               const float *A, int64_t lda, const float *B, int64_t ldb, float beta,
                                               float *C, int64_t ldc)
{
    float bp[SG_MAX_B] __attribute__((aligned(64)));
    int64_t nb = (N + 15) / 16, np = 16 * nb;
    for (int64_t k = 0; k < K; k++) {
        float *row = bp + k * np;
        if (tb)
            for (int64_t j = 0; j < N; j++) row[j] = B[j * ldb + k];
        else
            memcpy(row, B + k * ldb, sizeof(float) * (size_t)N);
        for (int64_t j = N; j < np; j++) row[j] = 0.0f;
    }
    if (!wide) { /* no AVX-512 (or FF_BLAS_ISA=avx2): the 8-lane kernels */
        switch (nb) {
        case 1: sg8_kernel_2(ta, M, N, K, alpha, A, lda, bp, np, beta, C, ldc); break;
        case 2: sg8_kernel_4(ta, M, N, K, alpha, A, lda, bp, np, beta, C, ldc); break;
        case 3: sg8_kernel_6(ta, M, N, K, alpha, A, lda, bp, np, beta, C, ldc); break;
        default: sg8_kernel_8(ta, M, N, K, alpha, A, lda, bp, np, beta, C, ldc); break;
        }
        return;
    }
    switch (nb) {
    case 1: sg_kernel_1(ta, M, N, K, alpha, A, lda, bp, beta, C, ldc); break;
    case 2: sg_kernel_2(ta, M, N, K, alpha, A, lda, bp, beta, C, ldc); break;
    case 3: sg_kernel_3(ta, M, N, K, alpha, A, lda, bp, beta, C, ldc); break;
    default: sg_kernel_4(ta, M, N, K, alpha, A, lda, bp, beta, C, ldc); break;
    }
}

void at_gemm_f32(const blas_ctx *c, int ta, int tb, int64_t M, int64_t N, int64_t K, float alpha, const float *A,
                 int64_t lda, const float *B, int64_t ldb, float beta, float *C, int64_t ldc)
{
    int64_t nb = (N + 15) / 16;
    if (N < 1 || nb > SG_MAX_NB || K * 16 * nb > SG_MAX_B || M * N * K > SG_MAX_MNK)
        blas_sgemm_ab(c, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    else
        sg_small(c->wide_vectors, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}
