/* The optional batch_norm entry. Contiguous x, g, y, gx (NCHW as the layers make them):
 * each channel is N runs of R = H W contiguous elements, walked with double accumulators
 * (two reads of x for mean and variance, one read and one write for y; the backward the
 * same), channels split across the pool; half x through f32 tiles (bn_half). Anything
 * else: the shared strided loops. */
#include <string.h>

#include "blas_impl.h"
#include "ff_backend_norm.h"

typedef struct bn_job {
    int op;
    const ff_view *dst, *src;
    double eps;
    int64_t n, c, r; /* x as [n, c, r] */
} bn_job;

/* Sums over one contiguous run with 8 independent double accumulators (one chain would
 * wait on the adder's latency every element; the compiler may not reassociate doubles). */
#define BN_SUMS(T)                                                                                             \
    static double sum_##T(const T *p, int64_t r)                                                               \
    {                                                                                                          \
        double a[8] = {0};                                                                                     \
        int64_t k = 0;                                                                                         \
        for (; k + 8 <= r; k += 8)                                                                             \
            for (int u = 0; u < 8; u++) a[u] += p[k + u];                                                      \
        for (; k < r; k++) a[0] += p[k];                                                                       \
        return ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7]));                              \
    }                                                                                                          \
    static double sqdev_##T(const T *p, int64_t r, double mean)                                                \
    {                                                                                                          \
        double a[8] = {0};                                                                                     \
        int64_t k = 0;                                                                                         \
        for (; k + 8 <= r; k += 8)                                                                             \
            for (int u = 0; u < 8; u++) {                                                                      \
                double d = p[k + u] - mean;                                                                    \
                a[u] += d * d;                                                                                 \
            }                                                                                                  \
        for (; k < r; k++) a[0] += (p[k] - mean) * (p[k] - mean);                                              \
        return ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7]));                              \
    }                                                                                                          \
    static void dots_##T(const T *g, const T *x, int64_t r, double mean, double *sg, double *sgx)              \
    {                                                                                                          \
        double a[4] = {0}, b[4] = {0};                                                                         \
        int64_t k = 0;                                                                                         \
        for (; k + 4 <= r; k += 4)                                                                             \
            for (int u = 0; u < 4; u++) a[u] += g[k + u], b[u] += g[k + u] * (x[k + u] - mean);               \
        for (; k < r; k++) a[0] += g[k], b[0] += g[k] * (x[k] - mean);                                         \
        *sg += (a[0] + a[1]) + (a[2] + a[3]);                                                                  \
        *sgx += (b[0] + b[1]) + (b[2] + b[3]);                                                                 \
    }
BN_SUMS(float)
BN_SUMS(double)

/* The channel loops for one element type T. */
#define BN_CHANNELS(T, NAME)                                                                                      \
    static void NAME(const bn_job *j, int64_t c0, int64_t c1)                                                  \
    {                                                                                                          \
        const ff_view *xv = &j->src[j->op == 1];                                                               \
        const T *x = (const T *)xv->buf + xv->offset;                                                         \
        int64_t n = j->n, C = j->c, r = j->r;                                                                  \
        double m = (double)(n * r);                                                                           \
        for (int64_t c = c0; c < c1; c++) {                                                                    \
            if (j->op == 2) {                                                                                  \
                T *y = (T *)j->dst[0].buf + j->dst[0].offset;                                                  \
                double sc = ffb_bn_vec(&j->src[1], c), sh = ffb_bn_vec(&j->src[2], c);                         \
                for (int64_t i = 0; i < n; i++) {                                                              \
                    const T *p = x + (i * C + c) * r;                                                          \
                    T *o = y + (i * C + c) * r;                                                                \
                    for (int64_t k = 0; k < r; k++) o[k] = (T)(p[k] * sc + sh);                                \
                }                                                                                              \
            } else if (j->op == 0) {                                                                           \
                T *y = (T *)j->dst[0].buf + j->dst[0].offset;                                                  \
                double s = 0, q = 0;                                                                           \
                for (int64_t i = 0; i < n; i++) s += sum_##T(x + (i * C + c) * r, r);                          \
                double mean = s / m;                                                                           \
                for (int64_t i = 0; i < n; i++) q += sqdev_##T(x + (i * C + c) * r, r, mean);                  \
                double var = q / m, inv = 1 / sqrt(var + j->eps);                                              \
                double sc = inv * ffb_bn_vec(&j->src[1], c), sh = ffb_bn_vec(&j->src[2], c) - mean * sc;               \
                for (int64_t i = 0; i < n; i++) {                                                              \
                    const T *p = x + (i * C + c) * r;                                                          \
                    T *o = y + (i * C + c) * r;                                                                \
                    for (int64_t k = 0; k < r; k++) o[k] = (T)(p[k] * sc + sh);                                \
                }                                                                                              \
                ffb_bn_vec_put(&j->dst[1], c, mean), ffb_bn_vec_put(&j->dst[2], c, inv), ffb_bn_vec_put(&j->dst[3], c, var);        \
            } else {                                                                                           \
                const T *g = (const T *)j->src[0].buf + j->src[0].offset;                                      \
                T *gx = (T *)j->dst[0].buf + j->dst[0].offset;                                                 \
                double mean = ffb_bn_vec(&j->src[2], c), inv = ffb_bn_vec(&j->src[3], c), w = ffb_bn_vec(&j->src[4], c);  \
                double sg = 0, sgx = 0;                                                                        \
                for (int64_t i = 0; i < n; i++)                                                                \
                    dots_##T(g + (i * C + c) * r, x + (i * C + c) * r, r, mean, &sg, &sgx);                   \
                sgx *= inv;                                                                                    \
                /* gx = w inv (g - sg/m - (x - mean) inv sgx/m) = k1 g + k2 x + k0 */                          \
                double k1 = w * inv, k2 = -w * inv * inv * sgx / m, k0 = -w * inv * sg / m - k2 * mean;       \
                for (int64_t i = 0; i < n; i++) {                                                              \
                    const T *p = x + (i * C + c) * r, *gp = g + (i * C + c) * r;                               \
                    T *o = gx + (i * C + c) * r;                                                               \
                    for (int64_t k = 0; k < r; k++) o[k] = (T)(k1 * gp[k] + k2 * p[k] + k0);                   \
                }                                                                                              \
                ffb_bn_vec_put(&j->dst[1], c, sgx), ffb_bn_vec_put(&j->dst[2], c, sg);                                       \
            }                                                                                                  \
        }                                                                                                      \
    }
