/* The fused entry's plan, shared by its two executors: the tiles (blas_fused.c, any
 * layout, any op the plain entries take) and the vector registers (blas_fused_vec.c,
 * f32 programs of exact ops over contiguous views). */
#ifndef FF_BLAS_FUSED_H
#define FF_BLAS_FUSED_H

#include "blas_impl.h"

typedef struct fused_slot {
    char *mem;       /* contiguous view: its first element (tiles live in memory); else NULL */
    int load, store; /* a view read before any instruction writes it / written */
    int stream;      /* a big contiguous output only: computed in a tile, streamed out */
    int scalar;      /* a read-only view of one element (every stride 0: an lr, a constant):
                      * its tile is filled once per chunk, not gathered per tile */
    const char *one; /* a scalar's element */
    blas_walk walk;  /* a view alone, for the gather and the scatter (not for temporaries) */
} fused_slot;

typedef struct fused_op {
    blas_elem_plan plan;
    int dst, src[2]; /* slots */
} fused_op;

typedef struct fused_plan {
    int64_t numel, tile, esize;
    int nslots, nops;
    fused_slot slot[FF_FUSED_MAX_VALUES];
    fused_op op[]; /* nops */
} fused_plan;

/* Runs the program in vector registers when it can (f32, AVX-512F, every view contiguous
 * or a scalar, every instruction an exact op: add sub mul div neg abs square sqrt
 * reciprocal relu); returns 1 if it ran it, 0 if the tiles must. Same bits as the
 * plain entries: each op is IEEE's correctly rounded one, in program order. */
int blas_fused_vec(blas_ctx *c, const fused_plan *pl, const ff_fused_program *p);

#endif
