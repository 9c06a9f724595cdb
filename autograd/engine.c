/* Reverse-mode autograd engine. Ops attach a node (backward function + retained
 * inputs + saved values) to their output; backward() walks the graph from the root in
 * reverse topological order, so every tensor has received the gradient of all its
 * consumers before its own node runs. Gradient formulas are ff ops: with
 * create_graph they are recorded like any forward op, which gives higher orders. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ff_impl.h"

static _Thread_local bool tl_grad_disabled; /* zero-init means "enabled" */

bool ff_grad_enabled(void) { return !tl_grad_disabled; }

bool ff_set_grad_enabled(bool enabled)
{
    bool prev = !tl_grad_disabled;
    tl_grad_disabled = !enabled;
    return prev;
}

bool ff_autograd_needed(int n, const ff_tensor *const *inputs)
{
    if (tl_grad_disabled) return false;
    for (int i = 0; i < n; i++)
        if (inputs[i] && inputs[i]->requires_grad) return true;
    return false;
}

/* The history an edge to t leads to: its node, or NULL for a leaf (the vertex is then
 * t itself). A view whose base was written since takes its history anew first. */
static ff_node *edge_of(ff_tensor *t)
{
    ff_view_history_refresh(t);
    if (t->grad_fn) atomic_fetch_add(&t->grad_fn->refcount, 1);
    return t->grad_fn;
}

/* What a node keeps of a tensor it is given (an input, a saved value): a header of its own
 * over the same memory, with the history the tensor had then (PyTorch's SavedVariable).
 * Never the tensor itself: an in-place op may later rebase that tensor onto a history
 * that runs through this very node (x.add_(x * 2)), and the tensor would then hold itself.
 * A leaf that requires grad is kept itself: backward accumulates into it, and in-place
 * ops never rebase it. */
static ff_tensor *snapshot(const ff_tensor *t)
{
    if (t->requires_grad && !t->grad_fn) return ff_tensor_retain((ff_tensor *)t);
    ff_tensor *s = ff_tensor_new_view(t, &t->layout);
    if (!s) return NULL;
    s->requires_grad = t->requires_grad;
    if (t->grad_fn) atomic_fetch_add(&t->grad_fn->refcount, 1), s->grad_fn = t->grad_fn;
    return s;
}

/* Detaches node from the tensor it was the history of: on the tensor's death, or when
 * an in-place op gives the tensor a new grad_fn. */
static void node_disown(ff_tensor *t, ff_node *node)
{
    if (node->owner == t) node->owner = NULL;
    ff_node_release(node);
}

ff_node *ff_autograd_record(ff_tensor *out, const char *name, ff_backward_fn backward, int n,
                            const ff_tensor *const *inputs)
{
    if (n > FF_NODE_MAX_INPUTS) {
        ff_error(FF_ERR_INVALID, "%s: internal: %d inputs exceed FF_NODE_MAX_INPUTS", name, n);
        return NULL;
    }
    ff_node *node = malloc(sizeof *node); /* not calloc: it skips glibc's per-thread cache */
    if (!node) {
        ff_error(FF_ERR_OOM, "%s: out of memory recording the autograd node", name);
        return NULL;
    }
    *node = (ff_node){.name = name};
    atomic_init(&node->refcount, 1);
    node->backward = backward;
    node->n_inputs = n;
    /* the edges first: an input may be out itself (an in-place op's base), whose old
     * history the new node must lead to */
    ff_tensor_set_history_release(node_disown); /* the core drops nodes through this */
    for (int i = 0; i < n; i++) {
        ff_tensor *in = (ff_tensor *)inputs[i];
        node->needs_grad[i] = in && (ff_view_history_refresh(in), in->requires_grad);
        node->edges[i] = node->needs_grad[i] ? edge_of(in) : NULL;
        if (in && !(node->inputs[i] = snapshot(in))) {
            ff_node_release(node->edges[i]);
            node->edges[i] = NULL;
            node->n_inputs = i;
            ff_node_release(node);
            ff_error(FF_ERR_OOM, "%s: out of memory recording the autograd node", name);
            return NULL;
        }
    }
    if (out->grad_fn) node_disown(out, out->grad_fn);
    out->grad_fn = node;
    out->requires_grad = true;
    node->owner = out;
    return node;
}

