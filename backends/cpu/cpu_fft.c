/* The optional fft entry: a plain O(n^2) discrete Fourier transform of every line, the
 * readable oracle for cpu_blas's FFTW (any n, primes included). Each output is one sum
 * in double over a table of the n twiddles w[j] = e^(-2 pi i j / n), indexed by
 * (k t) mod n so no angle is computed from a large product, and is rounded once at its
 * store. The table is exact at quarter turns (see twiddle). The formulas are backend_abi.h's, written out:
 *   FORWARD / INVERSE: X[k] = sum_t x[t] w^(+-k t)
 *   R2C:               X[k] for k = 0..n/2 with x real
 *   C2R:               x[t] = Re X0 + 2 sum_{0<k<n-m+1} Re(X[k] w^(-k t)) + [n even] Re X[n/2] (-1)^t
 * Non-finite inputs: a product x w leaves out the parts of w that are exactly 0 (see
 * term), as FFTs do, which multiply by w = 1, -1 and +-i with adds, subtracts and swaps:
 * fft([inf, 0, 0]) is [inf, inf, inf] with zero imaginary parts (PyTorch's, FFTW's), not
 * the (inf + 0i)(1 - 0i) = inf + NaN i of a full complex multiply. Where several
 * non-finite values meet, FFT algorithms differ among themselves (pocketfft and FFTW
 * combine them in different orders); this is the plain sum's answer. */
#include <stdlib.h>

#include "cpu_impl.h"
#include "ff_backend_fft.h"

/* w = e^(-2 pi i j / n) as (*c, *s). The angle is split in integers into whole quarter
 * turns, applied exactly, and a rest below a quarter turn, so w is exactly 1, -i, -1 or i
 * where it should be (libm's sin(pi) is 1.2e-16, which would turn real spectra of real
 * integer signals slightly complex). */
static void twiddle(int64_t j, int64_t n, double *c, double *s)
{
    int64_t quarter = 4 * j / n, rest = 4 * j % n; /* angle = (quarter + rest / n) pi / 2 */
    double phi = 1.5707963267948966 * (double)rest / (double)n, cp = cos(phi), sp = sin(phi);
    double cr[4] = {cp, -sp, -cp, sp}, sr[4] = {sp, cp, -sp, -cp}; /* rotated by quarter turns */
    *c = cr[quarter], *s = -sr[quarter];
}

/* *re, *im += (xr + i xi)(wr + i wi), where a part of w that is exactly 0 (w = +-1 or
 * +-i, exact in the table) contributes nothing rather than 0 * x, NaN for an infinite x. */
static inline void term(double xr, double xi, double wr, double wi, double *re, double *im)
{
    if (wi == 0) *re += xr * wr, *im += xi * wr;
    else if (wr == 0) *re -= xi * wi, *im += xr * wi;
    else *re += xr * wr - xi * wi, *im += xr * wi + xi * wr;
}

/* One line: in (len complex values; imaginary 0 for a real src) -> out per op. */
static void dft_line(int op, int64_t n, const double *wr, const double *wi, const double *xr, const double *xi,
                     double *yr, double *yi)
{
    if (op == FF_FFT_C2R) {
        int64_t m = n / 2 + 1;
        for (int64_t t = 0; t < n; t++) {
            double acc = xr[0];
            if (n % 2 == 0) acc += t % 2 ? -xr[n / 2] : xr[n / 2];
            for (int64_t k = 1, j = 0; k < n - m + 1; k++) {
                double re = 0, im = 0;
                j = (j + t) % n; /* j = k t mod n */
                term(xr[k], xi[k], wr[j], -wi[j], &re, &im);
                acc += 2 * re; /* Re((xr + i xi)(wr - i wi)) */
            }
            yr[t] = acc;
        }
        return;
    }
    double s = op == FF_FFT_INVERSE ? -1.0 : 1.0; /* the inverse uses conj(w) */
    int64_t outs = op == FF_FFT_R2C ? n / 2 + 1 : n;
    for (int64_t k = 0; k < outs; k++) {
        double re = 0, im = 0;
        for (int64_t t = 0, j = 0; t < n; t++, j = (j + k) % n) /* j = k t mod n */
            term(xr[t], xi[t], wr[j], s * wi[j], &re, &im);
        yr[k] = re, yi[k] = im;
    }
}

ff_status cpu_fft(void *ctx, int op, const ff_view *dst, const ff_view *src, int axis)
{
    const ff_host_api *host = ctx ? ((cpu_ctx *)ctx)->host : NULL;
    int r = 0;
    int64_t n = 0;
    ff_status st = ffb_fft_check(host, "cpu", op, dst, src, axis, &r, &n);
    if (st) return st;
    int64_t lines = 1;
    for (int d = 0; d < r; d++)
        if (d != axis) lines *= src->shape[d];
    if (lines == 0) return FF_OK;
    double *w = malloc(6 * (size_t)n * sizeof *w); /* wr, wi, xr, xi, yr, yi */
    if (!w) return ffb_fail(host, FF_ERR_OOM, "cpu fft: out of memory for a line of %lld", (long long)n);
    double *wr = w, *wi = w + n, *xr = w + 2 * n, *xi = w + 3 * n, *yr = w + 4 * n, *yi = w + 5 * n;
    for (int64_t j = 0; j < n; j++) twiddle(j, n, &wr[j], &wi[j]);
    ff_dtype t = src->dtype;
    int64_t es = (int64_t)ff_dtype_size(t);
    int src_c = op != FF_FFT_R2C, dst_c = op != FF_FFT_C2R; /* complex views */
    int64_t in_len = src->shape[axis], out_len = dst->shape[axis];
    int64_t ss = src->strides[axis], ds = dst->strides[axis];
    int64_t sim = src_c ? src->strides[r] : 0, dim = dst_c ? dst->strides[r] : 0; /* re -> im */
    for (int64_t l = 0; l < lines; l++) {
        int64_t so, dof;
        ffb_fft_line_start(src, dst, r, axis, l, &so, &dof);
        const char *sp = (const char *)src->buf;
        char *dp = (char *)dst->buf;
        for (int64_t i = 0; i < in_len; i++) {
            int64_t e = so + i * ss;
            xr[i] = ffb_ld_f64(sp + e * es, t);
            xi[i] = src_c ? ffb_ld_f64(sp + (e + sim) * es, t) : 0.0;
        }
        dft_line(op, n, wr, wi, xr, xi, yr, yi);
        for (int64_t i = 0; i < out_len; i++) {
            int64_t e = dof + i * ds;
            ffb_st_f64(dp + e * es, t, yr[i]);
            if (dst_c) ffb_st_f64(dp + (e + dim) * es, t, yi[i]);
        }
    }
    free(w);
    return FF_OK;
}
