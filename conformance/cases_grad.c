/* Family "grad": for every differentiable op of the op table,
 *   - "fd":  autograd on the backend under test vs central finite differences in f64
 *            (ff_gradcheck: L = sum(f(x) * w), eps 1e-6, atol 1e-5, rtol 1e-3);
 *   - "ref": autograd gradients on the backend vs on the reference (f32 and f64,
 *            inputs as views), compared with the accumulation tolerance over the
 *            output length (each input gradient sums over the outputs);
 * and for the scans, "exact": the gradient vs its closed form on values that make a
 * formula's rounding show (see scan_cases below). */
#include <inttypes.h>
#include <math.h>
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
    return cf_fail(rep, ctx, cs, why, "op=%s dtype=%s variant=%s", cs->op, ff_dtype_name(cs->dtype),
                   cf_variant_name((cf_variant)cs->p[1]));
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

/* The status of the backward on the backend under test as the case's verdict so far: a
 * declined op (or gradient) is a skip and a coverage gap, another error a failure, FF_OK
 * goes on (CF_PASS). */
static cf_result backend_backward(cf_report *rep, cf_ctx *ctx, const cf_case *cs, ff_status st)
{
    if (st == FF_ERR_UNSUPPORTED) {
        snprintf(rep->msg, sizeof rep->msg, "backend declines: %s", ff_last_error());
        rep->coverage_gap = true;
        return CF_SKIP;
    }
    if (!st) return CF_PASS;
    char why[1200];
    snprintf(why, sizeof why, "backward on the backend failed (%s): %s", ff_status_name(st), ff_last_error());
    return fail(rep, ctx, cs, why);
}

