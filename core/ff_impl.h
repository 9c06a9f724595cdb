/*
 * Private to libfusionflow: the structs behind the opaque public types and the
 * core's internal services. Included by core/, ops/, autograd/, nn/, io/; never by a
 * backend (backends see only include/ff/backend_abi.h).
 */
#ifndef FF_IMPL_H
#define FF_IMPL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "ff/ff.h"

/* ---- backends ------------------------------------------------------------ */
struct ff_backend {
    const ff_backend_vtable *vt;
    void *ctx;
    void *dl_handle;
    char *path; /* file it came from */
    char *name;
};

/* Entry i of the vtable if the plugin's struct is large enough to have it, else NULL.
 * Use for optional entries: FF_VT_OPT(be, softmax). */
#define FF_VT_OPT(be, field)                                                              \
    ((offsetof(ff_backend_vtable, field) + sizeof((be)->vt->field) <= (be)->vt->struct_size) \
         ? (be)->vt->field                                                                \
         : NULL)

/* ---- layout: pure shape/stride math, no memory --------------------------- */
typedef struct ff_layout {
    int ndim;
    int64_t shape[FF_MAX_DIMS];
    int64_t strides[FF_MAX_DIMS]; /* elements */
    int64_t offset;               /* elements */
} ff_layout;

/* All return FF_OK or set an error naming `fn` (the public function being served). */
ff_status ff_layout_init_contiguous(ff_layout *l, int ndim, const int64_t *shape, const char *fn);
ff_status ff_layout_numel(const ff_layout *l, int64_t *numel);            /* overflow-checked */
bool ff_layout_is_contiguous(const ff_layout *l);
/* Non-overlapping and dense: the dims of extent > 1, ordered by stride, are contiguous in
 * some order (a transpose or any permutation of a contiguous tensor). Empty: false. */
bool ff_layout_is_dense(const ff_layout *l);
/* Smallest and one-past-largest element index the layout touches (for bounds checks). */
void ff_layout_span(const ff_layout *l, int64_t *lo, int64_t *hi);
ff_status ff_layout_normalize_axis(int axis, int ndim, int *out, const char *fn);
ff_status ff_layout_permute(const ff_layout *in, const int *perm, ff_layout *out, const char *fn);
ff_status ff_layout_slice(const ff_layout *in, int axis, int64_t start, int64_t stop, int64_t step,
                          ff_layout *out, const char *fn);
ff_status ff_layout_select(const ff_layout *in, int axis, int64_t index, ff_layout *out, const char *fn);
ff_status ff_layout_expand(const ff_layout *in, int ndim, const int64_t *shape, ff_layout *out,
                           const char *fn);
ff_status ff_layout_squeeze(const ff_layout *in, int axis, ff_layout *out, const char *fn);
ff_status ff_layout_unsqueeze(const ff_layout *in, int axis, ff_layout *out, const char *fn);
/* Resolves one -1 in shape and checks the element count. */
ff_status ff_layout_infer_shape(int64_t numel, int ndim, const int64_t *shape, int64_t *out,
                                const char *fn);
/* A view with the new shape over the same elements, if strides allow; returns
 * FF_ERR_INVALID without setting an error if a copy is needed. */
ff_status ff_layout_reshape_view(const ff_layout *in, int ndim, const int64_t *shape, ff_layout *out);
/* Python slice bounds for a positive step over a dim of size n: negative values count
 * from the end, then both clamp to [0, n] with stop >= start. */
static inline void ff_slice_bounds(int64_t n, int64_t *start, int64_t *stop)
{
    int64_t s = *start < 0 ? *start + n : *start, e = *stop < 0 ? *stop + n : *stop;
    s = s < 0 ? 0 : (s > n ? n : s);
    e = e < s ? s : (e > n ? n : e);
    *start = s;
    *stop = e;
}
/* NumPy broadcasting of two shapes. */
ff_status ff_broadcast_shapes(int na, const int64_t *a, int nb, const int64_t *b, int *nout,
                              int64_t *out, const char *fn);
/* Formats a shape as "[2, 3]" into buf. */
const char *ff_shape_str(int ndim, const int64_t *shape, char *buf, size_t n);

