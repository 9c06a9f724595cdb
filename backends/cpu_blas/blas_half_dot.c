/*
 * BF16 matmul on AVX512-BF16: vdpbf16ps multiplies pairs of bf16 and adds both products
 * to an f32 lane, 32 multiply-adds per instruction where the f32 gemm does 16.
 *
 * Blocking as blas_gemm.c's (Goto/BLIS: KC x NC panels of B, MC x KC blocks of A, a
 * 12 x 32 micro-tile in 24 zmm accumulators); the packed operands hold k-pairs: A as
 * (A[i][k], A[i][k+1]) 32-bit words per row, B as (B[k][j], B[k+1][j]) per column, odd K
 * and ragged edges zero-padded. Packing reads any strides, so transposed and broadcast
 * operands need no copy. C accumulates in a dense f32 buffer across KC panels and is
 * rounded to bf16 once (blas_half_wide.c).
 *
 * Values: bf16 products are exact in f32, each lane accumulates in f32 with round to
 * nearest even, as the f32 gemm does, so the result is within the f32 accumulation bound
 * of the exact product (not the detour's bits: another summation order). The instruction
 * treats subnormal inputs as zero and flushes subnormal products and sums to zero (it
 * ignores MXCSR and leaves it alone). Inputs: packing notices a subnormal operand and
 * the caller then computes the product through the f32 gemm instead (with DAZ,
 * inf * subnormal would give NaN, not inf). Results: a product or partial sum below
 * 2^-126 in magnitude is lost, an absolute error below K * 2^-126, inside the f32
 * accumulation bound of any product of normal operands; only results that are themselves
 * that tiny lose their subnormal digits. FF_BF16_DOT=0 turns the kernel off, FF_BF16_DOT=1
 * on without the speed check below.
 */
#include <time.h>

#include "blas_impl.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#include <immintrin.h>

#define MR 12
#define NR 32
#define KC 512 /* even: a panel holds whole k-pairs */
#define MC 120
#define NC 2048

/* Why the kernel is not always taken: on some CPUs with AVX512-BF16 (Sapphire Rapids,
 * measured) vdpbf16ps issues at a quarter of vfmadd231ps's rate, so its 32 multiply-adds
 * per instruction are half of what two f32 FMAs do per cycle, and the kernel ran at half
 * the f32 gemm's speed (1024^3: 104 ms against 49 ms for the f32 detour, same process).
 * So the first call times 24 independent chains of each instruction (about 0.1 ms) and
 * keeps the kernel only where vdpbf16ps does at least 1.5x the FMA's multiply-adds per
 * second (packing pairs costs more than the f32 gemm's packing). */
#define CHAINS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11)
#define CH_DECL(i) __m512 x##i = _mm512_setzero_ps(), y##i = _mm512_setzero_ps();
#define CH_SUM(i) s = _mm512_add_ps(s, _mm512_add_ps(x##i, y##i));

static double seconds(void)
{
    struct timespec t;
    timespec_get(&t, TIME_UTC); /* C11; a relative time is all we need */
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

__attribute__((target("avx512f,avx512bf16"), noinline)) static float time_dot(int64_t n, double *sec)
{
    CHAINS(CH_DECL)
    __m512bh a = (__m512bh)_mm512_set1_epi32(0x3f803f80);
    double t = seconds();
#define CH_DOT(i) x##i = _mm512_dpbf16_ps(x##i, a, a), y##i = _mm512_dpbf16_ps(y##i, a, a);
    for (int64_t k = 0; k < n; k++) {
        CHAINS(CH_DOT)
        __asm__ volatile("" : "+v"(a));
    }
    *sec = seconds() - t;
    __m512 s = _mm512_setzero_ps();
    CHAINS(CH_SUM)
    return _mm512_reduce_add_ps(s);
}

__attribute__((target("avx512f"), noinline)) static float time_fma(int64_t n, double *sec)
{
    CHAINS(CH_DECL)
    __m512 a = _mm512_set1_ps(1e-3f);
    double t = seconds();
#define CH_FMA(i) x##i = _mm512_fmadd_ps(a, a, x##i), y##i = _mm512_fmadd_ps(a, a, y##i);
    for (int64_t k = 0; k < n; k++) {
        CHAINS(CH_FMA)
        __asm__ volatile("" : "+v"(a));
    }
    *sec = seconds() - t;
    __m512 s = _mm512_setzero_ps();
    CHAINS(CH_SUM)
    return _mm512_reduce_add_ps(s);
}

/* 1 if vdpbf16ps beats the f32 FMA by the margin above: best of 3 rounds each. */
static int dot_pays(void)
{
    double best_dot = 1e9, best_fma = 1e9, t;
    volatile float sink = 0;
    for (int r = 0; r < 3; r++) {
        sink += time_dot(512, &t);
        best_dot = t < best_dot ? t : best_dot;
        sink += time_fma(512, &t);
        best_fma = t < best_fma ? t : best_fma;
    }
    (void)sink;
    /* same instruction count: the dot does twice the multiply-adds per instruction */
    return 2.0 * best_fma >= 1.5 * best_dot;
}

int blas_bf16_dot_available(void)
{
    static atomic_int cached = -1;
    int a = atomic_load_explicit(&cached, memory_order_relaxed);
    if (a < 0) {
        unsigned eax = 0, ebx, ecx, edx;
        /* CPUID leaf 7 subleaf 1, EAX bit 5: AVX512_BF16; zmm state: the avx512f answer */
        a = (blas_cpu_flags() & BLAS_CPU_AVX512F) && __get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx) && (eax & (1u << 5));
        const char *e = getenv("FF_BF16_DOT"); /* 0: off, 1: on wherever the CPU has it */
        if (e && !strcmp(e, "0")) a = 0;
        else if (a && !(e && !strcmp(e, "1"))) a = dot_pays();
        atomic_store_explicit(&cached, a, memory_order_relaxed);
    }
    return a;
}

