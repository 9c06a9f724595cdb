/*
 * The linalg entry through cuSOLVER (backend_abi.h's ff_linalg_op: solve, det, cholesky,
 * qr, svd, lstsq), F32 and F64. Built where cusolverDn.h and libcusolver are found
 * (FF_CUDA_CUSOLVER); without them supports() declines and the core reports that the
 * backend does not support det, inverse, solve, ..., as before.
 *
 * As the host backends (ff_backend_linalg.h), every op computes in double whatever the
 * dtype, f32 rounded once at the store: each input is copied by the strided copy kernel
 * (converting to f64) into a dense column-major batch, cuSOLVER works there, and the
 * results are copied out through views of it (the copy converts back). Per op:
 *   solve     getrf + getrs (LU with partial pivoting); an exactly zero pivot is an error
 *   det       getrf, then the product of U's diagonal with the pivots' signs, on the host
 *             (the diagonal and pivots come back; the determinants go up)
 *   cholesky  potrf (lower), the upper triangle zeroed; a non-positive minor is an error
 *   qr        geqrf + orgqr (Householder, LAPACK's signs), R the upper triangle
 *   svd       gesvd (cuSOLVER's takes m >= n only: a wide A is done as A^T = U S V^T,
 *             A = V S U^T, through transposed views); non-finite inputs are refused
 *             first, as the host driver does (the input comes back to be scanned)
 *   lstsq     the minimum-norm solution through that SVD: X = V diag(s+) U^T B with
 *             singular values at most eps(dtype) max(m, n) s0 counted as zero (gelsd's
 *             rule), the products by cuBLAS (strided batched), the scaling by the
 *             backend's multiply kernel
 * cuSOLVER's calls go one matrix at a time (the batch loops on the host, all queued on
 * the backend's stream); their info codes land in a device array read back once.
 * cuSOLVER's handle is created at the first call, under c->solver_lock.
 */
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_impl.h"
#include "ff_backend_linalg.h"

#ifdef FF_CUDA_CUSOLVER
#include <cublas_v2.h>
#include <cusolverDn.h>
#endif

int cuda_linalg_supported(int op, ff_dtype t)
{
#ifdef FF_CUDA_CUSOLVER
    return ffb_linalg_supported(op, t);
#else
    (void)op, (void)t;
    return 0;
#endif
}

#ifndef FF_CUDA_CUSOLVER

ff_status cuda_linalg(void *ctx, int op, const ff_view *dst, int n_dst, const ff_view *src, int n_src)
{
    (void)dst, (void)n_dst, (void)src, (void)n_src;
    return cuda_error((cuda_ctx *)ctx, FF_ERR_UNSUPPORTED, "cuda linalg: op %d: built without cuSOLVER", op);
}
void cuda_solver_destroy(cuda_ctx *c) { (void)c; }

#else

void cuda_solver_destroy(cuda_ctx *c)
{
    if (c->solver) cusolverDnDestroy((cusolverDnHandle_t)c->solver);
    c->solver = NULL;
}

/* One call of the entry: the problem's sizes and the temporaries to free at the end. */
#define LA_TEMPS 16
typedef struct la_call {
    cuda_ctx *c;
    cusolverDnHandle_t h;
    const char *name;
    int op, nb;
    int64_t batch, m, n, k;
    void *temp[LA_TEMPS];
    int ntemp;
} la_call;

static void *la_temp(la_call *L, size_t bytes)
{
    if (L->ntemp == LA_TEMPS) { /* a bug: more temporaries than any op takes */
        cuda_error(L->c, FF_ERR_BACKEND, "cuda linalg: %s: more than %d temporaries", L->name, LA_TEMPS);
        return NULL;
    }
    void *p = cuda_temp(L->c, "linalg", bytes ? bytes : 1);
    if (p) L->temp[L->ntemp++] = p;
    return p;
}

static ff_status la_fail(la_call *L, const char *call, cusolverStatus_t s)
{
    return cuda_error(L->c, s == CUSOLVER_STATUS_ALLOC_FAILED ? FF_ERR_OOM : FF_ERR_BACKEND,
                      "cuda linalg: %s: %s failed: cusolverStatus %d", L->name, call, (int)s);
}

/* A view with v's shape over a dense column-major f64 batch at p: matrix b at p + b
 * bstride, element (i, j) at i + j ld, or with trans at j + i ld (the stored matrix
 * is v's transpose). A rank nb + 1 view is a vector per batch element. */
