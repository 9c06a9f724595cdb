/* ff_hooked_view: an identity node whose backward hands the passing gradient to a user
 * function first (the C face of PyTorch's Tensor.register_hook). */
#include <string.h>

#include "ff/autograd.h"
#include "ff_impl.h"

/* The function and user pointers live in the node's integer parameters (ip[0], ip[1]),
 * copied byte for byte: C has no portable cast from a function pointer to an integer. */
_Static_assert(sizeof(ff_tensor_hook_fn) <= sizeof(int64_t), "a hook pointer fits an int64_t slot");
_Static_assert(sizeof(void *) <= sizeof(int64_t), "a user pointer fits an int64_t slot");

static ff_status hooked_backward(ff_node *node, const ff_tensor *grad, ff_tensor **grad_inputs)
{
    ff_tensor_hook_fn fn;
    void *user;
    memcpy(&fn, &node->ip[0], sizeof fn);
    memcpy(&user, &node->ip[1], sizeof user);
    ff_tensor *replace = NULL;
    ff_status st = fn(grad, &replace, user);
    if (st != FF_OK) {
        ff_tensor_release(replace);
        return ff_error(st, "ff_hooked_view: the tensor hook failed (status %d)", (int)st);
    }
    grad_inputs[0] = replace ? replace : ff_tensor_retain((ff_tensor *)grad);
    return FF_OK;
}

ff_tensor *ff_hooked_view(const ff_tensor *t, ff_tensor_hook_fn fn, void *user)
{
    static const char fn_name[] = "ff_hooked_view";
    if (!t || !fn) return ff_error(FF_ERR_INVALID, "%s: tensor and hook must not be NULL", fn_name), NULL;
    ff_tensor *r = ff_tensor_new_view(t, &t->layout);
    if (!r || !ff_autograd_needed(1, &t)) return r;
    ff_node *node = ff_autograd_record(r, "hooked_view", hooked_backward, 1, &t);
    if (!node) {
        ff_tensor_release(r);
        return NULL;
    }
    memset(node->ip, 0, 2 * sizeof node->ip[0]);
    memcpy(&node->ip[0], &fn, sizeof fn);
    memcpy(&node->ip[1], &user, sizeof user);
    node->nip = 2;
    return r;
}
