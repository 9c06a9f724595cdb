/* Tensors: a refcounted header (dtype + layout + autograd fields) over a refcounted
 * storage owned by a backend. Views are new headers over the same storage. */
#include <stdlib.h>
#include <string.h>

#include "ff_impl.h"
#include "ff_backend_scalar.h" /* the f16/bf16 -> double conversions */

/* Headers come from malloc, then get their fields assigned: glibc's calloc bypasses
 * the per-thread cache, and header allocation is a visible share of a tiny op's cost
 * (gcc turns malloc + memset back into calloc, hence the struct assignments). */
static ff_storage *storage_alloc(void)
{
    ff_storage *s = malloc(sizeof *s);
    if (s) *s = (ff_storage){.buf = NULL};
    return s;
}

static ff_tensor *tensor_alloc(void)
{
    ff_tensor *t = malloc(sizeof *t);
    if (t) *t = (ff_tensor){.storage = NULL};
    return t;
}

static ff_storage *storage_new(ff_backend *be, size_t nbytes, const char *fn)
{
    ff_storage *s = storage_alloc();
    if (!s) {
        ff_error(FF_ERR_OOM, "%s: out of memory for a storage header", fn);
        return NULL;
    }
    ff_clear_error();
    s->buf = be->vt->alloc(be->ctx, nbytes);
    if (!s->buf) {
        free(s);
        if (!ff_last_error()[0]) ff_error_set_message("backend '%s' could not allocate %zu bytes", be->name, nbytes);
        ff_error_prefix(fn);
        ff_error(FF_ERR_OOM, "%s", ff_last_error());
        return NULL;
    }
    atomic_init(&s->refcount, 1);
    atomic_init(&s->version, 0);
    s->backend = be;
    s->nbytes = nbytes;
    FF_OBSERVE(storage_new, s);
    return s;
}

void ff_storage_release(ff_storage *s)
{
    if (!s || atomic_fetch_sub(&s->refcount, 1) != 1) return;
    if (s->observer) s->observer->storage_dead(s->observer, s);
    if (s->release_external)
        s->release_external(s->external_ctx);
    else
        s->backend->vt->free(s->backend->ctx, s->buf);
    free(s);
}

atomic_long ff_live_tensor_count;

long ff_debug_live_tensors(void) { return atomic_load(&ff_live_tensor_count); }

void ff_storage_bump_version(ff_storage *s)
{
    ff_storage_seen(s);
    atomic_fetch_add_explicit(&s->version, 1, memory_order_relaxed);
}

void ff_storage_retain(ff_storage *s) { atomic_fetch_add(&s->refcount, 1); }

ff_tensor *ff_tensor_new(ff_backend *be, int ndim, const int64_t *shape, ff_dtype dtype, const char *fn)
{
    if (!be) return NULL; /* the caller's backend lookup already set the error */
    if ((unsigned)dtype >= FF_DTYPE_COUNT)
        return ff_error(FF_ERR_INVALID, "%s: invalid dtype %d", fn, (int)dtype), NULL;
    ff_layout l;
    int64_t numel, nbytes;
    if (ff_layout_init_contiguous(&l, ndim, shape, fn) || ff_layout_numel(&l, &numel)) return NULL;
    if (ff_mul_overflow_i64(numel, (int64_t)ff_dtype_size(dtype), &nbytes))
        return ff_error(FF_ERR_OVERFLOW, "%s: %lld elements of %s overflow the byte count", fn, (long long)numel,
                        ff_dtype_name(dtype)), NULL;
    ff_tensor *t = tensor_alloc();
    if (!t) return ff_error(FF_ERR_OOM, "%s: out of memory for a tensor header", fn), NULL;
    t->storage = storage_new(be, (size_t)nbytes, fn);
    if (!t->storage) {
        free(t);
        return NULL;
    }
    atomic_init(&t->refcount, 1);
    atomic_fetch_add(&ff_live_tensor_count, 1);
    t->storage->fresh = true; /* its op's own first write is no modification */
    t->dtype = dtype;
    t->layout = l;
    return t;
}

ff_tensor *ff_tensor_new_like(const ff_tensor *src, ff_dtype dtype, const char *fn)
{
    const ff_layout *l = &src->layout;
    ff_tensor *t = ff_tensor_new(src->storage->backend, l->ndim, l->shape, dtype, fn);
    /* the same element count, so the storage fits src's strides from offset 0 */
    if (t && ff_layout_is_dense(l)) memcpy(t->layout.strides, l->strides, sizeof(int64_t) * (size_t)l->ndim);
    return t;
}