static ff_view dmat(const ff_view *v, int nb, double *p, int64_t ld, int64_t bstride, int trans)
{
    ff_view t = *v;
    t.buf = p, t.offset = 0, t.dtype = FF_F64;
    int64_t s = bstride;
    for (int d = nb - 1; d >= 0; d--) t.strides[d] = s, s *= v->shape[d];
    if (v->ndim > nb) t.strides[nb] = trans ? ld : 1;
    if (v->ndim > nb + 1) t.strides[nb + 1] = trans ? 1 : ld;
    return t;
}

/* A dense column-major f64 copy of v (rows x cols matrices, ld = rows), or of v^T. */
static double *la_load(la_call *L, const ff_view *v, int trans, int64_t *ld_out)
{
    int64_t r = v->shape[L->nb], cl = v->ndim > L->nb + 1 ? v->shape[L->nb + 1] : 1;
    int64_t ld = trans ? cl : r;
    double *p = la_temp(L, (size_t)(L->batch * r * cl) * sizeof(double));
    if (!p) return NULL;
    ff_view t = dmat(v, L->nb, p, ld, r * cl, trans);
    if (cuda_copy(L->c, &t, v)) return NULL;
    if (ld_out) *ld_out = ld;
    return p;
}

/* Zeros of the strictly lower (lower = 1) or strictly upper triangle of every rows x cols
 * matrix of the batch at p (ld rows): a fill per column. */
static ff_status la_zero_triangle(la_call *L, double *p, int64_t rows, int64_t cols, int64_t ld, int lower)
{
    for (int64_t j = 0; j < cols; j++) {
        int64_t lo = lower ? j + 1 : 0, hi = lower ? rows : (j < rows ? j : rows);
        if (hi <= lo) continue;
        ff_view v = {.buf = p, .offset = j * ld + lo, .dtype = FF_F64, .ndim = 2};
        v.shape[0] = L->batch, v.shape[1] = hi - lo, v.strides[0] = ld * cols, v.strides[1] = 1;
        ff_status st = cuda_fill(L->c, &v, (ff_scalar){0});
        if (st) return st;
    }
    return FF_OK;
}

/* v := the identity's first columns/rows (QR's and SVD's answer for an empty A). */
static ff_status la_identity(la_call *L, const ff_view *v)
{
    ff_status st = cuda_fill(L->c, v, (ff_scalar){0});
    int64_t r = v->shape[L->nb], cl = v->shape[L->nb + 1];
    if (st || r == 0 || cl == 0) return st;
    ff_view d = *v;
    d.ndim = L->nb + 1, d.shape[L->nb] = r < cl ? r : cl, d.strides[L->nb] = v->strides[L->nb] + v->strides[L->nb + 1];
    return cuda_fill(L->c, &d, (ff_scalar){1.0, 1});
}

/* The info codes of the batch (device ints) back on the host: the first non-zero, its
 * matrix in *at. Waits for the stream. */
static ff_status la_info(la_call *L, const int *dev, int *first, int64_t *at)
{
    *first = 0, *at = -1;
    int *h = malloc((size_t)L->batch * sizeof *h);
    if (!h) return cuda_error(L->c, FF_ERR_OOM, "cuda linalg: out of memory");
    ff_status st = cuda_download(L->c, dev, 0, h, (size_t)L->batch * sizeof *h);
    for (int64_t b = 0; !st && b < L->batch && *at < 0; b++)
        if (h[b]) *first = h[b], *at = b;
    free(h);
    return st;
}

/* A kernel's code as the host driver's message (positive: the math; negative: a bug). */
static ff_status la_code(la_call *L, int info, int64_t b)
{
    return ffb_linalg_fail(L->c->host, "cuda", L->op, info > 0 ? info : FFB_LINALG_BAD_ARG(-info), b, L->m, L->n);
}

/* SVD and LSTSQ refuse a non-finite A (as the host driver): the f64 copy comes back to
 * be scanned (trans: it holds A^T, as for a wide A). */
