/* Indexing along one axis: gather, scatter_add, index_select, embedding, scatter. gather and
 * scatter_add are each other's gradient, so every order of derivative stays in this
 * pair; index_select and embedding are gathers with a broadcast (stride-0) index. */
#include "expr.h"

/* Rank as the backend sees it: a 0-d tensor is one element along axis 0. */
static ff_status index_axis(int axis, int ndim, int *out, const char *fn)
{
    return ff_layout_normalize_axis(axis, ndim > 0 ? ndim : 1, out, fn);
}

/* The index as i64 (copied from any other integer dtype); floats and bool refused. */
static ff_tensor *index_i64(const ff_tensor *index, const char *fn)
{
    if (ff_dtype_is_float(index->dtype) || index->dtype == FF_BOOL)
        return ff_error(FF_ERR_INVALID, "%s: index must have an integer dtype, got %s", fn,
                        ff_dtype_name(index->dtype)), NULL;
    return ff_op_cast(index, FF_I64, fn);
}

/* index.shape[d] <= t.shape[d] for every d (except skip, if >= 0). */
static ff_status check_fits(const ff_tensor *index, const ff_tensor *t, const char *what, int skip, const char *fn)
{
    if (index->layout.ndim != t->layout.ndim)
        return ff_error(FF_ERR_INVALID, "%s: index has rank %d but %s has rank %d", fn, index->layout.ndim, what,
                        t->layout.ndim);
    for (int d = 0; d < t->layout.ndim; d++)
        if (d != skip && index->layout.shape[d] > t->layout.shape[d]) {
            char b1[160], b2[160];
            return ff_error(FF_ERR_INVALID, "%s: index shape %s does not fit %s shape %s at dim %d", fn,
                            ff_shape_str(index->layout.ndim, index->layout.shape, b1, sizeof b1), what,
                            ff_shape_str(t->layout.ndim, t->layout.shape, b2, sizeof b2), d);
        }
    return FF_OK;
}

static ff_tensor *gather_impl(const ff_tensor *x, int axis, const ff_tensor *index, const char *fn);
static ff_tensor *scatter_add_impl(const ff_tensor *x, int axis, const ff_tensor *index, const ff_tensor *src,
                                   const char *fn);

/* ---- gather ---------------------------------------------------------------------- */
/* ip[0] axis; saved[0] the i64 index. The gradient scatters g back into zeros. */
static ff_status gather_backward(ff_node *n, const ff_tensor *g, ff_tensor **gi)
{
    const ff_tensor *idx = ff_node_saved(n, 0);
    if (!idx) return ff_last_status();
    const ff_tensor *x = n->inputs[0];
    ff_tensor *z = ff_tensor_new(g->storage->backend, x->layout.ndim, x->layout.shape, g->dtype, "gather_backward");
    if (!z || ff_kernel_fill(z, 0.0, "gather_backward")) {
        ff_tensor_release(z);
        return ff_last_status();
    }
    if (!ff_autograd_needed(1, &g)) { /* no graph through the gradient: scatter into the zeros themselves */
        ff_status st = ff_kernel_scatter_add(z, idx, g, (int)n->ip[0], "gather_backward");
        if (st) ff_tensor_release(z);
        gi[0] = st ? NULL : z;
        return st;
    }
    gi[0] = scatter_add_impl(z, (int)n->ip[0], idx, g, "gather_backward"); /* create_graph: a recorded op */
    ff_tensor_release(z);
    return gi[0] ? FF_OK : ff_last_status();
}

