/* Family "softmax": the optional softmax / log_softmax entry, for every dtype the
 * reference accepts x axis x layouts (a backend without the entry skips these), and
 * the core's composition of it (softmax.composed.*: what a backend without the entry
 * gets, run on every backend). Closed form: max-shifted, in long double. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cf.h"
#include "cf_families.h"
#include "cf_scenario.h"

typedef struct sm_scen {
    const char *name;
    int ndim;
    int64_t shape[3];
    int axis;
    cf_layout_kind src, dst;
    bool inplace;
    cf_domain dom;
} sm_scen;

static const sm_scen scens[] = {
    {"scalar", 0, {0}, 0, CF_L_CONTIG, CF_L_CONTIG, false, CF_DOM_SIGNED},
    {"n1", 1, {1}, 0, CF_L_CONTIG, CF_L_OFFSET, false, CF_DOM_SIGNED},
    {"n257", 1, {257}, 0, CF_L_OFFSET, CF_L_CONTIG, false, CF_DOM_SIGNED},
    {"rows5x7", 2, {5, 7}, 1, CF_L_CONTIG, CF_L_CONTIG, false, CF_DOM_SIGNED},
    {"cols5x7", 2, {5, 7}, 0, CF_L_CONTIG, CF_L_CONTIG, false, CF_DOM_SIGNED},
    {"mid3x4x5", 3, {3, 4, 5}, 1, CF_L_TRANSPOSED, CF_L_STEPPED, false, CF_DOM_SIGNED},
    {"wide_values6x17", 2, {6, 17}, 1, CF_L_STEPPED, CF_L_TRANSPOSED, false, CF_DOM_WIDE},
    {"bcast4x6", 2, {4, 6}, 1, CF_L_BCAST0, CF_L_CONTIG, false, CF_DOM_SIGNED},
    {"inplace6x5", 2, {6, 5}, 1, CF_L_CONTIG, CF_L_CONTIG, true, CF_DOM_SIGNED},
    {"empty3x0", 2, {3, 0}, 1, CF_L_CONTIG, CF_L_CONTIG, false, CF_DOM_SIGNED},
    {"big_rows64x4096", 2, {64, 4096}, 1, CF_L_CONTIG, CF_L_CONTIG, false, CF_DOM_WIDE},
    {"huge_ties9x13", 2, {9, 13}, 1, CF_L_CONTIG, CF_L_CONTIG, false, CF_DOM_HUGE_TIES},
    {"huge_ties_strided9x13", 2, {9, 13}, 1, CF_L_TRANSPOSED, CF_L_STEPPED, false, CF_DOM_HUGE_TIES},
    /* NaN, +-inf, +-0, subnormals and extremes in the rows (NaN or +inf anywhere in a row
     * makes it all NaN; -inf alone gives 0 or -inf): the reference's max-scan branches */
    {"special_rows11x6", 2, {11, 6}, 1, CF_L_CONTIG, CF_L_CONTIG, false, CF_DOM_SPECIAL},
};
#define NSCEN ((int)(sizeof scens / sizeof scens[0]))

void *cf_softmax_expect(const cf_call *c, const void *user)
{
    (void)user;
    const cf_operand *d = &c->o[0], *s = c->o[0].alias >= 0 ? &c->o[c->o[0].alias] : &c->o[1];
    int64_t n = cf_numel(d->ndim, d->shape);
    void *in = cf_operand_values(s);
    void *out = calloc((size_t)(n ? n : 1), ff_dtype_size(d->dtype));
    if (!out) abort();
    int64_t len = d->ndim ? d->shape[c->axis] : 1, inner = 1;
    for (int k = c->axis + 1; k < d->ndim; k++) inner *= d->shape[k];
    int64_t outer = len && inner ? n / (len * inner) : 0;
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++) {
            long double m = -INFINITY, sum = 0;
            for (int64_t j = 0; j < len; j++) {
                double x = cf_get_f(in, s->dtype, (o * len + j) * inner + i);
                if (x > m) m = x;
            }
            for (int64_t j = 0; j < len; j++) sum += expl(cf_get_f(in, s->dtype, (o * len + j) * inner + i) - m);
            for (int64_t j = 0; j < len; j++) {
                int64_t e = (o * len + j) * inner + i;
                long double x = cf_get_f(in, s->dtype, e) - m;
                cf_set_f(out, d->dtype, e, (double)(c->op ? x - logl(sum) : expl(x) / sum));
            }
        }
    free(in);
    return out;
}

