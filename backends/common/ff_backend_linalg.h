/*
 * The linalg entry on host memory, shared by the in-tree CPU backends: the argument
 * checks, the walk over the batch, and the copies between strided views and the
 * column-major double matrices the per-matrix kernels work on. A backend supplies the
 * kernels (the reference writes them out; cpu_blas calls LAPACK) and calls
 * ffb_linalg_host from its entry.
 *
 * Every op computes in double whatever the dtype (f32 is rounded once at the store):
 * the matrices are small next to a matmul, and one precision keeps one code path.
 * Header-only, like ff_backend_scalar.h.
 */
#ifndef FF_BACKEND_LINALG_H
#define FF_BACKEND_LINALG_H

#include <float.h>
#include <math.h>

#include "ff_backend_checks.h"

/* Per-matrix kernels on column-major doubles (element (i, j) of an r-row matrix is
 * p[i + j * r]). Each returns 0 on success, a positive number for a mathematical failure
 * (singular pivot / non-positive minor, 1-based) or one of the negative codes below.
 * svd and lstsq never see a non-finite A: the driver refuses it first (LAPACK's gesdd
 * and gelsd hand it to dlascl, which reports it through xerbla: a line on stderr, or,
 * with NumPy's xerbla loaded, a Python exception raised under a ctypes call). */
#define FFB_LINALG_OOM (-1)          /* out of memory */
#define FFB_LINALG_TOO_BIG (-2)      /* a dimension or size past LAPACK's 32-bit INTEGER */
#define FFB_LINALG_BAD_ARG(i) (-100 - (i)) /* LAPACK's info = -i: argument i was illegal */

typedef struct ffb_linalg_kernels {
    /* a (n x n) is destroyed; b (n x k) becomes X with A X = B */
    int (*solve)(int64_t n, int64_t k, double *a, double *b);
    /* a (n x n) is destroyed; *det gets det(A) */
    int (*det)(int64_t n, double *a, double *det);
    /* a (n x n) becomes L in its lower triangle (the upper one is left as is) */
    int (*cholesky)(int64_t n, double *a);
    /* a (m x n) is destroyed; q (m x qc) and r (qc x n) get A = Q R, qc = min(m, n) or m */
    int (*qr)(int64_t m, int64_t n, int64_t qc, double *a, double *q, double *r);
    /* a (m x n) is destroyed; u (m x uc), s (min(m, n)), vt (vr x n), full: uc = m, vr = n,
     * else both min(m, n) */
    int (*svd)(int64_t m, int64_t n, int full, double *a, double *u, double *s, double *vt);
    /* a (m x n) is destroyed; b (max(m, n) x k) holds B in its first m rows and gets X in
     * its first n rows; singular values below rcond * S[0] count as zero */
    int (*lstsq)(int64_t m, int64_t n, int64_t k, double *a, double *b, double rcond);
} ffb_linalg_kernels;

static inline const char *ffb_linalg_name(int op)
{
    static const char *const names[FF_LINALG_COUNT] = {"solve", "det", "cholesky", "qr", "svd", "lstsq"};
    return op >= 0 && op < FF_LINALG_COUNT ? names[op] : NULL;
}

static inline int ffb_linalg_supported(int op, ff_dtype t)
{
    return ffb_linalg_name(op) && (t == FF_F32 || t == FF_F64);
}

/* Rows and columns of a matrix view (the last two dims). */
static inline int64_t ffb_rows(const ff_view *v) { return v->shape[v->ndim - 2]; }
static inline int64_t ffb_cols(const ff_view *v) { return v->shape[v->ndim - 1]; }

/* Every view has the batch dims `nb` of src[0] and then `tail` more dims of the given
 * sizes (-1: any). */
static inline ff_status ffb_linalg_shape(const ff_host_api *host, const char *backend, const char *what,
                                         const ff_view *v, const ff_view *ref, int nb, int tail, int64_t d0, int64_t d1)
{
    char got[96], want[96];
    int ok = v->ndim == nb + tail;
    for (int d = 0; ok && d < nb; d++) ok = v->shape[d] == ref->shape[d];
    if (ok && tail >= 1) ok = d0 < 0 || v->shape[nb] == d0;
    if (ok && tail == 2) ok = d1 < 0 || v->shape[nb + 1] == d1;
    if (ok) return FF_OK;
    ffb_shape_str(v, got, sizeof got);
    ffb_shape_str(ref, want, sizeof want);
    return ffb_fail(host, FF_ERR_INVALID, "%s linalg: %s has shape %s, which does not fit the input %s", backend, what,
                    got, want);
}