ff_status ff_node_add_extra(ff_node *node, int n, const ff_tensor *const *ts)
{
    ff_tensor **extra = calloc((size_t)n, sizeof *extra);
    ff_node **edges = calloc((size_t)n, sizeof *edges);
    if (!extra || !edges) {
        free(extra);
        free(edges);
        return ff_error(FF_ERR_OOM, "%s: out of memory recording %d more inputs", node->name, n);
    }
    for (int i = 0; i < n; i++) {
        ff_tensor *in = (ff_tensor *)ts[i];
        edges[i] = in && (ff_view_history_refresh(in), in->requires_grad) ? edge_of(in) : NULL;
        extra[i] = in ? snapshot(in) : NULL; /* out of memory: a NULL input, which gets no gradient */
    }
    node->extra = extra;
    node->extra_edges = edges;
    node->n_extra = n;
    return FF_OK;
}

ff_status ff_node_save(ff_node *node, const ff_tensor *t)
{
    if (node->n_saved >= FF_NODE_MAX_SAVED)
        return ff_error(FF_ERR_INVALID, "%s: internal: too many saved tensors", node->name);
    /* An input (or any tensor made before the node) is kept as a snapshot, with its
     * history, so a backward formula run under create_graph differentiates through it
     * (higher orders). The node's own output is kept as a detached alias, because holding
     * the output itself would be a cycle (out -> node -> out); ops whose formula uses their
     * output recompute it from the inputs when the backward pass is being recorded. */
    ff_tensor *alias = NULL;
    if (t->grad_fn == node) {
        alias = ff_tensor_new_view(t, &t->layout);
    } else {
        for (int i = 0; i < node->n_inputs && !alias; i++) { /* an input's snapshot, if t is one */
            const ff_tensor *in = node->inputs[i];
            if (in && in->storage == t->storage && in->dtype == t->dtype && in->grad_fn == t->grad_fn &&
                memcmp(&in->layout, &t->layout, sizeof t->layout) == 0)
                alias = ff_tensor_retain((ff_tensor *)in);
        }
        if (!alias) alias = snapshot(t);
    }
    if (!alias) return ff_last_status();
    ff_storage_seen(t->storage); /* from now on every write counts */
    node->saved_version[node->n_saved] = atomic_load(&t->storage->version);
    node->saved[node->n_saved++] = alias;
    return FF_OK;
}

const ff_tensor *ff_node_saved(ff_node *node, int i)
{
    if (node->released || i >= node->n_saved || !node->saved[i]) {
        ff_error(FF_ERR_AUTOGRAD,
                 "backward through '%s' a second time: its saved values were freed; pass retain_graph "
                 "the first time",
                 node->name);
        return NULL;
    }
    const ff_tensor *t = node->saved[i];
    unsigned long now = atomic_load(&t->storage->version);
    if (now != node->saved_version[i]) {
        char b[160];
        ff_error(FF_ERR_AUTOGRAD,
                 "one of the variables needed for gradient computation has been modified by an inplace operation: "
                 "[%s %s], saved by '%s', is at version %lu; expected version %lu instead",
                 ff_dtype_name(t->dtype), ff_shape_str(t->layout.ndim, t->layout.shape, b, sizeof b), node->name, now,
                 node->saved_version[i]);
        return NULL;
    }
    return t;
}

static void node_free_saved(ff_node *node)
{
    for (int i = 0; i < node->n_saved; i++) {
        ff_tensor_release(node->saved[i]);
        node->saved[i] = NULL;
    }
    node->released = true;
}

