/* The optional linalg entry, written out as the textbook algorithms so that the oracle
 * does not share a library with the backends it judges (cpu_blas calls LAPACK):
 *   solve, det   LU with partial pivoting (the largest |pivot| in the column)
 *   cholesky     the column-by-column Cholesky-Banachiewicz recurrence
 *   qr           Householder reflections with LAPACK's sign rule (dlarfg: the new
 *                diagonal has the sign opposite to the old one), so R's signs agree
 *   svd          one-sided Jacobi (Hestenes) on the columns, until every pair is
 *                orthogonal to its dot product's rounding (null columns left out);
 *                U's columns for zero singular values completed through qr
 *   lstsq        through svd: X = V S^+ U^T B, the minimum-norm solution
 * Column-major doubles; ffb_linalg_host (backends/common/ff_backend_linalg.h) does the
 * checks, the batch and the strided copies. */
#include "cpu_impl.h"
#include "ff_backend_linalg.h"

/* LU of a (n x n) in place, row swaps in piv; 0 or the 1-based index of a zero pivot. */
static int lu(int64_t n, double *a, int64_t *piv, int *sign)
{
    int bad = 0;
    *sign = 1;
    for (int64_t j = 0; j < n; j++) {
        int64_t p = j;
        for (int64_t i = j + 1; i < n; i++)
            if (fabs(a[i + j * n]) > fabs(a[p + j * n])) p = i;
        piv[j] = p;
        if (p != j) {
            *sign = -*sign;
            for (int64_t c = 0; c < n; c++) {
                double t = a[j + c * n];
                a[j + c * n] = a[p + c * n], a[p + c * n] = t;
            }
        }
        double d = a[j + j * n];
        if (d == 0) {
            if (!bad) bad = (int)(j + 1);
            continue;
        }
        for (int64_t i = j + 1; i < n; i++) a[i + j * n] /= d;
        for (int64_t c = j + 1; c < n; c++)
            for (int64_t i = j + 1; i < n; i++) a[i + c * n] -= a[i + j * n] * a[j + c * n];
    }
    return bad;
}

static int ref_solve(int64_t n, int64_t k, double *a, double *b)
{
    int64_t *piv = malloc((size_t)(n ? n : 1) * sizeof *piv);
    if (!piv) return -1;
    int sign, bad = lu(n, a, piv, &sign);
    for (int64_t c = 0; c < k && !bad; c++) {
        double *x = b + c * n;
        for (int64_t i = 0; i < n; i++) { /* P b, then L y = P b (unit diagonal) */
            double t = x[i];
            x[i] = x[piv[i]], x[piv[i]] = t;
        }
        for (int64_t i = 0; i < n; i++)
            for (int64_t j = 0; j < i; j++) x[i] -= a[i + j * n] * x[j];
        for (int64_t i = n - 1; i >= 0; i--) { /* U x = y */
            for (int64_t j = i + 1; j < n; j++) x[i] -= a[i + j * n] * x[j];
            x[i] /= a[i + i * n];
        }
    }
    free(piv);
    return bad;
}

static int ref_det(int64_t n, double *a, double *det)
{
    int64_t *piv = malloc((size_t)(n ? n : 1) * sizeof *piv);
    if (!piv) return -1;
    int sign;
    lu(n, a, piv, &sign);
    double d = sign;
    for (int64_t i = 0; i < n; i++) d *= a[i + i * n];
    *det = d;
    free(piv);
    return 0;
}

static int ref_cholesky(int64_t n, double *a)
{
    for (int64_t j = 0; j < n; j++) {
        double d = a[j + j * n];
        for (int64_t c = 0; c < j; c++) d -= a[j + c * n] * a[j + c * n];
        if (d <= 0) return (int)(j + 1); /* NaN goes on into L, as LAPACK's potrf and PyTorch */
        double l = sqrt(d);
        a[j + j * n] = l;
        for (int64_t i = j + 1; i < n; i++) {
            double s = a[i + j * n];
            for (int64_t c = 0; c < j; c++) s -= a[i + c * n] * a[j + c * n];
            a[i + j * n] = s / l;
        }
    }
    return 0;
}

