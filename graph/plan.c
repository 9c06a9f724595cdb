/* Planning a captured graph, once, at capture_end:
 *   1. constants: a fill or upload that is the only writer of an intermediate runs once
 *      here, into a buffer of its own, and leaves the launch list;
 *   2. fusion (fuse.c) of elementwise chains;
 *   3. liveness of every intermediate over the launch steps, and a slot in one arena by
 *      best fit over a free list (ggml's gallocr does the same), in place over a dying
 *      operand where the op allows it;
 *   4. the views rewritten onto the arena, so a replay passes them straight through. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph_impl.h"

#define ALIGN 64

static bool env_off(const char *name)
{
    const char *v = getenv(name);
    return v && !strcmp(v, "0");
}

static size_t round_up(size_t n) { return (n + ALIGN - 1) / ALIGN * ALIGN; }

/* ---- the free list of arena blocks, sorted by offset ------------------------------- */
typedef struct blk {
    size_t off, size;
} blk;

typedef struct arena_plan {
    blk *fl;
    int n, cap;
    size_t top;
} arena_plan;

static size_t arena_take(arena_plan *a, size_t size)
{
    int best = -1;
    for (int i = 0; i < a->n; i++)
        if (a->fl[i].size >= size && (best < 0 || a->fl[i].size < a->fl[best].size)) best = i;
    if (best < 0 && a->n && a->fl[a->n - 1].off + a->fl[a->n - 1].size == a->top) {
        best = a->n - 1; /* the last free block touches the top: grow through it */
        a->top = a->fl[best].off + size;
        a->fl[best].size = size;
    }
    if (best < 0) {
        size_t off = a->top;
        a->top += size;
        return off;
    }
    size_t off = a->fl[best].off;
    a->fl[best].off += size;
    a->fl[best].size -= size;
    if (!a->fl[best].size) {
        memmove(&a->fl[best], &a->fl[best + 1], sizeof *a->fl * (size_t)(a->n - best - 1));
        a->n--;
    }
    return off;
}

static bool arena_give(arena_plan *a, size_t off, size_t size)
{
    if (!size) return true;
    if (a->n == a->cap) {
        int nc = a->cap ? a->cap * 2 : 32;
        blk *p = realloc(a->fl, sizeof *p * (size_t)nc);
        if (!p) return false;
        a->fl = p;
        a->cap = nc;
    }
    int i = 0;
    while (i < a->n && a->fl[i].off < off) i++;
    memmove(&a->fl[i + 1], &a->fl[i], sizeof *a->fl * (size_t)(a->n - i));
    a->fl[i] = (blk){off, size};
    a->n++;
    if (i + 1 < a->n && a->fl[i].off + a->fl[i].size == a->fl[i + 1].off) { /* merge right */
        a->fl[i].size += a->fl[i + 1].size;
        memmove(&a->fl[i + 1], &a->fl[i + 2], sizeof *a->fl * (size_t)(a->n - i - 2));
        a->n--;
    }
    if (i > 0 && a->fl[i - 1].off + a->fl[i - 1].size == a->fl[i].off) { /* merge left */
        a->fl[i - 1].size += a->fl[i].size;
        memmove(&a->fl[i], &a->fl[i + 1], sizeof *a->fl * (size_t)(a->n - i - 1));
        a->n--;
    }
    return true;
}

/* ---- steps: a node, or a fused group (encoded -(group + 1)) ------------------------ */
typedef struct step_views {
    const int *members;
    int n_members, single;
} step_views;

static step_views step_of(const ff_graph *g, int s)
{
    if (s >= 0) return (step_views){NULL, 1, s};
    const gfused *f = &g->groups[-s - 1];
    return (step_views){f->members, f->n_members, -1};
}

static int member(step_views sv, int k) { return sv.members ? sv.members[k] : sv.single; }

/* An elementwise node's output may take the slot of an operand that dies at it when the
 * two views are the same elements in the same order (the ABI allows dst == src). */