void ff_node_release(ff_node *node)
{
    if (!node || atomic_fetch_sub(&node->refcount, 1) != 1) return;
    for (int i = 0; i < node->n_inputs; i++) {
        ff_tensor_release(node->inputs[i]);
        ff_node_release(node->edges[i]);
    }
    for (int i = 0; i < node->n_extra; i++) {
        ff_tensor_release(node->extra[i]);
        ff_node_release(node->extra_edges[i]);
    }
    free(node->extra);
    free(node->extra_edges);
    ff_tensor_release(node->bw_grad);
    node_free_saved(node);
    free(node);
}

/* ---- leaf API ---------------------------------------------------------------- */
ff_status ff_set_requires_grad(ff_tensor *t, bool requires_grad)
{
    if (!t) return ff_error(FF_ERR_INVALID, "ff_set_requires_grad: tensor is NULL");
    if (t->grad_fn && !requires_grad)
        return ff_error(FF_ERR_AUTOGRAD, "ff_set_requires_grad: tensor is not a leaf (made by '%s'); use ff_detach",
                        t->grad_fn->name);
    if (requires_grad && !ff_dtype_has_grad(t->dtype))
        return ff_error(FF_ERR_AUTOGRAD, "ff_set_requires_grad: only float and complex tensors can require grad, got %s",
                        ff_dtype_name(t->dtype));
    t->requires_grad = requires_grad;
    return FF_OK;
}

/* The queries take a view's history from its base first: a view made before its base
 * required grad requires grad now, as in PyTorch. */
bool ff_requires_grad(const ff_tensor *t)
{
    if (t) ff_view_history_refresh((ff_tensor *)t);
    return t && t->requires_grad;
}
bool ff_is_leaf(const ff_tensor *t)
{
    if (t) ff_view_history_refresh((ff_tensor *)t);
    return t && !t->grad_fn;
}

ff_status ff_set_post_accumulate_grad_hook(ff_tensor *leaf, ff_grad_hook_fn fn, void *user)
{
    if (!leaf) return ff_error(FF_ERR_INVALID, "ff_set_post_accumulate_grad_hook: tensor is NULL");
    if (leaf->grad_fn)
        return ff_error(FF_ERR_AUTOGRAD, "ff_set_post_accumulate_grad_hook: not a leaf (made by '%s')",
                        leaf->grad_fn->name);
    leaf->grad_hook = fn;
    leaf->grad_hook_user = fn ? user : NULL;
    return FF_OK;
}
ff_tensor *ff_grad(const ff_tensor *t) { return t ? ff_tensor_retain(t->grad) : NULL; }
const char *ff_grad_fn_name(const ff_tensor *t)
{
    if (t) ff_view_history_refresh((ff_tensor *)t);
    return t && t->grad_fn ? t->grad_fn->name : NULL;
}

ff_status ff_set_grad(ff_tensor *t, ff_tensor *grad)
{
    if (!t) return ff_error(FF_ERR_INVALID, "ff_set_grad: tensor is NULL");
    if (grad && (grad->layout.ndim != t->layout.ndim ||
                 memcmp(grad->layout.shape, t->layout.shape, sizeof(int64_t) * (size_t)t->layout.ndim) != 0)) {
        char b1[160], b2[160];
        return ff_error(FF_ERR_INVALID, "ff_set_grad: gradient shape %s does not match tensor shape %s",
                        ff_shape_str(grad->layout.ndim, grad->layout.shape, b1, sizeof b1),
                        ff_shape_str(t->layout.ndim, t->layout.shape, b2, sizeof b2));
    }
    ff_tensor_retain(grad);
    ff_tensor_release(t->grad);
    t->grad = grad;
    return FF_OK;
}

ff_status ff_zero_grad(ff_tensor *t) { return ff_set_grad(t, NULL); }

/* ---- the backward pass -------------------------------------------------------- */
/* A vertex of the graph: a node, or a leaf tensor (tagged in the low bit; both come
 * from malloc, so the bit is free). */
typedef uintptr_t vertex;

