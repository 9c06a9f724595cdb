/* In-place ops under autograd, and the views that share their base's history: PyTorch's
 * rebase_history, CopySlices and lazily regenerated view grad_fns, on FusionFlow's graph
 * (docs/semantics.md, "In-place operations and autograd", states the rules).
 *
 * One mechanism serves every in-place op: the op computes its result r out of place,
 * with autograd, from x's current value and history; ff_inplace_commit writes r into x's
 * memory and rebases x onto r's history.
 *   - x is no view: x takes r's node as its grad_fn. Nodes that used x before keep their
 *     edges to x's old history (ff_node edges), so nothing already recorded changes.
 *   - x is a view of base b: b gets a copy_slices node (b's old history outside x's
 *     region, r's inside) and x becomes an as_strided view of b's new history. Other
 *     views of b see the write through the storage version: the next time their history
 *     is read (ff_view_history_refresh) they take an as_strided grad_fn from b anew.
 * What r's node saved is kept as PyTorch keeps it: x's old values, if the formula needs
 * them, are cloned before the write (PyTorch's original self); r itself, if saved, is
 * replaced by an alias of x, so a later write into x is caught at backward as PyTorch
 * catches it.
 *
 * The region nodes work in storage coordinates: a gradient shaped like the base is laid
 * into a scratch span of the base's memory layout, so a view of any strides (transposes,
 * steps, selects, chains of them) is just its own layout over that span. The layouts
 * travel in the nodes as "carriers": plain alias headers (no history, no base) whose only
 * use is their layout, so a node keeps no tensor alive that would close a cycle. */
#include <string.h>

#include "ff_impl.h"

/* ---- views know their base --------------------------------------------------------- */
void ff_view_track(ff_tensor *view, const ff_tensor *src)
{
    ff_tensor *base = src->view_base ? src->view_base : (ff_tensor *)src;
    view->view_base = ff_tensor_retain(base);
    view->view_no_grad = src->view_no_grad || !ff_grad_enabled();
    view->view_of_many = src->view_of_many;
    ff_storage_seen(src->storage); /* a write through another header must now be seen */
    view->view_version = atomic_load_explicit(&src->storage->version, memory_order_relaxed);
}

static ff_tensor *carrier(const ff_tensor *t) { return ff_tensor_new_view(t, &t->layout); }

/* ---- the region ops: gather, scatter and zero a view's region of a base's gradient ---- */
enum { REGION_GATHER, REGION_SCATTER, REGION_ZERO };
static const char *const region_name[] = {"as_strided", "as_strided_scatter", "copy_slices_rest"};

static ff_tensor *region_op(int op, const ff_tensor *g, const ff_tensor *lb_carrier, const ff_tensor *lv_carrier);

static ff_status region_backward(ff_node *n, const ff_tensor *g, ff_tensor **gi)
{
    static const int adjoint[] = {REGION_SCATTER, REGION_GATHER, REGION_ZERO};
    gi[0] = region_op(adjoint[n->ip[0]], g, n->inputs[1], n->inputs[2]);
    return gi[0] ? FF_OK : ff_last_status();
}

/* A layout moved to start at element 0 of a scratch span that begins at lo. */
static ff_layout shifted(const ff_layout *l, int64_t lo)
{
    ff_layout s = *l;
    s.offset -= lo;
    return s;
}

/* Sums g over the dims where the view repeats memory (stride 0), so that the scatter
 * writes each element once: an expanded view's gradient. *lv gets size 1 there. */
static ff_tensor *unexpanded(const ff_tensor *g, ff_layout *lv)
{
    int axes[FF_MAX_DIMS], na = 0;
    for (int d = 0; d < lv->ndim; d++)
        if (lv->strides[d] == 0 && lv->shape[d] > 1) axes[na++] = d, lv->shape[d] = 1;
    return na ? ff_sum(g, na, axes, true) : ff_tensor_retain((ff_tensor *)g);
}

/* GATHER: g shaped as the base -> the view's elements (view's shape). SCATTER: g shaped
 * as the view -> zeros shaped as the base with g in the view's region. ZERO: g shaped as
 * the base, with the view's region set to zero. Each is linear; its gradient is its
 * adjoint (gather <-> scatter, zero <-> zero), recorded under create_graph. */
