/* DLPack 0.6 (legacy DLManagedTensor) export and import, zero-copy both ways.
 * Export: manager_ctx owns a reference to a view of the tensor, so the memory outlives
 * the producer's handle; the deleter drops it once. Import: the tensor's storage is
 * external and its release hook calls the producer's deleter once, when the last
 * view over that memory is gone. */
#include <stdlib.h>
#include <string.h>

#include <dlpack/dlpack.h>

#include "io_impl.h"

#define TO_FN "ff_to_dlpack"
#define FROM_FN "ff_from_dlpack"

/* Owned by the DLManagedTensor; shape/strides point into it. */
typedef struct export_ctx {
    DLManagedTensor m;
    ff_tensor *t;
    int64_t shape[FF_MAX_DIMS];
    int64_t strides[FF_MAX_DIMS];
} export_ctx;

static void export_deleter(DLManagedTensor *m)
{
    if (!m) return;
    export_ctx *c = m->manager_ctx;
    ff_tensor_release(c->t);
    free(c);
}

static bool dl_dtype(ff_dtype t, DLDataType *out)
{
    switch (t) {
    case FF_F32: *out = (DLDataType){kDLFloat, 32, 1}; return true;
    case FF_F64: *out = (DLDataType){kDLFloat, 64, 1}; return true;
    case FF_I32: *out = (DLDataType){kDLInt, 32, 1}; return true;
    case FF_I64: *out = (DLDataType){kDLInt, 64, 1}; return true;
    case FF_I8: *out = (DLDataType){kDLInt, 8, 1}; return true;
    case FF_C64: *out = (DLDataType){kDLComplex, 64, 1}; return true;
    case FF_C128: *out = (DLDataType){kDLComplex, 128, 1}; return true;
    case FF_I16: *out = (DLDataType){kDLInt, 16, 1}; return true;
    case FF_U8: *out = (DLDataType){kDLUInt, 8, 1}; return true;
    case FF_F16: *out = (DLDataType){kDLFloat, 16, 1}; return true;
    case FF_BF16: *out = (DLDataType){kDLBfloat, 16, 1}; return true;
    default: return false;
    }
}

struct DLManagedTensor *ff_to_dlpack(const ff_tensor *t)
{
    if (!t) return ff_error(FF_ERR_INVALID, "%s: tensor is NULL", TO_FN), NULL;
    ff_backend *be = t->storage->backend;
    /* host memory: kDLCPU; a device backend's own DLPack device (its queue drained) */
    int32_t dev_type, dev_id;
    if (ff_backend_dlpack_device(be, &dev_type, &dev_id))
        return ff_error(ff_last_status(), "%s: %s", TO_FN, ff_last_error()), NULL;
    DLDataType dt;
    if (!dl_dtype(t->dtype, &dt))
        return ff_error(FF_ERR_UNSUPPORTED, "%s: dtype %s has no DLPack 0.6 type%s", TO_FN, ff_dtype_name(t->dtype),
                        t->dtype == FF_BOOL ? " (export astype(u8) instead)" : ""), NULL;
    export_ctx *c = calloc(1, sizeof *c);
    if (!c) return ff_error(FF_ERR_OOM, "%s: out of memory", TO_FN), NULL;
    /* A fresh header over the same storage: the consumer's lifetime is tied to the
     * memory, not to t's autograd history or later re-use of t's header. */
    c->t = ff_tensor_new_view(t, &t->layout);
    if (!c->t) {
        free(c);
        return NULL;
    }
    for (int d = 0; d < t->layout.ndim; d++) {
        c->shape[d] = t->layout.shape[d];
        c->strides[d] = t->layout.strides[d];
    }
    DLTensor *dl = &c->m.dl_tensor;
    /* data points at the first element with byte_offset 0, as PyTorch exports: some
     * consumers (older PyTorch) ignore byte_offset. */
    dl->data = (char *)t->storage->buf + t->layout.offset * (int64_t)ff_dtype_size(t->dtype);
    dl->device = (DLDevice){(DLDeviceType)dev_type, dev_id};
    dl->ndim = t->layout.ndim;
    dl->dtype = dt;
    dl->shape = c->shape;
    dl->strides = c->strides;
    dl->byte_offset = 0;
    c->m.manager_ctx = c;
    c->m.deleter = export_deleter;
    return &c->m;
}