static vertex vertex_node(ff_node *n) { return (uintptr_t)n; }
static vertex vertex_leaf(ff_tensor *t) { return (uintptr_t)t | 1u; }
static ff_node *as_node(vertex v) { return v & 1u ? NULL : (ff_node *)v; }
static ff_tensor *as_leaf(vertex v) { return v & 1u ? (ff_tensor *)(v & ~(uintptr_t)1u) : NULL; }
/* Where t's gradient goes now: its grad_fn, or t itself for a leaf. */
static vertex vertex_of(ff_tensor *t)
{
    ff_view_history_refresh(t);
    return t->grad_fn ? vertex_node(t->grad_fn) : vertex_leaf(t);
}
static ff_tensor **vertex_grad(vertex v) { return as_node(v) ? &as_node(v)->bw_grad : &as_leaf(v)->bw_grad; }

/* Edge i of node: its vertex, or 0 when no gradient flows along it. */
static vertex node_edge(const ff_node *node, int i)
{
    bool extra = i >= node->n_inputs;
    int k = extra ? i - node->n_inputs : i;
    ff_node *e = extra ? node->extra_edges[k] : node->edges[k];
    if (e) return vertex_node(e);
    ff_tensor *in = extra ? node->extra[k] : node->inputs[k];
    return in && in->requires_grad && !in->grad_fn && (extra || node->needs_grad[k]) ? vertex_leaf(in) : 0;
}

typedef struct {
    vertex *items;
    int n, cap;
} vertex_list;

static bool list_push(vertex_list *l, vertex v)
{
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 64;
        vertex *p = realloc(l->items, sizeof *p * (size_t)cap);
        if (!p) return false;
        l->items = p;
        l->cap = cap;
    }
    l->items[l->n++] = v;
    return true;
}

/* Open-addressing set for "visited". */
typedef struct {
    vertex *slots;
    size_t cap, n;
} vertex_set;

static size_t vertex_hash(vertex v, size_t cap) { return (size_t)((v >> 3) * 0x9E3779B97F4A7C15ull) & (cap - 1); }

static int set_insert(vertex_set *s, vertex v) /* 1 inserted, 0 present, -1 OOM */
{
    if (2 * (s->n + 1) > s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 128;
        vertex *slots = calloc(cap, sizeof *slots);
        if (!slots) return -1;
        for (size_t i = 0; i < s->cap; i++)
            if (s->slots[i]) {
                size_t h = vertex_hash(s->slots[i], cap);
                while (slots[h]) h = (h + 1) & (cap - 1);
                slots[h] = s->slots[i];
            }
        free(s->slots);
        s->slots = slots;
        s->cap = cap;
    }
    size_t h = vertex_hash(v, s->cap);
    while (s->slots[h]) {
        if (s->slots[h] == v) return 0;
        h = (h + 1) & (s->cap - 1);
    }
    s->slots[h] = v;
    s->n++;
    return 1;
}

/* Iterative DFS post-order over the vertices gradient flows to: a vertex is appended
 * after every vertex its gradient flows on to. A vertex is marked when it is expanded
 * (not when pushed), so one reachable along two paths is still finished before any of
 * its consumers. Iterative so deep graphs cannot overflow the C stack. */
static ff_status topo_sort(vertex root, vertex_list *order)
{
    vertex_set seen = {0};
    vertex_list stack = {0};
    vertex_list expanded = {0}; /* parallel to stack: non-zero once children are pushed */
    ff_status st = FF_OK;
    if (!list_push(&stack, root) || !list_push(&expanded, 0)) goto oom;
    while (stack.n) {
        vertex v = stack.items[stack.n - 1];
        if (expanded.items[stack.n - 1]) {
            stack.n--;
            expanded.n--;
            if (!list_push(order, v)) goto oom;
            continue;
        }
        int r = set_insert(&seen, v);
        if (r < 0) goto oom;
        if (r == 0) { /* finished along another path */
            stack.n--;
            expanded.n--;
            continue;
        }
        expanded.items[stack.n - 1] = 1;
        ff_node *node = as_node(v);
        if (!node) continue;
        for (int i = 0; i < node->n_inputs + node->n_extra; i++) {
            vertex e = node_edge(node, i);
            if (!e) continue;
            if (!list_push(&stack, e) || !list_push(&expanded, 0)) goto oom;
        }
    }
    goto done;
oom:
    st = ff_error(FF_ERR_OOM, "ff_backward: out of memory sorting the graph");
done:
    free(seen.slots);
    free(stack.items);
    free(expanded.items);
    return st;
}

