/* Tensor.register_hook and retain_grad: per-tensor functions backward applies to the
 * gradient a tensor receives in a pass (the engine sums every use first, so a hook sees
 * the whole gradient, as PyTorch's do). */
#include <stdlib.h>
#include <string.h>

#include "ff/autograd.h"
#include "ff_impl.h"

static int64_t add_entry(ff_tensor *t, ff_tensor_hook_fn fn, void *user, const char *fn_name)
{
    static _Atomic int64_t next_id = 1;
    ff_tensor_hook *h = calloc(1, sizeof *h), **end = &t->hooks;
    if (!h) return ff_error(FF_ERR_OOM, "%s: out of memory", fn_name), -1;
    h->id = next_id++;
    h->fn = fn;
    h->user = user;
    while (*end) end = &(*end)->next;
    *end = h;
    return h->id;
}

int64_t ff_tensor_register_hook(ff_tensor *t, ff_tensor_hook_fn fn, void *user)
{
    static const char fn_name[] = "ff_tensor_register_hook";
    if (!t || !fn) return ff_error(FF_ERR_INVALID, "%s: tensor and function must not be NULL", fn_name), -1;
    if (!t->requires_grad)
        return ff_error(FF_ERR_AUTOGRAD, "%s: cannot register a hook on a tensor that does not require grad", fn_name),
               -1;
    return add_entry(t, fn, user, fn_name);
}

ff_status ff_tensor_remove_hook(ff_tensor *t, int64_t id)
{
    if (!t) return ff_error(FF_ERR_INVALID, "ff_tensor_remove_hook: tensor is NULL");
    for (ff_tensor_hook **p = &t->hooks; *p; p = &(*p)->next)
        if ((*p)->id == id) {
            ff_tensor_hook *h = *p;
            *p = h->next;
            free(h);
            break;
        }
    return FF_OK;
}

/* retain_grad is an entry in the hook list, so it sees the gradient as the hooks
 * registered before it left it (PyTorch 1.13's order; 2.x runs it after every hook) */
ff_status ff_retain_grad(ff_tensor *t)
{
    if (!t) return ff_error(FF_ERR_INVALID, "ff_retain_grad: tensor is NULL");
    if (!t->requires_grad)
        return ff_error(FF_ERR_AUTOGRAD, "ff_retain_grad: cannot retain the grad of a tensor that does not require grad");
    if (!t->grad_fn || ff_retains_grad(t)) return FF_OK;
    return add_entry(t, NULL, NULL, "ff_retain_grad") < 0 ? ff_last_status() : FF_OK;
}

bool ff_retains_grad(const ff_tensor *t)
{
    if (!t) return false;
    if (!t->grad_fn) return t->requires_grad;
    for (const ff_tensor_hook *h = t->hooks; h; h = h->next)
        if (!h->fn) return true;
    return false;
}

ff_status ff_tensor_hooks_run(ff_tensor *t, ff_tensor **g, bool keep)
{
    for (ff_tensor_hook *h = t->hooks; h; h = h->next) {
        if (!h->fn) {
            ff_status st = keep ? ff_grad_keep(t, *g) : FF_OK;
            if (st) return st;
            continue;
        }
        ff_tensor *replace = NULL;
        ff_status st = h->fn(*g, &replace, h->user);
        if (st) {
            ff_tensor_release(replace);
            return ff_error(st, "backward: a tensor hook failed (status %d)", (int)st);
        }
        if (!replace) continue;
        if (replace->layout.ndim != t->layout.ndim ||
            memcmp(replace->layout.shape, t->layout.shape, sizeof(int64_t) * (size_t)t->layout.ndim)) {
            char a[160], b[160];
            ff_error(FF_ERR_INVALID, "backward: a tensor hook returned a gradient of shape %s for a tensor of shape %s",
                     ff_shape_str(replace->layout.ndim, replace->layout.shape, a, sizeof a),
                     ff_shape_str(t->layout.ndim, t->layout.shape, b, sizeof b));
            ff_tensor_release(replace);
            return ff_last_status();
        }
        ff_tensor_release(*g);
        *g = replace;
    }
    return FF_OK;
}
