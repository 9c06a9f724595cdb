/* Vtable family "binary": every binary op code x every dtype the reference accepts
 * x the elementwise scenarios (broadcast operands arrive with stride 0, as the core
 * sends them). Closed form: the host oracle. */
#include <stdio.h>
#include <stdlib.h>

#include "cf.h"
#include "cf_families.h"
#include "cf_scenario.h"

static bool writes_bool(int op) { return ff_binary_op_writes_bool((ff_binary_op)op); }

static void domains(int op, ff_dtype dt, cf_domain *da, cf_domain *db)
{
    *da = *db = CF_DOM_SIGNED;
    switch (op) {
    case FF_BINARY_DIV: case FF_BINARY_FMOD: *db = CF_DOM_POSITIVE; break;
    case FF_BINARY_POW:
        if (ff_dtype_is_float(dt)) *da = CF_DOM_POSITIVE;
        else *da = CF_DOM_SMALLINT, *db = CF_DOM_POSITIVE;
        break;
    case FF_BINARY_ADD: case FF_BINARY_SUB: case FF_BINARY_MUL: case FF_BINARY_ATAN2: break;
    case FF_BINARY_BITWISE_AND: case FF_BINARY_BITWISE_OR: case FF_BINARY_BITWISE_XOR:
        *da = *db = CF_DOM_BITS; /* sign bits and high bits, not only small values */
        break;
    default: *da = *db = CF_DOM_SMALLINT; break; /* comparisons and logic: ties and zeros happen */
    }
}

cf_tol_class cf_binary_tol(int op)
{
    switch (op) {
    case FF_BINARY_ADD: case FF_BINARY_SUB: case FF_BINARY_MUL: case FF_BINARY_DIV: case FF_BINARY_FMOD:
        return CF_TOL_ROUNDED;
    case FF_BINARY_POW: case FF_BINARY_ATAN2: return CF_TOL_TRANSCEND;
    default: return CF_TOL_EXACT;
    }
}

void *cf_binary_expect(const cf_call *c, const void *user)
{
    (void)user;
    const cf_operand *d = &c->o[0], *a = &c->o[1], *b = &c->o[2];
    int64_t n = cf_numel(d->ndim, d->shape);
    void *va = cf_operand_values(a), *vb = cf_operand_values(b);
    void *out = calloc((size_t)(n ? n : 1), ff_dtype_size(d->dtype));
    if (!out) abort();
    for (int64_t i = 0; i < n; i++) {
        if (ff_dtype_is_float(a->dtype))
            cf_set_f(out, d->dtype, i, cf_binary_ref((ff_binary_op)c->op, cf_get_f(va, a->dtype, i), cf_get_f(vb, b->dtype, i)));
        else
            cf_set_i(out, d->dtype, i,
                     cf_binary_ref_i((ff_binary_op)c->op, cf_get_i(va, a->dtype, i), cf_get_i(vb, b->dtype, i), a->dtype));
    }
    free(va);
    free(vb);
    return out;
}

static cf_result run(cf_ctx *ctx, const cf_case *cs, cf_report *rep)
{
    const cf_scenario *s = &cf_ew_scenarios[cs->p[1]];
    int op = cs->p[0];
    cf_rng rng;
    cf_rng_init(&rng, cf_case_seed(ctx, cs));
    cf_call c = {.kind = FF_KIND_BINARY, .op = op, .nops = 3};
    ff_dtype dt = cs->dtype, ddt = writes_bool(op) ? FF_BOOL : dt;
    cf_domain da, db;
    domains(op, dt, &da, &db);
    cf_operand_init(&c.o[1], "a", dt, s->ndim, s->shape, s->a, false, &rng, da);
    cf_operand_init(&c.o[2], "b", dt, s->ndim, s->shape, s->b, false, &rng, db);
    if (s->inplace) cf_operand_alias(&c.o[0], "dst", &c.o[1 + cs->p[2]], 1 + cs->p[2]); /* dst is a, or b */
    else cf_operand_init(&c.o[0], "dst", ddt, s->ndim, s->shape, s->dst, true, &rng, CF_DOM_SIGNED);
    cf_check_opts o = {.cls = cf_binary_tol(op), .k = 1, .expect = cf_binary_expect, .zero_sign = true};
    cf_result r = cf_check_call(ctx, cs, &c, &o, rep);
    cf_call_free(&c);
    return r;
}

void cf_gen_binary(void)
{
    for (int op = 0; op < FF_BINARY_COUNT; op++) {
        for (int di = 0; di < CF_NDTYPES; di++) {
            ff_dtype dt = cf_all_dtypes[di];
            if (!cf_ref_computes(FF_KIND_BINARY, op, dt)) continue;
            for (int si = 0; si < CF_EW_NSCEN; si++) {
                const cf_scenario *s = &cf_ew_scenarios[si];
                if (s->inplace && writes_bool(op) && dt != FF_BOOL) continue;
                if (si >= CF_EW_FIRST_BIG && !(dt == FF_F32 && (op == FF_BINARY_ADD || op == FF_BINARY_MUL))) continue;
                for (int into_b = 0; into_b <= (s->inplace ? 1 : 0); into_b++) {
                    cf_case c = {.family = "binary", .dtype = dt, .level = CF_LEVEL_VTABLE, .run = run,
                                 .kind = FF_KIND_BINARY, .opcode = op, .p = {op, si, into_b}};
                    snprintf(c.op, sizeof c.op, "%s", cf_binary_name(op));
                    snprintf(c.id, sizeof c.id, "binary.%s.%s.%s%s", c.op, ff_dtype_name(dt), s->name,
                             into_b ? "_into_b" : "");
                    cf_register(&c);
                }
            }
        }
    }
}
