/*
 * The dynamic quantized Linear (include/ff/quant.h): the activation quantized per call
 * from its own min and max (per tensor, as torch.ao.nn.quantized.dynamic.Linear: same
 * parameter choice and rounding; or per row), the product on the backend's qmatmul entry.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ff_impl.h"
#include "ff/quant.h"


static bool is_vec(const ff_tensor *t, ff_dtype dt, int64_t n)
{
    return t && ff_tensor_dtype(t) == dt && ff_tensor_ndim(t) == 1 && ff_tensor_dim(t, 0) == n;
}

/* The loops below are cloned per ISA (picked at load time through an ifunc, as cpu_blas
 * does): the baseline x86-64 build cannot vectorize float -> u8 conversion, and these
 * passes over the activation cost as much as the int8 product itself when scalar. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_ADDRESS__) && \
    !defined(__SANITIZE_THREAD__)
#define QUANT_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define QUANT_CLONES
#endif

/* The scalar rule (ff_qmatmul_round, ff_qmatmul_ford, ff_qmatmul_choose,
 * ff_qmatmul_row_scale) is backend_abi.h's, so the backends' dynamic mode and this host
 * path quantize with one definition. */

QUANT_CLONES static float abs_max(const float *r, int64_t n)
{
    uint32_t m = 0;
    for (int64_t k = 0; k < n; k++) {
        uint32_t u;
        memcpy(&u, &r[k], 4);
        u &= 0x7fffffffu;
        m = u > m ? u : m;
    }
    float f;
    memcpy(&f, &m, 4);
    return f;
}

QUANT_CLONES static void quantize_span(const float *x, int64_t n, float inv, float zero, float lo, float hi, uint8_t *q)
{
    for (int64_t i = 0; i < n; i++) q[i] = ff_qmatmul_round(x[i] * inv, zero, lo, hi);
}

QUANT_CLONES static void min_max(const float *x, int64_t n, float *lo, float *hi)
{
    int32_t a = ff_qmatmul_ford(0.0f), b = a; /* the range always holds 0 (ff_quant_choose_params) */
    for (int64_t i = 0; i < n; i++) {
        int32_t v = ff_qmatmul_ford(x[i]);
        a = v < a ? v : a, b = v > b ? v : b;
    }
    *lo = ff_qmatmul_funord(a), *hi = ff_qmatmul_funord(b);
}

/* Per row, symmetric: row m's scale max|x[m]| / 127, values shifted by the zero point 128
 * into u8 (so one zero point serves every row). */
static void quantize_per_row(const float *x, int64_t M, int64_t K, uint8_t *q, float *scale)
{
    for (int64_t m = 0; m < M; m++) {
        float amax = abs_max(x + m * K, K);
        scale[m] = ff_qmatmul_row_scale(amax);
        quantize_span(x + m * K, K, 1.0f / scale[m], 128.0f, 1.0f, 255.0f, q + m * K);
    }
}

/* x [M, K] floats on the host -> u8 with the chosen parameters. */
static void quantize_rows(const float *x, int64_t n, uint8_t *q, bool reduce_range, ff_qmatmul_params *p)
{
    float lo, hi;
    min_max(x, n, &lo, &hi);
    ff_qmatmul_choose(lo, hi, reduce_range, &p->a_scale, &p->a_zero); /* NaN ends count as 0 */
    quantize_span(x, n, 1.0f / p->a_scale, (float)p->a_zero, 0.0f, reduce_range ? 127.0f : 255.0f, q);
}

/* A host-memory view of t's floats: t's own memory when it is dense F32 on a host
 * backend, else a copy in *own (freed by the caller). */
static const float *host_floats(const ff_tensor *t, int64_t n, float **own, const char *fn)
{
    *own = NULL;
    if (ff_tensor_dtype(t) == FF_F32 && ff_tensor_is_contiguous(t) && ff_tensor_data_ptr(t))
        return ff_tensor_data_ptr(t);
    ff_tensor *f = ff_astype(t, FF_F32);
    *own = f ? malloc(((size_t)n + 1) * sizeof(float)) : NULL;
    if (f && !*own) ff_error(FF_ERR_OOM, "%s: out of memory for %lld floats", fn, (long long)n);
    if (*own && ff_tensor_to_host(f, *own, (size_t)n * sizeof(float))) free(*own), *own = NULL;
    ff_tensor_release(f);
    return *own;
}

