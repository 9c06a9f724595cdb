/* Joining and splitting along an axis: concat and stack copy into slices of one new
 * tensor; split and chunk return views (ff_narrow), so they cost nothing and their
 * gradients come from the slice nodes. */
#include <stdlib.h>

#include "ops_impl.h"

/* Input i of a node, counting the extra inputs past FF_NODE_MAX_INPUTS. */
static ff_tensor *node_input(const ff_node *n, int i)
{
    return i < n->n_inputs ? n->inputs[i] : n->extra[i - n->n_inputs];
}

/* ip[0] axis. Input i gets the slice of g it was copied into. */
static ff_status concat_backward(ff_node *n, const ff_tensor *g, ff_tensor **gi)
{
    int axis = (int)n->ip[0];
    int64_t off = 0;
    for (int i = 0; i < n->n_inputs + n->n_extra; i++) {
        const ff_tensor *in = node_input(n, i);
        int64_t len = in->layout.shape[axis];
        if (in->requires_grad) {
            gi[i] = ff_narrow(g, axis, off, len);
            if (!gi[i]) return ff_last_status();
        }
        off += len;
    }
    return FF_OK;
}

/* Records the concat node; inputs past FF_NODE_MAX_INPUTS go to node->extra (the
 * engine walks inputs, then extra). */
static ff_status concat_record(ff_tensor *out, int n, ff_tensor *const *ts, int axis)
{
    int first = n < FF_NODE_MAX_INPUTS ? n : FF_NODE_MAX_INPUTS;
    ff_node *node = ff_autograd_record(out, "concat", concat_backward, first, (const ff_tensor *const *)ts);
    if (!node) return ff_last_status();
    node->ip[0] = axis;
    node->nip = 1;
    return n == first ? FF_OK : ff_node_add_extra(node, n - first, (const ff_tensor *const *)ts + first);
}

ff_tensor *ff_concat(int n, ff_tensor *const *ts, int axis)
{
    static const char fn[] = "ff_concat";
    if (n <= 0 || !ts) return ff_error(FF_ERR_INVALID, "%s: need at least one tensor, got %d", fn, n), NULL;
    ff_backend *be = ff_common_backend(n, (const ff_tensor *const *)ts, fn);
    if (!be) return NULL;
    const ff_layout *l0 = &ts[0]->layout;
    if (l0->ndim == 0) return ff_error(FF_ERR_INVALID, "%s: cannot concatenate 0-d tensors (use ff_stack)", fn), NULL;
    int a;
    if (ff_layout_normalize_axis(axis, l0->ndim, &a, fn)) return NULL;
    int64_t shape[FF_MAX_DIMS];
    for (int d = 0; d < l0->ndim; d++) shape[d] = l0->shape[d];
    shape[a] = 0;
    ff_dtype dt = ts[0]->dtype;
    for (int i = 0; i < n; i++) {
        const ff_layout *l = &ts[i]->layout;
        bool ok = l->ndim == l0->ndim;
        for (int d = 0; ok && d < l->ndim; d++) ok = d == a || l->shape[d] == l0->shape[d];
        if (!ok) {
            char b1[160], b2[160];
            return ff_error(FF_ERR_INVALID, "%s: tensor %d has shape %s, incompatible with %s outside axis %d", fn, i,
                            ff_shape_str(l->ndim, l->shape, b1, sizeof b1),
                            ff_shape_str(l0->ndim, l0->shape, b2, sizeof b2), a), NULL;
        }
        if (ff_add_overflow_i64(shape[a], l->shape[a], &shape[a]))
            return ff_error(FF_ERR_OVERFLOW, "%s: concatenated size overflows", fn), NULL;
        dt = ff_dtype_promote(dt, ts[i]->dtype);
    }
    ff_tensor *out = ff_tensor_new(be, l0->ndim, shape, dt, fn);
    if (!out) return NULL;
    int64_t off = 0;
    for (int i = 0; i < n; i++) {
        int64_t len = ts[i]->layout.shape[a];
        ff_layout region;
        ff_tensor *dst = NULL;
        if (ff_tensor_numel(ts[i]) > 0 && (ff_layout_slice(&out->layout, a, off, off + len, 1, &region, fn) ||
                                           !(dst = ff_tensor_new_view(out, &region)) ||
                                           ff_kernel_copy(dst, ts[i], fn))) { /* casts too */
            ff_tensor_release(dst);
            ff_tensor_release(out);
            return NULL;
        }
        ff_tensor_release(dst);
        off += len;
    }
    if (ff_dtype_has_grad(dt) && ff_autograd_needed(n, (const ff_tensor *const *)ts) &&
        concat_record(out, n, ts, a)) {
        ff_tensor_release(out);
        return NULL;
    }
    return out;
}

