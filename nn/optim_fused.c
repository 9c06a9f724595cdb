/* An optimizer's per-parameter update as one fused program (ff_kernel_fused) instead of
 * a dozen elementwise launches, each a full pass over memory and a dispatch. The program
 * is the composition's exact op sequence, constants included as 0-d tensors of p's dtype
 * (the composition's scalars are rounded to it too), so the bits are the composition's;
 * it runs only where that holds, else the optimizer composes as before. The one file of
 * nn/ that uses the core's internals (ff_impl.h): the kernel wrapper and storages. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "ff_impl.h"
#include "nn_impl.h"

/* -1: not read yet; else whether FF_OPTIM_FUSED allows it (anything but "0" does) */
static atomic_int fused_allowed = -1;
static atomic_llong fused_count;

void ff_optim_fused_allow(bool on) { atomic_store(&fused_allowed, on ? 1 : 0); }

int64_t ff_optim_fused_count(void) { return (int64_t)atomic_load(&fused_count); }

static bool fused_is_allowed(void)
{
    int a = atomic_load(&fused_allowed);
    if (a < 0) {
        const char *e = getenv("FF_OPTIM_FUSED");
        int want = !(e && strcmp(e, "0") == 0);
        atomic_compare_exchange_strong(&fused_allowed, &a, want);
        a = atomic_load(&fused_allowed);
    }
    return a == 1;
}

static bool same_shape(const ff_tensor *a, const ff_tensor *b)
{
    return a->layout.ndim == b->layout.ndim &&
           !memcmp(a->layout.shape, b->layout.shape, sizeof(int64_t) * (size_t)a->layout.ndim);
}

bool ff_optim_fused_fits(ff_tensor *const *ts, int n)
{
    if (!fused_is_allowed() || ff_graph_is_capturing()) return false;
    for (int i = 0; i < n; i++)
        if (!ts[i] || ts[i]->dtype != ts[0]->dtype || !same_shape(ts[i], ts[0])) return false;
    return true;
}

ff_status ff_optim_fused_run(ff_tensor *const *ts, int n_views, int n_values, const ff_fused_inst *inst, int n_inst,
                             bool *ran)
{
    *ran = false;
    ff_status st = ff_kernel_fused(ts, n_views, n_values, inst, n_inst, "ff_optimizer_step");
    if (st == FF_ERR_UNSUPPORTED && ff_last_status() == FF_OK) return FF_OK; /* declined: compose */
    if (st) return st;
    *ran = true;
    atomic_fetch_add(&fused_count, 1);
    return FF_OK;
}
