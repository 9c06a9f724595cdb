/* The discrete Fourier transforms of torch.fft along one axis: fft, ifft, rfft, irfft,
 * on the backend's optional fft entry (cpu and cpu_blas have it; a backend without it,
 * opencl today, gets "backend X does not support fft").
 *
 * Complex values are real tensors whose last dim has size 2 (re, im), the layout of
 * torch.view_as_real. fft, ifft and irfft take that layout and their axis counts only the
 * signal dims (never the pair); rfft takes a real tensor and returns that layout. As
 * PyTorch: n (-1: the input's length; irfft's default is 2 (m - 1)) zero-pads or
 * truncates the input along the axis first; norm BACKWARD scales the inverse transforms
 * by 1/n, FORWARD the forward ones, ORTHO both by 1/sqrt(n); integer and bool inputs
 * compute in f32.
 *
 * Gradients. Each transform is linear over the reals, and its gradient is the transpose
 * of that real-linear map (what PyTorch's complex autograd gives through view_as_real):
 *   fft / ifft: the other direction, unnormalized, times the same scale
 *   rfft:       g zero-padded from n/2 + 1 to n bins, the inverse c2c, its real part
 *   irfft:      rfft of g with bins 1 .. n - m doubled (each stands for a bin and its
 *               conjugate; bin 0 and, n even, bin n/2 stand for one), as PyTorch
 * all written with these ops, so higher orders work. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "expr.h"

static const char *const op_name[] = {"fft", "ifft", "rfft", "irfft"};

static ff_tensor *transform(int op, const ff_tensor *x, int ax, int64_t n, double scale, const char *fn);

/* t along ax cut to, or zero-padded at the end to, len elements. */
static ff_tensor *resize_axis(const ff_tensor *t, int ax, int64_t len)
{
    int64_t have = t->layout.shape[ax];
    if (have == len) return ff_tensor_retain((ff_tensor *)t);
    if (have > len) return ff_narrow(t, ax, 0, len);
    int64_t pads[2 * FF_MAX_DIMS] = {0};
    pads[2 * ax + 1] = len - have;
    return ff_pad(t, pads, 0.0);
}

/* irfft's bin weights for its gradient, shaped to broadcast over the spectrum b:
 * 1 for bin 0, 2 for bins 1 .. n - m, 1 for the Nyquist bin of an even n. */
static ff_tensor *bin_weights(const ff_tensor *b, int ax, int64_t n)
{
    int64_t m = n / 2 + 1, shape[FF_MAX_DIMS];
    for (int d = 0; d < b->layout.ndim; d++) shape[d] = d == ax ? m : 1;
    void *w = malloc((size_t)m * sizeof(double));
    if (!w) return ff_error(FF_ERR_OOM, "irfft backward: out of memory for %lld weights", (long long)m), NULL;
    for (int64_t k = 0; k < m; k++) {
        double v = k >= 1 && k <= n - m ? 2.0 : 1.0;
        if (b->dtype == FF_F32) ((float *)w)[k] = (float)v;
        else ((double *)w)[k] = v;
    }
    ff_tensor *r = ff_from_data_on(b->storage->backend, w, b->layout.ndim, shape, b->dtype);
    free(w);
    return r;
}

/* ip: [0] op, [1] axis, [2] n; dp: [0] scale */
static ff_status fft_backward(ff_node *node, const ff_tensor *g, ff_tensor **gi)
{
    int op = (int)node->ip[0], ax = (int)node->ip[1];
    int64_t n = node->ip[2];
    double scale = node->dp[0];
    const char *fn = node->name;
    ff_expr e = {0};
    ff_tensor *r;
    if (op == FF_FFT_FORWARD || op == FF_FFT_INVERSE) {
        r = FF_EX(&e, transform(op == FF_FFT_FORWARD ? FF_FFT_INVERSE : FF_FFT_FORWARD, g, ax, n, scale, fn));
    } else if (op == FF_FFT_R2C) {
        ff_tensor *p = FF_EX(&e, resize_axis(g, ax, n));
        ff_tensor *c = FF_EX(&e, transform(FF_FFT_INVERSE, p, ax, n, scale, fn));
        r = FF_EX(&e, ff_select(c, c->layout.ndim - 1, 0));
    } else {
        ff_tensor *b = FF_EX(&e, transform(FF_FFT_R2C, g, ax, n, scale, fn));
        ff_tensor *w = FF_EX(&e, bin_weights(b, ax, n));
        r = FF_EX(&e, ff_mul(b, w));
    }
    gi[0] = ff_expr_result(&e, r);
    ff_expr_free(&e);
    return gi[0] ? FF_OK : ff_last_status();
}

/* One unnormalized transform of x (already n long along ax, n / 2 + 1 for C2R; float)
 * times scale, recorded for autograd. */
