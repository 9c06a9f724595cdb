/* Family "grad": for every differentiable op of the op table,
 *   - "fd":  autograd on the backend under test vs central finite differences in f64
 *            (ff_gradcheck: L = sum(f(x) * w), eps 1e-6, atol 1e-5, rtol 1e-3);
 *   - "ref": autograd gradients on the backend vs on the reference (f32 and f64,
 *            inputs as views), compared with the accumulation tolerance over the
 *            output length (each input gradient sums over the outputs). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cf_optable.h"

static ff_tensor *adapter(int n, ff_tensor *const *in, void *user)
{
    (void)n;
    const cf_opdef *def = user;
    return def->call(in);
}

static cf_result fail(cf_report *rep, const cf_ctx *ctx, const cf_case *cs, const char *why)
{
    char rerun[300];
    cf_rerun_str(rerun, sizeof rerun, ctx, cs);
    snprintf(rep->msg, sizeof rep->msg, "%s | op=%s dtype=%s variant=%s seed=%" PRIu64 " | rerun: %s", why, cs->op,
             ff_dtype_name(cs->dtype), cf_variant_name((cf_variant)cs->p[1]), ctx->seed, rerun);
    return CF_FAIL;
}

static cf_result run_fd(cf_ctx *ctx, const cf_case *cs, cf_report *rep, const cf_opdef *def, void *const *vals)
{
    ff_tensor *in[CF_OP_MAX_IN] = {NULL}, *base[CF_OP_MAX_IN] = {NULL};
    cf_result res = CF_PASS;
    char why[1200];
    for (int i = 0; i < def->nin; i++) {
        in[i] = cf_make_input(ctx->t, vals[i], def->ndim[i], def->shape[i], cf_op_input_dtype(def, i, cs->dtype),
                              (cf_variant)cs->p[1], &base[i]);
        if (!in[i]) {
            snprintf(why, sizeof why, "building input %d: %s", i, ff_last_error());
            res = fail(rep, ctx, cs, why);
            goto done;
        }
    }
    ff_gradcheck_opts o = {.eps = 1e-6, .atol = 1e-5, .rtol = 1e-3};
    ff_status st = ff_gradcheck(adapter, (void *)def, def->nin, in, &o);
    if (st == FF_ERR_UNSUPPORTED) { /* an op (or its gradient) the backend declines */
        snprintf(rep->msg, sizeof rep->msg, "backend declines: %s", ff_last_error());
        rep->coverage_gap = true;
        res = CF_SKIP;
    } else if (st) {
        snprintf(why, sizeof why, "gradcheck vs finite differences (%s): %s max_abs=%.6g", ff_status_name(st),
                 ff_last_error(), o.max_abs_err);
        res = fail(rep, ctx, cs, why);
    }
done:
    for (int i = 0; i < def->nin; i++) {
        ff_tensor_release(in[i]);
        ff_tensor_release(base[i]);
    }
    return res;
}

/* Gradients of L = sum(f(x) * w) w.r.t. the float inputs' leaves, as host arrays. */
static ff_status grads_on(ff_backend *be, const cf_opdef *def, ff_dtype dt, cf_variant v, void *const *vals,
                          uint64_t wseed, double **out, int64_t *nout)
{
    ff_tensor *in[CF_OP_MAX_IN] = {NULL}, *base[CF_OP_MAX_IN] = {NULL}, *leaves[CF_OP_MAX_IN] = {NULL};
    ff_tensor *grads[CF_OP_MAX_IN] = {NULL}, *y = NULL, *w = NULL, *p = NULL, *l = NULL;
    int nl = 0;
    ff_status st = FF_OK;
    for (int i = 0; i < def->nin && !st; i++) {
        ff_dtype it = cf_op_input_dtype(def, i, dt);
        in[i] = cf_make_input(be, vals[i], def->ndim[i], def->shape[i], it, v, &base[i]);
        if (!in[i]) {
            st = ff_last_status();
            break;
        }
        if (!ff_dtype_is_float(it)) continue;
        /* the leaf must require grad before the view is taken, so that the view records */
        ff_tensor_release(in[i]);
        in[i] = NULL;
        if ((st = ff_set_requires_grad(base[i], true))) break;
        if (!(in[i] = cf_view_of(base[i], v))) st = ff_last_status();
        nout[nl] = ff_tensor_numel(base[i]);
        leaves[nl++] = base[i];
    }
    if (!st) {
        y = def->call(in);
        if (!y) st = ff_last_status() ? ff_last_status() : FF_ERR_INVALID;
    }
    if (!st) {
        int64_t ny = ff_tensor_numel(y);
        double *wh = calloc((size_t)(ny ? ny : 1), sizeof *wh);
        if (!wh) abort();
        cf_rng r;
        cf_rng_init(&r, wseed);
        for (int64_t j = 0; j < ny; j++) wh[j] = cf_rng_uniform(&r, -1, 1);
        ff_tensor *w64 = ff_from_data_on(be, wh, ff_tensor_ndim(y), ff_tensor_shape(y), FF_F64);
        free(wh);
        w = w64 ? ff_astype(w64, ff_tensor_dtype(y)) : NULL;
        ff_tensor_release(w64);
        p = w ? ff_mul(y, w) : NULL;
        l = p ? ff_sum(p, 0, NULL, false) : NULL;
        st = l ? ff_autograd_grad(l, NULL, nl, leaves, grads, NULL) : ff_last_status();
    }
    for (int j = 0; j < nl && !st; j++) {
        out[j] = calloc((size_t)(nout[j] ? nout[j] : 1), sizeof(double));
        if (!out[j]) abort();
        if (!grads[j]) continue; /* unreachable: zeros */
        ff_tensor *g = ff_astype(grads[j], FF_F64);
        st = g ? ff_tensor_to_host(g, out[j], sizeof(double) * (size_t)nout[j]) : ff_last_status();
        ff_tensor_release(g);
    }
    for (int i = 0; i < CF_OP_MAX_IN; i++) {
        ff_tensor_release(in[i]);
        ff_tensor_release(base[i]);
        ff_tensor_release(grads[i]);
    }
    ff_tensor_release(y);
    ff_tensor_release(w);
    ff_tensor_release(p);
    ff_tensor_release(l);
    return st;
}

