/*
 * The dynamic quantized Linear (include/ff/quant.h): the activation quantized per call
 * from its own min and max (per tensor, as torch.ao.nn.quantized.dynamic.Linear: same
 * parameter choice and rounding; or per row), the product on the backend's qmatmul entry.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "ff_impl.h"
#include "ff/quant.h"


static bool is_vec(const ff_tensor *t, ff_dtype dt, int64_t n)
{
    return t && ff_tensor_dtype(t) == dt && ff_tensor_ndim(t) == 1 && ff_tensor_dim(t, 0) == n;
}

/* Per row, symmetric: row m's scale max|x[m]| / 127, values shifted by the zero point 128
 * into u8 (so one zero point serves every row). */
static void quantize_per_row(const float *x, int64_t M, int64_t K, uint8_t *q, float *scale)
{
    for (int64_t m = 0; m < M; m++) {
        const float *r = x + m * K;
        float amax = 0;
        for (int64_t k = 0; k < K; k++) amax = fmaxf(amax, fabsf(r[k]));
        scale[m] = amax > 0 && isfinite(amax) ? amax / 127.0f : 1.0f;
        float inv = 1.0f / scale[m];
        for (int64_t k = 0; k < K; k++) q[m * K + k] = (uint8_t)fminf(fmaxf(nearbyintf(r[k] * inv) + 128.0f, 1.0f), 255.0f);
    }
}

/* x [M, K] floats on the host -> u8 with the chosen parameters. */
static void quantize_rows(const float *x, int64_t n, uint8_t *q, bool reduce_range, ff_qmatmul_params *p)
{
    float lo = INFINITY, hi = -INFINITY;
    for (int64_t i = 0; i < n; i++) lo = fminf(lo, x[i]), hi = fmaxf(hi, x[i]);
    if (n == 0) lo = hi = 0;
    ff_quant_choose_params(lo, hi, reduce_range, &p->a_scale, &p->a_zero);
    float inv = 1.0f / p->a_scale, qmax = reduce_range ? 127.0f : 255.0f;
    for (int64_t i = 0; i < n; i++) {
        float v = nearbyintf(x[i] * inv) + (float)p->a_zero;
        q[i] = (uint8_t)fminf(fmaxf(v, 0.0f), qmax);
    }
}

/* mode: 0 per tensor, 1 per tensor with 7 bits, 2 per row */
static ff_tensor *linear_dynamic(const ff_tensor *x, const ff_tensor *wq, const ff_tensor *w_scales,
                                 const ff_tensor *bias, int mode, const char *fn)
{
    if (!x || !wq || !w_scales)
        return ff_error(FF_ERR_INVALID, "%s: x, wq and w_scales must not be NULL", fn), NULL;
    int nd = ff_tensor_ndim(x);
    if (nd < 1 || !ff_dtype_is_float(ff_tensor_dtype(x)) || ff_tensor_dtype(wq) != FF_U8 || ff_tensor_ndim(wq) != 2 ||
        ff_tensor_dim(wq, 1) != ff_tensor_dim(x, -1))
        return ff_error(FF_ERR_INVALID, "%s: expected x float [..., K] and wq U8 [N, K], got x %s of rank %d (K=%lld), "
                        "wq %s of rank %d", fn, ff_dtype_name(ff_tensor_dtype(x)), nd,
                        (long long)(nd ? ff_tensor_dim(x, -1) : 0), ff_dtype_name(ff_tensor_dtype(wq)),
                        ff_tensor_ndim(wq)), NULL;
    int64_t N = ff_tensor_dim(wq, 0), K = ff_tensor_dim(wq, 1), M = K ? ff_tensor_numel(x) / K : 0;
    if (!is_vec(w_scales, FF_F32, N) || (bias && !is_vec(bias, FF_F32, N)))
        return ff_error(FF_ERR_INVALID, "%s: w_scales and bias must be F32 [%lld]", fn, (long long)N), NULL;
    if (K > FF_QMATMUL_MAX_K)
        return ff_error(FF_ERR_INVALID, "%s: K = %lld exceeds FF_QMATMUL_MAX_K (%d): the s32 sums could overflow", fn,
                        (long long)K, FF_QMATMUL_MAX_K), NULL;
    ff_backend *be = ff_tensor_backend(x);
    ff_tensor *xf = ff_astype(x, FF_F32);
    float *h = xf ? malloc(((size_t)(M * K) + 1) * sizeof(float)) : NULL;
    uint8_t *qa = h ? malloc((size_t)(M * K) + 1) : NULL;
    float *rs = qa ? malloc(((size_t)M + 1) * sizeof(float)) : NULL;
    ff_tensor *a = NULL, *y = NULL, *out = NULL, *ra = NULL;
    if (xf && !rs) ff_error(FF_ERR_OOM, "%s: out of memory for x [%lld, %lld]", fn, (long long)M, (long long)K);
    if (rs && !ff_tensor_to_host(xf, h, (size_t)(M * K) * sizeof(float))) {
        ff_qmatmul_params p = {.has_bias = bias != NULL, .a_per_row = mode == 2, .a_zero = 128};
        if (mode == 2) quantize_per_row(h, M, K, qa, rs);
        else quantize_rows(h, M * K, qa, mode == 1, &p);
        int64_t sa[2] = {M, K}, sy[2] = {M, N};
        a = ff_from_data_on(be, qa, 2, sa, FF_U8);
        ra = a && mode == 2 ? ff_from_data_on(be, rs, 1, sa, FF_F32) : NULL;
        y = a && (ra || mode != 2) ? ff_empty_on(be, 2, sy, FF_F32) : NULL;
        const ff_tensor *src[5] = {a, wq, w_scales};
        int n = 3;
        if (bias) src[n++] = bias;
        if (ra) src[n++] = ra;
        if (y && ff_kernel_qmatmul(y, src, n, &p, fn) == FF_OK) {
            int64_t shape[FF_MAX_DIMS];
            for (int d = 0; d < nd - 1; d++) shape[d] = ff_tensor_dim(x, d);
            shape[nd - 1] = N;
            ff_tensor *r = ff_reshape(y, nd, shape);
            out = r && ff_tensor_dtype(x) != FF_F32 ? ff_astype(r, ff_tensor_dtype(x)) : ff_tensor_retain(r);
            ff_tensor_release(r);
        }
    }
    ff_tensor_release(xf), ff_tensor_release(a), ff_tensor_release(y), ff_tensor_release(ra);
    free(h), free(qa), free(rs);
    return out;
}

ff_tensor *ff_linear_dynamic_int8(const ff_tensor *x, const ff_tensor *wq, const ff_tensor *w_scales,
                                  const ff_tensor *bias, bool reduce_range)
{
    return linear_dynamic(x, wq, w_scales, bias, reduce_range ? 1 : 0, "ff_linear_dynamic_int8");
}

ff_tensor *ff_linear_dynamic_int8_rows(const ff_tensor *x, const ff_tensor *wq, const ff_tensor *w_scales,
                                       const ff_tensor *bias)
{
    return linear_dynamic(x, wq, w_scales, bias, 2, "ff_linear_dynamic_int8_rows");
}
