/* Family "layer_norm": ff_layer_norm, y and the gradients of x, weight and bias, three
 * ways: on the backend under test as it runs (its layer_norm entry, or the composition
 * when it has none), on the same backend with the composition forced (the reference the
 * entry is judged by: f64 mean, sub, square, mean, rsqrt, mul), and on the cpu reference
 * (its entry, in double). Scenarios cross D = 1, 7, 384, 1000, one row to many, one and
 * two normalized dims, with and without weight and bias, a row holding 1e30 (its square
 * overflows f32) and constant rows (variance 0); x contiguous, and transposed for f32. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cf_optable.h"

typedef enum { LN_PLAIN, LN_HUGE, LN_CONST } ln_data;

typedef struct ln_scen {
    const char *name;
    int nd, nnorm;
    int64_t shape[3];
    bool affine;
    ln_data data;
} ln_scen;

static const ln_scen scens[] = {
    {"d1_r5", 2, 1, {5, 1}, true, LN_PLAIN},
    {"d7_r1", 2, 1, {1, 7}, true, LN_PLAIN},
    {"d7_r3x4_plain", 3, 1, {3, 4, 7}, false, LN_PLAIN},
    {"d384_r2x10", 3, 1, {2, 10, 384}, true, LN_PLAIN},
    {"d384_r40_plain", 2, 1, {40, 384}, false, LN_PLAIN},
    {"d1000_r6", 2, 1, {6, 1000}, true, LN_PLAIN},
    {"nnorm2_3x5x6", 3, 2, {3, 5, 6}, true, LN_PLAIN},
    {"nnorm2_4x8x48_plain", 3, 2, {4, 8, 48}, false, LN_PLAIN},
    {"huge_1e30_d3", 2, 1, {4, 3}, true, LN_HUGE},
    {"huge_1e30_d384", 2, 1, {3, 384}, false, LN_HUGE},
    {"const_rows_d7", 2, 1, {5, 7}, true, LN_CONST},
    {"const_rows_d384", 2, 1, {3, 384}, false, LN_CONST},
};
#define NSCEN ((int)(sizeof scens / sizeof scens[0]))

static int64_t numel_of(const ln_scen *s) { return cf_numel(s->nd, s->shape); }
static int64_t d_of(const ln_scen *s) { return cf_numel(s->nnorm, s->shape + s->nd - s->nnorm); }

/* Host values: 0 x, 1 weight, 2 bias, 3 the loss's weights (x's shape). */
static void *values(const ln_scen *s, int which, ff_dtype dt, cf_rng *rng)
{
    int64_t n = which == 1 || which == 2 ? d_of(s) : numel_of(s), d = d_of(s);
    void *p = calloc((size_t)(n ? n : 1), ff_dtype_size(dt));
    if (!p) abort();
    cf_fill_values(rng, p, dt, n, CF_DOM_SIGNED);
    if (which != 0) return p;
    for (int64_t i = 0; i < n; i++) {
        if (s->data == LN_HUGE && i % d == 0 && (i / d) % 2 == 0) cf_set_f(p, dt, i, 1e30);
        if (s->data == LN_CONST && (i / d) % 2 == 1) cf_set_f(p, dt, i, 1.5);
    }
    return p;
}

