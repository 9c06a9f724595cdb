/*
 * The slice of cuSOLVER's dense API that backends/cuda/cuda_linalg.c calls (the double
 * routines), over host memory, for the emulated backend (tests/cuda_emu): each routine is
 * LAPACK's namesake (OpenBLAS's), so the values are LAPACK's, and cuSOLVER's own rules are
 * checked on the arguments: gesvd only for m >= n (cuSOLVER's restriction: the plugin must
 * transpose a wide matrix), leading dims at least the rows, a workspace and lwork at
 * least what the *_bufferSize call reported, info written through its device pointer.
 * The workspace is overwritten, as the device's would be.
 */
#include <stdlib.h>
#include <string.h>

#include <cusolverDn.h>

#include "cuda_emu_graph.h"

void dgetrf_(const int *m, const int *n, double *a, const int *lda, int *ipiv, int *info);
void dgetrs_(const char *t, const int *n, const int *nrhs, const double *a, const int *lda, const int *ipiv, double *b,
             const int *ldb, int *info, size_t t_len);
void dpotrf_(const char *uplo, const int *n, double *a, const int *lda, int *info, size_t uplo_len);
void dgeqrf_(const int *m, const int *n, double *a, const int *lda, double *tau, double *work, const int *lwork,
             int *info);
void dorgqr_(const int *m, const int *n, const int *k, double *a, const int *lda, const double *tau, double *work,
             const int *lwork, int *info);
void dgesvd_(const char *ju, const char *jv, const int *m, const int *n, double *a, const int *lda, double *s,
             double *u, const int *ldu, double *vt, const int *ldvt, double *work, const int *lwork, int *info,
             size_t ju_len, size_t jv_len);

struct cusolverDnContext {
    cudaStream_t stream;
};

cusolverStatus_t cusolverDnCreate(cusolverDnHandle_t *h)
{
    *h = calloc(1, sizeof **h);
    return *h ? CUSOLVER_STATUS_SUCCESS : CUSOLVER_STATUS_ALLOC_FAILED;
}
cusolverStatus_t cusolverDnDestroy(cusolverDnHandle_t h)
{
    free(h);
    return CUSOLVER_STATUS_SUCCESS;
}
cusolverStatus_t cusolverDnSetStream(cusolverDnHandle_t h, cudaStream_t s)
{
    h->stream = s;
    return CUSOLVER_STATUS_SUCCESS;
}

/* The workspace LAPACK asks for, or 1 (in doubles). */
static int emu_lwork(double q) { return q < 1 ? 1 : (int)q; }
static void emu_scribble(double *w, int lwork) { memset(w, 0xC3, (size_t)lwork * sizeof *w); }
#define EMU_CHECK(cond)                                                                                              \
    do {                                                                                                             \
        if (!(cond)) return CUSOLVER_STATUS_INVALID_VALUE;                                                           \
    } while (0)

cusolverStatus_t cusolverDnDgetrf_bufferSize(cusolverDnHandle_t h, int m, int n, double *a, int lda, int *lwork)
{
    (void)h, (void)a;
    EMU_CHECK(m >= 0 && n >= 0 && lda >= (m > 1 ? m : 1));
    *lwork = m * 2 + 8;
    return CUSOLVER_STATUS_SUCCESS;
}
cusolverStatus_t cusolverDnDgetrf(cusolverDnHandle_t h, int m, int n, double *a, int lda, double *work, int *ipiv,
                                  int *info)
{
    CUDA_EMU_NOT_IN_CAPTURE(CUSOLVER_STATUS_NOT_SUPPORTED);
    (void)h;
    EMU_CHECK(m >= 0 && n >= 0 && lda >= (m > 1 ? m : 1) && work && ipiv && info);
    emu_scribble(work, m * 2 + 8);
    dgetrf_(&m, &n, a, &lda, ipiv, info);
    return CUSOLVER_STATUS_SUCCESS;
}
cusolverStatus_t cusolverDnDgetrs(cusolverDnHandle_t h, cublasOperation_t t, int n, int nrhs, const double *a, int lda,
                                  const int *ipiv, double *b, int ldb, int *info)
{
    CUDA_EMU_NOT_IN_CAPTURE(CUSOLVER_STATUS_NOT_SUPPORTED);
    (void)h;
    EMU_CHECK(n >= 0 && nrhs >= 0 && lda >= (n > 1 ? n : 1) && ldb >= (n > 1 ? n : 1) && info);
    const char *tr = t == CUBLAS_OP_N ? "N" : "T";
    dgetrs_(tr, &n, &nrhs, a, &lda, ipiv, b, &ldb, info, 1);
    return CUSOLVER_STATUS_SUCCESS;
}

cusolverStatus_t cusolverDnDpotrf_bufferSize(cusolverDnHandle_t h, cublasFillMode_t uplo, int n, double *a, int lda,
                                             int *lwork)
{
    (void)h, (void)a, (void)uplo;
    EMU_CHECK(n >= 0 && lda >= (n > 1 ? n : 1));
    *lwork = n + 16;
    return CUSOLVER_STATUS_SUCCESS;
}
cusolverStatus_t cusolverDnDpotrf(cusolverDnHandle_t h, cublasFillMode_t uplo, int n, double *a, int lda, double *work,
                                  int lwork, int *info)
{
    CUDA_EMU_NOT_IN_CAPTURE(CUSOLVER_STATUS_NOT_SUPPORTED);
    (void)h;
    EMU_CHECK(n >= 0 && lda >= (n > 1 ? n : 1) && work && lwork >= n + 16 && info);
    emu_scribble(work, lwork);
    dpotrf_(uplo == CUBLAS_FILL_MODE_LOWER ? "L" : "U", &n, a, &lda, info, 1);
    return CUSOLVER_STATUS_SUCCESS;
}

