/* Vtable families "fill", "copy" (every source dtype x every destination dtype:
 * casts, F16/BF16 included) and "where". All compare exactly, against the reference and against the
 * closed form (the ABI's conversion rules, cf_set_f / cf_set_i). */
#include <stdio.h>
#include <stdlib.h>

#include "cf.h"
#include "cf_families.h"
#include "cf_scenario.h"

static void *alloc_out(const cf_operand *d)
{
    int64_t n = cf_numel(d->ndim, d->shape);
    void *out = calloc((size_t)(n ? n : 1), ff_dtype_size(d->dtype));
    if (!out) abort();
    return out;
}

/* ---- fill ------------------------------------------------------------------ */
static const double fill_values[] = {2.5, -3.0, 7.0, 0.0};

void *cf_fill_expect(const cf_call *c, const void *user)
{
    (void)user;
    const cf_operand *d = &c->o[0];
    void *out = alloc_out(d);
    for (int64_t i = 0, n = cf_numel(d->ndim, d->shape); i < n; i++) {
        if (ff_dtype_is_float(d->dtype)) cf_set_f(out, d->dtype, i, c->value.f);
        else cf_set_i(out, d->dtype, i, c->value.i);
    }
    return out;
}

static cf_result run_fill(cf_ctx *ctx, const cf_case *cs, cf_report *rep)
{
    const cf_scenario *s = &cf_ew_scenarios[cs->p[1]];
    cf_rng rng;
    cf_rng_init(&rng, cf_case_seed(ctx, cs));
    double v = fill_values[cs->p[0]];
    cf_call c = {.kind = FF_KIND_FILL, .nops = 1, .value = {.f = v, .i = (int64_t)v}};
    cf_operand_init(&c.o[0], "dst", cs->dtype, s->ndim, s->shape, s->dst, true, &rng, CF_DOM_SIGNED);
    cf_check_opts o = {.cls = CF_TOL_EXACT, .expect = cf_fill_expect};
    cf_result r = cf_check_call(ctx, cs, &c, &o, rep);
    cf_call_free(&c);
    return r;
}

/* ---- copy / cast ------------------------------------------------------------ */
void *cf_copy_expect(const cf_call *c, const void *user)
{
    (void)user;
    const cf_operand *d = &c->o[0], *s = &c->o[1];
    void *in = cf_operand_values(s), *out = alloc_out(d);
    for (int64_t i = 0, n = cf_numel(d->ndim, d->shape); i < n; i++) {
        if (ff_dtype_is_float(s->dtype)) cf_set_f(out, d->dtype, i, cf_get_f(in, s->dtype, i));
        else cf_set_i(out, d->dtype, i, cf_get_i(in, s->dtype, i));
    }
    free(in);
    return out;
}

static cf_result run_copy(cf_ctx *ctx, const cf_case *cs, cf_report *rep)
{
    const cf_scenario *s = &cf_ew_scenarios[cs->p[1]];
    ff_dtype src = (ff_dtype)cs->opcode, dst = cs->dtype;
    cf_rng rng;
    cf_rng_init(&rng, cf_case_seed(ctx, cs));
    cf_call c = {.kind = FF_KIND_COPY, .nops = 2};
    /* unsigned destinations get non-negative sources: negative -> u8 is in "special" */
    cf_domain dom = dst == FF_U8 ? CF_DOM_POSITIVE : CF_DOM_SIGNED;
    cf_operand_init(&c.o[1], "src", src, s->ndim, s->shape, s->a, false, &rng, dom);
    if (s->inplace) cf_operand_alias(&c.o[0], "dst", &c.o[1], 1);
    else cf_operand_init(&c.o[0], "dst", dst, s->ndim, s->shape, s->dst, true, &rng, CF_DOM_SIGNED);
    cf_check_opts o = {.cls = CF_TOL_EXACT, .expect = cf_copy_expect};
    cf_result r = cf_check_call(ctx, cs, &c, &o, rep);
    cf_call_free(&c);
    return r;
}

