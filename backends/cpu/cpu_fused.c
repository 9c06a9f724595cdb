/*
 * The optional fused entry: a plain interpreter of the program (ff_fused_program in
 * backend_abi.h), F32 and F64, checks in backends/common/ff_backend_fused.h.
 *
 * The iteration space is cut into tiles of CPU_FUSED_TILE consecutive row-major elements.
 * For each tile the element offsets of every view are worked out once; then the
 * instructions run one after another over the tile, each element computed exactly as
 * cpu_unary / cpu_binary compute it (ffb_unary_f64 / ffb_binary_f64 in double, stored to
 * the program's dtype with ffb_st_f64), so the results are bit-identical to running the
 * plain entries op by op. Views are read and written in place through their offsets: an
 * output that is the identical view of an input is the same memory, so a later
 * instruction sees what an earlier one wrote, as op by op. Temporaries live in tile
 * arrays of the program's dtype, so an f32 value is rounded exactly where the plain
 * entries round it.
 */
#include <stdlib.h>

#include "cpu_impl.h"
#include "ff_backend_fused.h"

#define CPU_FUSED_TILE 256

/* Byte offsets in view v of the row-major elements [start, start + n) of the program's shape. */
static void view_offsets(const ff_fused_program *p, const ff_view *v, int64_t start, int64_t n, int64_t *off)
{
    int64_t idx[FF_MAX_DIMS], rest = start, es = (int64_t)ff_dtype_size(v->dtype);
    for (int d = p->ndim - 1; d >= 0; d--) {
        idx[d] = rest % p->shape[d];
        rest /= p->shape[d];
    }
    for (int64_t j = 0; j < n; j++) {
        int64_t e = v->offset;
        for (int d = 0; d < p->ndim; d++) e += idx[d] * v->strides[d];
        off[j] = e * es;
        for (int d = p->ndim - 1; d >= 0 && ++idx[d] == p->shape[d]; d--) idx[d] = 0; /* next index */
    }
}

/* Runs instruction in over n elements: value k's element j is at base[k] + off[k][j]. */
static void run_inst(const ff_fused_inst *in, ff_dtype t, int64_t n, char *const *base, int64_t *const *off)
{
    char *d = base[in->dst];
    const char *a = base[in->src[0]];
    const int64_t *od = off[in->dst], *oa = off[in->src[0]];
    if (in->kind == FF_KIND_UNARY) {
        ff_unary_op op = ffb_unary_effective((ff_unary_op)in->op, t);
        for (int64_t j = 0; j < n; j++) ffb_st_f64(d + od[j], t, ffb_unary_f64(op, ffb_ld_f64(a + oa[j], t)));
        return;
    }
    const char *b = base[in->src[1]];
    const int64_t *ob = off[in->src[1]];
    ff_binary_op op = (ff_binary_op)in->op;
    for (int64_t j = 0; j < n; j++)
        ffb_st_f64(d + od[j], t, ffb_binary_f64(op, ffb_ld_f64(a + oa[j], t), ffb_ld_f64(b + ob[j], t)));
}

ff_status cpu_fused(void *ctx, const ff_fused_program *p)
{
    ff_status st = ffb_fused_check(ctx ? ((cpu_ctx *)ctx)->host : NULL, "cpu", p);
    if (st) return st;
    int64_t numel = ffb_fused_numel(p);
    if (numel == 0 || p->n_inst == 0) return FF_OK;

    /* per view a tile of offsets, one tile of offsets 0, es, 2 es, ... shared by the
     * temporaries, and a tile of 8-byte elements per temporary */
    int nv = p->n_views, nt = p->n_values - p->n_views;
    int64_t es = (int64_t)ff_dtype_size(p->dtype);
    int64_t *offs = malloc(((size_t)nv + 1 + (size_t)nt) * CPU_FUSED_TILE * sizeof *offs);
    if (!offs) return cpu_error(ctx, FF_ERR_OOM, "cpu fused: out of memory for %d tiles", nv + 1 + nt);
    char *base[FF_FUSED_MAX_VALUES];
    int64_t *off[FF_FUSED_MAX_VALUES];
    int64_t *temp_off = offs + (size_t)nv * CPU_FUSED_TILE;
    char *temps = (char *)(temp_off + CPU_FUSED_TILE);
    for (int64_t j = 0; j < CPU_FUSED_TILE; j++) temp_off[j] = j * es;
    for (int v = 0; v < p->n_values; v++) {
        int is_view = v < nv;
        base[v] = is_view ? (char *)p->views[v].buf : temps + (size_t)(v - nv) * CPU_FUSED_TILE * 8;
        off[v] = is_view ? offs + (size_t)v * CPU_FUSED_TILE : temp_off;
    }
    for (int64_t start = 0; start < numel; start += CPU_FUSED_TILE) {
        int64_t n = numel - start < CPU_FUSED_TILE ? numel - start : CPU_FUSED_TILE;
        for (int v = 0; v < nv; v++) view_offsets(p, &p->views[v], start, n, off[v]);
        for (int i = 0; i < p->n_inst; i++) run_inst(&p->inst[i], p->dtype, n, base, off);
    }
    free(offs);
    return FF_OK;
}
