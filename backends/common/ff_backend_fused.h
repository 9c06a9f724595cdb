/*
 * The fused entry on host memory, shared by the in-tree CPU backends: what supports()
 * answers and the program checks. The reference's interpreter is backends/cpu/cpu_fused.c,
 * cpu_blas's tiled one backends/cpu_blas/blas_fused.c. Header-only.
 *
 * Both take F32 and F64 programs up to the ABI's caps (FF_FUSED_MAX_VALUES values, views
 * and temporaries together; FF_FUSED_MAX_VIEWS views) and refuse, before writing
 * anything, a program past them or with an instruction their plain unary/binary entry
 * would refuse on the program's dtype. A backend whose plain entries take F16/BF16 by
 * the F32 rules (cuda) passes half_ok to the _as forms, and takes half programs too.
 */
#ifndef FF_BACKEND_FUSED_H
#define FF_BACKEND_FUSED_H

#include "ff_backend_checks.h"

static inline int ffb_fused_supported_as(int op, ff_dtype t, int half_ok)
{
    return op == 0 && (ffb_is_float(t) || (half_ok && ffb_is_half(t)));
}
static inline int ffb_fused_supported(int op, ff_dtype t) { return ffb_fused_supported_as(op, t, 0); }

/* 1 if a and b address the same elements in the same order (the identical view); size-1
 * dims may have any stride. Both have the program's shape. */
static inline int ffb_same_view(const ff_view *a, const ff_view *b)
{
    if (a->buf != b->buf || a->offset != b->offset || a->dtype != b->dtype || !ffb_same_shape(a, b)) return 0;
    for (int d = 0; d < a->ndim; d++)
        if (a->shape[d] != 1 && a->strides[d] != b->strides[d]) return 0;
    return 1;
}

/* Instruction i's op on dtype t, as its plain entry would take it: FF_OK or
 * FF_ERR_UNSUPPORTED (an unknown kind or op, one the entry declines on t, one that
 * writes BOOL). */
static inline ff_status ffb_fused_inst_check(const ff_host_api *host, const char *backend, int i,
                                             const ff_fused_inst *in, ff_dtype t)
{
    ff_dtype shown = t;
    if (ffb_is_half(t)) t = FF_F32; /* a half program: the F32 rules (ffb_fused_check_as's half_ok) */
    int unary = in->kind == FF_KIND_UNARY;
    if (!unary && in->kind != FF_KIND_BINARY)
        return ffb_fail(host, FF_ERR_UNSUPPORTED, "%s fused: instruction %d: kind %d is neither unary nor binary",
                        backend, i, (int)in->kind);
    const char *name = unary ? ffb_unary_name(in->op) : ffb_binary_name(in->op);
    if (name && (unary ? ffb_unary_supported((ff_unary_op)in->op, t) && !ffb_unary_writes_bool((ff_unary_op)in->op)
                       : ffb_binary_supported((ff_binary_op)in->op, t) && !ffb_binary_writes_bool((ff_binary_op)in->op)))
        return FF_OK;
    return ffb_fail(host, FF_ERR_UNSUPPORTED, "%s fused: instruction %d: %s op %d (%s) is not supported on %s", backend,
                    i, unary ? "unary" : "binary", in->op, name ? name : "unknown", ffb_dtype_name(shown));
}

/* The entry's argument checks, with messages "<backend> fused: ...". FF_ERR_UNSUPPORTED:
 * the dtype, an instruction (ffb_fused_inst_check), more views or values than the ABI's caps.
 * FF_ERR_INVALID: a malformed program (a view that is not of the program's dtype and
 * shape, a value index out of range, a temporary read before an instruction writes it). */