/* ---- storage and tensors ------------------------------------------------- */
typedef struct ff_storage {
    atomic_long refcount;
    ff_backend *backend;
    void *buf;
    size_t nbytes;
    atomic_ulong version; /* bumped by every write after the first, checked by autograd */
    /* Not yet written: the first write into a new tensor (its op's result) is not a
     * modification anyone saved a version of, so it costs no atomic bump. */
    bool fresh;
    /* Foreign memory (DLPack import, mapped files): when set, the last release calls
     * release_external(external_ctx) instead of the backend's free. */
    void (*release_external)(void *ctx);
    void *external_ctx;
    /* set by the kernel observer that wants to hear of this storage's death (a graph
     * capture, for the storages it saw born), with a tag of its choosing */
    struct ff_kernel_observer *observer;
    int32_t observer_tag;
} ff_storage;

struct ff_node;

struct ff_tensor {
    atomic_long refcount;
    ff_storage *storage;
    ff_dtype dtype;
    ff_layout layout;
    /* autograd */
    bool requires_grad;
    ff_tensor *grad;         /* owned */
    struct ff_node *grad_fn; /* owned; NULL for leaves */
    ff_tensor *bw_grad;      /* a leaf's gradient so far, only while backward() runs */
    /* leaves: called by backward right after .grad received this pass's gradient */
    void (*grad_hook)(ff_tensor *leaf, void *user);
    void *grad_hook_user;
    /* Tensor.register_hook's functions and retain_grad's entry (fn NULL), in the order
     * they were registered (owned list, freed with the tensor; autograd/tensor_hooks.c) */
    struct ff_tensor_hook *hooks;
    /* A differentiable view (views.c) shares its base's history, as PyTorch's views do
     * (autograd/view_history.c): view_base is the tensor at the root of the chain of views
     * (retained), and view_version the storage version at which this view's grad_fn was
     * last derived from it; a write since then (an in-place op on the base or on another
     * view) makes the view take its history from the base anew when next asked. */
    ff_tensor *view_base;
    unsigned long view_version;
    bool view_no_grad; /* made while grad mode was off: in-place with grad is refused */
    /* one of the views a multi-view op (split, chunk, unbind) returned, or a view of one:
     * in-place with grad is refused, as PyTorch refuses it (the op's name) */
    const char *view_of_many;
};
typedef struct ff_tensor_hook {
    struct ff_tensor_hook *next;
    int64_t id;
    ff_tensor_hook_fn fn; /* NULL: retain_grad's entry */
    void *user;
} ff_tensor_hook;

/* New contiguous tensor with uninitialized storage on be. */
ff_tensor *ff_tensor_new(ff_backend *be, int ndim, const int64_t *shape, ff_dtype dtype, const char *fn);
/* How a tensor drops its grad_fn when it dies: installed by autograd (which owns nodes)
 * before it attaches the first one, so the core never calls into autograd. */
void ff_tensor_set_history_release(void (*release)(ff_tensor *t, struct ff_node *node));
/* New tensor object viewing src's storage with layout l (no autograd history). */
ff_tensor *ff_tensor_new_view(const ff_tensor *src, const ff_layout *l);
/* A new tensor of src's shape in dtype, with src's strides when src is non-overlapping
 * and dense, else contiguous: PyTorch's memory_format=preserve_format, which casts keep. */
ff_tensor *ff_tensor_new_like(const ff_tensor *src, ff_dtype dtype, const char *fn);
/* The ff_view a kernel sees for t (or for t with another layout). */
void ff_tensor_view(const ff_tensor *t, ff_view *v);
void ff_tensor_view_layout(const ff_tensor *t, const ff_layout *l, ff_view *v);
void ff_storage_bump_version(ff_storage *s);
/* From now on every write into s bumps its version (a view or a saved tensor can see it).
 * Written only while still set: tensors shared between threads (an op's inputs) are
 * read here by all of them, and written by none. */
