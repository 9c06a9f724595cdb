/* The shared plumbing of ops/: casts to the compute dtype, node recording, axes. */
#include <stdlib.h>
#include <stdatomic.h>
#include <string.h>

#include "ops_impl.h"

ff_tensor *ff_op_cast(const ff_tensor *t, ff_dtype dtype, const char *fn)
{
    if (!t) return ff_error(FF_ERR_INVALID, "%s: NULL operand", fn), NULL; /* a failed step of a chain */
    if (t->dtype == dtype) return ff_tensor_retain((ff_tensor *)t);
    /* A tracked cast when t has history: the op saves the cast operand for backward,
     * and under create_graph the formula must reach t through it. */
    if (ff_dtype_has_grad(dtype) && ff_autograd_needed(1, &t)) return ff_astype(t, dtype);
    ff_tensor *r = ff_tensor_new_like(t, dtype, fn); /* t's strides where dense, as ff_astype */
    if (r && ff_kernel_copy(r, t, fn)) {
        ff_tensor_release(r);
        return NULL;
    }
    return r;
}

ff_node *ff_op_record_node(ff_tensor **out, const char *name, ff_backward_fn bw, int n,
                           const ff_tensor *const *inputs, int nsave, const ff_tensor *const *save)
{
    if (!*out || !ff_autograd_needed(n, inputs)) return NULL;
    ff_node *node = ff_autograd_record(*out, name, bw, n, inputs);
    for (int i = 0; node && i < nsave; i++)
        if (ff_node_save(node, save[i])) node = NULL;
    if (!node) {
        ff_tensor_release(*out);
        *out = NULL;
    }
    return node;
}

ff_tensor *ff_op_record(ff_tensor *out, const char *name, ff_backward_fn bw, int n,
                        const ff_tensor *const *inputs, int nsave, const ff_tensor *const *save)
{
    ff_op_record_node(&out, name, bw, n, inputs, nsave, save);
    return out;
}

ff_status ff_axes_mask(int ndim, int naxes, const int *axes, uint32_t *mask, const char *fn)
{
    uint32_t m = 0;
    if (naxes < 0 || naxes > ndim || (naxes && !axes))
        return ff_error(FF_ERR_INVALID, "%s: bad axes list (%d axes for rank %d)", fn, naxes, ndim);
    if (naxes == 0) m = ndim ? (uint32_t)((1u << ndim) - 1) : 0;
    for (int i = 0; i < naxes; i++) {
        int a;
        if (ff_layout_normalize_axis(axes[i], ndim, &a, fn)) return FF_ERR_INVALID;
        if (m & (1u << a)) return ff_error(FF_ERR_INVALID, "%s: axis %d repeated", fn, axes[i]);
        m |= 1u << a;
    }
    *mask = m;
    return FF_OK;
}

void ff_reduced_shape(const ff_layout *l, uint32_t mask, int64_t *keep_shape, int *out_ndim, int64_t *out_shape)
{
    int k = 0;
    for (int d = 0; d < l->ndim; d++) {
        bool r = mask & (1u << d);
        keep_shape[d] = r ? 1 : l->shape[d];
        if (!r) out_shape[k++] = l->shape[d];
    }
    *out_ndim = k;
}

ff_tensor *ff_op_scalar_like(const ff_tensor *t, double s, ff_dtype dtype)
{
    return ff_scalar_on(t->storage->backend, s, dtype);
}

/* Kinds whose composition ff_ops_force_compose forces, one bit per ff_op_kind: the switch
 * tests flip at run time. Flipping FF_<OP>=compose with setenv instead races with other
 * threads' getenv (PoCL's workers call it while kernels run; under ASan that crashed a run). */
static _Atomic uint64_t forced_compose;

void ff_ops_force_compose(ff_op_kind kind, bool on)
{
    if ((unsigned)kind >= 64) return;
    if (on) forced_compose |= (uint64_t)1 << kind;
    else forced_compose &= ~((uint64_t)1 << kind);
}

bool ff_op_compose_forced(ff_op_kind kind, const char *env)
{
    if ((unsigned)kind < 64 && (forced_compose >> kind & 1)) return true;
    const char *v = getenv(env); /* read, never written, by the library */
    return v && !strcmp(v, "compose");
}

bool ff_op_entry_enabled(const ff_tensor *x, ff_op_kind kind, int op_first, int op_last, const char *env)
{
    ff_backend *be = x->storage->backend;
    for (int op = op_first; op <= op_last; op++)
        if (!ff_backend_supports(be, kind, op, x->dtype)) return false;
    return !ff_op_compose_forced(kind, env);
}
