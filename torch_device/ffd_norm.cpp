/* Normalization and the regression losses: batch norm and layer norm (forward by
 * FusionFlow's fused ops, the statistics PyTorch's backward formulas ask for beside them,
 * the backward in closed form from those statistics), mse_loss and binary_cross_entropy with
 * their gradients, in ATen terms over this device's own kernels. */
#include "ffd.h"

#include <vector>

namespace ffd {

namespace {

std::vector<int64_t> all_but_channels(const at::Tensor &x)
{
    std::vector<int64_t> dims{0};
    for (int64_t d = 2; d < x.dim(); d++) dims.push_back(d);
    return dims;
}

/* a [C] tensor shaped to broadcast over x's channel dim 1 */
at::Tensor per_channel(const at::Tensor &t, const at::Tensor &x)
{
    std::vector<int64_t> shape(x.dim(), 1);
    shape[1] = x.size(1);
    return t.reshape(shape);
}

/* batch norm in ATen terms over this device's kernels, for parameters outside what the
 * fused op takes (a negative eps, a momentum outside [0, 1]) */
std::tuple<at::Tensor, at::Tensor, at::Tensor> composed_batch_norm(
    const at::Tensor &input, const c10::optional<at::Tensor> &weight, const c10::optional<at::Tensor> &bias,
    const c10::optional<at::Tensor> &running_mean, const c10::optional<at::Tensor> &running_var, bool training,
    double momentum, double eps)
{
    std::vector<int64_t> dims = all_but_channels(input);
    at::Tensor mean, var;
    bool running = running_mean && running_mean->defined() && running_var && running_var->defined();
    if (training) {
        mean = input.mean(dims);
        var = input.var(dims, /*unbiased=*/false);
        if (running) {
            int64_t n = input.numel() / input.size(1);
            at::Tensor unbiased = var * ((double)n / (double)std::max<int64_t>(n - 1, 1));
            running_mean->mul_(1 - momentum).add_(mean, momentum);
            running_var->mul_(1 - momentum).add_(unbiased, momentum);
        }
    } else {
        mean = *running_mean;
        var = *running_var;
    }
    at::Tensor invstd = at::rsqrt(at::add(var, eps));
    at::Tensor y = (input - per_channel(mean, input)) * per_channel(invstd, input);
    if (weight && weight->defined()) y = y * per_channel(*weight, input);
    if (bias && bias->defined()) y = y + per_channel(*bias, input);
    if (!training) {
        at::Tensor none = at::empty({0}, input.options());
        return std::make_tuple(y, none, none.clone());
    }
    return std::make_tuple(y, mean, invstd);
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> batch_norm(const at::Tensor &input, const c10::optional<at::Tensor> &weight,
                                                          const c10::optional<at::Tensor> &bias,
                                                          const c10::optional<at::Tensor> &running_mean,
                                                          const c10::optional<at::Tensor> &running_var, bool training,
                                                          double momentum, double eps)
{
    /* PyTorch takes these; FusionFlow's fused op refuses them: a negative eps, a momentum
     * outside [0, 1], one value or none per channel in training (group norm's decomposition) */
    bool few = input.dim() < 2 || input.size(1) == 0 || input.numel() / input.size(1) <= 1;
    if (eps < 0 || momentum < 0 || momentum > 1 || (training && few) || input.numel() == 0)
        return composed_batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps);
    c10::DeviceIndex dev = device_of({&input});
    Ref x = wrap(input), w = wrap_optional(weight), b = wrap_optional(bias), rm = wrap_optional(running_mean),
        rv = wrap_optional(running_var);
    at::Tensor y = unwrap(own(ff_batch_norm(x.get(), rm.get(), rv.get(), w.get(), b.get(), training, momentum, eps),
                              "batch_norm"),
                          dev);
    if (!training) {
        at::Tensor none = at::empty({0}, input.options());
        return std::make_tuple(y, none, none.clone());
    }
    std::vector<int64_t> dims = all_but_channels(input);
    at::Tensor mean = input.mean(dims);
    at::Tensor invstd = at::rsqrt(at::add(input.var(dims, /*unbiased=*/false), eps));
    return std::make_tuple(y, mean, invstd);
}

/* The normalization's gradient from its saved statistics, x^ = (x - mean) invstd:
 * gx = invstd (g w - mean(g w) - x^ mean(g w x^)), the means over the normalized dims;
 * for the affine parameters gw = sum(g x^), gb = sum(g) over the other dims. */
at::Tensor normalized_grad(const at::Tensor &gw, const at::Tensor &xhat, const at::Tensor &invstd, at::IntArrayRef dims)
{
    return invstd * (gw - gw.mean(dims, true) - xhat * (gw * xhat).mean(dims, true));
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> batch_norm_backward(
    const at::Tensor &grad, const at::Tensor &input, const c10::optional<at::Tensor> &weight,
    const c10::optional<at::Tensor> &running_mean, const c10::optional<at::Tensor> &running_var,
    const c10::optional<at::Tensor> &save_mean, const c10::optional<at::Tensor> &save_invstd, bool train, double eps,
    std::array<bool, 3> mask)
{
    std::vector<int64_t> dims = all_but_channels(input);
    at::Tensor mean = train ? *save_mean : *running_mean;
    at::Tensor invstd = train ? *save_invstd : at::rsqrt(at::add(*running_var, eps));
    mean = per_channel(mean, input);
    invstd = per_channel(invstd, input);
    at::Tensor xhat = (input - mean) * invstd;
    bool affine = weight && weight->defined();
    at::Tensor gw = affine ? grad * per_channel(*weight, input) : grad;
    at::Tensor gi;
    if (mask[0]) gi = train ? normalized_grad(gw, xhat, invstd, dims) : gw * invstd;
    at::Tensor gweight = mask[1] && affine ? (grad * xhat).sum(dims) : at::Tensor();
    at::Tensor gbias = mask[2] ? grad.sum(dims) : at::Tensor();
    return std::make_tuple(gi, gweight, gbias);
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> layer_norm(const at::Tensor &input, c10::SymIntArrayRef shape,
                                                          const c10::optional<at::Tensor> &weight,
                                                          const c10::optional<at::Tensor> &bias, double eps)
{
    c10::DeviceIndex dev = device_of({&input});
    int nnorm = (int)shape.size();
    std::vector<int64_t> dims;
    for (int64_t d = input.dim() - nnorm; d < input.dim(); d++) dims.push_back(d);
    at::Tensor mean = input.mean(dims, /*keepdim=*/true);
    at::Tensor rstd = at::rsqrt(at::add(input.var(dims, /*unbiased=*/false, /*keepdim=*/true), eps));
    at::Tensor y;
    if (eps >= 0) {
        Ref x = wrap(input), w = wrap_optional(weight), b = wrap_optional(bias);
        y = unwrap(own(ff_layer_norm(x.get(), nnorm, w.get(), b.get(), eps), "layer_norm"), dev);
    } else { /* PyTorch takes a negative eps; FusionFlow's fused op refuses it */
        y = (input - mean) * rstd;
        if (weight && weight->defined()) y = y * *weight;
        if (bias && bias->defined()) y = y + *bias;
    }
    return std::make_tuple(y, mean, rstd);
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> layer_norm_backward(
    const at::Tensor &grad, const at::Tensor &input, c10::SymIntArrayRef shape, const at::Tensor &mean,
    const at::Tensor &rstd, const c10::optional<at::Tensor> &weight, const c10::optional<at::Tensor> &bias,
    std::array<bool, 3> mask)
{
    int64_t nnorm = (int64_t)shape.size();
    std::vector<int64_t> dims, lead;
    for (int64_t d = 0; d < input.dim(); d++) (d < input.dim() - nnorm ? lead : dims).push_back(d);
    at::Tensor xhat = (input - mean) * rstd;
    bool affine = weight && weight->defined();
    at::Tensor gw = affine ? grad * *weight : grad;
    at::Tensor gi = mask[0] ? normalized_grad(gw, xhat, rstd, dims) : at::Tensor();
    auto over_lead = [&](const at::Tensor &t) { return lead.empty() ? t.clone() : t.sum(lead); };
    at::Tensor gweight = mask[1] && affine ? over_lead(grad * xhat) : at::Tensor();
    at::Tensor gbias = mask[2] && bias && bias->defined() ? over_lead(grad) : at::Tensor();
    return std::make_tuple(gi, gweight, gbias);
}

at::Tensor reduce_loss(const at::Tensor &l, int64_t reduction)
{
    if (reduction == at::Reduction::Mean) return l.mean();
    if (reduction == at::Reduction::Sum) return l.sum();
    return l;
}

at::Tensor mse_loss(const at::Tensor &self, const at::Tensor &target, int64_t reduction)
{
    at::Tensor d = self - target;
    return reduce_loss(d * d, reduction);
}

at::Tensor mse_loss_backward(const at::Tensor &grad, const at::Tensor &self, const at::Tensor &target,
                             int64_t reduction)
{
    double scale = reduction == at::Reduction::Mean ? 2.0 / (double)self.numel() : 2.0;
    return (self - target) * grad * scale;
}

/* -w (t log x + (1 - t) log(1 - x)), each log clamped at -100 as PyTorch's */
at::Tensor binary_cross_entropy(const at::Tensor &self, const at::Tensor &target,
                                const c10::optional<at::Tensor> &weight, int64_t reduction)
{
    at::Tensor lx = at::clamp_min(at::log(self), -100), l1x = at::clamp_min(at::log(1 - self), -100);
    at::Tensor l = -(target * lx + (1 - target) * l1x);
    if (weight && weight->defined()) l = l * *weight;
    return reduce_loss(l, reduction);
}

/* g w (x - t) / max(x (1 - x), 1e-12) */
at::Tensor binary_cross_entropy_backward(const at::Tensor &grad, const at::Tensor &self, const at::Tensor &target,
                                         const c10::optional<at::Tensor> &weight, int64_t reduction)
{
    at::Tensor g = grad * (self - target) / at::clamp_min((1 - self) * self, 1e-12);
    if (weight && weight->defined()) g = g * *weight;
    if (reduction == at::Reduction::Mean) g = g / (double)self.numel();
    return g;
}

} // namespace
} // namespace ffd

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m)
{
    m.impl("native_batch_norm", TORCH_FN(ffd::batch_norm));
    m.impl("native_batch_norm_backward", TORCH_FN(ffd::batch_norm_backward));
    m.impl("native_layer_norm", TORCH_FN(ffd::layer_norm));
    m.impl("native_layer_norm_backward", TORCH_FN(ffd::layer_norm_backward));
    m.impl("mse_loss", TORCH_FN(ffd::mse_loss));
    m.impl("mse_loss_backward", TORCH_FN(ffd::mse_loss_backward));
    m.impl("binary_cross_entropy", TORCH_FN(ffd::binary_cross_entropy));
    m.impl("binary_cross_entropy_backward", TORCH_FN(ffd::binary_cross_entropy_backward));
}
