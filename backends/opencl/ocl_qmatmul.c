/*
 * The qmatmul entry (kernels/qmatmul.cl): int8 x int8 -> exact int sums -> f32, one
 * work-item per output, any strides. Straightforward rather than fast: it makes
 * quantized models run on the device with the cpu reference's values. Dynamic mode
 * quantizes x on the device first (ff_qdyn_* kernels: a range pass per row, for per
 * tensor a fold of the rows' ranges, whose 8 bytes come back for ff_qmatmul_choose, then
 * one pass writing u8 rows and per-row scales), so x itself never leaves the device.
 */
#include "ocl_impl.h"

static int vec_ok(const ff_view *v, int64_t n) { return v->dtype == FF_F32 && v->ndim == 1 && v->shape[0] == n; }

static ff_status qmatmul_u8(void *ctx, const ff_view *dst, const ff_view *src, int n_src, const ff_qmatmul_params *p)
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

/* x quantized into q [M, K] u8 (and rs [M] per row), *u the u8 mode's parameters. */
static ff_status quantize(ocl_ctx *c, const ff_view *x, int per_row, int reduce_range, void *q, void *rs,
                          ff_qmatmul_params *u)
{
    int64_t M = x->shape[0], K = x->shape[1];
    void *rng = ocl_alloc(c, (size_t)(2 * M + 2) * sizeof(cl_int));
    if (!rng) return ocl_error(c, FF_ERR_OOM, "opencl qmatmul (dynamic): out of memory for %lld row ranges", (long long)M);
    ocl_kview kx = ocl_kview_of(x);
    cl_mem mx = ocl_mem_of(x->buf), mr = ocl_mem_of(rng), mq = ocl_mem_of(q), ms = ocl_mem_of(rs);
    cl_int pr = per_row != 0;
    cl_long lm = M;
    ocl_arg ra[] = {OCL_ARG(kx), OCL_ARG(mx), OCL_ARG(pr), OCL_ARG(mr)}, fa[] = {OCL_ARG(lm), OCL_ARG(mr)};
    ff_status st = ocl_launch(c, "qmatmul", OK_QDYN_RANGE, ra, 4, (size_t)M, 64);
    cl_int r[2] = {ff_qmatmul_ford(0.0f), ff_qmatmul_ford(0.0f)};
    if (!st && !per_row && M > 0 && !(st = ocl_launch(c, "qmatmul", OK_QDYN_FOLD, fa, 2, 1, 0)))
        st = ocl_download(c, rng, 0, r, sizeof r);
    u->a_zero = 128;
    if (!per_row) ff_qmatmul_choose(ff_qmatmul_funord(r[0]), ff_qmatmul_funord(r[1]), reduce_range, &u->a_scale, &u->a_zero);
    cl_float inv = 1.0f / u->a_scale, zero = (cl_float)u->a_zero, qmax = reduce_range ? 127.0f : 255.0f;
    ocl_arg qa[] = {OCL_ARG(kx), OCL_ARG(mx), OCL_ARG(pr), OCL_ARG(mr), OCL_ARG(inv), OCL_ARG(zero), OCL_ARG(qmax),
                    OCL_ARG(mq), OCL_ARG(ms)};
    if (!st) st = ocl_launch(c, "qmatmul", OK_QDYN_QUANTIZE, qa, 9, (size_t)(M * (K ? K : 1)), 64);
    ocl_free(c, rng); /* reused only by later commands in the in-order queue */
    return st;
}

static ff_status qmatmul_dynamic(ocl_ctx *c, const ff_view *dst, const ff_view *src, int n_src,
                                 const ff_qmatmul_params *p)
{
    const ff_view *x = &src[0];
    int want = 3 + (p->has_bias != 0);
    if (n_src != want || dst->ndim != 2 || x->ndim != 2 || x->dtype != FF_F32 || x->shape[0] != dst->shape[0])
        return ocl_error(c, FF_ERR_INVALID,
                         "opencl qmatmul (dynamic): %d inputs, y rank %d, x %s of rank %d; expected %d inputs, y [M, N], "
                         "x F32 [M, K]",
                         n_src, (int)dst->ndim, ffb_dtype_name(x->dtype), (int)x->ndim, want);
    int64_t M = x->shape[0], K = x->shape[1];
    void *q = ocl_alloc(c, (size_t)(M * K) + 1), *rs = q ? ocl_alloc(c, ((size_t)M + 1) * sizeof(float)) : NULL;
    ff_status st = rs ? FF_OK
                      : ocl_error(c, FF_ERR_OOM, "opencl qmatmul (dynamic): out of memory for x [%lld, %lld] in u8",
                                  (long long)M, (long long)K);
    ff_qmatmul_params u = {.has_bias = p->has_bias, .a_per_row = p->a_per_row};
    if (!st) st = quantize(c, x, p->a_per_row, p->reduce_range != 0, q, rs, &u);
    if (!st) {
        ff_view s[5];
        for (int i = 1; i < n_src; i++) s[i] = src[i];
        s[0] = (ff_view){.buf = q, .dtype = FF_U8, .ndim = 2, .shape = {M, K}, .strides = {K, 1}};
        s[n_src] = (ff_view){.buf = rs, .dtype = FF_F32, .ndim = 1, .shape = {M}, .strides = {1}};
        st = qmatmul_u8(c, dst, s, n_src + (p->a_per_row != 0), &u);
    }
    if (q) ocl_free(c, q);
    if (rs) ocl_free(c, rs);
    return st;
}

ff_status ocl_qmatmul(void *ctx, const ff_view *dst, const ff_view *src, int n_src, const ff_qmatmul_params *p)
{
    return p->a_dynamic ? qmatmul_dynamic(ctx, dst, src, n_src, p) : qmatmul_u8(ctx, dst, src, n_src, p);
}