/* A bf16 subnormal: exponent bits 0, fraction not. */
static inline uint32_t subnormal(uint32_t h) { return (h & 0x7F80u) == 0 && (h & 0x7Fu) != 0; }

/* B[k][j] of a strided bf16 matrix, 0 outside kc x nc. */
static inline uint16_t at(const uint16_t *B, int64_t rs, int64_t cs, int64_t k, int64_t j, int64_t kc, int64_t nc)
{
    return k < kc && j < nc ? B[k * rs + j * cs] : 0;
}

/* B (kc x nc) into strips of NR columns, each kp-major: word (p, q) = (B[2p][q], B[2p+1][q]).
 * Returns non-zero if B holds a subnormal. */
static uint32_t pack_b(uint32_t *dst, const uint16_t *B, int64_t brs, int64_t bcs, int64_t kc, int64_t nc)
{
    int64_t kp = (kc + 1) / 2;
    uint32_t sub = 0;
    for (int64_t j = 0; j < nc; j += NR, dst += NR * kp)
        for (int64_t p = 0; p < kp; p++) {
            uint32_t *d = dst + p * NR;
            if (bcs == 1 && j + NR <= nc && 2 * p + 1 < kc) { /* two rows of a row-major B, interleaved */
                const uint16_t *r0 = B + 2 * p * brs + j, *r1 = r0 + brs;
                for (int64_t q = 0; q < NR; q++) d[q] = (uint32_t)r0[q] | (uint32_t)r1[q] << 16;
            } else {
                for (int64_t q = 0; q < NR; q++)
                    d[q] = (uint32_t)at(B, brs, bcs, 2 * p, j + q, kc, nc) | (uint32_t)at(B, brs, bcs, 2 * p + 1, j + q, kc, nc) << 16;
            }
            for (int64_t q = 0; q < NR; q++) sub |= subnormal(d[q]) | subnormal(d[q] >> 16);
        }
    return sub;
}

/* A (mc x kc) into strips of MR rows: word (p, r) = (A[r][2p], A[r][2p+1]). Returns
 * non-zero if A holds a subnormal. */
static uint32_t pack_a(uint32_t *dst, const uint16_t *A, int64_t ars, int64_t acs, int64_t mc, int64_t kc)
{
    int64_t kp = (kc + 1) / 2;
    uint32_t sub = 0;
    for (int64_t i = 0; i < mc; i += MR, dst += MR * kp)
        for (int64_t r = 0; r < MR; r++) {
            const uint16_t *row = A + (i + r) * ars;
            int64_t p = 0;
            if (acs == 1 && i + r < mc) /* a row-major row: the pairs are adjacent */
                for (; 2 * p + 1 < kc; p++) dst[p * MR + r] = (uint32_t)row[2 * p] | (uint32_t)row[2 * p + 1] << 16;
            for (; p < kp; p++)
                dst[p * MR + r] = (uint32_t)at(A, ars, acs, i + r, 2 * p, mc, kc) |
                                  (uint32_t)at(A, ars, acs, i + r, 2 * p + 1, mc, kc) << 16;
            for (p = 0; p < kp; p++) sub |= subnormal(dst[p * MR + r]) | subnormal(dst[p * MR + r] >> 16);
        }
    return sub;
}

#define ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11)
#define DECL(r) __m512 c##r##a = _mm512_setzero_ps(), c##r##b = _mm512_setzero_ps();
#define STEP(r)                                                                            \
    {                                                                                      \
        __m512bh a_ = (__m512bh)_mm512_set1_epi32((int)ap[r]);                             \
        c##r##a = _mm512_dpbf16_ps(c##r##a, a_, b0);                                       \
        c##r##b = _mm512_dpbf16_ps(c##r##b, a_, b1);                                       \
    }
#define SAVE(r) _mm512_storeu_ps(tile + (r) * NR, c##r##a), _mm512_storeu_ps(tile + (r) * NR + 16, c##r##b);