static int emu_geqrf_lwork(int m, int n, double *a, int lda)
{
    double q = 0;
    int lw = -1, info = 0;
    dgeqrf_(&m, &n, a, &lda, NULL, &q, &lw, &info);
    return emu_lwork(q);
}
cusolverStatus_t cusolverDnDgeqrf_bufferSize(cusolverDnHandle_t h, int m, int n, double *a, int lda, int *lwork)
{
    (void)h;
    EMU_CHECK(m >= 0 && n >= 0 && lda >= (m > 1 ? m : 1));
    *lwork = emu_geqrf_lwork(m, n, a, lda);
    return CUSOLVER_STATUS_SUCCESS;
}
cusolverStatus_t cusolverDnDgeqrf(cusolverDnHandle_t h, int m, int n, double *a, int lda, double *tau, double *work,
                                  int lwork, int *info)
{
    CUDA_EMU_NOT_IN_CAPTURE(CUSOLVER_STATUS_NOT_SUPPORTED);
    (void)h;
    EMU_CHECK(m >= 0 && n >= 0 && lda >= (m > 1 ? m : 1) && tau && work && info);
    EMU_CHECK(lwork >= emu_geqrf_lwork(m, n, a, lda));
    emu_scribble(work, lwork);
    dgeqrf_(&m, &n, a, &lda, tau, work, &lwork, info);
    return CUSOLVER_STATUS_SUCCESS;
}

static int emu_orgqr_lwork(int m, int n, int k, const double *a, int lda, const double *tau)
{
    double q = 0;
    int lw = -1, info = 0;
    dorgqr_(&m, &n, &k, (double *)a, &lda, tau, &q, &lw, &info);
    return emu_lwork(q);
}
cusolverStatus_t cusolverDnDorgqr_bufferSize(cusolverDnHandle_t h, int m, int n, int k, const double *a, int lda,
                                             const double *tau, int *lwork)
{
    (void)h;
    EMU_CHECK(m >= n && n >= k && k >= 0 && lda >= (m > 1 ? m : 1));
    *lwork = emu_orgqr_lwork(m, n, k, a, lda, tau);
    return CUSOLVER_STATUS_SUCCESS;
}
cusolverStatus_t cusolverDnDorgqr(cusolverDnHandle_t h, int m, int n, int k, double *a, int lda, const double *tau,
                                  double *work, int lwork, int *info)
{
    CUDA_EMU_NOT_IN_CAPTURE(CUSOLVER_STATUS_NOT_SUPPORTED);
    (void)h;
    EMU_CHECK(m >= n && n >= k && k >= 0 && lda >= (m > 1 ? m : 1) && work && info);
    EMU_CHECK(lwork >= emu_orgqr_lwork(m, n, k, a, lda, tau));
    emu_scribble(work, lwork);
    dorgqr_(&m, &n, &k, a, &lda, tau, work, &lwork, info);
    return CUSOLVER_STATUS_SUCCESS;
}

/* The larger of LAPACK's workspace queries for the jobs the plugin may ask. */
static int emu_gesvd_lwork(int m, int n)
{
    int best = 1;
    const char *jobs = "AS";
    for (int j = 0; j < 2; j++) {
        double q = 0, a = 0, s = 0, u = 0, v = 0;
        int lw = -1, info = 0, ld = m > 1 ? m : 1, ldv = n > 1 ? n : 1;
        dgesvd_(&jobs[j], &jobs[j], &m, &n, &a, &ld, &s, &u, &ld, &v, &ldv, &q, &lw, &info, 1, 1);
        if (emu_lwork(q) > best) best = emu_lwork(q);
    }
    return best;
}
cusolverStatus_t cusolverDnDgesvd_bufferSize(cusolverDnHandle_t h, int m, int n, int *lwork)
{
    (void)h;
    EMU_CHECK(m >= n && n >= 0); /* cuSOLVER's gesvd: m >= n only */
    *lwork = emu_gesvd_lwork(m, n);
    return CUSOLVER_STATUS_SUCCESS;
}
cusolverStatus_t cusolverDnDgesvd(cusolverDnHandle_t h, signed char jobu, signed char jobvt, int m, int n, double *a,
                                  int lda, double *s, double *u, int ldu, double *vt, int ldvt, double *work,
                                  int lwork, double *rwork, int *info)
{
    CUDA_EMU_NOT_IN_CAPTURE(CUSOLVER_STATUS_NOT_SUPPORTED);
    (void)h, (void)rwork;
    EMU_CHECK(m >= n && n >= 0 && lda >= (m > 1 ? m : 1) && work && info && s);
    EMU_CHECK((jobu == 'A' || jobu == 'S') && (jobvt == 'A' || jobvt == 'S'));
    EMU_CHECK(ldu >= (m > 1 ? m : 1) && ldvt >= (n > 1 ? n : 1) && u && vt);
    EMU_CHECK(lwork >= emu_gesvd_lwork(m, n));
    emu_scribble(work, lwork);
    char ju = (char)jobu, jv = (char)jobvt;
    double q = 0;
    int lw = -1;
    dgesvd_(&ju, &jv, &m, &n, a, &lda, s, u, &ldu, vt, &ldvt, &q, &lw, info, 1, 1);
    lw = emu_lwork(q);
    double *w = malloc((size_t)lw * sizeof *w);
    if (!w) return CUSOLVER_STATUS_ALLOC_FAILED;
    dgesvd_(&ju, &jv, &m, &n, a, &lda, s, u, &ldu, vt, &ldvt, w, &lw, info, 1, 1);
    free(w);
    return CUSOLVER_STATUS_SUCCESS;
}
