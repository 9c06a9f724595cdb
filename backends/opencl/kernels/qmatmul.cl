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
