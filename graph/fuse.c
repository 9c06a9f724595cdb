/* Fusion: runs of elementwise unary/binary launches over one iteration shape and dtype
 * become one program (ff_fused_program, include/ff/backend_abi.h). An intermediate
 * whose every use lies inside the run, through the view its producer wrote, becomes a
 * temporary: it never reaches memory. The backend's fused entry runs the program when
 * it has one; otherwise the core runs it here tile by tile (rows of dim 0) through the
 * plain unary/binary entries, the temporaries living in tile-sized scratch buffers that
 * stay in cache. Either way the values are those of the unfused launches. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph_impl.h"

#define TILE_ELEMS 16384 /* per operand: 64 KiB of f32, a few of them fit in L2 */
#define MAX_MEMBERS (FF_FUSED_MAX_VALUES - FF_FUSED_MAX_VIEWS) /* each adds at most one value */

/* Elementwise launches: unary, binary (comparisons too) and copy (a cast, or a broadcast). */
static bool fusable(const gnode *n)
{
    return n->kind == FF_KIND_UNARY || n->kind == FF_KIND_BINARY || n->kind == FF_KIND_COPY;
}

/* What a backend's fused entry takes (the ABI's program): unary and binary ops over one
 * dtype that write it (no casts, no comparisons). Other runs take the core's tiles. */
static bool one_dtype(const ff_graph *g, const gnode *n)
{
    if (n->kind == FF_KIND_COPY) return false;
    if (n->kind == FF_KIND_UNARY && (n->op == FF_UNARY_ISNAN || n->op == FF_UNARY_ISINF || n->op == FF_UNARY_LOGICAL_NOT))
        return false;
    if (n->kind == FF_KIND_BINARY && ff_binary_op_writes_bool((ff_binary_op)n->op)) return false;
    const ff_view *v = &g->views[n->v0];
    for (int i = 1; i < n->nv; i++)
        if (v[i].dtype != v[0].dtype) return false;
    return true;
}

static bool same_space(const ff_view *a, const ff_view *b)
{
    return a->ndim == b->ndim && !memcmp(a->shape, b->shape, sizeof(int64_t) * (size_t)a->ndim);
}

/* Member k of the run members[0..n_members) followed by extra (when not NULL). */
static const gnode *member(const ff_graph *g, const int *members, int n_members, const gnode *extra, int k)
{
    return k < n_members ? &g->nodes[members[k]] : extra;
}

/* Buffer b would be a temporary of the run (with extra) if it closed now: an
 * intermediate not already inside a program, every use of it in the run, the first of
 * them a write, all through the same view. */
static bool temp_in_run(const ff_graph *g, const int *members, int n_members, const gnode *extra, int b)
{
    const gbuf *gb = &g->bufs[b];
    if (gb->role != GB_DEAD || gb->fused_temp) return false;
    int n = n_members + (extra != NULL), uses = 0;
    const ff_view *first = NULL;
    for (int k = 0; k < n; k++) {
        const gnode *m = member(g, members, n_members, extra, k);
        for (int j = 0; j < m->nv; j++) {
            if (g->vbuf[m->v0 + j] != b) continue;
            const ff_view *v = &g->views[m->v0 + j];
            if (!first && j >= m->n_dst) return false; /* read before the run writes it */
            if (first && !ff_graph_same_layout(first, v)) return false;
            if (!first) first = v;
            uses++;
        }
    }
    return uses == gb->refs;
}

/* Distinct (buffer, view) pairs of the run with n that would not be temporaries: what
 * the program would take as views. */
static int distinct_views(const ff_graph *g, const int *members, int n_members, const gnode *n)
{
    int count = 0;
    for (int k = 0; k <= n_members; k++) {
        const gnode *m = member(g, members, n_members, n, k);
        for (int j = 0; j < m->nv; j++) {
            bool seen = false;
            for (int k2 = 0; k2 <= k && !seen; k2++) {
                const gnode *m2 = member(g, members, n_members, n, k2);
                for (int j2 = 0; j2 < (k2 == k ? j : m2->nv) && !seen; j2++)
                    seen = g->vbuf[m2->v0 + j2] == g->vbuf[m->v0 + j] && ff_graph_same_layout(&g->views[m2->v0 + j2], &g->views[m->v0 + j]);
            }
            count += !seen && !temp_in_run(g, members, n_members, n, g->vbuf[m->v0 + j]);
        }
    }
    return count;
}

