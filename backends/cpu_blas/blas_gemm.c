/*
 * An AVX-512 sgemm for the case OpenBLAS cannot serve well: on a CPU that OpenBLAS 0.3.21
 * does not recognize (and with OPENBLAS_CORETYPE unset) it falls back to its SSE3
 * "Prescott" kernel, about a tenth of this machine's FMA peak. When the CPU has AVX-512F
 * and OpenBLAS reports such a generic kernel, f32 matmul uses this instead
 * (FF_GEMM=openblas or FF_GEMM=own forces the choice; see blas_gemm_pick).
 *
 * Classic Goto/BLIS blocking: B is packed in KC x NR strips (NR = 32, two zmm; a
 * row-major B is read in place instead, which matters for small M), A in
 * MR x KC strips (MR = 12), and a 12 x 32 micro-kernel keeps 24 accumulators in
 * registers, one broadcast and two loads per k step. Packing reads any strides, so
 * transposed and broadcast operands need no copy beforehand. Accumulates in float, like
 * BLAS. Single-threaded: blas_matmul splits C across the pool and calls this per slice.
 */
#include <cblas.h>
#include <stdlib.h>

#include "blas_impl.h"

typedef float v16f __attribute__((vector_size(64)));

#define MR 12
#define NR 32
#define KC 256
#define MC 120 /* multiple of MR: A block ~120 KB, stays in L2 */
#define NC 2048

/* OpenBLAS's name for its kernel (openblas_get_corename, declared in cblas.h). */
char *openblas_get_corename(void);

#ifdef FF_BLAS_HAVE_DNNL
#include <dlfcn.h>
#include <dnnl.h>

/* oneDNN parallelizes with OpenMP from the calling thread; our pool already splits the
 * product, so each call runs on one OpenMP thread. The setting is per thread, hence
 * set on every call (a thread-local store); libgomp comes with libdnnl. */
static void (*omp_set_threads)(int);

void blas_sgemm_dnnl(int ta, int tb, int64_t M, int64_t N, int64_t K, const float *A, int64_t lda, const float *B,
                     int64_t ldb, float *C, int64_t ldc)
{
    if (omp_set_threads) omp_set_threads(1);
    dnnl_sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', M, N, K, 1.0f, A, lda, B, ldb, 0.0f, C, ldc);
}

void blas_dnnl_threads(int n)
{
    if (omp_set_threads) omp_set_threads(n > 0 ? n : 1);
}

static void sgemm_ab_dnnl(int ta, int tb, int64_t M, int64_t N, int64_t K, float alpha, const float *A, int64_t lda,
                          const float *B, int64_t ldb, float beta, float *C, int64_t ldc)
{
    if (omp_set_threads) omp_set_threads(1);
    dnnl_sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}
#else
void blas_dnnl_threads(int n) { (void)n; }

void blas_sgemm_dnnl(int ta, int tb, int64_t M, int64_t N, int64_t K, const float *A, int64_t lda, const float *B,
                     int64_t ldb, float *C, int64_t ldc)
{
    (void)ta, (void)tb, (void)M, (void)N, (void)K, (void)A, (void)lda, (void)B, (void)ldb, (void)C, (void)ldc;
}
#endif

void blas_sgemm_ab(const blas_ctx *c, int ta, int tb, int64_t M, int64_t N, int64_t K, float alpha, const float *A,
                   int64_t lda, const float *B, int64_t ldb, float beta, float *C, int64_t ldc)
{
#ifdef FF_BLAS_HAVE_DNNL
    if (c->dnnl_gemm) {
        sgemm_ab_dnnl(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
        return;
    }
#else
    (void)c;
#endif
    cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, (blasint)M, (blasint)N,
                (blasint)K, alpha, A, (blasint)lda, B, (blasint)ldb, beta, C, (blasint)ldc);
}

const char *blas_gemm_name(blas_gemm_kind k)
{
    return k == BLAS_GEMM_DNNL ? "oneDNN" : k == BLAS_GEMM_OWN ? "own AVX-512" : "OpenBLAS";
}