/* index is already i64. */
static ff_tensor *gather_impl(const ff_tensor *x, int axis, const ff_tensor *index, const char *fn)
{
    const ff_tensor *in[2] = {x, index};
    ff_backend *be = ff_common_backend(2, in, fn);
    int a;
    if (!be || index_axis(axis, x->layout.ndim, &a, fn) || check_fits(index, x, "input", a, fn)) return NULL;
    ff_tensor *out = ff_tensor_new(be, index->layout.ndim, index->layout.shape, x->dtype, fn);
    if (out && ff_kernel_gather(out, x, index, a, fn)) {
        ff_tensor_release(out);
        return NULL;
    }
    if (!ff_dtype_has_grad(x->dtype)) return out;
    ff_node *node = ff_op_record_node(&out, "gather", gather_backward, 1, &x, 1, &index);
    if (node) node->ip[0] = a;
    return out;
}

ff_tensor *ff_gather(const ff_tensor *x, int axis, const ff_tensor *index)
{
    static const char fn[] = "ff_gather";
    if (!x || !index) return ff_error(FF_ERR_INVALID, "%s: NULL argument", fn), NULL;
    ff_tensor *idx = index_i64(index, fn);
    ff_tensor *r = idx ? gather_impl(x, axis, idx, fn) : NULL;
    ff_tensor_release(idx);
    return r;
}

/* ---- scatter_add ------------------------------------------------------------------ */
/* ip[0] axis; saved[0] the i64 index. To x: g. To src: gather(g) where index reaches,
 * zero-padded up to src's shape where the index is smaller than src. */
static ff_status scatter_add_backward(ff_node *n, const ff_tensor *g, ff_tensor **gi)
{
    const ff_tensor *idx = ff_node_saved(n, 0);
    if (!idx) return ff_last_status();
    if (n->needs_grad[0]) gi[0] = ff_tensor_retain((ff_tensor *)g);
    if (!n->needs_grad[1]) return FF_OK;
    const ff_tensor *src = n->inputs[1];
    ff_tensor *gs = gather_impl(g, (int)n->ip[0], idx, "scatter_add_backward");
    if (!gs) return ff_last_status();
    int64_t pads[2 * FF_MAX_DIMS];
    bool padded = false;
    for (int d = 0; d < src->layout.ndim; d++) {
        pads[2 * d] = 0;
        pads[2 * d + 1] = src->layout.shape[d] - idx->layout.shape[d];
        padded |= pads[2 * d + 1] != 0;
    }
    gi[1] = padded ? ff_pad(gs, pads, 0.0) : ff_tensor_retain(gs);
    ff_tensor_release(gs);
    return gi[1] ? FF_OK : ff_last_status();
}

/* index is already i64. The result has the promoted dtype of x and src. */
static ff_tensor *scatter_add_impl(const ff_tensor *x, int axis, const ff_tensor *index, const ff_tensor *src,
                                   const char *fn)
{
    const ff_tensor *in[3] = {x, index, src};
    ff_backend *be = ff_common_backend(3, in, fn);
    int a;
    if (!be || index_axis(axis, x->layout.ndim, &a, fn) || check_fits(index, src, "src", -1, fn) ||
        check_fits(index, x, "input", a, fn))
        return NULL;
    ff_dtype dt = ff_dtype_promote(x->dtype, src->dtype);
    ff_tensor *sc = ff_op_cast(src, dt, fn);
    ff_tensor *out = sc ? ff_tensor_new(be, x->layout.ndim, x->layout.shape, dt, fn) : NULL;
    if (out && (ff_kernel_copy(out, x, fn) || ff_kernel_scatter_add(out, index, sc, a, fn))) {
        ff_tensor_release(out);
        out = NULL;
    }
    ff_tensor_release(sc);
    if (!ff_dtype_has_grad(dt)) return out;
    const ff_tensor *ins[2] = {x, src};
    ff_node *node = ff_op_record_node(&out, "scatter_add", scatter_add_backward, 2, ins, 1, &index);
    if (node) node->ip[0] = a;
    return out;
}

