/*
 * The qmatmul entry (kernels/qmatmul.cl): int8 x int8 -> exact int sums -> f32, one
 * work-item per output, any strides. Straightforward rather than fast: it makes
 * quantized models run on the device with the cpu reference's values.
 */
#include "ocl_impl.h"

static int vec_ok(const ff_view *v, int64_t n) { return v->dtype == FF_F32 && v->ndim == 1 && v->shape[0] == n; }

ff_status ocl_qmatmul(void *ctx, const ff_view *dst, const ff_view *src, int n_src, const ff_qmatmul_params *p)
{
    ocl_ctx *c = ctx;
    int want = 3 + (p->has_bias != 0) + (p->a_per_row != 0);
    const ff_view *a = &src[0], *b = &src[1], *s = &src[2];
    if (n_src != want || dst->ndim != 2 || a->ndim != 2 || b->ndim != 2)
        return ocl_error(c, FF_ERR_INVALID, "opencl qmatmul: %d inputs, ranks y %d a %d b %d; expected %d inputs, 2-D",
                         n_src, (int)dst->ndim, (int)a->ndim, (int)b->ndim, want);
    int64_t M = dst->shape[0], N = dst->shape[1], K = a->shape[1];
    const ff_view *bias = p->has_bias ? &src[3] : s, *row = p->a_per_row ? &src[want - 1] : s;
    if (dst->dtype != FF_F32 || a->dtype != FF_U8 || b->dtype != FF_U8 || a->shape[0] != M || b->shape[0] != N ||
        b->shape[1] != K || !vec_ok(s, N) || (p->has_bias && !vec_ok(bias, N)) || (p->a_per_row && !vec_ok(row, M)))
        return ocl_error(c, FF_ERR_INVALID,
                         "opencl qmatmul: expected y F32 [M, N], a U8 [M, K], b U8 [N, K], scales (bias) F32 [N], "
                         "per-row scales F32 [M] (M=%lld N=%lld K=%lld)",
                         (long long)M, (long long)N, (long long)K);
    ocl_kview ka = ocl_kview_of(a), kb = ocl_kview_of(b), ks = ocl_kview_of(s), kbias = ocl_kview_of(bias);
    ocl_kview krow = ocl_kview_of(row), ky = ocl_kview_of(dst);
    cl_mem ma = ocl_mem_of(a->buf), mb = ocl_mem_of(b->buf), ms = ocl_mem_of(s->buf), mbias = ocl_mem_of(bias->buf);
    cl_mem mrow = ocl_mem_of(row->buf), my = ocl_mem_of(dst->buf);
    cl_int has_bias = p->has_bias != 0, per_row = p->a_per_row != 0, zero = p->a_zero;
    cl_float scale = p->a_scale;
    ocl_arg args[] = {OCL_ARG(ka),    OCL_ARG(ma),   OCL_ARG(kb),       OCL_ARG(mb),      OCL_ARG(ks),
                      OCL_ARG(ms),    OCL_ARG(kbias), OCL_ARG(mbias),   OCL_ARG(krow),    OCL_ARG(mrow),
                      OCL_ARG(has_bias), OCL_ARG(per_row), OCL_ARG(scale), OCL_ARG(zero), OCL_ARG(ky), OCL_ARG(my)};
    return ocl_launch(c, "qmatmul", OK_QMATMUL, args, 16, (size_t)(M * N), 64);
}