static cf_result run_ref(cf_ctx *ctx, const cf_case *cs, cf_report *rep, const cf_opdef *def, void *const *vals)
{
    double *gt[CF_OP_MAX_IN] = {NULL}, *gr[CF_OP_MAX_IN] = {NULL};
    int64_t nt[CF_OP_MAX_IN] = {0}, nr[CF_OP_MAX_IN] = {0};
    cf_variant v = (cf_variant)cs->p[1];
    uint64_t wseed = cf_case_seed(ctx, cs) ^ 0x77;
    cf_result res = CF_PASS;
    char why[1200];
    ff_status st = grads_on(ctx->t, def, cs->dtype, v, vals, wseed, gt, nt);
    if (st == FF_ERR_UNSUPPORTED) { /* an op (or its gradient) the backend declines */
        snprintf(rep->msg, sizeof rep->msg, "backend declines: %s", ff_last_error());
        rep->coverage_gap = true;
        res = CF_SKIP;
    } else if (st) {
        snprintf(why, sizeof why, "backward on the backend failed (%s): %s", ff_status_name(st), ff_last_error());
        res = fail(rep, ctx, cs, why);
    } else if (ctx->t != ctx->r) {
        st = grads_on(ctx->r, def, cs->dtype, v, vals, wseed, gr, nr);
        if (st) {
            snprintf(why, sizeof why, "backward on the reference failed (%s): %s", ff_status_name(st), ff_last_error());
            res = fail(rep, ctx, cs, why);
        }
        /* each input gradient sums over the outputs: accumulation tolerance */
        cf_tol tol = cf_tolerance(cs->dtype, CF_TOL_ACCUM, 64);
        for (int j = 0; j < CF_OP_MAX_IN && res == CF_PASS && gt[j]; j++) {
            cf_diff d;
            if (!cf_compare(gt[j], gr[j], FF_F64, nt[j], tol, false, &d)) {
                snprintf(why, sizeof why,
                         "gradient of float input %d: backend vs reference: %" PRId64 " of %" PRId64
                         " differ (rtol=%.3g atol=%.3g) max_abs=%.6g max_rel=%.6g first at flat %" PRId64
                         ": got %.17g want %.17g",
                         j, d.n_bad, nt[j], tol.rtol, tol.atol, d.max_abs, d.max_rel, d.first, d.got, d.want);
                res = fail(rep, ctx, cs, why);
            }
        }
    }
    for (int i = 0; i < CF_OP_MAX_IN; i++) {
        free(gt[i]);
        free(gr[i]);
    }
    return res;
}

static cf_result run(cf_ctx *ctx, const cf_case *cs, cf_report *rep)
{
    const cf_opdef *def = &cf_optable[cs->p[0]];
    cf_rng rng;
    cf_rng_init(&rng, cf_case_seed(ctx, cs));
    void *vals[CF_OP_MAX_IN] = {NULL};
    for (int i = 0; i < def->nin; i++) vals[i] = cf_op_input_values(def, i, cs->dtype, &rng);
    cf_result r = cs->p[2] == 0 ? run_fd(ctx, cs, rep, def, vals) : run_ref(ctx, cs, rep, def, vals);
    for (int i = 0; i < def->nin; i++) free(vals[i]);
    return r;
}

void cf_gen_grad(void)
{
    for (int k = 0; k < cf_noptable; k++) {
        const cf_opdef *def = &cf_optable[k];
        if (!def->grad) continue;
        /* fd in f64 (contiguous and transposed inputs); ref in f32 and f64 (views) */
        static const struct { int mode; ff_dtype dt; cf_variant v; } plan[] = {
            {0, FF_F64, CF_V_CONTIG}, {0, FF_F64, CF_V_TRANSPOSED}, {1, FF_F32, CF_V_CONTIG},
            {1, FF_F32, CF_V_STEPPED}, {1, FF_F64, CF_V_TRANSPOSED}, {1, FF_F32, CF_V_OFFSET}};
        for (int p = 0; p < (int)(sizeof plan / sizeof plan[0]); p++) {
            cf_case c = {.family = "grad", .dtype = plan[p].dt, .level = CF_LEVEL_GRAD, .run = run, .kind = -1,
                         .p = {k, plan[p].v, plan[p].mode}};
            snprintf(c.op, sizeof c.op, "%s", def->name);
            snprintf(c.id, sizeof c.id, "grad.%s.%s.%s.%s", def->name, plan[p].mode ? "ref" : "fd",
                     ff_dtype_name(plan[p].dt), cf_variant_name(plan[p].v));
            cf_register(&c);
        }
    }
}
