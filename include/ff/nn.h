/*
 * FusionFlow user API: modules, losses, optimizers, learning-rate schedules.
 *
 * Built only on the public op and autograd API, so everything here runs on any backend.
 * Same ownership rule as tensor.h: every function returning ff_tensor * or ff_module *
 * returns a new reference; arguments are borrowed unless a name says "take".
 *
 *   ff_module *net = ff_sequential_take(3, (ff_module *[]){
 *       ff_linear(784, 128, true, 1), ff_relu_module(), ff_linear(128, 10, true, 3)});
 *   ff_tensor *ps[16];
 *   int np = ff_module_parameters(net, ps, 16);          // borrowed pointers
 *   ff_adam_opts ao = ff_adam_defaults(1e-3);
 *   ff_optimizer *opt = ff_adamw(ps, np, &ao);
 *   ... loop: logits = ff_module_forward(net, x); loss = ff_cross_entropy(logits, y);
 *             ff_optimizer_zero_grad(opt); ff_backward(loss, NULL, NULL); ff_optimizer_step(opt);
 *
 * Parameters are leaf tensors with requires_grad. A module owns its parameters and its
 * children; modules are reference counted so one module can sit in several containers.
 */
#ifndef FF_NN_H
#define FF_NN_H

#include "ff/ops.h" /* ff_conv_opts */
#include "ff/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- modules -------------------------------------------------------------- */
typedef struct ff_module ff_module;

/* forward(m, x, user): returns a new reference or NULL with an error set. */
typedef ff_tensor *(*ff_module_forward_fn)(ff_module *m, const ff_tensor *x, void *user);
/* Two-input forward, used by loss modules: (prediction, target). */
typedef ff_tensor *(*ff_module_forward2_fn)(ff_module *m, const ff_tensor *a, const ff_tensor *b, void *user);
/* Frees user data when the module is destroyed (may be NULL). */
typedef void (*ff_module_destroy_fn)(void *user);

/* A custom module: type_name is copied ("MyBlock"); user is handed to forward and
 * destroy. Register parameters and children after creating it. On failure returns NULL
 * and, if given, destroy(user) has been called. */
ff_module *ff_module_new(const char *type_name, ff_module_forward_fn forward, void *user,
                         ff_module_destroy_fn destroy);
/* The same with a two-input forward (a loss, or anything with (input, target)). */
ff_module *ff_module_new2(const char *type_name, ff_module_forward2_fn forward2, void *user,
                          ff_module_destroy_fn destroy);
/* Registers a parameter (retained; marked requires_grad). It must be a float leaf.
 * Names are non-empty, contain no '.', and are unique among parameters and children. */
ff_status ff_module_register_parameter(ff_module *m, const char *name, ff_tensor *param);
/* Registers a child module (retained). Its parameters appear as "<name>.<param>". */
ff_status ff_module_register_module(ff_module *m, const char *name, ff_module *child);

ff_module *ff_module_retain(ff_module *m); /* returns m; NULL-safe */
void ff_module_release(ff_module *m);      /* NULL-safe */
const char *ff_module_type_name(const ff_module *m); /* "Linear", "Sequential", ... */

/* Runs the module. Errors if the module takes two inputs (use ff_loss_forward). */
ff_tensor *ff_module_forward(ff_module *m, const ff_tensor *x);
/* Runs a two-input module: ff_loss_forward(loss, prediction, target). */
ff_tensor *ff_loss_forward(ff_module *m, const ff_tensor *pred, const ff_tensor *target);

/* Parameters of m and all its descendants, depth first in registration order, each
 * tensor once (a tied weight registered twice is listed once). Writes up to max
 * BORROWED pointers (valid while the module holds them; retain to keep longer) and
 * returns the total count, which may exceed max; out may be NULL to just count.
 * Returns -1 on error. */
int ff_module_parameters(const ff_module *m, ff_tensor **out, int max);
/* The same walk with dotted names ("0.weight", "fc1.bias"): fn(name, param, user)
 * for each; name and param are borrowed for the call. Returns the count or -1. */
typedef void (*ff_named_tensor_fn)(const char *name, ff_tensor *param, void *user);
int ff_module_named_parameters(const ff_module *m, ff_named_tensor_fn fn, void *user);
/* Looks up a parameter by dotted name; new reference, or NULL (FF_ERR_INVALID). */
ff_tensor *ff_module_get_parameter(const ff_module *m, const char *dotted_name);
/* Total number of scalar elements in all parameters (sum of numel). */
int64_t ff_module_num_parameters(const ff_module *m);