/* The linalg entry's argument checks, with messages "<backend> linalg: ...". */
static inline ff_status ffb_linalg_check(const ff_host_api *host, const char *backend, int op, const ff_view *dst,
                                         int n_dst, const ff_view *src, int n_src)
{
    static const int want_dst[FF_LINALG_COUNT] = {1, 1, 1, 2, 3, 1}, want_src[FF_LINALG_COUNT] = {2, 1, 1, 1, 1, 2};
    const char *name = ffb_linalg_name(op);
    if (!name) return ffb_fail(host, FF_ERR_INVALID, "%s linalg: invalid op %d", backend, op);
    if (!dst || !src || n_dst != want_dst[op] || n_src != want_src[op])
        return ffb_fail(host, FF_ERR_INVALID, "%s linalg: %s takes %d outputs and %d inputs, got %d and %d", backend,
                        name, want_dst[op], want_src[op], n_dst, n_src);
    ff_status st;
    for (int i = 0; i < n_src; i++)
        if ((st = ffb_check_view(host, backend, "linalg", "src", &src[i]))) return st;
    for (int i = 0; i < n_dst; i++)
        if ((st = ffb_check_view(host, backend, "linalg", "dst", &dst[i]))) return st;
    ff_dtype t = src[0].dtype;
    if (!ffb_linalg_supported(op, t))
        return ffb_fail(host, FF_ERR_UNSUPPORTED, "%s linalg: %s is not supported on %s", backend, name, ffb_dtype_name(t));
    for (int i = 0; i < n_src + n_dst; i++)
        if ((i < n_src ? src[i] : dst[i - n_src]).dtype != t)
            return ffb_fail(host, FF_ERR_INVALID, "%s linalg: %s needs one dtype for every view", backend, name);
    const ff_view *a = &src[0];
    if (a->ndim < 2) return ffb_fail(host, FF_ERR_INVALID, "%s linalg: %s needs a matrix, got rank %d", backend, name, (int)a->ndim);
    int nb = a->ndim - 2;
    int64_t m = ffb_rows(a), n = ffb_cols(a), k = m < n ? m : n;
    if ((op == FF_LINALG_SOLVE || op == FF_LINALG_DET || op == FF_LINALG_CHOLESKY) && m != n)
        return ffb_fail(host, FF_ERR_INVALID, "%s linalg: %s needs square matrices, got %lld x %lld", backend, name,
                        (long long)m, (long long)n);
    switch (op) {
    case FF_LINALG_SOLVE:
    case FF_LINALG_LSTSQ: {
        int64_t rhs = src[1].ndim == a->ndim ? ffb_cols(&src[1]) : -1;
        if ((st = ffb_linalg_shape(host, backend, "B", &src[1], a, nb, 2, m, -1))) return st;
        return ffb_linalg_shape(host, backend, "X", &dst[0], a, nb, 2, n, rhs);
    }
    case FF_LINALG_DET: return ffb_linalg_shape(host, backend, "det", &dst[0], a, nb, 0, 0, 0);
    case FF_LINALG_CHOLESKY: return ffb_linalg_shape(host, backend, "L", &dst[0], a, nb, 2, n, n);
    case FF_LINALG_QR: {
        int64_t q = dst[0].ndim == a->ndim ? ffb_cols(&dst[0]) : -1;
        if (q != k && q != m)
            return ffb_fail(host, FF_ERR_INVALID, "%s linalg: qr's Q must have %lld or %lld columns", backend,
                            (long long)k, (long long)m);
        if ((st = ffb_linalg_shape(host, backend, "Q", &dst[0], a, nb, 2, m, q))) return st;
        return ffb_linalg_shape(host, backend, "R", &dst[1], a, nb, 2, q, n);
    }
    default: { /* SVD */
        int64_t u = dst[0].ndim == a->ndim ? ffb_cols(&dst[0]) : -1;
        int full = u == m && dst[2].ndim == a->ndim && ffb_rows(&dst[2]) == n; /* square: either */
        if (u != (full ? m : k))
            return ffb_fail(host, FF_ERR_INVALID, "%s linalg: svd's U must have %lld (full) or %lld columns", backend,
                            (long long)m, (long long)k);
        if ((st = ffb_linalg_shape(host, backend, "U", &dst[0], a, nb, 2, m, u)) ||
            (st = ffb_linalg_shape(host, backend, "S", &dst[1], a, nb, 1, k, 0)))
            return st;
        return ffb_linalg_shape(host, backend, "Vh", &dst[2], a, nb, 2, full ? n : k, n);
    }
    }
}