/* Householder QR: column j of a below the diagonal becomes v (v[j] = 1 implied), tau[j]
 * its scale, so H_j = I - tau v v^T and A = H_0 ... H_{k-1} R. */
static void householder(int64_t m, int64_t n, double *a, double *tau)
{
    int64_t k = m < n ? m : n;
    for (int64_t j = 0; j < k; j++) {
        double *x = a + j + j * m, alpha = x[0], xn = 0;
        for (int64_t i = 1; i < m - j; i++) xn = hypot(xn, x[i]);
        if (xn == 0) {
            tau[j] = 0;
            continue;
        }
        double beta = -copysign(hypot(alpha, xn), alpha);
        tau[j] = (beta - alpha) / beta;
        for (int64_t i = 1; i < m - j; i++) x[i] /= alpha - beta;
        x[0] = beta;
        for (int64_t c = j + 1; c < n; c++) { /* column c -= tau v (v . column c) */
            double *y = a + j + c * m, dot = y[0];
            for (int64_t i = 1; i < m - j; i++) dot += x[i] * y[i];
            dot *= tau[j];
            y[0] -= dot;
            for (int64_t i = 1; i < m - j; i++) y[i] -= dot * x[i];
        }
    }
}

/* Q's first qc columns: H_0 ... H_{k-1} applied to the identity's. */
static void householder_q(int64_t m, int64_t k, int64_t qc, const double *a, const double *tau, double *q)
{
    for (int64_t c = 0; c < qc; c++)
        for (int64_t i = 0; i < m; i++) q[i + c * m] = i == c;
    for (int64_t j = k - 1; j >= 0; j--) {
        const double *v = a + j + j * m;
        for (int64_t c = 0; c < qc; c++) {
            double *y = q + j + c * m, dot = y[0];
            for (int64_t i = 1; i < m - j; i++) dot += v[i] * y[i];
            dot *= tau[j];
            y[0] -= dot;
            for (int64_t i = 1; i < m - j; i++) y[i] -= dot * v[i];
        }
    }
}

static int ref_qr(int64_t m, int64_t n, int64_t qc, double *a, double *q, double *r)
{
    int64_t k = m < n ? m : n;
    double *tau = malloc((size_t)(k + 1) * sizeof *tau);
    if (!tau) return -1;
    householder(m, n, a, tau);
    householder_q(m, k, qc, a, tau, q);
    for (int64_t c = 0; c < n; c++)
        for (int64_t i = 0; i < qc; i++) r[i + c * qc] = i <= c && i < m ? a[i + c * m] : 0;
    free(tau);
    return 0;
}

/* Columns r.. of the m x cols matrix u (orthonormal columns 0..r-1) completed to an
 * orthonormal set: the trailing columns of the complete Q of u's first r columns. */
static int complete_basis(int64_t m, int64_t r, int64_t cols, double *u)
{
    if (r >= cols) return 0;
    double *a = malloc((size_t)(m * (r ? r : 1) + m * m + r + 1) * sizeof *a);
    if (!a) return -1;
    double *q = a + m * (r ? r : 1), *tau = q + m * m;
    memcpy(a, u, (size_t)(m * r) * sizeof *a);
    householder(m, r, a, tau);
    householder_q(m, r, m, a, tau, q);
    memcpy(u + r * m, q + r * m, (size_t)(m * (cols - r)) * sizeof *u);
    free(a);
    return 0;
}

