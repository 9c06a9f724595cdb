/* View ops: a new tensor header over the same storage, plus the autograd node that
 * routes the gradient back (reshape back, permute back, sum over expanded axes,
 * scatter into zeros for slices). */
#include <stdlib.h>
#include <string.h>

#include "ff_impl.h"

/* Wraps layout l of t as a view and records `name` with backward bw (params in ip). */
static ff_tensor *make_view(const ff_tensor *t, const ff_layout *l, const char *name, ff_backward_fn bw,
                            const int64_t *ip, int nip)
{
    ff_tensor *r = ff_tensor_new_view(t, l);
    if (!r) return NULL;
    ff_view_track(r, t);
    if (ff_autograd_needed(1, &t)) {
        ff_node *node = ff_autograd_record(r, name, bw, 1, &t);
        if (!node) {
            ff_tensor_release(r);
            return NULL;
        }
        if (nip) memcpy(node->ip, ip, sizeof(int64_t) * (size_t)nip); /* ip may be NULL when nip == 0 */
        node->nip = nip;
    }
    return r;
}

static const ff_tensor *in0(ff_node *n) { return n->inputs[0]; }

/* ---- reshape family: the gradient is reshaped back to the input's shape ---- */
static ff_status reshape_backward(ff_node *n, const ff_tensor *g, ff_tensor **gi)
{
    gi[0] = ff_reshape(g, in0(n)->layout.ndim, in0(n)->layout.shape);
    return gi[0] ? FF_OK : ff_last_status();
}

static ff_tensor *reshape_impl(const ff_tensor *t, int ndim, const int64_t *shape, bool allow_copy, const char *fn)
{
    if (!t || (ndim && !shape)) return ff_error(FF_ERR_INVALID, "%s: NULL argument", fn), NULL;
    int64_t resolved[FF_MAX_DIMS];
    if (ff_layout_infer_shape(ff_tensor_numel(t), ndim, shape, resolved, fn)) return NULL;
    ff_layout l;
    if (ff_layout_reshape_view(&t->layout, ndim, resolved, &l) == FF_OK)
        return make_view(t, &l, "reshape", reshape_backward, NULL, 0);
    if (!allow_copy) {
        char b[160];
        return ff_error(FF_ERR_INVALID, "%s: cannot view a tensor with strides %s as shape %s without a copy; use ff_reshape",
                        fn, ff_shape_str(t->layout.ndim, t->layout.strides, b, sizeof b),
                        ff_shape_str(ndim, resolved, (char[160]){0}, 160)), NULL;
    }
    ff_tensor *c = ff_contiguous(t);
    if (!c) return NULL;
    ff_tensor *r = reshape_impl(c, ndim, resolved, false, fn);
    ff_tensor_release(c);
    return r;
}

ff_tensor *ff_reshape(const ff_tensor *t, int ndim, const int64_t *shape)
{
    return reshape_impl(t, ndim, shape, true, "ff_reshape");
}

ff_tensor *ff_reshape_view(const ff_tensor *t, int ndim, const int64_t *shape)
{
    return reshape_impl(t, ndim, shape, false, "ff_reshape_view");
}

ff_tensor *ff_flatten(const ff_tensor *t, int start_axis, int end_axis)
{
    static const char fn[] = "ff_flatten";
    if (!t) return ff_error(FF_ERR_INVALID, "%s: tensor is NULL", fn), NULL;
    int nd = t->layout.ndim;
    if (nd == 0) return ff_reshape(t, 1, (int64_t[]){1});
    int s, e;
    if (ff_layout_normalize_axis(start_axis, nd, &s, fn) || ff_layout_normalize_axis(end_axis, nd, &e, fn)) return NULL;
    if (s > e) return ff_error(FF_ERR_INVALID, "%s: start axis %d is after end axis %d", fn, start_axis, end_axis), NULL;
    int64_t shape[FF_MAX_DIMS];
    int k = 0;
    for (int d = 0; d < s; d++) shape[k++] = t->layout.shape[d];
    int64_t m = 1;
    for (int d = s; d <= e; d++) m *= t->layout.shape[d];
    shape[k++] = m;
    for (int d = e + 1; d < nd; d++) shape[k++] = t->layout.shape[d];
    return ff_reshape(t, k, shape);
}

static ff_tensor *layout_view(const ff_tensor *t, ff_status st, const ff_layout *l)
{
    return st ? NULL : make_view(t, l, "reshape", reshape_backward, NULL, 0);
}