/* n may join the run of members: same iteration space, within the ABI's view cap (the
 * buffers that would be temporaries if the run closed with n are not views; later
 * members can only make more of them temporaries, never fewer), and no buffer that the
 * run (with n) writes is seen through two different views. */
static bool joins(const ff_graph *g, const int *members, int n_members, const gnode *n)
{
    const ff_view *head = &g->views[g->nodes[members[0]].v0];
    if (!same_space(head, &g->views[n->v0])) return false;
    if (distinct_views(g, members, n_members, n) > FF_FUSED_MAX_VIEWS) return false;
    for (int i = 0; i < n->nv; i++) {
        int b = g->vbuf[n->v0 + i];
        const ff_view *v = &g->views[n->v0 + i];
        for (int k = 0; k < n_members; k++) {
            const gnode *m = &g->nodes[members[k]];
            for (int j = 0; j < m->nv; j++) {
                if (g->vbuf[m->v0 + j] != b) continue;
                bool written = i < n->n_dst || j < m->n_dst;
                if (written && !ff_graph_same_layout(v, &g->views[m->v0 + j])) return false;
            }
        }
    }
    return true;
}

static int64_t inner_elems(const ff_view *v)
{
    int64_t n = 1;
    for (int d = 1; d < v->ndim; d++) n *= v->shape[d];
    return n;
}

/* The backend's entry takes the run (FF_GRAPH_FUSE=tiles keeps every run from it, to
 * test the fallback). */
static bool backend_takes(const ff_graph *g, const int *members, int n)
{
    const char *v = getenv("FF_GRAPH_FUSE");
    if (v && !strcmp(v, "tiles")) return false;
    ff_dtype dt = g->views[g->nodes[members[0]].v0].dtype;
    for (int k = 0; k < n; k++) {
        const gnode *m = &g->nodes[members[k]];
        if (!one_dtype(g, m) || g->views[m->v0].dtype != dt) return false;
    }
    return ff_backend_supports(g->be, FF_KIND_FUSED, 0, dt);
}

/* Marks the run's temporaries; returns how many. */
static int mark_temps(ff_graph *g, const int *members, int n_members)
{
    int temps = 0;
    for (int k = 0; k < n_members; k++) {
        const gnode *m = &g->nodes[members[k]];
        for (int j = 0; j < m->nv; j++) {
            int b = g->vbuf[m->v0 + j];
            if (temp_in_run(g, members, n_members, NULL, b)) {
                g->bufs[b].fused_temp = true;
                temps++;
            }
        }
    }
    return temps;
}

static ff_status add_group(ff_graph *g, const int *members, int n_members, bool by_backend)
{
    gfused *ng = realloc(g->groups, sizeof *ng * (size_t)(g->n_groups + 1));
    if (!ng) return ff_error(FF_ERR_OOM, "out of memory fusing");
    g->groups = ng;
    gfused *f = &g->groups[g->n_groups];
    *f = (gfused){.by_backend = by_backend};
    if (!(f->members = malloc(sizeof *f->members * (size_t)n_members))) return ff_error(FF_ERR_OOM, "out of memory fusing");
    memcpy(f->members, members, sizeof *f->members * (size_t)n_members);
    f->n_members = n_members;
    for (int k = 0; k < n_members; k++) g->nodes[members[k]].group = g->n_groups;
    g->n_groups++;
    g->info.fused_groups++;
    g->info.fused_kernels += n_members;
    g->info.fused_by_backend += by_backend;
    return FF_OK;
}

/* Closes the run members[0..n): a group if it saves memory traffic, else plain launches. */
static ff_status close_run(ff_graph *g, const int *members, int n, int *out, int *n_out)
{
    if (n >= 2) {
        const ff_view *head = &g->views[g->nodes[members[0]].v0];
        bool by_backend = backend_takes(g, members, n);
        /* the tile fallback splits dim 0 only: a huge inner block would not stay in cache */
        bool tileable = head->ndim == 0 || inner_elems(head) <= 4 * TILE_ELEMS;
        if ((by_backend || tileable) && mark_temps(g, members, n) > 0) {
            ff_status st = add_group(g, members, n, by_backend);
            out[(*n_out)++] = -g->n_groups;
            return st;
        }
    }
    for (int k = 0; k < n; k++) out[(*n_out)++] = members[k];
    return FF_OK;
}