static bool same_shape(const ff_tensor *a, const ff_tensor *b)
{
    return a->layout.ndim == b->layout.ndim &&
           memcmp(a->layout.shape, b->layout.shape, sizeof(int64_t) * (size_t)a->layout.ndim) == 0;
}

/* *acc += g, as a new tensor (recorded under create_graph). Takes ownership of g. */
static ff_status accumulate(ff_tensor **acc, ff_tensor *g)
{
    if (!*acc) {
        *acc = g;
        return FF_OK;
    }
    ff_tensor *sum = ff_add(*acc, g);
    ff_tensor_release(g);
    if (!sum) return ff_last_status();
    ff_tensor_release(*acc);
    *acc = sum;
    return FF_OK;
}

/* Runs one node: gradients for its inputs, checked and cast to each input's dtype, and
 * added to what the vertices their edges lead to have received so far. */
static ff_status run_node(ff_node *node, ff_tensor *g)
{
    int n = node->n_inputs + node->n_extra;
    ff_tensor *stack_grads[FF_NODE_MAX_INPUTS] = {NULL};
    ff_tensor **grads = stack_grads;
    if (n > FF_NODE_MAX_INPUTS) {
        grads = calloc((size_t)n, sizeof *grads);
        if (!grads) return ff_error(FF_ERR_OOM, "ff_backward: out of memory");
    }
    ff_status st = node->backward(node, g, grads);
    if (st && !strstr(ff_last_error(), node->name)) {
        char msg[900];
        snprintf(msg, sizeof msg, "%s", ff_last_error());
        ff_error(st, "ff_backward: in the gradient of '%s': %s", node->name, msg);
    }
    for (int i = 0; i < n; i++) {
        ff_tensor *in = i < node->n_inputs ? node->inputs[i] : node->extra[i - node->n_inputs];
        ff_tensor *gi = grads[i];
        grads[i] = NULL;
        if (!gi) continue;
        vertex e = node_edge(node, i);
        if (st || !e) {
            ff_tensor_release(gi);
            continue;
        }
        if (!same_shape(gi, in)) {
            char b1[160], b2[160];
            st = ff_error(FF_ERR_AUTOGRAD, "ff_backward: '%s' produced a gradient of shape %s for an input of shape %s",
                          node->name, ff_shape_str(gi->layout.ndim, gi->layout.shape, b1, sizeof b1),
                          ff_shape_str(in->layout.ndim, in->layout.shape, b2, sizeof b2));
            ff_tensor_release(gi);
            continue;
        }
        if (gi->dtype != in->dtype) {
            ff_tensor *c = ff_astype(gi, in->dtype);
            ff_tensor_release(gi);
            if (!c) {
                st = ff_last_status();
                continue;
            }
            gi = c;
        }
        st = accumulate(vertex_grad(e), gi);
    }
    if (grads != stack_grads) free(grads);
    return st;
}

/* The first gradient stored in a leaf's .grad: g itself if nothing else can see it,
 * else a contiguous copy. g may be a broadcast view (a sum's gradient), a view of
 * another tensor, or the caller's grad_output; .grad must be the leaf's own dense
 * tensor, since optimizers update it in place. */
static ff_tensor *leaf_grad(ff_tensor *g)
{
    if (atomic_load(&g->refcount) == 1 && atomic_load(&g->storage->refcount) == 1 && g->layout.offset == 0 &&
        ff_layout_is_contiguous(&g->layout))
        return ff_tensor_retain(g);
    return ff_clone(g); /* recorded under create_graph, so the copy keeps g's history */
}

ff_status ff_grad_keep(ff_tensor *t, ff_tensor *g)
{
    ff_tensor *acc = ff_tensor_retain(t->grad), *own = acc ? ff_tensor_retain(g) : leaf_grad(g);
    ff_status st = own ? accumulate(&acc, own) : ff_last_status();
    if (st == FF_OK) ff_tensor_release(t->grad), t->grad = acc;
    else ff_tensor_release(acc);
    return st;
}