static inline void ff_storage_seen(ff_storage *s)
{
    if (s->fresh) s->fresh = false;
}
/* A kernel wrote s: bumps the version unless this was the first write of a new tensor. */
static inline void ff_storage_note_write(ff_storage *s)
{
    if (s->fresh)
        s->fresh = false;
    else
        atomic_fetch_add_explicit(&s->version, 1, memory_order_relaxed);
}
void ff_storage_retain(ff_storage *s);
void ff_storage_release(ff_storage *s); /* the last release frees the buffer */
/* Tensor headers alive in the process (ff_debug_live_tensors); leak tests count on it. */
extern atomic_long ff_live_tensor_count;

/* ---- views and in-place ops under autograd (autograd/view_history.c) ------ */
/* Makes view (just made over src's storage by a differentiable view op) share the
 * history of src's base, as PyTorch's views do. */
void ff_view_track(ff_tensor *view, const ff_tensor *src);
/* A view whose base was written since its grad_fn was derived (or that was made before
 * its base required grad) takes a fresh grad_fn from the base: the lazy regeneration of
 * PyTorch's views. Cheap when t is no view or nothing changed; called wherever history
 * is read (recording, requires_grad, backward). */
void ff_view_history_refresh(ff_tensor *t);
/* Whether an in-place write into x with operand y (may be NULL) must be recorded:
 * grad mode is on and x, y or x's base requires grad. Refreshes x's history first. */
bool ff_inplace_records(ff_tensor *x, const ff_tensor *y);
/* The checks of an in-place op that will be recorded (PyTorch's errors: a leaf that
 * requires grad, a view of one, a view made under no_grad or by a multi-view op); the
 * caller checks the target is no broadcast view, as for every in-place op. */
ff_status ff_inplace_check(ff_tensor *x, const char *fn);
/* The one mechanism of every in-place op under autograd: r is x's new value, computed
 * out of place from x (and the operands) with autograd; it is written into x's memory
 * and x's history is rebased onto it: x (or, for a view, its base, through a copy-slices
 * node) now has r's history. When r is a temporary only the caller holds (temporary),
 * its node is taken over (what it saved of x is kept valid: see the .c file); else x
 * gets an identity node leading to r (copy_). */
ff_status ff_inplace_commit(ff_tensor *x, ff_tensor *r, bool temporary, const char *fn);

/* ---- errors ------------------------------------------------------------- */
/* Records a message for this thread and returns code (so `return ff_error(...)` works):
 * the public ff_set_error under the short name the core has always used. */
#define ff_error ff_set_error
/* Used as the backend's host->set_error: keeps the status the core sets afterwards. */
void ff_error_set_message(const char *fmt, ...);
/* Prefixes the current message with "fn: " unless it already starts with it. */
void ff_error_prefix(const char *fn);
void ff_log_debug(const char *fmt, ...);
extern const ff_host_api ff_host;

/* ---- checked arithmetic ------------------------------------------------- */
static inline bool ff_mul_overflow_i64(int64_t a, int64_t b, int64_t *out)
{
    return __builtin_mul_overflow(a, b, out);
}
static inline bool ff_add_overflow_i64(int64_t a, int64_t b, int64_t *out)
{
    return __builtin_add_overflow(a, b, out);
}

/* ---- kernels: the only place the core calls the vtable ------------------ */
/* Each validates what the backend needs (same backend, dtypes as the ABI demands),
 * checks supports(), calls the entry and turns a failure into an error naming fn.
 * Shapes must already be resolved by the caller. dst is written, never reallocated. */
ff_status ff_kernel_fill(const ff_tensor *dst, double value, const char *fn);
/* The same for a number: an INT keeps all 64 bits into integer dtypes. */
ff_status ff_kernel_fill_number(const ff_tensor *dst, ff_number value, const char *fn);
ff_status ff_kernel_copy(const ff_tensor *dst, const ff_tensor *src, const char *fn); /* same shape */
/* nbytes of host memory into contiguous dst's elements (at its offset): one upload,
 * reported to the kernel observer, the version bumped. */
ff_status ff_kernel_upload(const ff_tensor *dst, const void *src, size_t nbytes, const char *fn);
ff_status ff_kernel_unary(ff_unary_op op, const ff_tensor *dst, const ff_tensor *src, const char *fn);
/* a and b are broadcast to dst's shape here (stride 0), so they may have any
 * broadcast-compatible shape. */