ff_status ff_graph_fuse(ff_graph *g, int *order, int *n_order)
{
    int n = *n_order, n_out = 0, n_run = 0;
    int *run = malloc(sizeof *run * (size_t)(n + 1));
    if (!run) return ff_error(FF_ERR_OOM, "out of memory fusing");
    ff_status st = FF_OK;
    /* out reuses order: it never gets ahead of the read position */
    for (int i = 0; i < n && !st; i++) {
        const gnode *nd = &g->nodes[order[i]];
        if (!fusable(nd)) {
            st = close_run(g, run, n_run, order, &n_out);
            n_run = 0;
            order[n_out++] = order[i];
            continue;
        }
        if (n_run && (n_run == MAX_MEMBERS || !joins(g, run, n_run, nd))) {
            st = close_run(g, run, n_run, order, &n_out);
            n_run = 0;
        }
        run[n_run++] = order[i];
    }
    if (!st) st = close_run(g, run, n_run, order, &n_out);
    free(run);
    *n_order = n_out;
    return st;
}

/* ---- programs ------------------------------------------------------------------------ */

/* The value index of view slot (node m, slot j) in group f, adding it if new. */
static int value_of(const ff_graph *g, gfused *f, int *vb, const int *temp_of, int m_v)
{
    int b = g->vbuf[m_v];
    if (g->bufs[b].fused_temp) return temp_of[b];
    for (int i = 0; i < f->prog.n_views; i++)
        if (vb[i] == b && ff_graph_same_layout(&f->views[i], &g->views[m_v])) return i;
    int i = f->prog.n_views++;
    f->views[i] = g->views[m_v];
    vb[i] = b;
    return i;
}

static ff_status build_program(ff_graph *g, gfused *f)
{
    int cap = 0;
    for (int k = 0; k < f->n_members; k++) cap += g->nodes[f->members[k]].nv;
    f->views = malloc(sizeof *f->views * (size_t)cap);
    f->inst = malloc(sizeof *f->inst * (size_t)f->n_members);
    int *vb = malloc(sizeof *vb * (size_t)cap), *temp_of = malloc(sizeof *temp_of * (size_t)g->n_bufs);
    if (!f->views || !f->inst || !vb || !temp_of) {
        free(vb);
        free(temp_of);
        return ff_error(FF_ERR_OOM, "out of memory fusing");
    }
    /* views first (their indices must come before the temporaries'), then temporaries */
    int n_temps = 0;
    for (int k = 0; k < f->n_members; k++) {
        const gnode *m = &g->nodes[f->members[k]];
        for (int j = 0; j < m->nv; j++) {
            int b = g->vbuf[m->v0 + j];
            if (!g->bufs[b].fused_temp) value_of(g, f, vb, temp_of, m->v0 + j);
        }
    }
    for (int k = 0; k < f->n_members; k++) {
        const gnode *m = &g->nodes[f->members[k]];
        for (int j = 0; j < m->nv; j++) {
            int b = g->vbuf[m->v0 + j];
            if (g->bufs[b].fused_temp && g->bufs[b].group_refs == 0) {
                g->bufs[b].group_refs = 1;
                f->temp_dtype[n_temps] = g->views[m->v0 + j].dtype;
                temp_of[b] = f->prog.n_views + n_temps++;
            }
        }
    }
    for (int k = 0; k < f->n_members; k++) {
        const gnode *m = &g->nodes[f->members[k]];
        for (int j = 0; j < m->nv; j++) g->bufs[g->vbuf[m->v0 + j]].group_refs = 0;
        ff_fused_inst *in = &f->inst[k];
        *in = (ff_fused_inst){.kind = m->kind, .op = m->op};
        in->dst = value_of(g, f, vb, temp_of, m->v0);
        in->src[0] = value_of(g, f, vb, temp_of, m->v0 + 1);
        in->src[1] = m->kind == FF_KIND_BINARY ? value_of(g, f, vb, temp_of, m->v0 + 2) : 0;
    }
    free(vb);
    free(temp_of);
    const ff_view *head = &g->views[g->nodes[f->members[0]].v0];
    f->prog.dtype = head->dtype;
    f->prog.ndim = head->ndim;
    memcpy(f->prog.shape, head->shape, sizeof f->prog.shape);
    f->prog.views = f->views;
    f->prog.n_values = f->prog.n_views + n_temps;
    f->prog.n_inst = f->n_members;
    f->prog.inst = f->inst;
    f->n_temps = n_temps;
    if (f->by_backend) return FF_OK;
    int64_t inner = inner_elems(head);
    int64_t rows = head->ndim ? head->shape[0] : 1;
    f->tile_rows = head->ndim ? (inner > 0 ? TILE_ELEMS / inner : rows) : 1;
    if (f->tile_rows < 1) f->tile_rows = 1;
    if (f->tile_rows > rows) f->tile_rows = rows > 0 ? rows : 1;
    return FF_OK;
}