/* .grad += g in place, as PyTorch's AccumulateGrad does outside create_graph: no new tensor
 * per step for a gradient that zero_grad() zeroed (set_to_none=False) or that several
 * backward passes accumulate. Only into a plain dense .grad of g's dtype and shape. */
static bool add_in_place(ff_tensor *acc, const ff_tensor *g)
{
    if (ff_grad_enabled() || acc->grad_fn || acc->requires_grad || acc->dtype != g->dtype || !same_shape(acc, g) ||
        !ff_layout_is_dense(&acc->layout) || acc->storage->backend != g->storage->backend)
        return false;
    return ff_add_(acc, g) == FF_OK;
}

/* Accumulates g into leaf's .grad and calls its post-accumulate hook. */
static ff_status leaf_accumulate(ff_tensor *leaf, ff_tensor *g)
{
    if (leaf->grad && add_in_place(leaf->grad, g)) {
        if (leaf->grad_hook) leaf->grad_hook(leaf, leaf->grad_hook_user);
        return FF_OK;
    }
    ff_clear_error();
    ff_tensor *acc = ff_tensor_retain(leaf->grad);
    ff_tensor *own = acc ? ff_tensor_retain(g) : leaf_grad(g);
    ff_status st = own ? accumulate(&acc, own) : ff_last_status();
    if (st) {
        ff_tensor_release(acc);
        return st;
    }
    ff_tensor_release(leaf->grad);
    leaf->grad = acc;
    if (leaf->grad_hook) leaf->grad_hook(leaf, leaf->grad_hook_user);
    return FF_OK;
}

/* The tensor whose hooks see vertex v's gradient: a leaf, or the node's owner while the
 * node is still its grad_fn. */
static ff_tensor *vertex_tensor(vertex v)
{
    ff_node *node = as_node(v);
    if (!node) return as_leaf(v);
    return node->owner && node->owner->grad_fn == node ? node->owner : NULL;
}

static ff_status run_backward(ff_tensor *root, const ff_tensor *grad_output, const ff_backward_opts *opts,
                              int n_capture, ff_tensor *const *capture, ff_tensor **captured)
{
    static const char fn[] = "ff_backward";
    bool create_graph = opts && opts->create_graph;
    bool retain_graph = create_graph || (opts && opts->retain_graph);
    if (!root) return ff_error(FF_ERR_INVALID, "%s: root is NULL", fn);
    ff_view_history_refresh(root);
    if (!root->requires_grad)
        return ff_error(FF_ERR_AUTOGRAD, "%s: the tensor does not require grad and has no grad_fn", fn);
    ff_tensor *g0;
    if (grad_output) {
        if (!same_shape(grad_output, root)) {
            char b1[160], b2[160];
            return ff_error(FF_ERR_INVALID, "%s: grad_output shape %s does not match the output shape %s", fn,
                            ff_shape_str(grad_output->layout.ndim, grad_output->layout.shape, b1, sizeof b1),
                            ff_shape_str(root->layout.ndim, root->layout.shape, b2, sizeof b2));
        }
        g0 = ff_tensor_retain((ff_tensor *)grad_output);
    } else {
        if (ff_tensor_numel(root) != 1)
            return ff_error(FF_ERR_INVALID,
                            "%s: grad can be implicitly created only for outputs with one element (this one has %lld); "
                            "pass grad_output",
                            fn, (long long)ff_tensor_numel(root));
        g0 = ff_ones_like(root);
        if (!g0) return ff_last_status();
    }
    vertex stack_captures[8], *want = stack_captures;
    if (n_capture > 8 && !(want = malloc(sizeof *want * (size_t)n_capture))) {
        ff_tensor_release(g0);
        return ff_error(FF_ERR_OOM, "%s: out of memory", fn);
    }
    for (int c = 0; c < n_capture; c++) want[c] = vertex_of(capture[c]);
    vertex top = vertex_of(root);
    vertex_list order = {0};
    ff_status st = topo_sort(top, &order);
    if (st) {
        ff_tensor_release(g0);
        if (want != stack_captures) free(want);
        return st;
    }
    bool prev_mode = ff_set_grad_enabled(create_graph);
    *vertex_grad(top) = g0;
    for (int k = order.n - 1; k >= 0; k--) {
        vertex v = order.items[k];
        ff_tensor **slot = vertex_grad(v), *g = *slot;
        *slot = NULL;
        if (!g) continue;
        ff_tensor *t = vertex_tensor(v);
        if (st == FF_OK && t && t->hooks) st = ff_tensor_hooks_run(t, &g, n_capture == 0);
        if (st == FF_OK) {
            for (int c = 0; c < n_capture; c++)
                if (want[c] == v && !captured[c]) captured[c] = ff_tensor_retain(g);
            if (as_node(v))
                st = run_node(as_node(v), g);
            else if (n_capture == 0)
                st = leaf_accumulate(as_leaf(v), g);
        }
        ff_tensor_release(g);
    }
    if (!retain_graph)
        for (int k = 0; k < order.n; k++)
            if (as_node(order.items[k])) node_free_saved(as_node(order.items[k]));
    ff_set_grad_enabled(prev_mode);
    free(order.items);
    if (want != stack_captures) free(want);
    return st;
}

