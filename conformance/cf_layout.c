/* Operand layouts: turns (logical shape, layout kind) into an exact buffer with an
 * offset and strides, and moves logical elements in and out of such buffers. */
#include <stdlib.h>
#include <string.h>

#include "cf.h"

const char *cf_layout_name(cf_layout_kind k)
{
    static const char *const names[CF_L_COUNT] = {"contig", "offset", "transposed", "stepped", "bcast0", "bcastlast", "padded"};
    return (unsigned)k < CF_L_COUNT ? names[k] : "?";
}

int64_t cf_numel(int ndim, const int64_t *shape)
{
    int64_t n = 1;
    for (int d = 0; d < ndim; d++) n *= shape[d];
    return n;
}

static void *xcalloc(size_t n, size_t sz)
{
    void *p = calloc(n ? n : 1, sz ? sz : 1);
    if (!p) {
        /* the suite cannot run without memory: nothing sensible to report per case */
        abort();
    }
    return p;
}

static void rowmajor(int ndim, const int64_t *shape, int64_t *strides, int64_t mult)
{
    int64_t s = mult;
    for (int d = ndim - 1; d >= 0; d--) {
        strides[d] = s;
        s *= shape[d] > 0 ? shape[d] : 1;
    }
}

void cf_operand_init(cf_operand *o, const char *name, ff_dtype dt, int ndim, const int64_t *shape,
                     cf_layout_kind lk, bool output, cf_rng *rng, cf_domain dom)
{
    memset(o, 0, sizeof *o);
    o->name = name;
    o->dtype = dt;
    o->ndim = ndim;
    o->output = output;
    o->alias = -1;
    for (int d = 0; d < ndim; d++) o->shape[d] = shape[d];
    int64_t off = 0;
    switch (lk) {
    case CF_L_OFFSET: rowmajor(ndim, shape, o->strides, 1); off = 5; break;
    case CF_L_TRANSPOSED: {
        int64_t s = 1;
        for (int d = 0; d < ndim; d++) {
            o->strides[d] = s;
            s *= shape[d] > 0 ? shape[d] : 1;
        }
        break;
    }
    case CF_L_PADDED: {
        int64_t parent[FF_MAX_DIMS];
        for (int d = 0; d < ndim; d++) parent[d] = shape[d] + (d == ndim - 1 ? 3 : 0);
        rowmajor(ndim, parent, o->strides, 1);
        off = 2;
        break;
    }
    case CF_L_STEPPED: {
        int64_t parent[FF_MAX_DIMS];
        for (int d = 0; d < ndim; d++) parent[d] = 2 * shape[d] + 1;
        rowmajor(ndim, parent, o->strides, 1);
        for (int d = 0; d < ndim; d++) o->strides[d] *= 2;
        off = 1;
        break;
    }
    case CF_L_BCAST0:
    case CF_L_BCASTLAST: {
        int axis = lk == CF_L_BCAST0 ? 0 : ndim - 1;
        int64_t tmp[FF_MAX_DIMS];
        for (int d = 0; d < ndim; d++) tmp[d] = d == axis ? 1 : shape[d];
        rowmajor(ndim, tmp, o->strides, 1);
        if (ndim > 0) o->strides[axis] = 0;
        break;
    }
    default: rowmajor(ndim, shape, o->strides, 1); break;
    }
    int64_t span = cf_numel(ndim, shape) > 0 ? 1 : 0;
    if (span)
        for (int d = 0; d < ndim; d++) span += (shape[d] - 1) * o->strides[d];
    int64_t pad = output ? CF_GUARD_ELEMS : 3;
    o->offset = off + (output ? CF_GUARD_ELEMS : 0);
    o->nelems = o->offset + span + pad;
    size_t sz = ff_dtype_size(dt);
    o->init = xcalloc((size_t)o->nelems, sz);
    if (output) memset(o->init, CF_SENTINEL, (size_t)o->nelems * sz);
    else cf_fill_values(rng, o->init, dt, o->nelems, dom);
}

void cf_operand_alias(cf_operand *o, const char *name, const cf_operand *of, int of_index)
{
    *o = *of;
    o->name = name;
    o->output = true;
    o->alias = of_index;
    o->init = NULL; /* the buffer is of's */
}

void cf_call_free(cf_call *c)
{
    for (int i = 0; i < c->nops; i++) {
        if (c->o[i].alias < 0) free(c->o[i].init);
        c->o[i].init = NULL;
    }
}

/* Calls fn(flat logical index, element offset) for every element in row-major order. */
#define CF_FOR_EACH(o, body)                                                     \
    do {                                                                         \
        int64_t idx_[FF_MAX_DIMS] = {0}, n_ = cf_numel((o)->ndim, (o)->shape);   \
        int64_t off_ = (o)->offset;                                              \
        for (int64_t flat_ = 0; flat_ < n_; flat_++) {                           \
            body;                                                                \
            for (int d_ = (o)->ndim - 1; d_ >= 0; d_--) {                        \
                if (++idx_[d_] < (o)->shape[d_]) {                               \
                    off_ += (o)->strides[d_];                                    \
                    break;                                                       \
                }                                                                \
                idx_[d_] = 0;                                                    \
                off_ -= (o)->strides[d_] * ((o)->shape[d_] - 1);                 \
            }                                                                    \
        }                                                                        \
    } while (0)

void *cf_operand_gather(const cf_operand *o, const unsigned char *buf)
{
    size_t sz = ff_dtype_size(o->dtype);
    unsigned char *out = xcalloc((size_t)cf_numel(o->ndim, o->shape), sz);
    CF_FOR_EACH(o, memcpy(out + (size_t)flat_ * sz, buf + (size_t)off_ * sz, sz));
    return out;
}

void cf_operand_scatter(cf_operand *o, const void *vals)
{
    size_t sz = ff_dtype_size(o->dtype);
    const unsigned char *v = vals;
    CF_FOR_EACH(o, memcpy(o->init + (size_t)off_ * sz, v + (size_t)flat_ * sz, sz));
}

/* Marks, per element of the buffer, whether the view covers it (guards use it). */
unsigned char *cf_operand_coverage(const cf_operand *o)
{
    unsigned char *m = xcalloc((size_t)o->nelems, 1);
    CF_FOR_EACH(o, m[off_] = 1);
    return m;
}
