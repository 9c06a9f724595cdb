/* Vtable family "unary": every unary op code x every dtype the reference accepts x
 * the elementwise scenarios. Closed form: the host oracle (cf_oracle.c). */
#include <stdio.h>
#include <stdlib.h>

#include "cf.h"
#include "cf_families.h"
#include "cf_scenario.h"

static bool writes_bool(int op)
{
    return op == FF_UNARY_ISNAN || op == FF_UNARY_ISINF || op == FF_UNARY_LOGICAL_NOT;
}

static cf_domain domain(int op, ff_dtype dt)
{
    if (!ff_dtype_is_float(dt)) {
        if (op == FF_UNARY_BITWISE_NOT) return CF_DOM_BITS; /* every bit, the sign bit too */
        return op == FF_UNARY_LOGICAL_NOT ? CF_DOM_SMALLINT : CF_DOM_SIGNED;
    }
    switch (op) {
    case FF_UNARY_LOG: case FF_UNARY_SQRT: case FF_UNARY_RSQRT: case FF_UNARY_RECIPROCAL: return CF_DOM_POSITIVE;
    case FF_UNARY_LOG1P: case FF_UNARY_ASIN: case FF_UNARY_ACOS: case FF_UNARY_ERFINV: return CF_DOM_OPEN_UNIT;
    case FF_UNARY_FLOOR: case FF_UNARY_CEIL: case FF_UNARY_ROUND: return CF_DOM_ROUNDING;
    case FF_UNARY_LOGICAL_NOT: return CF_DOM_SMALLINT;
    /* [-30, 30]: the reflection below 0 (near the poles too), the recurrence, the series */
    case FF_UNARY_LGAMMA: case FF_UNARY_DIGAMMA: case FF_UNARY_TRIGAMMA: return CF_DOM_WIDE;
    case FF_UNARY_ISNAN: case FF_UNARY_ISINF: return CF_DOM_SPECIAL;
    default: return CF_DOM_SIGNED;
    }
}

cf_tol_class cf_unary_tol(int op)
{
    switch (op) {
    case FF_UNARY_NEG: case FF_UNARY_ABS: case FF_UNARY_SIGN: case FF_UNARY_RELU: case FF_UNARY_FLOOR:
    case FF_UNARY_CEIL: case FF_UNARY_ROUND: case FF_UNARY_ISNAN: case FF_UNARY_ISINF: case FF_UNARY_LOGICAL_NOT:
    case FF_UNARY_BITWISE_NOT:
        return CF_TOL_EXACT;
    case FF_UNARY_SQUARE: case FF_UNARY_SQRT: case FF_UNARY_RECIPROCAL: return CF_TOL_ROUNDED;
    default: return CF_TOL_TRANSCEND;
    }
}

void *cf_unary_expect(const cf_call *c, const void *user)
{
    (void)user;
    const cf_operand *d = &c->o[0], *s = &c->o[1];
    int64_t n = cf_numel(d->ndim, d->shape);
    void *in = cf_operand_values(s);
    void *out = calloc((size_t)(n ? n : 1), ff_dtype_size(d->dtype));
    if (!out) abort();
    for (int64_t i = 0; i < n; i++) {
        if (ff_dtype_is_float(s->dtype)) cf_set_f(out, d->dtype, i, cf_unary_ref((ff_unary_op)c->op, cf_get_f(in, s->dtype, i)));
        else cf_set_i(out, d->dtype, i, cf_unary_ref_i((ff_unary_op)c->op, cf_get_i(in, s->dtype, i), s->dtype));
    }
    free(in);
    return out;
}

static cf_result run(cf_ctx *ctx, const cf_case *cs, cf_report *rep)
{
    const cf_scenario *s = &cf_ew_scenarios[cs->p[1]];
    int op = cs->p[0];
    cf_rng rng;
    cf_rng_init(&rng, cf_case_seed(ctx, cs));
    cf_call c = {.kind = FF_KIND_UNARY, .op = op, .nops = 2};
    ff_dtype dt = cs->dtype, ddt = writes_bool(op) ? FF_BOOL : dt;
    cf_operand_init(&c.o[1], "src", dt, s->ndim, s->shape, s->a, false, &rng, domain(op, dt));
    if (s->inplace) cf_operand_alias(&c.o[0], "dst", &c.o[1], 1);
    else cf_operand_init(&c.o[0], "dst", ddt, s->ndim, s->shape, s->dst, true, &rng, CF_DOM_SIGNED);
    cf_check_opts o = {.cls = cf_unary_tol(op), .k = 1, .expect = cf_unary_expect, .zero_sign = true};
    cf_result r = cf_check_call(ctx, cs, &c, &o, rep);
    cf_call_free(&c);
    return r;
}

void cf_gen_unary(void)
{
    for (int op = 0; op < FF_UNARY_COUNT; op++) {
        for (int di = 0; di < CF_NDTYPES; di++) {
            ff_dtype dt = cf_all_dtypes[di];
            if (!cf_ref_computes(FF_KIND_UNARY, op, dt)) continue;
            for (int si = 0; si < CF_EW_NSCEN; si++) {
                const cf_scenario *s = &cf_ew_scenarios[si];
                if (s->inplace && writes_bool(op) && dt != FF_BOOL) continue;
                /* the big ones only where they buy something: a cheap and an expensive op */
                if (si >= CF_EW_FIRST_BIG && !(dt == FF_F32 && (op == FF_UNARY_NEG || op == FF_UNARY_EXP))) continue;
                cf_case c = {.family = "unary", .dtype = dt, .level = CF_LEVEL_VTABLE, .run = run,
                             .kind = FF_KIND_UNARY, .opcode = op, .p = {op, si}};
                snprintf(c.op, sizeof c.op, "%s", cf_unary_name(op));
                snprintf(c.id, sizeof c.id, "unary.%s.%s.%s", c.op, ff_dtype_name(dt), s->name);
                cf_register(&c);
            }
        }
    }
}
