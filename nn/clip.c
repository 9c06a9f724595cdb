/* Gradient clipping by global L2 norm (torch.nn.utils.clip_grad_norm_). */
#include <math.h>

#include "nn_impl.h"

/* sum(g^2), read back to the host: in g's own dtype for f32 and f64, as PyTorch's per-grad
 * norms (a sum at least as accurate as f32 pairwise summation, ABI "Accumulation"; no f64
 * copy of every gradient each step), in f64 for the halves, whose squares overflow f16 from
 * |g| = 256. */
static ff_status grad_sq_sum(const ff_tensor *g, double *out)
{
    ff_dtype t = ff_tensor_dtype(g);
    ff_tensor *w = t == FF_F32 || t == FF_F64 ? ff_tensor_retain((ff_tensor *)g) : ff_astype(g, FF_F64);
    ff_tensor *sq = w ? ff_mul(w, w) : NULL;
    ff_tensor *s = sq ? ff_sum(sq, 0, NULL, false) : NULL;
    ff_status st = s ? ff_tensor_item(s, out) : ff_nn_failed();
    ff_tensor_release(w);
    ff_tensor_release(sq);
    ff_tensor_release(s);
    return st;
}

ff_status ff_clip_grad_norm(ff_tensor *const *params, int n, double max_norm, double *total_norm_out)
{
    static const char fn[] = "ff_clip_grad_norm";
    if (n < 0 || (n > 0 && !params)) return ff_set_error(FF_ERR_INVALID, "%s: bad parameter list (n = %d)", fn, n);
    if (!(max_norm >= 0.0)) return ff_set_error(FF_ERR_INVALID, "%s: max_norm must be >= 0, got %g", fn, max_norm);
    bool prev = ff_set_grad_enabled(false);
    double total = 0.0;
    ff_status st = FF_OK;
    for (int i = 0; i < n && !st; i++) {
        if (!params[i]) {
            st = ff_set_error(FF_ERR_INVALID, "%s: parameter %d is NULL", fn, i);
            break;
        }
        ff_tensor *g = ff_grad(params[i]);
        double s = 0.0;
        if (g) st = grad_sq_sum(g, &s);
        ff_tensor_release(g);
        total += s;
    }
    total = sqrt(total);
    if (!st && total_norm_out) *total_norm_out = total;
    if (!st && isfinite(total) && total > max_norm) {
        double coef = max_norm / total;
        for (int i = 0; i < n && !st; i++) {
            ff_tensor *g = ff_grad(params[i]);
            if (!g) continue;
            ff_tensor *scaled = ff_mul_scalar(g, coef);
            st = scaled ? ff_set_grad(params[i], scaled) : ff_nn_failed();
            ff_tensor_release(scaled);
            ff_tensor_release(g);
        }
    }
    ff_set_grad_enabled(prev);
    return st;
}