/* One-sided Jacobi on a tall a (m x n, m >= n): rotate column pairs until every pair is
 * orthogonal to m rounding errors of its dot product (|x.y| <= m eps |x| |y|, as the
 * dot product itself is only that exact); then s = column norms and v the accumulated
 * rotations (n x n). A column of norm <= *tiny = eps ||A||_F is the rounding noise of a
 * null direction (a repeated row leaves one): rotating it against a live column cancels
 * it to a noise eps times smaller that is again parallel to that column, so it shrank
 * toward underflow and never passed the test. Such columns are left out of the
 * rotations; svd_tall gives them no direction of their own. 1 when the sweeps run out,
 * or at once for a non-finite a (no rotation makes NaN columns orthogonal). */
static int jacobi_tall(int64_t m, int64_t n, double *a, double *s, double *v, double *tiny)
{
    double fro = 0, tol = (double)m * DBL_EPSILON;
    for (int64_t i = 0; i < m * n; i++) fro = hypot(fro, a[i]);
    if (!isfinite(fro)) return 1;
    *tiny = DBL_EPSILON * fro;
    for (int64_t j = 0; j < n; j++)
        for (int64_t i = 0; i < n; i++) v[i + j * n] = i == j;
    for (int sweep = 0; sweep < 80; sweep++) {
        int rotated = 0;
        for (int64_t p = 0; p < n; p++)
            for (int64_t q = p + 1; q < n; q++) {
                double *x = a + p * m, *y = a + q * m, al = 0, be = 0, ga = 0;
                for (int64_t i = 0; i < m; i++) al += x[i] * x[i], be += y[i] * y[i], ga += x[i] * y[i];
                double nx = sqrt(al), ny = sqrt(be);
                if (nx <= *tiny || ny <= *tiny || fabs(ga) <= tol * nx * ny) continue;
                rotated = 1;
                double zeta = (be - al) / (2 * ga);
                double t = copysign(1.0, zeta) / (fabs(zeta) + sqrt(1 + zeta * zeta));
                double c = 1 / sqrt(1 + t * t), sn = c * t;
                for (int64_t i = 0; i < m; i++) {
                    double xi = x[i], yi = y[i];
                    x[i] = c * xi - sn * yi, y[i] = sn * xi + c * yi;
                }
                double *vx = v + p * n, *vy = v + q * n;
                for (int64_t i = 0; i < n; i++) {
                    double xi = vx[i], yi = vy[i];
                    vx[i] = c * xi - sn * yi, vy[i] = sn * xi + c * yi;
                }
            }
        if (!rotated) {
            for (int64_t j = 0; j < n; j++) {
                double nr = 0;
                for (int64_t i = 0; i < m; i++) nr = hypot(nr, a[i + j * m]);
                s[j] = nr;
            }
            return 0;
        }
    }
    return 1;
}

/* svd of a tall a (m >= n): u (m x uc), s (n), v (n x n, columns = right vectors). */
static int svd_tall(int64_t m, int64_t n, int64_t uc, double *a, double *u, double *s, double *v)
{
    double tiny = 0;
    int rc = jacobi_tall(m, n, a, s, v, &tiny);
    if (rc) return rc;
    int64_t *ord = malloc((size_t)(n + 1) * sizeof *ord);
    double *tmp = malloc((size_t)(n * n + n + 1) * sizeof *tmp);
    if (!ord || !tmp) {
        free(ord), free(tmp);
        return -1;
    }
    for (int64_t j = 0; j < n; j++) ord[j] = j;
    for (int64_t j = 1; j < n; j++) /* descending, stable: insertion sort */
        for (int64_t i = j; i > 0 && s[ord[i]] > s[ord[i - 1]]; i--) {
            int64_t t = ord[i];
            ord[i] = ord[i - 1], ord[i - 1] = t;
        }
    /* Columns with a direction of their own: those the rotations made orthogonal, that
     * is all but the ones jacobi_tall left out (<= tiny; 2 tiny, so that hypot's norm
     * and the sum of squares there never disagree about one). The rest of u, for the
     * zero singular values, is an orthonormal completion. */
    int64_t r = 0;
    for (int64_t j = 0; j < n; j++) {
        double sj = s[ord[j]];
        tmp[j] = sj;
        if (sj > 2 * tiny) {
            for (int64_t i = 0; i < m; i++) u[i + r * m] = a[i + ord[j] * m] / sj;
            r++;
        }
    }
    memcpy(s, tmp, (size_t)n * sizeof *s);
    for (int64_t j = 0; j < n; j++) memcpy(tmp + j * n, v + ord[j] * n, (size_t)n * sizeof *tmp);
    memcpy(v, tmp, (size_t)(n * n) * sizeof *v);
    free(ord), free(tmp);
    return complete_basis(m, r, uc, u);
}

