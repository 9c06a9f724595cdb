/* cuBLAS for the host tests of the cuda backend (test_cuda_matmul, the emulated plugin
 * of tests/cuda_emu): the calls backends/cuda/cuda_matmul.c makes, as a column-major GEMM
 * over host memory with BLAS's meaning of every argument, which also rejects what cuBLAS
 * rejects (a leading dimension below the rows, a batch stride of 0 on C). Sums in double,
 * in order: exact for the small integers the tests use. GemmEx takes F16/BF16 (CUDA_R_16F,
 * CUDA_R_16BF) with CUBLAS_COMPUTE_32F only, as cuda_matmul.c calls it: the products and
 * sums in f32, in order, one rounding to the half type at the store (cuBLAS's tensor
 * cores sum in f32 in their own order). Under a stream capture (cuda_emu_graph.c) a call is
 * checked at once and its product recorded for the graph's launches, as cuBLAS's kernels
 * are captured. */
#include <cublas_v2.h>
#include <stdint.h>

#include "cuda_emu_graph.h"
#include "ff_backend_scalar.h"

int cuda_emu_gemm_calls, cuda_emu_gemm_batched;

/* The element type of a call's matrices: the dtype itself (F64, F32, F16 or BF16). */
static double at(const void *p, ff_dtype t, int64_t i)
{
    switch (t) {
    case FF_F64: return ((const double *)p)[i];
    case FF_F32: return ((const float *)p)[i];
    default: return ffb_ld_f64((const char *)p + 2 * i, t);
    }
}

typedef struct gemm_call {
    ff_dtype t;
    cublasOperation_t ta, tb;
    int m, n, k, lda, ldb, ldc, batch;
    long long sa, sb, sc;
    const void *A, *B;
    void *C;
} gemm_call;

static void gemm_run(void *arg)
{
    const gemm_call *g = arg;
    ff_dtype t = g->t;
    for (int b = 0; b < g->batch; b++)
        for (int i = 0; i < g->m; i++)
            for (int j = 0; j < g->n; j++) {
                double s = 0;
                float s32 = 0.0f; /* the halves' f32 accumulator */
                for (int p = 0; p < g->k; p++) {
                    int64_t ai = g->ta == CUBLAS_OP_N ? i + (int64_t)p * g->lda : p + (int64_t)i * g->lda;
                    int64_t bi = g->tb == CUBLAS_OP_N ? p + (int64_t)j * g->ldb : j + (int64_t)p * g->ldb;
                    if (ffb_is_half(t)) s32 += (float)at(g->A, t, b * g->sa + ai) * (float)at(g->B, t, b * g->sb + bi);
                    else s += at(g->A, t, b * g->sa + ai) * at(g->B, t, b * g->sb + bi);
                }
                int64_t ci = b * g->sc + i + (int64_t)j * g->ldc;
                if (ffb_is_half(t)) ffb_st_f64((char *)g->C + 2 * ci, t, (double)s32);
                else if (t == FF_F32) ((float *)g->C)[ci] = (float)s;
                else ((double *)g->C)[ci] = s;
            }
}

/* Checked now; run now, or (while the stream captures) at each launch of its graph. */
static cublasStatus_t gemm(ff_dtype t, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, const void *A,
                           int lda, long long sa, const void *B, int ldb, long long sb, void *C, int ldc, long long sc,
                           int batch)
{
    int ra = ta == CUBLAS_OP_N ? m : k, rb = tb == CUBLAS_OP_N ? k : n; /* rows of A and B as stored */
    if (m < 0 || n < 0 || k < 0 || lda < (ra > 1 ? ra : 1) || ldb < (rb > 1 ? rb : 1) || ldc < (m > 1 ? m : 1) ||
        (batch > 1 && sc == 0))
        return CUBLAS_STATUS_INVALID_VALUE;
    cuda_emu_gemm_calls++;
    gemm_call g = {t, ta, tb, m, n, k, lda, ldb, ldc, batch, sa, sb, sc, A, B, C};
    return cuda_emu_run_or_record(gemm_run, &g, sizeof g) ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_ALLOC_FAILED;
}

cublasStatus_t cublasSgemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                           const float *alpha, const float *A, int lda, const float *B, int ldb, const float *beta,
                           float *C, int ldc)
{
    (void)h, (void)alpha, (void)beta;
    return gemm(FF_F32, ta, tb, m, n, k, A, lda, 0, B, ldb, 0, C, ldc, 0, 1);
}