void ff_dlpack_free(struct DLManagedTensor *m)
{
    if (m && m->deleter) m->deleter(m);
}

static void import_release(void *ctx)
{
    DLManagedTensor *m = ctx;
    if (m->deleter) m->deleter(m);
}

static void no_release(void *ctx) { (void)ctx; }

/* A host array imported onto a device backend is copied (the device cannot view host
 * memory): a temporary view over it on the reference backend, moved with ff_to. The
 * producer's deleter runs once the copy exists; on failure m stays the caller's. */
static ff_tensor *copy_to_device(ff_backend *be, DLManagedTensor *m, void *data, size_t nbytes, ff_dtype dtype,
                                 const ff_layout *l)
{
    ff_backend *host = ff_backend_load("cpu");
    ff_tensor *view = host ? ff_io_wrap_external(host, data, nbytes, dtype, l, no_release, NULL, FROM_FN) : NULL;
    ff_tensor *r = view ? ff_to(view, be) : NULL;
    ff_tensor_release(view);
    if (r) import_release(m);
    return r;
}

static ff_status from_dl_dtype(DLDataType d, ff_dtype *out)
{
    if (d.lanes != 1) return ff_error(FF_ERR_UNSUPPORTED, "%s: vector dtypes (lanes = %u) are unsupported", FROM_FN, d.lanes);
    *out = FF_DTYPE_COUNT;
    if (d.code == kDLFloat && d.bits == 32) *out = FF_F32;
    else if (d.code == kDLFloat && d.bits == 64) *out = FF_F64;
    else if (d.code == kDLFloat && d.bits == 16) *out = FF_F16;
    else if (d.code == kDLBfloat && d.bits == 16) *out = FF_BF16;
    else if (d.code == kDLInt && d.bits == 32) *out = FF_I32;
    else if (d.code == kDLInt && d.bits == 64) *out = FF_I64;
    else if (d.code == kDLInt && d.bits == 8) *out = FF_I8;
    else if (d.code == kDLInt && d.bits == 16) *out = FF_I16;
    else if (d.code == kDLUInt && d.bits == 8) *out = FF_U8;
    else if (d.code == kDLComplex && d.bits == 64) *out = FF_C64;
    else if (d.code == kDLComplex && d.bits == 128) *out = FF_C128;
    else if (d.code == 6 && d.bits == 8) *out = FF_BOOL; /* kDLBool, added in DLPack 0.8 */
    if (*out == FF_DTYPE_COUNT)
        return ff_error(FF_ERR_UNSUPPORTED, "%s: DLPack dtype (code %u, %u bits) is unsupported (float16/32/64, bfloat16, "
                        "int8/16/32/64, uint8, bool, complex64/128 are)", FROM_FN, d.code, d.bits);
    return FF_OK;
}

