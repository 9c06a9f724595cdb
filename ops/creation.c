/* Creation ops: eye, arange, linspace and the random fills, on a backend (the _on forms;
 * NULL: the default backend) so that a tensor made for a device is made there, and inside
 * a graph capture (include/ff/graph.h) its kernels run on the region's backend. Values of
 * arange/linspace are computed in double on the host (as PyTorch computes
 * start + i * step in double), uploaded, and converted once to the requested dtype. */
#include <math.h>
#include <stdlib.h>

#include "ops_impl.h"

static ff_backend *backend_or_default(ff_backend *be) { return be ? be : ff_backend_default(); }

ff_tensor *ff_eye_on(ff_backend *be, int64_t n, int64_t m, ff_dtype dtype)
{
    static const char fn[] = "ff_eye";
    if (n < 0 || m < 0) return ff_error(FF_ERR_INVALID, "%s: negative size (%lld, %lld)", fn, (long long)n, (long long)m), NULL;
    be = backend_or_default(be);
    if (!be) return NULL;
    int64_t shape[2] = {n, m};
    ff_tensor *t = ff_tensor_new(be, 2, shape, dtype, fn);
    if (!t) return NULL;
    /* the diagonal as a strided view: shape [min(n, m)], stride m + 1 */
    ff_layout diag = {.ndim = 1, .shape = {n < m ? n : m}, .strides = {m + 1}, .offset = 0};
    ff_tensor *d = ff_kernel_fill(t, 0.0, fn) ? NULL : ff_tensor_new_view(t, &diag);
    if (!d || ff_kernel_fill(d, 1.0, fn)) {
        ff_tensor_release(d);
        ff_tensor_release(t);
        return NULL;
    }
    ff_tensor_release(d);
    return t;
}

ff_tensor *ff_eye(int64_t n, int64_t m, ff_dtype dtype) { return ff_eye_on(NULL, n, m, dtype); }

/* A 1-D tensor of dtype from n doubles on be (consumes vals). */
static ff_tensor *from_doubles(ff_backend *be, double *vals, int64_t n, ff_dtype dtype, const char *fn)
{
    be = backend_or_default(be);
    ff_tensor *f = be ? ff_from_data_on(be, vals, 1, &n, FF_F64) : NULL;
    free(vals);
    if (!f) {
        ff_error_prefix(fn);
        return NULL;
    }
    ff_tensor *r = ff_op_cast(f, dtype, fn);
    ff_tensor_release(f);
    return r;
}

static double *alloc_doubles(int64_t n, const char *fn)
{
    if (n > (int64_t)(SIZE_MAX / sizeof(double)) - 1)
        return ff_error(FF_ERR_OVERFLOW, "%s: %lld elements is too many", fn, (long long)n), NULL;
    double *v = malloc(sizeof(double) * (size_t)(n ? n : 1));
    if (!v) ff_error(FF_ERR_OOM, "%s: out of memory for %lld values", fn, (long long)n);
    return v;
}

ff_tensor *ff_arange_on(ff_backend *be, double start, double stop, double step, ff_dtype dtype)
{
    static const char fn[] = "ff_arange";
    if (step == 0) return ff_error(FF_ERR_INVALID, "%s: step must be non-zero", fn), NULL;
    if (!isfinite(start) || !isfinite(stop) || !isfinite(step))
        return ff_error(FF_ERR_INVALID, "%s: start, stop and step must be finite", fn), NULL;
    double c = ceil((stop - start) / step);
    if (c > 9.0e15) return ff_error(FF_ERR_OVERFLOW, "%s: %g elements is too many", fn, c), NULL;
    int64_t n = c > 0 ? (int64_t)c : 0;
    double *v = alloc_doubles(n, fn);
    if (!v) return NULL;
    for (int64_t i = 0; i < n; i++) v[i] = start + (double)i * step;
    return from_doubles(be, v, n, dtype, fn);
}

ff_tensor *ff_arange(double start, double stop, double step, ff_dtype dtype)
{
    return ff_arange_on(NULL, start, stop, step, dtype);
}