static int in_place_donor(const ff_graph *g, const gnode *n, int b, int step)
{
    if (n->kind != FF_KIND_UNARY && n->kind != FF_KIND_BINARY && n->kind != FF_KIND_COPY && n->kind != FF_KIND_WHERE)
        return -1;
    const ff_view *v = &g->views[n->v0];
    for (int i = 1; i < n->nv; i++) {
        int y = g->vbuf[n->v0 + i];
        const gbuf *yb = &g->bufs[y];
        if (y == b || yb->role != GB_DEAD || yb->fused_temp || yb->last != step) continue;
        if (round_up(yb->nbytes) != round_up(g->bufs[b].nbytes) || !ff_graph_same_layout(&v[0], &v[i])) continue;
        if (ff_dtype_size(v[i].dtype) != ff_dtype_size(v[0].dtype)) continue;
        return y;
    }
    return -1;
}

static ff_status assign_arena(ff_graph *g, const int *order, int n_order, size_t *arena_bytes)
{
    for (int s = 0; s < n_order; s++) {
        step_views sv = step_of(g, order[s]);
        for (int k = 0; k < sv.n_members; k++) {
            const gnode *n = &g->nodes[member(sv, k)];
            for (int i = 0; i < n->nv; i++) {
                gbuf *b = &g->bufs[g->vbuf[n->v0 + i]];
                if (b->first < 0) b->first = s;
                b->last = s;
            }
        }
    }
    arena_plan a = {0};
    bool *handed = calloc((size_t)g->n_bufs + 1, sizeof *handed), *placed = calloc((size_t)g->n_bufs + 1, 1);
    if (!handed || !placed) return free(handed), free(placed), ff_error(FF_ERR_OOM, "out of memory planning");
    ff_status st = FF_OK;
    for (int s = 0; s < n_order && !st; s++) {
        step_views sv = step_of(g, order[s]);
        for (int k = 0; k < sv.n_members; k++) { /* this step's new intermediates */
            const gnode *n = &g->nodes[member(sv, k)];
            for (int i = 0; i < n->nv; i++) {
                int id = g->vbuf[n->v0 + i];
                gbuf *b = &g->bufs[id];
                if (b->role != GB_DEAD || b->fused_temp || placed[id]) continue;
                placed[id] = true;
                int donor = sv.members ? -1 : in_place_donor(g, n, id, s);
                if (donor >= 0 && !handed[donor] && i < n->n_dst) {
                    handed[donor] = true;
                    b->arena_off = g->bufs[donor].arena_off;
                    b->in_place = true;
                    g->info.in_place++;
                } else {
                    b->arena_off = arena_take(&a, round_up(b->nbytes));
                }
            }
        }
        for (int k = 0; k < sv.n_members && !st; k++) { /* and the ones that die here */
            const gnode *n = &g->nodes[member(sv, k)];
            for (int i = 0; i < n->nv; i++) {
                int id = g->vbuf[n->v0 + i];
                gbuf *b = &g->bufs[id];
                if (b->role != GB_DEAD || b->fused_temp || b->last != s || handed[id] || !placed[id]) continue;
                handed[id] = true; /* freed once */
                if (!arena_give(&a, b->arena_off, round_up(b->nbytes))) st = ff_error(FF_ERR_OOM, "out of memory planning");
            }
        }
    }
    free(handed);
    free(placed);
    free(a.fl);
    *arena_bytes = a.top;
    return st;
}

/* ---- the plan ------------------------------------------------------------------------ */

static void *alloc_on(ff_graph *g, size_t nbytes)
{
    ff_clear_error();
    void *p = g->be->vt->alloc(g->be->ctx, nbytes ? nbytes : 1);
    if (!p)
        ff_error(FF_ERR_OOM, "backend '%s' could not allocate %zu bytes for the graph (%s)", g->be->name, nbytes,
                 ff_last_error());
    return p;
}