static ff_tensor *region_op(int op, const ff_tensor *g, const ff_tensor *lb_carrier, const ff_tensor *lv_carrier)
{
    const char *fn = region_name[op];
    ff_layout lb = lb_carrier->layout, lv = lv_carrier->layout;
    int64_t lo, hi, vlo, vhi;
    ff_layout_span(&lb, &lo, &hi);
    ff_layout_span(&lv, &vlo, &vhi);
    bool empty = ff_tensor_numel(lb_carrier) == 0 || ff_tensor_numel(lv_carrier) == 0;
    if (!empty && (vlo < lo || vhi > hi))
        return ff_error(FF_ERR_AUTOGRAD, "%s: internal: the view's memory lies outside its base's", fn), NULL;
    ff_backend *be = g->storage->backend;
    const ff_layout *out_l = op == REGION_GATHER ? &lv : &lb;
    ff_tensor *out = ff_tensor_new(be, out_l->ndim, out_l->shape, g->dtype, fn);
    if (!out) return NULL;
    ff_tensor *src = NULL, *scratch = NULL, *in_span = NULL, *v_span = NULL;
    ff_status st = FF_OK;
    if (empty) {
        st = op == REGION_ZERO ? ff_kernel_copy(out, g, fn) : ff_kernel_fill(out, 0.0, fn);
        goto done;
    }
    src = op == REGION_SCATTER ? unexpanded(g, &lv) : ff_tensor_retain((ff_tensor *)g);
    int64_t span = hi - lo;
    scratch = src ? ff_tensor_new(be, 1, &span, g->dtype, fn) : NULL;
    if (!scratch) {
        st = ff_last_status();
        goto done;
    }
    ff_layout b_in = shifted(&lb, lo), v_in = shifted(&lv, lo);
    in_span = ff_tensor_new_view(scratch, &b_in);
    v_span = in_span ? ff_tensor_new_view(scratch, &v_in) : NULL;
    if (!v_span) {
        st = ff_last_status();
        goto done;
    }
    switch (op) {
    case REGION_GATHER:
        st = ff_kernel_copy(in_span, src, fn);
        if (!st) st = ff_kernel_copy(out, v_span, fn);
        break;
    case REGION_SCATTER:
        st = ff_kernel_fill(scratch, 0.0, fn);
        if (!st) st = ff_kernel_copy(v_span, src, fn);
        if (!st) st = ff_kernel_copy(out, in_span, fn);
        break;
    default:
        st = ff_kernel_copy(in_span, src, fn);
        if (!st) st = ff_kernel_fill(v_span, 0.0, fn);
        if (!st) st = ff_kernel_copy(out, in_span, fn);
    }
done:
    ff_tensor_release(v_span);
    ff_tensor_release(in_span);
    ff_tensor_release(scratch);
    ff_tensor_release(src);
    if (!st && ff_autograd_needed(1, &g)) {
        const ff_tensor *in[3] = {g, lb_carrier, lv_carrier};
        ff_node *node = ff_autograd_record(out, fn, region_backward, 3, in);
        if (!node) st = ff_last_status();
        else node->ip[0] = op, node->nip = 1;
    }
    if (st) {
        ff_tensor_release(out);
        return NULL;
    }
    return out;
}

/* ---- a view's history, taken from its base ----------------------------------------- */
/* inputs: [0] the base, [1] the base's layout, [2] the view's layout */
static ff_status as_strided_backward(ff_node *n, const ff_tensor *g, ff_tensor **gi)
{
    gi[0] = region_op(REGION_SCATTER, g, n->inputs[1], n->inputs[2]);
    return gi[0] ? FF_OK : ff_last_status();
}

/* Makes t's grad_fn an as_strided view of its base's current history. */
static ff_status view_from_base(ff_tensor *t)
{
    ff_tensor *b = t->view_base;
    ff_tensor *lb = carrier(b), *lv = lb ? carrier(t) : NULL;
    ff_status st = lv ? FF_OK : ff_last_status();
    if (!st) {
        const ff_tensor *in[3] = {b, lb, lv};
        if (!ff_autograd_record(t, "as_strided", as_strided_backward, 3, in)) st = ff_last_status();
    }
    ff_tensor_release(lb);
    ff_tensor_release(lv);
    if (!st) t->view_version = atomic_load_explicit(&t->storage->version, memory_order_relaxed);
    return st;
}

void ff_view_history_refresh(ff_tensor *t)
{
    ff_tensor *b = t->view_base;
    if (!b || t->view_no_grad || !b->requires_grad) return;
    if (t->requires_grad && t->view_version == atomic_load_explicit(&t->storage->version, memory_order_relaxed))
        return;
    /* Out of memory here leaves t's old history, which is right unless the base was
     * rebased; the error stays set for the op that asked. */
    view_from_base(t);
}