ff_tensor *ff_scatter_add(const ff_tensor *x, int axis, const ff_tensor *index, const ff_tensor *src)
{
    static const char fn[] = "ff_scatter_add";
    if (!x || !index || !src) return ff_error(FF_ERR_INVALID, "%s: NULL argument", fn), NULL;
    ff_tensor *idx = index_i64(index, fn);
    ff_tensor *r = idx ? scatter_add_impl(x, axis, idx, src, fn) : NULL;
    ff_tensor_release(idx);
    return r;
}

/* ---- index_select / embedding ------------------------------------------------------ */
/* A gather along axis whose index is the 1-D index broadcast (stride 0) over x's
 * other dims: the gather node then provides the gradient (scatter_add). */
static ff_tensor *index_select_impl(const ff_tensor *x, int axis, const ff_tensor *index, const char *fn)
{
    if (!x || !index) return ff_error(FF_ERR_INVALID, "%s: NULL argument", fn), NULL;
    if (x->layout.ndim == 0) return ff_error(FF_ERR_INVALID, "%s: input must have rank >= 1", fn), NULL;
    if (index->layout.ndim > 1)
        return ff_error(FF_ERR_INVALID, "%s: index must be 1-D, got rank %d", fn, index->layout.ndim), NULL;
    int a;
    if (ff_layout_normalize_axis(axis, x->layout.ndim, &a, fn)) return NULL;
    ff_tensor *idx = index_i64(index, fn);
    if (!idx) return NULL;
    ff_layout l = x->layout;
    for (int d = 0; d < l.ndim; d++) l.strides[d] = 0;
    l.shape[a] = idx->layout.ndim ? idx->layout.shape[0] : 1;
    l.strides[a] = idx->layout.ndim ? idx->layout.strides[0] : 0;
    l.offset = idx->layout.offset;
    ff_tensor *wide = ff_tensor_new_view(idx, &l);
    ff_tensor *r = wide ? gather_impl(x, a, wide, fn) : NULL;
    ff_tensor_release(wide);
    ff_tensor_release(idx);
    return r;
}

ff_tensor *ff_index_select(const ff_tensor *x, int axis, const ff_tensor *index)
{
    return index_select_impl(x, axis, index, "ff_index_select");
}

ff_tensor *ff_embedding(const ff_tensor *weight, const ff_tensor *indices)
{
    static const char fn[] = "ff_embedding";
    if (!weight || !indices) return ff_error(FF_ERR_INVALID, "%s: NULL argument", fn), NULL;
    if (weight->layout.ndim != 2)
        return ff_error(FF_ERR_INVALID, "%s: weight must be [num_embeddings, dim], got rank %d", fn,
                        weight->layout.ndim), NULL;
    int nd = indices->layout.ndim;
    if (nd + 1 > FF_MAX_DIMS)
        return ff_error(FF_ERR_INVALID, "%s: indices of rank %d give a result above rank %d", fn, nd, FF_MAX_DIMS),
               NULL;
    int64_t shape[FF_MAX_DIMS];
    for (int d = 0; d < nd; d++) shape[d] = indices->layout.shape[d];
    shape[nd] = weight->layout.shape[1];
    ff_tensor *flat = ff_reshape(indices, 1, (int64_t[]){-1});
    ff_tensor *rows = flat ? index_select_impl(weight, 0, flat, fn) : NULL;
    ff_tensor *r = rows ? ff_reshape(rows, nd + 1, shape) : NULL;
    ff_tensor_release(flat);
    ff_tensor_release(rows);
    return r;
}

/* torch.scatter (no reduce): a copy of x with src[i..][j][k..] written at
 * [i..][index[i..][j][k..]][k..] along axis. Where indices repeat within a line, the
 * last one in index order wins (PyTorch leaves the choice undefined). A stable argsort of
 * each index line groups the repeats with the last one last; only those winners are
 * scattered (onto zeros, by scatter_add: each destination gets one), and a written-mask
 * picks them over x. Differentiable in x and src. */