static ff_status la_finite(la_call *L, const double *p, int trans)
{
    size_t count = (size_t)(L->batch * L->m * L->n);
    double *h = malloc(count * sizeof *h);
    if (!h) return cuda_error(L->c, FF_ERR_OOM, "cuda linalg: out of memory");
    ff_status st = cuda_download(L->c, p, 0, h, count * sizeof *h);
    for (size_t i = 0; !st && i < count; i++)
        if (!isfinite(h[i])) {
            int64_t b = (int64_t)i / (L->m * L->n), e = (int64_t)i % (L->m * L->n);
            int64_t row = trans ? e / L->n : e % L->m, col = trans ? e % L->n : e / L->m;
            st = cuda_error(L->c, FF_ERR_INVALID,
                            "cuda linalg: %s: the input matrix contained non-finite values (element [%lld, %lld] of "
                            "matrix %lld of the batch is %s)",
                            L->name, (long long)row, (long long)col, (long long)b,
                            isnan(h[i]) ? "nan" : h[i] > 0 ? "inf" : "-inf");
        }
    free(h);
    return st;
}

static ff_status la_solve(la_call *L, const ff_view *dst, const ff_view *src)
{
    int64_t n = L->n, rhs = src[1].shape[L->nb + 1];
    if (n == 0 || rhs == 0) return FF_OK;
    double *A = la_load(L, &src[0], 0, NULL), *B = A ? la_load(L, &src[1], 0, NULL) : NULL;
    int lwork = 0, N = (int)n, K = (int)rhs;
    cusolverStatus_t s;
    if (!B) return FF_ERR_OOM;
    if ((s = cusolverDnDgetrf_bufferSize(L->h, N, N, A, N, &lwork))) return la_fail(L, "getrf_bufferSize", s);
    double *work = la_temp(L, (size_t)lwork * sizeof(double));
    int *piv = la_temp(L, (size_t)(L->batch * n) * sizeof(int)), *info = la_temp(L, (size_t)L->batch * sizeof(int));
    int *info2 = la_temp(L, (size_t)L->batch * sizeof(int));
    if (!work || !piv || !info || !info2) return FF_ERR_OOM;
    for (int64_t b = 0; b < L->batch; b++) {
        double *Ab = A + b * n * n, *Bb = B + b * n * rhs;
        if ((s = cusolverDnDgetrf(L->h, N, N, Ab, N, work, piv + b * n, info + b))) return la_fail(L, "getrf", s);
        if ((s = cusolverDnDgetrs(L->h, CUBLAS_OP_N, N, K, Ab, N, piv + b * n, Bb, N, info2 + b)))
            return la_fail(L, "getrs", s);
    }
    int first;
    int64_t at;
    ff_status st = la_info(L, info, &first, &at);
    if (!st && first) return la_code(L, first, at); /* dst untouched */
    if (!st) st = la_info(L, info2, &first, &at);
    if (!st && first) return la_code(L, first, at);
    ff_view x = dmat(&dst[0], L->nb, B, n, n * rhs, 0);
    return st ? st : cuda_copy(L->c, &dst[0], &x);
}

static ff_status la_det(la_call *L, const ff_view *dst, const ff_view *src)
{
    int64_t n = L->n;
    if (n == 0) return cuda_fill(L->c, &dst[0], (ff_scalar){1.0, 1});
    double *A = la_load(L, &src[0], 0, NULL);
    int lwork = 0, N = (int)n;
    cusolverStatus_t s;
    if (!A) return FF_ERR_OOM;
    if ((s = cusolverDnDgetrf_bufferSize(L->h, N, N, A, N, &lwork))) return la_fail(L, "getrf_bufferSize", s);
    double *work = la_temp(L, (size_t)lwork * sizeof(double)), *diag = la_temp(L, (size_t)(L->batch * n) * sizeof(double));
    int *piv = la_temp(L, (size_t)(L->batch * n) * sizeof(int)), *info = la_temp(L, (size_t)L->batch * sizeof(int));
    double *dets = la_temp(L, (size_t)L->batch * sizeof(double));
    if (!work || !piv || !info || !diag || !dets) return FF_ERR_OOM;
    for (int64_t b = 0; b < L->batch; b++)
        if ((s = cusolverDnDgetrf(L->h, N, N, A + b * n * n, N, work, piv + b * n, info + b)))
            return la_fail(L, "getrf", s);
    /* U's diagonals, dense [batch, n] (info > 0 is a zero pivot: the product is 0) */
    ff_view dv = {.buf = diag, .dtype = FF_F64, .ndim = 2}, av = {.buf = A, .dtype = FF_F64, .ndim = 2};
    dv.shape[0] = av.shape[0] = L->batch, dv.shape[1] = av.shape[1] = n;
    dv.strides[0] = n, dv.strides[1] = 1, av.strides[0] = n * n, av.strides[1] = n + 1;
    ff_status st = cuda_copy(L->c, &dv, &av);
    size_t cnt = (size_t)(L->batch * n);
    double *hd = malloc(cnt * sizeof *hd), *hdet = malloc((size_t)L->batch * sizeof *hdet);
    int *hp = malloc(cnt * sizeof *hp);
    if (!hd || !hp || !hdet) st = cuda_error(L->c, FF_ERR_OOM, "cuda linalg: out of memory");
    if (!st) st = cuda_download(L->c, diag, 0, hd, cnt * sizeof *hd);
    if (!st) st = cuda_download(L->c, piv, 0, hp, cnt * sizeof *hp);
    for (int64_t b = 0; !st && b < L->batch; b++) { /* the host backends' order */
        double d = 1;
        for (int64_t i = 0; i < n; i++) d *= hp[b * n + i] != i + 1 ? -hd[b * n + i] : hd[b * n + i];
        hdet[b] = d;
    }
    if (!st) st = cuda_upload(L->c, dets, 0, hdet, (size_t)L->batch * sizeof *hdet);
    free(hd), free(hp), free(hdet);
    ff_view out = dmat(&dst[0], L->nb, dets, 1, 1, 0);
    return st ? st : cuda_copy(L->c, &dst[0], &out);
}

