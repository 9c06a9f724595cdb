/* cuBLAS for the host tests of the cuda backend (test_cuda_matmul, the emulated plugin
 * of tests/cuda_emu): the calls backends/cuda/cuda_matmul.c makes, as a column-major GEMM
 * over host memory with BLAS's meaning of every argument, which also rejects what cuBLAS
 * rejects (a leading dimension below the rows, a batch stride of 0 on C). Sums in double,
 * in order: exact for the small integers the tests use. */
#include <cublas_v2.h>
#include <stdint.h>

int cuda_emu_gemm_calls, cuda_emu_gemm_batched;

static double at(const void *p, int f32, int64_t i) { return f32 ? ((const float *)p)[i] : ((const double *)p)[i]; }

static cublasStatus_t gemm(int f32, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, const void *A,
                           int lda, long long sa, const void *B, int ldb, long long sb, void *C, int ldc, long long sc,
                           int batch)
{
    int ra = ta == CUBLAS_OP_N ? m : k, rb = tb == CUBLAS_OP_N ? k : n; /* rows of A and B as stored */
    if (m < 0 || n < 0 || k < 0 || lda < (ra > 1 ? ra : 1) || ldb < (rb > 1 ? rb : 1) || ldc < (m > 1 ? m : 1) ||
        (batch > 1 && sc == 0))
        return CUBLAS_STATUS_INVALID_VALUE;
    cuda_emu_gemm_calls++;
    for (int b = 0; b < batch; b++)
        for (int i = 0; i < m; i++)
            for (int j = 0; j < n; j++) {
                double s = 0;
                for (int p = 0; p < k; p++) {
                    int64_t ai = ta == CUBLAS_OP_N ? i + (int64_t)p * lda : p + (int64_t)i * lda;
                    int64_t bi = tb == CUBLAS_OP_N ? p + (int64_t)j * ldb : j + (int64_t)p * ldb;
                    s += at(A, f32, b * sa + ai) * at(B, f32, b * sb + bi);
                }
                int64_t ci = b * sc + i + (int64_t)j * ldc;
                if (f32) ((float *)C)[ci] = (float)s;
                else ((double *)C)[ci] = s;
            }
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSgemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                           const float *alpha, const float *A, int lda, const float *B, int ldb, const float *beta,
                           float *C, int ldc)
{
    (void)h, (void)alpha, (void)beta;
    return gemm(1, ta, tb, m, n, k, A, lda, 0, B, ldb, 0, C, ldc, 0, 1);
}

cublasStatus_t cublasDgemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                           const double *alpha, const double *A, int lda, const double *B, int ldb, const double *beta,
                           double *C, int ldc)
{
    (void)h, (void)alpha, (void)beta;
    return gemm(0, ta, tb, m, n, k, A, lda, 0, B, ldb, 0, C, ldc, 0, 1);
}

cublasStatus_t cublasSgemmStridedBatched(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n,
                                         int k, const float *alpha, const float *A, int lda, long long sa,
                                         const float *B, int ldb, long long sb, const float *beta, float *C, int ldc,
                                         long long sc, int batch)
{
    (void)h, (void)alpha, (void)beta;
    cuda_emu_gemm_batched++;
    return gemm(1, ta, tb, m, n, k, A, lda, sa, B, ldb, sb, C, ldc, sc, batch);
}

cublasStatus_t cublasDgemmStridedBatched(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n,
                                         int k, const double *alpha, const double *A, int lda, long long sa,
                                         const double *B, int ldb, long long sb, const double *beta, double *C,
                                         int ldc, long long sc, int batch)
{
    (void)h, (void)alpha, (void)beta;
    cuda_emu_gemm_batched++;
    return gemm(0, ta, tb, m, n, k, A, lda, sa, B, ldb, sb, C, ldc, sc, batch);
}

cublasStatus_t cublasCreate(cublasHandle_t *h) { *h = (cublasHandle_t)&cuda_emu_gemm_calls; return CUBLAS_STATUS_SUCCESS; }
cublasStatus_t cublasDestroy(cublasHandle_t h) { (void)h; return CUBLAS_STATUS_SUCCESS; }
cublasStatus_t cublasSetStream(cublasHandle_t h, cudaStream_t s) { (void)h, (void)s; return CUBLAS_STATUS_SUCCESS; }
cublasStatus_t cublasSetMathMode(cublasHandle_t h, cublasMath_t m) { (void)h, (void)m; return CUBLAS_STATUS_SUCCESS; }
const char *cublasGetStatusString(cublasStatus_t s) { return s == CUBLAS_STATUS_SUCCESS ? "success" : "invalid value"; }
