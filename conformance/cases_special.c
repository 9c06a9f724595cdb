/* Family "special": the edge values in one place, for every op code and dtype the
 * reference accepts: NaN, +-Inf, +-0, subnormals, +-FLT_MAX/DBL_MAX for floats;
 * INT32_MIN/MAX, INT64_MIN/MAX, 0, -1, 255 ... for integers. The semantics the
 * closed forms encode are written down in conformance/README.md ("Special values").
 *
 * Two kinds of unary/binary case: "<op>" draws 67 (400 pairs) values from the edge set at
 * random; "<op>_edges" lays out every edge value in order (every pair for binary ops), in
 * a length that puts each of them both in a 16-wide vector body and in its tail, and
 * "<op>_edges_inplace" the same on a stepped view written in place. A zero result must
 * have the sign the closed form gives it (tanh(-0) = -0), whatever the tolerance. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "cf_families.h"
#include "cf_scenario.h"

enum { SP_UNARY, SP_BINARY, SP_COPY, SP_REDUCE, SP_FILL, SP_UNARY_EDGES, SP_UNARY_EDGES_INPLACE, SP_BINARY_EDGES,
       SP_REDUCE_ZEROS };

/* MAX/MIN/ARG* whose extreme is a zero of either sign: the first zero wins, with its
 * sign (rows past a vector width, columns, and one row long enough to be split across
 * threads) */
static const struct {
    const char *name;
    int ndim;
    int64_t shape[2];
    uint32_t mask;
} zero_scens[] = {{"rows16x77", 2, {16, 77}, 0x2}, {"cols77x16", 2, {77, 16}, 0x1}, {"long1x140001", 2, {1, 140001}, 0x2}};

static const int64_t len1[] = {67};
static const int64_t pairs[] = {400};
static const int64_t rows[] = {5, 13};
/* 4 x 16 + 13: with the 18 float edge values cycled, every one of them lands in the
 * vector body, and NaN, +-Inf, +-0 and the subnormals in the 13-element tail too */
static const int64_t edges_len[] = {77};
static const int64_t edges_grid[] = {7, 11}; /* 77 as a stepped 2-D view, in place */

/* Element i of every edges operand is edge value i (cycled). */
static void set_edges(cf_operand *o)
{
    int64_t n = cf_numel(o->ndim, o->shape);
    void *v = calloc((size_t)(n ? n : 1), ff_dtype_size(o->dtype));
    if (!v) abort();
    for (int64_t i = 0; i < n; i++) cf_set_edge(v, o->dtype, i, (int)(i % cf_edge_count(o->dtype)));
    cf_operand_scatter(o, v);
    free(v);
}

/* a and b (n * n elements) hold every ordered pair of the n edge values. */
static void set_edge_pairs(cf_operand *a, cf_operand *b, int n)
{
    size_t sz = ff_dtype_size(a->dtype);
    void *va = calloc((size_t)n * (size_t)n, sz), *vb = calloc((size_t)n * (size_t)n, sz);
    if (!va || !vb) abort();
    for (int i = 0; i < n * n; i++) {
        cf_set_edge(va, a->dtype, i, i / n);
        cf_set_edge(vb, b->dtype, i, i % n);
    }
    cf_operand_scatter(a, va);
    cf_operand_scatter(b, vb);
    free(va);
    free(vb);
}

static bool unary_writes_bool(int op)
{
    return op == FF_UNARY_ISNAN || op == FF_UNARY_ISINF || op == FF_UNARY_LOGICAL_NOT;
}

