/* Vtable families "gather" and "scatter_add" (torch.gather / Tensor.scatter_add_
 * along one axis) for every data dtype x axis x layouts, plus out-of-range indices,
 * which must fail with FF_ERR_INDEX. scatter_add indices repeat on purpose: the ABI
 * says duplicates add up; some scenarios send every index to one or two positions, on
 * every layout, broadcast (stride-0) indices and data as index_select and its gradient
 * do, and sizes past any threading threshold. Closed form: host loops. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cf.h"
#include "cf_scenario.h"

typedef struct ix_scen {
    const char *name;
    int ndim;
    int64_t data[3];  /* src (gather) / dst (scatter_add) shape */
    int64_t index[3]; /* index shape */
    int axis;
    cf_layout_kind ldata, lindex, lout;
    int out_of_range; /* 1: one index equals the size; 2: one is -1 (a backend must not wrap it) */
    int dup; /* index values: 0 random, 1 all the same, 2 only the first and last position */
} ix_scen;

static const ix_scen scens[] = {
    {"axis0_5x7", 2, {5, 7}, {3, 7}, 0, CF_L_CONTIG, CF_L_CONTIG, CF_L_CONTIG, 0, 0},
    {"axis1_5x7", 2, {5, 7}, {5, 4}, 1, CF_L_CONTIG, CF_L_CONTIG, CF_L_OFFSET, 0, 0},
    {"axis1_narrow5x7", 2, {5, 7}, {2, 9}, 1, CF_L_OFFSET, CF_L_CONTIG, CF_L_CONTIG, 0, 0},
    {"transposed_axis0_6x4", 2, {6, 4}, {8, 3}, 0, CF_L_TRANSPOSED, CF_L_TRANSPOSED, CF_L_STEPPED, 0, 0},
    {"stepped_axis2_3x4x5", 3, {3, 4, 5}, {2, 3, 6}, 2, CF_L_STEPPED, CF_L_OFFSET, CF_L_TRANSPOSED, 0, 0},
    {"n1", 1, {1}, {3}, 0, CF_L_CONTIG, CF_L_CONTIG, CF_L_CONTIG, 0, 0},
    {"n67", 1, {67}, {31}, 0, CF_L_CONTIG, CF_L_STEPPED, CF_L_CONTIG, 0, 0},
    {"empty_index", 2, {4, 3}, {0, 3}, 0, CF_L_CONTIG, CF_L_CONTIG, CF_L_CONTIG, 0, 0},
    {"out_of_range", 2, {5, 7}, {3, 7}, 0, CF_L_CONTIG, CF_L_CONTIG, CF_L_CONTIG, 1, 0},
    {"negative_index", 2, {5, 7}, {3, 7}, 0, CF_L_CONTIG, CF_L_CONTIG, CF_L_CONTIG, 2, 0},
    {"negative_index_axis1", 2, {4, 6}, {4, 5}, 1, CF_L_TRANSPOSED, CF_L_OFFSET, CF_L_CONTIG, 2, 0},
    /* duplicates on purpose (scatter_add must add every one, in any order), on every
     * layout: every index the same, or only two targets */
    {"dup_all_axis0_6x5", 2, {6, 5}, {9, 5}, 0, CF_L_CONTIG, CF_L_CONTIG, CF_L_CONTIG, 0, 1},
    {"dup_two_axis1_4x7", 2, {4, 7}, {4, 12}, 1, CF_L_OFFSET, CF_L_STEPPED, CF_L_TRANSPOSED, 0, 2},
    {"dup_two_transposed_axis0_5x6", 2, {5, 6}, {8, 6}, 0, CF_L_TRANSPOSED, CF_L_TRANSPOSED, CF_L_OFFSET, 0, 2},
    {"dup_all_stepped_axis2_3x4x5", 3, {3, 4, 5}, {3, 4, 7}, 2, CF_L_STEPPED, CF_L_OFFSET, CF_L_STEPPED, 0, 1},
    /* the index broadcast over the other axis (stride 0), as index_select and embedding
     * send it, and its gradient: one index per row, duplicated rows */
    {"bcast_index_axis0_5x6", 2, {5, 6}, {8, 6}, 0, CF_L_CONTIG, CF_L_BCASTLAST, CF_L_CONTIG, 0, 2},
    {"bcast_index_axis1_6x5", 2, {6, 5}, {6, 8}, 1, CF_L_TRANSPOSED, CF_L_BCAST0, CF_L_STEPPED, 0, 0},
    /* a broadcast data operand (a gradient of a sum arrives as stride 0) */
    {"bcast_data_axis0_5x6", 2, {5, 6}, {7, 6}, 0, CF_L_BCAST0, CF_L_CONTIG, CF_L_OFFSET, 0, 2},
    /* past the threading threshold, heavy duplicates */
    {"big_dup_axis0_64x600", 2, {64, 600}, {96, 600}, 0, CF_L_CONTIG, CF_L_CONTIG, CF_L_CONTIG, 0, 2},
    {"big_bcast_index_axis0_50x700", 2, {50, 700}, {60, 700}, 0, CF_L_CONTIG, CF_L_BCASTLAST, CF_L_CONTIG, 0, 0},
};
#define NSCEN ((int)(sizeof scens / sizeof scens[0]))