ff_tensor *ff_linspace_on(ff_backend *be, double start, double stop, int64_t num, ff_dtype dtype)
{
    static const char fn[] = "ff_linspace";
    if (num < 0) return ff_error(FF_ERR_INVALID, "%s: num must be >= 0, got %lld", fn, (long long)num), NULL;
    double *v = alloc_doubles(num, fn);
    if (!v) return NULL;
    double step = num > 1 ? (stop - start) / (double)(num - 1) : 0.0;
    /* from both ends (as PyTorch), so the last element is exactly stop */
    for (int64_t i = 0; i < num; i++)
        v[i] = num == 1 ? start : i < num / 2 ? start + (double)i * step : stop - (double)(num - 1 - i) * step;
    return from_doubles(be, v, num, dtype, fn);
}

ff_tensor *ff_linspace(double start, double stop, int64_t num, ff_dtype dtype)
{
    return ff_linspace_on(NULL, start, stop, num, dtype);
}

static ff_tensor *random_fill(ff_backend *be, int ndim, const int64_t *shape, ff_dtype dtype, ff_random_dist dist,
                              double p0, double p1, bool global, uint64_t seed, const char *fn)
{
    if (!ff_dtype_has_grad(dtype)) /* complex: both parts (kernel_complex.c) */
        return ff_error(FF_ERR_INVALID, "%s: random fills need a float or complex dtype, got %s", fn,
                        ff_dtype_name(dtype)), NULL;
    be = backend_or_default(be);
    ff_tensor *t = be ? ff_tensor_new(be, ndim, shape, dtype, fn) : NULL;
    if (!t) return NULL;
    uint64_t base = 0;
    /* a complex element takes two draws (its parts), so reserves two counters */
    if (global) ff_random_next((uint64_t)ff_tensor_numel(t) * (ff_dtype_is_complex(dtype) ? 2u : 1u), &seed, &base);
    if (ff_kernel_random(t, dist, seed, base, p0, p1, fn)) {
        ff_tensor_release(t);
        return NULL;
    }
    return t;
}

ff_tensor *ff_rand_uniform_on(ff_backend *be, int ndim, const int64_t *shape, ff_dtype dtype, double low, double high,
                              uint64_t seed)
{
    return random_fill(be, ndim, shape, dtype, FF_RANDOM_UNIFORM, low, high, false, seed, "ff_rand_uniform");
}

ff_tensor *ff_rand_normal_on(ff_backend *be, int ndim, const int64_t *shape, ff_dtype dtype, double mean, double std,
                             uint64_t seed)
{
    if (std < 0) return ff_error(FF_ERR_INVALID, "ff_rand_normal: std must be >= 0, got %g", std), NULL;
    return random_fill(be, ndim, shape, dtype, FF_RANDOM_NORMAL, mean, std, false, seed, "ff_rand_normal");
}

ff_tensor *ff_rand_on(ff_backend *be, int ndim, const int64_t *shape, ff_dtype dtype)
{
    return random_fill(be, ndim, shape, dtype, FF_RANDOM_UNIFORM, 0.0, 1.0, true, 0, "ff_rand");
}

ff_tensor *ff_randn_on(ff_backend *be, int ndim, const int64_t *shape, ff_dtype dtype)
{
    return random_fill(be, ndim, shape, dtype, FF_RANDOM_NORMAL, 0.0, 1.0, true, 0, "ff_randn");
}

ff_tensor *ff_rand_uniform(int ndim, const int64_t *shape, ff_dtype dtype, double low, double high, uint64_t seed)
{
    return ff_rand_uniform_on(NULL, ndim, shape, dtype, low, high, seed);
}

ff_tensor *ff_rand_normal(int ndim, const int64_t *shape, ff_dtype dtype, double mean, double std, uint64_t seed)
{
    return ff_rand_normal_on(NULL, ndim, shape, dtype, mean, std, seed);
}

ff_tensor *ff_rand(int ndim, const int64_t *shape, ff_dtype dtype) { return ff_rand_on(NULL, ndim, shape, dtype); }
ff_tensor *ff_randn(int ndim, const int64_t *shape, ff_dtype dtype) { return ff_randn_on(NULL, ndim, shape, dtype); }

/* A random permutation of 0..n-1 (i64): the stable argsort of n uniform draws from the
 * global generator (ties need two equal 53-bit draws). */
ff_tensor *ff_randperm(int64_t n)
{
    static const char fn[] = "ff_randperm";
    if (n < 0) return ff_error(FF_ERR_INVALID, "%s: n = %lld must be >= 0", fn, (long long)n), NULL;
    ff_tensor *u = ff_rand(1, &n, FF_F64);
    ff_tensor *r = u ? ff_argsort(u, 0, false) : NULL;
    ff_tensor_release(u);
    if (!r) ff_error_prefix(fn);
    return r;
}
