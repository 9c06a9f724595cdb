/* Runs one vtable call on a backend inside guarded buffers: every operand gets its
 * own backend buffer holding exactly its initial contents (inputs: values at every
 * position, gaps included; outputs: sentinel bytes around and between the view's
 * elements); after the call every buffer is downloaded whole, so the checker can
 * prove that nothing outside the written elements changed. */
#include <fenv.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#endif

#include "cf.h"

/* ---- the floating-point environment ------------------------------------------------ */
/* A backend must not change it (backend_abi.h): flush-to-zero or denormals-are-zero
 * turned on at init would silently change every later result, the suite's own
 * comparisons included. Compared: the rounding mode and, on x86, MXCSR's control bits
 * (FTZ, DAZ, rounding, exception masks), not its sticky status flags. */
typedef struct fpenv_state {
    int round;
    unsigned csr;
} fpenv_state;

static fpenv_state baseline;
static fenv_t baseline_env;
static int have_baseline;

static fpenv_state fpenv_now(void)
{
    fpenv_state s = {fegetround(), 0};
#if defined(__x86_64__) || defined(__i386__)
    s.csr = _mm_getcsr() & ~0x3Fu; /* drop the exception flags */
#endif
    return s;
}

void cf_fpenv_capture(void)
{
    baseline = fpenv_now();
    fegetenv(&baseline_env);
    have_baseline = 1;
}

/* "" if the environment is the baseline; else says how it differs and restores it. */
static void fpenv_check(const char *when, char *msg, size_t n)
{
    if (!have_baseline) return;
    fpenv_state s = fpenv_now();
    if (s.round == baseline.round && s.csr == baseline.csr) return;
    snprintf(msg, n, "the floating-point environment changed %s (rounding %d -> %d, MXCSR control 0x%x -> 0x%x%s%s)",
             when, baseline.round, s.round, baseline.csr, s.csr, (s.csr & 0x8000u) ? ", flush-to-zero on" : "",
             (s.csr & 0x40u) ? ", denormals-are-zero on" : "");
    fesetenv(&baseline_env);
#if defined(__x86_64__) || defined(__i386__)
    _mm_setcsr(baseline.csr);
#endif
}

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
    /* before anything: a backend that changed the environment at load or in an earlier
     * call is caught here (and the environment restored for the suite's own work) */
    fpenv_check("before this call (at load, or by an earlier one)", res->contract, sizeof res->contract);
    ff_status (*stats)(void *, size_t *, size_t *, size_t *) = FF_VT_OPT(be, memory_stats);
    size_t in_use0 = 0, cached, peak;
    bool counted = stats && stats(be->ctx, &in_use0, &cached, &peak) == FF_OK;
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
        st = cf_call_detours(be, c) ? cf_exec_detour(be, c, v, call_entry) : call_entry(be, c, v);
        if (!res->contract[0]) fpenv_check("during the call", res->contract, sizeof res->contract);
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
    /* every buffer the suite allocated is freed again: a backend that now holds more
     * bytes in use than before leaks (a free that frees nothing, scratch never returned) */
    size_t in_use1 = 0;
    if (counted && !res->contract[0] && stats(be->ctx, &in_use1, &cached, &peak) == FF_OK && in_use1 > in_use0)
        snprintf(res->contract, sizeof res->contract,
                 "memory_stats: %zu bytes in use after the case freed all it allocated, %zu before (a leak)", in_use1,
                 in_use0);
    res->status = st;
    return st;
}

void cf_exec_result_free(cf_exec_result *res)
{
    for (int i = 0; i < CF_MAX_OPERANDS; i++) free(res->after[i]);
    memset(res, 0, sizeof *res);
}
