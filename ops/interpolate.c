/* interpolate (F.interpolate): resize the spatial dims of [N, C, *spatial] (1 to 3 of them)
 * by nearest neighbour or (bi/tri)linear interpolation, one axis at a time. Source
 * positions are computed on the host in double with PyTorch's rules (scale = in / out, or
 * 1 / scale_factor when one was given; align_corners maps the corner samples onto each
 * other), uploaded as indices and weights, and applied with index_select, mul and add, so
 * the gradient (scattered back through index_select) comes from autograd. */
#include <math.h>
#include <stdlib.h>

#include "expr.h"

/* One axis of length in resized to out (scale 0: in / out), as a new reference. */
static ff_tensor *resize_axis(const ff_tensor *x, int axis, int64_t out, double scale, ff_interp_mode mode,
                              bool align_corners)
{
    int64_t in = x->layout.shape[axis];
    if (in == out && scale <= 0) return ff_tensor_retain((ff_tensor *)x);
    if (scale <= 0) scale = (double)in / (double)out;
    int64_t *i0 = malloc(sizeof(int64_t) * (size_t)(out ? out : 1) * 2);
    double *w = malloc(sizeof(double) * (size_t)(out ? out : 1) * 2);
    if (!i0 || !w) {
        free(i0), free(w);
        return ff_error(FF_ERR_OOM, "ff_interpolate: out of memory"), NULL;
    }
    int64_t *i1 = i0 + out;
    double *w1 = w + out;
    for (int64_t o = 0; o < out; o++) {
        if (mode == FF_INTERP_NEAREST) {
            double s = floor((double)o * scale); /* compared as a double: a huge scale must not overflow */
            i0[o] = s < (double)(in - 1) ? (int64_t)s : in - 1;
            continue;
        }
        double src = align_corners ? (out > 1 ? (double)o * (double)(in - 1) / (double)(out - 1) : 0.0)
                                   : ((double)o + 0.5) * scale - 0.5;
        if (src < 0) src = 0;
        int64_t f = src < (double)(in - 1) ? (int64_t)src : in - 1;
        i0[o] = f;
        i1[o] = f < in - 1 ? f + 1 : f;
        w1[o] = src - (double)f;
    }
    ff_backend *be = x->storage->backend;
    ff_expr ex = {0}, *e = &ex;
    ff_tensor *r;
    ff_tensor *idx0 = FF_EX(e, ff_from_data_on(be, i0, 1, &out, FF_I64));
    ff_tensor *a = FF_EX(e, ff_index_select(x, axis, idx0));
    if (mode == FF_INTERP_NEAREST) {
        r = a;
    } else {
        int64_t wshape[FF_MAX_DIMS];
        for (int d = 0; d < x->layout.ndim; d++) wshape[d] = d == axis ? out : 1;
        for (int64_t o = 0; o < out; o++) w[o] = 1.0 - w1[o];
        ff_tensor *idx1 = FF_EX(e, ff_from_data_on(be, i1, 1, &out, FF_I64));
        ff_tensor *b = FF_EX(e, ff_index_select(x, axis, idx1));
        ff_tensor *wa = FF_EX(e, ff_from_data_on(be, w, x->layout.ndim, wshape, FF_F64));
        ff_tensor *wb = FF_EX(e, ff_from_data_on(be, w1, x->layout.ndim, wshape, FF_F64));
        ff_tensor *wa2 = FF_EX(e, ff_astype(wa, x->dtype)), *wb2 = FF_EX(e, ff_astype(wb, x->dtype));
        ff_tensor *pa = FF_EX(e, ff_mul(a, wa2)), *pb = FF_EX(e, ff_mul(b, wb2));
        r = FF_EX(e, ff_add(pa, pb));
    }
    free(i0), free(w);
    r = ff_expr_result(e, r);
    ff_expr_free(e);
    return r;
}

ff_tensor *ff_interpolate(const ff_tensor *x, int nsize, const int64_t *size, const double *scales,
                          ff_interp_mode mode, bool align_corners)
{
    static const char fn[] = "ff_interpolate";
    if (!x || !size) return ff_error(FF_ERR_INVALID, "%s: NULL argument", fn), NULL;
    int nd = x->layout.ndim, ns = nd - 2;
    if (ns < 1 || ns > 3 || nsize != ns)
        return ff_error(FF_ERR_INVALID, "%s: expected [N, C, *spatial] with 1 to 3 spatial dims and a size for each, "
                        "got rank %d and %d sizes", fn, nd, nsize), NULL;
    if (!ff_dtype_is_float(x->dtype))
        return ff_error(FF_ERR_INVALID, "%s: x must be floating point, got %s", fn, ff_dtype_name(x->dtype)), NULL;
    if (mode != FF_INTERP_NEAREST && mode != FF_INTERP_LINEAR)
        return ff_error(FF_ERR_INVALID, "%s: unknown mode %d", fn, (int)mode), NULL;
    for (int k = 0; k < ns; k++)
        if (size[k] < 1 || x->layout.shape[2 + k] < 1)
            return ff_error(FF_ERR_INVALID, "%s: sizes must be >= 1 (input %lld, output %lld at spatial dim %d)", fn,
                            (long long)x->layout.shape[2 + k], (long long)size[k], k), NULL;
    for (int k = 0; scales && k < ns; k++) /* NaN would index out of range; inf and <= 0 mean nothing */
        if (!isfinite(scales[k]) || scales[k] <= 0)
            return ff_error(FF_ERR_INVALID, "%s: scale %g at spatial dim %d must be finite and > 0 (it is 1 / "
                            "scale_factor; NULL scales: input size / output size)", fn, scales[k], k), NULL;
    ff_tensor *y = ff_tensor_retain((ff_tensor *)x);
    for (int k = 0; k < ns && y; k++) {
        ff_tensor *next = resize_axis(y, 2 + k, size[k], scales ? scales[k] : 0.0, mode, align_corners);
        ff_tensor_release(y);
        y = next;
    }
    if (y == x) { /* nothing resized: a new tensor all the same, as PyTorch */
        ff_tensor *c = ff_clone(x);
        ff_tensor_release(y);
        y = c;
    }
    if (!y) ff_error_prefix(fn);
    return y;
}
