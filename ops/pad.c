/* Constant padding and flipping (both copy). pad writes x into the interior of a
 * filled tensor, and its gradient is the interior of g; negative pads crop first
 * (narrow views), as torch.nn.functional.pad. flip gathers each flipped axis with a
 * reversed index (one O(n) pass per axis), and its gradient is flip(g). */
#include <stdlib.h>

#include "ops_impl.h"

/* ---- pad ------------------------------------------------------------------------- */
/* ip: (before, after) per dim, all >= 0. The gradient is the interior of g. */
static ff_status pad_backward(ff_node *n, const ff_tensor *g, ff_tensor **gi)
{
    const ff_tensor *x = n->inputs[0];
    ff_tensor *cur = ff_tensor_retain((ff_tensor *)g);
    for (int d = 0; cur && d < x->layout.ndim; d++) {
        if (n->ip[2 * d] == 0 && n->ip[2 * d + 1] == 0) continue;
        ff_tensor *next = ff_narrow(cur, d, n->ip[2 * d], x->layout.shape[d]);
        ff_tensor_release(cur);
        cur = next;
    }
    gi[0] = cur;
    return cur ? FF_OK : ff_last_status();
}

/* pads are all >= 0 here. */
static ff_tensor *pad_nonneg(const ff_tensor *x, const int64_t *pads, double value, const char *fn)
{
    int nd = x->layout.ndim;
    int64_t shape[FF_MAX_DIMS];
    for (int d = 0; d < nd; d++)
        if (ff_add_overflow_i64(x->layout.shape[d], pads[2 * d], &shape[d]) ||
            ff_add_overflow_i64(shape[d], pads[2 * d + 1], &shape[d]))
            return ff_error(FF_ERR_OVERFLOW, "%s: padded size of dim %d overflows", fn, d), NULL;
    ff_tensor *out = ff_full_on(x->storage->backend, nd, shape, x->dtype, value);
    if (!out) return NULL;
    ff_layout region = out->layout;
    ff_status st = FF_OK;
    for (int d = 0; !st && d < nd; d++)
        st = ff_layout_slice(&region, d, pads[2 * d], pads[2 * d] + x->layout.shape[d], 1, &region, fn);
    ff_tensor *dst = st || ff_tensor_numel(x) == 0 ? NULL : ff_tensor_new_view(out, &region);
    if (st || (ff_tensor_numel(x) > 0 && (!dst || ff_kernel_copy(dst, x, fn)))) {
        ff_tensor_release(dst);
        ff_tensor_release(out);
        return NULL;
    }
    ff_tensor_release(dst);
    if (!ff_dtype_is_float(x->dtype)) return out;
    ff_node *node = ff_op_record_node(&out, "pad", pad_backward, 1, &x, 0, NULL);
    if (node) {
        for (int i = 0; i < 2 * nd; i++) node->ip[i] = pads[i];
        node->nip = 2 * nd;
    }
    return out;
}

ff_tensor *ff_pad(const ff_tensor *x, const int64_t *pads, double value)
{
    static const char fn[] = "ff_pad";
    if (!x || (x->layout.ndim && !pads)) return ff_error(FF_ERR_INVALID, "%s: NULL argument", fn), NULL;
    int nd = x->layout.ndim;
    int64_t pos[2 * FF_MAX_DIMS];
    ff_tensor *cur = ff_tensor_retain((ff_tensor *)x);
    /* negative pads remove elements: narrow first, then pad by the positive parts */
    for (int d = 0; cur && d < nd; d++) {
        int64_t before = pads[2 * d], after = pads[2 * d + 1], n = x->layout.shape[d];
        pos[2 * d] = before > 0 ? before : 0;
        pos[2 * d + 1] = after > 0 ? after : 0;
        if (before >= 0 && after >= 0) continue;
        int64_t start = before < 0 ? -before : 0, stop = after < 0 ? n + after : n;
        if (start > n || stop < start) {
            ff_tensor_release(cur);
            return ff_error(FF_ERR_INVALID, "%s: pads (%lld, %lld) remove more than the %lld elements of dim %d", fn,
                            (long long)before, (long long)after, (long long)n, d), NULL;
        }
        ff_tensor *next = ff_narrow(cur, d, start, stop - start);
        ff_tensor_release(cur);
        cur = next;
    }
    ff_tensor *r = cur ? pad_nonneg(cur, pos, value, fn) : NULL;
    ff_tensor_release(cur);
    return r;
}

