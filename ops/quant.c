/*
 * int8 quantization (include/ff/quant.h): host-side quantize / dequantize and the
 * dynamic quantized Linear over the qmatmul entry. The elementwise steps run on the
 * host because they are memory-bound one-pass loops that need the min/max first; the
 * product, where the time goes, runs on the backend.
 */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "ff_impl.h"
#include "ff/quant.h"

static int q_lo(ff_qdtype qt) { return qt == FF_QINT8 ? -128 : 0; }
static int q_hi(ff_qdtype qt) { return qt == FF_QINT8 ? 127 : 255; }

/* numel floats of t, row-major, in a malloc'ed buffer (NULL with the error set). */
static float *host_f32(const ff_tensor *t, const char *fn)
{
    int64_t n = ff_tensor_numel(t);
    ff_tensor *f = ff_astype(t, FF_F32);
    float *buf = f ? malloc((size_t)(n ? n : 1) * sizeof(float)) : NULL;
    if (f && !buf) ff_error(FF_ERR_OOM, "%s: out of memory for %lld floats", fn, (long long)n);
    if (buf && ff_tensor_to_host(f, buf, (size_t)n * sizeof(float))) free(buf), buf = NULL;
    ff_tensor_release(f);
    return buf;
}

static uint8_t q_one(float x, float inv, int32_t zero, ff_qdtype qt)
{
    float v = nearbyintf(x * inv) + (float)zero;
    v = fminf(fmaxf(v, (float)q_lo(qt)), (float)q_hi(qt)); /* NaN: fmaxf gives qmin */
    return (uint8_t)(int8_t)(int)v;
}

static float dq_one(uint8_t b, float scale, int32_t zero, ff_qdtype qt)
{
    int v = qt == FF_QINT8 ? (int)(int8_t)b : (int)b;
    return (float)(v - zero) * scale;
}

/* Per-channel parameters: count, channel stride (elements) of x's row-major order, and
 * the scales and zero points on the host. */
typedef struct q_chan {
    int64_t count, inner;
    float *scale;
    int32_t *zero;
} q_chan;

static ff_status chan_params(const ff_tensor *x, const ff_tensor *scales, const ff_tensor *zeros, int axis,
                             ff_qdtype qt, q_chan *c, const char *fn)
{
    int nd = ff_tensor_ndim(x);
    if (axis < 0) axis += nd;
    if (axis < 0 || axis >= nd || !scales || ff_tensor_ndim(scales) != 1 ||
        ff_tensor_dim(scales, 0) != ff_tensor_dim(x, axis) || (zeros && (ff_tensor_ndim(zeros) != 1 ||
                                                              ff_tensor_dim(zeros, 0) != ff_tensor_dim(x, axis))))
        return ff_error(FF_ERR_INVALID, "%s: axis %d of a rank-%d tensor needs 1-D scales (and zero points) of that "
                        "dim's length", fn, axis, nd);
    c->count = ff_tensor_dim(x, axis);
    c->inner = 1;
    for (int d = axis + 1; d < nd; d++) c->inner *= ff_tensor_dim(x, d);
    c->scale = host_f32(scales, fn);
    c->zero = calloc((size_t)(c->count ? c->count : 1), sizeof(int32_t));
    float *z = zeros ? host_f32(zeros, fn) : NULL;
    if (!c->scale || !c->zero || (zeros && !z)) {
        free(c->scale), free(c->zero), free(z);
        return ff_last_status() ? ff_last_status() : ff_error(FF_ERR_OOM, "%s: out of memory", fn);
    }
    for (int64_t i = 0; i < c->count; i++) {
        if (z) c->zero[i] = (int32_t)z[i];
        if (!(c->scale[i] > 0) || isinf(c->scale[i]) || c->zero[i] < q_lo(qt) || c->zero[i] > q_hi(qt)) {
            ff_status st = ff_error(FF_ERR_INVALID, "%s: channel %lld has scale %g and zero point %d; expected a "
                                    "finite scale > 0 and a zero point in [%d, %d]", fn, (long long)i,
                                    (double)c->scale[i], (int)c->zero[i], q_lo(qt), q_hi(qt));
            free(c->scale), free(c->zero), free(z);
            return st;
        }
    }
    free(z);
    return FF_OK;
}