ff_tensor *ff_squeeze(const ff_tensor *t, int axis)
{
    if (!t) return ff_error(FF_ERR_INVALID, "ff_squeeze: tensor is NULL"), NULL;
    ff_layout l;
    return layout_view(t, ff_layout_squeeze(&t->layout, axis, &l, "ff_squeeze"), &l);
}

ff_tensor *ff_unsqueeze(const ff_tensor *t, int axis)
{
    if (!t) return ff_error(FF_ERR_INVALID, "ff_unsqueeze: tensor is NULL"), NULL;
    ff_layout l;
    return layout_view(t, ff_layout_unsqueeze(&t->layout, axis, &l, "ff_unsqueeze"), &l);
}

ff_tensor *ff_squeeze_all(const ff_tensor *t)
{
    if (!t) return ff_error(FF_ERR_INVALID, "ff_squeeze_all: tensor is NULL"), NULL;
    int64_t shape[FF_MAX_DIMS];
    int k = 0;
    for (int d = 0; d < t->layout.ndim; d++)
        if (t->layout.shape[d] != 1) shape[k++] = t->layout.shape[d];
    return ff_reshape(t, k, shape);
}

/* ---- permute --------------------------------------------------------------- */
static ff_status permute_backward(ff_node *n, const ff_tensor *g, ff_tensor **gi)
{
    int inv[FF_MAX_DIMS];
    for (int d = 0; d < n->nip; d++) inv[n->ip[d]] = d;
    gi[0] = ff_permute(g, inv);
    return gi[0] ? FF_OK : ff_last_status();
}

ff_tensor *ff_permute(const ff_tensor *t, const int *perm)
{
    static const char fn[] = "ff_permute";
    if (!t || (t->layout.ndim && !perm)) return ff_error(FF_ERR_INVALID, "%s: NULL argument", fn), NULL;
    ff_layout l;
    if (ff_layout_permute(&t->layout, perm, &l, fn)) return NULL;
    int64_t ip[FF_MAX_DIMS];
    for (int d = 0; d < t->layout.ndim; d++) ip[d] = perm[d] < 0 ? perm[d] + t->layout.ndim : perm[d];
    return make_view(t, &l, "permute", permute_backward, ip, t->layout.ndim);
}

ff_tensor *ff_transpose(const ff_tensor *t, int axis0, int axis1)
{
    static const char fn[] = "ff_transpose";
    if (!t) return ff_error(FF_ERR_INVALID, "%s: tensor is NULL", fn), NULL;
    int nd = t->layout.ndim, a, b;
    if (ff_layout_normalize_axis(axis0, nd, &a, fn) || ff_layout_normalize_axis(axis1, nd, &b, fn)) return NULL;
    int perm[FF_MAX_DIMS];
    for (int d = 0; d < nd; d++) perm[d] = d;
    perm[a] = b;
    perm[b] = a;
    return ff_permute(t, perm);
}

ff_tensor *ff_mT(const ff_tensor *t)
{
    if (t && t->layout.ndim < 2)
        return ff_error(FF_ERR_INVALID, "ff_mT: needs rank >= 2, got %d", t->layout.ndim), NULL;
    return ff_transpose(t, -2, -1);
}

/* ---- expand: the gradient sums over the broadcast axes ---------------------- */
static ff_status expand_backward(ff_node *n, const ff_tensor *g, ff_tensor **gi)
{
    gi[0] = ff_sum_to_shape(g, in0(n)->layout.ndim, in0(n)->layout.shape);
    return gi[0] ? FF_OK : ff_last_status();
}

ff_tensor *ff_expand(const ff_tensor *t, int ndim, const int64_t *shape)
{
    if (!t || (ndim && !shape)) return ff_error(FF_ERR_INVALID, "ff_expand: NULL argument"), NULL;
    ff_layout l;
    if (ff_layout_expand(&t->layout, ndim, shape, &l, "ff_expand")) return NULL;
    return make_view(t, &l, "expand", expand_backward, NULL, 0);
}

ff_tensor *ff_broadcast_to(const ff_tensor *t, int ndim, const int64_t *shape)
{
    for (int d = 0; shape && d < ndim; d++)
        if (shape[d] < 0) return ff_error(FF_ERR_INVALID, "ff_broadcast_to: negative size in target shape"), NULL;
    return ff_expand(t, ndim, shape);
}

/* ---- slice / select: the gradient is scattered into zeros -------------------- */
/* ip: [0] axis, [1] start, [2] step, [3] 1 if select (dropped axis) */
static ff_tensor *slice_backward_op(const ff_tensor *g, const ff_tensor *input_like, const int64_t *ip);

static ff_status slice_backward(ff_node *n, const ff_tensor *g, ff_tensor **gi)
{
    gi[0] = slice_backward_op(g, in0(n), n->ip);
    return gi[0] ? FF_OK : ff_last_status();
}

