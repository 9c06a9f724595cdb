/*
 * Part of include/ff/backend_abi.h, which includes it where the qmatmul entry's types
 * belong (after the views, before the vtable): the quantized matmul's parameters and the
 * one quantization rule the core and every backend share. A backend includes
 * backend_abi.h, never this file alone.
 */
#ifndef FF_BACKEND_ABI_QMATMUL_H
#define FF_BACKEND_ABI_QMATMUL_H
#ifndef FF_BACKEND_ABI_H
#error "include ff/backend_abi.h, which includes this file"
#endif

/* Quantized matmul (the optional qmatmul entry): the product of PyTorch's dynamic
 * quantized Linear, u8 activations (affine: one zero point, and one scale per tensor or
 * per row) times s8 weights (symmetric, one scale per output channel). Views, 2-D, any
 * strides:
 *   src {a [M, K] FF_U8, b [N, K] FF_U8 holding s8 bits (two's complement), b_scale [N]
 *        FF_F32 (, bias [N] FF_F32 when has_bias) (, a_scale [M] FF_F32 when a_per_row)}
 *   dst {y [M, N] FF_F32}
 * There is no s8 dtype: the weight bytes travel as FF_U8 and only this entry reads them
 * as signed (ff/quant.h keeps them apart from ordinary u8 tensors). With
 *   acc[m,n] = sum_k (a[m,k] - a_zero) * (int8)b[n,k]   exact in s32 (the core keeps K
 *   under FF_QMATMUL_MAX_K, so no sum can overflow, and no backend may saturate an
 *   intermediate: a u8 x s8 pair product kernel without VNNI must widen first),
 *   y[m,n] = acc[m,n] * sa[m] * b_scale[n] (+ bias[n]), sa[m] = a_scale or a_scale[m],
 * in f32: the scaling may round up to three times in any order (and fuse, FMA), so y is
 * within a relative 2^-21 of the exact product (conformance checks that bound). */
#define FF_QMATMUL_MAX_K 65000 /* 255 * 128 * K < 2^31 */
typedef struct ff_qmatmul_params {
    float a_scale;     /* per tensor (ignored when a_per_row or a_dynamic) */
    int32_t a_zero;    /* 0 .. 255 (ignored when a_dynamic) */
    int32_t has_bias;  /* 1: src holds the bias after b_scale */
    int32_t a_per_row; /* 1: src ends with a_scale [M]; with a_dynamic: per-row mode, no a_scale view */
    /* appended (dynamic mode; the core sends both 0 to a backend that declines it): */
    int32_t a_dynamic;    /* 1: src[0] is the float activation x [M, K], quantized by the entry */
    int32_t reduce_range; /* per-tensor dynamic mode: 7 bits (qmax 127) instead of 8 */
} ff_qmatmul_params;

/* Dynamic mode (only where supports(FF_KIND_QMATMUL, FF_QMATMUL_DYNAMIC, dtype) says
 * yes, dtype = x's; the core asks for FF_F32 and sends F32): src {x [M, K] (any strides),
 * b, b_scale (, bias)}, no a_scale view. The entry quantizes x itself and then computes
 * exactly what the u8 mode computes for the a, a_scale (or a_scale [M]) and a_zero below,
 * which are those the core's host quantization (ff/quant.h) writes, bit for bit:
 *   per tensor (a_per_row 0): lo, hi = min, max of x and 0 in the order of
 *     ff_qmatmul_ford (-NaN < -inf < ... < +inf < +NaN); ff_qmatmul_choose(lo, hi,
 *     reduce_range) picks a_scale and a_zero (a NaN end counts as 0, an infinite one as
 *     +-FLT_MAX); a[m,k] = ff_qmatmul_round(x[m,k] * (1.0f / a_scale), a_zero, 0, qmax),
 *     qmax = reduce_range ? 127 : 255;
 *   per row (a_per_row 1): symmetric, a_zero = 128, a_scale[m] =
 *     ff_qmatmul_row_scale(max_k |x[m,k]|) (the max taken on the bits, so a NaN beats
 *     +inf), a[m,k] = ff_qmatmul_round(x[m,k] * (1.0f / a_scale[m]), 128, 1, 255).
 * The products x * inv are single f32 multiplications (no FMA with the rounding). So NaN
 * quantizes to the range's low end, +-inf to its ends. The chosen parameters are not
 * handed back: y is the result (conformance compares it with the u8 mode's on the
 * core's quantization). */
#define FF_QMATMUL_DYNAMIC 1 /* supports() op code only (never an entry op) */

/* The float bits as an int that orders as the floats do, NaNs beyond +-inf (integer
 * min/max vectorize where float ones, with their NaN rules, do not), and back. */
static inline FF_ABI_HD int32_t ff_qmatmul_ford(float f)
{
    union { float f; int32_t i; } u = {f};
    return u.i ^ (int32_t)((uint32_t)(u.i >> 31) >> 1);
}

static inline FF_ABI_HD float ff_qmatmul_funord(int32_t i)
{
    union { int32_t i; float f; } u = {i ^ (int32_t)((uint32_t)(i >> 31) >> 1)};
    return u.f;
}

/* PyTorch's ChooseQuantizationParams for u8 over [lo, hi] widened to hold 0 (0 is exact,
 * as padding and ReLU need); NaN ends count as 0, infinite ones as +-FLT_MAX (so the
 * parameters stay finite and inf saturates). */
static inline FF_ABI_HD void ff_qmatmul_choose(float lo, float hi, int reduce_range, float *scale, int32_t *zero)
{
    int qmin = 0, qmax = reduce_range ? 127 : 255;
    lo = lo != lo ? 0.0f : lo, hi = hi != hi ? 0.0f : hi;
    lo = lo < -3.40282347e38f ? -3.40282347e38f : lo > 0.0f ? 0.0f : lo;
    hi = hi > 3.40282347e38f ? 3.40282347e38f : hi < 0.0f ? 0.0f : hi;
    float s = (float)(((double)hi - lo) / (qmax - qmin));
    if (s == 0.0f || isinf(1.0f / s)) s = 0.1f;
    double zmin = qmin - lo / (double)s, zmax = qmax - hi / (double)s;
    double emin = fabs((double)qmin) - fabs(lo / (double)s), emax = fabs((double)qmax) - fabs(hi / (double)s);
    double z0 = emin < emax ? zmin : zmax;
    *zero = z0 < qmin ? qmin : z0 > qmax ? qmax : (int32_t)nearbyint(z0);
    *scale = s;
}

/* Per-row mode's scale for a row whose largest |x| is amax. */
static inline FF_ABI_HD float ff_qmatmul_row_scale(float amax)
{
    return amax > 0 && amax <= 3.40282347e38f ? amax / 127.0f : 1.0f;
}

/* clamp(nearbyint(v) + zero, lo, hi) without libm calls, so loops over it vectorize:
 * adding and taking away 1.5 * 2^23 rounds to the nearest integer, ties to even (after
 * clamping |v| to 512; NaN clamps to lo). v is x * (1.0f / scale), one f32 product. */
static inline FF_ABI_HD uint8_t ff_qmatmul_round(float v, float zero, float lo, float hi)
{
    v = v > -512.0f ? v : -512.0f;
    v = v < 512.0f ? v : 512.0f;
    v = (v + 0x1.8p23f) - 0x1.8p23f + zero;
    v = v > lo ? v : lo;
    v = v < hi ? v : hi;
    return (uint8_t)(int32_t)v;
}

#endif /* FF_BACKEND_ABI_QMATMUL_H */
