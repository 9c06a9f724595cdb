/* Autocast (include/ff/amp.h): the per-thread mode, and the one cast rule the ops that
 * take part apply at their entry (ff_autocast_operands). Everything else in autocast is
 * ordinary ops: the casts are differentiable astype nodes. */
#include "ops_impl.h"

static _Thread_local ff_dtype autocast_dtype = FF_F32;

ff_status ff_autocast_set(ff_dtype dtype)
{
    if (dtype != FF_F32 && dtype != FF_F16 && dtype != FF_BF16)
        return ff_error(FF_ERR_INVALID, "ff_autocast_set: dtype %s is not float16, bfloat16 or float32 (off)",
                        ff_dtype_name(dtype));
    if (dtype != autocast_dtype) ff_autocast_cache_clear(); /* the region ends (or changes dtype) */
    autocast_dtype = dtype;
    return FF_OK;
}

ff_dtype ff_autocast_get(void) { return autocast_dtype; }

ff_dtype ff_autocast_swap(ff_dtype dtype)
{
    ff_dtype prev = autocast_dtype;
    autocast_dtype = dtype;
    return prev;
}

static bool is_half(ff_dtype t) { return t == FF_F16 || t == FF_BF16; }

int ff_autocast_operands(ff_autocast_rule rule, int n, const ff_tensor *const *in, ff_tensor **out, const char *fn)
{
    if (autocast_dtype == FF_F32) return 0;
    ff_dtype target = rule == FF_AUTOCAST_LOW ? autocast_dtype : FF_F32;
    bool any = false;
    for (int i = 0; i < n; i++) {
        if (!in[i]) continue;
        ff_dtype t = in[i]->dtype;
        if (rule == FF_AUTOCAST_LOW && t != FF_F32 && !is_half(t)) return 0; /* f64, integers: left alone */
        any |= rule == FF_AUTOCAST_LOW ? t != target : is_half(t);
    }
    if (!any) return 0;
    for (int i = 0; i < n; i++) {
        bool cast = in[i] && (rule == FF_AUTOCAST_LOW || is_half(in[i]->dtype));
        out[i] = !cast ? ff_tensor_retain((ff_tensor *)in[i])
                 : rule == FF_AUTOCAST_LOW ? ff_autocast_cast(in[i], target, fn)
                                           : ff_op_cast(in[i], target, fn);
        if (cast && !out[i]) {
            ff_autocast_release(i, out);
            return -1;
        }
    }
    return n;
}

void ff_autocast_release(int n, ff_tensor **t)
{
    for (int i = 0; i < n; i++) ff_tensor_release(t[i]);
}