ff_status ff_kernel_binary(ff_binary_op op, const ff_tensor *dst, const ff_tensor *a,
                           const ff_tensor *b, const char *fn);
ff_status ff_kernel_reduce(ff_reduce_op op, const ff_tensor *dst, const ff_tensor *src,
                           uint32_t axes_mask, const char *fn); /* dst in keepdim form */
ff_status ff_kernel_matmul(const ff_tensor *dst, const ff_tensor *a, const ff_tensor *b, const char *fn);
ff_status ff_kernel_where(const ff_tensor *dst, const ff_tensor *cond, const ff_tensor *a,
                          const ff_tensor *b, const char *fn);
ff_status ff_kernel_gather(const ff_tensor *dst, const ff_tensor *src, const ff_tensor *index, int axis,
                           const char *fn);
ff_status ff_kernel_scatter_add(const ff_tensor *dst, const ff_tensor *index, const ff_tensor *src,
                                int axis, const char *fn);
ff_status ff_kernel_random(const ff_tensor *dst, ff_random_dist dist, uint64_t seed,
                           uint64_t counter_base, double p0, double p1, const char *fn);
/* Uses the backend's optional softmax if present, else returns FF_ERR_UNSUPPORTED
 * without an error message so the caller composes it. */
ff_status ff_kernel_conv2d(int which, const ff_tensor *dst, const ff_tensor *a, const ff_tensor *b,
                           const ff_conv2d_params *p, const char *fn);
ff_status ff_kernel_argsort(const ff_tensor *dst, const ff_tensor *src, int axis, bool descending, const char *fn);
ff_status ff_kernel_fft(int op, const ff_tensor *dst, const ff_tensor *src, int axis, const char *fn);
ff_status ff_kernel_scan(int op, const ff_tensor *dst, const ff_tensor *src, int axis, const char *fn);
ff_status ff_kernel_linalg(int op, ff_tensor *const *dst, int n_dst, const ff_tensor *const *src, int n_src,
                           const char *fn);
ff_status ff_kernel_pool2d(int op, ff_tensor *dst, const ff_tensor *const *src, int n_src, const ff_pool2d_params *p,
                           const char *fn);
ff_status ff_kernel_batch_norm(int op, ff_tensor *const *dst, int n_dst, const ff_tensor *const *src, int n_src,
                               double eps, const char *fn);
/* The layer_norm entry (op 0 forward, 1 backward; views as the ABI comment, x [R, D]).
 * FF_ERR_UNSUPPORTED, no message, when the backend lacks it or declines the dtype (and,
 * for half, its f32 form too): the caller composes. */
ff_status ff_kernel_layer_norm(int op, ff_tensor *const *dst, int n_dst, const ff_tensor *const *src, int n_src,
                               double eps, const char *fn);
ff_status ff_kernel_softmax(const ff_tensor *dst, const ff_tensor *src, int axis, bool log,
                            const char *fn);
/* The qmatmul entry; FF_ERR_UNSUPPORTED with a message when the backend lacks it. */
ff_status ff_kernel_qmatmul(ff_tensor *dst, const ff_tensor *const *src, int n_src, const ff_qmatmul_params *p,
                            const char *fn);
/* The linear entry; FF_ERR_UNSUPPORTED, no message, when it cannot run (a kernel
 * observer, no entry, act or dtype declined): the caller composes. */
ff_status ff_kernel_linear(ff_tensor *dst, const ff_tensor *const *src, int n_src, int act, const char *fn);
/* The attention entry (or its f32 detour for half); FF_ERR_UNSUPPORTED, no message, when
 * the backend cannot run it: the caller composes. */
ff_status ff_kernel_attention(int op, ff_tensor *const *dst, int n_dst, const ff_tensor *const *src, int n_src,
                              const ff_attention_params *p, const char *fn);