blas_gemm_kind blas_gemm_pick(void)
{
    const char *env = getenv("FF_GEMM");
    __builtin_cpu_init();
    int avx512 = __builtin_cpu_supports("avx512f");
    int dnnl = 0;
#ifdef FF_BLAS_HAVE_DNNL
    void *gomp = dlopen("libgomp.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (gomp) *(void **)&omp_set_threads = dlsym(gomp, "omp_set_num_threads"); /* the handle stays: libdnnl holds it */
    dnnl = 1;
#endif
    if (env && !strcmp(env, "openblas")) return BLAS_GEMM_OPENBLAS;
    if (env && !strcmp(env, "own")) return avx512 ? BLAS_GEMM_OWN : BLAS_GEMM_OPENBLAS;
    if (env && !strcmp(env, "dnnl")) return dnnl ? BLAS_GEMM_DNNL : BLAS_GEMM_OPENBLAS;
    if (dnnl) return BLAS_GEMM_DNNL;
    if (!avx512) return BLAS_GEMM_OPENBLAS;
    static const char *const avx512_cores[] = {"SkylakeX", "Cooperlake", "SapphireRapids"};
    const char *core = openblas_get_corename();
    for (size_t i = 0; core && i < sizeof avx512_cores / sizeof avx512_cores[0]; i++)
        if (!strcmp(core, avx512_cores[i])) return BLAS_GEMM_OPENBLAS;
    return BLAS_GEMM_OWN; /* generic, Haswell or Zen kernels: half this CPU's FMA width */
}

/* B[k0.., j0..] (kc x nc) into strips of NR columns, k-major, zero-padded. Reads run
 * along B's unit-stride direction: rows of a row-major B, columns of a transposed one. */
static void pack_b(float *dst, const float *B, int64_t brs, int64_t bcs, int64_t kc, int64_t nc)
{
    for (int64_t j = 0; j < nc; j += NR, dst += NR * kc) {
        int64_t w = nc - j < NR ? nc - j : NR;
        if (bcs == 1 && w == NR) {
            for (int64_t k = 0; k < kc; k++) memcpy(dst + k * NR, B + k * brs + j, NR * sizeof(float));
        } else if (brs == 1) {
            for (int64_t q = 0; q < NR; q++) {
                const float *src = B + (j + q) * bcs;
                if (q < w)
                    for (int64_t k = 0; k < kc; k++) dst[k * NR + q] = src[k];
                else
                    for (int64_t k = 0; k < kc; k++) dst[k * NR + q] = 0.0f;
            }
        } else {
            for (int64_t k = 0; k < kc; k++) {
                const float *src = B + k * brs + j * bcs;
                for (int64_t q = 0; q < NR; q++) dst[k * NR + q] = q < w ? src[q * bcs] : 0.0f;
            }
        }
    }
}

/* A[i0.., k0..] (mc x kc) into strips of MR rows, k-major, zero-padded; reads along
 * A's unit-stride direction as pack_b does. */
static void pack_a(float *dst, const float *A, int64_t ars, int64_t acs, int64_t mc, int64_t kc)
{
    for (int64_t i = 0; i < mc; i += MR, dst += MR * kc) {
        int64_t h = mc - i < MR ? mc - i : MR;
        if (acs == 1) {
            for (int64_t r = 0; r < MR; r++) {
                const float *src = A + (i + r) * ars;
                if (r < h)
                    for (int64_t k = 0; k < kc; k++) dst[k * MR + r] = src[k];
                else
                    for (int64_t k = 0; k < kc; k++) dst[k * MR + r] = 0.0f;
            }
        } else {
            for (int64_t k = 0; k < kc; k++) {
                const float *src = A + i * ars + k * acs;
                for (int64_t r = 0; r < MR; r++) dst[k * MR + r] = r < h ? src[r * ars] : 0.0f;
            }
        }
    }
}

#define SPLAT(x) ((v16f){x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x})
#define ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11)
#define DECL(r) v16f c##r##a = {0}, c##r##b = {0};
#define STEP(r)                      \
    {                                \
        v16f a_ = SPLAT(ap[r]);      \
        c##r##a += a_ * b0;          \
        c##r##b += a_ * b1;          \
    }
#define SAVE(r)                                     \
    memcpy(tile + (r) * NR, &c##r##a, sizeof(v16f)); \
    memcpy(tile + (r) * NR + 16, &c##r##b, sizeof(v16f));

/* tile (MR x NR, row-major) = Ap strip . B strip over kc; consecutive k rows of the B
 * strip are bs floats apart (NR when packed, B's row stride when read in place). */
__attribute__((target("avx512f"))) static void micro(int64_t kc, const float *ap, const float *bp, int64_t bs,
                                                     float *tile)
{
    ROWS(DECL)
    for (int64_t k = 0; k < kc; k++, ap += MR, bp += bs) {
        v16f b0, b1;
        memcpy(&b0, bp, sizeof b0);
        memcpy(&b1, bp + 16, sizeof b1);
        ROWS(STEP)
    }
    ROWS(SAVE)
}

/* C[m x n] (+)= tile's top-left corner. */
__attribute__((target("avx512f"))) static void put_tile(const float *tile, float *C, int64_t crs, int64_t ccs, int64_t m,
                                                        int64_t n, int accumulate)
{
    for (int64_t r = 0; r < m; r++) {
        float *c = C + r * crs;
        const float *t = tile + r * NR;
        if (ccs == 1) {
            if (accumulate)
                for (int64_t q = 0; q < n; q++) c[q] += t[q];
            else
                for (int64_t q = 0; q < n; q++) c[q] = t[q];
        } else {
            for (int64_t q = 0; q < n; q++) c[q * ccs] = accumulate ? c[q * ccs] + t[q] : t[q];
        }
    }
}

int blas_sgemm_own(blas_ctx *ctx, int64_t M, int64_t N, int64_t K, const float *A, int64_t ars, int64_t acs,
                   const float *B, int64_t brs, int64_t bcs, float *C, int64_t crs, int64_t ccs)
{
    /* packing buffers sized for this product, from the caching allocator (no page
     * faults after the first call) */
    int64_t kmax = K < KC ? K : KC, nmax = ((N < NC ? N : NC) + NR - 1) / NR * NR;
    int64_t mmax = ((M < MC ? M : MC) + MR - 1) / MR * MR;
    float *bp = blas_scratch(ctx, (size_t)(kmax * nmax) * sizeof(float));
    float *ap = bp ? blas_scratch(ctx, (size_t)(mmax * kmax) * sizeof(float)) : NULL;
    if (!bp || !ap) {
        blas_free(ctx, bp);
        return -1;
    }
    float tile[MR * NR] __attribute__((aligned(64)));
    for (int64_t jc = 0; jc < N; jc += NC) {
        int64_t nc = N - jc < NC ? N - jc : NC;
        for (int64_t pc = 0; pc < K; pc += KC) {
            int64_t kc = K - pc < KC ? K - pc : KC;
            /* a row-major B is read in place (full strips); only a packed copy otherwise */
            int direct = bcs == 1;
            int64_t full = direct ? nc / NR * NR : 0;
            if (full < nc) pack_b(bp + full * kc, B + pc * brs + (jc + full) * bcs, brs, bcs, kc, nc - full);
            for (int64_t ic = 0; ic < M; ic += MC) {
                int64_t mc = M - ic < MC ? M - ic : MC;
                pack_a(ap, A + ic * ars + pc * acs, ars, acs, mc, kc);
                for (int64_t jr = 0; jr < nc; jr += NR)
                    for (int64_t ir = 0; ir < mc; ir += MR) {
                        if (jr < full) micro(kc, ap + ir * kc, B + pc * brs + jc + jr, brs, tile);
                        else micro(kc, ap + ir * kc, bp + jr * kc, NR, tile);
                        int64_t m = mc - ir < MR ? mc - ir : MR, n = nc - jr < NR ? nc - jr : NR;
                        put_tile(tile, C + (ic + ir) * crs + (jc + jr) * ccs, crs, ccs, m, n, pc > 0);
                    }
            }
        }
    }
    blas_free(ctx, bp);
    blas_free(ctx, ap);
    return 0;
}