__attribute__((target("avx512f,avx512bf16"))) static void micro(int64_t kp, const uint32_t *ap, const uint32_t *bp,
                                                                float *tile)
{
    ROWS(DECL)
    for (int64_t p = 0; p < kp; p++, ap += MR, bp += NR) {
        __m512bh b0 = (__m512bh)_mm512_loadu_si512(bp), b1 = (__m512bh)_mm512_loadu_si512(bp + 16);
        ROWS(STEP)
    }
    ROWS(SAVE)
}

typedef struct dot_job {
    blas_ctx *c;
    int64_t M, N, K;
    const uint16_t *A, *B;
    int64_t ars, acs, brs, bcs;
    float *C; /* dense M x N */
    atomic_int failed;    /* out of memory */
    atomic_int subnormal; /* an operand holds a subnormal: the result is not used */
} dot_job;

/* Rows [r0, r1) of C. */
static void dot_rows(void *varg, int64_t r0, int64_t r1)
{
    dot_job *j = varg;
    int64_t M = r1 - r0, N = j->N, K = j->K;
    int64_t kmax = K < KC ? K : KC, nmax = ((N < NC ? N : NC) + NR - 1) / NR * NR;
    int64_t mmax = ((M < MC ? M : MC) + MR - 1) / MR * MR, kpmax = (kmax + 1) / 2;
    uint32_t *bp = blas_scratch(j->c, (size_t)(kpmax * nmax) * 4);
    uint32_t *ap = bp ? blas_scratch(j->c, (size_t)(mmax * kpmax) * 4) : NULL;
    if (!bp || !ap) {
        blas_free(j->c, bp);
        atomic_store(&j->failed, 1);
        return;
    }
    float tile[MR * NR] __attribute__((aligned(64)));
    const uint16_t *A = j->A + r0 * j->ars;
    float *C = j->C + r0 * N;
    for (int64_t jc = 0; jc < N; jc += NC) {
        int64_t nc = N - jc < NC ? N - jc : NC;
        for (int64_t pc = 0; pc < K; pc += KC) {
            int64_t kc = K - pc < KC ? K - pc : KC, kp = (kc + 1) / 2;
            if (atomic_load_explicit(&j->subnormal, memory_order_relaxed)) goto out;
            if (pack_b(bp, j->B + pc * j->brs + jc * j->bcs, j->brs, j->bcs, kc, nc)) atomic_store(&j->subnormal, 1);
            for (int64_t ic = 0; ic < M; ic += MC) {
                int64_t mc = M - ic < MC ? M - ic : MC;
                if (pack_a(ap, A + ic * j->ars + pc * j->acs, j->ars, j->acs, mc, kc)) atomic_store(&j->subnormal, 1);
                for (int64_t jr = 0; jr < nc; jr += NR)
                    for (int64_t ir = 0; ir < mc; ir += MR) {
                        micro(kp, ap + ir * kp, bp + jr * kp, tile);
                        int64_t m = mc - ir < MR ? mc - ir : MR, n = nc - jr < NR ? nc - jr : NR;
                        for (int64_t r = 0; r < m; r++) {
                            float *crow = C + (ic + ir + r) * N + jc + jr;
                            const float *t = tile + r * NR;
                            if (pc) for (int64_t q = 0; q < n; q++) crow[q] += t[q];
                            else for (int64_t q = 0; q < n; q++) crow[q] = t[q];
                        }
                    }
            }
        }
    }
out:
    blas_free(j->c, bp);
    blas_free(j->c, ap);
}

int blas_bf16_dot_gemm(blas_ctx *c, int64_t M, int64_t N, int64_t K, const uint16_t *A, int64_t ars, int64_t acs,
                       const uint16_t *B, int64_t brs, int64_t bcs, float *C)
{
    dot_job j = {.c = c, .M = M, .N = N, .K = K, .A = A, .B = B, .ars = ars, .acs = acs, .brs = brs, .bcs = bcs, .C = C};
    atomic_init(&j.failed, 0);
    atomic_init(&j.subnormal, 0);
    int64_t min_par = M * N * K >= (1 << 20) ? 2 * MR : INT64_MAX;
    blas_parallel_for(c, M, min_par, MR, dot_rows, &j);
    return atomic_load(&j.failed) ? -1 : atomic_load(&j.subnormal) ? 1 : 0;
}

#else
int blas_bf16_dot_available(void) { return 0; }

int blas_bf16_dot_gemm(blas_ctx *c, int64_t M, int64_t N, int64_t K, const uint16_t *A, int64_t ars, int64_t acs,
                       const uint16_t *B, int64_t brs, int64_t bcs, float *C)
{
    (void)c, (void)M, (void)N, (void)K, (void)A, (void)ars, (void)acs, (void)B, (void)brs, (void)bcs, (void)C;
    return -1;
}
#endif
