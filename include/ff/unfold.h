/*
 * Image-plane sampling ops. im2col and col2im as PyTorch's F.unfold / F.fold (nn.Unfold /
 * nn.Fold), and grid_sample / affine_grid (below). unfold and fold: each is the
 * other's gradient, both differentiable twice, on every backend. Per axis (H, W):
 * kernel, dilation, stride >= 1, padding >= 0; L = OH OW blocks with
 * OH = (H + 2 pad - dil (k - 1) - 1) / stride + 1 (likewise OW).
 */
#ifndef FF_UNFOLD_H
#define FF_UNFOLD_H

#include <stdbool.h>

#include "ff/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ff_unfold_params {
    int64_t kernel[2], dilation[2], padding[2], stride[2];
} ff_unfold_params;

/* x [N, C, H, W] -> [N, C kh kw, L]: row c kh kw + i kw + j holds element (i, j) of every
 * block, x padded with zeros. */
ff_tensor *ff_unfold(const ff_tensor *x, const ff_unfold_params *p);

/* x [N, C kh kw, L] -> [N, C, out[0], out[1]]: every block's elements summed back into
 * place (overlaps add up, the padding is dropped). */
ff_tensor *ff_fold(const ff_tensor *x, const int64_t *out, const ff_unfold_params *p);

/* PyTorch's F.grid_sample: x [N, C, H, W] sampled at grid [N, Ho, Wo, 2] (x, y in [-1, 1],
 * one dtype) -> [N, C, Ho, Wo]. mode 0 bilinear, 1 nearest; padding_mode 0 zeros, 1 border,
 * 2 reflection. Differentiable in x and grid (ops/grid_sample.c). */
ff_tensor *ff_grid_sample(const ff_tensor *x, const ff_tensor *grid, int mode, int padding_mode, bool align_corners);

/* PyTorch's F.affine_grid (2-D): theta [N, 2, 3], size {N, C, H, W} -> grid [N, H, W, 2];
 * differentiable in theta. */
ff_tensor *ff_affine_grid(const ff_tensor *theta, const int64_t *size, bool align_corners);

#ifdef __cplusplus
}
#endif

#endif /* FF_UNFOLD_H */