static ff_status la_cholesky(la_call *L, const ff_view *dst, const ff_view *src)
{
    int64_t n = L->n;
    if (n == 0) return FF_OK;
    double *A = la_load(L, &src[0], 0, NULL);
    int lwork = 0, N = (int)n;
    cusolverStatus_t s;
    if (!A) return FF_ERR_OOM;
    if ((s = cusolverDnDpotrf_bufferSize(L->h, CUBLAS_FILL_MODE_LOWER, N, A, N, &lwork)))
        return la_fail(L, "potrf_bufferSize", s);
    double *work = la_temp(L, (size_t)lwork * sizeof(double));
    int *info = la_temp(L, (size_t)L->batch * sizeof(int));
    if (!work || !info) return FF_ERR_OOM;
    for (int64_t b = 0; b < L->batch; b++)
        if ((s = cusolverDnDpotrf(L->h, CUBLAS_FILL_MODE_LOWER, N, A + b * n * n, N, work, lwork, info + b)))
            return la_fail(L, "potrf", s);
    int first;
    int64_t at;
    ff_status st = la_info(L, info, &first, &at);
    if (!st && first) return la_code(L, first, at);
    if (!st) st = la_zero_triangle(L, A, n, n, n, 0);
    ff_view l = dmat(&dst[0], L->nb, A, n, n * n, 0);
    return st ? st : cuda_copy(L->c, &dst[0], &l);
}

static ff_status la_qr(la_call *L, const ff_view *dst, const ff_view *src)
{
    int64_t m = L->m, n = L->n, k = L->k, qc = dst[0].shape[L->nb + 1];
    if (k == 0) {
        ff_status st = la_identity(L, &dst[0]);
        return st ? st : cuda_fill(L->c, &dst[1], (ff_scalar){0});
    }
    double *A = la_load(L, &src[0], 0, NULL);
    double *Q = la_temp(L, (size_t)(L->batch * m * qc) * sizeof(double));
    double *tau = la_temp(L, (size_t)(L->batch * k) * sizeof(double));
    int *info = la_temp(L, (size_t)L->batch * sizeof(int));
    int M = (int)m, Nn = (int)n, K = (int)k, QC = (int)qc, lw1 = 0, lw2 = 0;
    cusolverStatus_t s;
    if (!A || !Q || !tau || !info) return FF_ERR_OOM;
    if ((s = cusolverDnDgeqrf_bufferSize(L->h, M, Nn, A, M, &lw1)) ||
        (s = cusolverDnDorgqr_bufferSize(L->h, M, QC, K, Q, M, tau, &lw2)))
        return la_fail(L, "geqrf/orgqr_bufferSize", s);
    int lwork = lw1 > lw2 ? lw1 : lw2;
    double *work = la_temp(L, (size_t)lwork * sizeof(double));
    if (!work) return FF_ERR_OOM;
    for (int64_t b = 0; b < L->batch; b++)
        if ((s = cusolverDnDgeqrf(L->h, M, Nn, A + b * m * n, M, tau + b * k, work, lwork, info + b)))
            return la_fail(L, "geqrf", s);
    /* orgqr builds Q in place from the k reflectors in its first k columns */
    ff_view qv = {.buf = Q, .dtype = FF_F64, .ndim = 3}, av = {.buf = A, .dtype = FF_F64, .ndim = 3};
    qv.shape[0] = av.shape[0] = L->batch, qv.shape[1] = av.shape[1] = k, qv.shape[2] = av.shape[2] = m;
    qv.strides[0] = m * qc, av.strides[0] = m * n, qv.strides[1] = av.strides[1] = m, qv.strides[2] = av.strides[2] = 1;
    ff_status st = cuda_copy(L->c, &qv, &av);
    for (int64_t b = 0; !st && b < L->batch; b++)
        if ((s = cusolverDnDorgqr(L->h, M, QC, K, Q + b * m * qc, M, tau + b * k, work, lwork, info + b)))
            return la_fail(L, "orgqr", s);
    int first;
    int64_t at;
    if (!st) st = la_info(L, info, &first, &at);
    if (!st && first) return la_code(L, first, at);
    /* R: the upper triangle of A's first qc rows (rows past k are below the diagonal) */
    if (!st) st = la_zero_triangle(L, A, m, n, m, 1);
    ff_view qo = dmat(&dst[0], L->nb, Q, m, m * qc, 0), ro = dmat(&dst[1], L->nb, A, m, m * n, 0);
    if (!st) st = cuda_copy(L->c, &dst[0], &qo);
    return st ? st : cuda_copy(L->c, &dst[1], &ro);
}

