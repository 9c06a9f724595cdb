/* The attention tile loops on f64 tiles: dgemm, libm's exp. */
#include <cblas.h>

#include "blas_attention.h"

static void dgemm_ab(const blas_ctx *c, int ta, int tb, int64_t M, int64_t N, int64_t K, double alpha, const double *A,
                     int64_t lda, const double *B, int64_t ldb, double beta, double *C, int64_t ldc)
{
    (void)c;
    cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, (blasint)M, (blasint)N,
                (blasint)K, alpha, A, (blasint)lda, B, (blasint)ldb, beta, C, (blasint)ldc);
}

/* NaN-propagating, like blas_vmax_f32 */
static double rowmax(int64_t n, const double *x)
{
    double m = -INFINITY;
    for (int64_t i = 0; i < n; i++)
        if (x[i] > m || x[i] != x[i]) m = x[i];
    return m;
}

static double expsum(int64_t n, double *d, const double *s, double shift)
{
    double sum = 0;
    for (int64_t i = 0; i < n; i++) sum += d[i] = exp(s[i] - shift);
    return sum;
}

#define AT double
#define AT_SFX f64
#define AT_GEMM dgemm_ab
#define AT_ROWMAX rowmax
#define AT_EXPSUM expsum
#include "blas_attention_tiles.h"
