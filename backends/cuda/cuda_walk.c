/*
 * From views to walks: the by-value struct every kernel receives (cuda_impl.h), with
 * size-1 dims dropped and dims that are contiguous in every operand merged, so most
 * launches become flat loops (rank 0 or 1) whatever the views' layout.
 */
#include <string.h>

#include "cuda_impl.h"

void cuda_walk_merge(cuda_walk *w)
{
    int nd = w->ndim, out = 0;
    /* size-1 dims: their index is always 0 */
    for (int d = 0; d < nd; d++) {
        if (w->shape[d] == 1) continue;
        w->shape[out] = w->shape[d];
        for (int i = 0; i < w->nv; i++) w->strides[i][out] = w->strides[i][d];
        out++;
    }
    nd = out;
    /* dim d folds into the previous kept dim when every operand steps over that dim as
     * one run of d */
    out = 0;
    for (int d = 0; d < nd; d++) {
        int merge = out > 0;
        for (int i = 0; i < w->nv && merge; i++) merge = w->strides[i][out - 1] == w->strides[i][d] * w->shape[d];
        if (merge) {
            w->shape[out - 1] *= w->shape[d];
            for (int i = 0; i < w->nv; i++) w->strides[i][out - 1] = w->strides[i][d];
        } else {
            w->shape[out] = w->shape[d];
            for (int i = 0; i < w->nv; i++) w->strides[i][out] = w->strides[i][d];
            out++;
        }
    }
    w->ndim = out;
    for (int d = out; d < FF_MAX_DIMS; d++) {
        w->shape[d] = 0;
        for (int i = 0; i < w->nv; i++) w->strides[i][d] = 0;
    }
}

cuda_walk cuda_walk_of(const ff_view *const *vs, int n)
{
    cuda_walk w;
    memset(&w, 0, sizeof w);
    w.ndim = vs[0]->ndim;
    w.nv = n;
    for (int d = 0; d < w.ndim; d++) w.shape[d] = vs[0]->shape[d];
    for (int i = 0; i < n; i++) {
        w.offset[i] = vs[i]->offset;
        for (int d = 0; d < w.ndim; d++) w.strides[i][d] = vs[i]->strides[d];
    }
    cuda_walk_merge(&w);
    return w;
}

void cuda_walk_split(const ff_view *dst, const ff_view *src, uint32_t mask, cuda_walk *outer, cuda_walk *inner)
{
    memset(outer, 0, sizeof *outer);
    memset(inner, 0, sizeof *inner);
    outer->nv = 2, inner->nv = 1;
    outer->offset[0] = inner->offset[0] = src->offset;
    outer->offset[1] = dst->offset;
    for (int d = 0; d < src->ndim; d++) {
        if ((mask >> d) & 1u) {
            inner->shape[inner->ndim] = src->shape[d];
            inner->strides[0][inner->ndim++] = src->strides[d];
        } else {
            outer->shape[outer->ndim] = src->shape[d];
            outer->strides[0][outer->ndim] = src->strides[d];
            outer->strides[1][outer->ndim++] = dst->strides[d];
        }
    }
    cuda_walk_merge(outer);
    cuda_walk_merge(inner);
}

int cuda_walk_dense(const cuda_walk *w)
{
    if (w->ndim > 1) return 0;
    for (int i = 0; i < w->nv && w->ndim == 1; i++)
        if (w->strides[i][0] != 1) return 0;
    return 1;
}

int64_t cuda_walk_numel(const cuda_walk *w)
{
    int64_t n = 1;
    for (int d = 0; d < w->ndim; d++) n *= w->shape[d];
    return n;
}
