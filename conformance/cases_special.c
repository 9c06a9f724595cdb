/* Family "special": the edge values in one place, for every op code and dtype the
 * reference accepts: NaN, +-Inf, +-0, subnormals, +-FLT_MAX/DBL_MAX for floats;
 * INT32_MIN/MAX, INT64_MIN/MAX, 0, -1, 255 ... for integers. The semantics the
 * closed forms encode are written down in conformance/README.md ("Special values"). */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "cf_families.h"
#include "cf_scenario.h"

enum { SP_UNARY, SP_BINARY, SP_COPY, SP_REDUCE, SP_FILL };

static const int64_t len1[] = {67};
static const int64_t pairs[] = {400};
static const int64_t rows[] = {5, 13};

static bool unary_writes_bool(int op)
{
    return op == FF_UNARY_ISNAN || op == FF_UNARY_ISINF || op == FF_UNARY_LOGICAL_NOT;
}

/* Fill values per dtype: the edges of each type. */
static ff_scalar fill_value(ff_dtype dt, int v)
{
    ff_scalar s = {0, 0};
    if (ff_dtype_is_float(dt)) {
        const double f[] = {NAN, -INFINITY, -0.0, dt == FF_F32 ? FLT_TRUE_MIN : DBL_TRUE_MIN};
        s.f = f[v];
        s.i = 0;
    } else {
        const int64_t i[] = {INT64_MIN, INT64_MAX, -1, 256};
        s.i = i[v];
        s.f = (double)s.i;
    }
    return s;
}

static cf_result run(cf_ctx *ctx, const cf_case *cs, cf_report *rep)
{
    int what = cs->p[0], op = cs->p[1];
    ff_dtype dt = cs->dtype;
    cf_rng rng;
    cf_rng_init(&rng, cf_case_seed(ctx, cs));
    cf_call c = {.op = op};
    cf_check_opts o = {.k = 1};
    switch (what) {
    case SP_UNARY:
        c.kind = FF_KIND_UNARY, c.nops = 2;
        cf_operand_init(&c.o[1], "src", dt, 1, len1, CF_L_CONTIG, false, &rng, CF_DOM_SPECIAL);
        cf_operand_init(&c.o[0], "dst", unary_writes_bool(op) ? FF_BOOL : dt, 1, len1, CF_L_CONTIG, true, &rng,
                        CF_DOM_SIGNED);
        o.cls = cf_unary_tol(op), o.expect = cf_unary_expect;
        break;
    case SP_BINARY:
        c.kind = FF_KIND_BINARY, c.nops = 3;
        cf_operand_init(&c.o[1], "a", dt, 1, pairs, CF_L_CONTIG, false, &rng, CF_DOM_SPECIAL);
        cf_operand_init(&c.o[2], "b", dt, 1, pairs, CF_L_OFFSET, false, &rng, CF_DOM_SPECIAL);
        cf_operand_init(&c.o[0], "dst", ff_binary_op_writes_bool((ff_binary_op)op) ? FF_BOOL : dt, 1, pairs, CF_L_CONTIG, true, &rng,
                        CF_DOM_SIGNED);
        o.cls = cf_binary_tol(op), o.expect = cf_binary_expect;
        break;
    case SP_COPY:
        c.kind = FF_KIND_COPY, c.nops = 2;
        cf_operand_init(&c.o[1], "src", (ff_dtype)op, 1, len1, CF_L_CONTIG, false, &rng, CF_DOM_SPECIAL);
        cf_operand_init(&c.o[0], "dst", dt, 1, len1, CF_L_OFFSET, true, &rng, CF_DOM_SIGNED);
        o.cls = CF_TOL_EXACT, o.expect = cf_copy_expect;
        break;
    case SP_FILL:
        c.kind = FF_KIND_FILL, c.nops = 1, c.value = fill_value(dt, op);
        cf_operand_init(&c.o[0], "dst", dt, 1, len1, CF_L_STEPPED, true, &rng, CF_DOM_SIGNED);
        o.cls = CF_TOL_EXACT, o.expect = cf_fill_expect;
        break;
    default:
        return cf_reduce_run(ctx, cs, op, 2, rows, 2, CF_L_CONTIG, CF_L_CONTIG, CF_DOM_SPECIAL, rep);
    }
    cf_result r = cf_check_call(ctx, cs, &c, &o, rep);
    cf_call_free(&c);
    return r;
}

static void add(int what, int kind, int op, int opcode, ff_dtype dt, const char *name)
{
    cf_case c = {.family = "special", .dtype = dt, .level = CF_LEVEL_VTABLE, .run = run, .kind = kind,
                 .opcode = opcode, .p = {what, op}};
    snprintf(c.op, sizeof c.op, "%s", name);
    snprintf(c.id, sizeof c.id, "special.%s.%s", name, ff_dtype_name(dt));
    cf_register(&c);
}

void cf_gen_special(void)
{
    char name[40];
    for (int di = 0; di < CF_NDTYPES; di++) {
        ff_dtype dt = cf_all_dtypes[di];
        for (int op = 0; op < FF_UNARY_COUNT; op++)
            if (cf_ref_supports(FF_KIND_UNARY, op, dt)) add(SP_UNARY, FF_KIND_UNARY, op, op, dt, cf_unary_name(op));
        for (int op = 0; op < FF_BINARY_COUNT; op++)
            if (cf_ref_supports(FF_KIND_BINARY, op, dt)) add(SP_BINARY, FF_KIND_BINARY, op, op, dt, cf_binary_name(op));
        for (int sj = 0; sj < CF_NDTYPES; sj++) {
            ff_dtype src = cf_all_dtypes[sj];
            if (!cf_ref_supports(FF_KIND_COPY, (int)src, dt)) continue;
            snprintf(name, sizeof name, "copy_%s_to_%s", ff_dtype_name(src), ff_dtype_name(dt));
            add(SP_COPY, FF_KIND_COPY, (int)src, (int)src, dt, name);
        }
        /* NaN semantics of the extremes and of any/all; sums of specials are in the
         * README as "not compared" (accumulation order decides overflow) */
        for (int op = FF_REDUCE_MAX; op < FF_REDUCE_COUNT; op++)
            if (cf_ref_supports(FF_KIND_REDUCE, op, dt)) {
                snprintf(name, sizeof name, "reduce_%s", cf_reduce_name(op));
                add(SP_REDUCE, FF_KIND_REDUCE, op, op, dt, name);
            }
        if (dt != FF_BOOL && cf_ref_supports(FF_KIND_FILL, 0, dt))
            for (int v = 0; v < 4; v++) {
                snprintf(name, sizeof name, "fill_v%d", v);
                add(SP_FILL, FF_KIND_FILL, v, 0, dt, name);
            }
    }
}