/* y = layer_norm(x, w, b) on be, and the gradients of sum(y * c). */
static void run_on(ff_backend *be, const ln_scen *s, ff_dtype dt, cf_variant var, void *const *vals, cf_entry_run *r)
{
    memset(r, 0, sizeof *r);
    const int64_t *nshape = s->shape + s->nd - s->nnorm;
    ff_tensor *base = NULL, *x = NULL, *w = NULL, *b = NULL, *c = NULL, *y = NULL, *yc = NULL, *loss = NULL;
    ff_tensor *tmp = cf_make_input(be, vals[0], s->nd, s->shape, dt, var, &base);
    ff_tensor_release(tmp);
    if (!base || ff_set_requires_grad(base, true) || !(x = cf_view_of(base, var))) r->st = ff_last_status();
    if (!r->st && s->affine) {
        w = ff_from_data_on(be, vals[1], s->nnorm, nshape, dt);
        b = ff_from_data_on(be, vals[2], s->nnorm, nshape, dt);
        if (!w || !b || ff_set_requires_grad(w, true) || ff_set_requires_grad(b, true)) r->st = ff_last_status();
    }
    if (!r->st && !(c = ff_from_data_on(be, vals[3], s->nd, s->shape, dt))) r->st = ff_last_status();
    if (!r->st && (y = ff_layer_norm(x, s->nnorm, w, b, 1e-5)) && (yc = ff_mul(y, c)))
        loss = ff_sum(yc, 0, NULL, false);
    ff_tensor *in[3] = {base, w, b}, *g[3] = {NULL, NULL, NULL};
    int nin = s->affine ? 3 : 1;
    if (loss && !ff_autograd_grad(loss, NULL, nin, in, g, NULL)) {
        r->out[0] = ff_detach(y);
        for (int i = 0; i < 3; i++) r->out[i + 1] = g[i];
    } else {
        for (int i = 0; i < 3; i++) ff_tensor_release(g[i]);
    }
    if (!r->out[0] || !r->out[1] || (s->affine && (!r->out[2] || !r->out[3]))) {
        r->st = ff_last_status() ? ff_last_status() : FF_ERR_INVALID;
        snprintf(r->err, sizeof r->err, "%s", ff_last_error());
    }
    ff_tensor_release(y), ff_tensor_release(yc), ff_tensor_release(loss), ff_tensor_release(c);
    ff_tensor_release(x), ff_tensor_release(base), ff_tensor_release(w), ff_tensor_release(b);
}

static cf_result fail(cf_report *rep, const cf_ctx *ctx, const cf_case *cs, const char *why)
{
    return cf_fail(rep, ctx, cs, why, "op=layer_norm.%s dtype=%s variant=%s", scens[cs->p[0]].name,
                   ff_dtype_name(cs->dtype), cf_variant_name((cf_variant)cs->p[1]));
}

static cf_result run(cf_ctx *ctx, const cf_case *cs, cf_report *rep)
{
    const ln_scen *s = &scens[cs->p[0]];
    cf_variant var = (cf_variant)cs->p[1];
    ff_dtype dt = cs->dtype;
    cf_rng rng;
    cf_rng_init(&rng, cf_case_seed(ctx, cs));
    void *vals[4];
    for (int i = 0; i < 4; i++) vals[i] = values(s, i, dt, &rng);
    cf_entry_run runs[3]; /* the backend as it runs, its composition, the reference */
    run_on(ctx->t, s, dt, var, vals, &runs[0]);
    ff_ops_force_compose(FF_KIND_LAYER_NORM, true);
    run_on(ctx->t, s, dt, var, vals, &runs[1]);
    ff_ops_force_compose(FF_KIND_LAYER_NORM, false);
    if (ctx->t != ctx->r) run_on(ctx->r, s, dt, var, vals, &runs[2]);
    else memset(&runs[2], 0, sizeof runs[2]);
    static const char *const names[4] = {"y", "grad x", "grad weight", "grad bias"};
    int64_t d = d_of(s), rows = d ? numel_of(s) / d : 0;
    int64_t ks[4] = {d, 2 * d, rows, rows};
    cf_result res = CF_PASS;
    char why[1200];
    if (!cf_entry_compare(runs, ctx->t != ctx->r, s->affine ? 4 : 2, names, ks, why, sizeof why))
        res = fail(rep, ctx, cs, why);
    for (int r = 0; r < 3; r++) cf_entry_run_free(&runs[r]);
    for (int i = 0; i < 4; i++) free(vals[i]);
    return res;
}

void cf_gen_layer_norm(void)
{
    static const ff_dtype dts[] = {FF_F32, FF_F64, FF_F16, FF_BF16};
    static const cf_variant variants[] = {CF_V_CONTIG, CF_V_TRANSPOSED};
    for (int si = 0; si < NSCEN; si++)
        for (int di = 0; di < 4; di++)
            for (int vi = 0; vi < (di == 0 ? 2 : 1); vi++) {
                if (scens[si].data == LN_HUGE && dts[di] == FF_F16) continue; /* 1e30 is inf in f16 */
                cf_case c = {.family = "layer_norm", .dtype = dts[di], .level = CF_LEVEL_OP, .run = run, .kind = -1,
                             .p = {si, (int)variants[vi]}};
                snprintf(c.op, sizeof c.op, "%s", scens[si].name);
                snprintf(c.id, sizeof c.id, "layer_norm.%s.%s.%s", scens[si].name, ff_dtype_name(dts[di]),
                         cf_variant_name(variants[vi]));
                cf_register(&c);
            }
}
