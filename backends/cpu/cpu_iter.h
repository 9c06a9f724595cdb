/*
 * A strided n-d index iterator: walks a shape in row-major order and keeps, for up
 * to CPU_ITER_MAX_VIEWS views at once, the element offset of the current index.
 *
 *     const ff_view *vs[] = {dst, a, b};
 *     cpu_iter it;
 *     for (cpu_iter_init(&it, dst->ndim, dst->shape, 3, vs); !it.done; cpu_iter_next(&it))
 *         ... element it.off[0] of dst, it.off[1] of a, it.off[2] of b ...
 *
 * Only the views' offsets and strides are used; the shape walked is the one passed
 * in, so a caller can walk a sub-shape (e.g. with one axis set to 1) of larger
 * views. Stride 0 (broadcast) and any stride order work. A 0-d shape yields exactly
 * one position; a shape with a zero extent yields none. it.idx holds the current
 * multi-index; it.n counts positions visited (the row-major logical index).
 */
#ifndef FF_CPU_ITER_H
#define FF_CPU_ITER_H

#include <stdint.h>

#include "ff/backend_abi.h"

#define CPU_ITER_MAX_VIEWS 4

typedef struct cpu_iter {
    int ndim;
    int nviews;
    int done;
    int64_t n;
    int64_t shape[FF_MAX_DIMS];
    int64_t idx[FF_MAX_DIMS];
    int64_t strides[CPU_ITER_MAX_VIEWS][FF_MAX_DIMS];
    int64_t off[CPU_ITER_MAX_VIEWS];
} cpu_iter;

/* ndim <= FF_MAX_DIMS and nviews <= CPU_ITER_MAX_VIEWS; every view must have at
 * least ndim dims. */
static inline void cpu_iter_init(cpu_iter *it, int ndim, const int64_t *shape, int nviews,
                                 const ff_view *const *views)
{
    it->ndim = ndim;
    it->nviews = nviews;
    it->done = 0;
    it->n = 0;
    for (int d = 0; d < ndim; d++) {
        it->shape[d] = shape[d];
        it->idx[d] = 0;
        if (shape[d] == 0) it->done = 1;
    }
    for (int k = 0; k < nviews; k++) {
        it->off[k] = views[k]->offset;
        for (int d = 0; d < ndim; d++) it->strides[k][d] = views[k]->strides[d];
    }
}

/* Advances to the next position; sets done after the last one. */
static inline void cpu_iter_next(cpu_iter *it)
{
    it->n++;
    for (int d = it->ndim - 1; d >= 0; d--) {
        if (++it->idx[d] < it->shape[d]) {
            for (int k = 0; k < it->nviews; k++) it->off[k] += it->strides[k][d];
            return;
        }
        /* carry: rewind this dim to 0 and move on to the next outer one */
        it->idx[d] = 0;
        for (int k = 0; k < it->nviews; k++) it->off[k] -= it->strides[k][d] * (it->shape[d] - 1);
    }
    it->done = 1;
}

#endif /* FF_CPU_ITER_H */
