/* unfold (im2col) and fold (col2im), include/ff/unfold.h. unfold: x padded, each axis's
 * block elements taken by index_select (stride and dilation in the index), then the
 * kernel axes moved before the block axes; its gradient is index_select's, a scatter-add,
 * which is fold. fold: one scatter_add of every column element into its place in the
 * padded plane, then the padding sliced off; its gradient is a gather, which is unfold. */
#include <stdlib.h>

#include "ff/unfold.h"
#include "ops_impl.h"

/* Blocks along one axis of size in (0 if none fits or the arguments are bad). */
static int64_t blocks(int64_t in, const ff_unfold_params *p, int a)
{
    int64_t span = in + 2 * p->padding[a] - p->dilation[a] * (p->kernel[a] - 1) - 1;
    return span < 0 ? 0 : span / p->stride[a] + 1;
}

static ff_status check_params(const ff_unfold_params *p, const char *fn)
{
    if (!p) return ff_error(FF_ERR_INVALID, "%s: params must not be NULL", fn);
    for (int a = 0; a < 2; a++)
        if (p->kernel[a] < 1 || p->dilation[a] < 1 || p->stride[a] < 1 || p->padding[a] < 0)
            return ff_error(FF_ERR_INVALID, "%s: axis %d: kernel %lld, dilation %lld, stride %lld, padding %lld; "
                            "expected kernel, dilation, stride >= 1 and padding >= 0", fn, a,
                            (long long)p->kernel[a], (long long)p->dilation[a], (long long)p->stride[a],
                            (long long)p->padding[a]);
    return FF_OK;
}

static ff_tensor *index_of(ff_backend *be, int64_t n, int64_t k, int64_t s, int64_t d)
{
    int64_t len = n * k, *idx = malloc((size_t)(len > 0 ? len : 1) * sizeof *idx);
    if (!idx) return ff_error(FF_ERR_OOM, "out of memory"), NULL;
    for (int64_t o = 0; o < n; o++)
        for (int64_t i = 0; i < k; i++) idx[o * k + i] = o * s + i * d;
    ff_tensor *t = ff_from_data_on(be, idx, 1, &len, FF_I64);
    free(idx);
    return t;
}

ff_tensor *ff_unfold(const ff_tensor *x, const ff_unfold_params *p)
{
    static const char fn[] = "ff_unfold";
    if (!x) return ff_error(FF_ERR_INVALID, "%s: x is NULL", fn), NULL;
    if (check_params(p, fn)) return NULL;
    if (x->layout.ndim != 4 || !ff_dtype_is_float(x->dtype))
        return ff_error(FF_ERR_INVALID, "%s: expected a floating x [N, C, H, W], got rank %d %s", fn, x->layout.ndim,
                        ff_dtype_name(x->dtype)), NULL;
    const int64_t *s = x->layout.shape;
    int64_t oh = blocks(s[2], p, 0), ow = blocks(s[3], p, 1), kh = p->kernel[0], kw = p->kernel[1];
    if (oh < 1 || ow < 1)
        return ff_error(FF_ERR_INVALID, "%s: x [%lld, %lld, %lld, %lld] padded by (%lld, %lld) holds no %lld x %lld "
                        "block of dilation (%lld, %lld)", fn, (long long)s[0], (long long)s[1], (long long)s[2],
                        (long long)s[3], (long long)p->padding[0], (long long)p->padding[1], (long long)kh,
                        (long long)kw, (long long)p->dilation[0], (long long)p->dilation[1]), NULL;
    int64_t pads[8] = {0, 0, 0, 0, p->padding[0], p->padding[0], p->padding[1], p->padding[1]};
    ff_tensor *xp = ff_pad(x, pads, 0.0);
    ff_tensor *ih = xp ? index_of(x->storage->backend, oh, kh, p->stride[0], p->dilation[0]) : NULL;
    ff_tensor *iw = ih ? index_of(x->storage->backend, ow, kw, p->stride[1], p->dilation[1]) : NULL;
    ff_tensor *a = iw ? ff_index_select(xp, 2, ih) : NULL;
    ff_tensor *b = a ? ff_index_select(a, 3, iw) : NULL; /* [N, C, OH kh, OW kw] */
    ff_tensor *v = b ? ff_reshape(b, 6, (int64_t[]){s[0], s[1], oh, kh, ow, kw}) : NULL;
    ff_tensor *t = v ? ff_permute(v, (int[]){0, 1, 3, 5, 2, 4}) : NULL;
    ff_tensor *y = t ? ff_reshape(t, 3, (int64_t[]){s[0], s[1] * kh * kw, oh * ow}) : NULL;
    ff_tensor *tmp[] = {xp, ih, iw, a, b, v, t};
    for (size_t i = 0; i < sizeof tmp / sizeof tmp[0]; i++) ff_tensor_release(tmp[i]);
    if (!y) ff_error_prefix(fn);
    return y;
}