static ff_tensor *transform(int op, const ff_tensor *x, int ax, int64_t n, double scale, const char *fn)
{
    int nd = x->layout.ndim, ynd = nd;
    int64_t shape[FF_MAX_DIMS];
    memcpy(shape, x->layout.shape, sizeof(int64_t) * (size_t)nd);
    if (op == FF_FFT_R2C) shape[ax] = n / 2 + 1, shape[nd] = 2, ynd = nd + 1; /* the caller checked the rank */
    if (op == FF_FFT_C2R) shape[ax] = n, ynd = nd - 1;
    ff_tensor *y = ff_tensor_new(x->storage->backend, ynd, shape, x->dtype, fn);
    if (y && (ff_kernel_fft(op, y, x, ax, fn) || (scale != 1.0 && ff_mul_scalar_(y, scale)))) {
        ff_tensor_release(y);
        return NULL;
    }
    const ff_tensor *in[1] = {x};
    ff_node *node = ff_op_record_node(&y, op_name[op], fft_backward, 1, in, 0, NULL);
    if (node) {
        node->ip[0] = op, node->ip[1] = ax, node->ip[2] = n;
        node->nip = 3;
        node->dp[0] = scale;
    }
    return y;
}

static ff_tensor *fft_op(int op, const ff_tensor *x, int64_t n, int axis, ff_fft_norm norm, const char *fn)
{
    if (!x) return ff_error(FF_ERR_INVALID, "%s: tensor is NULL", fn), NULL;
    if (norm != FF_FFT_NORM_BACKWARD && norm != FF_FFT_NORM_FORWARD && norm != FF_FFT_NORM_ORTHO)
        return ff_error(FF_ERR_INVALID, "%s: norm %d is none of FF_FFT_NORM_BACKWARD, _FORWARD, _ORTHO", fn, (int)norm),
               NULL;
    int nd = x->layout.ndim, complex_in = op != FF_FFT_R2C;
    int sd = complex_in ? nd - 1 : nd, ax; /* signal dims */
    char sh[128];
    if (complex_in && (nd < 2 || x->layout.shape[nd - 1] != 2))
        return ff_error(FF_ERR_INVALID,
                        "%s: x must be complex: a last dim of size 2 (re, im) after at least one signal dim, got "
                        "shape %s (for a real signal use ff_fft_rfft, or append a zero imaginary part)",
                        fn, ff_shape_str(nd, x->layout.shape, sh, sizeof sh)), NULL;
    if (sd < 1) return ff_error(FF_ERR_INVALID, "%s: x is 0-d; the transform needs a dim", fn), NULL;
    if (!complex_in && nd >= FF_MAX_DIMS)
        return ff_error(FF_ERR_INVALID, "%s: x has rank %d; the complex result needs one more dim (max %d)", fn, nd,
                        FF_MAX_DIMS), NULL;
    if (axis < -sd || axis >= sd)
        return ff_error(FF_ERR_INVALID, "%s: axis %d out of range for %d %s dims", fn, axis, sd,
                        complex_in ? "complex" : "signal"), NULL;
    ax = axis < 0 ? axis + sd : axis;
    int64_t len = x->layout.shape[ax];
    int64_t want = n == -1 ? (op == FF_FFT_C2R ? 2 * (len - 1) : len) : n;
    if (want < 1)
        return ff_error(FF_ERR_INVALID, "%s: invalid number of data points n = %lld%s", fn, (long long)want,
                        n != -1               ? " (n must be >= 1, or -1 for the default)"
                        : op == FF_FFT_C2R    ? " (the default 2 (m - 1) from m bins; pass n)"
                                              : " (the input is empty along the axis)"), NULL;
    n = want;
    int fwd = op == FF_FFT_FORWARD || op == FF_FFT_R2C;
    double scale = norm == FF_FFT_NORM_ORTHO                      ? 1.0 / sqrt((double)n)
                   : (norm == FF_FFT_NORM_FORWARD) == (fwd != 0) ? 1.0 / (double)n
                                                                  : 1.0;
    ff_expr e = {0};
    ff_tensor *xf = FF_EX(&e, ff_op_cast(x, ff_dtype_is_float(x->dtype) ? x->dtype : FF_F32, fn));
    ff_tensor *xr = FF_EX(&e, resize_axis(xf, ax, op == FF_FFT_C2R ? n / 2 + 1 : n));
    ff_tensor *y = ff_expr_result(&e, FF_EX(&e, transform(op, xr, ax, n, scale, fn)));
    ff_expr_free(&e);
    return y;
}

ff_tensor *ff_fft_fft(const ff_tensor *x, int64_t n, int axis, ff_fft_norm norm)
{
    return fft_op(FF_FFT_FORWARD, x, n, axis, norm, "ff_fft_fft");
}
ff_tensor *ff_fft_ifft(const ff_tensor *x, int64_t n, int axis, ff_fft_norm norm)
{
    return fft_op(FF_FFT_INVERSE, x, n, axis, norm, "ff_fft_ifft");
}
ff_tensor *ff_fft_rfft(const ff_tensor *x, int64_t n, int axis, ff_fft_norm norm)
{
    return fft_op(FF_FFT_R2C, x, n, axis, norm, "ff_fft_rfft");
}
ff_tensor *ff_fft_irfft(const ff_tensor *x, int64_t n, int axis, ff_fft_norm norm)
{
    return fft_op(FF_FFT_C2R, x, n, axis, norm, "ff_fft_irfft");
}