BN_CHANNELS(float, bn_f32)
BN_CHANNELS(double, bn_f64)

/* Half x (F16/BF16, [C] views f32): the float loops above on tiles of widened values,
 * y and gx computed in f32 (as PyTorch's mixed kernel, and the core's f32 detour) and
 * rounded once. A channel's N runs of R halves are read and written as one stream of
 * tiles, each run's piece of a tile converted where it lies (the AVX-512 conversions take
 * a piece's last n % 16 values in masked lanes, so a run of 14 x 14 = 196 costs no scalar
 * tail; gathering the pieces with memcpy first was 6% of the CNN's bf16 epoch). Under
 * autocast a CNN's BN stays in bf16 this way, without the casts of x and g to f32 around
 * it. */
#define BN_TILE 512

/* Elements [k0, k0 + m) of channel c's stream (runs i * C + c of r elements) widened into t. */
static void stream_widen(ff_dtype dt, float *t, const uint16_t *base, int64_t C, int64_t r, int64_t c, int64_t k0,
                         int64_t m)
{
    while (m > 0) {
        int64_t i = k0 / r, k = k0 % r, take = r - k < m ? r - k : m;
        blas_half_to_f32(dt, take, t, base + (i * C + c) * r + k);
        t += take, k0 += take, m -= take;
    }
}

/* Tile t rounded into elements [k0, k0 + m) of the stream. */
static void stream_round(ff_dtype dt, uint16_t *base, const float *t, int64_t C, int64_t r, int64_t c, int64_t k0,
                         int64_t m)
{
    while (m > 0) {
        int64_t i = k0 / r, k = k0 % r, take = r - k < m ? r - k : m;
        blas_f32_to_half(dt, take, base + (i * C + c) * r + k, t);
        t += take, k0 += take, m -= take;
    }
}