/* ---- where ------------------------------------------------------------------- */
static void *where_expect(const cf_call *c, const void *user)
{
    (void)user;
    const cf_operand *d = &c->o[0];
    void *cond = cf_operand_values(&c->o[1]), *a = cf_operand_values(&c->o[2]), *b = cf_operand_values(&c->o[3]);
    void *out = alloc_out(d);
    size_t sz = ff_dtype_size(d->dtype);
    for (int64_t i = 0, n = cf_numel(d->ndim, d->shape); i < n; i++) {
        const unsigned char *from = ((const unsigned char *)cond)[i] ? a : b;
        for (size_t k = 0; k < sz; k++) ((unsigned char *)out)[(size_t)i * sz + k] = from[(size_t)i * sz + k];
    }
    free(cond);
    free(a);
    free(b);
    return out;
}

static cf_result run_where(cf_ctx *ctx, const cf_case *cs, cf_report *rep)
{
    const cf_scenario *s = &cf_ew_scenarios[cs->p[1]];
    cf_rng rng;
    cf_rng_init(&rng, cf_case_seed(ctx, cs));
    cf_call c = {.kind = FF_KIND_WHERE, .nops = 4};
    cf_operand_init(&c.o[1], "cond", FF_BOOL, s->ndim, s->shape, s->b, false, &rng, CF_DOM_BOOL01);
    cf_operand_init(&c.o[2], "a", cs->dtype, s->ndim, s->shape, s->a, false, &rng, CF_DOM_SIGNED);
    cf_operand_init(&c.o[3], "b", cs->dtype, s->ndim, s->shape, CF_L_OFFSET, false, &rng, CF_DOM_SIGNED);
    if (s->inplace) cf_operand_alias(&c.o[0], "dst", &c.o[2], 2);
    else cf_operand_init(&c.o[0], "dst", cs->dtype, s->ndim, s->shape, s->dst, true, &rng, CF_DOM_SIGNED);
    cf_check_opts o = {.cls = CF_TOL_EXACT, .expect = where_expect};
    cf_result r = cf_check_call(ctx, cs, &c, &o, rep);
    cf_call_free(&c);
    return r;
}

void cf_gen_fill_copy(void)
{
    for (int di = 0; di < CF_NSTORAGE_DTYPES; di++) {
        ff_dtype dt = cf_storage_dtypes[di];
        for (int si = 0; si < CF_EW_NSCEN; si++) {
            const cf_scenario *s = &cf_ew_scenarios[si];
            bool big = si >= CF_EW_FIRST_BIG;
            /* fill: every dtype x dst layouts x a few values */
            if (!s->inplace && cf_ref_supports(FF_KIND_FILL, 0, dt) && (!big || dt == FF_F32)) {
                for (int v = 0; v < 4; v++) {
                    if (v > 0 && si % 4 != v) continue; /* every scenario once, each value on a quarter */
                    cf_case c = {.family = "fill", .op = "fill", .dtype = dt, .level = CF_LEVEL_VTABLE,
                                 .run = run_fill, .kind = FF_KIND_FILL, .opcode = 0, .p = {v, si}};
                    snprintf(c.id, sizeof c.id, "fill.%s.%s.v%d", ff_dtype_name(dt), s->name, v);
                    cf_register(&c);
                }
            }
            /* where: dst/a/b of every dtype, cond bool */
            if (cf_ref_computes(FF_KIND_WHERE, 0, dt) && (!big || dt == FF_F32)) {
                cf_case c = {.family = "where", .op = "where", .dtype = dt, .level = CF_LEVEL_VTABLE,
                             .run = run_where, .kind = FF_KIND_WHERE, .opcode = 0, .p = {0, si}};
                snprintf(c.id, sizeof c.id, "where.%s.%s", ff_dtype_name(dt), s->name);
                cf_register(&c);
            }
            /* copy: every source dtype into dt */
            for (int sj = 0; sj < CF_NSTORAGE_DTYPES; sj++) {
                ff_dtype src = cf_storage_dtypes[sj];
                if (!cf_ref_supports(FF_KIND_COPY, (int)src, dt)) continue;
                if (s->inplace && src != dt) continue;
                if (big && !(dt == FF_F32 && (src == FF_F32 || src == FF_I32))) continue;
                cf_case c = {.family = "copy", .dtype = dt, .level = CF_LEVEL_VTABLE, .run = run_copy,
                             .kind = FF_KIND_COPY, .opcode = (int)src, .p = {0, si}};
                snprintf(c.op, sizeof c.op, "%s_to_%s", ff_dtype_name(src), ff_dtype_name(dt));
                snprintf(c.id, sizeof c.id, "copy.%s.%s.%s", c.op, ff_dtype_name(dt), s->name);
                cf_register(&c);
            }
        }
    }
}
