/* Family "attention": ff_scaled_dot_product_attention, values and the gradients of q, k
 * and v, three ways: on the backend under test as it runs (its attention entry, or the
 * composition when it has none), on the same backend with the composition forced (the
 * reference the entry is judged by: matmul, mask, safe softmax, matmul), and on the cpu
 * reference (its entry, in double). Scenarios cross causal and not, bool and additive
 * masks broadcast over batch or heads, fully masked rows, Tq != Tk, T off any tile
 * (1, 7, 33, 65, 130), head dims 32/64/80/128 and odd ones, k and v broadcast over heads,
 * batch-first 3-D inputs, and q, k, v as contiguous, transposed and stepped views.
 * The "_dropout" rows repeat some scenarios with dropout_p 0.25 and one seed: the entry
 * draws the composition's ff_dropout mask bit for bit (backend_abi.h's rule), so the same
 * three-way comparison holds; a backend whose entry does not honor dropout composes. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cf_optable.h"

typedef enum { M_NONE, M_BOOL, M_ADD } mask_kind;

typedef struct attn_scen {
    const char *name;
    int nd;                  /* 4: [B, H, T, D]; 3: [B, T, D] */
    int64_t b, h, tq, tk, d, dv;
    bool causal;
    mask_kind mask;
    int mask_nd;             /* 2: [Tq, Tk]; 4: [mb, mh, Tq, Tk] */
    int64_t mb, mh;          /* the mask's batch and head dims (1: broadcast) */
    bool empty_rows;         /* rows 1, 5, 9, ... of the mask hide every key */
    bool kv_heads_bcast;     /* k and v are [B, 1, Tk, D] */
} attn_scen;

static const attn_scen scens[] = {
    {"t1_d32", 4, 1, 2, 1, 1, 32, 32, false, M_NONE, 0, 0, 0, false, false},
    {"t7_d64_causal", 4, 2, 2, 7, 7, 64, 64, true, M_NONE, 0, 0, 0, false, false},
    {"t65_d80", 4, 1, 2, 65, 65, 80, 80, false, M_NONE, 0, 0, 0, false, false},
    {"t130_d128_causal", 4, 1, 1, 130, 130, 128, 128, true, M_NONE, 0, 0, 0, false, false},
    {"tq33_tk65_causal", 4, 1, 2, 33, 65, 32, 32, true, M_NONE, 0, 0, 0, false, false},
    {"tq65_tk7_causal", 4, 1, 2, 65, 7, 16, 16, true, M_NONE, 0, 0, 0, false, false},
    {"d5_dv3", 4, 2, 3, 7, 9, 5, 3, false, M_NONE, 0, 0, 0, false, false},
    {"bool_over_batch_empty_rows", 4, 2, 2, 9, 11, 16, 16, false, M_BOOL, 4, 1, 2, true, false},
    {"bool_over_heads", 4, 2, 3, 7, 65, 32, 32, false, M_BOOL, 4, 2, 1, false, false},
    {"add_2d_t65", 4, 1, 2, 65, 65, 32, 32, false, M_ADD, 2, 0, 0, false, false},
    {"add_empty_rows", 4, 2, 2, 9, 7, 8, 8, false, M_ADD, 4, 2, 2, true, false},
    {"kv_over_heads_causal", 4, 2, 4, 9, 9, 16, 16, true, M_NONE, 0, 0, 0, false, true},
    {"batch_first_3d", 3, 3, 1, 7, 9, 24, 24, false, M_BOOL, 2, 0, 0, false, false},
};
#define NSCEN ((int)(sizeof scens / sizeof scens[0]))

static const cf_variant variants[] = {CF_V_CONTIG, CF_V_TRANSPOSED, CF_V_STEPPED};

/* Shapes of q, k, v, the mask and o. */
static int shape_of(const attn_scen *s, int which, int64_t *sh)
{
    int64_t t = which == 0 ? s->tq : s->tk, x = which == 2 ? s->dv : s->d;
    if (which == 3) { /* mask */
        if (s->mask_nd == 2) return sh[0] = s->tq, sh[1] = s->tk, 2;
        return sh[0] = s->mb, sh[1] = s->mh, sh[2] = s->tq, sh[3] = s->tk, 4;
    }
    if (which == 4) t = s->tq, x = s->dv; /* o */
    if (s->nd == 3) return sh[0] = s->b, sh[1] = t, sh[2] = x, 3;
    int64_t h = s->kv_heads_bcast && (which == 1 || which == 2) ? 1 : s->h;
    return sh[0] = s->b, sh[1] = h, sh[2] = t, sh[3] = x, 4;
}

