/* F16/BF16 cases on a backend that declines the entry on the half dtype: the suite takes
 * the path the core takes (core/kernel.c, "the f32 detour"), so such a backend is checked
 * on what its users get, and the reference (which computes no half entry) on the values
 * every backend is compared with.
 *
 * The detour here works on the case's own buffers: every half buffer of the call is
 * widened whole (gaps and sentinels too) into an f32 buffer of the same length through
 * the backend's copy entry, the f32 entry runs on views with the same offsets and strides,
 * and the written view is copied back, rounding once, through copy again. Only the view's
 * elements go back, so the guards still see every byte outside it untouched. The core's
 * temporaries are dense instead; elementwise values do not depend on the layout, and
 * reductions and matmul are compared with tolerances. */
#include <stdio.h>
#include <string.h>

#include "cf.h"

static bool is_half(ff_dtype t) { return t == FF_F16 || t == FF_BF16; }

/* The op argument of the supports() query for the call. */
static int query_op(const cf_call *c)
{
    switch (c->kind) {
    case FF_KIND_UNARY: case FF_KIND_BINARY: case FF_KIND_REDUCE: case FF_KIND_RANDOM: case FF_KIND_SOFTMAX:
        return c->op;
    default: return 0;
    }
}

/* As the core decides (half_detour_needed), plus the copies the detour runs: a backend
 * that cannot copy the half dtype to and from F32 cannot hold half tensors at all, and
 * its half cases are skipped. */
bool cf_detour_needed(ff_backend *be, int kind, int op, ff_dtype dt)
{
    if (!is_half(dt) || kind == FF_KIND_FILL || kind == FF_KIND_COPY) return false;
    return !ff_backend_supports(be, (ff_op_kind)kind, op, dt) && ff_backend_supports(be, (ff_op_kind)kind, op, FF_F32) &&
           ff_backend_supports(be, FF_KIND_COPY, (int)dt, FF_F32) && ff_backend_supports(be, FF_KIND_COPY, FF_F32, dt);
}

/* The dtype the core would ask supports() about: the call's first half operand's. */
static ff_dtype call_half_dtype(const cf_call *c)
{
    for (int i = 0; i < c->nops; i++)
        if (is_half(c->o[i].dtype)) return c->o[i].dtype;
    return FF_F32;
}

bool cf_call_detours(ff_backend *be, const cf_call *c)
{
    return cf_detour_needed(be, c->kind, query_op(c), call_half_dtype(c));
}

static ff_view flat(void *buf, ff_dtype t, int64_t n)
{
    ff_view v = {.buf = buf, .dtype = t, .ndim = 1, .shape = {n}, .strides = {1}};
    return v;
}

ff_status cf_exec_detour(ff_backend *be, const cf_call *c, const ff_view *v, cf_entry_fn call)
{
    const ff_backend_vtable *vt = be->vt;
    void *wide[CF_MAX_OPERANDS] = {0};
    ff_view w[CF_MAX_OPERANDS];
    ff_status st = FF_OK;
    for (int i = 0; i < c->nops && !st; i++) {
        const cf_operand *o = &c->o[i];
        w[i] = v[i];
        if (!is_half(o->dtype) || o->alias >= 0) continue;
        wide[i] = vt->alloc(be->ctx, (size_t)(o->nelems ? o->nelems : 1) * 4);
        if (!wide[i]) {
            st = FF_ERR_OOM;
            break;
        }
        ff_view hv = flat(v[i].buf, o->dtype, o->nelems), fv = flat(wide[i], FF_F32, o->nelems);
        if (o->nelems) st = vt->copy(be->ctx, &fv, &hv);
        w[i].buf = wide[i], w[i].dtype = FF_F32;
    }
    for (int i = 0; i < c->nops && !st; i++)
        if (c->o[i].alias >= 0 && is_half(c->o[i].dtype))
            w[i].buf = wide[c->o[i].alias], w[i].dtype = FF_F32;
    if (!st) st = call(be, c, w);
    for (int i = 0; i < c->nops && !st; i++) /* the written views, rounded once */
        if (c->o[i].output && is_half(c->o[i].dtype)) st = vt->copy(be->ctx, &v[i], &w[i]);
    for (int i = 0; i < c->nops; i++)
        if (wide[i]) vt->free(be->ctx, wide[i]);
    if (st == FF_ERR_OOM && !ff_last_error()[0]) ff_error_set_message("conformance: out of memory for the f32 detour");
    return st;
}