ff_tensor *ff_stack(int n, ff_tensor *const *ts, int axis)
{
    static const char fn[] = "ff_stack";
    if (n <= 0 || !ts) return ff_error(FF_ERR_INVALID, "%s: need at least one tensor, got %d", fn, n), NULL;
    for (int i = 0; i < n; i++)
        if (!ts[i]) return ff_error(FF_ERR_INVALID, "%s: tensor %d is NULL", fn, i), NULL;
    const ff_layout *l0 = &ts[0]->layout;
    for (int i = 1; i < n; i++) {
        const ff_layout *l = &ts[i]->layout;
        bool ok = l->ndim == l0->ndim;
        for (int d = 0; ok && d < l->ndim; d++) ok = l->shape[d] == l0->shape[d];
        if (!ok) {
            char b1[160], b2[160];
            return ff_error(FF_ERR_INVALID, "%s: tensor %d has shape %s, expected %s like tensor 0", fn, i,
                            ff_shape_str(l->ndim, l->shape, b1, sizeof b1),
                            ff_shape_str(l0->ndim, l0->shape, b2, sizeof b2)), NULL;
        }
    }
    int a;
    if (ff_layout_normalize_axis(axis, l0->ndim + 1, &a, fn)) return NULL;
    ff_tensor **us = calloc((size_t)n, sizeof *us);
    if (!us) return ff_error(FF_ERR_OOM, "%s: out of memory", fn), NULL;
    ff_tensor *r = NULL;
    int k = 0;
    while (k < n && (us[k] = ff_unsqueeze(ts[k], a))) k++;
    if (k == n) r = ff_concat(n, us, a);
    for (int i = 0; i < k; i++) ff_tensor_release(us[i]);
    free(us);
    if (!r) ff_error_prefix(fn);
    return r;
}

/* Views of x along axis: pieces of `size` starting at 0 (the last may be shorter). */
static int split_views(const ff_tensor *x, int64_t size, int64_t count, int a, ff_tensor **out, int max_out,
                       const char *fn)
{
    if (!out) return (int)count; /* a query */
    if (count > max_out)
        return ff_error(FF_ERR_INVALID, "%s: %lld pieces do not fit max_out %d", fn, (long long)count, max_out), -1;
    int64_t n = x->layout.shape[a];
    for (int64_t i = 0; i < count; i++) {
        int64_t start = i * size < n ? i * size : n;
        int64_t len = n - start < size ? n - start : size;
        out[i] = ff_narrow(x, a, start, len);
        if (!out[i]) {
            while (i > 0) ff_tensor_release(out[--i]);
            ff_error_prefix(fn);
            return -1;
        }
        out[i]->view_of_many = fn + 3; /* "split", "chunk" */
    }
    return (int)count;
}

static ff_status split_axis(const ff_tensor *x, int axis, int *a, const char *fn)
{
    if (!x) return ff_error(FF_ERR_INVALID, "%s: tensor is NULL", fn);
    if (x->layout.ndim == 0) return ff_error(FF_ERR_INVALID, "%s: cannot split a 0-d tensor", fn);
    return ff_layout_normalize_axis(axis, x->layout.ndim, a, fn);
}

int ff_unbind(const ff_tensor *x, int axis, ff_tensor **out, int max_out)
{
    static const char fn[] = "ff_unbind";
    int a;
    if (split_axis(x, axis, &a, fn)) return -1;
    int64_t n = x->layout.shape[a];
    if (n > INT32_MAX) return ff_error(FF_ERR_INVALID, "%s: %lld pieces are too many", fn, (long long)n), -1;
    if (!out) return (int)n;
    if (n > max_out) return ff_error(FF_ERR_INVALID, "%s: %lld pieces do not fit max_out %d", fn, (long long)n, max_out), -1;
    for (int64_t i = 0; i < n; i++) {
        if (!(out[i] = ff_select(x, a, i))) {
            while (i > 0) ff_tensor_release(out[--i]);
            ff_error_prefix(fn);
            return -1;
        }
        out[i]->view_of_many = fn + 3;
    }
    return (int)n;
}

int ff_split(const ff_tensor *x, int64_t size, int axis, ff_tensor **out, int max_out)
{
    static const char fn[] = "ff_split";
    int a;
    if (split_axis(x, axis, &a, fn)) return -1;
    if (size <= 0) return ff_error(FF_ERR_INVALID, "%s: size must be positive, got %lld", fn, (long long)size), -1;
    int64_t n = x->layout.shape[a];
    int64_t count = n == 0 ? 1 : n / size + (n % size != 0); /* an empty axis gives one empty piece */
    if (count > INT32_MAX) return ff_error(FF_ERR_INVALID, "%s: %lld pieces are too many", fn, (long long)count), -1;
    return split_views(x, size, count, a, out, max_out, fn);
}

int ff_chunk(const ff_tensor *x, int chunks, int axis, ff_tensor **out, int max_out)
{
    static const char fn[] = "ff_chunk";
    int a;
    if (split_axis(x, axis, &a, fn)) return -1;
    if (chunks <= 0) return ff_error(FF_ERR_INVALID, "%s: chunks must be positive, got %d", fn, chunks), -1;
    int64_t n = x->layout.shape[a];
    if (n == 0) return split_views(x, 1, chunks, a, out, max_out, fn); /* chunks empty pieces */
    int64_t size = n / chunks + (n % chunks != 0);
    /* as PyTorch: pieces of ceil(n / chunks), so there may be fewer than chunks */
    return split_views(x, size, n / size + (n % size != 0), a, out, max_out, fn);
}
