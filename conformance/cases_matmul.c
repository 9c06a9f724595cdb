/* Vtable family "matmul": batched dst[..., M, N] = a[..., M, K] @ b[..., K, N] for
 * every dtype the reference accepts x shapes (odd/prime sizes, K = 0, M = 0, gemv,
 * batches, broadcast batch) x layouts (transposed operands, stepped, offset). The
 * closed form is a host triple loop in long double (wrapping uint64 for integers);
 * the "identity" scenarios multiply by I, whose result is exact in any order. */
#include <stdio.h>
#include <stdlib.h>

#include "cf.h"
#include "cf_scenario.h"

typedef struct mm_scen {
    const char *name;
    int nbatch;
    int64_t batch[2];
    int64_t m, k, n;
    cf_layout_kind la, lb, ld;
    bool identity; /* b = I (k == n) */
    bool edges;    /* NaN, +-inf and subnormals among the values (edge_values) */
} mm_scen;

static const mm_scen scens[] = {
    {"1x1x1", 0, {0}, 1, 1, 1, CF_L_CONTIG, CF_L_CONTIG, CF_L_CONTIG, false, false},
    {"2x3x4", 0, {0}, 2, 3, 4, CF_L_CONTIG, CF_L_CONTIG, CF_L_CONTIG, false, false},
    {"7x5x3", 0, {0}, 7, 5, 3, CF_L_OFFSET, CF_L_CONTIG, CF_L_OFFSET, false, false},
    {"17x31x9", 0, {0}, 17, 31, 9, CF_L_CONTIG, CF_L_CONTIG, CF_L_CONTIG, false, false},
    {"gemv1x67x3", 0, {0}, 1, 67, 3, CF_L_CONTIG, CF_L_TRANSPOSED, CF_L_CONTIG, false, false},
    {"col5x7x1", 0, {0}, 5, 7, 1, CF_L_TRANSPOSED, CF_L_CONTIG, CF_L_CONTIG, false, false},
    {"k0_3x0x4", 0, {0}, 3, 0, 4, CF_L_CONTIG, CF_L_CONTIG, CF_L_CONTIG, false, false},
    {"m0_0x3x4", 0, {0}, 0, 3, 4, CF_L_CONTIG, CF_L_CONTIG, CF_L_CONTIG, false, false},
    {"aT6x5x4", 0, {0}, 6, 5, 4, CF_L_TRANSPOSED, CF_L_CONTIG, CF_L_CONTIG, false, false},
    {"bT6x5x4", 0, {0}, 6, 5, 4, CF_L_CONTIG, CF_L_TRANSPOSED, CF_L_CONTIG, false, false},
    {"abT9x8x7", 0, {0}, 9, 8, 7, CF_L_TRANSPOSED, CF_L_TRANSPOSED, CF_L_TRANSPOSED, false, false},
    {"stepped4x6x5", 0, {0}, 4, 6, 5, CF_L_STEPPED, CF_L_OFFSET, CF_L_STEPPED, false, false},
    /* narrowed matrices (row stride > width), large enough for every backend's BLAS path */
    {"padded_rows70x50x90", 0, {0}, 70, 50, 90, CF_L_PADDED, CF_L_PADDED, CF_L_PADDED, false, false},
    {"padded_a_bT66x40x72", 0, {0}, 66, 40, 72, CF_L_PADDED, CF_L_TRANSPOSED, CF_L_CONTIG, false, false},
    {"batch_padded2_33x20x48", 1, {2}, 33, 20, 48, CF_L_PADDED, CF_L_PADDED, CF_L_PADDED, false, false},
    {"batch2x3_4x5x6", 2, {2, 3}, 4, 5, 6, CF_L_CONTIG, CF_L_CONTIG, CF_L_CONTIG, false, false},
    {"batchT3_5x4x3", 1, {3}, 5, 4, 3, CF_L_TRANSPOSED, CF_L_STEPPED, CF_L_OFFSET, false, false},
    {"bcast_batch4_3x5x2", 1, {4}, 3, 5, 2, CF_L_BCAST0, CF_L_CONTIG, CF_L_CONTIG, false, false},
    {"identity7x5x5", 0, {0}, 7, 5, 5, CF_L_CONTIG, CF_L_CONTIG, CF_L_CONTIG, true, false},
    {"identityT3_4x6x6", 1, {3}, 4, 6, 6, CF_L_TRANSPOSED, CF_L_BCAST0, CF_L_CONTIG, true, false},
    {"big128x256x64", 0, {0}, 128, 256, 64, CF_L_CONTIG, CF_L_CONTIG, CF_L_CONTIG, false, false},
    {"bigT96x160x80", 0, {0}, 96, 160, 80, CF_L_TRANSPOSED, CF_L_TRANSPOSED, CF_L_CONTIG, false, false},
    /* NaN and inf must come out where the exact product has them: inf * subnormal is inf
     * (a kernel that reads subnormals as zero makes it NaN); small, and past 2^18
     * multiply-adds, where a backend may switch to another kernel (cpu_blas: bf16 dot) */
    {"edges7x9x5", 0, {0}, 7, 9, 5, CF_L_CONTIG, CF_L_TRANSPOSED, CF_L_CONTIG, false, true},
    {"edges64x64x64", 0, {0}, 64, 64, 64, CF_L_CONTIG, CF_L_CONTIG, CF_L_CONTIG, false, true},
};
#define NSCEN ((int)(sizeof scens / sizeof scens[0]))