/* ---- flip ------------------------------------------------------------------------ */
static ff_status flip_backward(ff_node *n, const ff_tensor *g, ff_tensor **gi)
{
    int axes[FF_MAX_DIMS], na = 0;
    for (int d = 0; d < g->layout.ndim; d++)
        if (n->ip[0] & (1 << d)) axes[na++] = d;
    gi[0] = ff_flip(g, na, axes);
    return gi[0] ? FF_OK : ff_last_status();
}

/* src gathered along axis a with index n-1, ..., 0 broadcast over the other dims. */
static ff_tensor *reverse_axis(const ff_tensor *src, int a, const char *fn)
{
    int64_t n = src->layout.shape[a];
    int64_t *v = malloc(sizeof *v * (size_t)n);
    if (!v) return ff_error(FF_ERR_OOM, "%s: out of memory for %lld indices", fn, (long long)n), NULL;
    for (int64_t i = 0; i < n; i++) v[i] = n - 1 - i;
    ff_backend *be = src->storage->backend;
    ff_tensor *idx = ff_from_data_on(be, v, 1, &n, FF_I64);
    free(v);
    if (!idx) return NULL;
    ff_layout l = src->layout;
    for (int d = 0; d < l.ndim; d++) l.strides[d] = d == a ? 1 : 0;
    l.offset = 0;
    ff_tensor *wide = ff_tensor_new_view(idx, &l);
    ff_tensor *out = wide ? ff_tensor_new(be, l.ndim, l.shape, src->dtype, fn) : NULL;
    if (out && ff_kernel_gather(out, src, wide, a, fn)) {
        ff_tensor_release(out);
        out = NULL;
    }
    ff_tensor_release(wide);
    ff_tensor_release(idx);
    return out;
}

ff_tensor *ff_flip(const ff_tensor *x, int naxes, const int *axes)
{
    static const char fn[] = "ff_flip";
    if (!x) return ff_error(FF_ERR_INVALID, "%s: tensor is NULL", fn), NULL;
    uint32_t mask = 0;
    /* naxes == 0 flips every axis (numpy.flip with axis=None) */
    if (ff_axes_mask(x->layout.ndim, naxes, axes, &mask, fn)) return NULL;
    ff_tensor *cur = ff_tensor_retain((ff_tensor *)x);
    bool copied = false;
    for (int d = 0; cur && d < x->layout.ndim; d++) {
        if (!(mask & (1u << d)) || x->layout.shape[d] <= 1 || ff_tensor_numel(x) == 0) continue;
        ff_tensor *next = reverse_axis(cur, d, fn);
        ff_tensor_release(cur);
        cur = next;
        copied = true;
    }
    if (cur && !copied) { /* nothing to reverse: still a copy, as every shape op here */
        ff_tensor *c = ff_tensor_new(x->storage->backend, x->layout.ndim, x->layout.shape, x->dtype, fn);
        if (c && ff_kernel_copy(c, x, fn)) {
            ff_tensor_release(c);
            c = NULL;
        }
        ff_tensor_release(cur);
        cur = c;
    }
    if (!cur || !ff_dtype_is_float(x->dtype)) return cur;
    ff_node *node = ff_op_record_node(&cur, "flip", flip_backward, 1, &x, 0, NULL);
    if (node) node->ip[0] = mask;
    return cur;
}
