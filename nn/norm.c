/* LayerNorm and BatchNorm modules over ff_layer_norm / ff_batch_norm. Both have
 * parameters "weight" (ones) and "bias" (zeros) as PyTorch's affine default.
 * BatchNorm keeps running_mean (zeros) and running_var (ones) as non-parameter state
 * in its user data: updated by training-mode forwards, used in eval mode, and moved
 * lazily to the input's backend (ff_module_to moves parameters only). */
#include <stdlib.h>

#include "nn_impl.h"

/* Registers weight = ones([n]) and bias = zeros([n]) (f32). */
static ff_status register_affine(ff_module *m, int64_t n)
{
    ff_tensor *w = ff_ones(1, &n, FF_F32);
    ff_status st = w ? ff_module_register_parameter(m, "weight", w) : ff_nn_failed();
    ff_tensor_release(w);
    if (st) return st;
    ff_tensor *b = ff_zeros(1, &n, FF_F32);
    st = b ? ff_module_register_parameter(m, "bias", b) : ff_nn_failed();
    ff_tensor_release(b);
    return st;
}

/* ---- LayerNorm -------------------------------------------------------------- */
typedef struct layer_norm_info {
    int64_t n;
    double eps;
} layer_norm_info;

static void free_plain(void *p) { free(p); }

static ff_tensor *layer_norm_forward(ff_module *m, const ff_tensor *x, void *user)
{
    const layer_norm_info *li = user;
    if (ff_tensor_ndim(x) < 1 || ff_tensor_dim(x, -1) != li->n) {
        ff_set_error(FF_ERR_INVALID, "ff_module_forward: LayerNorm(%lld) expects an input whose last dim is %lld", (long long)li->n,
                     (long long)li->n);
        return NULL;
    }
    return ff_layer_norm(x, 1, ff_module_param_at(m, 0), ff_module_param_at(m, 1), li->eps);
}

ff_module *ff_layer_norm_module(int64_t normalized_size, double eps)
{
    static const char fn[] = "ff_layer_norm_module";
    if (normalized_size <= 0 || !(eps >= 0)) {
        ff_set_error(FF_ERR_INVALID, "%s: normalized_size %lld must be > 0 and eps %g >= 0", fn,
                     (long long)normalized_size, eps);
        return NULL;
    }
    layer_norm_info *li = malloc(sizeof *li);
    if (!li) {
        ff_set_error(FF_ERR_OOM, "%s: out of memory", fn);
        return NULL;
    }
    *li = (layer_norm_info){normalized_size, eps};
    ff_module *m = ff_module_new("LayerNorm", layer_norm_forward, li, free_plain);
    if (m && register_affine(m, normalized_size)) {
        ff_module_release(m);
        return NULL;
    }
    return m;
}

/* ---- BatchNorm -------------------------------------------------------------- */
typedef struct batch_norm_state {
    int64_t c;
    double eps, momentum;
    ff_tensor *running_mean, *running_var; /* owned */
} batch_norm_state;

static void free_batch_norm(void *p)
{
    batch_norm_state *s = p;
    ff_tensor_release(s->running_mean);
    ff_tensor_release(s->running_var);
    free(s);
}

/* Moves *t to be if it lives elsewhere (replacing the owned reference). */
static ff_status follow_backend(ff_tensor **t, ff_backend *be)
{
    if (ff_tensor_backend(*t) == be) return FF_OK;
    ff_tensor *moved = ff_to(*t, be);
    if (!moved) return ff_nn_failed();
    ff_tensor_release(*t);
    *t = moved;
    return FF_OK;
}

static ff_tensor *batch_norm_forward(ff_module *m, const ff_tensor *x, void *user)
{
    batch_norm_state *s = user;
    if (ff_tensor_ndim(x) < 2 || ff_tensor_dim(x, 1) != s->c) {
        ff_set_error(FF_ERR_INVALID, "ff_module_forward: BatchNorm(%lld) expects x [N, %lld, ...], got rank %d%s",
                     (long long)s->c, (long long)s->c, ff_tensor_ndim(x),
                     ff_tensor_ndim(x) >= 2 ? " with another channel count" : "");
        return NULL;
    }
    ff_backend *be = ff_tensor_backend(x);
    if (follow_backend(&s->running_mean, be) || follow_backend(&s->running_var, be)) return NULL;
    return ff_batch_norm(x, s->running_mean, s->running_var, ff_module_param_at(m, 0), ff_module_param_at(m, 1),
                         ff_module_is_training(m), s->momentum, s->eps);
}

ff_module *ff_batch_norm_module(int64_t num_features, double eps, double momentum)
{
    static const char fn[] = "ff_batch_norm_module";
    if (num_features <= 0 || !(eps >= 0) || !(momentum >= 0 && momentum <= 1)) {
        ff_set_error(FF_ERR_INVALID, "%s: num_features %lld must be > 0, eps %g >= 0 and momentum %g in [0, 1]", fn,
                     (long long)num_features, eps, momentum);
        return NULL;
    }
    batch_norm_state *s = calloc(1, sizeof *s);
    if (!s) {
        ff_set_error(FF_ERR_OOM, "%s: out of memory", fn);
        return NULL;
    }
    s->c = num_features;
    s->eps = eps;
    s->momentum = momentum;
    s->running_mean = ff_zeros(1, &num_features, FF_F32);
    s->running_var = s->running_mean ? ff_ones(1, &num_features, FF_F32) : NULL;
    if (!s->running_var) {
        free_batch_norm(s);
        return NULL;
    }
    ff_module *m = ff_module_new("BatchNorm", batch_norm_forward, s, free_batch_norm);
    if (m && register_affine(m, num_features)) {
        ff_module_release(m);
        return NULL;
    }
    return m;
}

ff_status ff_batch_norm_module_running_stats(const ff_module *m, ff_tensor **running_mean, ff_tensor **running_var)
{
    static const char fn[] = "ff_batch_norm_module_running_stats";
    if (!m || !running_mean || !running_var) return ff_set_error(FF_ERR_INVALID, "%s: NULL argument", fn);
    if (m->forward != batch_norm_forward)
        return ff_set_error(FF_ERR_INVALID, "%s: module is a %s, not a BatchNorm", fn, m->type_name);
    const batch_norm_state *s = m->user;
    *running_mean = ff_tensor_retain(s->running_mean);
    *running_var = ff_tensor_retain(s->running_var);
    return FF_OK;
}