/* The fused entry run eagerly (core/kernel_fused.c): ts[0..n_views) are the program's
 * views in value order, one dtype; each broadcasts to ts[0]'s shape, the iteration shape,
 * which the views the program writes must have. Written tensors get their versions
 * bumped. FF_ERR_UNSUPPORTED, no message, where the program would not run exactly as its
 * instructions one by one (a kernel observer is set: a capture must see the plain ops;
 * the backend lacks the entry or declines the dtype or an op; a written view overlaps
 * itself or another view): the caller runs the plain ops. */
ff_status ff_kernel_fused(ff_tensor *const *ts, int n_views, int n_values, const ff_fused_inst *inst, int n_inst,
                          const char *fn);

/* Checks every tensor is non-NULL and on the same backend; returns that backend. */
ff_backend *ff_common_backend(int n, const ff_tensor *const *ts, const char *fn);

/* ---- the kernel observer: how a capture sees the kernel layer ------------- */
/* The core reports what it does to one observer per thread, which graph/capture.c
 * installs for the length of a capture (the way autograd installs the history release
 * above): the core names no graph function, and while nothing observes each report
 * point costs one thread-local load and a predictable branch. */
typedef struct ff_kernel_params {
    ff_scalar value;         /* fill */
    uint32_t axes_mask;      /* reduce */
    int axis, flag;          /* gather/scatter/softmax(log)/scan/argsort(descending)/fft */
    int n_dst;               /* entries with arrays of outputs */
    double eps;              /* batch_norm, layer_norm */
    ff_conv2d_params conv;
    ff_pool2d_params pool;
    ff_random_dist dist;
    uint64_t seed, counter_base;
    double p0, p1;
    ff_attention_params attn;
} ff_kernel_params;

/* Called on the observed thread right after the event, except storage_dead, which runs
 * wherever a storage's last reference goes, for storages the observer claimed. Every
 * callback gets the observer it was installed as (embed it and step back to your own
 * state). None may fail: an observer keeps its own errors and reports them later. */
typedef struct ff_kernel_observer ff_kernel_observer;
struct ff_kernel_observer {
    /* A kernel entry that succeeded: kind (FF_KIND_*), op, its n views (outputs first:
     * p's n_dst of them, or 1) and the storages behind them; p is NULL for entries
     * with no parameters. */
    void (*kernel)(ff_kernel_observer *self, int kind, int op, int n, const ff_view *views,
                   ff_storage *const *stor, const ff_kernel_params *p);
    /* An entry that failed (st); ff_last_error() holds the backend's message. */
    void (*failure)(ff_kernel_observer *self, ff_status st);
    /* A storage was allocated. To hear of its death, set s->observer = self (and
     * s->observer_tag as you like); clear s->observer to stop listening. */
    void (*storage_new)(ff_kernel_observer *self, ff_storage *s);
    void (*storage_dead)(ff_kernel_observer *self, ff_storage *s); /* before it is freed */
    /* nbytes of host memory written at byte_offset of s (an upload that succeeded). */
    void (*upload)(ff_kernel_observer *self, ff_storage *s, size_t byte_offset, const void *host, size_t nbytes);
    /* A download that succeeded: nbytes at byte_offset of s, now in host. */
    void (*host_read)(ff_kernel_observer *self, ff_storage *s, size_t byte_offset, const void *host, size_t nbytes,
                      ff_dtype dtype);
    /* The global generator handed out n counters from counter_base under seed. */
    void (*random_draw)(ff_kernel_observer *self, uint64_t seed, uint64_t counter_base, uint64_t n);
};
/* This thread's observer, NULL when none: the core tests it before every report. */
extern _Thread_local ff_kernel_observer *ff_kernel_observing;
/* Installs obs (NULL removes it) for this thread; returns the one it replaces. */
ff_kernel_observer *ff_kernel_observer_set(ff_kernel_observer *obs);
/* Reports event (a callback's name) with its arguments after self, if observed. */
#define FF_OBSERVE(event, ...)                                                           \
    do {                                                                                 \
        ff_kernel_observer *obs_ = ff_kernel_observing;                                  \
        if (obs_) obs_->event(obs_, __VA_ARGS__);                                        \
    } while (0)

