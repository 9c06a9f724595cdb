/* Adam and AdamW (torch.optim.Adam / AdamW, amsgrad off), at step t:
 *   Adam:  g = g + wd * p            AdamW: p = p * (1 - lr * wd)   (decoupled)
 *   m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2
 *   p -= (lr / (1 - b1^t)) * m / (sqrt(v) / sqrt(1 - b2^t) + eps)
 * m and v (state slots 0 and 1) live on the parameter's backend; t counts the steps
 * that updated this parameter, as PyTorch's per-parameter state['step']. */
#include <math.h>

#include "nn_impl.h"

/* The host side at step t: state, and coefficients 0: 1 / sqrt(1 - b2^t),
 * 1: -lr / (1 - b1^t), 2: AdamW's 1 - lr wd. */
static ff_status adam_prepare(ff_optimizer *opt, int i)
{
    double t = (double)opt->param_steps[i];
    const ff_adam_opts *o = &opt->adam;
    ff_tensor *p = opt->params[i];
    double bc1 = 1.0 - pow(o->beta1, t), bc2 = 1.0 - pow(o->beta2, t);
    ff_status st = ff_optimizer_state_zeros(&opt->state[0][i], p);
    if (!st) st = ff_optimizer_state_zeros(&opt->state[1][i], p);
    if (!st) st = ff_optimizer_set_coef(opt, 0, i, 1.0 / sqrt(bc2));
    if (!st) st = ff_optimizer_set_coef(opt, 1, i, -opt->lr / bc1);
    if (!st && opt->decoupled_wd) st = ff_optimizer_set_coef(opt, 2, i, 1.0 - opt->lr * o->weight_decay);
    return st;
}

/* ---- the fused step: adam_param's composition below as one program ----------------
 * Views: p, m, v (written), g, then the constants as 0-d tensors of p's dtype, held in
 * coefficients 3.. (their values never change, so setting them again costs nothing). */
enum { AV_P, AV_M, AV_V, AV_G, AV_B1, AV_1MB1, AV_B2, AV_1MB2, AV_EPS, AV_C0, AV_C1, AV_WD, AV_COUNT };
enum { AC_B1 = 3, AC_1MB1, AC_B2, AC_1MB2, AC_EPS, AC_WD }; /* coefficient slots */

/* The instructions into in; returns their count, the values' in *n_values. */
static int adam_program(bool wd, bool decoupled, ff_fused_inst *in, int *n_values)
{
    int k = 0, t = wd ? AV_COUNT : AV_WD; /* the next temporary */
#define BIN(op, d, a, b) (in[k++] = (ff_fused_inst){FF_KIND_BINARY, FF_BINARY_##op, (d), {(a), (b)}})
    int g = AV_G;
    if (wd && decoupled) {
        BIN(MUL, AV_P, AV_P, AV_WD); /* AV_WD holds 1 - lr wd */
    } else if (wd) {
        BIN(MUL, t, AV_P, AV_WD); /* gd = p * wd; gd += g */
        BIN(ADD, t, t, AV_G);
        g = t++;
    }
    /* axpy is a mul then an add, two roundings, as ff_axpy_ */
    BIN(MUL, AV_M, AV_M, AV_B1);
    BIN(MUL, t, g, AV_1MB1);
    BIN(ADD, AV_M, AV_M, t++);
    int g2 = t++;
    BIN(MUL, g2, g, g);
    BIN(MUL, AV_V, AV_V, AV_B2);
    BIN(MUL, t, g2, AV_1MB2);
    BIN(ADD, AV_V, AV_V, t++);
    int den = t++;
    in[k++] = (ff_fused_inst){FF_KIND_UNARY, FF_UNARY_SQRT, den, {AV_V, 0}};
    BIN(MUL, den, den, AV_C0);
    BIN(ADD, den, den, AV_EPS);
    BIN(DIV, t, AV_M, den);
    BIN(MUL, t, t, AV_C1);
    BIN(ADD, AV_P, AV_P, t++);
#undef BIN
    *n_values = t;
    return k;
}

/* Runs parameter i's step fused if it may; *ran tells whether it did. */
static ff_status adam_fused(ff_optimizer *opt, int i, ff_tensor *g, bool *ran)
{
    const ff_adam_opts *o = &opt->adam;
    bool wd = o->weight_decay != 0.0;
    ff_tensor *ts[AV_COUNT] = {opt->params[i], opt->state[0][i], opt->state[1][i], g};
    *ran = false;
    if (!ff_optim_fused_fits(ts, 4)) return FF_OK;
    const double consts[] = {o->beta1, 1.0 - o->beta1, o->beta2, 1.0 - o->beta2, o->eps, o->weight_decay};
    ff_status st = FF_OK;
    for (int c = 0; c < (wd && !opt->decoupled_wd ? 6 : 5) && !st; c++)
        st = ff_optimizer_set_coef(opt, AC_B1 + c, i, consts[c]);
    if (st) return st;
    for (int c = 0; c < 5; c++) ts[AV_B1 + c] = opt->coef[AC_B1 + c][i];
    ts[AV_C0] = opt->coef[0][i];
    ts[AV_C1] = opt->coef[1][i];
    ts[AV_WD] = wd ? opt->coef[opt->decoupled_wd ? 2 : AC_WD][i] : NULL;
    ff_fused_inst in[15]; /* at most: Adam's decay 2, m 3, v 4, the update 6 */
    int n_values, n_inst = adam_program(wd, opt->decoupled_wd, in, &n_values);
    return ff_optim_fused_run(ts, wd ? AV_COUNT : AV_WD, n_values, in, n_inst, ran);
}

