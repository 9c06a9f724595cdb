/* Factories: tensors made from a shape and a value, or from host data. Leaves, no
 * autograd history. */
#include <math.h>
#include <string.h>

#include "ff_impl.h"

ff_tensor *ff_empty_on(ff_backend *be, int ndim, const int64_t *shape, ff_dtype dtype)
{
    if (!be) return ff_error(FF_ERR_INVALID, "ff_empty_on: backend is NULL"), NULL;
    return ff_tensor_new(be, ndim, shape, dtype, "ff_empty");
}

ff_tensor *ff_full_on(ff_backend *be, int ndim, const int64_t *shape, ff_dtype dtype, double value)
{
    if (!be) return ff_error(FF_ERR_INVALID, "ff_full_on: backend is NULL"), NULL;
    ff_tensor *t = ff_tensor_new(be, ndim, shape, dtype, "ff_full");
    if (t && ff_kernel_fill(t, value, "ff_full")) {
        ff_tensor_release(t);
        return NULL;
    }
    return t;
}

ff_tensor *ff_empty(int ndim, const int64_t *shape, ff_dtype dtype)
{
    return ff_tensor_new(ff_backend_default(), ndim, shape, dtype, "ff_empty");
}

ff_tensor *ff_full(int ndim, const int64_t *shape, ff_dtype dtype, double value)
{
    ff_backend *be = ff_backend_default();
    return be ? ff_full_on(be, ndim, shape, dtype, value) : NULL;
}

ff_tensor *ff_zeros(int ndim, const int64_t *shape, ff_dtype dtype) { return ff_full(ndim, shape, dtype, 0.0); }
ff_tensor *ff_ones(int ndim, const int64_t *shape, ff_dtype dtype) { return ff_full(ndim, shape, dtype, 1.0); }
ff_tensor *ff_scalar_tensor(double value, ff_dtype dtype) { return ff_full(0, NULL, dtype, value); }
ff_tensor *ff_scalar_on(ff_backend *be, double value, ff_dtype dtype) { return ff_full_on(be, 0, NULL, dtype, value); }

ff_tensor *ff_number_tensor_on(ff_backend *be, ff_number n, ff_dtype dtype)
{
    static const char fn[] = "ff_number_tensor_on";
    if (!be) be = ff_backend_default();
    if (!be) return NULL;
    if (n.kind != FF_NUMBER_BOOL && n.kind != FF_NUMBER_INT && n.kind != FF_NUMBER_FLOAT)
        return ff_error(FF_ERR_INVALID, "%s: invalid number kind %d", fn, (int)n.kind), NULL;
    ff_tensor *t = ff_tensor_new(be, 0, NULL, dtype, fn);
    if (t && ff_kernel_fill_number(t, n, fn)) {
        ff_tensor_release(t);
        return NULL;
    }
    return t;
}

static ff_tensor *like(const ff_tensor *t, bool fill, double value, const char *fn)
{
    if (!t) return ff_error(FF_ERR_INVALID, "%s: tensor is NULL", fn), NULL;
    ff_tensor *r = ff_tensor_new(t->storage->backend, t->layout.ndim, t->layout.shape, t->dtype, fn);
    if (r && fill && ff_kernel_fill(r, value, fn)) {
        ff_tensor_release(r);
        return NULL;
    }
    return r;
}

ff_tensor *ff_empty_like(const ff_tensor *t) { return like(t, false, 0, "ff_empty_like"); }
ff_tensor *ff_zeros_like(const ff_tensor *t) { return like(t, true, 0, "ff_zeros_like"); }
ff_tensor *ff_ones_like(const ff_tensor *t) { return like(t, true, 1, "ff_ones_like"); }
ff_tensor *ff_full_like(const ff_tensor *t, double value) { return like(t, true, value, "ff_full_like"); }

ff_tensor *ff_from_data_on(ff_backend *be, const void *data, int ndim, const int64_t *shape, ff_dtype dtype)
{
    static const char fn[] = "ff_from_data";
    if (!be) return ff_error(FF_ERR_INVALID, "%s: backend is NULL", fn), NULL;
    ff_tensor *t = ff_tensor_new(be, ndim, shape, dtype, fn);
    if (!t) return NULL;
    size_t nbytes = t->storage->nbytes;
    if (nbytes && !data) {
        ff_tensor_release(t);
        return ff_error(FF_ERR_INVALID, "%s: data is NULL", fn), NULL;
    }
    if (ff_kernel_upload(t, data, nbytes, fn)) {
        ff_tensor_release(t);
        return NULL;
    }
    return t;
}

ff_tensor *ff_from_data(const void *data, int ndim, const int64_t *shape, ff_dtype dtype)
{
    ff_backend *be = ff_backend_default();
    return be ? ff_from_data_on(be, data, ndim, shape, dtype) : NULL;
}