/* Fill values per dtype: the edges of each type. */
static ff_scalar fill_value(ff_dtype dt, int v)
{
    ff_scalar s = {0, 0};
    if (ff_dtype_is_float(dt)) {
        const double f[] = {NAN, -INFINITY, -0.0, cf_dtype_true_min(dt)};
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
        o.cls = cf_unary_tol(op), o.expect = cf_unary_expect, o.zero_sign = true;
        break;
    case SP_BINARY:
        c.kind = FF_KIND_BINARY, c.nops = 3;
        cf_operand_init(&c.o[1], "a", dt, 1, pairs, CF_L_CONTIG, false, &rng, CF_DOM_SPECIAL);
        cf_operand_init(&c.o[2], "b", dt, 1, pairs, CF_L_OFFSET, false, &rng, CF_DOM_SPECIAL);
        cf_operand_init(&c.o[0], "dst", ff_binary_op_writes_bool((ff_binary_op)op) ? FF_BOOL : dt, 1, pairs, CF_L_CONTIG, true, &rng,
                        CF_DOM_SIGNED);
        o.cls = cf_binary_tol(op), o.expect = cf_binary_expect, o.zero_sign = true;
        break;
    case SP_UNARY_EDGES:
    case SP_UNARY_EDGES_INPLACE: {
        bool inplace = what == SP_UNARY_EDGES_INPLACE;
        int nd = inplace ? 2 : 1;
        const int64_t *shape = inplace ? edges_grid : edges_len;
        c.kind = FF_KIND_UNARY, c.nops = 2;
        cf_operand_init(&c.o[1], "src", dt, nd, shape, inplace ? CF_L_STEPPED : CF_L_CONTIG, false, &rng, CF_DOM_SPECIAL);
        set_edges(&c.o[1]);
        if (inplace) cf_operand_alias(&c.o[0], "dst", &c.o[1], 1);
        else
            cf_operand_init(&c.o[0], "dst", unary_writes_bool(op) ? FF_BOOL : dt, nd, shape, CF_L_CONTIG, true, &rng,
                            CF_DOM_SIGNED);
        o.cls = cf_unary_tol(op), o.expect = cf_unary_expect, o.zero_sign = true;
        break;
    }
    case SP_BINARY_EDGES: {
        int ne = cf_edge_count(dt);
        const int64_t n2[] = {(int64_t)ne * ne};
        c.kind = FF_KIND_BINARY, c.nops = 3;
        cf_operand_init(&c.o[1], "a", dt, 1, n2, CF_L_CONTIG, false, &rng, CF_DOM_SPECIAL);
        cf_operand_init(&c.o[2], "b", dt, 1, n2, CF_L_OFFSET, false, &rng, CF_DOM_SPECIAL);
        set_edge_pairs(&c.o[1], &c.o[2], ne);
        cf_operand_init(&c.o[0], "dst", ff_binary_op_writes_bool((ff_binary_op)op) ? FF_BOOL : dt, 1, n2, CF_L_CONTIG,
                        true, &rng, CF_DOM_SIGNED);
        o.cls = cf_binary_tol(op), o.expect = cf_binary_expect, o.zero_sign = true;
        break;
    }
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
    case SP_REDUCE_ZEROS: {
        int z = cs->p[2];
        cf_domain dom = op == FF_REDUCE_MAX || op == FF_REDUCE_ARGMAX ? CF_DOM_ZEROS_BELOW : CF_DOM_ZEROS_ABOVE;
        return cf_reduce_run(ctx, cs, op, zero_scens[z].ndim, zero_scens[z].shape, zero_scens[z].mask, CF_L_CONTIG,
                             CF_L_CONTIG, dom, rep);
    }
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
    /* the edges of every dtype into the storage-only I8/I16 (the loop below covers the
     * other destinations): wrap-around, NaN -> 0, saturation before the wrap */
    static const ff_dtype narrow[] = {FF_I8, FF_I16};
    for (int di = 0; di < 2; di++)
        for (int sj = 0; sj < CF_NSTORAGE_DTYPES; sj++) {
            ff_dtype src = cf_storage_dtypes[sj], dt = narrow[di];
            if (!cf_ref_computes(FF_KIND_COPY, (int)src, dt)) continue;
            snprintf(name, sizeof name, "copy_%s_to_%s", ff_dtype_name(src), ff_dtype_name(dt));
            add(SP_COPY, FF_KIND_COPY, (int)src, (int)src, dt, name);
        }
    for (int di = 0; di < CF_NDTYPES; di++) {
        ff_dtype dt = cf_all_dtypes[di];
        for (int op = 0; op < FF_UNARY_COUNT; op++) {
            if (!cf_ref_computes(FF_KIND_UNARY, op, dt)) continue;
            add(SP_UNARY, FF_KIND_UNARY, op, op, dt, cf_unary_name(op));
            snprintf(name, sizeof name, "%s_edges", cf_unary_name(op));
            add(SP_UNARY_EDGES, FF_KIND_UNARY, op, op, dt, name);
            if (!(unary_writes_bool(op) && dt != FF_BOOL)) { /* in place needs dst's dtype == src's */
                snprintf(name, sizeof name, "%s_edges_inplace", cf_unary_name(op));
                add(SP_UNARY_EDGES_INPLACE, FF_KIND_UNARY, op, op, dt, name);
            }
        }
        for (int op = 0; op < FF_BINARY_COUNT; op++) {
            if (!cf_ref_computes(FF_KIND_BINARY, op, dt)) continue;
            add(SP_BINARY, FF_KIND_BINARY, op, op, dt, cf_binary_name(op));
            snprintf(name, sizeof name, "%s_edges", cf_binary_name(op));
            add(SP_BINARY_EDGES, FF_KIND_BINARY, op, op, dt, name);
        }
        for (int sj = 0; sj < CF_NSTORAGE_DTYPES; sj++) { /* from I8/I16 too (storage only) */
            ff_dtype src = cf_storage_dtypes[sj];
            if (!cf_ref_computes(FF_KIND_COPY, (int)src, dt)) continue;
            snprintf(name, sizeof name, "copy_%s_to_%s", ff_dtype_name(src), ff_dtype_name(dt));
            add(SP_COPY, FF_KIND_COPY, (int)src, (int)src, dt, name);
        }
        /* NaN semantics of the extremes and of any/all; sums of specials are in the
         * README as "not compared" (accumulation order decides overflow) */
        for (int op = FF_REDUCE_MAX; op < FF_REDUCE_COUNT; op++)
            if (cf_ref_computes(FF_KIND_REDUCE, op, dt)) {
                snprintf(name, sizeof name, "reduce_%s", cf_reduce_name(op));
                add(SP_REDUCE, FF_KIND_REDUCE, op, op, dt, name);
            }
        for (int op = FF_REDUCE_MAX; op <= FF_REDUCE_ARGMIN && ff_dtype_is_float(dt); op++) {
            if (!cf_ref_computes(FF_KIND_REDUCE, op, dt)) continue;
            for (int z = 0; z < (int)(sizeof zero_scens / sizeof zero_scens[0]); z++) {
                cf_case c = {.family = "special", .dtype = dt, .level = CF_LEVEL_VTABLE, .run = run,
                             .kind = FF_KIND_REDUCE, .opcode = op, .p = {SP_REDUCE_ZEROS, op, z}};
                snprintf(c.op, sizeof c.op, "reduce_%s_signed_zeros", cf_reduce_name(op));
                snprintf(c.id, sizeof c.id, "special.%s.%s.%s", c.op, ff_dtype_name(dt), zero_scens[z].name);
                cf_register(&c);
            }
        }
        if (dt != FF_BOOL && cf_ref_computes(FF_KIND_FILL, 0, dt))
            for (int v = 0; v < 4; v++) {
                snprintf(name, sizeof name, "fill_v%d", v);
                add(SP_FILL, FF_KIND_FILL, v, 0, dt, name);
            }
    }
}