ff_tensor *ff_from_dlpack_on(ff_backend *be, struct DLManagedTensor *m)
{
    if (!be) return ff_error(FF_ERR_INVALID, "%s: backend is NULL", FROM_FN), NULL;
    if (!m) return ff_error(FF_ERR_INVALID, "%s: DLManagedTensor is NULL", FROM_FN), NULL;
    const DLTensor *dl = &m->dl_tensor;
    /* device memory: only onto the backend whose device it is, as a view (zero copy) */
    int device_mem = dl->device.device_type != kDLCPU;
    int32_t dev_type = kDLCPU, dev_id = 0;
    if (device_mem && (ff_backend_dlpack_device(be, &dev_type, &dev_id) || dev_type != (int32_t)dl->device.device_type ||
                       dev_id != dl->device.device_id))
        return ff_error(FF_ERR_UNSUPPORTED, "%s: device (type %d, id %d) is neither kDLCPU nor the DLPack device of "
                        "backend '%s'; import device memory onto the backend of that device (kDLCUDA: cuda)", FROM_FN,
                        (int)dl->device.device_type, (int)dl->device.device_id, be->name), NULL;
    ff_dtype dtype;
    if (from_dl_dtype(dl->dtype, &dtype)) return NULL;
    if (dl->ndim < 0 || dl->ndim > FF_MAX_DIMS)
        return ff_error(FF_ERR_INVALID, "%s: ndim %d is outside [0, %d]", FROM_FN, dl->ndim, FF_MAX_DIMS), NULL;
    if (dl->ndim > 0 && !dl->shape) return ff_error(FF_ERR_INVALID, "%s: shape is NULL", FROM_FN), NULL;
    ff_layout l;
    memset(&l, 0, sizeof l);
    l.ndim = dl->ndim;
    int64_t numel = 1, es = (int64_t)ff_dtype_size(dtype), span = 1, t;
    for (int d = 0; d < dl->ndim; d++) {
        if (dl->shape[d] < 0)
            return ff_error(FF_ERR_INVALID, "%s: negative size %lld in dim %d", FROM_FN, (long long)dl->shape[d], d), NULL;
        if (ff_mul_overflow_i64(numel, dl->shape[d], &numel))
            return ff_error(FF_ERR_OVERFLOW, "%s: element count overflows", FROM_FN), NULL;
        l.shape[d] = dl->shape[d];
    }
    if (dl->strides) {
        for (int d = 0; d < dl->ndim; d++) {
            if (dl->strides[d] < 0)
                return ff_error(FF_ERR_UNSUPPORTED, "%s: negative stride %lld in dim %d is unsupported; make the "
                                "array contiguous first", FROM_FN, (long long)dl->strides[d], d), NULL;
            l.strides[d] = dl->strides[d];
        }
    } else if (ff_layout_init_contiguous(&l, dl->ndim, dl->shape, FROM_FN)) {
        return NULL;
    }
    /* Bytes the view reaches: 1 + sum (shape-1) * stride elements. */
    for (int d = 0; d < dl->ndim && numel; d++)
        if (ff_mul_overflow_i64(l.shape[d] - 1, l.strides[d], &t) || ff_add_overflow_i64(span, t, &span))
            return ff_error(FF_ERR_OVERFLOW, "%s: strides overflow", FROM_FN), NULL;
    if (!numel) span = 0;
    if (ff_mul_overflow_i64(span, es, &t))
        return ff_error(FF_ERR_OVERFLOW, "%s: byte span overflows", FROM_FN), NULL;
    if (numel && !dl->data) return ff_error(FF_ERR_INVALID, "%s: data is NULL", FROM_FN), NULL;
    char *data = dl->data ? (char *)dl->data + dl->byte_offset : NULL;
    if ((uintptr_t)data % (uintptr_t)es)
        return ff_error(FF_ERR_UNSUPPORTED, "%s: data at %p is not aligned to its %lld-byte element size", FROM_FN,
                        (void *)data, (long long)es), NULL;
    if (device_mem || (be->vt->flags & FF_BACKEND_HOST_MEMORY)) /* zero-copy: a view over the producer's memory */
        return ff_io_wrap_external(be, data, (size_t)t, dtype, &l, import_release, m, FROM_FN);
    return copy_to_device(be, m, data, (size_t)t, dtype, &l);
}

ff_tensor *ff_from_dlpack(struct DLManagedTensor *m)
{
    ff_backend *be = ff_backend_default();
    return be ? ff_from_dlpack_on(be, m) : NULL;
}