static ff_tensor *quantize(const ff_tensor *x, const q_chan *c, ff_qdtype qt, const char *fn)
{
    if (!ff_dtype_is_float(ff_tensor_dtype(x)))
        return ff_error(FF_ERR_INVALID, "%s: x is %s, expected a float dtype", fn, ff_dtype_name(ff_tensor_dtype(x))),
               NULL;
    int64_t n = ff_tensor_numel(x);
    float *h = host_f32(x, fn);
    uint8_t *q = h ? malloc((size_t)(n ? n : 1)) : NULL;
    ff_tensor *out = NULL;
    if (q) {
        for (int64_t i = 0; i < n; i++) {
            int64_t ch = (i / c->inner) % c->count;
            q[i] = q_one(h[i], 1.0f / c->scale[ch], c->zero[ch], qt);
        }
        out = ff_from_data_on(ff_tensor_backend(x), q, ff_tensor_ndim(x), ff_tensor_shape(x), FF_U8);
    } else if (h) {
        ff_error(FF_ERR_OOM, "%s: out of memory for %lld bytes", fn, (long long)n);
    }
    free(h), free(q);
    return out;
}

static ff_tensor *dequantize(const ff_tensor *qt_, const q_chan *c, ff_qdtype qt, const char *fn)
{
    if (ff_tensor_dtype(qt_) != FF_U8)
        return ff_error(FF_ERR_INVALID, "%s: q is %s, expected U8 (the quantized bytes)", fn,
                        ff_dtype_name(ff_tensor_dtype(qt_))), NULL;
    int64_t n = ff_tensor_numel(qt_);
    uint8_t *q = malloc((size_t)(n ? n : 1));
    float *h = malloc((size_t)(n ? n : 1) * sizeof(float));
    ff_tensor *out = NULL;
    if (!q || !h) ff_error(FF_ERR_OOM, "%s: out of memory for %lld elements", fn, (long long)n);
    else if (!ff_tensor_to_host(qt_, q, (size_t)n)) {
        for (int64_t i = 0; i < n; i++) {
            int64_t ch = (i / c->inner) % c->count;
            h[i] = dq_one(q[i], c->scale[ch], c->zero[ch], qt);
        }
        out = ff_from_data_on(ff_tensor_backend(qt_), h, ff_tensor_ndim(qt_), ff_tensor_shape(qt_), FF_F32);
    }
    free(q), free(h);
    return out;
}

static ff_status tensor_params(double scale, int64_t zero, ff_qdtype qt, float *s, int32_t *z, const char *fn)
{
    if (!(scale > 0) || isinf((float)scale) || zero < q_lo(qt) || zero > q_hi(qt) || (qt != FF_QINT8 && qt != FF_QUINT8))
        return ff_error(FF_ERR_INVALID, "%s: scale %g, zero point %lld, qdtype %d; expected a finite scale > 0, a zero "
                        "point in the qdtype's range and FF_QUINT8 or FF_QINT8", fn, scale, (long long)zero, (int)qt);
    *s = (float)scale, *z = (int32_t)zero;
    return FF_OK;
}

ff_tensor *ff_quantize_per_tensor(const ff_tensor *x, double scale, int64_t zero, ff_qdtype qt)
{
    static const char fn[] = "ff_quantize_per_tensor";
    float s;
    int32_t z;
    if (!x) return ff_error(FF_ERR_INVALID, "%s: x is NULL", fn), NULL;
    if (tensor_params(scale, zero, qt, &s, &z, fn)) return NULL;
    q_chan c = {1, 1, &s, &z};
    return quantize(x, &c, qt, fn);
}

ff_tensor *ff_dequantize_per_tensor(const ff_tensor *q, double scale, int64_t zero, ff_qdtype qt)
{
    static const char fn[] = "ff_dequantize_per_tensor";
    float s;
    int32_t z;
    if (!q) return ff_error(FF_ERR_INVALID, "%s: q is NULL", fn), NULL;
    if (tensor_params(scale, zero, qt, &s, &z, fn)) return NULL;
    q_chan c = {1, 1, &s, &z};
    return dequantize(q, &c, qt, fn);
}

