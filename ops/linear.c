/* ff_linear_act: a Linear layer's forward with the activation that follows it, as one
 * call of the backend's optional linear entry where that computes what the plain ops
 * would: no gradient needed, no capture watching (the kernel wrapper declines under an
 * observer), one dtype, one backend, no autocast region. There the bias and the
 * activation ride on the product (oneDNN post-ops in cpu_blas) instead of two more
 * passes over y, which were ~15% of MiniLM's bf16 forward, and a half y is rounded once
 * (PyTorch's addmm rounds the biased sum once too). Everything else composes ff_matmul,
 * ff_add and ff_unary, which keep their autograd and autocast rules. */
#include "ops_impl.h"

/* The plain ops: what a capture records and autograd differentiates. Under autocast the
 * bias joins y's dtype, so the output stays in it (as PyTorch's). */
static ff_tensor *linear_composed(const ff_tensor *x, const ff_tensor *w, const ff_tensor *bias, int act)
{
    ff_tensor *wt = ff_mT(w), *y = wt ? ff_matmul(x, wt) : NULL;
    ff_tensor_release(wt);
    if (y && bias) {
        bool cast = y->dtype != FF_F32 && y->dtype == ff_autocast_get() && bias->dtype != y->dtype;
        ff_tensor *bc = cast ? ff_astype(bias, y->dtype) : ff_tensor_retain((ff_tensor *)bias);
        ff_tensor *yb = bc ? ff_add(y, bc) : NULL;
        ff_tensor_release(bc);
        ff_tensor_release(y);
        y = yb;
    }
    if (y && act != FF_LINEAR_NO_ACT) {
        ff_tensor *ya = ff_unary((ff_unary_op)act, y);
        ff_tensor_release(y);
        y = ya;
    }
    return y;
}

/* The entry path: *st FF_ERR_UNSUPPORTED (no message) when the backend declines. */
static ff_tensor *linear_entry(const ff_tensor *x, const ff_tensor *w, const ff_tensor *bias, int act,
                               ff_status *st, const char *fn)
{
    int nd = x->layout.ndim;
    int64_t K = x->layout.shape[nd - 1], N = w->layout.shape[0], M = ff_tensor_numel(x) / K;
    int64_t mk[2] = {M, K}, mn[2] = {M, N}, yshape[FF_MAX_DIMS];
    for (int d = 0; d < nd - 1; d++) yshape[d] = x->layout.shape[d];
    yshape[nd - 1] = N;
    ff_tensor *x2 = ff_reshape(x, 2, mk), *wt = x2 ? ff_mT(w) : NULL, *bb = NULL, *dst = NULL, *y = NULL;
    if (wt && bias) bb = ff_expand(bias, 2, mn);
    if (wt && (bb || !bias)) dst = ff_tensor_new(x->storage->backend, 2, mn, x->dtype, fn);
    *st = dst ? ff_kernel_linear(dst, (const ff_tensor *const[]){x2, wt, bb}, bias ? 3 : 2, act, fn)
              : ff_last_status();
    if (!*st && !(y = ff_reshape(dst, nd, yshape))) *st = ff_last_status();
    ff_tensor_release(x2), ff_tensor_release(wt), ff_tensor_release(bb), ff_tensor_release(dst);
    return y;
}

ff_tensor *ff_linear_act(const ff_tensor *x, const ff_tensor *weight, const ff_tensor *bias, int act)
{
    static const char fn[] = "ff_linear_act";
    char sx[160], sw[160], sb[160];
    if (!x || !weight) return ff_error(FF_ERR_INVALID, "%s: NULL %s", fn, x ? "weight" : "x"), NULL;
    if (act != FF_LINEAR_NO_ACT && (act < 0 || act >= FF_UNARY_COUNT))
        return ff_error(FF_ERR_INVALID, "%s: act %d is neither an ff_unary_op nor FF_LINEAR_NO_ACT", fn, act), NULL;
    int nd = x->layout.ndim;
    const int64_t *ws = weight->layout.shape;
    if (nd < 1 || weight->layout.ndim != 2 || x->layout.shape[nd - 1] != ws[1] ||
        (bias && (bias->layout.ndim != 1 || bias->layout.shape[0] != ws[0])))
        return ff_error(FF_ERR_INVALID, "%s: x %s, weight %s, bias %s: expected x [..., K], weight [N, K], bias [N]",
                        fn, ff_shape_str(nd, x->layout.shape, sx, sizeof sx),
                        ff_shape_str(weight->layout.ndim, ws, sw, sizeof sw),
                        bias ? ff_shape_str(bias->layout.ndim, bias->layout.shape, sb, sizeof sb) : "none"), NULL;
    const ff_tensor *in[3] = {x, weight, bias};
    int n = bias ? 3 : 2;
    bool one = ff_dtype_is_float(x->dtype) && weight->dtype == x->dtype && (!bias || bias->dtype == x->dtype) &&
               weight->storage->backend == x->storage->backend &&
               (!bias || bias->storage->backend == x->storage->backend);
    /* supports() first: a backend without the entry (opencl, cuda) composes at once, with
     * no [M, N] dst made and dropped on every call */
    if (one && ff_tensor_numel(x) > 0 && ws[0] > 0 && ws[1] > 0 && ff_autocast_get() == FF_F32 &&
        !ff_autograd_needed(n, in) && ff_op_entry_enabled(x, FF_KIND_LINEAR, act, act, "FF_LINEAR")) {
        ff_status st;
        ff_tensor *y = linear_entry(x, weight, bias, act, &st, fn);
        if (st != FF_ERR_UNSUPPORTED) return y;
    }
    return linear_composed(x, weight, bias, act);
}
