/* conv2d as im2col composed from differentiable views: pad, one strided slice view
 * per kernel offset, stack (the only copy of the input, KH * KW times its size), then
 * one batched matmul with the flattened kernel. Every step records its own node, so
 * the gradient (col2im included: the backward of slice + stack scatters into the
 * padded input) comes from autograd and runs on every backend. */
#include <limits.h>
#include <stdlib.h>

#include "expr.h"

ff_tensor *ff_op_windows2d(const ff_tensor *x, int64_t kh, int64_t kw, int64_t sh, int64_t sw, int64_t ph,
                           int64_t pw, double pad_value, int64_t *oh, int64_t *ow, const char *fn)
{
    if (kh < 1 || kw < 1)
        return ff_error(FF_ERR_INVALID, "%s: kernel size (%lld, %lld) must be >= 1", fn, (long long)kh,
                        (long long)kw), NULL;
    if (sh < 1 || sw < 1)
        return ff_error(FF_ERR_INVALID, "%s: stride (%lld, %lld) must be >= 1", fn, (long long)sh, (long long)sw),
               NULL;
    if (ph < 0 || pw < 0)
        return ff_error(FF_ERR_INVALID, "%s: padding (%lld, %lld) must be >= 0", fn, (long long)ph, (long long)pw),
               NULL;
    const int64_t *s = x->layout.shape;
    int64_t hp, wp, k;
    if (ff_mul_overflow_i64(ph, 2, &hp) || ff_add_overflow_i64(s[2], hp, &hp) || ff_mul_overflow_i64(pw, 2, &wp) ||
        ff_add_overflow_i64(s[3], wp, &wp) || ff_mul_overflow_i64(kh, kw, &k))
        return ff_error(FF_ERR_OVERFLOW, "%s: padded size or kernel size overflows", fn), NULL;
    if (hp < kh || wp < kw)
        return ff_error(FF_ERR_INVALID, "%s: kernel (%lld, %lld) is larger than the padded input (%lld, %lld)", fn,
                        (long long)kh, (long long)kw, (long long)hp, (long long)wp), NULL;
    if (k > INT_MAX)
        return ff_error(FF_ERR_INVALID, "%s: kernel (%lld, %lld) has too many offsets", fn, (long long)kh,
                        (long long)kw), NULL;
    *oh = (hp - kh) / sh + 1;
    *ow = (wp - kw) / sw + 1;

    ff_tensor *xp = ph || pw ? ff_pad(x, (int64_t[]){0, 0, 0, 0, ph, ph, pw, pw}, pad_value)
                             : ff_tensor_retain((ff_tensor *)x);
    ff_tensor **views = xp ? calloc((size_t)k, sizeof *views) : NULL;
    if (xp && !views) ff_error(FF_ERR_OOM, "%s: out of memory for %lld window views", fn, (long long)k);
    bool ok = views != NULL;
    for (int64_t i = 0; ok && i < kh; i++) {
        ff_tensor *rows = ff_slice(xp, 2, i, i + sh * (*oh - 1) + 1, sh);
        for (int64_t j = 0; rows && j < kw; j++) {
            views[i * kw + j] = ff_slice(rows, 3, j, j + sw * (*ow - 1) + 1, sw);
            if (!views[i * kw + j]) break;
        }
        ok = rows && views[i * kw + kw - 1];
        ff_tensor_release(rows);
    }
    ff_tensor *out = ok ? ff_stack((int)k, views, 2) : NULL;
    for (int64_t i = 0; views && i < k; i++) ff_tensor_release(views[i]);
    free(views);
    ff_tensor_release(xp);
    if (!out) ff_error_prefix(fn);
    return out;
}

static void shape4(const ff_tensor *t, long long *v)
{
    for (int d = 0; d < 4; d++) v[d] = (long long)t->layout.shape[d];
}

static ff_status check_conv(const ff_tensor *x, const ff_tensor *w, const ff_tensor *bias, const char *fn)
{
    if (!x || !w) return ff_error(FF_ERR_INVALID, "%s: x and w must not be NULL", fn);
    if (x->layout.ndim != 4 || w->layout.ndim != 4)
        return ff_error(FF_ERR_INVALID, "%s: expected x [N, C, H, W] and w [O, C, KH, KW], got ranks %d and %d", fn,
                        x->layout.ndim, w->layout.ndim);
    if (!ff_dtype_is_float(x->dtype) || x->dtype != w->dtype || (bias && bias->dtype != x->dtype))
        return ff_error(FF_ERR_INVALID, "%s: x (%s), w (%s) and bias (%s) must share one floating dtype", fn,
                        ff_dtype_name(x->dtype), ff_dtype_name(w->dtype), bias ? ff_dtype_name(bias->dtype) : "none");
    long long xs[4], ws[4];
    shape4(x, xs);
    shape4(w, ws);
    if (xs[1] != ws[1])
        return ff_error(FF_ERR_INVALID, "%s: x [%lld, %lld, %lld, %lld] has %lld channels but w [%lld, %lld, %lld, %lld] expects %lld",
                        fn, xs[0], xs[1], xs[2], xs[3], xs[1], ws[0], ws[1], ws[2], ws[3], ws[1]);
    if (bias && (bias->layout.ndim != 1 || bias->layout.shape[0] != ws[0]))
        return ff_error(FF_ERR_INVALID, "%s: bias must have shape [%lld] for w [%lld, %lld, %lld, %lld], got rank %d%s%lld",
                        fn, ws[0], ws[0], ws[1], ws[2], ws[3], bias->layout.ndim,
                        bias->layout.ndim == 1 ? " of size " : "", bias->layout.ndim == 1 ? (long long)bias->layout.shape[0] : 0LL);
    return FF_OK;
}

ff_tensor *ff_conv2d(const ff_tensor *x, const ff_tensor *w, const ff_tensor *bias, int64_t stride_h,
                     int64_t stride_w, int64_t pad_h, int64_t pad_w)
{
    static const char fn[] = "ff_conv2d";
    if (check_conv(x, w, bias, fn)) return NULL;
    const int64_t *xs = x->layout.shape, *ws = w->layout.shape;
    int64_t n = xs[0], c = xs[1], o = ws[0], oh = 0, ow = 0;
    ff_expr e = {0};
    /* [N, C, K, OH, OW] -> columns [N, C*K, OH*OW]: a view (stack's output is
     * contiguous), with rows ordered c * K + kh * KW + kw like w's flattening. */
    ff_tensor *win = FF_EX(&e, ff_op_windows2d(x, ws[2], ws[3], stride_h, stride_w, pad_h, pad_w, 0.0, &oh, &ow, fn));
    int64_t ck = c * ws[2] * ws[3]; /* <= numel(win) / (N * OH * OW): no overflow */
    ff_tensor *cols = FF_EX(&e, ff_reshape(win, 3, (int64_t[]){n, ck, oh * ow}));
    ff_tensor *wm = FF_EX(&e, ff_reshape(w, 2, (int64_t[]){o, ck}));
    ff_tensor *y = FF_EX(&e, ff_matmul(wm, cols)); /* [O, CK] @ [N, CK, L] -> [N, O, L] */
    ff_tensor *y4 = FF_EX(&e, ff_reshape(y, 4, (int64_t[]){n, o, oh, ow}));
    if (bias) {
        ff_tensor *b3 = FF_EX(&e, ff_reshape(bias, 3, (int64_t[]){o, 1, 1}));
        y4 = FF_EX(&e, ff_add(y4, b3));
    }
    ff_tensor *r = ff_expr_result(&e, y4);
    ff_expr_free(&e);
    if (!r) ff_error_prefix(fn);
    return r;
}
