/*
 * Quantized matmul, the oracle (backend_abi.h, ff_qmatmul_params): u8 activations with
 * one zero point times s8 weights stored as u8 bytes, summed exactly in int64 (the ABI
 * bounds K so the sum also fits the s32 the fast backends use), then scaled in double
 * and rounded once: the exact product the ABI's 2^-21 bound is measured from. Dynamic
 * mode quantizes x by the ABI's rule in plain loops first, then runs the same product.
 */
#include <stdlib.h>

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

static ff_status qmatmul_u8(void *ctx, const ff_view *dst, const ff_view *src, int n_src, const ff_qmatmul_params *p)
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

/* x [M, K] F32 -> q [M, K] u8 dense (and rs [M], per row), *u the u8 mode's parameters. */
static void quantize(const ff_view *x, int64_t M, int64_t K, int reduce_range, uint8_t *q, float *rs,
                     ff_qmatmul_params *u)
{
    const float *px = (const float *)x->buf + x->offset;
    int64_t s0 = x->strides[0], s1 = x->strides[1];
    if (u->a_per_row) {
        u->a_zero = 128;
        for (int64_t m = 0; m < M; m++) {
            int32_t amax = 0; /* on the bits: a NaN beats +inf */
            for (int64_t k = 0; k < K; k++) {
                int32_t v = ff_qmatmul_ford(fabsf(px[m * s0 + k * s1]));
                amax = v > amax ? v : amax;
            }
            rs[m] = ff_qmatmul_row_scale(ff_qmatmul_funord(amax));
            float inv = 1.0f / rs[m];
            for (int64_t k = 0; k < K; k++) q[m * K + k] = ff_qmatmul_round(px[m * s0 + k * s1] * inv, 128.0f, 1.0f, 255.0f);
        }
        return;
    }
    int32_t lo = ff_qmatmul_ford(0.0f), hi = lo;
    for (int64_t m = 0; m < M; m++)
        for (int64_t k = 0; k < K; k++) {
            int32_t v = ff_qmatmul_ford(px[m * s0 + k * s1]);
            lo = v < lo ? v : lo, hi = v > hi ? v : hi;
        }
    ff_qmatmul_choose(ff_qmatmul_funord(lo), ff_qmatmul_funord(hi), reduce_range, &u->a_scale, &u->a_zero);
    float inv = 1.0f / u->a_scale, qmax = reduce_range ? 127.0f : 255.0f;
    for (int64_t m = 0; m < M; m++)
        for (int64_t k = 0; k < K; k++)
            q[m * K + k] = ff_qmatmul_round(px[m * s0 + k * s1] * inv, (float)u->a_zero, 0.0f, qmax);
}

static ff_status qmatmul_dynamic(void *ctx, const ff_view *dst, const ff_view *src, int n_src,
                                 const ff_qmatmul_params *p)
{
    int want = 3 + (p->has_bias != 0);
    if (n_src != want || dst->ndim != 2 || src[0].ndim != 2)
        return cpu_error(ctx, FF_ERR_INVALID, "cpu qmatmul (dynamic): %d inputs, dst rank %d, x rank %d; expected %d, 2, 2",
                         n_src, (int)dst->ndim, (int)src[0].ndim, want);
    int64_t M = dst->shape[0], K = src[0].shape[1];
    ff_status st = check_2d(ctx, "x", &src[0], FF_F32, M, K);
    if (st) return st;
    uint8_t *q = malloc((size_t)(M * K) + 1);
    float *rs = malloc(((size_t)M + 1) * sizeof(float));
    if (!q || !rs) {
        free(q), free(rs);
        return cpu_error(ctx, FF_ERR_OOM, "cpu qmatmul (dynamic): out of memory for x [%lld, %lld]", (long long)M,
                         (long long)K);
    }
    ff_qmatmul_params u = {.has_bias = p->has_bias, .a_per_row = p->a_per_row};
    quantize(&src[0], M, K, p->reduce_range, q, rs, &u);
    ff_view s[5];
    for (int i = 1; i < n_src; i++) s[i] = src[i];
    s[0] = (ff_view){.buf = q, .dtype = FF_U8, .ndim = 2, .shape = {M, K}, .strides = {K, 1}};
    s[n_src] = (ff_view){.buf = rs, .dtype = FF_F32, .ndim = 1, .shape = {M}, .strides = {1}};
    st = qmatmul_u8(ctx, dst, s, n_src + (p->a_per_row != 0), &u);
    free(q), free(rs);
    return st;
}

ff_status cpu_qmatmul(void *ctx, const ff_view *dst, const ff_view *src, int n_src, const ff_qmatmul_params *p)
{
    return p->a_dynamic ? qmatmul_dynamic(ctx, dst, src, n_src, p) : qmatmul_u8(ctx, dst, src, n_src, p);
}
