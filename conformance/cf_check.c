/* Checks one vtable call: status, guards (sentinels and untouched inputs) on both
 * backends, the backend under test against the reference, and both against the
 * closed-form expectation when the case has one (so the reference is checked too). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cf.h"


static cf_result fail(cf_report *rep, const cf_ctx *ctx, const cf_case *cs, const cf_call *c, const char *what)
{
    char desc[700], rerun[300];
    cf_describe(desc, sizeof desc, ctx, cs, c);
    cf_rerun_str(rerun, sizeof rerun, ctx, cs);
    snprintf(rep->msg, sizeof rep->msg, "%s | %s | rerun: %s", what, desc, rerun);
    return CF_FAIL;
}

/* Every byte of every buffer outside the elements the call may write must be
 * unchanged. Returns false and describes the first damage in why. */
static bool check_guards(const cf_call *c, const cf_exec_result *res, const char *who, char *why, size_t n)
{
    for (int i = 0; i < c->nops; i++) {
        const cf_operand *o = &c->o[i];
        if (o->alias >= 0) continue;
        size_t sz = ff_dtype_size(o->dtype);
        unsigned char *cover = NULL; /* elements some output view of this buffer writes */
        for (int j = 0; j < c->nops; j++) {
            const cf_operand *w = &c->o[j];
            if (!w->output || (j != i && w->alias != i)) continue;
            unsigned char *m = cf_operand_coverage(w);
            if (!cover) cover = m;
            else {
                for (int64_t e = 0; e < o->nelems; e++) cover[e] |= m[e];
                free(m);
            }
        }
        for (int64_t e = 0; e < o->nelems; e++) {
            if (cover && cover[e]) continue;
            if (memcmp(res->after[i] + (size_t)e * sz, o->init + (size_t)e * sz, sz) != 0) {
                const char *where;
                if (!cover) where = "input modified";
                else if (e < o->offset) where = "sentinel before the view overwritten";
                else {
                    int64_t last = o->offset;
                    for (int d = 0; d < o->ndim; d++) last += (o->shape[d] - 1) * o->strides[d];
                    where = e > last ? "sentinel after the view overwritten (out-of-bounds write)"
                                     : "gap inside the strided view overwritten";
                }
                snprintf(why, n, "%s: %s: %s at buffer element %" PRId64 " (view offset %" PRId64 ")", who,
                         o->name, where, e, o->offset);
                free(cover);
                return false;
            }
        }
        free(cover);
    }
    return true;
}

static const unsigned char *dst_buffer(const cf_call *c, const cf_exec_result *res)
{
    return c->o[0].alias >= 0 ? res->after[c->o[0].alias] : res->after[0];
}

static bool values_ok(const cf_call *c, const void *got, const void *want, const cf_check_opts *opts,
                      bool zero_either, const char *what, char *why, size_t n)
{
    const cf_operand *d = &c->o[0];
    int64_t cnt = cf_numel(d->ndim, d->shape);
    cf_tol tol = cf_tolerance(d->dtype, opts->cls, opts->k);
    tol.zero_sign = opts->zero_sign;
    tol.zero_either = zero_either;
    cf_diff df;
    if (cf_compare(got, want, d->dtype, cnt, tol, opts->cls == CF_TOL_EXACT, &df)) return true;
    char idx[128];
    cf_index_str(idx, sizeof idx, d->ndim, d->shape, df.first);
    snprintf(why, n,
             "%s: %" PRId64 " of %" PRId64 " elements differ (%s tolerance rtol=%.3g atol=%.3g) max_abs=%.6g "
             "max_rel=%.6g first at %s: got %.17g want %.17g",
             what, df.n_bad, cnt, cf_tol_class_name(opts->cls), tol.rtol, tol.atol, df.max_abs, df.max_rel, idx,
             df.got, df.want);
    return false;
}

cf_result cf_check_call(cf_ctx *ctx, const cf_case *cs, const cf_call *c, const cf_check_opts *opts, cf_report *rep)
{
    cf_exec_result rt, rr;
    char why[900];
    cf_exec(ctx->t, c, &rt);
    const bool same = ctx->t == ctx->r;
    if (same) rr = rt;
    else cf_exec(ctx->r, c, &rr);
    cf_result out = CF_PASS;

    if (rt.contract[0] || (!same && rr.contract[0])) {
        snprintf(why, sizeof why, "%s broke the contract: %s", rt.contract[0] ? "backend" : "reference",
                 rt.contract[0] ? rt.contract : rr.contract);
        out = fail(rep, ctx, cs, c, why);
        goto done;
    }
    if (opts->want_status != FF_OK) {
        if (rt.status != opts->want_status) {
            snprintf(why, sizeof why, "expected status %s, backend returned %s%s%s", ff_status_name(opts->want_status),
                     ff_status_name(rt.status), rt.status ? ": " : "", rt.error);
            out = fail(rep, ctx, cs, c, why);
        } else if (rr.status != opts->want_status) {
            snprintf(why, sizeof why, "reference: expected status %s, got %s", ff_status_name(opts->want_status),
                     ff_status_name(rr.status));
            out = fail(rep, ctx, cs, c, why);
        } else if (!check_guards(c, &rt, "backend", why, sizeof why) || !check_guards(c, &rr, "reference", why, sizeof why)) {
            out = fail(rep, ctx, cs, c, why);
        }
        goto done;
    }
    if (rt.status) {
        snprintf(why, sizeof why, "backend returned %s: %s", ff_status_name(rt.status), rt.error);
        out = fail(rep, ctx, cs, c, why);
        goto done;
    }
    if (rr.status) {
        snprintf(why, sizeof why, "reference returned %s: %s", ff_status_name(rr.status), rr.error);
        out = fail(rep, ctx, cs, c, why);
        goto done;
    }
    if (!check_guards(c, &rt, "backend", why, sizeof why) || (!same && !check_guards(c, &rr, "reference", why, sizeof why))) {
        out = fail(rep, ctx, cs, c, why);
        goto done;
    }
    void *gt = cf_operand_gather(&c->o[0], dst_buffer(c, &rt));
    void *gr = same ? NULL : cf_operand_gather(&c->o[0], dst_buffer(c, &rr));
    void *ex = opts->expect ? opts->expect(c, opts->expect_user) : NULL;
    const bool older = cf_step_zero_either(ctx, cs); /* the reference keeps today's rules */
    if (ex && !values_ok(c, gt, ex, opts, older, "backend vs closed form", why, sizeof why))
        out = fail(rep, ctx, cs, c, why);
    else if (gr && !values_ok(c, gt, gr, opts, older, "backend vs reference", why, sizeof why))
        out = fail(rep, ctx, cs, c, why);
    else if (gr && ex && !values_ok(c, gr, ex, opts, false, "REFERENCE vs closed form", why, sizeof why))
        out = fail(rep, ctx, cs, c, why);
    free(gt);
    free(gr);
    free(ex);
done:
    cf_exec_result_free(&rt);
    if (!same) cf_exec_result_free(&rr);
    return out;
}