cublasStatus_t cublasDgemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                           const double *alpha, const double *A, int lda, const double *B, int ldb, const double *beta,
                           double *C, int ldc)
{
    (void)h, (void)alpha, (void)beta;
    return gemm(FF_F64, ta, tb, m, n, k, A, lda, 0, B, ldb, 0, C, ldc, 0, 1);
}

cublasStatus_t cublasSgemmStridedBatched(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n,
                                         int k, const float *alpha, const float *A, int lda, long long sa,
                                         const float *B, int ldb, long long sb, const float *beta, float *C, int ldc,
                                         long long sc, int batch)
{
    (void)h, (void)alpha, (void)beta;
    cuda_emu_gemm_batched++;
    return gemm(FF_F32, ta, tb, m, n, k, A, lda, sa, B, ldb, sb, C, ldc, sc, batch);
}

cublasStatus_t cublasDgemmStridedBatched(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n,
                                         int k, const double *alpha, const double *A, int lda, long long sa,
                                         const double *B, int ldb, long long sb, const double *beta, double *C,
                                         int ldc, long long sc, int batch)
{
    (void)h, (void)alpha, (void)beta;
    cuda_emu_gemm_batched++;
    return gemm(FF_F64, ta, tb, m, n, k, A, lda, sa, B, ldb, sb, C, ldc, sc, batch);
}

/* The dtype of a GemmEx call: F16 or BF16 when A, B and C are all that type and the
 * compute type is CUBLAS_COMPUTE_32F, else FF_BOOL (refused, as cuBLAS refuses
 * combinations it has no kernel for). */
static ff_dtype half_dtype(cudaDataType at_, cudaDataType bt, cudaDataType ct, cublasComputeType_t comp)
{
    if (at_ != bt || at_ != ct || comp != CUBLAS_COMPUTE_32F) return FF_BOOL;
    return at_ == CUDA_R_16F ? FF_F16 : at_ == CUDA_R_16BF ? FF_BF16 : FF_BOOL;
}

cublasStatus_t cublasGemmEx(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                            const void *alpha, const void *A, cudaDataType Atype, int lda, const void *B,
                            cudaDataType Btype, int ldb, const void *beta, void *C, cudaDataType Ctype, int ldc,
                            cublasComputeType_t comp, cublasGemmAlgo_t algo)
{
    (void)h, (void)alpha, (void)beta, (void)algo;
    ff_dtype t = half_dtype(Atype, Btype, Ctype, comp);
    if (t == FF_BOOL) return CUBLAS_STATUS_NOT_SUPPORTED;
    return gemm(t, ta, tb, m, n, k, A, lda, 0, B, ldb, 0, C, ldc, 0, 1);
}

cublasStatus_t cublasGemmStridedBatchedEx(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n,
                                          int k, const void *alpha, const void *A, cudaDataType Atype, int lda,
                                          long long sa, const void *B, cudaDataType Btype, int ldb, long long sb,
                                          const void *beta, void *C, cudaDataType Ctype, int ldc, long long sc,
                                          int batch, cublasComputeType_t comp, cublasGemmAlgo_t algo)
{
    (void)h, (void)alpha, (void)beta, (void)algo;
    ff_dtype t = half_dtype(Atype, Btype, Ctype, comp);
    if (t == FF_BOOL) return CUBLAS_STATUS_NOT_SUPPORTED;
    cuda_emu_gemm_batched++;
    return gemm(t, ta, tb, m, n, k, A, lda, sa, B, ldb, sb, C, ldc, sc, batch);
}

cublasStatus_t cublasCreate(cublasHandle_t *h) { *h = (cublasHandle_t)&cuda_emu_gemm_calls; return CUBLAS_STATUS_SUCCESS; }
cublasStatus_t cublasDestroy(cublasHandle_t h) { (void)h; return CUBLAS_STATUS_SUCCESS; }
cublasStatus_t cublasSetStream(cublasHandle_t h, cudaStream_t s) { (void)h, (void)s; return CUBLAS_STATUS_SUCCESS; }
cublasStatus_t cublasSetMathMode(cublasHandle_t h, cublasMath_t m) { (void)h, (void)m; return CUBLAS_STATUS_SUCCESS; }
const char *cublasGetStatusString(cublasStatus_t s)
{
    return s == CUBLAS_STATUS_SUCCESS ? "success" : s == CUBLAS_STATUS_NOT_SUPPORTED ? "not supported" : "invalid value";
}
