/*
 * Adaptive pooling (PyTorch's adaptive_{avg,max}_pool{1,2,3}d): the last nd (1 to 3) axes of
 * x are the spatial ones, any axes before them are batch/channel axes (so [C, H, W] and
 * [N, C, H, W] both work for nd = 2). Output i of a spatial axis of length in pools the
 * window [floor(i in / out), ceil((i + 1) in / out)); out may be 0, in must be >= 1.
 * Differentiable (twice), on every backend, from matmuls, reductions and gathers.
 */
#ifndef FF_POOL_H
#define FF_POOL_H

#include <stdbool.h>

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

/* Max and average pooling over the last nd (1 to 3) axes of x (rank nd + 1 or nd + 2) with
 * every option of PyTorch's max_poolNd / avg_poolNd. Per axis: kernel >= 1, stride >= 1,
 * 0 <= padding <= kernel / 2, dilation >= 1 (max only; avg takes 1). Output size
 * floor((in + 2 pad - dil (k - 1) - 1) / stride) + 1, rounded up under ceil_mode (a last
 * window that would start in the right padding is dropped, as PyTorch). */
typedef struct ff_pool_options {
    int64_t kernel[3], stride[3], padding[3], dilation[3];
    bool ceil_mode;
    bool count_include_pad;   /* avg: padding counts in the divisor (PyTorch's default: true) */
    int64_t divisor_override; /* avg: > 0 divides every window's sum by it; 0: none */
} ff_pool_options;

/* Max pooling (padding never wins). A window's gradient goes to one element, the first
 * maximum in row-major order (its last NaN if it holds NaN); indices (may be NULL) gets
 * that element's flat index within its plane's spatial axes, i64 (return_indices). */
ff_tensor *ff_max_pool(const ff_tensor *x, int nd, const ff_pool_options *o, ff_tensor **indices);

/* Average pooling: each window's sum over its divisor (divisor_override, or the window's
 * size clipped to the padded input, or with count_include_pad false to the input). */
ff_tensor *ff_avg_pool(const ff_tensor *x, int nd, const ff_pool_options *o);

#ifdef __cplusplus
}
#endif

#endif /* FF_POOL_H */
