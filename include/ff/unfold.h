/*
 * im2col and col2im as PyTorch's F.unfold / F.fold (nn.Unfold / nn.Fold): each is the
 * other's gradient, both differentiable twice, on every backend. Per axis (H, W):
 * kernel, dilation, stride >= 1, padding >= 0; L = OH OW blocks with
 * OH = (H + 2 pad - dil (k - 1) - 1) / stride + 1 (likewise OW).
 */
#ifndef FF_UNFOLD_H
#define FF_UNFOLD_H

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

#ifdef __cplusplus
}
#endif

#endif /* FF_UNFOLD_H */
