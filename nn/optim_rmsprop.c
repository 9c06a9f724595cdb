/* RMSprop, step for step the algorithm of torch.optim.RMSprop:
 *   g = g + wd * p
 *   v = alpha v + (1 - alpha) g^2
 *   centered: ga = alpha ga + (1 - alpha) g;  avg = sqrt(v - ga^2) + eps
 *   otherwise:                                avg = sqrt(v) + eps
 *   momentum > 0: buf = momentum buf + g / avg;  p -= lr * buf
 *   otherwise:                                   p -= lr * g / avg
 * v, buf and ga (state slots 0, 1, 2) start at zero on the parameter's backend.
 * Temporaries are new tensors; only p and the state are written in place (a .grad
 * may alias other tensors, so it is never modified). */
#include <math.h>

#include "nn_impl.h"

static ff_status rmsprop_param(ff_optimizer *opt, int i, ff_tensor *g0)
{
    const ff_rmsprop_opts *o = &opt->rmsprop;
    ff_tensor *p = opt->params[i];
    ff_tensor *g = ff_tensor_retain(g0), *g2 = NULL, *avg = NULL, *tmp = NULL, *upd = NULL;
    ff_tensor **v = &opt->state[0][i], **buf = &opt->state[1][i], **ga = &opt->state[2][i];
    ff_status st = FF_OK;
    if (o->weight_decay != 0.0) {
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
    if (!(g2 = ff_mul(g, g))) {
        st = ff_nn_failed();
        goto done;
    }
    if ((st = ff_mul_scalar_(*v, o->alpha)) || (st = ff_axpy_(*v, 1.0 - o->alpha, g2))) goto done;
    if (o->centered) {
        if ((st = ff_mul_scalar_(*ga, o->alpha)) || (st = ff_axpy_(*ga, 1.0 - o->alpha, g))) goto done;
        if (!(tmp = ff_mul(*ga, *ga)) || !(upd = ff_sub(*v, tmp))) {
            st = ff_nn_failed();
            goto done;
        }
        avg = ff_sqrt(upd);
        ff_tensor_release(upd);
        upd = NULL;
    } else {
        avg = ff_sqrt(*v);
    }
    if (!avg) {
        st = ff_nn_failed();
        goto done;
    }
    if ((st = ff_add_scalar_(avg, o->eps))) goto done;
    if (!(upd = ff_div(g, avg))) {
        st = ff_nn_failed();
        goto done;
    }
    if (o->momentum > 0.0) {
        if ((st = ff_mul_scalar_(*buf, o->momentum)) || (st = ff_add_(*buf, upd))) goto done;
        st = ff_optimizer_axpy(p, opt->coef[0][i], *buf);
    } else {
        st = ff_optimizer_axpy(p, opt->coef[0][i], upd);
    }
done:
    ff_tensor_release(g);
    ff_tensor_release(g2);
    ff_tensor_release(avg);
    ff_tensor_release(tmp);
    ff_tensor_release(upd);
    return st;
}

/* The host side: the state slots in use, and coefficient 0: -lr. */
static ff_status rmsprop_prepare(ff_optimizer *opt, int i)
{
    const ff_rmsprop_opts *o = &opt->rmsprop;
    ff_tensor *p = opt->params[i];
    ff_status st = ff_optimizer_state_zeros(&opt->state[0][i], p);
    if (!st && o->momentum > 0.0) st = ff_optimizer_state_zeros(&opt->state[1][i], p);
    if (!st && o->centered) st = ff_optimizer_state_zeros(&opt->state[2][i], p);
    return st ? st : ff_optimizer_set_coef(opt, 0, i, -opt->lr);
}

ff_rmsprop_opts ff_rmsprop_defaults(double lr)
{
    return (ff_rmsprop_opts){.lr = lr, .alpha = 0.99, .eps = 1e-8, .weight_decay = 0.0, .momentum = 0.0,
                             .centered = false};
}

ff_optimizer *ff_rmsprop(ff_tensor *const *params, int n, const ff_rmsprop_opts *opts)
{
    static const char fn[] = "ff_rmsprop";
    if (!opts) return ff_set_error(FF_ERR_INVALID, "%s: opts is NULL (use ff_rmsprop_defaults(lr))", fn), NULL;
    const ff_rmsprop_opts *o = opts;
    if (!(o->lr >= 0.0) || isinf(o->lr)) return ff_set_error(FF_ERR_INVALID, "%s: lr must be finite and >= 0, got %g", fn, o->lr), NULL;
    if (!(o->alpha >= 0.0 && o->alpha <= 1.0))
        return ff_set_error(FF_ERR_INVALID, "%s: alpha must be in [0, 1], got %g", fn, o->alpha), NULL;
    if (!(o->eps >= 0.0)) return ff_set_error(FF_ERR_INVALID, "%s: eps must be >= 0, got %g", fn, o->eps), NULL;
    if (!(o->momentum >= 0.0)) return ff_set_error(FF_ERR_INVALID, "%s: momentum must be >= 0, got %g", fn, o->momentum), NULL;
    if (!(o->weight_decay >= 0.0))
        return ff_set_error(FF_ERR_INVALID, "%s: weight_decay must be >= 0, got %g", fn, o->weight_decay), NULL;
    ff_optimizer *opt = ff_optimizer_alloc("RMSprop", params, n, fn);
    if (!opt) return NULL;
    opt->step_param = rmsprop_param;
    opt->prepare_param = rmsprop_prepare;
    opt->lr = o->lr;
    opt->rmsprop = *o;
    return opt;
}
