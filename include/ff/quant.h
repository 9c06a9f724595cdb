/*
 * FusionFlow int8 quantization: quantize / dequantize and the dynamic quantized Linear
 * (PyTorch's torch.ao.nn.quantized.dynamic.Linear), over the optional qmatmul backend
 * entry (backend_abi.h, ff_qmatmul_params).
 *
 * Representation: there is no s8 dtype. A quantized tensor is its integer bytes in an
 * FF_U8 tensor plus the scheme (ff_qdtype, scales, zero points) that the caller keeps
 * beside it; FF_QINT8 bytes are two's complement s8 (-1 is 0xff). Why: an s8 dtype would
 * reach every backend's dtype switches and tables for the benefit of two entries; the
 * bytes only ever meet qmatmul and copies/views, which do not care about the sign.
 * Keep FF_QINT8 bytes away from arithmetic on U8 (it would read -1 as 255); the Python
 * front end wraps them in a quantized tensor type that does.
 *
 * Rounding follows fbgemm: q = clamp(nearbyint(x * (1/scale)) + zero, qmin, qmax) with
 * 1/scale in f32 and ties to even. Quantize / dequantize run on the host (one copy each
 * way for device tensors); the dynamic Linear's activation is quantized by the backend's
 * qmatmul entry where it has the dynamic mode (cpu, cpu_blas, opencl: the same rule,
 * backend_abi.h's ff_qmatmul_*), on the host elsewhere. Inference only: results carry
 * no gradient.
 */
#ifndef FF_QUANT_H
#define FF_QUANT_H

#include <stdbool.h>

#include "ff/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum ff_qdtype {
    FF_QUINT8 = 0, /* u8, [0, 255] */
    FF_QINT8 = 1   /* s8 in U8 bytes, [-128, 127] */
} ff_qdtype;

/* x (float, any shape) quantized with one scale (> 0, finite) and zero point (in the
 * qdtype's range); an FF_U8 tensor of x's shape on x's backend. */
ff_tensor *ff_quantize_per_tensor(const ff_tensor *x, double scale, int64_t zero, ff_qdtype qt);
/* Per channel along axis: scales (float, [x.shape[axis]]), zeros (integer of the same
 * length, or NULL for all 0). */
ff_tensor *ff_quantize_per_channel(const ff_tensor *x, const ff_tensor *scales, const ff_tensor *zeros, int axis,
                                   ff_qdtype qt);
/* (q - zero) * scale in F32, q an FF_U8 tensor read as qt. */
ff_tensor *ff_dequantize_per_tensor(const ff_tensor *q, double scale, int64_t zero, ff_qdtype qt);
ff_tensor *ff_dequantize_per_channel(const ff_tensor *q, const ff_tensor *scales, const ff_tensor *zeros, int axis,
                                     ff_qdtype qt);

/* The weight of a dynamic quantized Linear, w (float [N, K]), per output channel and
 * symmetric, as PyTorch's per_channel_symmetric qint8 observer chooses it:
 * scale[n] = max(max_k |w[n, k]| / 127.5, f32 eps), zero 0. *q: FF_U8 [N, K] holding s8,
 * *scales: F32 [N], both on w's backend. On failure both are NULL. */
ff_status ff_quantize_weight_s8(const ff_tensor *w, ff_tensor **q, ff_tensor **scales);

/* The dynamic quantized Linear: x (float [..., K]) quantized per call to u8 with the
 * scale and zero point of its min and max (the range widened to hold 0; 7 bits when
 * reduce_range, as fbgemm's x86 kernels use), then y = qmatmul(x_q, wq, w_scales) + bias.
 * wq, w_scales as ff_quantize_weight_s8 writes them, bias F32 [N] or NULL; all on x's
 * backend, which needs the qmatmul entry (cpu, cpu_blas, opencl). y: [..., N] in x's dtype. */
ff_tensor *ff_linear_dynamic_int8(const ff_tensor *x, const ff_tensor *wq, const ff_tensor *w_scales,
                                  const ff_tensor *bias, bool reduce_range);

/* The same with one scale per row of x (each token of a transformer): symmetric, scale
 * max|x[m]| / 127, the values shifted by 128 into u8. Not PyTorch 1.13's scheme, but far
 * closer to f32 where rows differ in range (a transformer's outlier tokens); what
 * ff-embed --dtype int8 uses. */
ff_tensor *ff_linear_dynamic_int8_rows(const ff_tensor *x, const ff_tensor *wq, const ff_tensor *w_scales,
                                       const ff_tensor *bias);

/* The scale and zero point ff_linear_dynamic_int8 picks for values in [lo, hi]
 * (PyTorch's ChooseQuantizationParams for u8; a NaN end counts as 0, an infinite one as
 * +-FLT_MAX: backend_abi.h's ff_qmatmul_choose). */
void ff_quant_choose_params(float lo, float hi, bool reduce_range, float *scale, int32_t *zero);

#ifdef __cplusplus
}
#endif

#endif /* FF_QUANT_H */