/* [N, C, K L] index of each column element's place in the padded plane (row-major). */
static ff_tensor *fold_index(const ff_tensor *x, int64_t c, int64_t oh, int64_t ow, int64_t wp,
                             const ff_unfold_params *p)
{
    int64_t kh = p->kernel[0], kw = p->kernel[1], n = kh * kw * oh * ow;
    int64_t *idx = malloc((size_t)(n > 0 ? n : 1) * sizeof *idx);
    if (!idx) return ff_error(FF_ERR_OOM, "out of memory"), NULL;
    for (int64_t i = 0; i < kh; i++)
        for (int64_t j = 0; j < kw; j++)
            for (int64_t bh = 0; bh < oh; bh++)
                for (int64_t bw = 0; bw < ow; bw++)
                    idx[((i * kw + j) * oh + bh) * ow + bw] =
                        (bh * p->stride[0] + i * p->dilation[0]) * wp + bw * p->stride[1] + j * p->dilation[1];
    ff_tensor *t = ff_from_data_on(x->storage->backend, idx, 1, &n, FF_I64);
    free(idx);
    ff_tensor *b = t ? ff_broadcast_to(t, 3, (int64_t[]){x->layout.shape[0], c, n}) : NULL;
    ff_tensor *r = b ? ff_contiguous(b) : NULL;
    ff_tensor_release(t), ff_tensor_release(b);
    return r;
}

ff_tensor *ff_fold(const ff_tensor *x, const int64_t *out, const ff_unfold_params *p)
{
    static const char fn[] = "ff_fold";
    if (!x || !out) return ff_error(FF_ERR_INVALID, "%s: x and out must not be NULL", fn), NULL;
    if (check_params(p, fn)) return NULL;
    if (x->layout.ndim != 3 || !ff_dtype_is_float(x->dtype))
        return ff_error(FF_ERR_INVALID, "%s: expected a floating x [N, C kh kw, L], got rank %d %s", fn,
                        x->layout.ndim, ff_dtype_name(x->dtype)), NULL;
    const int64_t *s = x->layout.shape;
    int64_t k = p->kernel[0] * p->kernel[1], oh = out[0] >= 1 ? blocks(out[0], p, 0) : 0;
    int64_t ow = out[1] >= 1 ? blocks(out[1], p, 1) : 0;
    if (s[1] % k || s[2] != oh * ow || oh < 1 || ow < 1)
        return ff_error(FF_ERR_INVALID, "%s: x [%lld, %lld, %lld] does not fold into (%lld, %lld) with a %lld x %lld "
                        "kernel: expected a multiple of %lld columns and %lld blocks", fn, (long long)s[0],
                        (long long)s[1], (long long)s[2], (long long)out[0], (long long)out[1],
                        (long long)p->kernel[0], (long long)p->kernel[1], (long long)k, (long long)(oh * ow)), NULL;
    int64_t c = s[1] / k, hp = out[0] + 2 * p->padding[0], wp = out[1] + 2 * p->padding[1];
    ff_tensor *src = ff_reshape(x, 3, (int64_t[]){s[0], c, k * s[2]});
    ff_tensor *idx = src ? fold_index(x, c, oh, ow, wp, p) : NULL;
    ff_tensor *z = idx ? ff_full_on(x->storage->backend, 3, (int64_t[]){s[0], c, hp * wp}, x->dtype, 0.0) : NULL;
    ff_tensor *sum = z ? ff_scatter_add(z, 2, idx, src) : NULL;
    ff_tensor *pl = sum ? ff_reshape(sum, 4, (int64_t[]){s[0], c, hp, wp}) : NULL;
    ff_tensor *a = pl ? ff_narrow(pl, 2, p->padding[0], out[0]) : NULL;
    ff_tensor *y = a ? ff_narrow(a, 3, p->padding[1], out[1]) : NULL;
    ff_tensor *tmp[] = {src, idx, z, sum, pl, a};
    for (size_t i = 0; i < sizeof tmp / sizeof tmp[0]; i++) ff_tensor_release(tmp[i]);
    if (!y) ff_error_prefix(fn);
    return y;
}
