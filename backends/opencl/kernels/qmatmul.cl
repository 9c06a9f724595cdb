/*
 * Quantized matmul (backend_abi.h, ff_qmatmul_params): one work-item per y[m, n], the
 * u8 x s8 products summed exactly in int (the host's FF_QMATMUL_MAX_K bounds K), then
 * scaled in double and rounded once, as the cpu reference does.
 */
__kernel void ff_qmatmul(kview a, __global const uchar *ab, kview b, __global const uchar *bb, kview s,
                         __global const float *sb, kview bias, __global const float *biasb, kview row,
                         __global const float *rowb, int has_bias, int per_row, float a_scale, int a_zero, kview y,
                         __global float *yb)
{
    long i = get_global_id(0), N = y.shape[1];
    if (i >= y.shape[0] * N) return;
    long m = i / N, n = i % N, K = a.shape[1];
    __global const uchar *ar = ab + a.offset + m * a.strides[0], *br = bb + b.offset + n * b.strides[0];
    int acc = 0;
    for (long k = 0; k < K; k++) acc += ((int)ar[k * a.strides[1]] - a_zero) * (int)(char)br[k * b.strides[1]];
    double v = (double)acc * (per_row ? (double)rowb[row.offset + m * row.strides[0]] : (double)a_scale) *
               (double)sb[s.offset + n * s.strides[0]];
    if (has_bias) v += (double)biasb[bias.offset + n * bias.strides[0]];
    yb[y.offset + m * y.strides[0] + n * y.strides[1]] = (float)v;
}

/*
 * qmatmul's dynamic mode (backend_abi.h, FF_QMATMUL_DYNAMIC): x [M, K] f32 quantized on
 * the device by the ABI's rule, then ff_qmatmul on the u8 rows. The rule's pieces are
 * backend_abi.h's (ff_qmatmul_ford, _row_scale, _round), restated here in OpenCL C; the
 * per-tensor parameters come from the host's ff_qmatmul_choose on the reduced range
 * (8 bytes read back). Quotients are taken in double and rounded to float once, which is
 * the correctly rounded f32 quotient (double has more than 2 * 24 + 2 bits), as the
 * host's 1.0f / s is.
 */
inline int q_ford(float f)
{
    int i = as_int(f);
    return i ^ (int)((uint)(i >> 31) >> 1);
}

inline float q_funord(int i) { return as_float(i ^ (int)((uint)(i >> 31) >> 1)); }

inline uchar q_round(float v, float zero, float lo, float hi)
{
    v = v > -512.0f ? v : -512.0f;
    v = v < 512.0f ? v : 512.0f;
    v = (v + 0x1.8p23f) - 0x1.8p23f + zero;
    v = v > lo ? v : lo;
    v = v < hi ? v : hi;
    return (uchar)(int)v;
}

inline float q_x(kview x, __global const float *xb, long m, long k)
{
    return xb[x.offset + m * x.strides[0] + k * x.strides[1]];
}

/* One work-item per row m: per row, its max |x| (ordered bits) in rng[m]; per tensor,
 * its min and max with 0 in rng[2m], rng[2m + 1]. */
__kernel void ff_qdyn_range(kview x, __global const float *xb, int per_row, __global int *rng)
{
    long m = get_global_id(0), K = x.shape[1];
    if (m >= x.shape[0]) return;
    int lo = q_ford(0.0f), hi = lo;
    for (long k = 0; k < K; k++) {
        float v = q_x(x, xb, m, k);
        int o = q_ford(per_row ? fabs(v) : v);
        lo = o < lo ? o : lo, hi = o > hi ? o : hi;
    }
    if (per_row) rng[m] = hi;
    else rng[2 * m] = lo, rng[2 * m + 1] = hi;
}

/* One work-item: the rows' ranges folded into rng[0], rng[1]. */
__kernel void ff_qdyn_fold(long M, __global int *rng)
{
    if (get_global_id(0) != 0) return;
    int lo = rng[0], hi = rng[1];
    for (long m = 1; m < M; m++) lo = min(lo, rng[2 * m]), hi = max(hi, rng[2 * m + 1]);
    rng[0] = lo, rng[1] = hi;
}

/* One work-item per x[m, k] into q [M, K] dense (M * max(K, 1) of them); per row,
 * scale[m] too (by k = 0, also when K = 0). */
__kernel void ff_qdyn_quantize(kview x, __global const float *xb, int per_row, __global const int *rng, float inv,
                               float zero, float qmax, __global uchar *q, __global float *scale)
{
    long i = get_global_id(0), K = x.shape[1], Kq = K ? K : 1;
    if (i >= x.shape[0] * Kq) return;
    long m = i / Kq, k = i % Kq;
    float s = 1.0f;
    if (per_row) {
        float amax = q_funord(rng[m]);
        s = amax > 0 && amax <= 0x1.fffffep127f ? (float)((double)amax / 127.0) : 1.0f;
        if (k == 0) scale[m] = s;
    }
    if (K == 0) return;
    float v = q_x(x, xb, m, k);
    q[i] = per_row ? q_round(v * (float)(1.0 / (double)s), 128.0f, 1.0f, 255.0f) : q_round(v * inv, zero, 0.0f, qmax);
}