/* Autocast is off while a backward pass runs: the formulas follow the dtypes the
 * forward pass saved, as PyTorch's do. */
static ff_status run_backward_no_autocast(ff_tensor *root, const ff_tensor *grad_output, const ff_backward_opts *opts,
                                          int n_inputs, ff_tensor *const *inputs, ff_tensor **grads_out)
{
    ff_dtype ac = ff_autocast_swap(FF_F32);
    ff_status st = run_backward(root, grad_output, opts, n_inputs, inputs, grads_out);
    ff_autocast_swap(ac);
    return st;
}

ff_status ff_backward(ff_tensor *root, const ff_tensor *grad_output, const ff_backward_opts *opts)
{
    return run_backward_no_autocast(root, grad_output, opts, 0, NULL, NULL);
}

ff_status ff_autograd_grad(ff_tensor *output, const ff_tensor *grad_output, int n_inputs, ff_tensor *const *inputs,
                           ff_tensor **grads_out, const ff_backward_opts *opts)
{
    if (n_inputs <= 0 || !inputs || !grads_out)
        return ff_error(FF_ERR_INVALID, "ff_autograd_grad: need at least one input and an output array");
    for (int i = 0; i < n_inputs; i++) {
        grads_out[i] = NULL;
        if (!inputs[i] || !inputs[i]->requires_grad)
            return ff_error(FF_ERR_AUTOGRAD, "ff_autograd_grad: input %d does not require grad", i);
    }
    ff_status st = run_backward_no_autocast(output, grad_output, opts, n_inputs, inputs, grads_out);
    if (st)
        for (int i = 0; i < n_inputs; i++) {
            ff_tensor_release(grads_out[i]);
            grads_out[i] = NULL;
        }
    return st;
}

/* Sum grad over the axes that broadcasting added or stretched, back to `shape`. */
ff_tensor *ff_sum_to_shape(const ff_tensor *grad, int ndim, const int64_t *shape)
{
    int gnd = grad->layout.ndim;
    if (gnd == ndim && memcmp(grad->layout.shape, shape, sizeof(int64_t) * (size_t)ndim) == 0)
        return ff_tensor_retain((ff_tensor *)grad);
    int axes[FF_MAX_DIMS], na = 0, lead = gnd - ndim;
    for (int d = 0; d < gnd; d++)
        if (d < lead || (shape[d - lead] == 1 && grad->layout.shape[d] != 1)) axes[na++] = d;
    ff_tensor *s = na ? ff_sum(grad, na, axes, true) : ff_tensor_retain((ff_tensor *)grad);
    if (!s) return NULL;
    ff_tensor *r = ff_reshape(s, ndim, shape);
    ff_tensor_release(s);
    return r;
}