/* ---- the in-place mechanism --------------------------------------------------------- */
bool ff_inplace_records(ff_tensor *x, const ff_tensor *y)
{
    if (!ff_grad_enabled() || !x) return false;
    ff_view_history_refresh(x);
    if (y) ff_view_history_refresh((ff_tensor *)y);
    return x->requires_grad || (y && y->requires_grad) || (x->view_base && x->view_base->requires_grad);
}

ff_status ff_inplace_check(ff_tensor *x, const char *fn)
{
    const ff_tensor *b = x->view_base;
    if (b && x->view_no_grad)
        return ff_error(FF_ERR_AUTOGRAD,
                        "%s: a view was created in no_grad mode and is being modified inplace with grad mode "
                        "enabled; move both the view and the in-place op inside the no_grad block (not tracked) or "
                        "both outside it (tracked)",
                        fn);
    if (b && x->view_of_many)
        return ff_error(FF_ERR_AUTOGRAD,
                        "%s: the tensor is (a view of) one of the views that %s returned, and is being modified "
                        "inplace; functions that return multiple views do not allow their output views to be "
                        "modified inplace: replace the inplace operation by an out-of-place one",
                        fn, x->view_of_many);
    if (!b && x->requires_grad && !x->grad_fn)
        return ff_error(FF_ERR_AUTOGRAD,
                        "%s: a leaf Variable that requires grad is being used in an in-place operation (wrap the "
                        "update in no_grad / ff_set_grad_enabled(false), as optimizer steps do)",
                        fn);
    if (b && b->requires_grad && !b->grad_fn && !b->view_base)
        return ff_error(FF_ERR_AUTOGRAD, "%s: a view of a leaf Variable that requires grad is being used in an "
                        "in-place operation", fn);
    if (b && !ff_layout_is_dense(&b->layout) && ff_tensor_numel(b) > 1)
        return ff_error(FF_ERR_AUTOGRAD,
                        "%s: an in-place op on a view of a tensor whose elements are not dense in memory (strides %s) "
                        "cannot be recorded; make the base contiguous first",
                        fn, ff_shape_str(b->layout.ndim, b->layout.strides, (char[160]){0}, 160));
    return FF_OK;
}

/* The node r's own op attached (only r holds it), or NULL. */
static ff_node *own_node(const ff_tensor *r)
{
    return r->grad_fn && r->grad_fn->owner == r ? r->grad_fn : NULL;
}

/* Before x is overwritten: what the node saved of x's memory (an input's values, which
 * its formula needs: PyTorch's original self) becomes a clone, with its history. */
static ff_status keep_saved_inputs(ff_node *node, const ff_tensor *x, const ff_tensor *r)
{
    for (int i = 0; node && i < node->n_saved; i++) {
        ff_tensor *s = node->saved[i];
        if (!s || s->storage != x->storage || s->storage == r->storage) continue;
        ff_tensor *c = ff_clone(s);
        if (!c) return ff_last_status();
        ff_tensor_release(s);
        node->saved[i] = c;
        node->saved_version[i] = atomic_load(&c->storage->version);
    }
    return FF_OK;
}

/* After the write: what the node saved of its result r is x's memory now (an alias of x,
 * at the version just written), so r's buffer can go and a later write into x is seen. */
static ff_status saved_result_to_x(ff_node *node, ff_tensor *x, const ff_tensor *r)
{
    for (int i = 0; node && i < node->n_saved; i++) {
        ff_tensor *s = node->saved[i];
        if (!s || s->storage != r->storage || s->layout.ndim != x->layout.ndim) continue;
        ff_tensor *a = ff_tensor_new_view(x, &x->layout);
        if (!a) return ff_last_status();
        ff_tensor_release(s);
        node->saved[i] = a;
        node->saved_version[i] = atomic_load(&x->storage->version);
    }
    return FF_OK;
}

/* inputs: [0] x's old value (only its edge and shape are used), [1] the
 * source, when there is one. The old value was overwritten: its gradient is zero, sent
 * on as PyTorch sends it (so what the old history saved is still checked). */
static ff_status overwrite_backward(ff_node *n, const ff_tensor *g, ff_tensor **gi)
{
    if (n->needs_grad[0] && !(gi[0] = ff_zeros_like(g))) return ff_last_status();
    if (n->n_inputs > 1 && n->needs_grad[1]) gi[1] = ff_tensor_retain((ff_tensor *)g);
    return FF_OK;
}

