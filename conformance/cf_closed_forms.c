/* The closed forms the public-op table (cf_optable.c) checks some ops against: exact
 * values computed in double or long double from the inputs. */
#include <math.h>

#include "cf_optable.h"

/* ---- closed forms ------------------------------------------------------------- */
void c_sum_all(const double *const *in, double *out)
{
    long double s = 0;
    for (int i = 0; i < 20; i++) s += in[0][i];
    out[0] = (double)s;
}

void c_mean02(const double *const *in, double *out) /* [3,4,5] over axes 0, 2 */
{
    for (int j = 0; j < 4; j++) {
        long double s = 0;
        for (int i = 0; i < 3; i++)
            for (int k = 0; k < 5; k++) s += in[0][(i * 4 + j) * 5 + k];
        out[j] = (double)(s / 15);
    }
}

void c_matmul(const double *const *in, double *out) /* [4,3] @ [3,5] */
{
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 5; j++) {
            long double s = 0;
            for (int p = 0; p < 3; p++) s += (long double)in[0][i * 3 + p] * in[1][p * 5 + j];
            out[i * 5 + j] = (double)s;
        }
}

void c_softmax(const double *const *in, double *out) /* [4,5] over the last axis */
{
    for (int i = 0; i < 4; i++) {
        double m = -INFINITY;
        long double s = 0;
        for (int j = 0; j < 5; j++) m = fmax(m, in[0][i * 5 + j]);
        for (int j = 0; j < 5; j++) s += expl(in[0][i * 5 + j] - m);
        for (int j = 0; j < 5; j++) out[i * 5 + j] = (double)(expl(in[0][i * 5 + j] - m) / s);
    }
}

void c_cross_entropy(const double *const *in, double *out) /* logits [6,5], targets [6] */
{
    long double total = 0;
    for (int i = 0; i < 6; i++) {
        double m = -INFINITY;
        long double s = 0;
        for (int j = 0; j < 5; j++) m = fmax(m, in[0][i * 5 + j]);
        for (int j = 0; j < 5; j++) s += expl(in[0][i * 5 + j] - m);
        total += (m - in[0][i * 5 + (int)in[1][i]]) + logl(s); /* m + logl(s) first loses the log next to 3e38 */
    }
    out[0] = (double)(total / 6);
}

void c_cross_entropy_at_max(const double *const *in, double *out) /* logits [6,5], target = argmax */
{
    long double total = 0;
    for (int i = 0; i < 6; i++) {
        double m = -INFINITY;
        long double s = 0;
        for (int j = 0; j < 5; j++) m = fmax(m, in[0][i * 5 + j]);
        for (int j = 0; j < 5; j++) s += expl((long double)in[0][i * 5 + j] - m);
        total += logl(s); /* (m - x_target) = 0 */
    }
    out[0] = (double)(total / 6);
}

void c_mse(const double *const *in, double *out) /* [4,5] */
{
    long double s = 0;
    for (int i = 0; i < 20; i++) s += (long double)(in[0][i] - in[1][i]) * (in[0][i] - in[1][i]);
    out[0] = (double)(s / 20);
}

/* Closed forms of Fourier rows along the last signal dim of row-major inputs: the DFT
 * summed in long double, angles from (k t mod n), independent of the backends' code.
 * op as ff_fft_op; lines x n complex (C2R: x m bins) in, the transform's layout out,
 * scaled as norm BACKWARD. A twiddle part that is exactly 0 (a quarter turn, taken
 * exactly) adds nothing, as in an FFT, where w = 1, -1, +-i are adds, subtracts and
 * swaps: an Inf or NaN input meeting only those leaves the other part finite. */
static void twiddle_l(int64_t j, int64_t n, long double *c, long double *s) /* e^(-2 pi i j / n) = c - i s */
{
    static const long double qc[4] = {1, 0, -1, 0}, qs[4] = {0, 1, 0, -1};
    const long double tau = 6.283185307179586476925286766559L;
    if (4 * j % n == 0) {
        *c = qc[4 * j / n], *s = qs[4 * j / n];
    } else {
        *c = cosl(tau * (long double)j / (long double)n), *s = sinl(tau * (long double)j / (long double)n);
    }
}

static void dft_closed(int op, const double *in, double *out, int64_t lines, int64_t n)
{
    int64_t m = n / 2 + 1, nin = op == FF_FFT_C2R ? m : n, nout = op == FF_FFT_R2C ? m : n;
    for (int64_t l = 0; l < lines; l++)
        for (int64_t k = 0; k < nout; k++) {
            long double re = 0, im = 0;
            for (int64_t t = 0; t < nin; t++) {
                long double xr = op == FF_FFT_R2C ? in[l * n + t] : in[(l * nin + t) * 2];
                long double xi = op == FF_FFT_R2C ? 0 : in[(l * nin + t) * 2 + 1], c, s;
                twiddle_l((k * t) % n, n, &c, &s);
                if (op == FF_FFT_C2R) { /* bins 1 .. n - m count twice; imaginary parts of 0 and n/2 ignored */
                    long double wgt = t == 0 || t > n - m ? 1 : 2;
                    if (c != 0) re += wgt * xr * c;
                    if (s != 0 && t != 0 && 2 * t != n) re -= wgt * xi * s;
                } else { /* (xr + i xi)(c - i s) */
                    if (c != 0) re += xr * c, im += xi * c;
                    if (s != 0) re += xi * s, im -= xr * s;
                }
            }
            if (op == FF_FFT_C2R) out[l * n + k] = (double)(re / (long double)n); /* norm BACKWARD */
            else out[(l * nout + k) * 2] = (double)re, out[(l * nout + k) * 2 + 1] = (double)im;
        }
}
void closed_fft_last(const double *const *in, double *out) { dft_closed(FF_FFT_FORWARD, in[0], out, 3, 13); }
void closed_rfft_last(const double *const *in, double *out) { dft_closed(FF_FFT_R2C, in[0], out, 4, 11); }
void closed_irfft_last(const double *const *in, double *out) { dft_closed(FF_FFT_C2R, in[0], out, 3, 10); }
void closed_fft_len8(const double *const *in, double *out) { dft_closed(FF_FFT_FORWARD, in[0], out, 2, 8); }

/* The rank-2 SVD cases: U^T U of x [2, 2, 3] wide (U: 3 x 3) is I; U S Vh of x [2, 2, 3]
 * is the matrix repeated_rows built */
void c_eye_2x3x3(const double *const *in, double *out)
{
    (void)in;
    for (int i = 0; i < 18; i++) out[i] = i % 9 % 4 == 0;
}
void c_repeated_rows_2x2x3(const double *const *in, double *out)
{
    for (int b = 0; b < 2; b++)
        for (int j = 0; j < 3; j++) {
            const double *x = in[0] + b * 6;
            double *a = out + b * 12;
            a[j] = x[j], a[3 + j] = x[3 + j], a[6 + j] = 2.0 * x[j], a[9 + j] = 0;
        }
}