/* The SVD of every matrix of A (f64, dense as loaded): gesvd of A (m >= n) or of A^T.
 * *U (ld m, uc columns), *S (k per matrix) and *VT (ld vr, n columns) describe A's own
 * factors through their views: uv/vv get dst-shaped views when du/dvh are given. */
typedef struct la_svd {
    double *p1, *p2, *s;  /* gesvd's U and VT of the matrix it ran on, S */
    int64_t ld1, ld2;     /* their leading dims */
    int wide;             /* it ran on A^T */
} la_svd;

static ff_status la_svd_run(la_call *L, const double *A0, int full, la_svd *r)
{
    int64_t m = L->m, n = L->n, k = L->k, rm = m >= n ? m : n, rn = m >= n ? n : m; /* gesvd's m >= n */
    int64_t uc = full ? rm : k, vr = full ? rn : k;
    r->wide = m < n;
    double *A = (double *)A0;
    r->p1 = la_temp(L, (size_t)(L->batch * rm * uc) * sizeof(double));
    r->p2 = la_temp(L, (size_t)(L->batch * vr * rn) * sizeof(double));
    r->s = la_temp(L, (size_t)(L->batch * k) * sizeof(double));
    double *rwork = la_temp(L, (size_t)(L->batch * k) * sizeof(double));
    int *info = la_temp(L, (size_t)L->batch * sizeof(int));
    r->ld1 = rm, r->ld2 = vr;
    int lwork = 0, M = (int)rm, Nn = (int)rn;
    cusolverStatus_t s;
    if (!r->p1 || !r->p2 || !r->s || !rwork || !info) return FF_ERR_OOM;
    if ((s = cusolverDnDgesvd_bufferSize(L->h, M, Nn, &lwork))) return la_fail(L, "gesvd_bufferSize", s);
    double *work = la_temp(L, (size_t)lwork * sizeof(double));
    if (!work) return FF_ERR_OOM;
    signed char job = full ? 'A' : 'S';
    for (int64_t b = 0; b < L->batch; b++)
        if ((s = cusolverDnDgesvd(L->h, job, job, M, Nn, A + b * m * n, M, r->s + b * k, r->p1 + b * rm * uc, M,
                                  r->p2 + b * vr * rn, (int)vr, work, lwork, rwork + b * k, info + b)))
            return la_fail(L, "gesvd", s);
    int first;
    int64_t at;
    ff_status st = la_info(L, info, &first, &at);
    return !st && first ? la_code(L, first, at) : st;
}

