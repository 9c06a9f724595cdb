/* Tensors over memory the core did not allocate (DLPack imports, mapped files). The
 * storage's release_external hook replaces the backend's free, so the owner's
 * deleter runs exactly once, when the last view over the memory goes away. */
#include <stdlib.h>

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
    int64_t lo, hi;
    ff_layout_span(l, &lo, &hi);
    size_t es = ff_dtype_size(dtype);
    if (lo < 0 || (hi > lo && (uint64_t)hi > nbytes / es))
        return ff_error(FF_ERR_INVALID, "%s: view reaches element %lld of a %zu-byte buffer", fn, (long long)hi,
                        nbytes), NULL;
    ff_storage *s = calloc(1, sizeof *s);
    if (!s) return ff_error(FF_ERR_OOM, "%s: out of memory for a storage header", fn), NULL;
    atomic_init(&s->refcount, 0); /* the view below takes the only reference */
    atomic_init(&s->version, 0);
    s->backend = be;
    s->buf = buf;
    s->nbytes = nbytes;
    s->release_external = release;
    s->external_ctx = ctx;
    ff_tensor proto = {.storage = s, .dtype = dtype};
    ff_tensor *t = ff_tensor_new_view(&proto, l);
    if (!t) free(s); /* release not called: the caller still owns buf */
    return t;
}
