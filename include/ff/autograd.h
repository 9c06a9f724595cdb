/*
 * FusionFlow user API: reverse-mode autograd.
 *
 * Ops record a node on their output when an input requires grad and grad mode is on.
 * Gradient formulas are written with ff ops, so they run on every backend, and with
 * create_graph the backward pass is itself recorded (higher-order gradients).
 */
#ifndef FF_AUTOGRAD_H
#define FF_AUTOGRAD_H

#include "ff/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

ff_status ff_set_requires_grad(ff_tensor *t, bool requires_grad); /* leaves only; float dtypes */
bool ff_requires_grad(const ff_tensor *t);
bool ff_is_leaf(const ff_tensor *t);
/* The accumulated gradient (new reference) or NULL if none yet (not an error). */
ff_tensor *ff_grad(const ff_tensor *t);
ff_status ff_set_grad(ff_tensor *t, ff_tensor *grad); /* NULL clears (zero_grad) */
ff_status ff_zero_grad(ff_tensor *t);                 /* drops the .grad */
/* A function ff_backward calls right after leaf's .grad has received this pass's
 * gradient (once per backward, in the order the graph finishes the leaves; PyTorch's
 * register_post_accumulate_grad_hook). One per leaf; fn NULL removes it. The hook runs
 * inside backward: it may read leaf's .grad, and must not release leaf or run backward.
 * Data-parallel training uses it to send a gradient bucket while backward goes on. */
typedef void (*ff_grad_hook_fn)(ff_tensor *leaf, void *user);
ff_status ff_set_post_accumulate_grad_hook(ff_tensor *leaf, ff_grad_hook_fn fn, void *user);

/* A function backward calls with the gradient on its way back through a hooked view
 * (PyTorch's Tensor.register_hook; Python's Module full backward hooks use it). grad is
 * borrowed; fn may set *replace to a new reference of grad's shape to pass back instead.
 * A status other than FF_OK stops backward with that status. */
typedef ff_status (*ff_tensor_hook_fn)(const ff_tensor *grad, ff_tensor **replace, void *user);
/* A view of t (same storage and layout) whose gradient passes through fn(grad, &replace,
 * user) before it reaches t. Without grad mode, or when t does not require grad, it is a
 * plain view and fn is never called. New reference, or NULL with an error. */
ff_tensor *ff_hooked_view(const ff_tensor *t, ff_tensor_hook_fn fn, void *user);

/* PyTorch's Tensor.register_hook: backward calls fn(grad, &replace, user) with t's whole
 * gradient of the pass (every use of t summed), before it flows on into t's node or, for
 * a leaf, into .grad; fn may set *replace (t's shape) to pass on instead. Hooks run in
 * registration order, each seeing the previous one's result, in ff_backward and
 * ff_autograd_grad alike. t must require grad. Returns an id (> 0) for
 * ff_tensor_remove_hook, or -1 with an error. The hooks live as long as t's header. */
int64_t ff_tensor_register_hook(ff_tensor *t, ff_tensor_hook_fn fn, void *user);
ff_status ff_tensor_remove_hook(ff_tensor *t, int64_t id); /* an unknown id is a no-op */
/* PyTorch's retain_grad: a non-leaf t keeps its gradient in .grad (accumulated over
 * ff_backward passes), as a leaf does; it takes its place among t's hooks, so it sees
 * what the hooks registered before it made of the gradient (PyTorch 1.13's order). On a
 * leaf it changes nothing. */
ff_status ff_retain_grad(ff_tensor *t);
bool ff_retains_grad(const ff_tensor *t);

/* Name of the op that produced t ("add", "matmul"), or NULL for leaves. */
const char *ff_grad_fn_name(const ff_tensor *t);

typedef struct ff_backward_opts {
    bool retain_graph; /* keep saved tensors so backward can run again */
    bool create_graph; /* record the backward pass (implies retain_graph) */
} ff_backward_opts;

/* Backpropagates from root. grad_output may be NULL only if root has one element
 * (it is then 1). Gradients accumulate into the .grad of leaves that require grad. */
ff_status ff_backward(ff_tensor *root, const ff_tensor *grad_output, const ff_backward_opts *opts);

/* Computes d(outputs)/d(inputs) without touching .grad (torch.autograd.grad).
 * grads_out receives n_inputs new references (NULL where an input is unreachable). */
ff_status ff_autograd_grad(ff_tensor *output, const ff_tensor *grad_output, int n_inputs,
                           ff_tensor *const *inputs, ff_tensor **grads_out,
                           const ff_backward_opts *opts);

/* Grad mode is per thread, on by default. */
bool ff_grad_enabled(void);
/* Sets grad mode; returns the previous value (so scopes nest):
 *   bool prev = ff_set_grad_enabled(false); ...; ff_set_grad_enabled(prev); */
bool ff_set_grad_enabled(bool enabled);
#define FF_NO_GRAD_BEGIN { bool ff_prev_grad_mode_ = ff_set_grad_enabled(false);
#define FF_NO_GRAD_END ff_set_grad_enabled(ff_prev_grad_mode_); }

/* Gradient check: f maps n inputs to a tensor; compares autograd's gradient of
 * sum(f(inputs) * w) (w a fixed random weight) with central differences in f64.
 * Inputs are converted to f64 copies; returns FF_OK if every element satisfies
 * |analytic - numeric| <= atol + rtol * |numeric|, else FF_ERR_AUTOGRAD with the
 * worst element in ff_last_error(). */
typedef ff_tensor *(*ff_gradcheck_fn)(int n, ff_tensor *const *inputs, void *user);
typedef struct ff_gradcheck_opts {
    double eps;  /* default 1e-6 */
    double atol; /* default 1e-5 */
    double rtol; /* default 1e-3 */
    double max_abs_err; /* out: worst |analytic - numeric| */
} ff_gradcheck_opts;
ff_status ff_gradcheck(ff_gradcheck_fn f, void *user, int n, ff_tensor *const *inputs,
                       ff_gradcheck_opts *opts);

#ifdef __cplusplus
}
#endif
#endif /* FF_AUTOGRAD_H */
