/* Private to nn/: the module and optimizer structs. nn is a layer above the op
 * library: it uses only the public API (ff/ff.h) plus the core's error recorder. */
#ifndef FF_NN_IMPL_H
#define FF_NN_IMPL_H

#include <stdatomic.h>

#include "ff/ff.h"


struct ff_module {
    atomic_long refcount;
    char *type_name;
    ff_module_forward_fn forward;   /* exactly one of forward / forward2 is set */
    ff_module_forward2_fn forward2;
    void *user;
    ff_module_destroy_fn destroy;
    bool training;
    /* parameters and children, in registration order (names owned) */
    int n_params, cap_params;
    char **param_names;
    ff_tensor **params;
    int n_children, cap_children;
    char **child_names;
    ff_module **children;
};

/* Borrowed parameter i of m (built-in modules know their own layout). */
static inline ff_tensor *ff_module_param_at(const ff_module *m, int i)
{
    return i < m->n_params ? m->params[i] : NULL;
}

/* The parameters of a convolution module m (nn/conv.c, nn/conv_nd.c), as PyTorch's
 * reset_parameters: kaiming_uniform_(a = sqrt(5)), whose bound is 1 / sqrt(fan_in), for the
 * weight (wshape, seed) and for the bias of nbias elements (none if 0; seed + 1, as
 * ff_linear). Returns m, or releases it and returns NULL. */
ff_module *ff_nn_conv_init(ff_module *m, int rank, const int64_t *wshape, int64_t nbias, int64_t fan_in,
                           uint64_t seed);

/* Status to return after a call that returned NULL (it set the error). */
static inline ff_status ff_nn_failed(void)
{
    ff_status s = ff_last_status();
    return s ? s : FF_ERR_INVALID;
}

/* A 64-bit mix (splitmix64 finalizer) to derive independent seeds from (seed, k). */
static inline uint64_t ff_nn_mix_seed(uint64_t seed, uint64_t k)
{
    uint64_t z = seed + 0x9E3779B97F4A7C15ull * (k + 1);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* ---- optimizers ---------------------------------------------------------------- */
#define FF_OPTIM_MAX_STATE 3
#define FF_OPTIM_MAX_COEF 9 /* the fused steps keep their constants here too (Adam: 3..8) */

/* (optimizer, parameter): the user pointer of a parameter's host call. */
typedef struct ff_optim_slot {
    ff_optimizer *opt;
    int i;
} ff_optim_slot;

/* A step is split so that graphs can replay it (include/ff/graph.h): the host side
 * (counting the step, creating state, the scalars that depend on lr and the step
 * number) runs as a host call, writing those scalars into 0-d coefficient tensors; the
 * tensor side reads them and is recorded as kernels. Eager steps run both, in order. */
struct ff_optimizer {
    const char *name;
    /* Host side for parameter i at step param_steps[i] (already counted): creates
     * state, sets coefficients with ff_optimizer_set_coef. May be NULL. */
    ff_status (*prepare_param)(ff_optimizer *opt, int i);
    /* Updates parameter i from its gradient g; runs under no-grad, counts nothing. */
    ff_status (*step_param)(ff_optimizer *opt, int i, ff_tensor *g);
    ff_tensor **coef[FF_OPTIM_MAX_COEF];     /* per parameter 0-d tensors, p's dtype, retained */
    double *coef_value[FF_OPTIM_MAX_COEF];   /* what each holds (a fill is skipped if unchanged) */
    ff_optim_slot *slots;
    int n;
    ff_tensor **params;                      /* retained */
    ff_tensor **state[FF_OPTIM_MAX_STATE];   /* per parameter, created lazily, retained */
    int64_t steps;                           /* completed steps */
    int64_t *param_steps;                    /* steps that updated parameter i (Adam's t) */
    double lr;
    ff_sgd_opts sgd;
    ff_adam_opts adam;
    ff_rmsprop_opts rmsprop;
    bool decoupled_wd; /* AdamW */
};

/* *slot (an optimizer state tensor), created as zeros like p on first use. */
ff_status ff_optimizer_state_zeros(ff_tensor **slot, const ff_tensor *p);
/* Coefficient k of parameter i := value (a 0-d tensor of the parameter's dtype, created
 * on first use); the tensor side reads it with opt->coef[k][i]. */
ff_status ff_optimizer_set_coef(ff_optimizer *opt, int k, int i, double value);
/* x += alpha * y with alpha a 0-d tensor (ff_axpy_'s tensor form). */
ff_status ff_optimizer_axpy(ff_tensor *x, const ff_tensor *alpha, const ff_tensor *y);

/* The fused step (optim_fused.c). fits: whether ts[0..n) (parameter, state, gradient)
 * may go to one program: fusing allowed, not capturing (a capture records the plain
 * ops), all present, one dtype and shape. Aliasing (a written view overlapping itself or
 * another) is ff_kernel_fused's to refuse. run: ff_kernel_fused for the step; *ran false
 * (FF_OK) when it declined, so the caller composes. */
bool ff_optim_fused_fits(ff_tensor *const *ts, int n);
ff_status ff_optim_fused_run(ff_tensor *const *ts, int n_views, int n_values, const ff_fused_inst *inst, int n_inst,
                             bool *ran);

/* Allocates an optimizer over params (retained). NULL on error. */
ff_optimizer *ff_optimizer_alloc(const char *name, ff_tensor *const *params, int n, const char *fn);

#endif /* FF_NN_IMPL_H */