/* x (no view) now holds r's values: its history becomes r's. */
static ff_status rebase_plain(ff_tensor *x, ff_tensor *r, ff_node *node)
{
    if (node) {
        atomic_fetch_add(&node->refcount, 1);
        ff_node *old = x->grad_fn;
        x->grad_fn = node;
        node->owner = x;
        x->requires_grad = true;
        if (old) {
            if (old->owner == x) old->owner = NULL;
            ff_node_release(old);
        }
        return FF_OK;
    }
    /* r has history it does not own (a caller's tensor: copy_), or none (fill_, zero_) */
    const ff_tensor *in[2] = {x, r};
    ff_node *n = r->requires_grad ? ff_autograd_record(x, "copy_", overwrite_backward, 2, in)
                                  : ff_autograd_record(x, "fill_", overwrite_backward, 1, in);
    return n ? FF_OK : ff_last_status();
}

/* inputs: [0] the base (its old history), [1] r (the view's new values), [2] the base's
 * layout, [3] the view's layout */
static ff_status copy_slices_backward(ff_node *n, const ff_tensor *g, ff_tensor **gi)
{
    if (n->needs_grad[0] && !(gi[0] = region_op(REGION_ZERO, g, n->inputs[2], n->inputs[3]))) return ff_last_status();
    if (n->needs_grad[1] && !(gi[1] = region_op(REGION_GATHER, g, n->inputs[2], n->inputs[3])))
        return ff_last_status();
    return FF_OK;
}

/* x, a view of b, now holds r's values: b's history becomes "b's old one outside x's
 * region, r's inside", and x's an as_strided view of that. */
static ff_status rebase_view(ff_tensor *x, ff_tensor *r)
{
    ff_tensor *b = x->view_base;
    ff_tensor *lb = carrier(b), *lv = lb ? carrier(x) : NULL;
    ff_status st = lv ? FF_OK : ff_last_status();
    ff_node *node = NULL;
    if (!st) {
        const ff_tensor *in[4] = {b, r, lb, lv};
        if (!(node = ff_autograd_record(b, "copy_slices", copy_slices_backward, 4, in))) st = ff_last_status();
    }
    /* The node needs r only for its shape when its edge leads to r's node: a header over
     * b's storage then stands in for it, so r's buffer is not kept for the graph's life. */
    if (node && node->edges[1]) {
        ff_layout rl;
        ff_layout_init_contiguous(&rl, r->layout.ndim, r->layout.shape, "copy_slices");
        ff_tensor *shape_only = ff_tensor_new_view(b, &rl);
        if (shape_only) ff_tensor_release(node->inputs[1]), node->inputs[1] = shape_only;
    }
    ff_tensor_release(lb);
    ff_tensor_release(lv);
    return st ? st : view_from_base(x);
}

ff_status ff_inplace_commit(ff_tensor *x, ff_tensor *r, bool temporary, const char *fn)
{
    if (!x || !r) return ff_error(FF_ERR_INVALID, "%s: NULL tensor", fn);
    if (x->layout.ndim != r->layout.ndim ||
        memcmp(x->layout.shape, r->layout.shape, sizeof(int64_t) * (size_t)x->layout.ndim) != 0) {
        char b1[160], b2[160];
        return ff_error(FF_ERR_INVALID, "%s: output with shape %s doesn't match the broadcast shape %s", fn,
                        ff_shape_str(x->layout.ndim, x->layout.shape, b1, sizeof b1),
                        ff_shape_str(r->layout.ndim, r->layout.shape, b2, sizeof b2));
    }
    ff_tensor *cast = NULL;
    if (r->dtype != x->dtype || r->storage == x->storage) {
        /* in x's dtype, and in memory of its own: a result that views x (an op that
         * returned a view of its input) would be overwritten while it is copied */
        if (!(cast = r->dtype != x->dtype ? ff_astype(r, x->dtype) : ff_clone(r))) return ff_last_status();
        r = cast;
    }
    /* a temporary's node becomes x's (nobody else can see it); another tensor's stays
     * its own, and x gets an identity node to it (copy_) */
    ff_node *node = temporary || cast ? own_node(r) : NULL;
    ff_status st = keep_saved_inputs(node, x, r);
    ff_storage_seen(x->storage); /* this write is a modification: it always counts */
    if (!st) st = ff_kernel_copy(x, r, fn);
    if (!st) st = saved_result_to_x(node, x, r);
    if (!st) st = x->view_base ? rebase_view(x, r) : rebase_plain(x, r, node);
    ff_tensor_release(cast);
    return st;
}