/* Host values: q, k, v and the weights of the loss in [-1, 1]; the mask as described. */
static void *values(const attn_scen *s, int which, ff_dtype dt, cf_rng *rng)
{
    int64_t sh[4];
    int nd = shape_of(s, which, sh);
    int64_t n = cf_numel(nd, sh);
    ff_dtype vt = which == 3 && s->mask == M_BOOL ? FF_BOOL : dt;
    void *p = calloc((size_t)(n ? n : 1), ff_dtype_size(vt));
    if (!p) abort();
    if (which != 3) {
        cf_fill_values(rng, p, dt, n, CF_DOM_UNIT);
        return p;
    }
    for (int64_t i = 0; i < n; i++) {
        int64_t row = i / s->tk;
        bool hidden = s->empty_rows && row % 4 == 1;
        if (s->mask == M_BOOL) cf_set_i(p, vt, i, !hidden && cf_rng_uniform(rng, 0, 1) < 0.7);
        else cf_set_f(p, vt, i, hidden || cf_rng_uniform(rng, 0, 1) < 0.1 ? -INFINITY : cf_rng_uniform(rng, -2, 2));
    }
    return p;
}

/* o = sdpa(q, k, v, mask) on be, and the gradients of sum(o * w) w.r.t. q, k, v (the
 * views the op saw). */
static void run_on(ff_backend *be, const attn_scen *s, ff_dtype dt, cf_variant var, double drop, uint64_t seed,
                   void *const *vals, cf_entry_run *r)
{
    ff_tensor *base[5] = {NULL}, *in[5] = {NULL}, *tmp = NULL, *ow = NULL, *loss = NULL;
    memset(r, 0, sizeof *r);
    for (int i = 0; i < 5 && !r->st; i++) {
        if (i == 3 && s->mask == M_NONE) continue;
        int64_t sh[4];
        int nd = shape_of(s, i, sh);
        ff_dtype t = i == 3 && s->mask == M_BOOL ? FF_BOOL : dt;
        tmp = cf_make_input(be, vals[i], nd, sh, t, i < 3 ? var : CF_V_CONTIG, &base[i]);
        ff_tensor_release(tmp);
        /* q, k, v: leaves first, then the view, so the gradient reaches the view */
        if (base[i] && i < 3 && ff_set_requires_grad(base[i], true)) r->st = ff_last_status();
        if (base[i] && !r->st && !(in[i] = cf_view_of(base[i], i < 3 ? var : CF_V_CONTIG))) r->st = ff_last_status();
        if (!base[i]) r->st = ff_last_status();
    }
    ff_tensor *o = r->st ? NULL : ff_scaled_dot_product_attention(in[0], in[1], in[2], in[3], drop, s->causal, NAN, seed);
    if (o) ow = ff_mul(o, in[4]);
    if (ow) loss = ff_sum(ow, 0, NULL, false);
    ff_tensor *g[3] = {NULL, NULL, NULL};
    if (loss && !ff_autograd_grad(loss, NULL, 3, in, g, NULL)) {
        ff_tensor *od = ff_detach(o);
        r->out[0] = od;
        for (int i = 0; i < 3; i++) r->out[i + 1] = g[i];
    } else {
        for (int i = 0; i < 3; i++) ff_tensor_release(g[i]);
    }
    if (!r->out[0] || !r->out[1] || !r->out[2] || !r->out[3]) {
        r->st = ff_last_status() ? ff_last_status() : FF_ERR_INVALID;
        snprintf(r->err, sizeof r->err, "%s", ff_last_error());
    }
    ff_tensor_release(o), ff_tensor_release(ow), ff_tensor_release(loss);
    for (int i = 0; i < 5; i++) ff_tensor_release(in[i]), ff_tensor_release(base[i]);
}

static cf_result fail(cf_report *rep, const cf_ctx *ctx, const cf_case *cs, const char *why)
{
    return cf_fail(rep, ctx, cs, why, "op=attention.%s%s dtype=%s variant=%s", scens[cs->p[0]].name,
                   cs->p[2] ? "_dropout" : "", ff_dtype_name(cs->dtype), cf_variant_name((cf_variant)cs->p[1]));
}