static inline ff_status ffb_fused_check_as(const ff_host_api *host, const char *backend, const ff_fused_program *p,
                                           int half_ok)
{
    if (!p) return ffb_fail(host, FF_ERR_INVALID, "%s fused: program is NULL", backend);
    if (!ffb_fused_supported_as(0, p->dtype, half_ok))
        return ffb_fail(host, FF_ERR_UNSUPPORTED, "%s fused: not supported on %s", backend, ffb_dtype_name(p->dtype));
    if (p->ndim < 0 || p->ndim > FF_MAX_DIMS)
        return ffb_fail(host, FF_ERR_INVALID, "%s fused: rank %d outside [0, %d]", backend, (int)p->ndim, FF_MAX_DIMS);
    for (int d = 0; d < p->ndim; d++)
        if (p->shape[d] < 0)
            return ffb_fail(host, FF_ERR_INVALID, "%s fused: negative size at dim %d", backend, d);
    if (p->n_views < 0 || p->n_values < p->n_views || p->n_inst < 0 || (p->n_views && !p->views) ||
        (p->n_inst && !p->inst))
        return ffb_fail(host, FF_ERR_INVALID, "%s fused: %d views, %d values, %d instructions do not make a program",
                        backend, (int)p->n_views, (int)p->n_values, (int)p->n_inst);
    if (p->n_values > FF_FUSED_MAX_VALUES || p->n_views > FF_FUSED_MAX_VIEWS)
        return ffb_fail(host, FF_ERR_UNSUPPORTED, "%s fused: %d values, %d of them views, past the ABI's caps (%d, %d)",
                        backend, (int)p->n_values, (int)p->n_views, FF_FUSED_MAX_VALUES, FF_FUSED_MAX_VIEWS);
    ff_status st;
    for (int v = 0; v < p->n_views; v++) {
        const ff_view *w = &p->views[v];
        _Static_assert(FF_FUSED_MAX_VIEWS == 16, "one label per view");
        static const char *const what[FF_FUSED_MAX_VIEWS] = {"view 0", "view 1", "view 2", "view 3", "view 4", "view 5",
                                                             "view 6", "view 7", "view 8", "view 9", "view 10",
                                                             "view 11", "view 12", "view 13", "view 14", "view 15"};
        if ((st = ffb_check_view_as(host, backend, "fused", what[v], w, half_ok))) return st;
        int same = w->dtype == p->dtype && w->ndim == p->ndim;
        for (int d = 0; same && d < p->ndim; d++) same = w->shape[d] == p->shape[d];
        if (!same)
            return ffb_fail(host, FF_ERR_INVALID, "%s fused: view %d does not have the program's dtype and shape",
                            backend, v);
    }
    unsigned char written[FF_FUSED_MAX_VALUES] = {0};
    for (int i = 0; i < p->n_inst; i++) {
        const ff_fused_inst *in = &p->inst[i];
        if ((st = ffb_fused_inst_check(host, backend, i, in, p->dtype))) return st;
        int nsrc = in->kind == FF_KIND_UNARY ? 1 : 2;
        for (int k = 0; k < nsrc; k++) {
            int s = in->src[k];
            if (s < 0 || s >= p->n_values)
                return ffb_fail(host, FF_ERR_INVALID, "%s fused: instruction %d reads value %d of %d", backend, i, s,
                                (int)p->n_values);
            if (s >= p->n_views && !written[s])
                return ffb_fail(host, FF_ERR_INVALID, "%s fused: instruction %d reads temporary %d before it is written",
                                backend, i, s);
        }
        if (in->dst < 0 || in->dst >= p->n_values)
            return ffb_fail(host, FF_ERR_INVALID, "%s fused: instruction %d writes value %d of %d", backend, i,
                            (int)in->dst, (int)p->n_values);
        written[in->dst] = 1;
    }
    return FF_OK;
}

static inline ff_status ffb_fused_check(const ff_host_api *host, const char *backend, const ff_fused_program *p)
{
    return ffb_fused_check_as(host, backend, p, 0);
}

/* Elements of the iteration space (0-d: one). */
static inline int64_t ffb_fused_numel(const ff_fused_program *p)
{
    int64_t n = 1;
    for (int d = 0; d < p->ndim; d++) n *= p->shape[d];
    return n;
}

#endif /* FF_BACKEND_FUSED_H */