static int ref_svd(int64_t m, int64_t n, int full, double *a, double *u, double *s, double *vt)
{
    int64_t k = m < n ? m : n, vr = full ? n : k;
    int tall = m >= n;
    int64_t M = tall ? m : n, N = tall ? n : m; /* work on A or A^T, tall */
    double *at = malloc((size_t)(M * N + N * N + M * M + 1) * sizeof *at);
    if (!at) return -1;
    double *v = at + M * N, *uu = v + N * N;
    for (int64_t j = 0; j < N; j++)
        for (int64_t i = 0; i < M; i++) at[i + j * M] = tall ? a[i + j * m] : a[j + i * m];
    int64_t uc = tall ? (full ? m : k) : vr; /* columns of the tall problem's U */
    int rc = svd_tall(M, N, uc, at, uu, s, v);
    if (!rc && tall) { /* U = uu, Vh = V^T */
        memcpy(u, uu, (size_t)(m * uc) * sizeof *u);
        for (int64_t j = 0; j < n; j++)
            for (int64_t i = 0; i < vr; i++) vt[i + j * vr] = v[j + i * n];
    } else if (!rc) { /* A^T = uu S V^T: U = V, Vh = uu^T */
        int64_t ucols = full ? m : k;
        for (int64_t j = 0; j < ucols; j++)
            for (int64_t i = 0; i < m; i++) u[i + j * m] = v[i + j * m];
        for (int64_t j = 0; j < n; j++)
            for (int64_t i = 0; i < vr; i++) vt[i + j * vr] = uu[j + i * n];
    }
    free(at);
    return rc;
}

static int ref_lstsq(int64_t m, int64_t n, int64_t k, double *a, double *b, double rcond)
{
    int64_t mn = m < n ? m : n, mx = m > n ? m : n;
    double *u = malloc((size_t)(m * (mn ? mn : 1) + mn + mn * n + mn * (k ? k : 1) + 1) * sizeof *u);
    if (!u) return -1;
    double *s = u + m * (mn ? mn : 1), *vt = s + mn, *c = vt + mn * n;
    int rc = ref_svd(m, n, 0, a, u, s, vt);
    if (!rc) {
        double cut = mn ? rcond * s[0] : 0;
        for (int64_t j = 0; j < k; j++) /* c = S^+ U^T b */
            for (int64_t i = 0; i < mn; i++) {
                double d = 0;
                for (int64_t r = 0; r < m; r++) d += u[r + i * m] * b[r + j * mx];
                c[i + j * mn] = s[i] > cut ? d / s[i] : 0;
            }
        for (int64_t j = 0; j < k; j++) /* x = V c */
            for (int64_t r = 0; r < n; r++) {
                double d = 0;
                for (int64_t i = 0; i < mn; i++) d += vt[i + r * mn] * c[i + j * mn];
                b[r + j * mx] = d;
            }
    }
    free(u);
    return rc;
}

static const ffb_linalg_kernels cpu_linalg_kernels = {ref_solve, ref_det, ref_cholesky, ref_qr, ref_svd, ref_lstsq};

ff_status cpu_linalg(void *ctx, int op, const ff_view *dst, int n_dst, const ff_view *src, int n_src)
{
    return ffb_linalg_host(ctx ? ((cpu_ctx *)ctx)->host : NULL, "cpu", &cpu_linalg_kernels, op, dst, n_dst, src, n_src);
}
