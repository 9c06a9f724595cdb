/* The optional linalg entry through LAPACK (OpenBLAS ships it): gesv, getrf, potrf,
 * geqrf + orgqr, gesdd and gelsd, in double (ff_backend_linalg.h's driver does the
 * checks, the batch and the strided copies; f32 is rounded once at the store, so f32
 * results are at least as accurate as PyTorch's single-precision LAPACK calls).
 * The Fortran symbols are declared here, hidden string lengths included (gfortran's
 * ABI), so no LAPACKE package is needed. */
#include <limits.h>

#include "blas_impl.h"
#include "ff_backend_linalg.h"

void dgesv_(const int *n, const int *nrhs, double *a, const int *lda, int *ipiv, double *b, const int *ldb, int *info);
void dgetrf_(const int *m, const int *n, double *a, const int *lda, int *ipiv, int *info);
void dpotrf_(const char *uplo, const int *n, double *a, const int *lda, int *info, size_t uplo_len);
void dgeqrf_(const int *m, const int *n, double *a, const int *lda, double *tau, double *work, const int *lwork,
             int *info);
void dorgqr_(const int *m, const int *n, const int *k, double *a, const int *lda, const double *tau, double *work,
             const int *lwork, int *info);
void dgesdd_(const char *jobz, const int *m, const int *n, double *a, const int *lda, double *s, double *u,
             const int *ldu, double *vt, const int *ldvt, double *work, const int *lwork, int *iwork, int *info,
             size_t jobz_len);
void dgelsd_(const int *m, const int *n, const int *nrhs, double *a, const int *lda, double *b, const int *ldb,
             double *s, const double *rcond, int *rank, double *work, const int *lwork, int *iwork, int *info);

/* LAPACK's INTEGER is 32 bits here (Debian's LP64 OpenBLAS). */
static int fits(int64_t a, int64_t b, int64_t c) { return a <= INT_MAX && b <= INT_MAX && c <= INT_MAX; }

/* A LAPACK info as a kernel's code (ff_backend_linalg.h): > 0 as it is, < 0 an illegal
 * argument, which the driver reports as a bug rather than as anything the user did. */
static int lapack_rc(int info) { return info < 0 ? FFB_LINALG_BAD_ARG(-info) : info; }

/* The workspace size a query (lwork = -1) reported, as an int. */
static int lwork_of(double w) { return w > (double)INT_MAX ? INT_MAX : w < 1 ? 1 : (int)w; }

static void identity_cols(int64_t rows, int64_t cols, double *p)
{
    for (int64_t j = 0; j < cols; j++)
        for (int64_t i = 0; i < rows; i++) p[i + j * rows] = i == j;
}

static int lp_solve(int64_t n, int64_t k, double *a, double *b)
{
    if (n == 0 || k == 0) return 0;
    if (!fits(n, k, n * k)) return FFB_LINALG_TOO_BIG;
    int N = (int)n, K = (int)k, info = 0, *piv = malloc((size_t)n * sizeof *piv);
    if (!piv) return FFB_LINALG_OOM;
    dgesv_(&N, &K, a, &N, piv, b, &N, &info);
    free(piv);
    return lapack_rc(info);
}

static int lp_det(int64_t n, double *a, double *det)
{
    *det = 1;
    if (n == 0) return 0;
    if (!fits(n, n, n * n)) return FFB_LINALG_TOO_BIG;
    int N = (int)n, info = 0, *piv = malloc((size_t)n * sizeof *piv);
    if (!piv) return FFB_LINALG_OOM;
    dgetrf_(&N, &N, a, &N, piv, &info);
    double d = 1;
    for (int i = 0; i < N; i++) d *= piv[i] != i + 1 ? -a[i + (int64_t)i * n] : a[i + (int64_t)i * n];
    free(piv);
    *det = d; /* info > 0: an exactly zero pivot, and then d is 0 */
    return info < 0 ? lapack_rc(info) : 0;
}

static int lp_cholesky(int64_t n, double *a)
{
    if (n == 0) return 0;
    if (!fits(n, n, n * n)) return FFB_LINALG_TOO_BIG;
    int N = (int)n, info = 0;
    dpotrf_("L", &N, a, &N, &info, 1);
    return lapack_rc(info);
}