static cf_result run(cf_ctx *ctx, const cf_case *cs, cf_report *rep)
{
    const sm_scen *s = &scens[cs->p[1]];
    cf_rng rng;
    cf_rng_init(&rng, cf_case_seed(ctx, cs));
    cf_call c = {.kind = FF_KIND_SOFTMAX, .op = cs->p[0], .axis = s->axis, .nops = 2};
    cf_operand_init(&c.o[1], "src", cs->dtype, s->ndim, s->shape, s->src, false, &rng, s->dom);
    if (s->inplace) cf_operand_alias(&c.o[0], "dst", &c.o[1], 1);
    else cf_operand_init(&c.o[0], "dst", cs->dtype, s->ndim, s->shape, s->dst, true, &rng, CF_DOM_SIGNED);
    cf_check_opts o = {.cls = CF_TOL_TRANSCEND, .expect = cf_softmax_expect};
    cf_result r = cf_check_call(ctx, cs, &c, &o, rep);
    cf_call_free(&c);
    return r;
}

/* ---- the composition ------------------------------------------------------------------ */
/* Without the entry (or with one that declines the dtype and f32 both) the core composes
 * softmax from required entries: amax, sub, exp, sum, div (ops/softmax.c). These cases
 * run that composition on the backend under test whatever entries it has: a copy of its
 * vtable without softmax stands in for it during the call. A half result must be the
 * exact value rounded once (within half an ulp of it, plus the f32 computation's slack),
 * a zero with the exact value's sign: composed in the half dtype, every op of the chain
 * rounded (1-2 ulps off, and +0 for a log_softmax maximum whose exact value rounds to
 * -0). f32 and f64 get the entry's tolerance. */
typedef enum comp_data { COMP_DOMAIN, COMP_TINY_TAILS } comp_data;

typedef struct comp_scen {
    const char *name;
    int ndim;
    int64_t shape[3];
    int axis;
    bool transposed; /* a transposed view of a [shape[1], shape[0]] tensor */
    cf_domain dom;
    comp_data data;
} comp_scen;

static const comp_scen comp_scens[] = {
    {"rows6x9", 2, {6, 9}, 1, false, CF_DOM_SIGNED, COMP_DOMAIN},
    {"cols9x6_transposed", 2, {9, 6}, 0, true, CF_DOM_WIDE, COMP_DOMAIN},
    {"mid3x4x5", 3, {3, 4, 5}, 1, false, CF_DOM_SIGNED, COMP_DOMAIN},
    {"wide_rows16x33", 2, {16, 33}, 1, false, CF_DOM_WIDE, COMP_DOMAIN},
    {"huge_ties9x13", 2, {9, 13}, 1, false, CF_DOM_HUGE_TIES, COMP_DOMAIN},
    {"special_rows11x6", 2, {11, 6}, 1, false, CF_DOM_SPECIAL, COMP_DOMAIN},
    /* rows whose other terms are e^-20 .. e^-120 of the maximum: log_softmax's maximum is
     * a tiny negative, -0 once rounded to f16 (and to bf16 past e^-94); ties too */
    {"tiny_tails8x5", 2, {8, 5}, 1, false, CF_DOM_SIGNED, COMP_TINY_TAILS},
};
#define NCOMP ((int)(sizeof comp_scens / sizeof comp_scens[0]))

static bool is_half(ff_dtype t) { return t == FF_F16 || t == FF_BF16; }