static ff_status la_svd_op(la_call *L, const ff_view *dst, const ff_view *src)
{
    int64_t m = L->m, n = L->n, k = L->k, u = dst[0].shape[L->nb + 1];
    int full = u == m && dst[2].shape[L->nb] == n; /* as ffb_linalg_check decided */
    if (k == 0) {
        ff_status st = la_identity(L, &dst[0]);
        return st ? st : la_identity(L, &dst[2]);
    }
    double *A = la_load(L, &src[0], m < n, NULL);
    if (!A) return FF_ERR_OOM;
    la_svd r;
    ff_status st = la_finite(L, A, m < n);
    if (!st) st = la_svd_run(L, A, full, &r);
    if (st) return st;
    int64_t uc = dst[0].shape[L->nb + 1], vr = dst[2].shape[L->nb];
    /* A = U S VT directly, or (wide) A^T = U' S VT': A's U = VT'^T, A's Vh = U'^T */
    ff_view uo = r.wide ? dmat(&dst[0], L->nb, r.p2, r.ld2, r.ld2 * m, 1) : dmat(&dst[0], L->nb, r.p1, m, m * uc, 0);
    ff_view vo = r.wide ? dmat(&dst[2], L->nb, r.p1, n, n * vr, 1) : dmat(&dst[2], L->nb, r.p2, vr, vr * n, 0);
    ff_view so = dmat(&dst[1], L->nb, r.s, k, k, 0);
    if (!st) st = cuda_copy(L->c, &dst[0], &uo);
    if (!st) st = cuda_copy(L->c, &dst[1], &so);
    return st ? st : cuda_copy(L->c, &dst[2], &vo);
}

static ff_status la_lstsq(la_call *L, const ff_view *dst, const ff_view *src, double rcond)
{
    int64_t m = L->m, n = L->n, k = L->k, rhs = src[1].shape[L->nb + 1];
    if (k == 0 || rhs == 0) return cuda_fill(L->c, &dst[0], (ff_scalar){0});
    double *A = la_load(L, &src[0], m < n, NULL), *B = A ? la_load(L, &src[1], 0, NULL) : NULL;
    double *C = la_temp(L, (size_t)(L->batch * k * rhs) * sizeof(double));
    double *X = la_temp(L, (size_t)(L->batch * n * rhs) * sizeof(double));
    double *sinv = la_temp(L, (size_t)(L->batch * k) * sizeof(double));
    if (!B || !C || !X || !sinv) return FF_ERR_OOM;
    la_svd r;
    ff_status st = la_finite(L, A, m < n);
    if (!st) st = la_svd_run(L, A, 0, &r);
    if (st) return st;
    /* 1 / s where s > rcond s0, else 0 (gelsd's rule), on the host */
    size_t cnt = (size_t)(L->batch * k);
    double *hs = malloc(cnt * sizeof *hs);
    if (!hs) return cuda_error(L->c, FF_ERR_OOM, "cuda linalg: out of memory");
    st = cuda_download(L->c, r.s, 0, hs, cnt * sizeof *hs);
    for (int64_t b = 0; !st && b < L->batch; b++) {
        double cut = rcond * hs[b * k];
        for (int64_t i = 0; i < k; i++) hs[b * k + i] = hs[b * k + i] > cut ? 1.0 / hs[b * k + i] : 0.0;
    }
    if (!st) st = cuda_upload(L->c, sinv, 0, hs, cnt * sizeof *hs);
    free(hs);
    if (st) return st;
    /* tall: U (m x k, ld m) and VT (k x n, ld k); wide: A^T's U' (n x k, ld n) = V and
     * VT' (k x m, ld k) = U^T. C = U^T B, C *= sinv (rows), X = V C. */
    cublasHandle_t h = (cublasHandle_t)L->c->cublas;
    const double one = 1.0, zero = 0.0;
    int K = (int)k, R = (int)rhs, M = (int)m, Nn = (int)n;
    long long sC = k * rhs, sB = m * rhs, sX = n * rhs, s1 = r.ld1 * k, s2 = r.ld2 * (r.wide ? m : n);
    cublasStatus_t bs;
    pthread_mutex_lock(&L->c->blas_lock);
    if (!r.wide)
        bs = cublasDgemmStridedBatched(h, CUBLAS_OP_T, CUBLAS_OP_N, K, R, M, &one, r.p1, M, s1, B, M, sB, &zero, C, K,
                                       sC, (int)L->batch);
    else
        bs = cublasDgemmStridedBatched(h, CUBLAS_OP_N, CUBLAS_OP_N, K, R, M, &one, r.p2, K, s2, B, M, sB, &zero, C, K,
                                       sC, (int)L->batch);
    pthread_mutex_unlock(&L->c->blas_lock);
    if (bs) return cuda_error(L->c, FF_ERR_BACKEND, "cuda linalg: lstsq: cublasDgemmStridedBatched failed: %d", (int)bs);
    ff_view cv = {.buf = C, .dtype = FF_F64, .ndim = 3}, sv = {.buf = sinv, .dtype = FF_F64, .ndim = 3};
    cv.shape[0] = sv.shape[0] = L->batch, cv.shape[1] = sv.shape[1] = rhs, cv.shape[2] = sv.shape[2] = k;
    cv.strides[0] = k * rhs, cv.strides[1] = k, cv.strides[2] = 1, sv.strides[0] = k, sv.strides[1] = 0,
    sv.strides[2] = 1;
    if ((st = cuda_binary(L->c, FF_BINARY_MUL, &cv, &cv, &sv))) return st;
    pthread_mutex_lock(&L->c->blas_lock);
    if (!r.wide)
        bs = cublasDgemmStridedBatched(h, CUBLAS_OP_T, CUBLAS_OP_N, Nn, R, K, &one, r.p2, K, s2, C, K, sC, &zero, X,
                                       Nn, sX, (int)L->batch);
    else
        bs = cublasDgemmStridedBatched(h, CUBLAS_OP_N, CUBLAS_OP_N, Nn, R, K, &one, r.p1, Nn, s1, C, K, sC, &zero, X,
                                       Nn, sX, (int)L->batch);
    pthread_mutex_unlock(&L->c->blas_lock);
    if (bs) return cuda_error(L->c, FF_ERR_BACKEND, "cuda linalg: lstsq: cublasDgemmStridedBatched failed: %d", (int)bs);
    ff_view xo = dmat(&dst[0], L->nb, X, n, n * rhs, 0);
    return cuda_copy(L->c, &dst[0], &xo);
}