/* Drops every parameter's .grad (PyTorch's zero_grad(set_to_none=True)). */
ff_status ff_module_zero_grad(ff_module *m);
/* Training mode (on by default), set recursively; it changes Dropout. */
ff_status ff_module_train(ff_module *m, bool training);
bool ff_module_is_training(const ff_module *m);
/* Moves every parameter (and its .grad) to backend be, keeping tied weights tied.
 * Parameters are replaced by new leaf tensors: create optimizers after moving. */
ff_status ff_module_to(ff_module *m, ff_backend *be);

/* ---- layers --------------------------------------------------------------- */
/* y = x @ weight^T + bias, weight [out, in], bias [out] (f32). PyTorch's default
 * init: weight and bias ~ U(-1/sqrt(in), 1/sqrt(in)), drawn with seed and seed + 1. */
ff_module *ff_linear(int64_t in_features, int64_t out_features, bool bias, uint64_t seed);
ff_module *ff_relu_module(void);
ff_module *ff_tanh_module(void);
ff_module *ff_sigmoid_module(void);
ff_module *ff_gelu_module(bool tanh_approx); /* false: exact erf form, PyTorch's default */
ff_module *ff_silu_module(void);
ff_module *ff_softmax_module(int axis);
ff_module *ff_identity(void);
/* Flattens dims 1.. into one: [N, ...] -> [N, prod(...)] (torch.nn.Flatten). */
ff_module *ff_flatten_module(void);
/* Zeroes elements with probability p while training (scaling the rest by 1/(1-p)),
 * identity in eval mode. Each call draws a fresh mask from (seed, call counter), so a
 * run is reproducible and successive steps differ. */
ff_module *ff_dropout_module(double p, uint64_t seed);
/* Conv2d: ff_conv2d with weight [out, in, kh, kw] and bias [out] (f32), the same
 * stride and zero padding on both spatial dims. PyTorch's default init: weight and
 * bias ~ U(-1/sqrt(fan_in), 1/sqrt(fan_in)), fan_in = in * kh * kw, drawn with seed
 * and seed + 1. */
ff_module *ff_conv2d_module(int64_t in_channels, int64_t out_channels, int64_t kh, int64_t kw, int64_t stride,
                            int64_t pad, bool bias, uint64_t seed);
/* Conv1d/2d/3d (nd = 1..3) as torch.nn's: ff_conv with o's stride, padding, dilation and
 * groups (output_padding unused), kernel [nd]; weight [out, in / groups, kernel...] and
 * bias [out] (f32) from U(-1/sqrt(fan_in), 1/sqrt(fan_in)), fan_in = in / groups *
 * prod(kernel) (PyTorch's kaiming_uniform_(a = sqrt(5)) and bias bound), seeds as above.
 * ff_conv_transpose_module: ConvTranspose1d/2d/3d over ff_conv_transpose (o's
 * output_padding too), weight [in, out / groups, kernel...], fan_in = out / groups *
 * prod(kernel). */
ff_module *ff_conv_module(int nd, int64_t in_channels, int64_t out_channels, const int64_t *kernel,
                          const ff_conv_opts *o, bool bias, uint64_t seed);
ff_module *ff_conv_transpose_module(int nd, int64_t in_channels, int64_t out_channels, const int64_t *kernel,
                                    const ff_conv_opts *o, bool bias, uint64_t seed);
/* MaxPool2d: k x k windows, no padding; stride 0 means k (PyTorch's default). */
ff_module *ff_max_pool2d_module(int64_t k, int64_t stride);
/* LayerNorm over the last dim (of size normalized_size): parameters "weight" (ones)
 * and "bias" (zeros), f32. */
ff_module *ff_layer_norm_module(int64_t normalized_size, double eps);
/* BatchNorm over x [N, C] or [N, C, ...] (C = num_features): parameters "weight"
 * (ones) and "bias" (zeros); running_mean (zeros) and running_var (ones) are state, not
 * parameters, updated by training-mode forwards (see ff_batch_norm) and used in eval
 * mode (ff_module_train). PyTorch's defaults are eps 1e-5, momentum 0.1. */
ff_module *ff_batch_norm_module(int64_t num_features, double eps, double momentum);
/* New references to a BatchNorm module's running statistics (live: later forwards
 * update them in place). */
ff_status ff_batch_norm_module_running_stats(const ff_module *m, ff_tensor **running_mean, ff_tensor **running_var);
/* Children "0", "1", ...; forward chains them. ff_sequential retains the modules;
 * ff_sequential_take steals the references (also on failure, and NULL entries are
 * allowed then: it fails, releasing the others), so constructors can be inlined. */
