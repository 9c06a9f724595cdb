/* Vtable family "reduce": every reduce op x every source dtype x axis patterns and
 * layouts (dst in keepdim form, as the ABI says). Closed form: a host reduction in
 * long double / wrapping int64; sums compare with the tolerance scaled by the
 * reduced length. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>

#include "cf.h"
#include "cf_families.h"
#include "cf_scenario.h"

typedef struct red_scen {
    const char *name;
    int ndim;
    int64_t shape[4];
    uint32_t mask;
    cf_layout_kind src, dst;
    int exactness; /* 1: one_then_tiny (float SUM); 2: bigint (integer SUM and PROD) */
} red_scen;

static const red_scen scens[] = {
    {"scalar", 0, {0}, 0, CF_L_CONTIG, CF_L_CONTIG, 0},
    {"n1", 1, {1}, 1, CF_L_CONTIG, CF_L_OFFSET, 0},
    {"n7", 1, {7}, 1, CF_L_OFFSET, CF_L_CONTIG, 0},
    {"n17", 1, {17}, 1, CF_L_CONTIG, CF_L_CONTIG, 0},
    {"n257", 1, {257}, 1, CF_L_CONTIG, CF_L_CONTIG, 0},
    {"rows5x7", 2, {5, 7}, 2, CF_L_CONTIG, CF_L_CONTIG, 0},
    {"cols5x7", 2, {5, 7}, 1, CF_L_CONTIG, CF_L_OFFSET, 0},
    {"nomask4x3", 2, {4, 3}, 0, CF_L_CONTIG, CF_L_STEPPED, 0},
    {"rows3x67", 2, {3, 67}, 2, CF_L_OFFSET, CF_L_TRANSPOSED, 0},
    {"mid3x4x5", 3, {3, 4, 5}, 2, CF_L_CONTIG, CF_L_CONTIG, 0},
    {"transposed6x5", 2, {6, 5}, 2, CF_L_TRANSPOSED, CF_L_CONTIG, 0},
    {"stepped4x6", 2, {4, 6}, 1, CF_L_STEPPED, CF_L_STEPPED, 0},
    {"bcast4x6", 2, {4, 6}, 1, CF_L_BCAST0, CF_L_CONTIG, 0},
    {"size1dims1x5x1", 3, {1, 5, 1}, 4, CF_L_CONTIG, CF_L_OFFSET, 0},
    /* several axes (not for ARG*) */
    {"all5x7", 2, {5, 7}, 3, CF_L_CONTIG, CF_L_CONTIG, 0},
    {"outer3x4x5", 3, {3, 4, 5}, 5, CF_L_TRANSPOSED, CF_L_OFFSET, 0},
    {"all2x3x2x3", 4, {2, 3, 2, 3}, 15, CF_L_STEPPED, CF_L_CONTIG, 0},
    /* empty sets (not for MAX/MIN/ARG*) */
    {"empty3x0", 2, {3, 0}, 2, CF_L_CONTIG, CF_L_CONTIG, 0},
    {"empty0", 1, {0}, 1, CF_L_CONTIG, CF_L_CONTIG, 0},
    /* sums an accumulator in the source dtype gets wrong: floats whose running sum stays at
     * 1 (checked to 1e-5, not the length-scaled tolerance), integers past 2^53 (exact) */
    {"one_then_tiny_n1000003", 1, {1000003}, 1, CF_L_CONTIG, CF_L_CONTIG, 1},
    {"bigint_rows3x1001", 2, {3, 1001}, 2, CF_L_OFFSET, CF_L_CONTIG, 2},
    {"bigint_prod_n3", 1, {3}, 1, CF_L_CONTIG, CF_L_CONTIG, 2},
    /* big: f32 SUM/MAX only */
    {"big", 1, {CF_BIG}, 1, CF_L_CONTIG, CF_L_CONTIG, 0},
    {"big_rows1024x1024", 2, {1024, 1024}, 2, CF_L_TRANSPOSED, CF_L_CONTIG, 0},
};
#define NSCEN ((int)(sizeof scens / sizeof scens[0]))

static bool is_arg(int op) { return op == FF_REDUCE_ARGMAX || op == FF_REDUCE_ARGMIN; }
static int popcount(uint32_t m) { int n = 0; for (; m; m &= m - 1) n++; return n; }

static ff_dtype dst_dtype(int op, ff_dtype src)
{
    switch (op) {
    case FF_REDUCE_SUM: case FF_REDUCE_PROD: return ff_dtype_is_float(src) ? src : FF_I64;
    case FF_REDUCE_MAX: case FF_REDUCE_MIN: return src;
    case FF_REDUCE_ARGMAX: case FF_REDUCE_ARGMIN: return FF_I64;
    default: return FF_BOOL;
    }
}

