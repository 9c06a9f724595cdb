/* NaN and inf into the dense linalg ops, on every backend with the linalg entry (cpu and,
 * when built, cpu_blas, whose LAPACK once printed "On entry to DLASCL parameter number 4
 * had an illegal value" and reported "out of memory"): svd and lstsq refuse a non-finite
 * A with a message naming the matrix of the batch, the other ops pass NaN/inf through to
 * their results as PyTorch does, and nothing at all is written to stdout or stderr. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <unistd.h>

#include "ff_test.h"

/* stdout and stderr go to a temporary file between quiet_begin and quiet_end, which
 * returns how many bytes were written there (OpenBLAS's xerbla prints its complaint to
 * stdout, the reference LAPACK's to stderr). */
static int saved_fd[2] = {-1, -1};
static FILE *quiet_file;

static void quiet_begin(void)
{
    fflush(stdout);
    fflush(stderr);
    quiet_file = tmpfile();
    for (int k = 0; k < 2; k++) {
        saved_fd[k] = dup(1 + k);
        if (quiet_file) dup2(fileno(quiet_file), 1 + k);
    }
}

static long quiet_end(void)
{
    fflush(stdout);
    fflush(stderr);
    for (int k = 0; k < 2; k++) {
        dup2(saved_fd[k], 1 + k);
        close(saved_fd[k]);
    }
    if (!quiet_file) return -1;
    long n = fseek(quiet_file, 0, SEEK_END) == 0 ? ftell(quiet_file) : -1;
    fclose(quiet_file);
    return n;
}

/* Whether t holds a NaN or an inf. */
static bool has_nonfinite(const ff_tensor *t)
{
    double v[16];
    int64_t n = t ? ff_tensor_numel(t) : 0;
    if (!t || n > 16 || ff_test_values(t, v, 16) != 0) return false;
    for (int64_t i = 0; i < n; i++)
        if (!isfinite(v[i])) return true;
    return false;
}

/* A batch of two 2 x 2 matrices on be whose second one holds v at [1, 1]. */
static ff_tensor *batch_with(ff_backend *be, ff_dtype dt, double v)
{
    ff_tensor *h = ff_test_tensor(dt, 3, SHAPE(2, 2, 2), VALS(4, 1, 1, 3, 1, 2, 3, v));
    ff_tensor *t = h ? ff_to(h, be) : NULL;
    ff_tensor_release(h);
    return t;
}

static void check_backend(ff_backend *be)
{
    const double bad[3] = {NAN, INFINITY, -INFINITY};
    const ff_dtype dts[2] = {FF_F32, FF_F64};
    for (int di = 0; di < 2; di++)
        for (int k = 0; k < 3; k++) {
            ff_tensor *a = batch_with(be, dts[di], bad[k]), *fin = batch_with(be, dts[di], 5);
            ff_tensor *hb = ff_test_tensor(dts[di], 3, SHAPE(2, 2, 1), VALS(1, 2, 3, 4));
            ff_tensor *b = hb ? ff_to(hb, be) : NULL;
            CHECK(a && fin && b);
            if (!a || !fin || !b) {
                RELEASE(a, fin, hb, b);
                continue;
            }
            ff_tensor *u = NULL, *s = NULL, *vh = NULL, *q = NULL, *r = NULL;
            quiet_begin();
            ff_status svd_st = ff_svd(a, false, &u, &s, &vh);
            char svd_msg[512];
            snprintf(svd_msg, sizeof svd_msg, "%s", ff_last_error());
            ff_tensor *x = ff_lstsq(a, b);
            char lstsq_msg[512];
            snprintf(lstsq_msg, sizeof lstsq_msg, "%s", ff_last_error());
            ff_tensor *sol = ff_solve(a, b), *inv = ff_inverse(a), *det = ff_det(a), *chol = ff_cholesky(a, false);
            char chol_msg[512];
            snprintf(chol_msg, sizeof chol_msg, "%s", ff_last_error());
            ff_status qr_st = ff_qr(a, false, &q, &r);
            ff_tensor *nb = ff_mul_scalar(b, bad[k]); /* a finite A with a non-finite B: */
            ff_tensor *xb = nb ? ff_lstsq(fin, nb) : NULL; /* NaN in X, as PyTorch's gelsd */
            long written = quiet_end();
            CHECK(written == 0); /* no LAPACK complaint on stdout or stderr */
            CHECK(svd_st == FF_ERR_INVALID && u == NULL && s == NULL && vh == NULL);
            CHECK(strstr(svd_msg, "ff_svd") && strstr(svd_msg, "non-finite") && strstr(svd_msg, "matrix 1 "));
            CHECK(x == NULL && strstr(lstsq_msg, "ff_lstsq") && strstr(lstsq_msg, "non-finite"));
            CHECK(!strstr(svd_msg, "memory") && !strstr(lstsq_msg, "memory"));
            CHECK(has_nonfinite(sol) && has_nonfinite(inv) && has_nonfinite(det));
            CHECK(qr_st == FF_OK && has_nonfinite(r));
            if (bad[k] < 0) /* a minor of -inf: not positive-definite, as potrf says */
                CHECK(chol == NULL && strstr(chol_msg, "positive-definite"));
            else
                CHECK(has_nonfinite(chol));
            CHECK(has_nonfinite(xb));
            RELEASE(a, fin, hb, b, u, s, vh, q, r, x, sol, inv, det, chol, nb, xb);
        }
    /* a finite batch still decomposes, with the same code around it */
    ff_tensor *ok = batch_with(be, FF_F64, 5), *u = NULL, *s = NULL, *vh = NULL;
    CHECK(ok && ff_svd(ok, false, &u, &s, &vh) == FF_OK && !has_nonfinite(s));
    RELEASE(ok, u, s, vh);
}

static void test_reference(void)
{
    ff_backend *be = ff_backend_load("cpu");
    CHECK(be != NULL);
    if (be) check_backend(be);
}

static void test_cpu_blas(void)
{
#if FF_TEST_HAVE_CPU_BLAS
    ff_backend *be = ff_backend_load("cpu_blas");
    CHECK(be != NULL);
    if (be) check_backend(be);
#endif
}

FF_TEST_MAIN("ops_decomp_nonfinite", TEST(test_reference), TEST(test_cpu_blas))