ff_module *ff_sequential(int n, ff_module *const *modules);
ff_module *ff_sequential_take(int n, ff_module *const *modules);

/* Loss modules for ff_loss_forward (mean reduction); the functions ff_mse_loss and
 * ff_cross_entropy in ops.h compute the same thing directly. */
ff_module *ff_mse_loss_module(void);
ff_module *ff_cross_entropy_loss_module(void);

/* ---- optimizers ----------------------------------------------------------- */
/* An optimizer holds (retains) a list of parameters and per-parameter state tensors on
 * each parameter's backend; step() updates parameters in place with ff ops under
 * no-grad. Parameters without a .grad are skipped, as in PyTorch. */
typedef struct ff_optimizer ff_optimizer;

typedef struct ff_sgd_opts {
    double lr;
    double momentum;     /* 0: plain SGD */
    double dampening;    /* applied to the gradient after the first step */
    double weight_decay; /* L2, added to the gradient */
    bool nesterov;       /* needs momentum > 0 and dampening == 0 */
} ff_sgd_opts;

typedef struct ff_adam_opts {
    double lr;
    double beta1, beta2;
    double eps;
    double weight_decay; /* Adam: L2 added to the gradient; AdamW: decoupled p -= lr*wd*p */
} ff_adam_opts;

typedef struct ff_rmsprop_opts {
    double lr;
    double alpha;        /* smoothing constant of the squared-gradient average */
    double eps;          /* added after the square root */
    double weight_decay; /* L2, added to the gradient */
    double momentum;     /* 0: no momentum buffer */
    bool centered;       /* normalize by the estimated variance (subtracts the mean's square) */
} ff_rmsprop_opts;

ff_sgd_opts ff_sgd_defaults(double lr);   /* momentum 0, dampening 0, wd 0, no nesterov */
ff_adam_opts ff_adam_defaults(double lr); /* betas (0.9, 0.999), eps 1e-8, wd 0 */
ff_rmsprop_opts ff_rmsprop_defaults(double lr); /* alpha 0.99, eps 1e-8, wd 0, momentum 0, not centered */

ff_optimizer *ff_sgd(ff_tensor *const *params, int n, const ff_sgd_opts *opts);
ff_optimizer *ff_adam(ff_tensor *const *params, int n, const ff_adam_opts *opts);
ff_optimizer *ff_adamw(ff_tensor *const *params, int n, const ff_adam_opts *opts);
ff_optimizer *ff_rmsprop(ff_tensor *const *params, int n, const ff_rmsprop_opts *opts);

ff_status ff_optimizer_step(ff_optimizer *opt);
ff_status ff_optimizer_zero_grad(ff_optimizer *opt); /* drops every .grad */
ff_status ff_optimizer_set_lr(ff_optimizer *opt, double lr);
double ff_optimizer_get_lr(const ff_optimizer *opt); /* NaN if opt is NULL */
int64_t ff_optimizer_step_count(const ff_optimizer *opt); /* steps taken so far */
const char *ff_optimizer_name(const ff_optimizer *opt);   /* "SGD", "Adam", "AdamW", "RMSprop" */
void ff_optimizer_release(ff_optimizer *opt);             /* NULL-safe */

/* ---- learning-rate schedules: pure functions of the step/epoch ---------------- */
/* base_lr * gamma^floor(epoch / step_size) (torch StepLR). */
double ff_lr_step(double base_lr, int64_t epoch, int64_t step_size, double gamma);
/* eta_min + (base_lr - eta_min) * (1 + cos(pi * t / t_max)) / 2, t clamped to
 * [0, t_max] (torch CosineAnnealingLR's closed form, held at eta_min after t_max). */
double ff_lr_cosine(double base_lr, int64_t t, int64_t t_max, double eta_min);

/* ---- gradient clipping ----------------------------------------------------- */
/* Global L2 norm over the .grad of all params (those without one are skipped). If it
 * exceeds max_norm, every .grad is replaced by grad * (max_norm / norm), so the new
 * norm is max_norm (PyTorch adds 1e-6 to the divisor; we do not need to, since
 * norm > max_norm >= 0 there). Gradients are replaced, not written in place, because a
 * .grad may alias another tensor. *total_norm_out (may be NULL) gets the norm before
 * clipping; a non-finite norm is reported and nothing is scaled. */
ff_status ff_clip_grad_norm(ff_tensor *const *params, int n, double max_norm, double *total_norm_out);

#ifdef __cplusplus
}
#endif
#endif /* FF_NN_H */