static void bn_half(const bn_job *j, int64_t c0, int64_t c1)
{
    const ff_view *xv = &j->src[j->op == 1];
    ff_dtype t = xv->dtype;
    const uint16_t *x = (const uint16_t *)xv->buf + xv->offset;
    int64_t C = j->c, r = j->r, total = j->n * r;
    double m = (double)total;
    float ta[BN_TILE], tb[BN_TILE];
    for (int64_t c = c0; c < c1; c++) {
        if (j->op == 2) { /* eval: y = x scale + shift */
            uint16_t *y = (uint16_t *)j->dst[0].buf + j->dst[0].offset;
            float sc = (float)ffb_bn_vec(&j->src[1], c), sh = (float)ffb_bn_vec(&j->src[2], c);
            for (int64_t k = 0; k < total; k += BN_TILE) {
                int64_t mk = total - k < BN_TILE ? total - k : BN_TILE;
                stream_widen(t, ta, x, C, r, c, k, mk);
                for (int64_t i = 0; i < mk; i++) tb[i] = ta[i] * sc + sh;
                stream_round(t, y, tb, C, r, c, k, mk);
            }
        } else if (j->op == 0) {
            uint16_t *y = (uint16_t *)j->dst[0].buf + j->dst[0].offset;
            double s = 0, q = 0;
            for (int64_t k = 0; k < total; k += BN_TILE) {
                int64_t mk = total - k < BN_TILE ? total - k : BN_TILE;
                stream_widen(t, ta, x, C, r, c, k, mk);
                s += sum_float(ta, mk);
            }
            double mean = s / m;
            for (int64_t k = 0; k < total; k += BN_TILE) {
                int64_t mk = total - k < BN_TILE ? total - k : BN_TILE;
                stream_widen(t, ta, x, C, r, c, k, mk);
                q += sqdev_float(ta, mk, mean);
            }
            double var = q / m, inv = 1 / sqrt(var + j->eps);
            double scd = inv * ffb_bn_vec(&j->src[1], c);
            float sc = (float)scd, sh = (float)(ffb_bn_vec(&j->src[2], c) - mean * scd);
            for (int64_t k = 0; k < total; k += BN_TILE) {
                int64_t mk = total - k < BN_TILE ? total - k : BN_TILE;
                stream_widen(t, ta, x, C, r, c, k, mk);
                for (int64_t i = 0; i < mk; i++) tb[i] = ta[i] * sc + sh;
                stream_round(t, y, tb, C, r, c, k, mk);
            }
            ffb_bn_vec_put(&j->dst[1], c, mean), ffb_bn_vec_put(&j->dst[2], c, inv);
            ffb_bn_vec_put(&j->dst[3], c, var);
        } else {
            const uint16_t *g = (const uint16_t *)j->src[0].buf + j->src[0].offset;
            uint16_t *gx = (uint16_t *)j->dst[0].buf + j->dst[0].offset;
            double mean = ffb_bn_vec(&j->src[2], c), inv = ffb_bn_vec(&j->src[3], c), w = ffb_bn_vec(&j->src[4], c);
            double sg = 0, sgx = 0;
            for (int64_t k = 0; k < total; k += BN_TILE) {
                int64_t mk = total - k < BN_TILE ? total - k : BN_TILE;
                stream_widen(t, ta, g, C, r, c, k, mk);
                stream_widen(t, tb, x, C, r, c, k, mk);
                dots_float(ta, tb, mk, mean, &sg, &sgx);
            }
            sgx *= inv;
            /* gx = k1 g + k2 (x - mean) + k0: x - mean first, so f32 loses nothing to cancellation */
            float k1 = (float)(w * inv), k2 = (float)(-w * inv * inv * sgx / m), k0 = (float)(-w * inv * sg / m);
            float mf = (float)mean;
            for (int64_t k = 0; k < total; k += BN_TILE) {
                int64_t mk = total - k < BN_TILE ? total - k : BN_TILE;
                stream_widen(t, ta, g, C, r, c, k, mk);
                stream_widen(t, tb, x, C, r, c, k, mk);
                for (int64_t i = 0; i < mk; i++) tb[i] = k1 * ta[i] + k2 * (tb[i] - mf) + k0;
                stream_round(t, gx, tb, C, r, c, k, mk);
            }
            ffb_bn_vec_put(&j->dst[1], c, sgx), ffb_bn_vec_put(&j->dst[2], c, sg);
        }
    }
}

static void bn_task(void *arg, int64_t c0, int64_t c1)
{
    const bn_job *j = arg;
    ff_dtype t = j->src[j->op == 1].dtype;
    if (t == FF_F32) bn_f32(j, c0, c1);
    else if (t == FF_F64) bn_f64(j, c0, c1);
    else bn_half(j, c0, c1);
}

static void bn_strided_task(void *arg, int64_t c0, int64_t c1)
{
    const bn_job *j = arg;
    ffb_batch_norm_channels(j->op, j->dst, j->src, j->eps, c0, c1);
}

ff_status blas_batch_norm(void *ctx, int op, const ff_view *dst, int n_dst, const ff_view *src, int n_src, double eps)
{
    ff_status st = ffb_batch_norm_check(ctx ? ((blas_ctx *)ctx)->host : NULL, "cpu_blas", op, dst, n_dst, src, n_src);
    if (st) return st;
    const ff_view *x = &src[op == 1];
    int64_t c = x->shape[1], n = x->shape[0], total = ff_view_numel(x);
    bn_job j = {op, dst, src, eps, n, c, n && c ? total / (n * c) : 0};
    int fast = blas_view_contiguous(x) && blas_view_contiguous(&dst[0]) && blas_view_contiguous(&src[0]);
    blas_parallel_for(ctx, c, 2, 1, fast ? bn_task : bn_strided_task, &j);
    return FF_OK;
}
