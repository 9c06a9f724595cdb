/* Helpers shared by the op files in ops/: the patterns every op follows. */
#ifndef FF_OPS_IMPL_H
#define FF_OPS_IMPL_H

#include "ff_impl.h"

/* Returns t converted to dtype, or t retained if it already has it. Used to bring
 * operands to the computation dtype; the op's own node sees the original inputs, and
 * the engine casts gradients back. The copy is tracked (an astype node) only when t
 * requires grad, so a formula that uses the saved cast operand under create_graph
 * still reaches t. */
ff_tensor *ff_op_cast(const ff_tensor *t, ff_dtype dtype, const char *fn);

/* Autocast (ops/autocast.c, include/ff/amp.h). LOW: the matmul-like ops' rule, every
 * f32/f16/bf16 operand to the autocast dtype (nothing when one is f64 or an integer);
 * WIDE: the precision-sensitive ops' rule, half operands to f32. When autocast is off or
 * nothing needs a cast, returns 0 and the op runs as it is; else fills out[0..n) with new
 * references (NULL inputs stay NULL) and returns n, and the op calls itself on those
 * (which then need no cast) and releases them with ff_autocast_release; -1 on error. */
typedef enum ff_autocast_rule { FF_AUTOCAST_LOW, FF_AUTOCAST_WIDE } ff_autocast_rule;
int ff_autocast_operands(ff_autocast_rule rule, int n, const ff_tensor *const *in, ff_tensor **out, const char *fn);
void ff_autocast_release(int n, ff_tensor **t);
/* ops/autocast_cache.c: the cast of an operand to the autocast dtype, from this region's
 * cache when t is a parameter (a leaf requiring grad) whose version has not moved; the
 * cache is emptied when the region ends. Stats: casts made and cache hits on this thread
 * since it started (for tests). */
ff_tensor *ff_autocast_cast(const ff_tensor *t, ff_dtype target, const char *fn);
void ff_autocast_cache_clear(void);
void ff_autocast_cache_stats(int64_t *casts, int64_t *hits);

/* Records node `name` on out if any input requires grad; on failure releases out and
 * returns NULL. Saves the listed tensors (may be NULL entries, skipped). */
ff_tensor *ff_op_record(ff_tensor *out, const char *name, ff_backward_fn bw, int n,
                        const ff_tensor *const *inputs, int nsave, const ff_tensor *const *save);

/* Same, returning the node (or NULL when none was needed or on failure: check
 * *out_ok). Use when the op must store parameters in node->ip / node->dp. */
ff_node *ff_op_record_node(ff_tensor **out, const char *name, ff_backward_fn bw, int n,
                           const ff_tensor *const *inputs, int nsave, const ff_tensor *const *save);

/* Resolves an axes list (negative allowed, no duplicates; naxes == 0 means all) to a
 * bit mask over ndim dims. */
ff_status ff_axes_mask(int ndim, int naxes, const int *axes, uint32_t *mask, const char *fn);
/* Shape of a reduction: keepdim form (size 1 on reduced axes) and the squeezed form. */
void ff_reduced_shape(const ff_layout *l, uint32_t mask, int64_t *keep_shape, int *out_ndim, int64_t *out_shape);

/* a op b computed in dtype cdt (both cast to it; comparisons write bool), skipping
 * ff_binary's promotion: e.g. integer DIV, which truncates, for floor_divide. */
ff_tensor *ff_op_binary_in(ff_binary_op op, const ff_tensor *a, const ff_tensor *b, ff_dtype cdt, const char *fn);

/* The start of every in-place op on x (operand y, may be NULL): whether autograd records it
 * (ff_inplace_records), and *st set if it is refused: PyTorch's autograd rules when
 * recorded (ff_inplace_check), and a broadcast (stride-0) target unless allow_broadcast
 * and the write is not recorded (a fill). ops/inplace.c. */
bool ff_op_inplace_begin(ff_tensor *x, const ff_tensor *y, bool allow_broadcast, const char *fn, ff_status *st);

/* The rules of the destination-passing forms (ff_*_out): no autograd involved while
 * grad mode is on, and out is not a broadcast view. */
ff_status ff_op_check_out(const ff_tensor *out, int n, const ff_tensor *const *inputs, const char *fn);

/* Whether an op with an optional entry and a composition behind it (conv2d, batch_norm,
 * pool2d) takes the entry for x: x's backend supports every op in [op_first, op_last] of
 * kind for x's dtype, and the environment variable env is not "compose" (which forces the
 * composition, to compare or benchmark the two). */