/* ---- graph internals (graph/) --------------------------------------------- */
/* For ff-conformance's graph mode: a capture that records only kernels on backend
 * `only` (others run unrecorded) and records every read of a tensor's values as a check;
 * ff_graph_check_replay then replays (random ops drawing what the capture drew) and
 * compares each read with what eager read at that point. Returns the number of reads
 * that differ (the first described in msg), or -1 with the error set if the replay
 * failed. */
ff_status ff_graph_capture_begin_checked(ff_backend *only);
int ff_graph_check_replay(struct ff_graph *g, char *msg, size_t cap);

/* ---- autograd internals (autograd/engine.c) ------------------------------ */
/* Runs t's register_hook functions on *g (t's gradient of this pass) in order; a
 * replacement takes *g's place (the old one released). A retain_grad entry (fn NULL)
 * keeps *g as it is at that point in .grad when keep is set (ff_backward, not
 * ff_autograd_grad). autograd/tensor_hooks.c. */
ff_status ff_tensor_hooks_run(ff_tensor *t, ff_tensor **g, bool keep);
/* Accumulates g into t->grad (a new buffer the first time), as backward does for leaves. */
ff_status ff_grad_keep(ff_tensor *t, ff_tensor *g);
#define FF_NODE_MAX_INPUTS 4
#define FF_NODE_MAX_SAVED 6 /* attention: q, k, v, o, lse, mask */

struct ff_node;
/* Computes the gradients of the node's inputs from the gradient of its output.
 * grad_inputs[i] receives a new reference, or stays NULL (no gradient / not needed).
 * Gradients must have the input's shape; the engine checks it. Formulas use ff ops. */
typedef ff_status (*ff_backward_fn)(struct ff_node *node, const ff_tensor *grad_out,
                                    ff_tensor **grad_inputs);

/* The graph's vertices are nodes and leaves. A node's edge i leads to the history that
 * inputs[i] had when the node was recorded: its grad_fn then (edges[i], retained), or the
 * leaf inputs[i] itself (edges[i] NULL, needs_grad[i] set). Edges, not inputs[i]->grad_fn,
 * because an in-place op gives a tensor a new grad_fn (rebases it) while the nodes that
 * used its old value must still reach the old one. */
typedef struct ff_node {
    atomic_long refcount;
    const char *name;
    ff_backward_fn backward;
    int n_inputs;
    ff_tensor *inputs[FF_NODE_MAX_INPUTS]; /* retained: values and shapes for the formulas */
    struct ff_node *edges[FF_NODE_MAX_INPUTS]; /* retained: see above */
    bool needs_grad[FF_NODE_MAX_INPUTS];   /* inputs[i] required grad when recorded */
    /* the tensor whose grad_fn this is (not retained; cleared when it dies or is rebased):
     * backward runs its hooks and retain_grad on the node's gradient */
    ff_tensor *owner;
    ff_tensor *bw_grad; /* scratch used only while backward() runs */
    int n_saved;
    ff_tensor *saved[FF_NODE_MAX_SAVED];   /* detached aliases of saved values */
    unsigned long saved_version[FF_NODE_MAX_SAVED];
    bool released;                         /* saved values freed after backward */
    /* op parameters, free for each op to use */
    int64_t ip[2 * FF_MAX_DIMS + 4];
    double dp[4];
    int nip;
    /* extra inputs for ops with more than FF_NODE_MAX_INPUTS (concat/stack) */
    int n_extra;
    ff_tensor **extra; /* retained */
    struct ff_node **extra_edges; /* retained, as edges */
} ff_node;

/* True if grad mode is on and any of the tensors requires grad. */
bool ff_autograd_needed(int n, const ff_tensor *const *inputs);
/* Sets this thread's autocast dtype without checks and returns the previous one (the
 * engine turns autocast off around a backward pass). */
ff_dtype ff_autocast_swap(ff_dtype dtype);
/* Creates a node for out with the given inputs (retained) and attaches it: out gets
 * requires_grad and grad_fn. Returns the node (borrowed; out owns it) or NULL on OOM
 * (out is left without history and an error is set). */
ff_node *ff_autograd_record(ff_tensor *out, const char *name, ff_backward_fn backward, int n,
                            const ff_tensor *const *inputs);
/* Appends n more inputs to node (past FF_NODE_MAX_INPUTS: concat, RNN layers), with their
 * edges. On failure (out of memory) node keeps the inputs it had and an error is set. */