/* y [..., N] in x's dtype from the product y2 [M, N]. */
static ff_tensor *reshape_out(const ff_tensor *x, const ff_tensor *y2, int64_t N)
{
    int nd = ff_tensor_ndim(x);
    int64_t shape[FF_MAX_DIMS];
    for (int d = 0; d < nd - 1; d++) shape[d] = ff_tensor_dim(x, d);
    shape[nd - 1] = N;
    ff_tensor *r = ff_reshape(y2, nd, shape);
    ff_tensor *out = r && ff_tensor_dtype(x) != FF_F32 ? ff_astype(r, ff_tensor_dtype(x)) : ff_tensor_retain(r);
    ff_tensor_release(r);
    return out;
}

/* Dynamic mode: x goes to the entry as F32 [M, K] on its own backend (converted and
 * made dense there by ff ops, never through the host), and the entry quantizes it. */
static ff_tensor *linear_on_backend(const ff_tensor *x, const ff_tensor *wq, const ff_tensor *w_scales,
                                    const ff_tensor *bias, int mode, int64_t M, const char *fn)
{
    int64_t K = ff_tensor_dim(wq, 1), N = ff_tensor_dim(wq, 0), sx[2] = {M, K}, sy[2] = {M, N};
    ff_tensor *f = ff_tensor_dtype(x) == FF_F32 ? ff_tensor_retain((ff_tensor *)x) : ff_astype(x, FF_F32);
    ff_tensor *x2 = f ? ff_reshape(f, 2, sx) : NULL, *out = NULL; /* a view when dense, a copy else */
    ff_tensor *y = x2 ? ff_empty_on(ff_tensor_backend(x), 2, sy, FF_F32) : NULL;
    ff_qmatmul_params p = {.has_bias = bias != NULL, .a_per_row = mode == 2, .a_dynamic = 1, .reduce_range = mode == 1};
    const ff_tensor *src[4] = {x2, wq, w_scales, bias};
    if (y && ff_kernel_qmatmul(y, src, bias ? 4 : 3, &p, fn) == FF_OK) out = reshape_out(x, y, N);
    ff_tensor_release(f), ff_tensor_release(x2), ff_tensor_release(y);
    return out;
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
    if (ff_backend_supports(be, FF_KIND_QMATMUL, FF_QMATMUL_DYNAMIC, FF_F32))
        return linear_on_backend(x, wq, w_scales, bias, mode, M, fn);
    float *own = NULL;
    const float *h = host_floats(x, M * K, &own, fn);
    /* on a host backend the bytes are written straight into a's memory */
    int64_t sa[2] = {M, K}, sy[2] = {M, N};
    ff_tensor *a = h ? ff_empty_on(be, 2, sa, FF_U8) : NULL, *y = NULL, *out = NULL, *ra = NULL;
    uint8_t *qa = a ? ff_tensor_data_ptr(a) : NULL, *qown = NULL;
    if (a && !qa) ff_tensor_release(a), a = NULL, qa = qown = malloc((size_t)(M * K) + 1); /* device: upload */
    float *rs = qa ? malloc(((size_t)M + 1) * sizeof(float)) : NULL;
    if (h && !rs) ff_error(FF_ERR_OOM, "%s: out of memory for x [%lld, %lld]", fn, (long long)M, (long long)K);
    if (rs) {
        ff_qmatmul_params p = {.has_bias = bias != NULL, .a_per_row = mode == 2, .a_zero = 128};
        if (mode == 2) quantize_per_row(h, M, K, qa, rs);
        else quantize_rows(h, M * K, qa, mode == 1, &p);
        if (qown) a = ff_from_data_on(be, qown, 2, sa, FF_U8);
        ra = a && mode == 2 ? ff_from_data_on(be, rs, 1, sa, FF_F32) : NULL;
        y = a && (ra || mode != 2) ? ff_empty_on(be, 2, sy, FF_F32) : NULL;
        const ff_tensor *src[5] = {a, wq, w_scales};
        int n = 3;
        if (bias) src[n++] = bias;
        if (ra) src[n++] = ra;
        if (y && ff_kernel_qmatmul(y, src, n, &p, fn) == FF_OK) out = reshape_out(x, y, N);
    }
    ff_tensor_release(a), ff_tensor_release(y), ff_tensor_release(ra);
    free(own), free(qown), free(rs);
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