ff_tensor *ff_quantize_per_channel(const ff_tensor *x, const ff_tensor *scales, const ff_tensor *zeros, int axis,
                                   ff_qdtype qt)
{
    static const char fn[] = "ff_quantize_per_channel";
    q_chan c;
    if (!x) return ff_error(FF_ERR_INVALID, "%s: x is NULL", fn), NULL;
    if (chan_params(x, scales, zeros, axis, qt, &c, fn)) return NULL;
    ff_tensor *out = c.count ? quantize(x, &c, qt, fn) : ff_empty_on(ff_tensor_backend(x), ff_tensor_ndim(x),
                                                                     ff_tensor_shape(x), FF_U8);
    free(c.scale), free(c.zero);
    return out;
}

ff_tensor *ff_dequantize_per_channel(const ff_tensor *q, const ff_tensor *scales, const ff_tensor *zeros, int axis,
                                     ff_qdtype qt)
{
    static const char fn[] = "ff_dequantize_per_channel";
    q_chan c;
    if (!q) return ff_error(FF_ERR_INVALID, "%s: q is NULL", fn), NULL;
    if (chan_params(q, scales, zeros, axis, qt, &c, fn)) return NULL;
    ff_tensor *out = c.count ? dequantize(q, &c, qt, fn) : ff_empty_on(ff_tensor_backend(q), ff_tensor_ndim(q),
                                                                       ff_tensor_shape(q), FF_F32);
    free(c.scale), free(c.zero);
    return out;
}

ff_status ff_quantize_weight_s8(const ff_tensor *w, ff_tensor **q, ff_tensor **scales)
{
    static const char fn[] = "ff_quantize_weight_s8";
    if (!q || !scales) return ff_error(FF_ERR_INVALID, "%s: NULL output pointer", fn);
    *q = *scales = NULL;
    if (!w || ff_tensor_ndim(w) != 2 || !ff_dtype_is_float(ff_tensor_dtype(w)))
        return ff_error(FF_ERR_INVALID, "%s: expected a float [N, K] weight, got %s of rank %d", fn,
                        w ? ff_dtype_name(ff_tensor_dtype(w)) : "NULL", w ? ff_tensor_ndim(w) : 0);
    int64_t N = ff_tensor_dim(w, 0), K = ff_tensor_dim(w, 1);
    float *h = host_f32(w, fn);
    float *s = h ? malloc((size_t)(N ? N : 1) * sizeof(float)) : NULL;
    uint8_t *b = s ? malloc((size_t)(N * K) + 1) : NULL;
    if (h && !b) ff_error(FF_ERR_OOM, "%s: out of memory for [%lld, %lld]", fn, (long long)N, (long long)K);
    if (b) {
        for (int64_t n = 0; n < N; n++) {
            float amax = 0;
            for (int64_t k = 0; k < K; k++) amax = fmaxf(amax, fabsf(h[n * K + k]));
            /* PyTorch's symmetric observer: (max - min) / 2 over [-128, 127] is 127.5 */
            s[n] = fmaxf(amax / 127.5f, FLT_EPSILON);
            float inv = 1.0f / s[n];
            for (int64_t k = 0; k < K; k++) b[n * K + k] = q_one(h[n * K + k], inv, 0, FF_QINT8);
        }
        int64_t sh[1] = {N};
        *q = ff_from_data_on(ff_tensor_backend(w), b, 2, ff_tensor_shape(w), FF_U8);
        *scales = *q ? ff_from_data_on(ff_tensor_backend(w), s, 1, sh, FF_F32) : NULL;
        if (!*scales) ff_tensor_release(*q), *q = NULL;
    }
    free(h), free(s), free(b);
    return *scales ? FF_OK : ff_last_status();
}

void ff_quant_choose_params(float lo, float hi, bool reduce_range, float *scale, int32_t *zero)
{
    ff_qmatmul_choose(lo, hi, reduce_range, scale, zero); /* the one rule, shared with the backends */
}
