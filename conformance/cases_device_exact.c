/* Family "device", the exact-count part: bugs that device backends have and that a
 * small case forgives, given cases big enough and exact enough to show them.
 *
 *   scatter_add_contended  2^20 ones (f32: 0.25s) scattered into one slot, or into three:
 *                          a scatter with one work-item per element and no atomic add
 *                          loses updates only when many items hit the same slot at once
 *                          (a small case runs in one work-group, in order, and passes);
 *                          the count must be exact.
 *   sum_prime              sums of prime lengths past every split size a device reduction
 *                          uses (a chunk per work-group, a second pass over the chunks): a
 *                          pass that drops the last, partial chunk drops thousands of
 *                          positive values, whatever the tolerance.
 *   uniform_fma            uniform samples p0 + (p1 - p0) * u with spans that are not powers
 *                          of two, so that a fused multiply-add (FP_CONTRACT on in a kernel)
 *                          rounds differently from the ABI's multiply-then-add in many
 *                          elements; the ABI fixes the bits, so the compare is exact. */
#include <stdio.h>
#include <stdlib.h>

#include "cf.h"
#include "cf_families.h"

#define NSCATTER (1 << 20)

static void *scatter_expect(const cf_call *c, const void *user)
{
    (void)user;
    const cf_operand *d = &c->o[0];
    int64_t n = cf_numel(d->ndim, d->shape), ns = cf_numel(c->o[2].ndim, c->o[2].shape);
    void *out = calloc((size_t)n, ff_dtype_size(d->dtype));
    if (!out) abort();
    double one = d->dtype == FF_F32 ? 0.25 : 1.0;
    for (int64_t s = 0; s < n; s++) { /* dst starts at 3; slot s gets every n-th element */
        int64_t hits = ns / n + (s < ns % n);
        if (ff_dtype_is_float(d->dtype)) cf_set_f(out, d->dtype, s, 3.0 + one * (double)hits);
        else cf_set_i(out, d->dtype, s, 3 + hits);
    }
    return out;
}

static cf_result run_scatter(cf_ctx *ctx, const cf_case *cs, cf_report *rep)
{
    int64_t slots = cs->p[0], n = NSCATTER;
    cf_rng rng;
    cf_rng_init(&rng, cf_case_seed(ctx, cs));
    cf_call c = {.kind = FF_KIND_SCATTER_ADD, .axis = 0, .nops = 3};
    cf_operand_init(&c.o[1], "index", FF_I64, 1, &n, CF_L_CONTIG, false, &rng, CF_DOM_SMALLINT);
    cf_operand_init(&c.o[2], "src", cs->dtype, 1, &n, CF_L_CONTIG, false, &rng, CF_DOM_SIGNED);
    cf_operand_init(&c.o[0], "dst", cs->dtype, 1, &slots, CF_L_CONTIG, true, &rng, CF_DOM_SIGNED);
    int64_t *ix = malloc((size_t)n * sizeof *ix);
    void *src = malloc((size_t)n * ff_dtype_size(cs->dtype));
    void *dst0 = malloc((size_t)slots * ff_dtype_size(cs->dtype));
    if (!ix || !src || !dst0) abort();
    for (int64_t i = 0; i < n; i++) {
        ix[i] = i % slots;
        if (ff_dtype_is_float(cs->dtype)) cf_set_f(src, cs->dtype, i, cs->dtype == FF_F32 ? 0.25 : 1.0);
        else cf_set_i(src, cs->dtype, i, 1);
    }
    for (int64_t s = 0; s < slots; s++) cf_set_i(dst0, cs->dtype, s, 3);
    cf_operand_scatter(&c.o[1], ix);
    cf_operand_scatter(&c.o[2], src);
    cf_operand_scatter(&c.o[0], dst0); /* scatter_add reads dst */
    cf_check_opts o = {.cls = CF_TOL_EXACT, .expect = scatter_expect};
    cf_result r = cf_check_call(ctx, cs, &c, &o, rep);
    free(ix);
    free(src);
    free(dst0);
    cf_call_free(&c);
    return r;
}

/* Lengths: primes past 8192 (where a 256-wide reduction starts splitting a row into
 * chunks) up to 2^20 and beyond, and rows of a matrix (few rows: split too). */
typedef struct sum_scen {
    const char *name;
    int ndim;
    int64_t shape[2];
    uint32_t mask;
} sum_scen;

static const sum_scen sums[] = {
    {"n8209", 1, {8209}, 1},
    {"n40009", 1, {40009}, 1},
    {"n262147", 1, {262147}, 1},
    {"n1048583", 1, {1048583}, 1},
    {"rows3x100003", 2, {3, 100003}, 2},
    {"cols65537x2", 2, {65537, 2}, 1},
};
#define NSUMS ((int)(sizeof sums / sizeof sums[0]))