/* The spacing of half dtype dt's values at |x| (its smallest subnormal below the normals). */
static double half_ulp(ff_dtype dt, double x)
{
    int e;
    frexp(fabs(x), &e); /* |x| in [2^(e-1), 2^e) */
    double u = ldexp(1.0, e - 1 - (dt == FF_F16 ? 10 : 7)), tiny = cf_dtype_true_min(dt);
    return x == 0 || u < tiny ? tiny : u;
}

/* got (a half value) is exact rounded once: equal to the rounded value, zeros with its
 * sign; or, when exact lies within the f32 computation's slack (2^-18 relative) of a
 * midpoint between two half values, the other one of the two. */
static bool half_rounded_once(ff_dtype dt, double got, double exact)
{
    unsigned char b[2];
    cf_set_f(b, dt, 0, exact);
    double want = cf_get_f(b, dt, 0);
    if (isnan(want) || isnan(got)) return isnan(want) && isnan(got);
    if (got == want) return signbit(got) == signbit(want) || got != 0;
    if (isinf(got) || isinf(want) || got == 0) return false;
    return fabs(got - exact) <= 0.5 * half_ulp(dt, exact) + 0x1p-18 * fabs(exact);
}

/* The case's logical input values (row-major, dtype dt). */
static void *comp_values(const comp_scen *s, ff_dtype dt, cf_rng *rng)
{
    int64_t n = cf_numel(s->ndim, s->shape);
    void *v = calloc((size_t)n, ff_dtype_size(dt));
    if (!v) abort();
    if (s->data == COMP_DOMAIN) {
        cf_fill_values(rng, v, dt, n, s->dom);
        return v;
    }
    static const double gaps[] = {0, 20, 30, 100, 120};
    int64_t len = s->shape[1];
    for (int64_t r = 0; r < s->shape[0]; r++) {
        double top = (double)cf_rng_int(rng, -16, 16) / 4; /* exact in every float dtype */
        for (int64_t j = 0; j < len; j++) {
            double gap = r % 4 == 3 && j == len - 1 ? 0 : gaps[(j + r) % 5]; /* every fourth row: a tie */
            cf_set_f(v, dt, r * len + j, top - gap);
        }
    }
    return v;
}

/* softmax (log: log_softmax) of the logical values along s->axis, in long double. The
 * log of the sum is log1p of the sum without one maximum's term (exactly 1): logl of a
 * sum that rounds to 1 is +0, where the exact log_softmax of the maximum is a tiny
 * negative (its sign survives rounding to -0). It is negative whenever the row has
 * another term (an x above -inf), even one that underflows long double: then the result
 * is -(ls - x), -0 for the maximum. */
static double *comp_exact(const comp_scen *s, ff_dtype dt, const void *in, bool log)
{
    int64_t n = cf_numel(s->ndim, s->shape), len = s->shape[s->axis], inner = 1;
    for (int k = s->axis + 1; k < s->ndim; k++) inner *= s->shape[k];
    double *out = calloc((size_t)n, sizeof *out);
    if (!out) abort();
    for (int64_t o = 0; o < n / (len * inner); o++)
        for (int64_t i = 0; i < inner; i++) {
            long double m = -INFINITY, rest = 0;
            for (int64_t j = 0; j < len; j++) {
                double x = cf_get_f(in, dt, (o * len + j) * inner + i);
                if (x > m) m = x;
            }
            bool skipped = false; /* one maximum's term (NaN rows skip none) */
            int64_t terms = 0;
            for (int64_t j = 0; j < len; j++) {
                double xj = cf_get_f(in, dt, (o * len + j) * inner + i);
                long double d = xj - m;
                terms += xj > -INFINITY;
                if (d == 0 && !skipped) skipped = true;
                else rest += expl(d);
            }
            long double sum = (skipped ? 1 : 0) + rest, ls = skipped ? log1pl(rest) : logl(sum);
            for (int64_t j = 0; j < len; j++) {
                int64_t e = (o * len + j) * inner + i;
                long double x = cf_get_f(in, dt, e) - m;
                out[e] = (double)(!log ? expl(x) / sum : terms > 1 ? -(ls - x) : x - ls);
            }
        }
    return out;
}