static cf_result run(cf_ctx *ctx, const cf_case *cs, cf_report *rep)
{
    const attn_scen *s = &scens[cs->p[0]];
    cf_variant var = (cf_variant)cs->p[1];
    ff_dtype dt = cs->dtype;
    cf_rng rng;
    cf_rng_init(&rng, cf_case_seed(ctx, cs));
    void *vals[5] = {NULL};
    for (int i = 0; i < 5; i++)
        if (i != 3 || s->mask != M_NONE) vals[i] = values(s, i, dt, &rng);
    cf_entry_run runs[3]; /* the backend as it runs, its composition, the reference */
    double drop = cs->p[2] ? 0.25 : 0.0;
    uint64_t dseed = cf_case_seed(ctx, cs) ^ 0x5eedu;
    run_on(ctx->t, s, dt, var, drop, dseed, vals, &runs[0]);
    ff_ops_force_compose(FF_KIND_ATTENTION, true);
    run_on(ctx->t, s, dt, var, drop, dseed, vals, &runs[1]);
    ff_ops_force_compose(FF_KIND_ATTENTION, false);
    if (ctx->t != ctx->r) run_on(ctx->r, s, dt, var, drop, dseed, vals, &runs[2]);
    else memset(&runs[2], 0, sizeof runs[2]);
    static const char *const names[4] = {"o", "grad q", "grad k", "grad v"};
    int64_t ks[4] = {s->tk + s->d, s->tq + s->tk + s->dv, s->tq + s->dv + s->d, s->tq + s->dv};
    cf_result res = CF_PASS;
    char why[1200];
    for (int r = 0; r < 3 && res == CF_PASS; r++) {
        if (r == 2 && ctx->t == ctx->r) break;
        if (runs[r].st == FF_ERR_UNSUPPORTED) { /* any other failure: cf_entry_compare's message */
            snprintf(rep->msg, sizeof rep->msg, "backend declines: %s", runs[r].err);
            rep->coverage_gap = true;
            res = CF_SKIP;
        }
    }
    if (res == CF_PASS && !cf_entry_compare(runs, ctx->t != ctx->r, 4, names, ks, why, sizeof why))
        res = fail(rep, ctx, cs, why);
    for (int r = 0; r < 3; r++) cf_entry_run_free(&runs[r]);
    for (int i = 0; i < 5; i++) free(vals[i]);
    return res;
}

void cf_gen_attention(void)
{
    static const ff_dtype dts[] = {FF_F32, FF_F64, FF_F16, FF_BF16};
    for (int si = 0; si < NSCEN; si++)
        for (int di = 0; di < 4; di++)
            for (int vi = 0; vi < (int)(sizeof variants / sizeof variants[0]); vi++) {
                /* the views' walks are dtype-blind: half runs them contiguous only, and
                 * stepped views only f32 (keeps the family quick under ASan) */
                if ((di >= 2 && vi > 0) || (di == 1 && variants[vi] == CF_V_STEPPED)) continue;
                cf_case c = {.family = "attention", .dtype = dts[di], .level = CF_LEVEL_OP, .run = run, .kind = -1,
                             .p = {si, (int)variants[vi]}};
                snprintf(c.op, sizeof c.op, "%s", scens[si].name);
                snprintf(c.id, sizeof c.id, "attention.%s.%s.%s", scens[si].name, ff_dtype_name(dts[di]),
                         cf_variant_name(variants[vi]));
                cf_register(&c);
            }
    /* dropout: causal, both masks (empty rows too), Tq != Tk, k/v over heads, 3-D; every
     * dtype contiguous, f32 transposed as well */
    static const int drop_scens[] = {1, 4, 6, 7, 10, 11, 12};
    for (int i = 0; i < (int)(sizeof drop_scens / sizeof drop_scens[0]); i++)
        for (int di = 0; di < 4; di++)
            for (int vi = 0; vi < (di == 0 ? 2 : 1); vi++) {
                int si = drop_scens[i];
                cf_case c = {.family = "attention", .dtype = dts[di], .level = CF_LEVEL_OP, .run = run, .kind = -1,
                             .p = {si, (int)variants[vi], 1}};
                snprintf(c.op, sizeof c.op, "%s_dropout", scens[si].name);
                snprintf(c.id, sizeof c.id, "attention.%s_dropout.%s.%s", scens[si].name, ff_dtype_name(dts[di]),
                         cf_variant_name(variants[vi]));
                cf_register(&c);
            }
}
