/*
 * Quantized matmul, the oracle (backend_abi.h, ff_qmatmul_params): u8 activations with
 * one zero point times s8 weights stored as u8 bytes, summed exactly in int64 (the ABI
 * bounds K so the sum also fits the s32 the fast backends use), then scaled in double
 * and rounded once: the exact product the ABI's 2^-21 bound is measured from.
 */
#include "cpu_impl.h"

static ff_status check_2d(void *ctx, const char *what, const ff_view *v, ff_dtype dt, int64_t r, int64_t c)
{
    ff_status st = cpu_check_view(ctx, "qmatmul", what, v);
    if (st) return st;
    if (v->dtype != dt || v->ndim != (c < 0 ? 1 : 2) || v->shape[0] != r || (c >= 0 && v->shape[1] != c))
        return cpu_error(ctx, FF_ERR_INVALID, "cpu qmatmul: %s is %s of rank %d [%lld, ...], expected %s [%lld%s]", what,
                         cpu_dtype_name(v->dtype), (int)v->ndim, (long long)(v->ndim ? v->shape[0] : 0),
                         cpu_dtype_name(dt), (long long)r, c < 0 ? "" : ", K");
    return FF_OK;
}

ff_status cpu_qmatmul(void *ctx, const ff_view *dst, const ff_view *src, int n_src, const ff_qmatmul_params *p)
{
    int want = 3 + (p->has_bias != 0) + (p->a_per_row != 0);
    if (n_src != want) return cpu_error(ctx, FF_ERR_INVALID, "cpu qmatmul: %d inputs, expected %d", n_src, want);
    const ff_view *a = &src[0], *b = &src[1], *sb = &src[2], *bias = p->has_bias ? &src[3] : NULL;
    const ff_view *sa = p->a_per_row ? &src[want - 1] : NULL;
    if (dst->ndim != 2 || a->ndim != 2)
        return cpu_error(ctx, FF_ERR_INVALID, "cpu qmatmul: dst and a must be 2-D (got ranks %d and %d)", (int)dst->ndim,
                         (int)a->ndim);
    int64_t M = dst->shape[0], N = dst->shape[1], K = a->shape[1];
    ff_status st;
    if ((st = check_2d(ctx, "dst", dst, FF_F32, M, N)) || (st = check_2d(ctx, "a", a, FF_U8, M, K)) ||
        (st = check_2d(ctx, "b", b, FF_U8, N, K)) || (st = check_2d(ctx, "b_scale", sb, FF_F32, N, -1)) ||
        (bias && (st = check_2d(ctx, "bias", bias, FF_F32, N, -1))) ||
        (sa && (st = check_2d(ctx, "a_scale", sa, FF_F32, M, -1))))
        return st;
    const uint8_t *pa = (const uint8_t *)a->buf + a->offset, *pb = (const uint8_t *)b->buf + b->offset;
    const float *ps = (const float *)sb->buf + sb->offset, *pbias = bias ? (const float *)bias->buf + bias->offset : NULL;
    const float *psa = sa ? (const float *)sa->buf + sa->offset : NULL;
    float *py = (float *)dst->buf + dst->offset;
    for (int64_t m = 0; m < M; m++)
        for (int64_t n = 0; n < N; n++) {
            int64_t acc = 0;
            for (int64_t k = 0; k < K; k++)
                acc += ((int64_t)pa[m * a->strides[0] + k * a->strides[1]] - p->a_zero) *
                       (int64_t)(int8_t)pb[n * b->strides[0] + k * b->strides[1]];
            double y = (double)acc * (psa ? psa[m * sa->strides[0]] : p->a_scale) * ps[n * sb->strides[0]];
            if (pbias) y += pbias[n * bias->strides[0]];
            py[m * dst->strides[0] + n * dst->strides[1]] = (float)y;
        }
    return FF_OK;
}
