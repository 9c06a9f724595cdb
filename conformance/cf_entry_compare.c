/* The three-way check of the families that test an optional entry against the core's
 * composition of the same op (attention, layer_norm): an op and its gradients run on
 * the backend as it runs, on the same backend with the composition forced, and on the
 * reference; each output of the second and third run is compared with the first's. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "cf_optable.h"

void cf_entry_run_free(cf_entry_run *r)
{
    for (int i = 0; i < CF_ENTRY_OUTS; i++) ff_tensor_release(r->out[i]);
}

void *cf_tensor_to_host(const ff_tensor *t)
{
    size_t nb = (size_t)ff_tensor_numel(t) * ff_dtype_size(ff_tensor_dtype(t));
    void *h = malloc(nb ? nb : 1);
    if (!h) abort();
    if (ff_tensor_to_host(t, h, nb)) {
        free(h);
        return NULL;
    }
    return h;
}

/* got vs want within the accumulate class over the sums' length k, widened by a few of
 * the dtype's epsilons times want's largest magnitude: a composition rounds its
 * intermediates (scores and weights, xhat) to the dtype, where an entry rounds each
 * result once. Every output is a sum that may end a hair on either side of zero (a
 * gradient +0 in the composition comes out as a half's -0 when its terms round
 * differently: seen on cpu_blas, and on the H100 at T = 1), hence zero_either. */
static bool close_enough(const ff_tensor *t, const void *got, const void *want, int64_t k, const char *what,
                         const char *name, char *why, size_t n)
{
    ff_dtype dt = ff_tensor_dtype(t);
    int64_t cnt = ff_tensor_numel(t);
    double big = 0;
    for (int64_t i = 0; i < cnt; i++) {
        double w = fabs(cf_get_f(want, dt, i));
        if (w > big && isfinite(w)) big = w;
    }
    cf_tol tol = cf_tolerance(dt, CF_TOL_ACCUM, k);
    double eps = dt == FF_F64 ? 0x1p-52 : dt == FF_F32 ? 0x1p-23 : dt == FF_F16 ? 0x1p-10 : 0x1p-7;
    tol.atol += (dt == FF_F16 || dt == FF_BF16 ? 2 : 8) * eps * big;
    tol.zero_either = true;
    cf_diff d;
    if (cf_compare(got, want, dt, cnt, tol, false, &d)) return true;
    char idx[96], sh[96];
    cf_index_str(idx, sizeof idx, ff_tensor_ndim(t), ff_tensor_shape(t), d.first);
    cf_shape_str(sh, sizeof sh, ff_tensor_ndim(t), ff_tensor_shape(t));
    snprintf(why, n,
             "%s: %s: %" PRId64 " of %" PRId64 " elements of %s%s differ (rtol=%.3g atol=%.3g) max_abs=%.6g "
             "first at %s: got %.17g want %.17g",
             what, name, d.n_bad, cnt, ff_dtype_name(dt), sh, tol.rtol, tol.atol, d.max_abs, idx, d.got, d.want);
    return false;
}

bool cf_entry_compare(const cf_entry_run runs[3], bool with_reference, int nout, const char *const *names,
                      const int64_t *ks, char *why, size_t cap)
{
    static const char *const whats[3] = {"", "backend vs its composition", "backend vs reference"};
    static const char *const runners[3] = {"the op", "the composition", "the reference"};
    for (int r = 0; r < (with_reference ? 3 : 2); r++)
        if (runs[r].st) {
            snprintf(why, cap, "%s failed (%s): %s", runners[r], ff_status_name(runs[r].st), runs[r].err);
            return false;
        }
    bool ok = true;
    for (int r = 1; r < (with_reference ? 3 : 2) && ok; r++)
        for (int i = 0; i < nout && ok; i++) {
            const ff_tensor *a = runs[0].out[i], *b = runs[r].out[i];
            void *ha = cf_tensor_to_host(a), *hb = cf_tensor_to_host(b);
            if (!ha || !hb) {
                snprintf(why, cap, "reading %s back failed: %s", names[i], ff_last_error());
                ok = false;
            } else if (ff_tensor_numel(a) != ff_tensor_numel(b) || ff_tensor_dtype(a) != ff_tensor_dtype(b)) {
                snprintf(why, cap, "%s: %s has another shape or dtype", whats[r], names[i]);
                ok = false;
            } else {
                ok = close_enough(a, ha, hb, ks[i], whats[r], names[i], why, cap);
            }
            free(ha), free(hb);
        }
    return ok;
}
