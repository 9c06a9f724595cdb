/*
 * Mixed precision: autocast and dynamic loss scaling (PyTorch's torch.autocast and
 * torch.cuda.amp.GradScaler).
 *
 *   ff_autocast_set(FF_BF16);                    // this thread: matmul/conv in bf16
 *   ff_tensor *logits = ff_module_forward(net, x);   // f32 master weights, cast per use
 *   ff_tensor *loss = ff_cross_entropy(logits, y);   // softmax and losses in f32
 *   ff_autocast_set(FF_F32);                     // off again
 *   ff_backward(loss, NULL, NULL);               // runs in the dtypes the forward used
 *
 * With f16, whose range ends at 65504 and whose small gradients flush to zero, scale the
 * loss and let the scaler unscale, check and step:
 *
 *   ff_tensor *scaled = ff_grad_scaler_scale(sc, loss);
 *   ff_backward(scaled, NULL, NULL);
 *   ff_grad_scaler_step(sc, opt, &stepped);      // skips the step on inf/NaN gradients
 */
#ifndef FF_AMP_H
#define FF_AMP_H

#include <stdbool.h>

#include "ff/nn.h"
#include "ff/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- autocast --------------------------------------------------------------- */
/* Sets the calling thread's autocast dtype: FF_F16 or FF_BF16 turns it on, FF_F32 off
 * (the default). While on:
 *   - ff_matmul (and ff_bmm, ff_einsum ... built on it), ff_conv2d, ff_linear's forward
 *     and ff_scaled_dot_product_attention (q, k, v and an additive mask) take f32/f16/bf16
 *     operands in the autocast dtype and return it; f64 and integer operands are left
 *     alone, as in PyTorch;
 *   - ff_softmax, ff_log_softmax, ff_cross_entropy, ff_mse_loss and ff_layer_norm
 *     compute half inputs in f32 and return f32 (PyTorch's CUDA list, on every backend:
 *     its CPU autocast keeps bf16 for the softmaxes and layer_norm; docs/semantics.md,
 *     "Mixed precision"); ff_batch_norm runs in x's dtype, as on both of PyTorch's lists
 *     (half x with f32 weight, bias and running statistics: y half, their gradients f32);
 *   - every other op runs in the dtypes it is given (type promotion as usual).
 * The casts are ordinary differentiable ops, so gradients reach f32 parameters in f32.
 * A parameter (an f32 leaf requiring grad) is cast once per region and dtype: later uses
 * reuse the cast until the parameter's version moves (an in-place update, an optimizer
 * step); the cached casts are released when the region ends (a call that changes the
 * dtype), as PyTorch's autocast cache.
 * ff_backward and ff_autograd_grad run with autocast off: the backward pass follows the
 * dtypes the forward pass chose. Any other dtype is FF_ERR_INVALID (state unchanged). */
ff_status ff_autocast_set(ff_dtype dtype);
ff_dtype ff_autocast_get(void); /* FF_F32 when off */

/* ---- dynamic loss scaling ------------------------------------------------- */
typedef struct ff_grad_scaler ff_grad_scaler;

typedef struct ff_grad_scaler_opts {
    double init_scale;       /* 65536 */
    double growth_factor;    /* 2: the scale grows after growth_interval clean steps */
    double backoff_factor;   /* 0.5: and shrinks on every step with inf/NaN gradients */
    int64_t growth_interval; /* 2000 */
} ff_grad_scaler_opts;

ff_grad_scaler_opts ff_grad_scaler_defaults(void);
/* NULL opts: the defaults. Refuses init_scale <= 0, growth_factor <= 1, backoff_factor
 * outside (0, 1), growth_interval < 1. */
ff_grad_scaler *ff_grad_scaler_new(const ff_grad_scaler_opts *opts);
void ff_grad_scaler_free(ff_grad_scaler *sc); /* NULL-safe */

/* loss * scale (differentiable): back-propagate this instead of the loss. */
ff_tensor *ff_grad_scaler_scale(ff_grad_scaler *sc, const ff_tensor *loss);
/* Divides the gradients of opt's parameters by the scale, in place, and records whether
 * they are all finite (one host read per parameter). At most once per step: a second
 * call before ff_grad_scaler_step does nothing. Call it before clipping gradients. */
ff_status ff_grad_scaler_unscale(ff_grad_scaler *sc, ff_optimizer *opt);
/* Unscales (if not done yet), then runs ff_optimizer_step if every gradient is finite
 * or skips it otherwise (*stepped says which; may be NULL), and updates the scale. */
ff_status ff_grad_scaler_step(ff_grad_scaler *sc, ff_optimizer *opt, bool *stepped);
double ff_grad_scaler_get_scale(const ff_grad_scaler *sc);
int64_t ff_grad_scaler_skipped_steps(const ff_grad_scaler *sc); /* steps skipped so far */

#ifdef __cplusplus
}
#endif

#endif /* FF_AMP_H */