static int64_t reduced_len(const cf_operand *s, uint32_t mask)
{
    int64_t k = 1;
    for (int d = 0; d < s->ndim; d++)
        if ((mask >> d) & 1u) k *= s->shape[d];
    return k;
}

void *cf_reduce_expect(const cf_call *c, const void *user)
{
    (void)user;
    const cf_operand *d = &c->o[0], *s = &c->o[1];
    int op = c->op;
    int64_t nd = cf_numel(d->ndim, d->shape), ns = cf_numel(s->ndim, s->shape);
    long double *f = calloc((size_t)(nd ? nd : 1), sizeof *f);
    int64_t *iv = calloc((size_t)(nd ? nd : 1), sizeof *iv), *arg = calloc((size_t)(nd ? nd : 1), sizeof *arg);
    bool *seen = calloc((size_t)(nd ? nd : 1), 1);
    void *in = cf_operand_values(s);
    void *out = calloc((size_t)(nd ? nd : 1), ff_dtype_size(d->dtype));
    if (!f || !iv || !arg || !seen || !out) abort();
    bool fl = ff_dtype_is_float(s->dtype);
    for (int64_t j = 0; j < nd; j++) {
        f[j] = op == FF_REDUCE_PROD ? 1 : 0;
        iv[j] = op == FF_REDUCE_PROD || op == FF_REDUCE_ALL;
    }
    for (int64_t i = 0; i < ns; i++) {
        /* multi-index of src element i, its dst element and its position k along
         * the (single, for ARG*) reduced axis */
        int64_t rem = i, j = 0, mul = 1, k = 0;
        for (int dd = s->ndim - 1; dd >= 0; dd--) {
            int64_t idx = rem % s->shape[dd];
            rem /= s->shape[dd];
            if ((c->mask >> dd) & 1u) k = idx;
            else j += idx * mul;
            mul *= d->shape[dd];
        }
        double x = cf_get_f(in, s->dtype, i);
        int64_t xi = cf_get_i(in, s->dtype, i);
        switch (op) {
        case FF_REDUCE_SUM:
            if (fl) f[j] += x;
            else iv[j] = (int64_t)((uint64_t)iv[j] + (uint64_t)xi);
            break;
        case FF_REDUCE_PROD:
            if (fl) f[j] *= x;
            else iv[j] = (int64_t)((uint64_t)iv[j] * (uint64_t)xi);
            break;
        case FF_REDUCE_MAX: case FF_REDUCE_MIN: case FF_REDUCE_ARGMAX: case FF_REDUCE_ARGMIN: {
            bool mx = op == FF_REDUCE_MAX || op == FF_REDUCE_ARGMAX;
            bool better;
            if (!seen[j]) better = true;
            else if (fl) better = !isnan((double)f[j]) && (isnan(x) || (mx ? x > f[j] : x < f[j]));
            else better = mx ? xi > iv[j] : xi < iv[j];
            if (better) f[j] = x, iv[j] = xi, arg[j] = k;
            seen[j] = true;
            break;
        }
        case FF_REDUCE_ANY: if (fl ? x != 0 : xi != 0) iv[j] = 1; break;
        case FF_REDUCE_ALL: if (fl ? x == 0 : xi == 0) iv[j] = 0; break;
        default: break;
        }
    }
    for (int64_t j = 0; j < nd; j++) {
        if (is_arg(op)) cf_set_i(out, d->dtype, j, arg[j]);
        else if (op == FF_REDUCE_ANY || op == FF_REDUCE_ALL) cf_set_i(out, d->dtype, j, iv[j]);
        else if (fl) cf_set_f(out, d->dtype, j, (double)f[j]);
        else cf_set_i(out, d->dtype, j, iv[j]);
    }
    free(f);
    free(iv);
    free(arg);
    free(seen);
    free(in);
    return out;
}

static cf_domain domain(int op, ff_dtype dt)
{
    switch (op) {
    case FF_REDUCE_SUM: return CF_DOM_UNIT;
    case FF_REDUCE_PROD: return ff_dtype_is_float(dt) ? CF_DOM_NEAR1 : CF_DOM_UNIT;
    case FF_REDUCE_ANY: case FF_REDUCE_ALL: return CF_DOM_SMALLINT;
    default: return ff_dtype_is_float(dt) ? CF_DOM_SIGNED : CF_DOM_SMALLINT; /* ties: first index wins */
    }
}

