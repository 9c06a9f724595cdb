/* Conv1d/2d/3d and ConvTranspose1d/2d/3d modules over ff_conv / ff_conv_transpose
 * (ff_conv2d_module, in conv.c, stays for its callers: these take dilation, groups and
 * other ranks). Parameters as torch.nn's: weight [out, in / groups, k...] (transposed:
 * [in, out / groups, k...]) and bias [out], so state dicts line up. */
#include <stdint.h>
#include <stdlib.h>

#include "nn_impl.h"

typedef struct convnd_info {
    int nd;
    int64_t in;
    ff_conv_opts opts;
    bool has_bias, transposed;
} convnd_info;

static void free_info(void *p) { free(p); }

static ff_tensor *convnd_forward(ff_module *m, const ff_tensor *x, void *user)
{
    const convnd_info *ci = user;
    if (ff_tensor_ndim(x) != ci->nd + 2 || ff_tensor_dim(x, 1) != ci->in) {
        ff_set_error(FF_ERR_INVALID, "ff_module_forward: %s expects x [N, %lld, ...] with %d spatial dims, got rank %d with %lld channels",
                     ff_module_type_name(m), (long long)ci->in, ci->nd, ff_tensor_ndim(x),
                     ff_tensor_ndim(x) >= 2 ? (long long)ff_tensor_dim(x, 1) : 0LL);
        return NULL;
    }
    const ff_tensor *b = ci->has_bias ? ff_module_param_at(m, 1) : NULL;
    return ci->transposed ? ff_conv_transpose(x, ff_module_param_at(m, 0), b, &ci->opts)
                          : ff_conv(x, ff_module_param_at(m, 0), b, &ci->opts);
}

static ff_module *convnd_module(bool transposed, int nd, int64_t in, int64_t out, const int64_t *kernel,
                                const ff_conv_opts *o, bool bias, uint64_t seed, const char *fn)
{
    static const char *names[2][3] = {{"Conv1d", "Conv2d", "Conv3d"},
                                      {"ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d"}};
    if (nd < 1 || nd > 3 || !kernel || !o) {
        ff_set_error(FF_ERR_INVALID, "%s: nd %d must be 1 to 3, kernel and options not NULL", fn, nd);
        return NULL;
    }
    int64_t g = o->groups, fan_in = 1, k = 1;
    bool ok = in > 0 && out > 0 && g > 0 && in % g == 0 && out % g == 0;
    for (int d = 0; d < nd; d++) {
        ok = ok && kernel[d] > 0 && o->stride[d] > 0 && o->dilation[d] > 0 && o->padding[d] >= 0 && o->output_padding[d] >= 0;
        if (ok && k > INT64_MAX / kernel[d]) ok = false;
        if (ok) k *= kernel[d];
    }
    if (!ok) {
        ff_set_error(FF_ERR_INVALID, "%s: channels (%lld, %lld) must be > 0 and divisible by groups %lld; kernel, stride "
                     "and dilation > 0, paddings >= 0", fn, (long long)in, (long long)out, (long long)g);
        return NULL;
    }
    int64_t wshape[5] = {transposed ? in : out, (transposed ? out : in) / g};
    for (int d = 0; d < nd; d++) wshape[2 + d] = kernel[d];
    if (k > INT64_MAX / wshape[1]) {
        ff_set_error(FF_ERR_OVERFLOW, "%s: the weight's fan-in overflows", fn);
        return NULL;
    }
    fan_in = wshape[1] * k;
    convnd_info *ci = malloc(sizeof *ci);
    if (!ci) {
        ff_set_error(FF_ERR_OOM, "%s: out of memory", fn);
        return NULL;
    }
    *ci = (convnd_info){nd, in, *o, bias, transposed};
    ff_module *m = ff_module_new(names[transposed][nd - 1], convnd_forward, ci, free_info);
    if (!m) return NULL;
    return ff_nn_conv_init(m, 2 + nd, wshape, bias ? out : 0, fan_in, seed);
}

ff_module *ff_conv_module(int nd, int64_t in_channels, int64_t out_channels, const int64_t *kernel,
                          const ff_conv_opts *o, bool bias, uint64_t seed)
{
    return convnd_module(false, nd, in_channels, out_channels, kernel, o, bias, seed, "ff_conv_module");
}

ff_module *ff_conv_transpose_module(int nd, int64_t in_channels, int64_t out_channels, const int64_t *kernel,
                                    const ff_conv_opts *o, bool bias, uint64_t seed)
{
    return convnd_module(true, nd, in_channels, out_channels, kernel, o, bias, seed, "ff_conv_transpose_module");
}
