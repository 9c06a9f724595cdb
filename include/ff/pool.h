/*
 * Adaptive pooling (PyTorch's adaptive_{avg,max}_pool{1,2,3}d): the last nd (1 to 3) axes of
 * x are the spatial ones, any axes before them are batch/channel axes (so [C, H, W] and
 * [N, C, H, W] both work for nd = 2). Output i of a spatial axis of length in pools the
 * window [floor(i in / out), ceil((i + 1) in / out)); out may be 0, in must be >= 1.
 * Differentiable (twice), on every backend, from matmuls, reductions and gathers.
 */
#ifndef FF_POOL_H
#define FF_POOL_H

#include "ff/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The mean of each window. out: nd output sizes. */
ff_tensor *ff_adaptive_avg_pool(const ff_tensor *x, int nd, const int64_t *out);

/* The max of each window (NaN if it holds one). A window's gradient goes to one element,
 * PyTorch's index: the first maximum in row-major order, its last NaN if it holds NaN.
 * indices (may be NULL) gets that element's flat index within the spatial axes of its
 * plane (h * W + w for nd = 2), i64 of the output's shape, as PyTorch's return_indices. */
ff_tensor *ff_adaptive_max_pool(const ff_tensor *x, int nd, const int64_t *out, ff_tensor **indices);

#ifdef __cplusplus
}
#endif

#endif /* FF_POOL_H */
