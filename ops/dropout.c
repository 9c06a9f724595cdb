/* Inverted dropout: out = x * mask, mask = (u >= p) / (1 - p) with u ~ U[0, 1) drawn
 * from (seed, counter 0), so the same seed gives the same mask on every backend. The
 * gradient, g * mask, comes from the mul node (the mask is a constant). */
#include <math.h>

#include "ops_impl.h"

/* The scaled keep-mask in dtype dt, without history. */
static ff_tensor *dropout_mask(const ff_tensor *x, ff_dtype dt, double p, uint64_t seed, const char *fn)
{
    ff_backend *be = x->storage->backend;
    int nd = x->layout.ndim;
    const int64_t *shape = x->layout.shape;
    ff_tensor *u = ff_tensor_new(be, nd, shape, dt, fn);
    ff_tensor *keep = u ? ff_tensor_new(be, nd, shape, FF_BOOL, fn) : NULL;
    ff_tensor *mask = keep ? ff_tensor_new(be, nd, shape, dt, fn) : NULL;
    ff_tensor *ps = mask ? ff_scalar_on(be, p, dt) : NULL;
    ff_tensor *scale = ps ? ff_scalar_on(be, 1.0 / (1.0 - p), dt) : NULL;
    ff_tensor *zero = scale ? ff_scalar_on(be, 0.0, dt) : NULL;
    if (!zero || ff_kernel_random(u, FF_RANDOM_UNIFORM, seed, 0, 0.0, 1.0, fn) ||
        ff_kernel_binary(FF_BINARY_GE, keep, u, ps, fn) || ff_kernel_where(mask, keep, scale, zero, fn)) {
        ff_tensor_release(mask);
        mask = NULL;
    }
    ff_tensor_release(u);
    ff_tensor_release(keep);
    ff_tensor_release(ps);
    ff_tensor_release(scale);
    ff_tensor_release(zero);
    return mask;
}

ff_tensor *ff_dropout(const ff_tensor *x, double p, bool training, uint64_t seed)
{
    static const char fn[] = "ff_dropout";
    if (!x) return ff_error(FF_ERR_INVALID, "%s: tensor is NULL", fn), NULL;
    if (!(p >= 0.0 && p <= 1.0)) return ff_error(FF_ERR_INVALID, "%s: p must be in [0, 1], got %g", fn, p), NULL;
    if (!training || p == 0.0) return ff_tensor_retain((ff_tensor *)x);
    ff_dtype dt = ff_dtype_to_float(x->dtype);
    ff_tensor *mask = p == 1.0 ? ff_scalar_on(x->storage->backend, 0.0, dt) /* x * 0, as PyTorch */
                               : dropout_mask(x, dt, p, seed, fn);
    ff_tensor *r = mask ? ff_mul(x, mask) : NULL;
    ff_tensor_release(mask);
    if (!r) ff_error_prefix(fn);
    return r;
}