ff_tensor *ff_tensor_new_view(const ff_tensor *src, const ff_layout *l)
{
    ff_tensor *t = tensor_alloc();
    if (!t) return ff_error(FF_ERR_OOM, "out of memory for a view header"), NULL;
    atomic_init(&t->refcount, 1);
    atomic_fetch_add(&ff_live_tensor_count, 1);
    atomic_fetch_add(&src->storage->refcount, 1);
    t->storage = src->storage;
    t->dtype = src->dtype;
    t->layout = *l;
    return t;
}

ff_tensor *ff_tensor_retain(ff_tensor *t)
{
    if (t) atomic_fetch_add(&t->refcount, 1);
    return t;
}

/* The core knows nothing of the tape: autograd, which is the only code that sets
 * grad_fn, hands over how to drop one when it attaches the first node. */
typedef void (*history_release_fn)(ff_tensor *t, struct ff_node *node);
static _Atomic(history_release_fn) history_release; /* set from any thread that records */

void ff_tensor_set_history_release(void (*release)(ff_tensor *t, struct ff_node *node))
{
    atomic_store_explicit(&history_release, release, memory_order_relaxed);
}

void ff_tensor_release(ff_tensor *t)
{
    if (!t || atomic_fetch_sub(&t->refcount, 1) != 1) return;
    ff_tensor_release(t->grad);
    for (ff_tensor_hook *h = t->hooks, *next; h; h = next) next = h->next, free(h);
    if (t->grad_fn) atomic_load_explicit(&history_release, memory_order_relaxed)(t, t->grad_fn);
    ff_tensor_release(t->view_base);
    ff_storage_release(t->storage);
    free(t);
    atomic_fetch_sub(&ff_live_tensor_count, 1);
}

void ff_tensor_view_layout(const ff_tensor *t, const ff_layout *l, ff_view *v)
{
    /* layouts keep unused trailing dims zeroed, so whole-array copies are exact */
    v->buf = t->storage->buf;
    v->offset = l->offset;
    v->dtype = t->dtype;
    v->ndim = l->ndim;
    memcpy(v->shape, l->shape, sizeof v->shape);
    memcpy(v->strides, l->strides, sizeof v->strides);
}

void ff_tensor_view(const ff_tensor *t, ff_view *v) { ff_tensor_view_layout(t, &t->layout, v); }

/* ---- queries ---------------------------------------------------------------- */
int ff_tensor_ndim(const ff_tensor *t) { return t ? t->layout.ndim : -1; }

int64_t ff_tensor_dim(const ff_tensor *t, int axis)
{
    int a;
    if (!t) return -1;
    if (ff_layout_normalize_axis(axis, t->layout.ndim, &a, "ff_tensor_dim")) return -1;
    return t->layout.shape[a];
}

const int64_t *ff_tensor_shape(const ff_tensor *t) { return t ? t->layout.shape : NULL; }
const int64_t *ff_tensor_strides(const ff_tensor *t) { return t ? t->layout.strides : NULL; }
int64_t ff_tensor_offset(const ff_tensor *t) { return t ? t->layout.offset : -1; }
uint64_t ff_tensor_version(const ff_tensor *t) { return t ? atomic_load(&t->storage->version) : 0; }
ff_dtype ff_tensor_dtype(const ff_tensor *t) { return t ? t->dtype : FF_DTYPE_COUNT; }
ff_backend *ff_tensor_backend(const ff_tensor *t) { return t ? t->storage->backend : NULL; }
bool ff_tensor_is_contiguous(const ff_tensor *t) { return t && ff_layout_is_contiguous(&t->layout); }

int64_t ff_tensor_numel(const ff_tensor *t)
{
    int64_t n = 1;
    if (!t) return -1;
    for (int d = 0; d < t->layout.ndim; d++) n *= t->layout.shape[d]; /* checked at creation */
    return n;
}

bool ff_tensor_shares_storage(const ff_tensor *a, const ff_tensor *b)
{
    return a && b && a->storage == b->storage;
}

void *ff_tensor_data_ptr(const ff_tensor *t)
{
    if (!t || !(t->storage->backend->vt->flags & FF_BACKEND_HOST_MEMORY)) return NULL;
    return (char *)t->storage->buf + t->layout.offset * (int64_t)ff_dtype_size(t->dtype);
}

