/*
 * The optional fused entry: an elementwise program (ff_fused_program in backend_abi.h) in
 * one pass, F32 and F64, checks in backends/common/ff_backend_fused.h. The plan below is
 * made for every program; an f32 program of exact ops over contiguous views then runs in
 * vector registers (blas_fused_vec.c), and every other one through the tiles here.
 *
 * The iteration space is cut into tiles of FUSED_TILE_BYTES (128 f32 or 64 f64 elements:
 * even 64 values' tiles, 32 KiB, stay in L1). Small tiles are what makes it fast: the
 * kernels of a tile's instructions run back to back, so the memory streams of the views
 * (a and b read by the first instruction, c by the second, the output written by the
 * last) interleave finely enough to keep the memory busy. relu(a * b + c) on 16M f32, one
 * thread (Zen 4, medians): 10 ms with 512-byte tiles, about one hand-fused loop's time,
 * against 18 ms for the three plain entries; 1024- and 4096-byte tiles took 17-21 ms.
 * For each tile:
 *   1. every view read before the program writes it is loaded: a row-major contiguous
 *      view is used where it lies in memory, any other is gathered through its strides
 *      (stride 0 = broadcast) into a tile buffer;
 *   2. the instructions run one after another over contiguous tiles, each with the run
 *      kernel the plain entry uses for contiguous data (blas_unary_plan /
 *      blas_binary_plan: the vmath transcendental kernels, the typed loops, the
 *      reference's per-element rules), so every value goes through exactly the plain
 *      entries' arithmetic and the results are bit-identical to them, op by op;
 *   3. gathered views that were written are scattered back.
 * Views that are the identical view (ffb_same_view) share one tile (a "slot"), so a
 * program that writes a view and reads it again through another value index sees what it
 * wrote, as op by op; the core never sends other overlaps. Temporaries never leave the
 * tile buffers. Programs of BLAS_PAR_MIN elements or more split their tiles across the
 * pool. Contiguous outputs of programs of BLAS_STREAM_MIN elements or more are computed
 * in a tile and written with non-temporal stores (blas_stream.c), as the plain entries
 * write theirs: the same bits, without reading every output line first.
 */
#include <stdatomic.h>
#include <stdlib.h>

#include "blas_impl.h"
#include "blas_fused.h"
#include "ff_backend_fused.h"

#define FUSED_TILE_BYTES 512
#define FUSED_STACK_INST FF_FUSED_MAX_VALUES

/* ---- gather and scatter of one tile, through a view's walk ------------------------- */
typedef struct tile_cursor {
    char *at; /* next element of the tile buffer */
    int64_t es;
    int scatter;
} tile_cursor;

#define MOVE_STRIDED(T)                                                              \
    do {                                                                             \
        T *v_ = (T *)p[0], *t_ = (T *)c->at;                                         \
        if (c->scatter) for (int64_t i = 0; i < n; i++) v_[i * s[0]] = t_[i];        \
        else for (int64_t i = 0; i < n; i++) t_[i] = v_[i * s[0]];                   \
    } while (0)

static void move_seg(void *arg, int64_t n, char *const *p, const int64_t *s)
{
    tile_cursor *c = arg;
    if (s[0] == 1) {
        if (c->scatter) memcpy(p[0], c->at, (size_t)(n * c->es));
        else memcpy(c->at, p[0], (size_t)(n * c->es));
    } else if (c->es == 4) {
        MOVE_STRIDED(uint32_t); /* the bits: NaN payloads survive */
    } else {
        MOVE_STRIDED(uint64_t);
    }
    c->at += n * c->es;
}

static void move_tile(const fused_plan *pl, const fused_slot *sl, int64_t begin, int64_t n, char *tile, int scatter)
{
    tile_cursor c = {tile, pl->esize, scatter};
    blas_walk_range(&sl->walk, begin, begin + n, move_seg, &c);
}

/* ---- the tiles ------------------------------------------------------------------------ */
static void run_tiles(void *arg, int64_t t0, int64_t t1)
{
    fused_plan *pl = arg;
    /* on the stack (32 KiB at most): a graph replays tiny programs, where malloc would cost
     * more than the work */
    _Alignas(64) char bufs[FF_FUSED_MAX_VALUES * FUSED_TILE_BYTES];
    static const int64_t ones[3] = {1, 1, 1};
    char *at[FF_FUSED_MAX_VALUES];
    for (int s = 0; s < pl->nslots; s++) {
        const fused_slot *sl = &pl->slot[s];
        char *tile = bufs + (size_t)s * FUSED_TILE_BYTES;
        if (!sl->scalar) continue;
        memcpy(tile, sl->one, (size_t)pl->esize);
        int64_t fill = pl->numel < pl->tile ? pl->numel : pl->tile; /* a tiny program needs few copies */
        if (pl->esize == 4)
            for (int64_t i = 1; i < fill; i++) ((uint32_t *)tile)[i] = ((uint32_t *)tile)[0];
        else
            for (int64_t i = 1; i < fill; i++) ((uint64_t *)tile)[i] = ((uint64_t *)tile)[0];
    }
    for (int64_t t = t0; t < t1; t++) {
        int64_t begin = t * pl->tile, n = pl->numel - begin < pl->tile ? pl->numel - begin : pl->tile;
        for (int s = 0; s < pl->nslots; s++) {
            const fused_slot *sl = &pl->slot[s];
            at[s] = sl->mem && !sl->stream ? sl->mem + begin * pl->esize : bufs + (size_t)s * FUSED_TILE_BYTES;
            if (sl->load && !sl->mem && !sl->scalar) move_tile(pl, sl, begin, n, at[s], 0);
        }
        for (int i = 0; i < pl->nops; i++) {
            fused_op *o = &pl->op[i];
            char *p[3] = {at[o->dst], at[o->src[0]], at[o->src[1]]};
            o->plan.seg(&o->plan, n, p, ones);
        }
        for (int s = 0; s < pl->nslots; s++) {
            const fused_slot *sl = &pl->slot[s];
            if (sl->stream && !blas_stream_copy(sl->mem + begin * pl->esize, at[s], n * pl->esize))
                memcpy(sl->mem + begin * pl->esize, at[s], (size_t)(n * pl->esize));
            else if (sl->store && !sl->mem) move_tile(pl, sl, begin, n, at[s], 1);
        }
    }
    blas_stream_fence(); /* the streamed tiles are visible before the pool hands on */
}

