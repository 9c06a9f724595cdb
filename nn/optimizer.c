/* What every optimizer shares: the retained parameter list, per-parameter state
 * slots, the step counter and learning rate, and running step() under no-grad. */
#include <math.h>
#include <stdlib.h>

#include "nn_impl.h"

ff_optimizer *ff_optimizer_alloc(const char *name, ff_tensor *const *params, int n, const char *fn)
{
    if (n <= 0 || !params) {
        ff_set_error(FF_ERR_INVALID, "%s: needs at least one parameter (got n = %d)", fn, n);
        return NULL;
    }
    for (int i = 0; i < n; i++) {
        if (!params[i]) {
            ff_set_error(FF_ERR_INVALID, "%s: parameter %d is NULL", fn, i);
            return NULL;
        }
        if (!ff_is_leaf(params[i])) {
            ff_set_error(FF_ERR_INVALID, "%s: parameter %d is not a leaf tensor (made by '%s')", fn, i,
                     ff_grad_fn_name(params[i]));
            return NULL;
        }
        ff_dtype dt = ff_tensor_dtype(params[i]);
        if (dt != FF_F32 && dt != FF_F64) {
            ff_set_error(FF_ERR_INVALID, "%s: parameter %d has dtype %s; optimizers update f32/f64 tensors", fn, i,
                     ff_dtype_name(dt));
            return NULL;
        }
        for (int j = 0; j < i; j++)
            if (params[j] == params[i]) {
                ff_set_error(FF_ERR_INVALID, "%s: parameter %d repeats parameter %d (it would be updated twice)", fn, i, j);
                return NULL;
            }
    }
    ff_optimizer *opt = calloc(1, sizeof *opt);
    if (opt) opt->params = calloc((size_t)n, sizeof *opt->params);
    if (opt && opt->params && !(opt->param_steps = calloc((size_t)n, sizeof *opt->param_steps))) {
        free(opt->params);
        opt->params = NULL;
    }
    for (int s = 0; opt && opt->params && s < FF_OPTIM_MAX_STATE; s++) {
        opt->state[s] = calloc((size_t)n, sizeof *opt->state[s]);
        if (!opt->state[s]) {
            ff_optimizer_release(opt);
            opt = NULL;
        }
    }
    for (int k = 0; opt && opt->params && k < FF_OPTIM_MAX_COEF; k++) {
        opt->coef[k] = calloc((size_t)n, sizeof *opt->coef[k]);
        opt->coef_value[k] = calloc((size_t)n, sizeof *opt->coef_value[k]);
        if (!opt->coef[k] || !opt->coef_value[k]) {
            ff_optimizer_release(opt);
            opt = NULL;
        }
    }
    if (opt && opt->params && !(opt->slots = calloc((size_t)n, sizeof *opt->slots))) {
        ff_optimizer_release(opt);
        opt = NULL;
    }
    if (!opt || !opt->params) {
        ff_optimizer_release(opt);
        ff_set_error(FF_ERR_OOM, "%s: out of memory", fn);
        return NULL;
    }
    opt->name = name;
    opt->n = n;
    for (int i = 0; i < n; i++) {
        opt->params[i] = ff_tensor_retain(params[i]);
        opt->slots[i] = (ff_optim_slot){opt, i};
    }
    return opt;
}

void ff_optimizer_release(ff_optimizer *opt)
{
    if (!opt) return;
    for (int i = 0; opt->params && i < opt->n; i++) ff_tensor_release(opt->params[i]);
    for (int s = 0; s < FF_OPTIM_MAX_STATE; s++) {
        for (int i = 0; opt->state[s] && i < opt->n; i++) ff_tensor_release(opt->state[s][i]);
        free(opt->state[s]);
    }
    for (int k = 0; k < FF_OPTIM_MAX_COEF; k++) {
        for (int i = 0; opt->coef[k] && i < opt->n; i++) ff_tensor_release(opt->coef[k][i]);
        free(opt->coef[k]);
        free(opt->coef_value[k]);
    }
    free(opt->slots);
    free(opt->params);
    free(opt->param_steps);
    free(opt);
}

ff_status ff_optimizer_state_zeros(ff_tensor **slot, const ff_tensor *p)
{
    if (!*slot && !(*slot = ff_zeros_like(p))) return ff_nn_failed();
    return FF_OK;
}