ff_status ff_node_add_extra(ff_node *node, int n, const ff_tensor *const *ts);
/* Saves a value for backward (a detached alias; the storage version is remembered). */
ff_status ff_node_save(ff_node *node, const ff_tensor *t);
/* Returns saved value i (borrowed), or NULL with FF_ERR_AUTOGRAD if it was modified
 * in place since it was saved or the graph was already freed. */
const ff_tensor *ff_node_saved(ff_node *node, int i);
void ff_node_release(ff_node *node);
/* Sums grad over broadcast axes so it has the shape (ndim, shape) (new reference). */
ff_tensor *ff_sum_to_shape(const ff_tensor *grad, int ndim, const int64_t *shape);

/* ---- creation helpers ---------------------------------------------------- */
/* A 0-d tensor of dtype on be holding value. */
ff_tensor *ff_scalar_on(ff_backend *be, double value, ff_dtype dtype);
/* ff_result_type over n tensors (all non-NULL). */
ff_dtype ff_result_type_n(int n, const ff_tensor *const *ts);
/* Float dtype ops on integers compute in (f32 for ints/bool, same for floats). */
ff_dtype ff_dtype_to_float(ff_dtype t); /* floats and complex stay, the rest -> f32 */
/* The dtypes gradients flow through: the floats and the complex ones. */
static inline bool ff_dtype_has_grad(ff_dtype t) { return ff_dtype_is_float(t) || ff_dtype_is_complex(t); }
ff_dtype ff_dtype_real_of(ff_dtype t);     /* c64 -> f32, c128 -> f64; others stay */
ff_dtype ff_dtype_complex_of(ff_dtype t);  /* f64 (and c128) -> c128, every other -> c64 */

/* core/kernel_complex.c: complex tensors on a backend that does not compute them, through
 * real views of the same storage ([S] c64 = [S, 2] f32). The kernel wrappers call these
 * for every entry whose supports() declines the complex dtype. */
bool ff_kernel_complex_needed(const ff_backend *be, ff_op_kind kind, int op, ff_dtype dt);
ff_status ff_complex_copy(const ff_tensor *dst, const ff_tensor *src, const char *fn);
ff_status ff_complex_fill(const ff_tensor *dst, ff_number value, const char *fn);
ff_status ff_complex_unary(ff_unary_op op, const ff_tensor *dst, const ff_tensor *src, const char *fn);
ff_status ff_complex_binary(ff_binary_op op, const ff_tensor *dst, const ff_tensor *a, const ff_tensor *b,
                            const char *fn);
ff_status ff_complex_reduce(ff_reduce_op op, const ff_tensor *dst, const ff_tensor *src, uint32_t axes_mask,
                            const char *fn);
ff_status ff_complex_where(const ff_tensor *dst, const ff_tensor *cond, const ff_tensor *a, const ff_tensor *b,
                           const char *fn);
ff_status ff_complex_gather(const ff_tensor *dst, const ff_tensor *src, const ff_tensor *index, int axis,
                            const char *fn);
ff_status ff_complex_scatter_add(const ff_tensor *dst, const ff_tensor *index, const ff_tensor *src, int axis,
                                 const char *fn);
ff_status ff_complex_random(const ff_tensor *dst, ff_random_dist dist, uint64_t seed, uint64_t counter_base,
                            double p0, double p1, const char *fn);

/* Forces (on) or stops forcing the core's composition of kind where a backend has the entry
 * (softmax, batch_norm, pool2d: what FF_SOFTMAX / FF_BATCH_NORM / FF_POOL=compose do), for
 * the whole process, without touching the environment that other threads read. For tests. */
void ff_ops_force_compose(ff_op_kind kind, bool on);

/* Optimizers' fused step (nn/optim_fused.c): whether it is allowed (the FF_OPTIM_FUSED
 * variable, read once, unless set here: for tests), and how many parameter updates took
 * it in this process (so a test can tell it ran). */
void ff_optim_fused_allow(bool on);
int64_t ff_optim_fused_count(void);

#endif /* FF_IMPL_H */