static ff_status adam_param(ff_optimizer *opt, int i, ff_tensor *g0)
{
    bool ran;
    ff_status fst = adam_fused(opt, i, g0, &ran);
    if (fst || ran) return fst;
    const ff_adam_opts *o = &opt->adam;
    ff_tensor *p = opt->params[i];
    ff_tensor *g = ff_tensor_retain(g0), *g2 = NULL, *denom = NULL, *upd = NULL;
    ff_status st = FF_OK;
    if (o->weight_decay != 0.0) {
        if (opt->decoupled_wd) {
            if ((st = ff_mul_(p, opt->coef[2][i]))) goto done;
        } else {
            ff_tensor *gd = ff_mul_scalar(p, o->weight_decay);
            if (!gd) {
                st = ff_nn_failed();
                goto done;
            }
            st = ff_add_(gd, g);
            ff_tensor_release(g);
            g = gd;
            if (st) goto done;
        }
    }
    ff_tensor **m = &opt->state[0][i], **v = &opt->state[1][i];
    if ((st = ff_mul_scalar_(*m, o->beta1)) || (st = ff_axpy_(*m, 1.0 - o->beta1, g))) goto done;
    if (!(g2 = ff_mul(g, g))) {
        st = ff_nn_failed();
        goto done;
    }
    if ((st = ff_mul_scalar_(*v, o->beta2)) || (st = ff_axpy_(*v, 1.0 - o->beta2, g2))) goto done;
    if (!(denom = ff_sqrt(*v))) {
        st = ff_nn_failed();
        goto done;
    }
    if ((st = ff_mul_(denom, opt->coef[0][i])) || (st = ff_add_scalar_(denom, o->eps))) goto done;
    if (!(upd = ff_div(*m, denom))) {
        st = ff_nn_failed();
        goto done;
    }
    st = ff_optimizer_axpy(p, opt->coef[1][i], upd);
done:
    ff_tensor_release(g);
    ff_tensor_release(g2);
    ff_tensor_release(denom);
    ff_tensor_release(upd);
    return st;
}

ff_adam_opts ff_adam_defaults(double lr)
{
    return (ff_adam_opts){.lr = lr, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8, .weight_decay = 0.0};
}

static ff_optimizer *adam_new(const char *name, bool decoupled, ff_tensor *const *params, int n,
                              const ff_adam_opts *o, const char *fn)
{
    if (!o) return ff_set_error(FF_ERR_INVALID, "%s: opts is NULL (use ff_adam_defaults(lr))", fn), NULL;
    if (!(o->lr >= 0.0) || isinf(o->lr)) return ff_set_error(FF_ERR_INVALID, "%s: lr must be finite and >= 0, got %g", fn, o->lr), NULL;
    if (!(o->beta1 >= 0.0 && o->beta1 < 1.0) || !(o->beta2 >= 0.0 && o->beta2 < 1.0))
        return ff_set_error(FF_ERR_INVALID, "%s: betas must be in [0, 1), got (%g, %g)", fn, o->beta1, o->beta2), NULL;
    if (!(o->eps >= 0.0)) return ff_set_error(FF_ERR_INVALID, "%s: eps must be >= 0, got %g", fn, o->eps), NULL;
    if (!(o->weight_decay >= 0.0))
        return ff_set_error(FF_ERR_INVALID, "%s: weight_decay must be >= 0, got %g", fn, o->weight_decay), NULL;
    ff_optimizer *opt = ff_optimizer_alloc(name, params, n, fn);
    if (!opt) return NULL;
    opt->step_param = adam_param;
    opt->prepare_param = adam_prepare;
    opt->lr = o->lr;
    opt->adam = *o;
    opt->decoupled_wd = decoupled;
    return opt;
}

ff_optimizer *ff_adam(ff_tensor *const *params, int n, const ff_adam_opts *opts)
{
    return adam_new("Adam", false, params, n, opts, "ff_adam");
}

ff_optimizer *ff_adamw(ff_tensor *const *params, int n, const ff_adam_opts *opts)
{
    return adam_new("AdamW", true, params, n, opts, "ff_adamw");
}
