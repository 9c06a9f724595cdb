/* Runs one vtable call on a backend inside guarded buffers: every operand gets its
 * own backend buffer holding exactly its initial contents (inputs: values at every
 * position, gaps included; outputs: sentinel bytes around and between the view's
 * elements); after the call every buffer is downloaded whole, so the checker can
 * prove that nothing outside the written elements changed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cf.h"

static ff_status call_entry(ff_backend *be, const cf_call *c, const ff_view *v)
{
    const ff_backend_vtable *vt = be->vt;
    void *ctx = be->ctx;
    switch (c->kind) {
    case FF_KIND_FILL: return vt->fill(ctx, &v[0], c->value);
    case FF_KIND_COPY: return vt->copy(ctx, &v[0], &v[1]);
    case FF_KIND_UNARY: return vt->unary(ctx, (ff_unary_op)c->op, &v[0], &v[1]);
    case FF_KIND_BINARY: return vt->binary(ctx, (ff_binary_op)c->op, &v[0], &v[1], &v[2]);
    case FF_KIND_REDUCE: return vt->reduce(ctx, (ff_reduce_op)c->op, &v[0], &v[1], c->mask);
    case FF_KIND_MATMUL: return vt->matmul(ctx, &v[0], &v[1], &v[2]);
    case FF_KIND_WHERE: return vt->where(ctx, &v[0], &v[1], &v[2], &v[3]);
    case FF_KIND_GATHER: return vt->gather(ctx, &v[0], &v[1], &v[2], c->axis);
    case FF_KIND_SCATTER_ADD: return vt->scatter_add(ctx, &v[0], &v[1], &v[2], c->axis);
    case FF_KIND_RANDOM:
        return vt->random(ctx, &v[0], (ff_random_dist)c->op, c->rseed, c->rcounter, c->p0, c->p1);
    case FF_KIND_SOFTMAX: {
        ff_status (*sm)(void *, const ff_view *, const ff_view *, int, int) = FF_VT_OPT(be, softmax);
        if (!sm) {
            ff_error_set_message("backend has no softmax entry");
            return FF_ERR_UNSUPPORTED;
        }
        return sm(ctx, &v[0], &v[1], c->axis, c->op);
    }
    default: ff_error_set_message("conformance: unknown kind %d", (int)c->kind); return FF_ERR_INVALID;
    }
}

ff_status cf_exec(ff_backend *be, const cf_call *c, cf_exec_result *res)
{
    memset(res, 0, sizeof *res);
    void *bufs[CF_MAX_OPERANDS] = {0};
    ff_view v[CF_MAX_OPERANDS];
    ff_status st = FF_OK;
    ff_clear_error();
    for (int i = 0; i < c->nops && !st; i++) {
        const cf_operand *o = &c->o[i];
        if (o->alias >= 0) continue; /* bound below, once its buffer exists */
        size_t nb = (size_t)o->nelems * ff_dtype_size(o->dtype);
        bufs[i] = be->vt->alloc(be->ctx, nb);
        if (!bufs[i]) {
            st = FF_ERR_OOM;
            snprintf(res->error, sizeof res->error, "alloc(%zu) failed: %s", nb, ff_last_error());
            break;
        }
        st = be->vt->upload(be->ctx, bufs[i], 0, o->init, nb);
        if (st) snprintf(res->error, sizeof res->error, "upload failed: %s", ff_last_error());
    }
    for (int i = 0; i < c->nops; i++)
        if (c->o[i].alias >= 0) bufs[i] = bufs[c->o[i].alias];
    if (!st) {
        for (int i = 0; i < c->nops; i++) {
            const cf_operand *o = &c->o[i];
            memset(&v[i], 0, sizeof v[i]);
            v[i].buf = bufs[i];
            v[i].offset = o->offset;
            v[i].dtype = o->dtype;
            v[i].ndim = o->ndim;
            memcpy(v[i].shape, o->shape, sizeof o->shape);
            memcpy(v[i].strides, o->strides, sizeof o->strides);
        }
        ff_clear_error();
        st = call_entry(be, c, v);
        if (st) snprintf(res->error, sizeof res->error, "%s", ff_last_error()[0] ? ff_last_error() : "(no message)");
        ff_status ss = be->vt->sync(be->ctx);
        if (!st && ss) {
            st = ss;
            snprintf(res->error, sizeof res->error, "sync failed: %s", ff_last_error());
        }
    }
    /* download every buffer, even after a failed call: a kernel that fails must
     * not have scribbled outside its output either */
    for (int i = 0; i < c->nops; i++) {
        const cf_operand *o = &c->o[i];
        if (o->alias >= 0 || !bufs[i]) continue;
        size_t nb = (size_t)o->nelems * ff_dtype_size(o->dtype);
        res->after[i] = malloc(nb ? nb : 1);
        if (!res->after[i]) abort();
        ff_status ds = be->vt->download(be->ctx, bufs[i], 0, res->after[i], nb);
        if (ds && !st) {
            st = ds;
            snprintf(res->error, sizeof res->error, "download failed: %s", ff_last_error());
        }
    }
    for (int i = 0; i < c->nops; i++)
        if (c->o[i].alias < 0 && bufs[i]) be->vt->free(be->ctx, bufs[i]);
    res->status = st;
    return st;
}

void cf_exec_result_free(cf_exec_result *res)
{
    for (int i = 0; i < CF_MAX_OPERANDS; i++) free(res->after[i]);
    memset(res, 0, sizeof *res);
}