/* Shared with the special-values family: builds and checks one reduction. */
cf_result cf_reduce_run(cf_ctx *ctx, const cf_case *cs, int op, int ndim, const int64_t *shape, uint32_t mask,
                        cf_layout_kind lsrc, cf_layout_kind ldst, cf_domain dom, cf_report *rep)
{
    cf_rng rng;
    cf_rng_init(&rng, cf_case_seed(ctx, cs));
    cf_call c = {.kind = FF_KIND_REDUCE, .op = op, .mask = mask, .nops = 2};
    int64_t dshape[FF_MAX_DIMS];
    for (int d = 0; d < ndim; d++) dshape[d] = (mask >> d) & 1u ? 1 : shape[d];
    cf_operand_init(&c.o[1], "src", cs->dtype, ndim, shape, lsrc, false, &rng, dom);
    cf_operand_init(&c.o[0], "dst", dst_dtype(op, cs->dtype), ndim, dshape, ldst, true, &rng, CF_DOM_SIGNED);
    int64_t k = reduced_len(&c.o[1], mask);
    cf_tol_class cls = op == FF_REDUCE_SUM ? CF_TOL_ACCUM : op == FF_REDUCE_PROD ? CF_TOL_PROD : CF_TOL_EXACT;
    cf_check_opts o = {.cls = cls, .k = k, .expect = cf_reduce_expect};
    cf_result r = cf_check_call(ctx, cs, &c, &o, rep);
    cf_call_free(&c);
    return r;
}

static cf_result run(cf_ctx *ctx, const cf_case *cs, cf_report *rep)
{
    const red_scen *s = &scens[cs->p[1]];
    if (s->exactness == 1) { /* tight: the length-scaled atol would forgive a running f32 sum */
        cf_rng rng;
        cf_rng_init(&rng, cf_case_seed(ctx, cs));
        cf_call c = {.kind = FF_KIND_REDUCE, .op = cs->p[0], .mask = s->mask, .nops = 2};
        int64_t one = 1;
        cf_operand_init(&c.o[1], "src", cs->dtype, s->ndim, s->shape, s->src, false, &rng, CF_DOM_ONE_THEN_TINY);
        cf_operand_init(&c.o[0], "dst", cs->dtype, 1, &one, s->dst, true, &rng, CF_DOM_SIGNED);
        cf_check_opts o = {.cls = CF_TOL_TRANSCEND, .k = 1, .expect = cf_reduce_expect};
        cf_result r = cf_check_call(ctx, cs, &c, &o, rep);
        cf_call_free(&c);
        return r;
    }
    cf_domain dom = s->exactness != 2 ? domain(cs->p[0], cs->dtype) : strstr(s->name, "prod") ? CF_DOM_BIGPROD : CF_DOM_BIGINT;
    return cf_reduce_run(ctx, cs, cs->p[0], s->ndim, s->shape, s->mask, s->src, s->dst, dom, rep);
}

void cf_gen_reduce(void)
{
    for (int op = 0; op < FF_REDUCE_COUNT; op++) {
        for (int di = 0; di < CF_NDTYPES; di++) {
            ff_dtype dt = cf_all_dtypes[di];
            if (!cf_ref_computes(FF_KIND_REDUCE, op, dt)) continue;
            for (int si = 0; si < NSCEN; si++) {
                const red_scen *s = &scens[si];
                bool empty = cf_numel(s->ndim, s->shape) == 0;
                if (is_arg(op) && popcount(s->mask) > 1) continue;
                if (empty && (op == FF_REDUCE_MAX || op == FF_REDUCE_MIN || is_arg(op))) continue;
                if (s->shape[0] == CF_BIG || s->shape[0] == 1024)
                    if (!(dt == FF_F32 && (op == FF_REDUCE_SUM || op == FF_REDUCE_MAX))) continue;
                /* f32 only: the reference itself sums f64 with a plain f64 accumulator */
                if (s->exactness == 1 && !(op == FF_REDUCE_SUM && dt == FF_F32)) continue;
                bool prod_scen = s->exactness == 2 && strstr(s->name, "prod") != NULL;
                if (s->exactness == 2 && !((dt == FF_I64 || dt == FF_I32) &&
                                           op == (prod_scen ? FF_REDUCE_PROD : FF_REDUCE_SUM)))
                    continue;
                cf_case c = {.family = "reduce", .dtype = dt, .level = CF_LEVEL_VTABLE, .run = run,
                             .kind = FF_KIND_REDUCE, .opcode = op, .p = {op, si}};
                snprintf(c.op, sizeof c.op, "%s", cf_reduce_name(op));
                snprintf(c.id, sizeof c.id, "reduce.%s.%s.%s", c.op, ff_dtype_name(dt), s->name);
                cf_register(&c);
            }
        }
    }
}