/* Constants: fills and uploads that are the only writer of an intermediate. */
static void hoist_constants(ff_graph *g)
{
    for (int i = 0; i < g->n_nodes; i++) {
        gnode *n = &g->nodes[i];
        if (n->kind != FF_KIND_FILL && n->kind != GN_UPLOAD) continue;
        gbuf *b = &g->bufs[g->vbuf[n->v0]];
        if (b->role != GB_DEAD || b->writers != 1) continue;
        b->role = GB_CONST;
        n->hoisted = true;
        g->info.constants_hoisted++;
    }
}

static ff_status place_buffers(ff_graph *g, const int *order, int n_order)
{
    bool plan = !env_off("FF_GRAPH_PLAN");
    size_t arena_bytes = 0;
    if (plan && assign_arena(g, order, n_order, &arena_bytes)) return ff_last_status();
    bool any_dead = false;
    for (int i = 0; i < g->n_bufs; i++) {
        gbuf *b = &g->bufs[i];
        if (b->role == GB_DEAD && !b->fused_temp) {
            any_dead = true;
            g->info.intermediates++;
            g->info.intermediate_bytes += b->nbytes;
            if (!plan && !(b->own = alloc_on(g, b->nbytes))) return ff_last_status();
        } else if (b->role == GB_CONST) {
            if (!(b->own = alloc_on(g, b->nbytes))) return ff_last_status();
            g->info.planned_peak_bytes += b->nbytes;
        } else if (b->role == GB_INPUT) {
            g->info.inputs++;
        } else if (b->role == GB_OUTPUT) {
            g->info.outputs++;
            g->info.planned_peak_bytes += b->nbytes;
        }
    }
    if (plan && any_dead && !(g->arena = alloc_on(g, arena_bytes))) return ff_last_status();
    g->info.arena_bytes = plan ? arena_bytes : g->info.intermediate_bytes;
    g->info.planned_peak_bytes += g->info.arena_bytes;
    for (int i = 0; i < g->n_views; i++) { /* onto the planned memory */
        gbuf *b = &g->bufs[g->vbuf[i]];
        ff_view *v = &g->views[i];
        if (b->own) {
            v->buf = b->own;
        } else if (b->role == GB_DEAD && !b->fused_temp) {
            v->buf = g->arena;
            v->offset += (int64_t)(b->arena_off / ff_dtype_size(v->dtype));
        }
    }
    return FF_OK;
}

ff_status ff_graph_plan(ff_graph *g)
{
    g->info.kernels_captured = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        if (g->nodes[i].kind == GN_HOST) g->info.host_calls++;
        else g->info.kernels_captured++;
    }
    if (!g->be) g->be = ff_backend_default(); /* a region of host calls only */
    if (!g->be) return ff_last_status();
    hoist_constants(g);
    int *order = malloc(sizeof *order * (size_t)(g->n_nodes + 1)), n_order = 0;
    if (!order) return ff_error(FF_ERR_OOM, "out of memory");
    for (int i = 0; i < g->n_nodes; i++)
        if (!g->nodes[i].hoisted) order[n_order++] = i;
    ff_status st = env_off("FF_GRAPH_FUSE") ? FF_OK : ff_graph_fuse(g, order, &n_order);
    if (!st) st = place_buffers(g, order, n_order);
    for (int i = 0; i < g->n_nodes && !st; i++) /* the constants, once */
        if (g->nodes[i].hoisted && (st = ff_graph_run_node(g, &g->nodes[i])))
            ff_error_prefix("ff_graph_capture_end: computing a constant");
    if (!st) st = ff_graph_fuse_finish(g);
    if (!st && !(g->launch = malloc(sizeof *g->launch * (size_t)(n_order + 1)))) st = ff_error(FF_ERR_OOM, "out of memory");
    for (int s = 0; s < n_order && !st; s++) {
        if (order[s] >= 0) {
            g->launch[g->n_launch++] = g->nodes[order[s]];
        } else {
            g->launch[g->n_launch++] = (gnode){.kind = GN_FUSED, .group = -order[s] - 1};
        }
    }
    g->info.launches = g->n_launch;
    free(order);
    return st;
}