ff_status ff_optimizer_set_coef(ff_optimizer *opt, int k, int i, double value)
{
    ff_tensor **c = &opt->coef[k][i];
    const ff_tensor *p = opt->params[i];
    double *held = &opt->coef_value[k][i];
    /* a value that rounds to what the coefficient holds is not written again: a constant
     * lr costs nothing, and neither do Adam's bias corrections once they settle in f32
     * (a fill kernel fewer per coefficient and step on a device) */
    if (ff_tensor_dtype(p) == FF_F32) value = (double)(float)value;
    if (*c && (*held == value || (isnan(*held) && isnan(value)))) return FF_OK;
    ff_status st = FF_OK;
    if (!*c) {
        if (!(*c = ff_full_on(ff_tensor_backend(p), 0, NULL, ff_tensor_dtype(p), value))) return ff_nn_failed();
    } else {
        st = ff_fill_(*c, value);
    }
    if (!st) *held = value;
    return st;
}

ff_status ff_optimizer_axpy(ff_tensor *x, const ff_tensor *alpha, const ff_tensor *y)
{
    ff_tensor *ay = ff_mul(y, alpha); /* the bits of ff_axpy_'s ff_mul_scalar: alpha rounded to x's dtype */
    ff_status st = ay ? ff_add_(x, ay) : ff_nn_failed();
    ff_tensor_release(ay);
    return st;
}

/* The host side of parameter i's step: count it, then the optimizer's prepare. */
static ff_status prepare_cb(void *user)
{
    ff_optim_slot *s = user;
    s->opt->param_steps[s->i]++;
    ff_status st = s->opt->prepare_param ? s->opt->prepare_param(s->opt, s->i) : FF_OK;
    if (st) s->opt->param_steps[s->i]--;
    return st;
}

static ff_status count_cb(void *user)
{
    ((ff_optimizer *)user)->steps++;
    return FF_OK;
}

ff_status ff_optimizer_step(ff_optimizer *opt)
{
    if (!opt) return ff_set_error(FF_ERR_INVALID, "ff_optimizer_step: optimizer is NULL");
    /* updates are plain in-place arithmetic on leaves: nothing may be recorded */
    /* Every parameter's host side first, then the updates back to back: a replayed step
     * then runs its updates as one stretch of launches (one recorded device run, a CUDA
     * graph on cuda) rather than with a host call between each two. A prepare touches only
     * its own parameter's count, state and coefficients, so the order changes no value. */
    ff_tensor **g = calloc((size_t)(opt->n ? opt->n : 1), sizeof *g);
    if (!g) return ff_set_error(FF_ERR_OOM, "ff_optimizer_step: out of memory");
    bool prev = ff_set_grad_enabled(false);
    ff_status st = FF_OK;
    int prepared = 0, stepped = 0; /* parameters (with a gradient, in order) past each stage */
    for (int i = 0; i < opt->n && !st; i++) {
        /* a parameter without a gradient keeps its value and its state */
        if ((g[i] = ff_grad(opt->params[i])) && !(st = ff_graph_host_call(prepare_cb, &opt->slots[i]))) prepared++;
    }
    for (int i = 0; i < opt->n && !st; i++)
        if (g[i] && !(st = opt->step_param(opt, i, g[i]))) stepped++;
    for (int i = 0, k = 0; i < opt->n; i++) { /* a failure: the counts of those not stepped go back */
        if (!g[i]) continue;
        if (k >= stepped && k < prepared) opt->param_steps[i]--;
        k++;
        ff_tensor_release(g[i]);
    }
    free(g);
    ff_set_grad_enabled(prev);
    if (!st) st = ff_graph_host_call(count_cb, opt);
    return st;
}

ff_status ff_optimizer_zero_grad(ff_optimizer *opt)
{
    if (!opt) return ff_set_error(FF_ERR_INVALID, "ff_optimizer_zero_grad: optimizer is NULL");
    for (int i = 0; i < opt->n; i++) ff_zero_grad(opt->params[i]);
    return FF_OK;
}

ff_status ff_optimizer_set_lr(ff_optimizer *opt, double lr)
{
    if (!opt) return ff_set_error(FF_ERR_INVALID, "ff_optimizer_set_lr: optimizer is NULL");
    if (!(lr >= 0.0) || isinf(lr)) return ff_set_error(FF_ERR_INVALID, "ff_optimizer_set_lr: lr must be finite and >= 0, got %g", lr);
    opt->lr = lr;
    return FF_OK;
}

double ff_optimizer_get_lr(const ff_optimizer *opt) { return opt ? opt->lr : NAN; }
int64_t ff_optimizer_step_count(const ff_optimizer *opt) { return opt ? opt->steps : -1; }
const char *ff_optimizer_name(const ff_optimizer *opt) { return opt ? opt->name : NULL; }