/* The tensor holding the logical values vals on be: built directly, or as the transpose
 * of their transpose. */
static ff_tensor *comp_input(ff_backend *be, const comp_scen *s, ff_dtype dt, const void *vals, ff_tensor **base)
{
    if (!s->transposed) return *base = ff_from_data_on(be, vals, s->ndim, s->shape, dt), ff_tensor_retain(*base);
    int64_t r = s->shape[0], c = s->shape[1], ps[2] = {c, r};
    size_t sz = ff_dtype_size(dt);
    unsigned char *phys = malloc((size_t)(r * c) * sz);
    if (!phys) abort();
    const unsigned char *src = vals;
    for (int64_t i = 0; i < r; i++)
        for (int64_t j = 0; j < c; j++) memcpy(phys + (size_t)(j * r + i) * sz, src + (size_t)(i * c + j) * sz, sz);
    *base = ff_from_data_on(be, phys, 2, ps, dt);
    free(phys);
    return *base ? ff_transpose(*base, 0, 1) : NULL;
}

/* ff_softmax / ff_log_softmax on be as if it had no softmax entry. */
static ff_tensor *composed(ff_backend *be, const ff_tensor *x, int axis, bool log)
{
    const ff_backend_vtable *orig = be->vt;
    ff_backend_vtable patched;
    memset(&patched, 0, sizeof patched);
    memcpy(&patched, orig, orig->struct_size < sizeof patched ? orig->struct_size : sizeof patched);
    patched.softmax = NULL; /* beyond a short struct_size it reads as NULL anyway */
    be->vt = &patched;
    ff_tensor *y = log ? ff_log_softmax(x, axis) : ff_softmax(x, axis);
    be->vt = orig;
    return y;
}

static cf_result comp_fail(cf_report *rep, const cf_ctx *ctx, const cf_case *cs, const char *why)
{
    char rerun[300];
    cf_rerun_str(rerun, sizeof rerun, ctx, cs);
    snprintf(rep->msg, sizeof rep->msg, "%s | op=%s dtype=%s seed=%" PRIu64 " | rerun: %s", why, cs->op,
             ff_dtype_name(cs->dtype), ctx->seed, rerun);
    return CF_FAIL;
}

