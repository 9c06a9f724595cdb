#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include "ff_test.h"

#include <math.h>
#include <stdlib.h>
#include <time.h>

int ff_test_failures;
int ff_test_checks;

int ff_test_run(const char *suite, const ff_test_case *cases, int n)
{
    int failed_cases = 0;
    const char *times = getenv("FF_TEST_TIMES"); /* "1": each case's wall time, to find the slow ones */
    for (int i = 0; i < n; i++) {
        int before = ff_test_failures;
        ff_clear_error();
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        cases[i].fn();
        clock_gettime(CLOCK_MONOTONIC, &t1);
        if (times && *times == '1')
            fprintf(stderr, "%s.%s: %.2f s\n", suite, cases[i].name,
                    (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec));
        if (ff_test_failures != before) {
            failed_cases++;
            fprintf(stderr, "FAIL %s.%s\n", suite, cases[i].name);
        }
    }
    ff_shutdown();
    printf("%s: %d passed, %d failed (%d checks)\n", suite, n - failed_cases, failed_cases, ff_test_checks);
    return failed_cases ? 1 : 0;
}

void ff_test_release_all(ff_tensor **ts, size_t n)
{
    for (size_t i = 0; i < n; i++) ff_tensor_release(ts[i]);
}

ff_tensor *ff_test_tensor(ff_dtype dtype, int ndim, const int64_t *shape, const double *values)
{
    ff_tensor *f = ff_from_data(values, ndim, shape, FF_F64);
    if (!f) return NULL;
    ff_tensor *r = ff_astype(f, dtype);
    ff_tensor_release(f);
    return r;
}

ff_tensor *ff_test_lcg_tensor(ff_dtype dtype, int ndim, const int64_t *shape, unsigned seed, double lo, double hi)
{
    int64_t n = 1;
    for (int i = 0; i < ndim; i++) n *= shape[i];
    double *v = malloc(sizeof *v * (size_t)(n ? n : 1));
    if (!v) return NULL;
    for (int64_t i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        v[i] = lo + (hi - lo) * (double)((seed >> 8) & 0xffff) / 65536.0;
    }
    ff_tensor *t = ff_test_tensor(dtype, ndim, shape, v);
    free(v);
    return t;
}

int ff_test_values(const ff_tensor *t, double *out, int64_t max)
{
    if (!t) return -1;
    int64_t n = ff_tensor_numel(t);
    if (n > max) return -1;
    ff_tensor *d = ff_astype(t, FF_F64);
    if (!d) return -1;
    int rc = ff_tensor_to_host(d, out, (size_t)n * sizeof(double)) == FF_OK ? 0 : -1;
    ff_tensor_release(d);
    return rc;
}

int ff_test_tensor_equals(const ff_tensor *t, int ndim, const int64_t *shape, const double *values, double tol,
                          const char *file, int line)
{
    if (!t) {
        fprintf(stderr, "%s:%d: tensor is NULL (%s)\n", file, line, ff_last_error());
        return 0;
    }
    if (ff_tensor_ndim(t) != ndim) {
        fprintf(stderr, "%s:%d: rank %d, expected %d\n", file, line, ff_tensor_ndim(t), ndim);
        return 0;
    }
    for (int d = 0; d < ndim; d++)
        if (ff_tensor_shape(t)[d] != shape[d]) {
            fprintf(stderr, "%s:%d: dim %d is %lld, expected %lld\n", file, line, d, (long long)ff_tensor_shape(t)[d],
                    (long long)shape[d]);
            return 0;
        }
    int64_t n = ff_tensor_numel(t);
    double *v = malloc(sizeof(double) * (size_t)(n ? n : 1));
    if (!v || ff_test_values(t, v, n)) {
        free(v);
        fprintf(stderr, "%s:%d: could not read values: %s\n", file, line, ff_last_error());
        return 0;
    }
    for (int64_t i = 0; i < n; i++) {
        bool same = (isnan(v[i]) && isnan(values[i])) || v[i] == values[i] || fabs(v[i] - values[i]) <= tol;
        if (!same) {
            fprintf(stderr, "%s:%d: element %lld is %.17g, expected %.17g\n", file, line, (long long)i, v[i], values[i]);
            free(v);
            return 0;
        }
    }
    free(v);
    return 1;
}

double ff_test_max_diff(const ff_tensor *a, const ff_tensor *b)
{
    if (!a || !b || ff_tensor_numel(a) != ff_tensor_numel(b)) return INFINITY;
    int64_t n = ff_tensor_numel(a);
    double *x = malloc(sizeof *x * (size_t)(n ? n : 1)), *y = malloc(sizeof *y * (size_t)(n ? n : 1)), m = 0;
    if (!x || !y || ff_test_values(a, x, n) != 0 || ff_test_values(b, y, n) != 0) m = INFINITY;
    for (int64_t i = 0; m != INFINITY && i < n; i++) {
        double d = fabs(x[i] - y[i]);
        if (d > m || d != d) m = d != d ? INFINITY : d;
    }
    free(x), free(y);
    return m;
}

ff_status ff_test_record_hook(const ff_tensor *grad, ff_tensor **replace, void *user)
{
    ff_test_hook *h = user;
    double v[4] = {0};
    if (ff_test_values(grad, v, 4) != 0) return FF_ERR_INVALID;
    for (int i = 0; i < 4; i++) h->seen[i] = v[i];
    h->calls++;
    if (h->fail) return h->fail;
    if (h->scale != 0) {
        ff_tensor *s = ff_scalar_tensor(h->scale, FF_F64);
        *replace = ff_mul(grad, s);
        ff_tensor_release(s);
    }
    return FF_OK;
}

int ff_test_backends(const char *env, const char *const **names)
{
    static const char *host[] = {"cpu", "cpu_blas"};
    static _Thread_local const char *only[1];
    const char *v = getenv(env);
    if (v && *v) {
        only[0] = v;
        *names = only;
        return 1;
    }
    *names = host;
    return FF_TEST_HAVE_CPU_BLAS ? 2 : 1;
}
