/* Tensors over memory io's loaders did not allocate (DLPack imports, mapped files),
 * through the core's ff_tensor_from_buffer, with io's own check that the memory is
 * somewhere the backend can address. */
#include "io_impl.h"

ff_tensor *ff_io_wrap_external(ff_backend *be, void *buf, size_t nbytes, ff_dtype dtype, const ff_layout *l,
                               void (*release)(void *ctx), void *ctx, const char *fn)
{
    if (!be) return NULL; /* the backend lookup set the error */
    /* device memory only from DLPack import, which checked the device (io/dlpack.c) */
    if (!(be->vt->flags & FF_BACKEND_HOST_MEMORY) && !FF_VT_OPT(be, dlpack_device))
        return ff_error(FF_ERR_UNSUPPORTED, "%s: backend '%s' does not use host memory, so it cannot view external memory",
                        fn, be->name), NULL;
    if (!release) return ff_error(FF_ERR_INVALID, "%s: no release function for external memory", fn), NULL;
    ff_tensor *t = ff_tensor_from_buffer(be, buf, nbytes, dtype, l->ndim, l->shape, l->strides, l->offset, release, ctx);
    if (!t) return ff_error(ff_last_status(), "%s: %s", fn, ff_last_error()), NULL;
    return t;
}