/* Offset of batch element b (row-major over the first nb dims) in v. */
static inline int64_t ffb_batch_offset(const ff_view *v, int nb, int64_t b)
{
    int64_t off = v->offset;
    for (int d = nb - 1; d >= 0; d--) {
        off += (b % v->shape[d]) * v->strides[d];
        b /= v->shape[d];
    }
    return off;
}

/* Matrix (or, with rank nb + 1, column vector; rank nb, scalar) b of v to / from a
 * column-major double array with `ld` rows. */
static inline void ffb_mat_load(const ff_view *v, int nb, int64_t b, double *p, int64_t ld)
{
    int64_t off = ffb_batch_offset(v, nb, b), es = (int64_t)ff_dtype_size(v->dtype);
    int64_t r = v->ndim > nb ? v->shape[nb] : 1, c = v->ndim > nb + 1 ? v->shape[nb + 1] : 1;
    int64_t rs = v->ndim > nb ? v->strides[nb] : 0, cs = v->ndim > nb + 1 ? v->strides[nb + 1] : 0;
    for (int64_t j = 0; j < c; j++)
        for (int64_t i = 0; i < r; i++)
            p[i + j * ld] = ffb_ld_f64((const char *)v->buf + (off + i * rs + j * cs) * es, v->dtype);
}

static inline void ffb_mat_store(const ff_view *v, int nb, int64_t b, const double *p, int64_t ld)
{
    int64_t off = ffb_batch_offset(v, nb, b), es = (int64_t)ff_dtype_size(v->dtype);
    int64_t r = v->ndim > nb ? v->shape[nb] : 1, c = v->ndim > nb + 1 ? v->shape[nb + 1] : 1;
    int64_t rs = v->ndim > nb ? v->strides[nb] : 0, cs = v->ndim > nb + 1 ? v->strides[nb + 1] : 0;
    for (int64_t j = 0; j < c; j++)
        for (int64_t i = 0; i < r; i++)
            ffb_st_f64((char *)v->buf + (off + i * rs + j * cs) * es, v->dtype, p[i + j * ld]);
}

/* The first non-finite element of the r x c column-major p, or -1 when all are finite. */
static inline int64_t ffb_first_nonfinite(const double *p, int64_t r, int64_t c)
{
    for (int64_t i = 0; i < r * c; i++)
        if (!isfinite(p[i])) return i;
    return -1;
}

/* The failure message for a kernel's code rc != 0 on batch element b. */
static inline ff_status ffb_linalg_fail(const ff_host_api *host, const char *backend, int op, int rc, int64_t b,
                                        int64_t m, int64_t n)
{
    const char *name = ffb_linalg_name(op) ? ffb_linalg_name(op) : "linalg"; /* never NULL into %s */
    if (rc == FFB_LINALG_OOM) return ffb_fail(host, FF_ERR_OOM, "%s linalg: out of memory in %s", backend, name);
    if (rc == FFB_LINALG_TOO_BIG)
        return ffb_fail(host, FF_ERR_OVERFLOW, "%s linalg: %s: a %lld x %lld matrix is too large for LAPACK's 32-bit indices",
                        backend, name, (long long)m, (long long)n);
    if (rc < 0)
        return ffb_fail(host, FF_ERR_BACKEND,
                        "%s linalg: %s: LAPACK rejected its argument %d on matrix %lld of the batch (%lld x %lld): "
                        "a FusionFlow bug, please report it",
                        backend, name, -rc - 100, (long long)b, (long long)m, (long long)n);
    if (op == FF_LINALG_SOLVE)
        return ffb_fail(host, FF_ERR_INVALID,
                        "%s linalg: solve: matrix %lld of the batch is singular (pivot %d of %lld is zero)", backend,
                        (long long)b, rc, (long long)n);
    if (op == FF_LINALG_CHOLESKY)
        return ffb_fail(host, FF_ERR_INVALID,
                        "%s linalg: cholesky: matrix %lld of the batch is not positive-definite (the leading minor "
                        "of order %d is not positive)",
                        backend, (long long)b, rc);
    return ffb_fail(host, FF_ERR_INVALID, "%s linalg: %s did not converge on matrix %lld of the batch", backend, name,
                    (long long)b);
}

/* The whole entry: checks, then per batch element load, kernel, store. Nothing is
 * written for a batch element whose kernel fails, but earlier elements are (the core
 * discards dst on error). */
