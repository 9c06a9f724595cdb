/* A minimal test harness: CHECK records a failure with file:line and keeps going;
 * ff_test_main runs the registered test functions and returns non-zero on any
 * failure. Every test asserts something that could fail. */
#ifndef FF_TEST_H
#define FF_TEST_H

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "ff/ff.h"

extern int ff_test_failures;
extern int ff_test_checks;

#define CHECK(cond)                                                                              \
    do {                                                                                         \
        ff_test_checks++;                                                                        \
        if (!(cond)) {                                                                           \
            ff_test_failures++;                                                                  \
            fprintf(stderr, "%s:%d: CHECK failed: %s (last error: %s)\n", __FILE__, __LINE__, #cond, \
                    ff_last_error());                                                            \
        }                                                                                        \
    } while (0)

#define CHECK_NEAR(a, b, tol)                                                                    \
    do {                                                                                         \
        double a_ = (a), b_ = (b);                                                               \
        ff_test_checks++;                                                                        \
        if (!(fabs(a_ - b_) <= (tol) || (isnan(a_) && isnan(b_)))) {                             \
            ff_test_failures++;                                                                  \
            fprintf(stderr, "%s:%d: CHECK_NEAR failed: %s = %.17g, %s = %.17g (tol %g)\n", __FILE__, \
                    __LINE__, #a, a_, #b, b_, (double)(tol));                                    \
        }                                                                                        \
    } while (0)

/* The call must fail with this status and a message containing `needle`. */
#define CHECK_ERROR(expr_is_failure, status, needle)                                             \
    do {                                                                                         \
        ff_test_checks++;                                                                        \
        if (!(expr_is_failure) || ff_last_status() != (status) ||                                \
            !strstr(ff_last_error(), (needle))) {                                                \
            ff_test_failures++;                                                                  \
            fprintf(stderr, "%s:%d: expected error %d containing '%s', got status %d: '%s'\n",    \
                    __FILE__, __LINE__, (int)(status), (needle), (int)ff_last_status(),           \
                    ff_last_error());                                                            \
        }                                                                                        \
    } while (0)

typedef void (*ff_test_fn)(void);
typedef struct {
    const char *name;
    ff_test_fn fn;
} ff_test_case;

/* Runs the cases, then ff_shutdown(); prints a summary; returns the exit status. */
int ff_test_run(const char *suite, const ff_test_case *cases, int n);

/* Literal shapes and values: CHECK_TENSOR(t, 2, SHAPE(2, 3), VALS(1, 2, 3, 4, 5, 6), 0). */
#define SHAPE(...) ((int64_t[]){__VA_ARGS__})
#define VALS(...) ((double[]){__VA_ARGS__})

/* Releases every tensor listed (NULLs are fine): RELEASE(a, b, c). */
void ff_test_release_all(ff_tensor **ts, size_t n);
#define RELEASE(...)                                                      \
    do {                                                                  \
        ff_tensor *rl_[] = {__VA_ARGS__};                                 \
        ff_test_release_all(rl_, sizeof rl_ / sizeof rl_[0]);             \
    } while (0)

/* Helpers: a tensor from a double list (converted to dtype), and its values back. */
ff_tensor *ff_test_tensor(ff_dtype dtype, int ndim, const int64_t *shape, const double *values);
/* A tensor of the shape with values in [lo, hi) from a fixed linear congruential sequence
 * of seed: the same values on every machine and run (NULL on failure). */
ff_tensor *ff_test_lcg_tensor(ff_dtype dtype, int ndim, const int64_t *shape, unsigned seed, double lo, double hi);
/* The host backends a test loops over ({"cpu", "cpu_blas"} where cpu_blas is built), or,
 * when the environment variable env names a plugin (ctest points one at opencl or the
 * emulated cuda plugin), that one alone: the count, with the names in *names. */
int ff_test_backends(const char *env, const char *const **names);
/* Reads all elements (row-major) as doubles into out (numel entries). */
int ff_test_values(const ff_tensor *t, double *out, int64_t max);
/* A gradient hook for the autograd hook tests (ff_tensor_register_hook, ff_hooked_view):
 * ff_test_record_hook counts its calls, keeps the first four gradient values (a gradient
 * of more is FF_ERR_INVALID), then fails with `fail` when set, or passes back
 * grad * scale when scale != 0. user is an ff_test_hook. */
typedef struct ff_test_hook {
    int calls;
    double seen[4];
    double scale;
    ff_status fail;
} ff_test_hook;
ff_status ff_test_record_hook(const ff_tensor *grad, ff_tensor **replace, void *user);
/* Largest |a - b| over the elements in row-major order; a NaN difference, a NULL tensor or
 * different element counts give infinity (two empty tensors give 0). */
double ff_test_max_diff(const ff_tensor *a, const ff_tensor *b);
/* Checks t has the given shape and values within tol; reports the first mismatch. */
#define CHECK_TENSOR(t, ndim, shape, values, tol) \
    CHECK(ff_test_tensor_equals((t), (ndim), (shape), (values), (tol), __FILE__, __LINE__))
int ff_test_tensor_equals(const ff_tensor *t, int ndim, const int64_t *shape, const double *values, double tol,
                          const char *file, int line);

#define FF_TEST_MAIN(suite, ...)                                                                 \
    int main(void)                                                                               \
    {                                                                                            \
        static const ff_test_case cases_[] = {__VA_ARGS__};                                      \
        return ff_test_run(suite, cases_, (int)(sizeof cases_ / sizeof cases_[0]));              \
    }
#define TEST(fn) {#fn, fn}

#endif
