/* Linear: y = x @ W^T + b with W stored [out, in] as PyTorch does, so weights and
 * state dicts line up with torch.nn.Linear. */
#include <math.h>
#include <stdlib.h>

#include "nn_impl.h"

typedef struct linear_info {
    int64_t in, out;
    bool has_bias;
} linear_info;

static ff_tensor *linear_forward(ff_module *m, const ff_tensor *x, void *user)
{
    const linear_info *li = user;
    int nd = ff_tensor_ndim(x);
    if (nd < 1 || ff_tensor_dim(x, -1) != li->in) {
        ff_set_error(FF_ERR_INVALID, "ff_module_forward: Linear(%lld, %lld) expects an input whose last dim is %lld, got %s%lld",
                 (long long)li->in, (long long)li->out, (long long)li->in, nd < 1 ? "a 0-d tensor" : "",
                 nd < 1 ? 0LL : (long long)ff_tensor_dim(x, -1));
        return NULL;
    }
    /* one backend call in inference (the linear entry), matmul and add with autograd */
    return ff_linear_act(x, ff_module_param_at(m, 0), li->has_bias ? ff_module_param_at(m, 1) : NULL,
                         FF_LINEAR_NO_ACT);
}

static void free_info(void *p) { free(p); }

ff_module *ff_linear(int64_t in_features, int64_t out_features, bool bias, uint64_t seed)
{
    static const char fn[] = "ff_linear";
    if (in_features <= 0 || out_features <= 0) {
        ff_set_error(FF_ERR_INVALID, "%s: in_features (%lld) and out_features (%lld) must be > 0", fn,
                 (long long)in_features, (long long)out_features);
        return NULL;
    }
    linear_info *li = malloc(sizeof *li);
    if (!li) {
        ff_set_error(FF_ERR_OOM, "%s: out of memory", fn);
        return NULL;
    }
    *li = (linear_info){in_features, out_features, bias};
    ff_module *m = ff_module_new("Linear", linear_forward, li, free_info);
    if (!m) return NULL;
    /* kaiming_uniform(a = sqrt(5)) gives gain sqrt(2 / (1 + 5)) = sqrt(1/3), bound
     * gain * sqrt(3 / fan_in) = 1 / sqrt(fan_in): the same bound PyTorch uses for bias. */
    double bound = 1.0 / sqrt((double)in_features);
    int64_t wshape[2] = {out_features, in_features};
    ff_tensor *w = ff_rand_uniform(2, wshape, FF_F32, -bound, bound, seed);
    ff_status st = w ? ff_module_register_parameter(m, "weight", w) : ff_last_status();
    ff_tensor_release(w);
    if (!st && bias) {
        ff_tensor *b = ff_rand_uniform(1, &out_features, FF_F32, -bound, bound, seed + 1);
        st = b ? ff_module_register_parameter(m, "bias", b) : ff_last_status();
        ff_tensor_release(b);
    }
    if (st) {
        ff_module_release(m);
        return NULL;
    }
    return m;
}
