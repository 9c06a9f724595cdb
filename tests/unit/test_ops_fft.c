/* ff_fft_fft / ifft / rfft / irfft (ops/fft.c): small transforms with known values, the
 * complex layout (last dim 2), n padding and truncation, norms, integer promotion, the
 * gradients against finite differences, and every bad input refused with a message that
 * names the function. The same ops against PyTorch: tests/python/test_functions_torch.py;
 * the backends' entries against the reference: ff-conformance -o fft. */
#include <math.h>

#include "ff_test.h"

static void test_fft_values(void)
{
    /* x = 1, 2, 3, 4 (imag 0): X = 10, -2+2i, -2, -2-2i */
    ff_tensor *x = ff_test_tensor(FF_F64, 2, SHAPE(4, 2), VALS(1, 0, 2, 0, 3, 0, 4, 0));
    ff_tensor *y = ff_fft_fft(x, -1, -1, FF_FFT_NORM_BACKWARD);
    CHECK_TENSOR(y, 2, SHAPE(4, 2), VALS(10, 0, -2, 2, -2, 0, -2, -2), 1e-12);
    ff_tensor *back = ff_fft_ifft(y, -1, 0, FF_FFT_NORM_BACKWARD); /* axis 0 is the same (only) complex dim */
    CHECK_TENSOR(back, 2, SHAPE(4, 2), VALS(1, 0, 2, 0, 3, 0, 4, 0), 1e-12);
    ff_tensor *o = ff_fft_fft(x, -1, 0, FF_FFT_NORM_ORTHO), *f = ff_fft_fft(x, -1, 0, FF_FFT_NORM_FORWARD);
    CHECK_TENSOR(o, 2, SHAPE(4, 2), VALS(5, 0, -1, 1, -1, 0, -1, -1), 1e-12);
    CHECK_TENSOR(f, 2, SHAPE(4, 2), VALS(2.5, 0, -0.5, 0.5, -0.5, 0, -0.5, -0.5), 1e-12);
    /* n truncates (to 1, 2: 3, -1; to 1: 1) or pads with zeros */
    ff_tensor *p = ff_fft_fft(x, 2, 0, FF_FFT_NORM_BACKWARD);
    CHECK_TENSOR(p, 2, SHAPE(2, 2), VALS(3, 0, -1, 0), 1e-12);
    ff_tensor *t1 = ff_fft_fft(x, 1, 0, FF_FFT_NORM_BACKWARD);
    CHECK_TENSOR(t1, 2, SHAPE(1, 2), VALS(1, 0), 0);
    ff_tensor *r = ff_test_tensor(FF_F64, 1, SHAPE(4), VALS(1, 2, 3, 4));
    ff_tensor *ry = ff_fft_rfft(r, -1, 0, FF_FFT_NORM_BACKWARD);
    CHECK_TENSOR(ry, 2, SHAPE(3, 2), VALS(10, 0, -2, 2, -2, 0), 1e-12);
    ff_tensor *rp = ff_fft_rfft(r, 6, -1, FF_FFT_NORM_BACKWARD); /* 1 2 3 4 0 0: 4 bins */
    CHECK(rp && ff_tensor_dim(rp, 0) == 4 && ff_tensor_dim(rp, 1) == 2);
    ff_tensor *ri = ff_fft_irfft(ry, -1, -1, FF_FFT_NORM_BACKWARD); /* default n = 2 (3 - 1) */
    CHECK_TENSOR(ri, 1, SHAPE(4), VALS(1, 2, 3, 4), 1e-12);
    /* irfft ignores the imaginary parts of bin 0 and of the Nyquist bin of an even n */
    ff_tensor *h = ff_test_tensor(FF_F64, 2, SHAPE(3, 2), VALS(10, 7, -2, 2, -2, -5));
    ff_tensor *hi = ff_fft_irfft(h, 4, 0, FF_FFT_NORM_BACKWARD);
    CHECK_TENSOR(hi, 1, SHAPE(4), VALS(1, 2, 3, 4), 1e-12);
    /* odd n from the same 3 bins: 5 real values */
    ff_tensor *h5 = ff_fft_irfft(h, 5, 0, FF_FFT_NORM_FORWARD);
    CHECK(h5 && ff_tensor_ndim(h5) == 1 && ff_tensor_dim(h5, 0) == 5);
    RELEASE(y, back, o, f, p, t1, r, ry, rp, ri, h, hi, h5, x);
}

/* Batched along a middle axis, on a transposed view: each line is its own transform. */
static void test_fft_axis_and_views(void)
{
    ff_tensor *a = ff_test_tensor(FF_F32, 3, SHAPE(2, 2, 2), VALS(1, 0, 0, 1, 2, 0, 0, -1));
    ff_tensor *t = ff_transpose(a, 0, 1); /* [2, 2, 2], signal dims swapped */
    ff_tensor *y = ff_fft_fft(t, -1, 0, FF_FFT_NORM_BACKWARD);
    /* t[:, j] = a[j]: the lines (1, i) -> (1 + i, 1 - i) and (2, -i) -> (2 - i, 2 + i) */
    CHECK_TENSOR(y, 3, SHAPE(2, 2, 2), VALS(1, 1, 2, -1, 1, -1, 2, 1), 1e-6);
    CHECK(y && ff_tensor_dtype(y) == FF_F32);
    ff_tensor *i = ff_test_tensor(FF_I32, 1, SHAPE(2), VALS(3, 1));
    ff_tensor *iy = ff_fft_rfft(i, -1, 0, FF_FFT_NORM_BACKWARD); /* integers compute in f32 */
    CHECK(iy && ff_tensor_dtype(iy) == FF_F32);
    CHECK_TENSOR(iy, 2, SHAPE(2, 2), VALS(4, 0, 2, 0), 0);
    ff_tensor *e = ff_zeros(3, SHAPE(0, 5, 2), FF_F32); /* no lines: an empty result */
    ff_tensor *ey = ff_fft_fft(e, -1, -1, FF_FFT_NORM_BACKWARD);
    CHECK(ey && ff_tensor_numel(ey) == 0);
    RELEASE(a, t, y, i, iy, e, ey);
}