/* The gradient of slice_backward is the slice again. */
static ff_status slice_backward_backward(ff_node *n, const ff_tensor *gg, ff_tensor **gi)
{
    int axis = (int)n->ip[0];
    if (n->ip[3]) {
        gi[0] = ff_select(gg, axis, n->ip[1]);
    } else {
        const ff_tensor *g = n->inputs[0];
        gi[0] = ff_slice(gg, axis, n->ip[1], n->ip[1] + g->layout.shape[axis] * n->ip[2], n->ip[2]);
    }
    return gi[0] ? FF_OK : ff_last_status();
}

/* zeros shaped like the slice's input, with g written into the sliced region. */
static ff_tensor *slice_backward_op(const ff_tensor *g, const ff_tensor *input_like, const int64_t *ip)
{
    static const char fn[] = "slice_backward";
    ff_tensor *r = ff_tensor_new(g->storage->backend, input_like->layout.ndim, input_like->layout.shape, g->dtype, fn);
    if (!r) return NULL;
    ff_layout region;
    int axis = (int)ip[0];
    ff_status st = ip[3] ? ff_layout_select(&r->layout, axis, ip[1], &region, fn)
                         : ff_layout_slice(&r->layout, axis, ip[1], ip[1] + g->layout.shape[axis] * ip[2], ip[2],
                                           &region, fn);
    ff_tensor *dst = st ? NULL : ff_tensor_new_view(r, &region);
    if (!dst || ff_kernel_fill(r, 0.0, fn) || ff_kernel_copy(dst, g, fn)) {
        ff_tensor_release(dst);
        ff_tensor_release(r);
        return NULL;
    }
    ff_tensor_release(dst);
    if (ff_autograd_needed(1, &g)) {
        ff_node *node = ff_autograd_record(r, fn, slice_backward_backward, 1, &g);
        if (!node) {
            ff_tensor_release(r);
            return NULL;
        }
        memcpy(node->ip, ip, sizeof(int64_t) * 4);
    }
    return r;
}

ff_tensor *ff_slice(const ff_tensor *t, int axis, int64_t start, int64_t stop, int64_t step)
{
    static const char fn[] = "ff_slice";
    if (!t) return ff_error(FF_ERR_INVALID, "%s: tensor is NULL", fn), NULL;
    ff_layout l;
    if (ff_layout_slice(&t->layout, axis, start, stop, step, &l, fn)) return NULL;
    int a = 0;
    ff_layout_normalize_axis(axis, t->layout.ndim, &a, fn);
    int64_t s = start, e = stop;
    ff_slice_bounds(t->layout.shape[a], &s, &e);
    /* the gradient re-slices start + count * step: with one element or none, step 1 takes
     * the same region and cannot overflow (a step near INT64_MAX dropped the gradient) */
    int64_t ip[4] = {a, s, l.shape[a] > 1 ? step : 1, 0};
    return make_view(t, &l, "slice", slice_backward, ip, 4);
}

ff_tensor *ff_narrow(const ff_tensor *t, int axis, int64_t start, int64_t length)
{
    static const char fn[] = "ff_narrow";
    if (!t) return ff_error(FF_ERR_INVALID, "%s: tensor is NULL", fn), NULL;
    int a = 0;
    if (ff_layout_normalize_axis(axis, t->layout.ndim, &a, fn)) return NULL;
    int64_t n = t->layout.shape[a];
    if (start < 0) start += n;
    if (start < 0 || length < 0 || start + length > n)
        return ff_error(FF_ERR_INDEX, "%s: [%lld, %lld) out of range for axis %d of size %lld", fn, (long long)start,
                        (long long)(start + length), axis, (long long)n), NULL;
    return ff_slice(t, a, start, start + length, 1);
}

ff_tensor *ff_select(const ff_tensor *t, int axis, int64_t index)
{
    static const char fn[] = "ff_select";
    if (!t) return ff_error(FF_ERR_INVALID, "%s: tensor is NULL", fn), NULL;
    ff_layout l;
    if (ff_layout_select(&t->layout, axis, index, &l, fn)) return NULL;
    int a = 0;
    ff_layout_normalize_axis(axis, t->layout.ndim, &a, fn);
    int64_t ip[4] = {a, index < 0 ? index + t->layout.shape[a] : index, 1, 1};
    return make_view(t, &l, "select", slice_backward, ip, 4);
}

/* ---- copies that keep history --------------------------------------------- */
static ff_status identity_backward(ff_node *n, const ff_tensor *g, ff_tensor **gi)
{
    gi[0] = ff_tensor_retain((ff_tensor *)g);
    return FF_OK;
}

