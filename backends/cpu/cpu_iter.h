/*
 * A strided n-d iterator over rows: walks every dim of a shape but the innermost in
 * row-major order and keeps, for up to CPU_ITER_MAX_VIEWS views at once, the element
 * offset where the current row starts. The caller loops over the row itself, which
 * keeps the per-element cost to one multiply-add per view:
 *
 *     const ff_view *vs[] = {dst, a, b};
 *     cpu_iter it;
 *     for (cpu_iter_init(&it, dst->ndim, dst->shape, 3, vs); !it.done; cpu_iter_next(&it)) {
 *         int64_t n = it.len, od = it.off[0], sd = it.step[0], oa = it.off[1], sa = it.step[1], ...;
 *         for (int64_t j = 0; j < n; j++)
 *             ... dst element od + j * sd, a element oa + j * sa, ...
 *     }
 *
 * Copying the row's fields (and the views' buf/dtype) into locals before the inner
 * loop matters for speed: a kernel's byte stores (U8/BOOL) may alias anything as far
 * as C is concerned, so without locals the compiler reloads them for every element.
 *
 * Only the views' offsets and strides are used; the shape walked is the one passed
 * in, so a caller can walk a sub-shape (e.g. with one axis set to 1) of larger views.
 * Stride 0 (broadcast) and any stride order work. A 0-d shape is one row of one
 * element; a shape with a zero extent has no rows. it.idx holds the multi-index of
 * the row start (idx[ndim - 1] stays 0; the element's index there is j), and it.n
 * is the row-major logical index of the row's first element.
 */
#ifndef FF_CPU_ITER_H
#define FF_CPU_ITER_H

#include <stdint.h>

#include "ff/backend_abi.h"

#define CPU_ITER_MAX_VIEWS 4

typedef struct cpu_iter {
    int outer;                         /* dims walked by cpu_iter_next: ndim - 1 (0 for 0-d) */
    int nviews;
    int done;
    int64_t len;                       /* elements per row: shape[ndim - 1] (1 for 0-d) */
    int64_t n;                         /* logical index of the row's first element */
    int64_t step[CPU_ITER_MAX_VIEWS];  /* each view's stride along the row */
    int64_t off[CPU_ITER_MAX_VIEWS];   /* each view's offset of the row's first element */
    int64_t shape[FF_MAX_DIMS];
    int64_t idx[FF_MAX_DIMS];
    int64_t strides[CPU_ITER_MAX_VIEWS][FF_MAX_DIMS];
} cpu_iter;

/* ndim <= FF_MAX_DIMS and nviews <= CPU_ITER_MAX_VIEWS; every view must have at
 * least ndim dims. */
static inline void cpu_iter_init(cpu_iter *it, int ndim, const int64_t *shape, int nviews,
                                 const ff_view *const *views)
{
    it->outer = ndim > 0 ? ndim - 1 : 0;
    it->nviews = nviews;
    it->done = 0;
    it->n = 0;
    it->len = ndim > 0 ? shape[ndim - 1] : 1;
    for (int d = 0; d < ndim; d++) {
        it->shape[d] = shape[d];
        it->idx[d] = 0;
        if (shape[d] == 0) it->done = 1;
    }
    for (int k = 0; k < nviews; k++) {
        it->off[k] = views[k]->offset;
        it->step[k] = ndim > 0 ? views[k]->strides[ndim - 1] : 0;
        for (int d = 0; d < ndim; d++) it->strides[k][d] = views[k]->strides[d];
    }
}

/* Advances to the next row; sets done after the last one. */
static inline void cpu_iter_next(cpu_iter *it)
{
    it->n += it->len;
    for (int d = it->outer - 1; d >= 0; d--) {
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