/* ---- planning: values -> slots, instructions -> plans ---------------------------------- */
static void plan_slots(fused_plan *pl, const ff_fused_program *p, int *slot_of)
{
    const ff_view *owner[FF_FUSED_MAX_VALUES]; /* each view slot's first view */
    pl->nslots = 0;
    for (int v = 0; v < p->n_values; v++) {
        const ff_view *w = v < p->n_views ? &p->views[v] : NULL;
        int s = 0;
        while (w && s < pl->nslots && !(owner[s] && ffb_same_view(owner[s], w))) s++;
        if (!w || s == pl->nslots) { /* a temporary, or a view unlike the ones before */
            s = pl->nslots++;
            owner[s] = w;
            fused_slot *sl = &pl->slot[s];
            /* field by field: the walk is 400 bytes that only views use (a memset of it was a
             * fifth of a tiny replay) */
            sl->mem = NULL;
            sl->load = sl->store = sl->stream = sl->scalar = 0;
            if (w) {
                blas_walk_init(&sl->walk, p->ndim, p->shape, 1, &w);
                if (blas_view_contiguous(w)) sl->mem = (char *)w->buf + w->offset * pl->esize;
            }
        }
        slot_of[v] = s;
    }
    int written[FF_FUSED_MAX_VALUES] = {0};
    for (int i = 0; i < p->n_inst; i++) {
        const ff_fused_inst *in = &p->inst[i];
        fused_op *o = &pl->op[i];
        int unary = in->kind == FF_KIND_UNARY;
        if (unary) blas_unary_plan(&o->plan, (ff_unary_op)in->op, p->dtype);
        else blas_binary_plan(&o->plan, (ff_binary_op)in->op, p->dtype);
        o->src[0] = slot_of[in->src[0]];
        o->src[1] = unary ? o->src[0] : slot_of[in->src[1]];
        o->dst = slot_of[in->dst];
        for (int k = 0; k < 2; k++)
            if (!written[o->src[k]]) pl->slot[o->src[k]].load = owner[o->src[k]] != NULL;
        written[o->dst] = 1;
        pl->slot[o->dst].store = owner[o->dst] != NULL;
    }
    pl->nops = p->n_inst;
    for (int s = 0; s < pl->nslots; s++) { /* as the plain entries stream theirs (blas_stream.c) */
        fused_slot *sl = &pl->slot[s];
        sl->stream = sl->mem && sl->store && !sl->load && pl->numel >= BLAS_STREAM_MIN;
        int all_zero = owner[s] != NULL;
        for (int d = 0; all_zero && d < p->ndim; d++) all_zero = owner[s]->strides[d] == 0 || p->shape[d] == 1;
        sl->scalar = all_zero && sl->load && !sl->store && !sl->mem;
        sl->one = sl->scalar ? (const char *)owner[s]->buf + owner[s]->offset * pl->esize : NULL;
    }
}

ff_status blas_fused(void *ctx, const ff_fused_program *p)
{
    blas_ctx *c = ctx;
    ff_status st = ffb_fused_check(c ? c->host : NULL, "cpu_blas", p);
    if (st) return st;
    int64_t numel = ffb_fused_numel(p);
    if (numel == 0 || p->n_inst == 0) return FF_OK;

    /* the plan lives on the stack up to FUSED_STACK_INST instructions (every program the
     * core builds), on the heap past that */
    _Alignas(64) unsigned char stack[sizeof(fused_plan) + FUSED_STACK_INST * sizeof(fused_op)];
    fused_plan *pl = p->n_inst <= FUSED_STACK_INST ? (fused_plan *)stack
                                                    : malloc(sizeof *pl + (size_t)p->n_inst * sizeof pl->op[0]);
    if (!pl) return blas_error(ctx, FF_ERR_OOM, "cpu_blas fused: out of memory for a %d-instruction plan", (int)p->n_inst);
    pl->numel = numel;
    pl->esize = (int64_t)ff_dtype_size(p->dtype);
    pl->tile = FUSED_TILE_BYTES / pl->esize;
    int slot_of[FF_FUSED_MAX_VALUES];
    plan_slots(pl, p, slot_of);
    if (!blas_fused_vec(c, pl, p)) {
        int64_t ntiles = (numel + pl->tile - 1) / pl->tile;
        blas_parallel_for(c, ntiles, BLAS_PAR_MIN / pl->tile, 1, run_tiles, pl);
    }
    if ((unsigned char *)pl != stack) free(pl);
    return FF_OK;
}