static cf_result run_composed(cf_ctx *ctx, const cf_case *cs, cf_report *rep)
{
    const comp_scen *s = &comp_scens[cs->p[1]];
    bool log = cs->p[0] != 0;
    ff_dtype dt = cs->dtype;
    cf_rng rng;
    cf_rng_init(&rng, cf_case_seed(ctx, cs));
    void *vals = comp_values(s, dt, &rng), *got = NULL;
    double *exact = comp_exact(s, dt, vals, log);
    int64_t n = cf_numel(s->ndim, s->shape);
    ff_tensor *base = NULL, *x = comp_input(ctx->t, s, dt, vals, &base);
    ff_tensor *y = x ? composed(ctx->t, x, s->axis, log) : NULL;
    cf_result res = CF_PASS;
    char why[1200];
    if (!y && ff_last_status() == FF_ERR_UNSUPPORTED) {
        snprintf(rep->msg, sizeof rep->msg, "backend declines: %s", ff_last_error());
        rep->coverage_gap = true;
        res = CF_SKIP;
    } else if (!y) {
        snprintf(why, sizeof why, "the composition failed (%s): %s", ff_status_name(ff_last_status()), ff_last_error());
        res = comp_fail(rep, ctx, cs, why);
    } else if (ff_tensor_dtype(y) != dt) {
        snprintf(why, sizeof why, "the composition returned %s for %s input", ff_dtype_name(ff_tensor_dtype(y)),
                 ff_dtype_name(dt));
        res = comp_fail(rep, ctx, cs, why);
    } else {
        got = malloc((size_t)n * ff_dtype_size(dt));
        if (!got) abort();
        if (ff_tensor_to_host(y, got, (size_t)n * ff_dtype_size(dt))) {
            snprintf(why, sizeof why, "reading the result back failed: %s", ff_last_error());
            res = comp_fail(rep, ctx, cs, why);
        }
    }
    if (res == CF_PASS && is_half(dt)) {
        int64_t bad = 0, first = -1;
        for (int64_t i = 0; i < n; i++)
            if (!half_rounded_once(dt, cf_get_f(got, dt, i), exact[i]) && bad++ == 0) first = i;
        if (bad) {
            char idx[96];
            unsigned char b[2];
            cf_set_f(b, dt, 0, exact[first]);
            cf_index_str(idx, sizeof idx, s->ndim, s->shape, first);
            snprintf(why, sizeof why,
                     "composed %s on %s is not the exact value rounded once: %" PRId64 " of %" PRId64
                     " elements differ, first at %s: got %.17g, exact %.17g rounds to %.17g",
                     cs->op, ff_dtype_name(dt), bad, n, idx, cf_get_f(got, dt, first), exact[first],
                     cf_get_f(b, dt, 0));
            res = comp_fail(rep, ctx, cs, why);
        }
    } else if (res == CF_PASS) {
        void *want = malloc((size_t)n * ff_dtype_size(dt));
        if (!want) abort();
        for (int64_t i = 0; i < n; i++) cf_set_f(want, dt, i, exact[i]);
        cf_diff d;
        cf_tol tol = cf_tolerance(dt, CF_TOL_TRANSCEND, 1);
        if (!cf_compare(got, want, dt, n, tol, false, &d)) {
            char idx[96];
            cf_index_str(idx, sizeof idx, s->ndim, s->shape, d.first);
            snprintf(why, sizeof why,
                     "composed %s vs closed form: %" PRId64 " of %" PRId64 " elements differ (rtol=%.3g atol=%.3g) "
                     "first at %s: got %.17g want %.17g",
                     cs->op, d.n_bad, n, tol.rtol, tol.atol, idx, d.got, d.want);
            res = comp_fail(rep, ctx, cs, why);
        }
        free(want);
    }
    ff_tensor_release(y);
    ff_tensor_release(x);
    ff_tensor_release(base);
    free(got);
    free(exact);
    free(vals);
    return res;
}

static void gen_composed(void)
{
    static const ff_dtype dts[] = {FF_F32, FF_F64, FF_F16, FF_BF16};
    for (int lg = 0; lg < 2; lg++)
        for (int di = 0; di < (int)(sizeof dts / sizeof dts[0]); di++)
            for (int si = 0; si < NCOMP; si++) {
                cf_case c = {.family = "softmax", .dtype = dts[di], .level = CF_LEVEL_OP, .run = run_composed,
                             .kind = -1, .p = {lg, si}};
                snprintf(c.op, sizeof c.op, "%s", lg ? "log_softmax_composed" : "softmax_composed");
                snprintf(c.id, sizeof c.id, "softmax.composed.%s.%s.%s", lg ? "log_softmax" : "softmax",
                         ff_dtype_name(dts[di]), comp_scens[si].name);
                cf_register(&c);
            }
}

void cf_gen_softmax(void)
{
    gen_composed();
    if (!ff_backend_has_softmax(cf_reference())) return;
    for (int lg = 0; lg < 2; lg++)
        for (int di = 0; di < CF_NDTYPES; di++) {
            ff_dtype dt = cf_all_dtypes[di];
            if (!cf_ref_computes(FF_KIND_SOFTMAX, lg, dt)) continue;
            for (int si = 0; si < NSCEN; si++) {
                if (scens[si].shape[1] == 4096 && dt != FF_F32) continue;
                cf_case c = {.family = "softmax", .dtype = dt, .level = CF_LEVEL_VTABLE, .run = run,
                             .kind = FF_KIND_SOFTMAX, .opcode = lg, .p = {lg, si}};
                snprintf(c.op, sizeof c.op, "%s", lg ? "log_softmax" : "softmax");
                snprintf(c.id, sizeof c.id, "softmax.%s.%s.%s", c.op, ff_dtype_name(dt), scens[si].name);
                cf_register(&c);
            }
        }
}