/* Bytes of one tile of group f's temporaries (the fallback's scratch). */
static size_t tile_bytes(const gfused *f)
{
    int64_t n = f->tile_rows;
    for (int d = 1; d < f->prog.ndim; d++) n *= f->prog.shape[d];
    return (size_t)n * 8; /* the widest dtype: one size fits every group */
}

ff_status ff_graph_fuse_finish(ff_graph *g)
{
    size_t bytes = 0;
    int n = 0;
    for (int i = 0; i < g->n_groups; i++) {
        gfused *f = &g->groups[i];
        if (build_program(g, f)) return ff_last_status();
        if (f->by_backend) continue;
        if (f->n_temps > n) n = f->n_temps;
        if (tile_bytes(f) > bytes) bytes = tile_bytes(f);
    }
    if (!n) return FF_OK;
    if (!(g->scratch = calloc((size_t)n, sizeof *g->scratch))) return ff_error(FF_ERR_OOM, "out of memory fusing");
    g->n_scratch = n;
    for (int t = 0; t < n; t++) {
        ff_clear_error();
        if (!(g->scratch[t] = g->be->vt->alloc(g->be->ctx, bytes)))
            return ff_error(FF_ERR_OOM, "backend '%s' could not allocate a fusion tile (%s)", g->be->name, ff_last_error());
    }
    g->info.planned_peak_bytes += (size_t)n * bytes;
    return FF_OK;
}

/* The tile fallback: rows [r0, r0 + r) of every value, instruction after instruction. */
static void tile_view(const ff_graph *g, const gfused *f, int value, int64_t r0, int64_t r, ff_view *out)
{
    const ff_fused_program *p = &f->prog;
    if (value < p->n_views) {
        *out = p->views[value];
        if (out->ndim) {
            out->offset += r0 * out->strides[0];
            out->shape[0] = r;
        }
        return;
    }
    int t = value - p->n_views;
    *out = (ff_view){.buf = g->scratch[t], .dtype = f->temp_dtype[t], .ndim = p->ndim};
    memcpy(out->shape, p->shape, sizeof out->shape);
    if (p->ndim) out->shape[0] = r;
    int64_t st = 1;
    for (int d = p->ndim - 1; d >= 0; d--) {
        out->strides[d] = st;
        st *= out->shape[d];
    }
}

ff_status ff_graph_run_fused(ff_graph *g, const gfused *f)
{
    const ff_backend_vtable *vt = g->be->vt;
    void *c = g->be->ctx;
    if (f->by_backend) return vt->fused(c, &f->prog);
    const ff_fused_program *p = &f->prog;
    int64_t rows = p->ndim ? p->shape[0] : 1;
    for (int64_t r0 = 0; r0 < rows; r0 += f->tile_rows) {
        int64_t r = rows - r0 < f->tile_rows ? rows - r0 : f->tile_rows;
        for (int k = 0; k < p->n_inst; k++) {
            const ff_fused_inst *in = &p->inst[k];
            ff_view v[3];
            tile_view(g, f, in->dst, r0, r, &v[0]);
            tile_view(g, f, in->src[0], r0, r, &v[1]);
            ff_status st;
            if (in->kind == FF_KIND_UNARY) {
                st = vt->unary(c, (ff_unary_op)in->op, &v[0], &v[1]);
            } else if (in->kind == FF_KIND_COPY) {
                st = vt->copy(c, &v[0], &v[1]);
            } else {
                tile_view(g, f, in->src[1], r0, r, &v[2]);
                st = vt->binary(c, (ff_binary_op)in->op, &v[0], &v[1], &v[2]);
            }
            if (st) return st;
        }
    }
    return FF_OK;
}