static void *expect(const cf_call *c, const void *user)
{
    (void)user;
    const cf_operand *d = &c->o[0], *a = &c->o[1], *b = &c->o[2];
    int r = d->ndim;
    int64_t m = d->shape[r - 2], n = d->shape[r - 1], k = a->shape[r - 1];
    int64_t nb = cf_numel(r - 2, d->shape), nd = cf_numel(r, d->shape);
    void *va = cf_operand_values(a), *vb = cf_operand_values(b);
    void *out = calloc((size_t)(nd ? nd : 1), ff_dtype_size(d->dtype));
    if (!out) abort();
    bool fl = ff_dtype_is_float(d->dtype);
    for (int64_t bi = 0; bi < nb; bi++)
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) {
                long double acc = 0;
                uint64_t iacc = 0;
                for (int64_t p = 0; p < k; p++) {
                    int64_t ia = (bi * m + i) * k + p, ib = (bi * k + p) * n + j;
                    if (fl) acc += (long double)cf_get_f(va, a->dtype, ia) * cf_get_f(vb, b->dtype, ib);
                    else iacc += (uint64_t)cf_get_i(va, a->dtype, ia) * (uint64_t)cf_get_i(vb, b->dtype, ib);
                }
                int64_t o = (bi * m + i) * n + j;
                if (fl) cf_set_f(out, d->dtype, o, (double)acc);
                else cf_set_i(out, d->dtype, o, (int64_t)iacc);
            }
    free(va);
    free(vb);
    return out;
}

/* Operand o's values in [-1, 1] with some replaced: in a, one in 16 a NaN, +-inf or a
 * subnormal; in b, one in 8 a subnormal of either sign or a zero. No value near the top
 * of the range: whether such sums overflow depends on the summation order. */
static void edge_values(cf_operand *o, bool is_a, cf_rng *rng)
{
    int64_t n = cf_numel(o->ndim, o->shape);
    void *v = cf_operand_values(o);
    double tiny = cf_dtype_true_min(o->dtype) * 3;
    const double av[] = {NAN, INFINITY, -INFINITY, tiny}, bv[] = {tiny, -tiny, 0.0, -0.0};
    for (int64_t i = 0; i < n; i++) {
        uint64_t u = cf_rng_u64(rng);
        if (u % (is_a ? 16 : 8) == 0) cf_set_f(v, o->dtype, i, (is_a ? av : bv)[(u >> 8) % 4]);
    }
    cf_operand_scatter(o, v);
    free(v);
}

static cf_result run(cf_ctx *ctx, const cf_case *cs, cf_report *rep)
{
    const mm_scen *s = &scens[cs->p[1]];
    cf_rng rng;
    cf_rng_init(&rng, cf_case_seed(ctx, cs));
    int r = s->nbatch + 2;
    int64_t sa[FF_MAX_DIMS], sb[FF_MAX_DIMS], sd[FF_MAX_DIMS];
    for (int i = 0; i < s->nbatch; i++) sa[i] = sb[i] = sd[i] = s->batch[i];
    sa[r - 2] = s->m, sa[r - 1] = s->k;
    sb[r - 2] = s->k, sb[r - 1] = s->n;
    sd[r - 2] = s->m, sd[r - 1] = s->n;
    cf_call c = {.kind = FF_KIND_MATMUL, .nops = 3};
    cf_operand_init(&c.o[1], "a", cs->dtype, r, sa, s->la, false, &rng, CF_DOM_UNIT);
    cf_operand_init(&c.o[2], "b", cs->dtype, r, sb, s->lb, false, &rng, CF_DOM_UNIT);
    cf_operand_init(&c.o[0], "dst", cs->dtype, r, sd, s->ld, true, &rng, CF_DOM_UNIT);
    if (s->edges) edge_values(&c.o[1], true, &rng), edge_values(&c.o[2], false, &rng);
    if (s->identity) {
        int64_t nb = cf_numel(r, sb);
        void *eye = calloc((size_t)nb, ff_dtype_size(cs->dtype));
        if (!eye) abort();
        for (int64_t i = 0; i < nb; i++) cf_set_i(eye, cs->dtype, i, (i / s->n) % s->k == i % s->n);
        cf_operand_scatter(&c.o[2], eye);
        free(eye);
    }
    cf_check_opts o = {.cls = s->identity ? CF_TOL_EXACT : CF_TOL_ACCUM, .k = s->k, .expect = expect};
    cf_result res = cf_check_call(ctx, cs, &c, &o, rep);
    cf_call_free(&c);
    return res;
}

void cf_gen_matmul(void)
{
    for (int di = 0; di < CF_NDTYPES; di++) {
        ff_dtype dt = cf_all_dtypes[di];
        if (!cf_ref_computes(FF_KIND_MATMUL, 0, dt)) continue;
        for (int si = 0; si < NSCEN; si++) {
            if ((scens[si].m >= 96 || scens[si].edges) && !ff_dtype_is_float(dt)) continue;
            cf_case c = {.family = "matmul", .op = "matmul", .dtype = dt, .level = CF_LEVEL_VTABLE, .run = run,
                         .kind = FF_KIND_MATMUL, .opcode = 0, .p = {0, si}};
            snprintf(c.id, sizeof c.id, "matmul.%s.%s", ff_dtype_name(dt), scens[si].name);
            cf_register(&c);
        }
    }
}
