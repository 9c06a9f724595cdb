/* Vtable family "random": uniform and normal fills for every dtype the reference
 * accepts x layouts. The ABI fixes the numbers: element n (row-major logical index,
 * whatever the strides) takes Philox counter counter_base + n, so the closed form
 * is p0 + (p1 - p0) * ff_random_uniform01(seed, base + n) (ff_random_uniform_f32 for f32),
 * which must match exactly,
 * and p0 + p1 * ff_random_normal01(seed, base + n), compared with the libm tolerance. */
#include <stdio.h>
#include <stdlib.h>

#include "cf.h"
#include "cf_scenario.h"

typedef struct rnd_scen {
    const char *name;
    int ndim;
    int64_t shape[3];
    cf_layout_kind layout;
    uint64_t seed, base;
    double p0, p1;
} rnd_scen;

static const rnd_scen scens[] = {
    {"scalar", 0, {0}, CF_L_CONTIG, 7, 0, 0, 1},
    {"empty", 1, {0}, CF_L_CONTIG, 7, 0, 0, 1},
    {"n257", 1, {257}, CF_L_CONTIG, 42, 0, -2, 3},
    {"offset5x7_base", 2, {5, 7}, CF_L_OFFSET, 42, 1000, 0, 1},
    {"transposed7x5", 2, {7, 5}, CF_L_TRANSPOSED, 1, 5, -1, 1},
    {"stepped3x4x5", 3, {3, 4, 5}, CF_L_STEPPED, 0xFFFFFFFFFFFFull, 1ull << 40, 10, 20},
    {"big", 1, {CF_BIG}, CF_L_CONTIG, 3, 0, 0, 1},
};
#define NSCEN ((int)(sizeof scens / sizeof scens[0]))

static void *expect(const cf_call *c, const void *user)
{
    (void)user;
    const cf_operand *d = &c->o[0];
    int64_t n = cf_numel(d->ndim, d->shape);
    void *out = calloc((size_t)(n ? n : 1), ff_dtype_size(d->dtype));
    if (!out) abort();
    for (int64_t i = 0; i < n; i++) {
        uint64_t ctr = c->rcounter + (uint64_t)i;
        /* F16/BF16: the f32 sample rounded once (the core's f32 detour, which every backend
         * takes: none computes half random); it may round up to p1 */
        int f32 = d->dtype == FF_F32 || d->dtype == FF_F16 || d->dtype == FF_BF16;
        double v = c->op == FF_RANDOM_NORMAL ? c->p0 + c->p1 * ff_random_normal01(c->rseed, ctr)
                   : f32                   ? (double)ff_random_uniform_f32(c->rseed, ctr, c->p0, c->p1)
                                           : c->p0 + (c->p1 - c->p0) * ff_random_uniform01(c->rseed, ctr);
        cf_set_f(out, d->dtype, i, v);
    }
    return out;
}

static cf_result run(cf_ctx *ctx, const cf_case *cs, cf_report *rep)
{
    const rnd_scen *s = &scens[cs->p[1]];
    cf_rng rng;
    cf_rng_init(&rng, cf_case_seed(ctx, cs));
    cf_call c = {.kind = FF_KIND_RANDOM, .op = cs->p[0], .nops = 1, .rseed = s->seed ^ ctx->seed,
                 .rcounter = s->base, .p0 = s->p0, .p1 = s->p1};
    cf_operand_init(&c.o[0], "dst", cs->dtype, s->ndim, s->shape, s->layout, true, &rng, CF_DOM_SIGNED);
    cf_check_opts o = {.cls = cs->p[0] == FF_RANDOM_UNIFORM ? CF_TOL_EXACT : CF_TOL_TRANSCEND, .expect = expect};
    cf_result r = cf_check_call(ctx, cs, &c, &o, rep);
    cf_call_free(&c);
    return r;
}

void cf_gen_random(void)
{
    for (int dist = 0; dist < FF_RANDOM_COUNT; dist++)
        for (int di = 0; di < CF_NDTYPES; di++) {
            ff_dtype dt = cf_all_dtypes[di];
            if (!cf_ref_computes(FF_KIND_RANDOM, dist, dt)) continue;
            for (int si = 0; si < NSCEN; si++) {
                if (scens[si].shape[0] == CF_BIG && (dt != FF_F32 || dist != FF_RANDOM_UNIFORM)) continue;
                cf_case c = {.family = "random", .dtype = dt, .level = CF_LEVEL_VTABLE, .run = run,
                             .kind = FF_KIND_RANDOM, .opcode = dist, .p = {dist, si}};
                snprintf(c.op, sizeof c.op, "%s", dist == FF_RANDOM_UNIFORM ? "uniform" : "normal");
                snprintf(c.id, sizeof c.id, "random.%s.%s.%s", c.op, ff_dtype_name(dt), scens[si].name);
                cf_register(&c);
            }
        }
}
