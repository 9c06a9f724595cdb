/* Tensors over memory the core did not allocate: a framework's allocations on a backend
 * (the PyTorch device), DLPack imports, mapped files. The storage's release_external
 * hook replaces the backend's free, so the owner's release runs exactly once, when the
 * last view over the memory goes away. */
#include <stdlib.h>

#include "ff_impl.h"

#define FN "ff_tensor_from_buffer"

static void keep_buffer(void *ctx) { (void)ctx; }

ff_tensor *ff_tensor_from_buffer(ff_backend *be, void *buf, size_t nbytes, ff_dtype dtype, int ndim,
                                 const int64_t *shape, const int64_t *strides, int64_t offset,
                                 void (*release)(void *ctx), void *ctx)
{
    if (!be) return ff_error(FF_ERR_INVALID, "%s: backend is NULL", FN), NULL;
    if (!buf && nbytes) return ff_error(FF_ERR_INVALID, "%s: buffer is NULL with %zu bytes", FN, nbytes), NULL;
    if ((unsigned)dtype >= FF_DTYPE_COUNT) return ff_error(FF_ERR_INVALID, "%s: invalid dtype %d", FN, (int)dtype), NULL;
    if (ndim < 0 || ndim > FF_MAX_DIMS)
        return ff_error(FF_ERR_INVALID, "%s: ndim %d outside [0, %d]", FN, ndim, FF_MAX_DIMS), NULL;
    if (ndim && (!shape || !strides)) return ff_error(FF_ERR_INVALID, "%s: shape or strides is NULL", FN), NULL;
    if (offset < 0) return ff_error(FF_ERR_INVALID, "%s: negative offset %lld", FN, (long long)offset), NULL;
    ff_layout l = {.ndim = ndim, .offset = offset};
    for (int d = 0; d < ndim; d++) {
        if (shape[d] < 0)
            return ff_error(FF_ERR_INVALID, "%s: dim %d has negative size %lld", FN, d, (long long)shape[d]), NULL;
        if (strides[d] < 0)
            return ff_error(FF_ERR_INVALID, "%s: dim %d has negative stride %lld", FN, d, (long long)strides[d]), NULL;
        l.shape[d] = shape[d];
        l.strides[d] = strides[d];
    }
    int64_t numel;
    if (ff_layout_numel(&l, &numel)) return NULL;
    /* one past the last element the view reaches: offset + 1 + sum (shape - 1) * stride */
    int64_t end = offset + 1, step;
    for (int d = 0; d < ndim && numel; d++)
        if (ff_mul_overflow_i64(shape[d] - 1, strides[d], &step) || ff_add_overflow_i64(end, step, &end))
            return ff_error(FF_ERR_OVERFLOW, "%s: strides overflow", FN), NULL;
    if (numel && (uint64_t)end > nbytes / ff_dtype_size(dtype))
        return ff_error(FF_ERR_INVALID, "%s: a view reaching element %lld of %s does not fit a %zu-byte buffer", FN,
                        (long long)end - 1, ff_dtype_name(dtype), nbytes), NULL;
    ff_storage *s = calloc(1, sizeof *s);
    if (!s) return ff_error(FF_ERR_OOM, "%s: out of memory for a storage header", FN), NULL;
    atomic_init(&s->refcount, 0); /* the view below takes the only reference */
    atomic_init(&s->version, 0);
    s->backend = be;
    s->buf = buf;
    s->nbytes = nbytes;
    s->release_external = release ? release : keep_buffer;
    s->external_ctx = ctx;
    ff_tensor proto = {.storage = s, .dtype = dtype};
    ff_tensor *t = ff_tensor_new_view(&proto, &l);
    if (!t) free(s); /* release not called: the caller still owns buf */
    return t;
}

void *ff_tensor_buffer(const ff_tensor *t, size_t *nbytes)
{
    if (!t) return NULL;
    if (nbytes) *nbytes = t->storage->nbytes;
    return t->storage->buf;
}