static inline ff_status ffb_linalg_host(const ff_host_api *host, const char *backend, const ffb_linalg_kernels *kn,
                                        int op, const ff_view *dst, int n_dst, const ff_view *src, int n_src)
{
    ff_status st = ffb_linalg_check(host, backend, op, dst, n_dst, src, n_src);
    if (st) return st;
    const char *name = ffb_linalg_name(op); /* checked: never NULL here (gcc cannot see it) */
    if (!name) name = "?";
    const ff_view *a = &src[0];
    int nb = a->ndim - 2;
    int64_t m = ffb_rows(a), n = ffb_cols(a), k = m < n ? m : n, batch = 1;
    for (int d = 0; d < nb; d++) batch *= a->shape[d];
    int64_t rhs = (op == FF_LINALG_SOLVE || op == FF_LINALG_LSTSQ) ? ffb_cols(&src[1]) : 0;
    int64_t c0 = op == FF_LINALG_QR || op == FF_LINALG_SVD ? ffb_cols(&dst[0]) : 0;
    int full = op == FF_LINALG_SVD && c0 == m && ffb_rows(&dst[2]) == n;
    int64_t mx = m > n ? m : n, vr = full ? n : k;
    /* one block: A, B / X, then the outputs (Q or U; R or Vh; S) */
    int64_t r2 = c0 > vr ? c0 : vr;
    int64_t nA = m * n, nB = mx * (rhs ? rhs : 1), n1 = m * (c0 ? c0 : 1), n2 = (r2 ? r2 : 1) * n;
    size_t need = (size_t)(nA + nB + n1 + n2 + k + 1);
    double *w = malloc(need * sizeof(double));
    if (!w) return ffb_fail(host, FF_ERR_OOM, "%s linalg: out of memory for %s's %zu-double workspace", backend,
                            name, need);
    double *A = w, *B = A + nA, *O1 = B + nB, *O2 = O1 + n1, *O3 = O2 + n2;
    double eps = a->dtype == FF_F32 ? (double)FLT_EPSILON : DBL_EPSILON;
    for (int64_t b = 0; b < batch && !st; b++) {
        ffb_mat_load(a, nb, b, A, m);
        int64_t bad = op == FF_LINALG_SVD || op == FF_LINALG_LSTSQ ? ffb_first_nonfinite(A, m, n) : -1;
        if (bad >= 0) { /* PyTorch's svd words; its lstsq (gelsd) fails on an internal assert */
            st = ffb_fail(host, FF_ERR_INVALID,
                          "%s linalg: %s: the input matrix contained non-finite values (element [%lld, %lld] of "
                          "matrix %lld of the batch is %s)",
                          backend, name, (long long)(bad % m), (long long)(bad / m), (long long)b,
                          isnan(A[bad]) ? "nan" : A[bad] > 0 ? "inf" : "-inf");
            break;
        }
        int rc = 0;
        double det = 0;
        switch (op) {
        case FF_LINALG_SOLVE:
            ffb_mat_load(&src[1], nb, b, B, n);
            if (!(rc = kn->solve(n, rhs, A, B))) ffb_mat_store(&dst[0], nb, b, B, n);
            break;
        case FF_LINALG_DET:
            if (!(rc = kn->det(n, A, &det))) ffb_mat_store(&dst[0], nb, b, &det, 1);
            break;
        case FF_LINALG_CHOLESKY:
            if (!(rc = kn->cholesky(n, A))) {
                for (int64_t j = 1; j < n; j++)
                    for (int64_t i = 0; i < j; i++) A[i + j * n] = 0;
                ffb_mat_store(&dst[0], nb, b, A, n);
            }
            break;
        case FF_LINALG_QR:
            if (!(rc = kn->qr(m, n, c0, A, O1, O2))) {
                ffb_mat_store(&dst[0], nb, b, O1, m);
                ffb_mat_store(&dst[1], nb, b, O2, c0);
            }
            break;
        case FF_LINALG_SVD:
            if (!(rc = kn->svd(m, n, full, A, O1, O3, O2))) {
                ffb_mat_store(&dst[0], nb, b, O1, m);
                ffb_mat_store(&dst[1], nb, b, O3, k);
                ffb_mat_store(&dst[2], nb, b, O2, vr);
            }
            break;
        default: /* LSTSQ */
            ffb_mat_load(&src[1], nb, b, B, mx);
            if (!(rc = kn->lstsq(m, n, rhs, A, B, eps * (double)mx))) ffb_mat_store(&dst[0], nb, b, B, mx);
            break;
        }
        if (rc) st = ffb_linalg_fail(host, backend, op, rc, b, m, n);
    }
    free(w);
    return st;
}

#endif /* FF_BACKEND_LINALG_H */
