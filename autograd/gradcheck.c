/* ff_gradcheck: autograd's gradient of L = sum(f(inputs) * w) against central
 * differences, in f64. w is a fixed seeded random weight, so every output element
 * contributes with a different factor and a wrong gradient cannot cancel out.
 * Backend-agnostic: perturbations are one-hot tensors uploaded to the inputs' backend
 * and added with ff ops. Float inputs are checked; other inputs (indices, masks) are
 * passed through unchanged. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ff_impl.h"

#define GRADCHECK_MAX_INPUTS 16
#define GRADCHECK_SEED 0x6AD5EEDull

/* L = sum(f(xs) * w) as a double (and the output, when out_t is given). */
static ff_status eval_loss(ff_gradcheck_fn f, void *user, int n, ff_tensor *const *xs, const ff_tensor *w,
                           double *loss, ff_tensor **loss_t)
{
    ff_tensor *y = f(n, xs, user);
    if (!y) {
        if (ff_last_status() == FF_OK) ff_error(FF_ERR_INVALID, "the function returned NULL without an error");
        return ff_last_status();
    }
    ff_tensor *yd = ff_dtype_is_float(y->dtype) ? ff_astype(y, FF_F64) : NULL;
    if (!yd && ff_dtype_is_float(y->dtype)) {
        ff_tensor_release(y);
        return ff_last_status();
    }
    if (!yd) {
        ff_tensor_release(y);
        return ff_error(FF_ERR_INVALID, "the function returned a %s tensor; it must be float",
                        ff_dtype_name(y->dtype));
    }
    ff_tensor *p = ff_mul(yd, w), *s = p ? ff_sum(p, 0, NULL, false) : NULL;
    ff_status st = s ? ff_tensor_item(s, loss) : ff_last_status();
    if (!st && loss_t) *loss_t = ff_tensor_retain(s);
    ff_tensor_release(y);
    ff_tensor_release(yd);
    ff_tensor_release(p);
    ff_tensor_release(s);
    return st;
}

/* The analytic gradient of each checked input as host doubles (zeros if unreachable). */
static ff_status analytic_grads(ff_tensor *loss, int n, ff_tensor *const *xs, const bool *checked, double **out)
{
    ff_tensor *ins[GRADCHECK_MAX_INPUTS], *grads[GRADCHECK_MAX_INPUTS] = {NULL};
    int map[GRADCHECK_MAX_INPUTS], k = 0;
    for (int i = 0; i < n; i++)
        if (checked[i]) map[k] = i, ins[k++] = xs[i];
    if (k == 0 || !loss->requires_grad) return FF_OK; /* nothing reachable: all zeros */
    ff_status st = ff_autograd_grad(loss, NULL, k, ins, grads, NULL);
    for (int j = 0; j < k && !st; j++) {
        if (!grads[j]) continue;
        ff_tensor *g = ff_astype(grads[j], FF_F64);
        st = g ? ff_tensor_to_host(g, out[map[j]], sizeof(double) * (size_t)ff_tensor_numel(g)) : ff_last_status();
        ff_tensor_release(g);
    }
    for (int j = 0; j < k; j++) ff_tensor_release(grads[j]);
    return st;
}

/* (L(x + eps e_j) - L(x - eps e_j)) / 2 eps for element j of input i. */
static ff_status numeric_grad(ff_gradcheck_fn f, void *user, int n, ff_tensor **xs, int i, int64_t j, double eps,
                              const ff_tensor *w, double *host, double *out)
{
    ff_tensor *x = xs[i];
    host[j] = eps;
    ff_tensor *delta = ff_from_data_on(x->storage->backend, host, x->layout.ndim, x->layout.shape, FF_F64);
    host[j] = 0.0;
    if (!delta) return ff_last_status();
    double l[2] = {0, 0};
    ff_status st = FF_OK;
    for (int s = 0; s < 2 && !st; s++) {
        ff_tensor *xp = s == 0 ? ff_add(x, delta) : ff_sub(x, delta);
        if (!xp) {
            st = ff_last_status();
            break;
        }
        xs[i] = xp;
        st = eval_loss(f, user, n, xs, w, &l[s], NULL);
        xs[i] = x;
        ff_tensor_release(xp);
    }
    ff_tensor_release(delta);
    *out = (l[0] - l[1]) / (2.0 * eps);
    return st;
}