static int lp_qr(int64_t m, int64_t n, int64_t qc, double *a, double *q, double *r)
{
    int64_t k = m < n ? m : n;
    for (int64_t c = 0; c < n; c++)
        for (int64_t i = 0; i < qc; i++) r[i + c * qc] = 0;
    if (k == 0) {
        identity_cols(m, qc, q);
        return 0;
    }
    if (!fits(m, n, m * (n > qc ? n : qc))) return FFB_LINALG_TOO_BIG;
    int M = (int)m, Nn = (int)n, K = (int)k, QC = (int)qc, info = 0, lw = -1;
    double wq = 0, wq2 = 0, *tau = malloc((size_t)k * sizeof *tau);
    if (!tau) return FFB_LINALG_OOM;
    dgeqrf_(&M, &Nn, a, &M, tau, &wq, &lw, &info);
    memcpy(q, a, (size_t)(m * k) * sizeof *q); /* the reflectors; orgqr needs qc >= k columns */
    dorgqr_(&M, &QC, &K, q, &M, tau, &wq2, &lw, &info);
    lw = lwork_of(wq > wq2 ? wq : wq2);
    double *work = malloc((size_t)lw * sizeof *work);
    if (!work) {
        free(tau);
        return FFB_LINALG_OOM;
    }
    dgeqrf_(&M, &Nn, a, &M, tau, work, &lw, &info);
    if (info == 0) {
        memcpy(q, a, (size_t)(m * k) * sizeof *q);
        dorgqr_(&M, &QC, &K, q, &M, tau, work, &lw, &info);
    }
    for (int64_t c = 0; c < n; c++)
        for (int64_t i = 0; i <= c && i < k; i++) r[i + c * qc] = a[i + c * m];
    free(work);
    free(tau);
    return lapack_rc(info);
}

static int lp_svd(int64_t m, int64_t n, int full, double *a, double *u, double *s, double *vt)
{
    int64_t k = m < n ? m : n, uc = full ? m : k, vr = full ? n : k;
    if (k == 0) {
        identity_cols(m, uc, u);
        identity_cols(vr, n, vt);
        return 0;
    }
    if (!fits(m, n, m * (n > m ? n : m))) return FFB_LINALG_TOO_BIG;
    int M = (int)m, Nn = (int)n, VR = (int)vr, info = 0, lw = -1;
    int *iwork = malloc((size_t)(8 * k) * sizeof *iwork);
    if (!iwork) return FFB_LINALG_OOM;
    double wq = 0;
    const char *job = full ? "A" : "S";
    dgesdd_(job, &M, &Nn, a, &M, s, u, &M, vt, &VR, &wq, &lw, iwork, &info, 1);
    lw = lwork_of(wq);
    double *work = malloc((size_t)lw * sizeof *work);
    if (work) dgesdd_(job, &M, &Nn, a, &M, s, u, &M, vt, &VR, work, &lw, iwork, &info, 1);
    free(work);
    free(iwork);
    return !work ? FFB_LINALG_OOM : lapack_rc(info);
}

static int lp_lstsq(int64_t m, int64_t n, int64_t k, double *a, double *b, double rcond)
{
    int64_t mn = m < n ? m : n, mx = m > n ? m : n;
    if (mn == 0 || k == 0) {
        for (int64_t j = 0; j < k; j++)
            for (int64_t i = 0; i < n; i++) b[i + j * mx] = 0;
        return 0;
    }
    if (!fits(mx, k, mx * (k > n ? k : n))) return FFB_LINALG_TOO_BIG;
    int M = (int)m, Nn = (int)n, K = (int)k, MX = (int)mx, rank = 0, info = 0, lw = -1, iw = 0;
    double wq = 0, *s = malloc((size_t)mn * sizeof *s);
    if (!s) return FFB_LINALG_OOM;
    dgelsd_(&M, &Nn, &K, a, &M, b, &MX, s, &rcond, &rank, &wq, &lw, &iw, &info);
    lw = lwork_of(wq);
    int liw = iw > 1 ? iw : 1;
    double *work = malloc((size_t)lw * sizeof *work);
    int *iwork = malloc((size_t)liw * sizeof *iwork);
    if (work && iwork) dgelsd_(&M, &Nn, &K, a, &M, b, &MX, s, &rcond, &rank, work, &lw, iwork, &info);
    int oom = !work || !iwork;
    free(work), free(iwork), free(s);
    return oom ? FFB_LINALG_OOM : lapack_rc(info);
}

static const ffb_linalg_kernels lapack_kernels = {lp_solve, lp_det, lp_cholesky, lp_qr, lp_svd, lp_lstsq};

ff_status blas_linalg(void *ctx, int op, const ff_view *dst, int n_dst, const ff_view *src, int n_src)
{
    return ffb_linalg_host(ctx ? ((blas_ctx *)ctx)->host : NULL, "cpu_blas", &lapack_kernels, op, dst, n_dst, src,
                           n_src);
}