/* ---- host transfer --------------------------------------------------------- */
ff_status ff_tensor_to_host(const ff_tensor *t, void *dst, size_t nbytes)
{
    static const char fn[] = "ff_tensor_to_host";
    if (!t || (!dst && nbytes)) return ff_error(FF_ERR_INVALID, "%s: NULL argument", fn);
    size_t want = (size_t)ff_tensor_numel(t) * ff_dtype_size(t->dtype);
    if (nbytes != want)
        return ff_error(FF_ERR_INVALID, "%s: buffer has %zu bytes, tensor of %lld %s needs %zu", fn, nbytes,
                        (long long)ff_tensor_numel(t), ff_dtype_name(t->dtype), want);
    if (want == 0) return FF_OK;
    ff_backend *be = t->storage->backend;
    const ff_tensor *src = t;
    ff_tensor *tmp = NULL;
    if (!ff_layout_is_contiguous(&t->layout)) {
        tmp = ff_tensor_new(be, t->layout.ndim, t->layout.shape, t->dtype, fn);
        if (!tmp || ff_kernel_copy(tmp, t, fn)) {
            ff_tensor_release(tmp);
            return ff_last_status();
        }
        src = tmp;
    }
    ff_clear_error();
    size_t off = (size_t)src->layout.offset * ff_dtype_size(t->dtype);
    ff_status st = be->vt->download(be->ctx, src->storage->buf, off, dst, nbytes);
    if (!st) FF_OBSERVE(host_read, src->storage, off, dst, nbytes, t->dtype);
    ff_tensor_release(tmp);
    if (st) {
        ff_error_prefix(fn);
        return ff_error(st, "%s", ff_last_error());
    }
    return FF_OK;
}

static double scalar_as_double(const void *p, ff_dtype t)
{
    switch (t) {
    case FF_F32: return *(const float *)p;
    case FF_F64: return *(const double *)p;
    case FF_I32: return *(const int32_t *)p;
    case FF_I64: return (double)*(const int64_t *)p;
    case FF_U8: return *(const uint8_t *)p;
    case FF_BOOL: return *(const uint8_t *)p != 0;
    case FF_F16: case FF_BF16: case FF_I8: case FF_I16: return ffb_ld_f64(p, t); /* exact */
    default: return 0;
    }
}

static ff_status read_element(const ff_tensor *t, int64_t elem, void *out, const char *fn)
{
    ff_backend *be = t->storage->backend;
    size_t es = ff_dtype_size(t->dtype);
    ff_clear_error();
    ff_status st = be->vt->download(be->ctx, t->storage->buf, (size_t)elem * es, out, es);
    if (!st) FF_OBSERVE(host_read, t->storage, (size_t)elem * es, out, es, t->dtype);
    if (st) {
        ff_error_prefix(fn);
        return ff_error(st, "%s", ff_last_error());
    }
    return FF_OK;
}

ff_status ff_tensor_get(const ff_tensor *t, const int64_t *idx, double *out)
{
    static const char fn[] = "ff_tensor_get";
    if (!t || !out || (t->layout.ndim && !idx)) return ff_error(FF_ERR_INVALID, "%s: NULL argument", fn);
    int64_t e = t->layout.offset;
    for (int d = 0; d < t->layout.ndim; d++) {
        if (idx[d] < 0 || idx[d] >= t->layout.shape[d])
            return ff_error(FF_ERR_INDEX, "%s: index %lld out of range for dim %d of size %lld", fn,
                            (long long)idx[d], d, (long long)t->layout.shape[d]);
        e += idx[d] * t->layout.strides[d];
    }
    unsigned char buf[8];
    ff_status st = read_element(t, e, buf, fn);
    if (!st) *out = scalar_as_double(buf, t->dtype);
    return st;
}

ff_status ff_tensor_item(const ff_tensor *t, double *out)
{
    if (!t || !out) return ff_error(FF_ERR_INVALID, "ff_tensor_item: NULL argument");
    if (ff_tensor_numel(t) != 1)
        return ff_error(FF_ERR_INVALID, "ff_tensor_item: tensor has %lld elements, expected 1",
                        (long long)ff_tensor_numel(t));
    unsigned char buf[8];
    ff_status st = read_element(t, t->layout.offset, buf, "ff_tensor_item");
    if (!st) *out = scalar_as_double(buf, t->dtype);
    return st;
}

ff_status ff_tensor_item_i64(const ff_tensor *t, int64_t *out)
{
    if (!t || !out) return ff_error(FF_ERR_INVALID, "ff_tensor_item_i64: NULL argument");
    if (ff_tensor_numel(t) != 1)
        return ff_error(FF_ERR_INVALID, "ff_tensor_item_i64: tensor has %lld elements, expected 1",
                        (long long)ff_tensor_numel(t));
    unsigned char buf[8];
    ff_status st = read_element(t, t->layout.offset, buf, "ff_tensor_item_i64");
    if (st) return st;
    switch (t->dtype) {
    case FF_I64: *out = *(int64_t *)buf; break;
    case FF_I32: *out = *(int32_t *)buf; break;
    case FF_U8: case FF_BOOL: *out = buf[0]; break;
    default: *out = (int64_t)scalar_as_double(buf, t->dtype); break;
    }
    return FF_OK;
}