ff_tensor *ff_scatter(const ff_tensor *x, int axis, const ff_tensor *index, const ff_tensor *src)
{
    static const char fn[] = "ff_scatter";
    if (!x || !index || !src) return ff_error(FF_ERR_INVALID, "%s: NULL argument", fn), NULL;
    int nd = index->layout.ndim, ax = 0;
    if (nd != x->layout.ndim || nd != src->layout.ndim || nd == 0)
        return ff_error(FF_ERR_INVALID, "%s: x, index and src must share a rank >= 1 (got %d, %d, %d)", fn,
                        x->layout.ndim, nd, src->layout.ndim), NULL;
    if (ff_layout_normalize_axis(axis, nd, &ax, fn)) return NULL;
    for (int d = 0; d < nd; d++)
        if (index->layout.shape[d] > src->layout.shape[d] || (d != ax && index->layout.shape[d] > x->layout.shape[d]))
            return ff_error(FF_ERR_INVALID, "%s: index is larger than src or x at dim %d", fn, d), NULL;
    int64_t len = index->layout.shape[ax];
    ff_backend *be = x->storage->backend;
    ff_expr e = {0};
    /* src cut to index's shape, in x's dtype */
    ff_tensor *s = FF_EX(&e, ff_op_cast(src, x->dtype, fn));
    for (int d = 0; d < nd && !e.failed; d++)
        if (s->layout.shape[d] != index->layout.shape[d]) s = FF_EX(&e, ff_narrow(s, d, 0, index->layout.shape[d]));
    bool prev = ff_set_grad_enabled(false);
    ff_tensor *order = FF_EX(&e, ff_argsort(index, ax, false));
    ff_tensor *sidx = FF_EX(&e, ff_gather(index, ax, order));
    ff_tensor *last = NULL; /* sorted j is the last of its repeats: j == len - 1 or sidx[j] != sidx[j + 1] */
    if (len > 1) {
        int64_t tshape[FF_MAX_DIMS];
        for (int d = 0; d < nd; d++) tshape[d] = d == ax ? 1 : index->layout.shape[d];
        ff_tensor *a = FF_EX(&e, ff_narrow(sidx, ax, 0, len - 1)), *b = FF_EX(&e, ff_narrow(sidx, ax, 1, len - 1));
        ff_tensor *ne = FF_EX(&e, ff_binary(FF_BINARY_NE, a, b));
        ff_tensor *tail = FF_EX(&e, ff_full_on(be, nd, tshape, FF_BOOL, 1.0));
        last = FF_EX(&e, ff_concat(2, (ff_tensor *[]){ne, tail}, ax));
    } else {
        last = FF_EX(&e, ff_full_on(be, nd, index->layout.shape, FF_BOOL, 1.0));
    }
    ff_tensor *hits = FF_EX(&e, ff_astype(last, FF_I64));
    ff_tensor *zi = FF_EX(&e, ff_full_on(be, nd, x->layout.shape, FF_I64, 0.0));
    ff_tensor *wcount = FF_EX(&e, ff_scatter_add(zi, ax, sidx, hits));
    ff_tensor *written = FF_EX(&e, ff_binary_scalar(FF_BINARY_GT, wcount, 0.0));
    ff_set_grad_enabled(prev);
    ff_tensor *ssorted = FF_EX(&e, ff_gather(s, ax, order));
    ff_tensor *zero = FF_EX(&e, ff_op_scalar_like(x, 0.0, x->dtype));
    ff_tensor *winners = FF_EX(&e, ff_where(last, ssorted, zero)); /* where, not * 0: inf/NaN stay out */
    ff_tensor *zx = FF_EX(&e, ff_full_on(be, nd, x->layout.shape, x->dtype, 0.0));
    ff_tensor *placed = FF_EX(&e, ff_scatter_add(zx, ax, sidx, winners));
    ff_tensor *r = FF_EX(&e, ff_where(written, placed, x));
    ff_tensor *out = ff_expr_result(&e, r);
    ff_expr_free(&e);
    if (!out) ff_error_prefix(fn);
    return out;
}
