/* Sequential: children "0", "1", ... run in order; intermediates are released as
 * soon as the next module has consumed them. */
#include <stdio.h>

#include "nn_impl.h"

static ff_tensor *sequential_fw(ff_module *m, const ff_tensor *x, void *u)
{
    ff_tensor *cur = ff_tensor_retain((ff_tensor *)x);
    for (int i = 0; i < m->n_children && cur; i++) {
        ff_tensor *next = ff_module_forward(m->children[i], cur);
        ff_tensor_release(cur);
        cur = next;
    }
    return cur;
}

ff_module *ff_sequential(int n, ff_module *const *modules)
{
    static const char fn[] = "ff_sequential";
    if (n < 0 || (n > 0 && !modules)) {
        ff_set_error(FF_ERR_INVALID, "%s: bad module list (n = %d)", fn, n);
        return NULL;
    }
    for (int i = 0; i < n; i++)
        if (!modules[i]) {
            ff_set_error(FF_ERR_INVALID, "%s: module %d is NULL", fn, i);
            return NULL;
        }
    ff_module *seq = ff_module_new("Sequential", sequential_fw, NULL, NULL);
    for (int i = 0; seq && i < n; i++) {
        char name[16];
        snprintf(name, sizeof name, "%d", i);
        if (ff_module_register_module(seq, name, modules[i])) {
            ff_module_release(seq);
            seq = NULL;
        }
    }
    return seq;
}

ff_module *ff_sequential_take(int n, ff_module *const *modules)
{
    for (int i = 0; modules && i < n; i++)
        if (!modules[i]) {
            /* a constructor failed: its error is the useful one, so keep it */
            for (int j = 0; j < n; j++) ff_module_release(modules[j]);
            if (!ff_last_status()) ff_set_error(FF_ERR_INVALID, "ff_sequential_take: module %d is NULL", i);
            return NULL;
        }
    ff_module *seq = ff_sequential(n, modules);
    for (int i = 0; modules && i < n; i++) ff_module_release(modules[i]);
    return seq;
}
