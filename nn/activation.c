/* Parameter-free modules: activations, Softmax, Identity, Flatten and Dropout. Each
 * is a thin module over one op; small settings ride in the user pointer. */
#include <stdint.h>
#include <stdlib.h>

#include "nn_impl.h"

static ff_tensor *relu_fw(ff_module *m, const ff_tensor *x, void *u) { return ff_relu(x); }
static ff_tensor *tanh_fw(ff_module *m, const ff_tensor *x, void *u) { return ff_tanh(x); }
static ff_tensor *sigmoid_fw(ff_module *m, const ff_tensor *x, void *u) { return ff_sigmoid(x); }
static ff_tensor *silu_fw(ff_module *m, const ff_tensor *x, void *u) { return ff_silu(x); }
static ff_tensor *identity_fw(ff_module *m, const ff_tensor *x, void *u) { return ff_tensor_retain((ff_tensor *)x); }
static ff_tensor *gelu_fw(ff_module *m, const ff_tensor *x, void *u) { return ff_gelu(x, u != NULL); }
static ff_tensor *softmax_fw(ff_module *m, const ff_tensor *x, void *u) { return ff_softmax(x, (int)(intptr_t)u); }

static ff_tensor *flatten_fw(ff_module *m, const ff_tensor *x, void *u)
{
    if (ff_tensor_ndim(x) < 2) {
        ff_set_error(FF_ERR_INVALID, "ff_module_forward: Flatten expects [N, ...] with at least 2 dims, got %d",
                 ff_tensor_ndim(x));
        return NULL;
    }
    return ff_flatten(x, 1, -1);
}

ff_module *ff_relu_module(void) { return ff_module_new("ReLU", relu_fw, NULL, NULL); }
ff_module *ff_tanh_module(void) { return ff_module_new("Tanh", tanh_fw, NULL, NULL); }
ff_module *ff_sigmoid_module(void) { return ff_module_new("Sigmoid", sigmoid_fw, NULL, NULL); }
ff_module *ff_silu_module(void) { return ff_module_new("SiLU", silu_fw, NULL, NULL); }
ff_module *ff_identity(void) { return ff_module_new("Identity", identity_fw, NULL, NULL); }
ff_module *ff_flatten_module(void) { return ff_module_new("Flatten", flatten_fw, NULL, NULL); }
/* non-NULL user means the tanh approximation */
ff_module *ff_gelu_module(bool tanh_approx)
{
    static int tag;
    return ff_module_new("GELU", gelu_fw, tanh_approx ? &tag : NULL, NULL);
}
ff_module *ff_softmax_module(int axis) { return ff_module_new("Softmax", softmax_fw, (void *)(intptr_t)axis, NULL); }

/* ---- Dropout -------------------------------------------------------------- */
typedef struct dropout_state {
    double p;
    uint64_t seed;
    uint64_t calls; /* advances on every training-mode call: a new mask per step */
} dropout_state;

static ff_tensor *dropout_fw(ff_module *m, const ff_tensor *x, void *u)
{
    dropout_state *d = u;
    if (!m->training || d->p == 0.0) return ff_dropout(x, d->p, false, 0);
    return ff_dropout(x, d->p, true, ff_nn_mix_seed(d->seed, d->calls++));
}

static void free_state(void *p) { free(p); }

ff_module *ff_dropout_module(double p, uint64_t seed)
{
    if (!(p >= 0.0 && p <= 1.0)) {
        ff_set_error(FF_ERR_INVALID, "ff_dropout_module: p must be in [0, 1], got %g", p);
        return NULL;
    }
    dropout_state *d = malloc(sizeof *d);
    if (!d) {
        ff_set_error(FF_ERR_OOM, "ff_dropout_module: out of memory");
        return NULL;
    }
    *d = (dropout_state){p, seed, 0};
    return ff_module_new("Dropout", dropout_fw, d, free_state);
}
