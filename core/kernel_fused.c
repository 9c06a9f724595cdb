/* ff_kernel_fused: a backend's fused entry (ff_fused_program, include/ff/backend_abi.h)
 * run eagerly on tensors, for code that knows its whole elementwise chain up front (the
 * optimizers' step) and wants it in one pass instead of one launch per op. The program
 * is only an optimization of that chain: wherever it cannot run exactly as the chain
 * would, this returns FF_ERR_UNSUPPORTED without a message and the caller runs the
 * chain. A capture in progress (or any kernel observer) is one such case: the observer
 * must see the plain launches, which graph/ fuses by itself. */
#include <string.h>

#include "ff_impl.h"

/* No two elements of l share an address: the dims of extent > 1, by increasing stride,
 * each step past everything the smaller ones reach. Strides are >= 0. */
static bool layout_no_self_overlap(const ff_layout *l)
{
    int64_t stride[FF_MAX_DIMS], size[FF_MAX_DIMS];
    int n = 0;
    for (int d = 0; d < l->ndim; d++) {
        if (l->shape[d] == 0) return true;
        if (l->shape[d] == 1) continue;
        int k = n++;
        for (; k > 0 && stride[k - 1] > l->strides[d]; k--) stride[k] = stride[k - 1], size[k] = size[k - 1];
        stride[k] = l->strides[d], size[k] = l->shape[d];
    }
    int64_t reach = 0;
    for (int k = 0; k < n; k++) {
        if (stride[k] <= reach) return false;
        reach += stride[k] * (size[k] - 1);
    }
    return true;
}

/* Whether a written view is safe to evaluate element by element (the ABI's promise): no
 * element of its own twice, and no element of another view of the program. */
static bool written_view_alone(int w, int n_views, ff_tensor *const *ts)
{
    const ff_tensor *t = ts[w];
    if (!layout_no_self_overlap(&t->layout)) return false;
    int64_t lo, hi;
    ff_layout_span(&t->layout, &lo, &hi);
    for (int j = 0; j < n_views; j++) {
        if (j == w || ts[j]->storage != t->storage) continue;
        int64_t lo2, hi2;
        ff_layout_span(&ts[j]->layout, &lo2, &hi2);
        if (lo < hi2 && lo2 < hi) return false;
    }
    return true;
}

static ff_status check_program(int n_views, int n_values, const ff_fused_inst *inst, int n_inst, bool *written,
                               const char *fn)
{
    if (n_views < 1 || n_views > FF_FUSED_MAX_VIEWS || n_values < n_views || n_values > FF_FUSED_MAX_VALUES ||
        n_inst < 1 || !inst)
        return ff_error(FF_ERR_INVALID,
                        "%s: internal: fused program of %d views, %d values, %d instructions (at most %d views, %d "
                        "values, one instruction or more)",
                        fn, n_views, n_values, n_inst, FF_FUSED_MAX_VIEWS, FF_FUSED_MAX_VALUES);
    for (int k = 0; k < n_inst; k++) {
        const ff_fused_inst *in = &inst[k];
        bool unary = in->kind == FF_KIND_UNARY, binary = in->kind == FF_KIND_BINARY;
        bool op_ok = unary ? (unsigned)in->op < FF_UNARY_COUNT : binary && (unsigned)in->op < FF_BINARY_COUNT;
        int n_src = unary ? 1 : 2;
        bool idx_ok = in->dst >= 0 && in->dst < n_values;
        for (int s = 0; s < n_src; s++) idx_ok = idx_ok && in->src[s] >= 0 && in->src[s] < n_values;
        if (!op_ok || !idx_ok)
            return ff_error(FF_ERR_INVALID, "%s: internal: fused instruction %d (kind %d, op %d, dst %d) is malformed",
                            fn, k, (int)in->kind, (int)in->op, (int)in->dst);
        if (in->dst < n_views) written[in->dst] = true;
    }
    return FF_OK;
}

ff_status ff_kernel_fused(ff_tensor *const *ts, int n_views, int n_values, const ff_fused_inst *inst, int n_inst,
                          const char *fn)
{
    bool written[FF_FUSED_MAX_VIEWS] = {false};
    if (check_program(n_views, n_values, inst, n_inst, written, fn)) return ff_last_status();
    ff_backend *be = ff_common_backend(n_views, (const ff_tensor *const *)ts, fn);
    if (!be) return ff_last_status();
    ff_dtype dt = ts[0]->dtype;
    for (int i = 1; i < n_views; i++)
        if (ts[i]->dtype != dt)
            return ff_error(FF_ERR_INVALID, "%s: internal: fused view %d is %s, the program's dtype is %s", fn, i,
                            ff_dtype_name(ts[i]->dtype), ff_dtype_name(dt));
    ff_clear_error();
    if (ff_kernel_observing) return FF_ERR_UNSUPPORTED; /* a capture sees the plain ops */
    ff_status (*fused)(void *, const ff_fused_program *) = FF_VT_OPT(be, fused);
    if (!fused || !be->vt->supports(be->ctx, FF_KIND_FUSED, 0, dt)) return FF_ERR_UNSUPPORTED;
    for (int k = 0; k < n_inst; k++)
        if (!be->vt->supports(be->ctx, inst[k].kind, inst[k].op, dt)) return FF_ERR_UNSUPPORTED;
    for (int i = 0; i < n_views; i++)
        if (written[i] && !written_view_alone(i, n_views, ts)) return FF_ERR_UNSUPPORTED;

    /* every view over ts[0]'s shape; the others broadcast to it (a 0-d scalar: stride 0) */
    const ff_layout *it = &ts[0]->layout;
    ff_view views[FF_FUSED_MAX_VIEWS];
    for (int i = 0; i < n_views; i++) {
        ff_layout l;
        if (ff_layout_expand(&ts[i]->layout, it->ndim, it->shape, &l, fn)) return ff_last_status();
        if (written[i] && (l.ndim != ts[i]->layout.ndim || memcmp(l.shape, ts[i]->layout.shape,
                                                                  sizeof(int64_t) * (size_t)l.ndim)))
            return ff_error(FF_ERR_INVALID, "%s: internal: written fused view %d does not have the program's shape", fn,
                            i);
        ff_tensor_view_layout(ts[i], &l, &views[i]);
    }
    ff_fused_program prog = {.dtype = dt, .ndim = it->ndim, .n_views = n_views, .views = views,
                             .n_values = n_values, .n_inst = n_inst, .inst = inst};
    memcpy(prog.shape, it->shape, sizeof(int64_t) * (size_t)it->ndim);
    ff_status st = fused(be->ctx, &prog);
    for (int i = 0; i < n_views; i++)
        if (written[i]) ff_storage_note_write(ts[i]->storage);
    if (st == FF_OK) return FF_OK;
    ff_error_prefix(fn);
    return ff_error(st, "%s", ff_last_error());
}