ff_status ff_gradcheck(ff_gradcheck_fn f, void *user, int n, ff_tensor *const *inputs, ff_gradcheck_opts *opts)
{
    static const char fn[] = "ff_gradcheck";
    if (!f || n <= 0 || n > GRADCHECK_MAX_INPUTS || !inputs)
        return ff_error(FF_ERR_INVALID, "%s: need a function and 1..%d inputs", fn, GRADCHECK_MAX_INPUTS);
    for (int i = 0; i < n; i++)
        if (!inputs[i]) return ff_error(FF_ERR_INVALID, "%s: input %d is NULL", fn, i);
    double eps = opts && opts->eps > 0 ? opts->eps : 1e-6;
    double atol = opts && opts->atol > 0 ? opts->atol : 1e-5;
    double rtol = opts && opts->rtol > 0 ? opts->rtol : 1e-3;

    ff_tensor *xs[GRADCHECK_MAX_INPUTS] = {NULL}, *w = NULL, *loss = NULL;
    double *ana[GRADCHECK_MAX_INPUTS] = {NULL}, *host = NULL;
    bool checked[GRADCHECK_MAX_INPUTS] = {false};
    bool prev_mode = ff_set_grad_enabled(false);
    ff_status st = FF_OK;
    int64_t maxn = 0;
    for (int i = 0; i < n && !st; i++) {
        checked[i] = ff_dtype_is_float(inputs[i]->dtype);
        xs[i] = checked[i] ? ff_astype(inputs[i], FF_F64) : ff_tensor_retain(inputs[i]);
        if (!xs[i] || (checked[i] && ff_set_requires_grad(xs[i], true))) st = ff_last_status();
        int64_t numel = ff_tensor_numel(inputs[i]);
        if (!st && checked[i] && !(ana[i] = calloc((size_t)(numel ? numel : 1), sizeof(double))))
            st = ff_error(FF_ERR_OOM, "%s: out of memory", fn);
        if (checked[i] && numel > maxn) maxn = numel;
    }
    if (!st && !(host = calloc((size_t)(maxn ? maxn : 1), sizeof(double)))) st = ff_error(FF_ERR_OOM, "%s: out of memory", fn);

    /* analytic: one forward with grad mode on, then autograd */
    double l0 = 0.0;
    if (!st) {
        ff_set_grad_enabled(true);
        ff_tensor *y = f(n, xs, user);
        if (y) {
            ff_tensor *w0 = ff_rand_uniform(y->layout.ndim, y->layout.shape, FF_F64, -1.0, 1.0, GRADCHECK_SEED);
            w = w0 ? ff_to(w0, y->storage->backend) : NULL;
            ff_tensor_release(w0);
            ff_tensor_release(y);
        }
        st = w ? eval_loss(f, user, n, xs, w, &l0, &loss) : (ff_last_status() ? ff_last_status() : FF_ERR_INVALID);
        if (!st) st = analytic_grads(loss, n, xs, checked, ana);
        ff_set_grad_enabled(false);
    }

    /* numeric, element by element; remember the worst violation */
    double worst = -INFINITY, max_err = 0.0, wa = 0, wn = 0;
    int wi = -1;
    int64_t wj = -1;
    for (int i = 0; i < n && !st; i++) {
        if (!checked[i]) continue;
        for (int64_t j = 0; j < ff_tensor_numel(xs[i]) && !st; j++) {
            double num = 0.0;
            st = numeric_grad(f, user, n, xs, i, j, eps, w, host, &num);
            if (st) break;
            double err = fabs(ana[i][j] - num), excess = err - (atol + rtol * fabs(num));
            if (isnan(err)) excess = INFINITY;
            if (err > max_err || isnan(err)) max_err = isnan(err) ? INFINITY : err;
            if (excess > worst) worst = excess, wi = i, wj = j, wa = ana[i][j], wn = num;
        }
    }
    if (st) {
        ff_error_prefix(fn);
        st = ff_error(st, "%s", ff_last_error());
    } else if (wi >= 0 && worst > 0) {
        st = ff_error(FF_ERR_AUTOGRAD,
                      "%s: gradient mismatch at input %d, element %lld (row-major): analytic %.10g, numeric %.10g, "
                      "|diff| %.3g > atol %g + rtol %g * |numeric|",
                      fn, wi, (long long)wj, wa, wn, fabs(wa - wn), atol, rtol);
    }
    if (opts) opts->max_abs_err = max_err;
    ff_set_grad_enabled(prev_mode);
    for (int i = 0; i < n; i++) {
        ff_tensor_release(xs[i]);
        free(ana[i]);
    }
    free(host);
    ff_tensor_release(w);
    ff_tensor_release(loss);
    return st;
}