static cf_result run_ref(cf_ctx *ctx, const cf_case *cs, cf_report *rep, const cf_opdef *def, void *const *vals)
{
    double *gt[CF_OP_MAX_IN] = {NULL}, *gr[CF_OP_MAX_IN] = {NULL};
    int64_t nt[CF_OP_MAX_IN] = {0}, nr[CF_OP_MAX_IN] = {0};
    cf_variant v = (cf_variant)cs->p[1];
    uint64_t wseed = cf_case_seed(ctx, cs) ^ 0x77;
    char why[1200];
    ff_status st = grads_on(ctx->t, def, cs->dtype, v, vals, wseed, gt, nt);
    cf_result res = backend_backward(rep, ctx, cs, st);
    if (res == CF_PASS && ctx->t != ctx->r) {
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

/* ---- scans against their closed form --------------------------------------------
 * "fd" and "ref" cannot see a gradient formula that rounds badly: random weights in
 * [-1, 1] keep every partial sum near 1, and the reference runs the same core formula
 * as the backend. These cases compare d/dx sum(scan(x) * w) with its closed form in long
 * double, on lines built so that a reverse cumulative sum taken as total - prefix loses
 * every digit of the small suffixes: positive weights spread over 12 decades (f32; 24 for
 * f64), a first weight above all of them, cumprod on values in [0.01, 0.1] (products
 * spanning 18 decades), zeros (one or two per line) and an inf weight (inf wherever it
 * meets a nonzero product; where it meets a zero it stays out of the sum, as PyTorch).
 * All terms are positive, so each gradient is accurate to the product tolerance over
 * the line whatever the order of summation. */
static const struct {
    const char *name;
    int op; /* 0 cumsum, 1 cumprod */
    int ndim;
    int64_t shape[3];
    int axis;
} scan_cases[] = {
    {"cumsum_dynamic_range_axis1", 0, 2, {6, 9}, 1},
    {"cumsum_dynamic_range_axis0", 0, 2, {9, 6}, 0},
    {"cumsum_dynamic_range_3d_axis1", 0, 3, {2, 9, 3}, 1},
    {"cumprod_small_zeros_axis1", 1, 2, {6, 9}, 1},
    {"cumprod_small_zeros_axis0", 1, 2, {9, 6}, 0},
    {"cumprod_small_zeros_3d_axis1", 1, 3, {2, 9, 3}, 1},
};

/* Line l of n elements: x (values) and w (weights), by the line's pattern l % 6. */
static void scan_line(cf_rng *r, ff_dtype dt, int op, int64_t l, int64_t n, double *x, double *w)
{
    double decades = dt == FF_F32 ? 6 : 12;
    for (int64_t j = 0; j < n; j++) {
        x[j] = op ? cf_rng_uniform(r, 0.01, 0.1) : cf_rng_uniform(r, -2, 2);
        w[j] = pow(10.0, cf_rng_uniform(r, -decades, decades));
    }
    int64_t a = cf_rng_int(r, 0, n - 1), b = cf_rng_int(r, 0, n - 1);
    switch (l % 6) {
    case 0: w[0] = pow(10.0, decades + 1); break; /* then only smaller ones: their sums cancel */
    case 1: x[a] = 0; break;
    case 2: x[a] = 0, x[b == a ? (a + 1) % n : b] = 0; break;
    case 3: w[a] = INFINITY; break;
    case 4: x[1] = 0, x[3] = 0, w[n - 1] = INFINITY; break; /* inf past the second zero: out */
    default: break;
    }
}

/* sum_{j >= k} w[j] d scan(x)[j] / d x[k] along one line, in long double; a term whose
 * product holds a zero is left out (it is 0, and an inf weight there is masked out). */
static double scan_grad_closed(int op, int64_t n, const double *x, const double *w, int64_t k)
{
    long double s = 0;
    for (int64_t j = k; j < n; j++) {
        long double p = 1;
        for (int64_t i = 0; op && i <= j; i++)
            if (i != k) p *= x[i];
        if (p != 0) s += (long double)w[j] * p;
    }
    return (double)s;
}

static cf_result run_scan(cf_ctx *ctx, const cf_case *cs, cf_report *rep)
{
    const int ci = cs->p[0];
    const int op = scan_cases[ci].op, nd = scan_cases[ci].ndim, axis = scan_cases[ci].axis;
    const int64_t *shape = scan_cases[ci].shape;
    const ff_dtype dt = cs->dtype;
    int64_t n = shape[axis], total = cf_numel(nd, shape), inner = 1;
    for (int d = axis + 1; d < nd; d++) inner *= shape[d];
    double *x = calloc((size_t)total, sizeof *x), *w = calloc((size_t)total, sizeof *w);
    double *want = calloc((size_t)total, sizeof *want), *got = calloc((size_t)total, sizeof *got);
    double *lx = calloc((size_t)n, sizeof *lx), *lw = calloc((size_t)n, sizeof *lw);
    void *xv = calloc((size_t)total, ff_dtype_size(dt));
    if (!x || !w || !want || !got || !lx || !lw || !xv) abort();
    cf_rng rng;
    cf_rng_init(&rng, cf_case_seed(ctx, cs));
    for (int64_t l = 0; l < total / n; l++) { /* line l: outer index l / inner, inner index l % inner */
        int64_t at = (l / inner) * n * inner + l % inner;
        scan_line(&rng, dt, op, l, n, lx, lw);
        for (int64_t j = 0; j < n; j++) {
            cf_set_f(xv, dt, at + j * inner, lx[j]);
            lx[j] = cf_get_f(xv, dt, at + j * inner); /* the closed form sees the rounded values */
            x[at + j * inner] = lx[j];
            w[at + j * inner] = lw[j];
        }
        for (int64_t k = 0; k < n; k++) want[at + k * inner] = scan_grad_closed(op, n, lx, lw, k);
    }
    ff_tensor *base = NULL, *in = cf_make_input(ctx->t, xv, nd, shape, dt, (cf_variant)cs->p[1], &base);
    ff_tensor *w64 = in ? ff_from_data_on(ctx->t, w, nd, shape, FF_F64) : NULL, *wt = NULL, *y = NULL, *p = NULL;
    ff_tensor *l = NULL, *g = NULL, *g64 = NULL;
    /* the gradient is taken with respect to the view, so it comes back in logical order */
    ff_status st = w64 ? ff_set_requires_grad(base, true) : ff_last_status();
    if (!st) {
        ff_tensor *view = cf_view_of(base, (cf_variant)cs->p[1]);
        ff_tensor_release(in);
        in = view;
        wt = in ? ff_astype(w64, dt) : NULL;
        y = wt ? (op ? ff_cumprod(in, axis) : ff_cumsum(in, axis)) : NULL;
        p = y ? ff_mul(y, wt) : NULL;
        l = p ? ff_sum(p, 0, NULL, false) : NULL;
        st = l ? ff_autograd_grad(l, NULL, 1, &in, &g, NULL) : ff_last_status();
        g64 = !st && g ? ff_astype(g, FF_F64) : NULL;
        if (!st) st = g64 ? ff_tensor_to_host(g64, got, sizeof(double) * (size_t)total) : ff_last_status();
    }
    cf_result res = backend_backward(rep, ctx, cs, st);
    if (res == CF_PASS) {
        char why[1200];
        cf_tol tol = cf_tolerance(dt, CF_TOL_PROD, 2 * n); /* each partial sum and product: one rounding per term */
        cf_diff d;
        if (!cf_compare(got, want, FF_F64, total, tol, false, &d)) {
            char idx[64];
            cf_index_str(idx, sizeof idx, nd, shape, d.first);
            snprintf(why, sizeof why,
                     "gradient vs closed form: %" PRId64 " of %" PRId64 " differ (rtol=%.3g atol=%.3g) max_abs=%.6g "
                     "max_rel=%.6g first at %s: got %.17g want %.17g (x there %.9g, weight %.9g)",
                     d.n_bad, total, tol.rtol, tol.atol, d.max_abs, d.max_rel, idx, d.got, d.want, x[d.first],
                     w[d.first]);
            res = fail(rep, ctx, cs, why);
        }
    }
    ff_tensor *all[] = {base, in, w64, wt, y, p, l, g, g64};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) ff_tensor_release(all[i]);
    free(x), free(w), free(want), free(got), free(lx), free(lw), free(xv);
    return res;
}

void cf_gen_grad(void)
{
    static const ff_dtype scan_dts[] = {FF_F32, FF_F64};
    static const cf_variant scan_vs[] = {CF_V_CONTIG, CF_V_TRANSPOSED, CF_V_STEPPED};
    for (int k = 0; k < (int)(sizeof scan_cases / sizeof scan_cases[0]); k++)
        for (int di = 0; di < 2; di++)
            for (int vi = 0; vi < 3; vi++) {
                cf_case c = {.family = "grad", .dtype = scan_dts[di], .level = CF_LEVEL_GRAD, .run = run_scan,
                             .kind = -1, .p = {k, scan_vs[vi], 2}};
                snprintf(c.op, sizeof c.op, "%s", scan_cases[k].name);
                snprintf(c.id, sizeof c.id, "grad.%s.exact.%s.%s", scan_cases[k].name, ff_dtype_name(scan_dts[di]),
                         cf_variant_name(scan_vs[vi]));
                cf_register(&c);
            }
    for (int k = 0; k < cf_noptable; k++) {
        const cf_opdef *def = &cf_optable[k];
        if (!def->grad) continue;
        /* fd in f64 (contiguous and transposed inputs); ref in f32 and f64 (views) */
        static const struct { int mode; ff_dtype dt; cf_variant v; } plan[] = {
            {0, FF_F64, CF_V_CONTIG}, {0, FF_F64, CF_V_TRANSPOSED}, {1, FF_F32, CF_V_CONTIG},
            {1, FF_F32, CF_V_STEPPED}, {1, FF_F64, CF_V_TRANSPOSED}, {1, FF_F32, CF_V_OFFSET}};
        for (int p = 0; p < (int)(sizeof plan / sizeof plan[0]); p++) {
            /* small integers are there to tie (max pooling): at a tie the derivative jumps,
             * so finite differences cannot check which element the rule picks; ref does */
            if (plan[p].mode == 0 && def->dom[0] == CF_DOM_SMALLINT) continue;
            cf_case c = {.family = "grad", .dtype = plan[p].dt, .level = CF_LEVEL_GRAD, .run = run, .kind = -1,
                         .p = {k, plan[p].v, plan[p].mode}};
            snprintf(c.op, sizeof c.op, "%s", def->name);
            snprintf(c.id, sizeof c.id, "grad.%s.%s.%s.%s", def->name, plan[p].mode ? "ref" : "fd",
                     ff_dtype_name(plan[p].dt), cf_variant_name(plan[p].v));
            cf_register(&c);
        }
    }
}