ff_tensor *ff_clone(const ff_tensor *t)
{
    static const char fn[] = "ff_clone";
    if (!t) return ff_error(FF_ERR_INVALID, "%s: tensor is NULL", fn), NULL;
    ff_tensor *r = ff_tensor_new(t->storage->backend, t->layout.ndim, t->layout.shape, t->dtype, fn);
    if (!r) return NULL;
    if (ff_kernel_copy(r, t, fn) ||
        (ff_autograd_needed(1, &t) && !ff_autograd_record(r, "clone", identity_backward, 1, &t))) {
        ff_tensor_release(r);
        return NULL;
    }
    return r;
}

ff_tensor *ff_contiguous(const ff_tensor *t)
{
    if (!t) return ff_error(FF_ERR_INVALID, "ff_contiguous: tensor is NULL"), NULL;
    if (ff_layout_is_contiguous(&t->layout)) return ff_tensor_retain((ff_tensor *)t);
    return ff_clone(t);
}

ff_tensor *ff_detach(const ff_tensor *t)
{
    if (!t) return ff_error(FF_ERR_INVALID, "ff_detach: tensor is NULL"), NULL;
    return ff_tensor_new_view(t, &t->layout);
}

static ff_status astype_backward(ff_node *n, const ff_tensor *g, ff_tensor **gi)
{
    gi[0] = ff_astype(g, in0(n)->dtype);
    return gi[0] ? FF_OK : ff_last_status();
}

ff_tensor *ff_astype(const ff_tensor *t, ff_dtype dtype)
{
    static const char fn[] = "ff_astype";
    if (!t) return ff_error(FF_ERR_INVALID, "%s: tensor is NULL", fn), NULL;
    /* t's strides kept where dense (torch's preserve_format): autocast's cast of W^T is
     * then one straight pass over W, and the half W^T reaches matmul as a transpose */
    ff_tensor *r = ff_tensor_new_like(t, dtype, fn);
    if (!r) return NULL;
    if (ff_kernel_copy(r, t, fn)) {
        ff_tensor_release(r);
        return NULL;
    }
    /* gradients flow only between float dtypes */
    if (ff_dtype_has_grad(dtype) && ff_autograd_needed(1, &t) &&
        !ff_autograd_record(r, "astype", astype_backward, 1, &t)) {
        ff_tensor_release(r);
        return NULL;
    }
    return r;
}

/* ---- moving between backends ---------------------------------------------- */
static ff_status to_backward(ff_node *n, const ff_tensor *g, ff_tensor **gi)
{
    gi[0] = ff_to(g, in0(n)->storage->backend);
    return gi[0] ? FF_OK : ff_last_status();
}

ff_tensor *ff_to(const ff_tensor *t, ff_backend *be)
{
    static const char fn[] = "ff_to";
    if (!t || !be) return ff_error(FF_ERR_INVALID, "%s: NULL argument", fn), NULL;
    if (t->storage->backend == be) return ff_tensor_retain((ff_tensor *)t);
    ff_tensor *src = ff_contiguous(t);
    if (!src) return NULL;
    size_t nbytes = (size_t)ff_tensor_numel(src) * ff_dtype_size(src->dtype);
    const int ndim = src->layout.ndim;
    const int64_t *shape = src->layout.shape;
    ff_tensor *r = NULL;
    const void *src_host = ff_tensor_data_ptr(src); /* non-NULL on a host-memory backend */
    if (src_host) { /* one upload from the source's own memory */
        r = ff_from_data_on(be, src_host, ndim, shape, src->dtype);
    } else if (be->vt->flags & FF_BACKEND_HOST_MEMORY) { /* one download into the new tensor */
        r = ff_empty_on(be, ndim, shape, src->dtype);
        if (r && ff_tensor_to_host(src, ff_tensor_data_ptr(r), nbytes) != FF_OK) {
            ff_tensor_release(r);
            r = NULL;
        }
    } else { /* device to device: through a staging buffer */
        void *host = malloc(nbytes ? nbytes : 1);
        if (!host) ff_error(FF_ERR_OOM, "%s: out of memory for a %zu-byte staging buffer", fn, nbytes);
        else if (ff_tensor_to_host(src, host, nbytes) == FF_OK) r = ff_from_data_on(be, host, ndim, shape, src->dtype);
        free(host);
    }
    ff_tensor_release(src);
    if (r && ff_autograd_needed(1, &t) && !ff_autograd_record(r, "to", to_backward, 1, &t)) {
        ff_tensor_release(r);
        return NULL;
    }
    return r;
}
