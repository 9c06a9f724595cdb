/* Dynamic loss scaling for f16 training (torch.cuda.amp.GradScaler): the loss is
 * multiplied by a scale so that small gradients survive f16's range, the gradients are
 * divided by it again before the step, and a step whose gradients overflowed is skipped
 * while the scale backs off. Scales are powers of two with the default factors, so
 * scaling and unscaling are exact. */
#include <math.h>
#include <stdlib.h>

#include "nn_impl.h"

struct ff_grad_scaler {
    ff_grad_scaler_opts o;
    double scale;
    int64_t clean_steps; /* finite steps since the scale last changed */
    int64_t skipped;
    const ff_optimizer *unscaled; /* unscaled this step (NULL: not yet) */
    bool finite;                  /* its gradients were all finite */
};

ff_grad_scaler_opts ff_grad_scaler_defaults(void)
{
    return (ff_grad_scaler_opts){.init_scale = 65536.0, .growth_factor = 2.0, .backoff_factor = 0.5,
                                 .growth_interval = 2000};
}

ff_grad_scaler *ff_grad_scaler_new(const ff_grad_scaler_opts *opts)
{
    static const char fn[] = "ff_grad_scaler_new";
    ff_grad_scaler_opts o = opts ? *opts : ff_grad_scaler_defaults();
    if (!(o.init_scale > 0) || isinf(o.init_scale) || !(o.growth_factor > 1) || isinf(o.growth_factor) ||
        !(o.backoff_factor > 0 && o.backoff_factor < 1) || o.growth_interval < 1)
        return ff_set_error(FF_ERR_INVALID, "%s: need init_scale > 0 (got %g), growth_factor > 1 (%g), backoff_factor "
                            "in (0, 1) (%g), growth_interval >= 1 (%lld)", fn, o.init_scale, o.growth_factor,
                            o.backoff_factor, (long long)o.growth_interval), NULL;
    ff_grad_scaler *sc = calloc(1, sizeof *sc);
    if (!sc) return ff_set_error(FF_ERR_OOM, "%s: out of memory", fn), NULL;
    sc->o = o;
    sc->scale = o.init_scale;
    return sc;
}

void ff_grad_scaler_free(ff_grad_scaler *sc) { free(sc); }

double ff_grad_scaler_get_scale(const ff_grad_scaler *sc) { return sc ? sc->scale : NAN; }

int64_t ff_grad_scaler_skipped_steps(const ff_grad_scaler *sc) { return sc ? sc->skipped : 0; }

ff_tensor *ff_grad_scaler_scale(ff_grad_scaler *sc, const ff_tensor *loss)
{
    if (!sc || !loss) return ff_set_error(FF_ERR_INVALID, "ff_grad_scaler_scale: NULL %s", sc ? "loss" : "scaler"), NULL;
    return ff_mul_scalar(loss, sc->scale);
}

/* g /= scale in place; *finite &= every element of g is finite (max |g| is NaN or inf
 * otherwise: the max reduction propagates NaN). */
static ff_status unscale_one(ff_tensor *g, double inv_scale, bool *finite)
{
    if (ff_mul_scalar_(g, inv_scale)) return ff_nn_failed();
    if (ff_tensor_numel(g) == 0) return FF_OK;
    ff_tensor *a = ff_abs(g);
    ff_tensor *m = a ? ff_amax(a, 0, NULL, false) : NULL;
    double v = 0;
    ff_status st = m ? ff_tensor_item(m, &v) : ff_nn_failed();
    *finite &= isfinite(v) != 0;
    ff_tensor_release(a);
    ff_tensor_release(m);
    return st;
}

ff_status ff_grad_scaler_unscale(ff_grad_scaler *sc, ff_optimizer *opt)
{
    if (!sc || !opt) return ff_set_error(FF_ERR_INVALID, "ff_grad_scaler_unscale: NULL %s", sc ? "optimizer" : "scaler");
    if (sc->unscaled == opt) return FF_OK;
    if (sc->unscaled)
        return ff_set_error(FF_ERR_INVALID, "ff_grad_scaler_unscale: already unscaled another optimizer's gradients "
                            "this step (one optimizer per scaler)");
    bool prev = ff_set_grad_enabled(false), finite = true;
    ff_status st = FF_OK;
    for (int i = 0; i < opt->n && !st; i++) {
        ff_tensor *g = ff_grad(opt->params[i]);
        if (g) st = unscale_one(g, 1.0 / sc->scale, &finite);
        ff_tensor_release(g);
    }
    ff_set_grad_enabled(prev);
    if (st) return st;
    sc->unscaled = opt;
    sc->finite = finite;
    return FF_OK;
}

ff_status ff_grad_scaler_step(ff_grad_scaler *sc, ff_optimizer *opt, bool *stepped)
{
    if (stepped) *stepped = false;
    ff_status st = ff_grad_scaler_unscale(sc, opt);
    if (st) return st;
    bool finite = sc->finite;
    sc->unscaled = NULL;
    if (finite && (st = ff_optimizer_step(opt))) return st;
    if (!finite) {
        sc->skipped++;
        sc->clean_steps = 0;
        sc->scale *= sc->o.backoff_factor;
    } else if (++sc->clean_steps >= sc->o.growth_interval) {
        double grown = sc->scale * sc->o.growth_factor;
        if (isfinite(grown)) sc->scale = grown;
        sc->clean_steps = 0;
    }
    if (stepped) *stepped = finite;
    return FF_OK;
}
