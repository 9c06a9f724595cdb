/* Conv2d and MaxPool2d modules over ff_conv2d / ff_max_pool2d. Conv2d stores
 * weight [out, in, kh, kw] and bias [out] as torch.nn.Conv2d, so weights line up. */
#include <math.h>
#include <stdlib.h>

#include "nn_impl.h"

typedef struct conv_info {
    int64_t in, out, kh, kw, stride, pad;
    bool has_bias;
} conv_info;

static void free_info(void *p) { free(p); }

static ff_tensor *conv_forward(ff_module *m, const ff_tensor *x, void *user)
{
    const conv_info *ci = user;
    if (ff_tensor_ndim(x) != 4 || ff_tensor_dim(x, 1) != ci->in) {
        ff_set_error(FF_ERR_INVALID, "ff_module_forward: Conv2d(%lld, %lld, kernel %lldx%lld) expects x [N, %lld, H, W], got rank %d with %lld channels",
                     (long long)ci->in, (long long)ci->out, (long long)ci->kh, (long long)ci->kw, (long long)ci->in,
                     ff_tensor_ndim(x), ff_tensor_ndim(x) >= 2 ? (long long)ff_tensor_dim(x, 1) : 0LL);
        return NULL;
    }
    return ff_conv2d(x, ff_module_param_at(m, 0), ci->has_bias ? ff_module_param_at(m, 1) : NULL, ci->stride,
                     ci->stride, ci->pad, ci->pad);
}

ff_module *ff_conv2d_module(int64_t in_channels, int64_t out_channels, int64_t kh, int64_t kw, int64_t stride,
                            int64_t pad, bool bias, uint64_t seed)
{
    static const char fn[] = "ff_conv2d_module";
    if (in_channels <= 0 || out_channels <= 0 || kh <= 0 || kw <= 0 || stride <= 0 || pad < 0) {
        ff_set_error(FF_ERR_INVALID, "%s: channels (%lld, %lld), kernel (%lld, %lld) and stride %lld must be > 0 and pad %lld >= 0",
                     fn, (long long)in_channels, (long long)out_channels, (long long)kh, (long long)kw,
                     (long long)stride, (long long)pad);
        return NULL;
    }
    int64_t fan_in = in_channels * kh * kw;
    if (fan_in / kh / kw != in_channels) {
        ff_set_error(FF_ERR_OVERFLOW, "%s: in_channels * kh * kw overflows", fn);
        return NULL;
    }
    conv_info *ci = malloc(sizeof *ci);
    if (!ci) {
        ff_set_error(FF_ERR_OOM, "%s: out of memory", fn);
        return NULL;
    }
    *ci = (conv_info){in_channels, out_channels, kh, kw, stride, pad, bias};
    ff_module *m = ff_module_new("Conv2d", conv_forward, ci, free_info);
    if (!m) return NULL;
    int64_t wshape[4] = {out_channels, in_channels, kh, kw};
    return ff_nn_conv_init(m, 4, wshape, bias ? out_channels : 0, fan_in, seed);
}

ff_module *ff_nn_conv_init(ff_module *m, int rank, const int64_t *wshape, int64_t nbias, int64_t fan_in,
                           uint64_t seed)
{
    double bound = 1.0 / sqrt((double)fan_in);
    ff_tensor *w = ff_rand_uniform(rank, wshape, FF_F32, -bound, bound, seed);
    ff_status st = w ? ff_module_register_parameter(m, "weight", w) : ff_nn_failed();
    ff_tensor_release(w);
    if (!st && nbias) {
        ff_tensor *b = ff_rand_uniform(1, &nbias, FF_F32, -bound, bound, seed + 1);
        st = b ? ff_module_register_parameter(m, "bias", b) : ff_nn_failed();
        ff_tensor_release(b);
    }
    if (st) {
        ff_module_release(m);
        return NULL;
    }
    return m;
}

/* ---- MaxPool2d -------------------------------------------------------------- */
typedef struct pool_info {
    int64_t k, stride;
} pool_info;

static ff_tensor *max_pool_forward(ff_module *m, const ff_tensor *x, void *user)
{
    const pool_info *pi = user;
    return ff_max_pool2d(x, pi->k, pi->k, pi->stride, pi->stride, 0, 0);
}

ff_module *ff_max_pool2d_module(int64_t k, int64_t stride)
{
    static const char fn[] = "ff_max_pool2d_module";
    if (k <= 0 || stride < 0) {
        ff_set_error(FF_ERR_INVALID, "%s: kernel %lld must be > 0 and stride %lld >= 0 (0: the kernel size)", fn,
                     (long long)k, (long long)stride);
        return NULL;
    }
    pool_info *pi = malloc(sizeof *pi);
    if (!pi) {
        ff_set_error(FF_ERR_OOM, "%s: out of memory", fn);
        return NULL;
    }
    *pi = (pool_info){k, stride ? stride : k};
    return ff_module_new("MaxPool2d", max_pool_forward, pi, free_info);
}
