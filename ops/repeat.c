/* repeat (torch.Tensor.repeat) and tile (numpy.tile), composed from views: each
 * repeated axis d of size s becomes [P, 1, s, Q] expanded to [P, r, s, Q] and
 * reshaped (a copy) to r * s. Four dims at a time keeps any rank within FF_MAX_DIMS,
 * and the gradient comes from the reshape/expand nodes (a sum over the copies). */
#include "ops_impl.h"

/* reps has m >= ndim(x) entries, all >= 0, m <= FF_MAX_DIMS. */
static ff_tensor *repeat_impl(const ff_tensor *x, int m, const int64_t *reps, const char *fn)
{
    int nd = x->layout.ndim;
    int64_t cur[FF_MAX_DIMS] = {0}, total = 1;
    for (int d = 0; d < m; d++) {
        cur[d] = d < m - nd ? 1 : x->layout.shape[d - (m - nd)];
        int64_t out_d;
        if (ff_mul_overflow_i64(cur[d], reps[d], &out_d) || ff_mul_overflow_i64(total, out_d, &total))
            return ff_error(FF_ERR_OVERFLOW, "%s: repeated size overflows", fn), NULL;
    }
    ff_tensor *t = ff_reshape(x, m, cur); /* leading 1s: a view */
    for (int d = 0; t && d < m; d++) {
        if (reps[d] == 1) continue;
        int64_t p = 1, q = 1;
        for (int k = 0; k < d; k++) p *= cur[k];
        for (int k = d + 1; k < m; k++) q *= cur[k];
        ff_tensor *t4 = ff_reshape(t, 4, (int64_t[]){p, 1, cur[d], q});
        ff_tensor *e = t4 ? ff_expand(t4, 4, (int64_t[]){p, reps[d], cur[d], q}) : NULL;
        cur[d] *= reps[d];
        ff_tensor *next = e ? ff_reshape(e, m, cur) : NULL;
        ff_tensor_release(t4);
        ff_tensor_release(e);
        ff_tensor_release(t);
        t = next;
    }
    if (t && ff_tensor_shares_storage(t, x)) { /* only views so far: repeat always copies */
        ff_tensor *c = ff_clone(t);
        ff_tensor_release(t);
        t = c;
    }
    if (!t) ff_error_prefix(fn);
    return t;
}

static ff_status check_reps(const ff_tensor *x, int nreps, const int64_t *reps, const char *fn)
{
    if (!x || (nreps && !reps)) return ff_error(FF_ERR_INVALID, "%s: NULL argument", fn);
    if (nreps < 0 || nreps > FF_MAX_DIMS)
        return ff_error(FF_ERR_INVALID, "%s: %d repeats exceed rank %d", fn, nreps, FF_MAX_DIMS);
    for (int d = 0; d < nreps; d++)
        if (reps[d] < 0)
            return ff_error(FF_ERR_INVALID, "%s: repeat %lld at %d is negative", fn, (long long)reps[d], d);
    return FF_OK;
}

ff_tensor *ff_repeat(const ff_tensor *x, int nreps, const int64_t *reps)
{
    static const char fn[] = "ff_repeat";
    if (check_reps(x, nreps, reps, fn)) return NULL;
    if (nreps < x->layout.ndim)
        return ff_error(FF_ERR_INVALID, "%s: %d repeats for a tensor of rank %d (need at least one per dim)", fn,
                        nreps, x->layout.ndim), NULL;
    return repeat_impl(x, nreps, reps, fn);
}

ff_tensor *ff_tile(const ff_tensor *x, int nreps, const int64_t *reps)
{
    static const char fn[] = "ff_tile";
    if (check_reps(x, nreps, reps, fn)) return NULL;
    int nd = x->layout.ndim, m = nreps > nd ? nreps : nd;
    int64_t full[FF_MAX_DIMS];
    for (int d = 0; d < m; d++) full[d] = d < m - nreps ? 1 : reps[d - (m - nreps)]; /* numpy: prepend 1s */
    return repeat_impl(x, m, full, fn);
}