/* Index values in [0, size along axis) (one set to size, or to -1, when out_of_range), drawn as
 * the scenario's dup mode says. A broadcast index view keeps one value per buffer
 * element: the closed forms read the values back from the operand. */
static void make_index(cf_operand *ix, cf_rng *rng, int64_t size, int oor, int dup)
{
    int64_t n = cf_numel(ix->ndim, ix->shape);
    int64_t *v = calloc((size_t)(n ? n : 1), sizeof *v);
    if (!v) abort();
    int64_t same = cf_rng_int(rng, 0, size - 1);
    for (int64_t i = 0; i < n; i++)
        v[i] = dup == 1 ? same : dup == 2 ? (cf_rng_u64(rng) & 1 ? size - 1 : 0) : cf_rng_int(rng, 0, size - 1);
    if (oor && n) v[n / 2] = oor == 2 ? -1 : size;
    cf_operand_scatter(ix, v);
    free(v);
}

/* Maps flat index i of shape `sh` to the flat index of `to` with axis replaced by j. */
static int64_t remap(int ndim, const int64_t *sh, const int64_t *to, int axis, int64_t i, int64_t j)
{
    int64_t idx[FF_MAX_DIMS], out = 0;
    for (int d = ndim - 1; d >= 0; d--) {
        idx[d] = i % sh[d];
        i /= sh[d];
    }
    idx[axis] = j;
    for (int d = 0; d < ndim; d++) out = out * to[d] + idx[d];
    return out;
}

static void *gather_expect(const cf_call *c, const void *user)
{
    (void)user;
    const cf_operand *d = &c->o[0], *s = &c->o[1], *ix = &c->o[2];
    int64_t n = cf_numel(d->ndim, d->shape);
    size_t sz = ff_dtype_size(d->dtype);
    unsigned char *vs = cf_operand_values(s), *out = calloc((size_t)(n ? n : 1), sz);
    int64_t *vi = cf_operand_values(ix);
    if (!out) abort();
    for (int64_t i = 0; i < n; i++)
        memcpy(out + (size_t)i * sz, vs + (size_t)remap(d->ndim, d->shape, s->shape, c->axis, i, vi[i]) * sz, sz);
    free(vs);
    free(vi);
    return out;
}

static void *scatter_expect(const cf_call *c, const void *user)
{
    const cf_operand *d = &c->o[0], *ix = &c->o[1], *s = &c->o[2];
    const void *dst0 = user; /* dst's logical values before the call */
    int64_t n = cf_numel(d->ndim, d->shape), ns = cf_numel(s->ndim, s->shape);
    size_t sz = ff_dtype_size(d->dtype);
    void *out = calloc((size_t)(n ? n : 1), sz);
    long double *acc = calloc((size_t)(n ? n : 1), sizeof *acc);
    int64_t *iacc = calloc((size_t)(n ? n : 1), sizeof *iacc);
    void *vs = cf_operand_values(s);
    int64_t *vi = cf_operand_values(ix);
    if (!out || !acc || !iacc) abort();
    bool fl = ff_dtype_is_float(d->dtype);
    for (int64_t i = 0; i < n; i++) acc[i] = cf_get_f(dst0, d->dtype, i), iacc[i] = cf_get_i(dst0, d->dtype, i);
    for (int64_t i = 0; i < ns; i++) {
        int64_t o = remap(s->ndim, s->shape, d->shape, c->axis, i, vi[i]);
        if (fl) acc[o] += cf_get_f(vs, s->dtype, i);
        else if (d->dtype == FF_BOOL) iacc[o] = iacc[o] || cf_get_i(vs, s->dtype, i);
        else iacc[o] = (int64_t)((uint64_t)iacc[o] + (uint64_t)cf_get_i(vs, s->dtype, i));
    }
    for (int64_t i = 0; i < n; i++) {
        if (fl) cf_set_f(out, d->dtype, i, (double)acc[i]);
        else cf_set_i(out, d->dtype, i, iacc[i]);
    }
    free(acc);
    free(iacc);
    free(vs);
    free(vi);
    return out;
}