bool ff_op_entry_enabled(const ff_tensor *x, ff_op_kind kind, int op_first, int op_last, const char *env);
/* layer_norm.c: whether ff_layer_norm runs on the backend's layer_norm entry (it has it
 * for x's dtype, weight and bias share x's dtype and backend, D > 0, FF_LAYER_NORM is not
 * "compose"), and the node that does; NULL with FF_ERR_UNSUPPORTED and no message when
 * the backend declines after all (the caller composes). */
bool ff_layer_norm_entry_ok(const ff_tensor *x, int nnorm, const ff_tensor *weight, const ff_tensor *bias);
ff_tensor *ff_layer_norm_node(const ff_tensor *x, int nnorm, const ff_tensor *weight, const ff_tensor *bias,
                              double eps, const char *fn);
/* Whether kind's composition is forced: ff_ops_force_compose, or the variable env = "compose". */
bool ff_op_compose_forced(ff_op_kind kind, const char *env);

/* A 0-d tensor holding s on t's backend with dtype (for scalar operands). */
ff_tensor *ff_op_scalar_like(const ff_tensor *t, double s, ff_dtype dtype);

/* ops/complex.c: the complex math the kernels do not compute, composed from real ops. */
ff_tensor *ff_op_complex_unary(ff_unary_op op, const ff_tensor *z, const char *fn);
ff_tensor *ff_op_complex_pow(const ff_tensor *a, const ff_tensor *b, ff_dtype cdt, const char *fn);
ff_tensor *ff_op_complex_matmul(const ff_tensor *a, const ff_tensor *b, const char *fn);

/* ---- reductions (ops/reduce.c) ---- */
/* Resolves axes to mask (setting an error naming fn) and returns how many elements each
 * output element reduces over (*count). */
ff_status ff_reduce_axes(const ff_tensor *x, int naxes, const int *axes, uint32_t *mask, int64_t *count,
                         const char *fn);
/* A reduction's gradient (shape: the reduced shape, keepdim per the flag) broadcast back
 * to x's shape: reshaped to keepdim form and expanded (a stride-0 view; tracked). */
ff_tensor *ff_reduce_grad_expand(const ff_tensor *g, const ff_tensor *x, uint32_t mask);
/* The keepdim form of a reduction's result r (tracked reshape; r retained if already). */
ff_tensor *ff_reduce_keepdim(const ff_tensor *r, const ff_tensor *x, uint32_t mask);
/* Runs reduction op into a new tensor of dtype (keepdim form unless !keepdim). */
ff_tensor *ff_reduce_raw(ff_reduce_op op, const ff_tensor *x, uint32_t mask, ff_dtype dtype, bool keepdim,
                         const char *fn);

/* ops/pool.c: the max over axis of win gathered at PyTorch's max-pooling index (the first
 * maximum; a window's last NaN), so its gradient goes to one element; *arg (optional) gets
 * that index, keepdim i64. Shared with ops/adaptive_pool.c. */
ff_tensor *ff_op_max_first(const ff_tensor *win, int axis, ff_tensor **arg, const char *fn);
/* return_indices of the composed max pools (ops/pool_nd.c, ops/adaptive_pool.c): tab holds
 * each window's flat input indices ([out..., K], broadcast over y's leading dims), and the
 * result is tab at arg (ff_op_max_first's index), shaped as y; NULL on failure. */
ff_tensor *ff_op_window_indices(const ff_tensor *tab, const ff_tensor *y, const ff_tensor *arg);

/* ---- sliding windows (ops/conv.c, shared with ops/pool.c) ---- */
/* x [N, C, H, W] padded by (ph, pw) on both sides with pad_value, then every
 * (kh, kw) window offset taken as a strided slice view and stacked into
 * [N, C, KH * KW, OH, OW] (window element i * KW + j at output (oh, ow) is
 * xpad[:, :, i + sh * oh, j + sw * ow]). Checks kernel, stride >= 1, pad >= 0 and that
 * the window fits; *oh, *ow get the output size (floor mode). Differentiable: the
 * gradient flows back through stack, slice and pad. */
ff_tensor *ff_op_windows2d(const ff_tensor *x, int64_t kh, int64_t kw, int64_t sh, int64_t sw, int64_t ph,
                           int64_t pw, double pad_value, int64_t *oh, int64_t *ow, const char *fn);

#endif /* FF_OPS_IMPL_H */