ff_status cuda_linalg(void *ctx, int op, const ff_view *dst, int n_dst, const ff_view *src, int n_src)
{
    cuda_ctx *c = (cuda_ctx *)ctx;
    ff_status st = ffb_linalg_check(c->host, "cuda", op, dst, n_dst, src, n_src);
    if (st) return st;
    la_call L = {.c = c, .op = op, .name = ffb_linalg_name(op), .nb = src[0].ndim - 2};
    L.m = ffb_rows(&src[0]), L.n = ffb_cols(&src[0]), L.k = L.m < L.n ? L.m : L.n, L.batch = 1;
    for (int d = 0; d < L.nb; d++) L.batch *= src[0].shape[d];
    if (L.batch == 0) return FF_OK;
    int64_t big = L.m > L.n ? L.m : L.n;
    for (int i = 0; i < n_src; i++)
        for (int d = L.nb; d < src[i].ndim; d++) big = src[i].shape[d] > big ? src[i].shape[d] : big;
    if (big * big > INT_MAX || L.batch > INT_MAX)
        return ffb_linalg_fail(c->host, "cuda", op, FFB_LINALG_TOO_BIG, 0, L.m, L.n);
    if ((st = cuda_use_device(c, "linalg"))) return st;
    pthread_mutex_lock(&c->solver_lock);
    if (!c->solver) {
        cusolverDnHandle_t h = NULL;
        cusolverStatus_t s = cusolverDnCreate(&h);
        if (!s && (s = cusolverDnSetStream(h, c->stream))) cusolverDnDestroy(h);
        if (s) st = la_fail(&L, "cusolverDnCreate", s);
        else c->solver = h;
    }
    L.h = (cusolverDnHandle_t)c->solver;
    double eps = src[0].dtype == FF_F32 ? (double)FLT_EPSILON : DBL_EPSILON;
    if (!st) switch (op) {
        case FF_LINALG_SOLVE: st = la_solve(&L, dst, src); break;
        case FF_LINALG_DET: st = la_det(&L, dst, src); break;
        case FF_LINALG_CHOLESKY: st = la_cholesky(&L, dst, src); break;
        case FF_LINALG_QR: st = la_qr(&L, dst, src); break;
        case FF_LINALG_SVD: st = la_svd_op(&L, dst, src); break;
        default: st = la_lstsq(&L, dst, src, eps * (double)(L.m > L.n ? L.m : L.n)); break;
        }
    pthread_mutex_unlock(&c->solver_lock);
    for (int i = 0; i < L.ntemp; i++) cuda_free(c, L.temp[i]); /* stream order: reused only by later work */
    return st;
}

#endif /* FF_CUDA_CUSOLVER */