static cf_result run_gather(cf_ctx *ctx, const cf_case *cs, cf_report *rep)
{
    const ix_scen *s = &scens[cs->p[1]];
    cf_rng rng;
    cf_rng_init(&rng, cf_case_seed(ctx, cs));
    cf_call c = {.kind = FF_KIND_GATHER, .axis = s->axis, .nops = 3};
    cf_operand_init(&c.o[1], "src", cs->dtype, s->ndim, s->data, s->ldata, false, &rng, CF_DOM_SIGNED);
    cf_operand_init(&c.o[2], "index", FF_I64, s->ndim, s->index, s->lindex, false, &rng, CF_DOM_SMALLINT);
    make_index(&c.o[2], &rng, s->data[s->axis], s->out_of_range, s->dup);
    cf_operand_init(&c.o[0], "dst", cs->dtype, s->ndim, s->index, s->lout, true, &rng, CF_DOM_SIGNED);
    cf_check_opts o = {.cls = CF_TOL_EXACT, .expect = s->out_of_range ? NULL : gather_expect,
                       .want_status = s->out_of_range ? FF_ERR_INDEX : FF_OK};
    cf_result r = cf_check_call(ctx, cs, &c, &o, rep);
    cf_call_free(&c);
    return r;
}

static cf_result run_scatter(cf_ctx *ctx, const cf_case *cs, cf_report *rep)
{
    const ix_scen *s = &scens[cs->p[1]];
    cf_rng rng;
    cf_rng_init(&rng, cf_case_seed(ctx, cs));
    /* scatter_add: dst has the data shape; index and src the index shape, which must
     * fit in dst on the other axes: clamp it */
    int64_t ish[3];
    for (int d = 0; d < s->ndim; d++) ish[d] = d == s->axis || s->index[d] <= s->data[d] ? s->index[d] : s->data[d];
    cf_call c = {.kind = FF_KIND_SCATTER_ADD, .axis = s->axis, .nops = 3};
    cf_operand_init(&c.o[1], "index", FF_I64, s->ndim, ish, s->lindex, false, &rng, CF_DOM_SMALLINT);
    make_index(&c.o[1], &rng, s->data[s->axis], s->out_of_range, s->dup);
    cf_operand_init(&c.o[2], "src", cs->dtype, s->ndim, ish, s->ldata, false, &rng, CF_DOM_SIGNED);
    cf_operand_init(&c.o[0], "dst", cs->dtype, s->ndim, s->data, s->lout, true, &rng, CF_DOM_SIGNED);
    int64_t n = cf_numel(s->ndim, s->data);
    void *dst0 = calloc((size_t)(n ? n : 1), ff_dtype_size(cs->dtype));
    if (!dst0) abort();
    cf_fill_values(&rng, dst0, cs->dtype, n, CF_DOM_SIGNED);
    cf_operand_scatter(&c.o[0], dst0); /* dst is read too: its elements start with values */
    cf_check_opts o = {.cls = CF_TOL_ACCUM, .k = ish[s->axis] + 1, .expect = s->out_of_range ? NULL : scatter_expect,
                       .expect_user = dst0, .want_status = s->out_of_range ? FF_ERR_INDEX : FF_OK};
    cf_result r = cf_check_call(ctx, cs, &c, &o, rep);
    free(dst0);
    cf_call_free(&c);
    return r;
}

void cf_gen_index(void)
{
    for (int di = 0; di < CF_NDTYPES; di++) {
        ff_dtype dt = cf_all_dtypes[di];
        for (int si = 0; si < NSCEN; si++) {
            if (cf_ref_computes(FF_KIND_GATHER, 0, dt)) {
                cf_case c = {.family = "gather", .op = "gather", .dtype = dt, .level = CF_LEVEL_VTABLE,
                             .run = run_gather, .kind = FF_KIND_GATHER, .opcode = 0, .p = {0, si}};
                snprintf(c.id, sizeof c.id, "gather.%s.%s", ff_dtype_name(dt), scens[si].name);
                cf_register(&c);
            }
            if (cf_ref_computes(FF_KIND_SCATTER_ADD, 0, dt)) {
                cf_case c = {.family = "scatter_add", .op = "scatter_add", .dtype = dt, .level = CF_LEVEL_VTABLE,
                             .run = run_scatter, .kind = FF_KIND_SCATTER_ADD, .opcode = 0, .p = {0, si}};
                snprintf(c.id, sizeof c.id, "scatter_add.%s.%s", ff_dtype_name(dt), scens[si].name);
                cf_register(&c);
            }
        }
    }
}