static cf_result run_sum(cf_ctx *ctx, const cf_case *cs, cf_report *rep)
{
    const sum_scen *s = &sums[cs->p[0]];
    /* positive values: a dropped chunk cannot sum to zero by chance */
    return cf_reduce_run(ctx, cs, FF_REDUCE_SUM, s->ndim, s->shape, s->mask, CF_L_CONTIG, CF_L_CONTIG,
                         CF_DOM_POSITIVE, rep);
}

typedef struct fma_scen {
    const char *name;
    int64_t n;
    double p0, p1;
} fma_scen;

static const fma_scen fmas[] = {
    {"span10_n4099", 4099, -3, 7},
    {"span0.6_n65537", 65537, 0.1, 0.7},
    {"span1000_n1000", 1000, -1000, 0.001},
    {"thirds_n33331", 33331, 1.0 / 3, 5.0 / 7},
    {"offset1e6_n2053", 2053, 1e6, 1e6 + 3},
};
#define NFMAS ((int)(sizeof fmas / sizeof fmas[0]))

static void *uniform_expect(const cf_call *c, const void *user)
{
    (void)user;
    const cf_operand *d = &c->o[0];
    int64_t n = cf_numel(d->ndim, d->shape);
    void *out = malloc((size_t)n * ff_dtype_size(d->dtype));
    if (!out) abort();
    for (int64_t i = 0; i < n; i++) { /* backend_abi.h: multiply, then add, in double */
        uint64_t ctr = c->rcounter + (uint64_t)i;
        double v = d->dtype == FF_F32 ? (double)ff_random_uniform_f32(c->rseed, ctr, c->p0, c->p1)
                                      : c->p0 + (c->p1 - c->p0) * ff_random_uniform01(c->rseed, ctr);
        cf_set_f(out, d->dtype, i, v);
    }
    return out;
}

static cf_result run_uniform(cf_ctx *ctx, const cf_case *cs, cf_report *rep)
{
    const fma_scen *s = &fmas[cs->p[0]];
    cf_rng rng;
    cf_rng_init(&rng, cf_case_seed(ctx, cs));
    cf_call c = {.kind = FF_KIND_RANDOM, .op = FF_RANDOM_UNIFORM, .nops = 1, .rseed = 77 ^ ctx->seed,
                 .rcounter = 12345, .p0 = s->p0, .p1 = s->p1};
    cf_operand_init(&c.o[0], "dst", cs->dtype, 1, &s->n, CF_L_CONTIG, true, &rng, CF_DOM_SIGNED);
    cf_check_opts o = {.cls = CF_TOL_EXACT, .expect = uniform_expect};
    cf_result r = cf_check_call(ctx, cs, &c, &o, rep);
    cf_call_free(&c);
    return r;
}

static void add(const char *op, ff_dtype dt, const char *scen, cf_run_fn run, int kind, int opcode, int p0)
{
    cf_case c = {.family = "device", .dtype = dt, .level = CF_LEVEL_VTABLE, .run = run, .kind = kind,
                 .opcode = opcode, .p = {p0}};
    snprintf(c.op, sizeof c.op, "%s", op);
    snprintf(c.id, sizeof c.id, "device.%s.%s.%s", op, ff_dtype_name(dt), scen);
    cf_register(&c);
}

void cf_gen_device_exact(void)
{
    static const ff_dtype scatter_dt[] = {FF_I32, FF_I64, FF_F32, FF_F64};
    for (int i = 0; i < 4; i++) {
        if (!cf_ref_supports(FF_KIND_SCATTER_ADD, 0, scatter_dt[i])) continue;
        add("scatter_add_contended", scatter_dt[i], "one_slot", run_scatter, FF_KIND_SCATTER_ADD, 0, 1);
        add("scatter_add_contended", scatter_dt[i], "three_slots", run_scatter, FF_KIND_SCATTER_ADD, 0, 3);
    }
    static const ff_dtype sum_dt[] = {FF_I64, FF_I32, FF_F64};
    for (int i = 0; i < 3; i++)
        for (int s = 0; s < NSUMS; s++)
            if (cf_ref_supports(FF_KIND_REDUCE, FF_REDUCE_SUM, sum_dt[i]))
                add("sum_prime", sum_dt[i], sums[s].name, run_sum, FF_KIND_REDUCE, FF_REDUCE_SUM, s);
    static const ff_dtype fma_dt[] = {FF_F64, FF_F32};
    for (int i = 0; i < 2; i++)
        for (int s = 0; s < NFMAS; s++)
            if (cf_ref_supports(FF_KIND_RANDOM, FF_RANDOM_UNIFORM, fma_dt[i]))
                add("uniform_fma", fma_dt[i], fmas[s].name, run_uniform, FF_KIND_RANDOM, FF_RANDOM_UNIFORM, s);
}