static ff_tensor *apply_fft(int n, ff_tensor *const *in, void *user)
{
    (void)n;
    switch (*(const int *)user) {
    case 0: return ff_fft_fft(in[0], 5, 0, FF_FFT_NORM_ORTHO); /* pads 3 -> 5 */
    case 1: return ff_fft_ifft(in[0], 2, 1, FF_FFT_NORM_BACKWARD); /* truncates 3 -> 2 */
    case 2: return ff_fft_rfft(in[0], -1, 1, FF_FFT_NORM_FORWARD);
    case 3: return ff_fft_irfft(in[0], 4, 1, FF_FFT_NORM_BACKWARD); /* even n: a Nyquist bin */
    default: return ff_fft_irfft(in[0], 5, 0, FF_FFT_NORM_ORTHO);   /* odd n, bins padded 3 -> 3 */
    }
}

static void test_fft_gradients(void)
{
    ff_tensor *c = ff_test_tensor(FF_F64, 3, SHAPE(3, 3, 2),
                                  VALS(0.1, -0.4, 1.2, 0.3, -0.7, 0.9, 0.5, 0.5, -1.1, 0.2, 0.8, -0.6, 0.3, 0.0, -0.2,
                                       0.4, 1.0, -0.9));
    ff_tensor *r = ff_test_tensor(FF_F64, 2, SHAPE(2, 5), VALS(0.3, -1.2, 0.8, 0.05, 1.5, -0.4, 0.6, 0.9, -0.1, 0.2));
    for (int which = 0; which < 5; which++) {
        ff_tensor *in[1] = {which == 2 ? r : c};
        ff_status st = ff_gradcheck(apply_fft, &which, 1, in, NULL);
        if (st) fprintf(stderr, "gradcheck %d: %s\n", which, ff_last_error());
        CHECK(st == FF_OK);
    }
    RELEASE(c, r);
}

static void test_fft_errors(void)
{
    ff_tensor *real = ff_ones(2, SHAPE(3, 4), FF_F32), *cx = ff_ones(2, SHAPE(3, 2), FF_F32);
    ff_tensor *pair = ff_ones(1, SHAPE(2), FF_F32), *s = ff_ones(0, NULL, FF_F32);
    ff_tensor *bin1 = ff_ones(2, SHAPE(1, 2), FF_F32);
    CHECK_ERROR(ff_fft_fft(real, -1, -1, FF_FFT_NORM_BACKWARD) == NULL, FF_ERR_INVALID,
                "ff_fft_fft: x must be complex");
    CHECK_ERROR(ff_fft_ifft(pair, -1, -1, FF_FFT_NORM_BACKWARD) == NULL, FF_ERR_INVALID,
                "ff_fft_ifft: x must be complex");
    CHECK_ERROR(ff_fft_irfft(real, -1, -1, FF_FFT_NORM_BACKWARD) == NULL, FF_ERR_INVALID,
                "ff_fft_irfft: x must be complex");
    CHECK_ERROR(ff_fft_fft(cx, 0, -1, FF_FFT_NORM_BACKWARD) == NULL, FF_ERR_INVALID,
                "ff_fft_fft: invalid number of data points");
    CHECK_ERROR(ff_fft_rfft(real, -3, -1, FF_FFT_NORM_BACKWARD) == NULL, FF_ERR_INVALID, "ff_fft_rfft: invalid number");
    CHECK_ERROR(ff_fft_fft(cx, -1, 1, FF_FFT_NORM_BACKWARD) == NULL, FF_ERR_INVALID,
                "ff_fft_fft: axis 1 out of range for 1 complex");
    CHECK_ERROR(ff_fft_rfft(real, -1, -3, FF_FFT_NORM_BACKWARD) == NULL, FF_ERR_INVALID, "ff_fft_rfft: axis -3");
    CHECK_ERROR(ff_fft_rfft(s, -1, 0, FF_FFT_NORM_BACKWARD) == NULL, FF_ERR_INVALID, "ff_fft_rfft: x is 0-d");
    CHECK_ERROR(ff_fft_fft(cx, -1, 0, (ff_fft_norm)7) == NULL, FF_ERR_INVALID, "ff_fft_fft: norm 7");
    CHECK_ERROR(ff_fft_irfft(bin1, -1, 0, FF_FFT_NORM_BACKWARD) == NULL, FF_ERR_INVALID,
                "ff_fft_irfft: invalid number of data points n = 0 (the default");
    CHECK_ERROR(ff_fft_fft(NULL, -1, 0, FF_FFT_NORM_BACKWARD) == NULL, FF_ERR_INVALID, "ff_fft_fft: tensor is NULL");
    RELEASE(real, cx, pair, s, bin1);
}

FF_TEST_MAIN("ops_fft", TEST(test_fft_values), TEST(test_fft_axis_and_views), TEST(test_fft_gradients),
             TEST(test_fft_errors))
