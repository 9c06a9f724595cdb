/* Vtable family "softmax": the optional softmax / log_softmax entry, for every
 * dtype the reference accepts x axis x layouts (a backend without the entry skips
 * these: the core composes softmax from required entries, and the op-level family
 * checks that path). Closed form: max-shifted, in long double. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

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

void cf_gen_softmax(void)
{
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
