/* Neural-network ops: softmax and log-softmax with their gradients, nll_loss, gather,
 * index_select, the embedding gradient, convolution and its gradient (ff_conv_backward:
 * the backend's backward entries, no second forward), SDPA without gradients. */
#include "ffd.h"

#include <vector>

namespace ffd {
namespace {

int axis_of(int64_t dim, const at::Tensor &t) { return t.dim() ? (int)c10::maybe_wrap_dim(dim, t.dim()) : 0; }

Ref zero_like_dtype(ff_backend *be, ff_dtype dt)
{
    return own(ff_number_tensor_on(be, ff_number_int(0), dt), "zero");
}

at::Tensor softmax(const at::Tensor &self, int64_t dim, bool half_to_float)
{
    c10::DeviceIndex dev = device_of({&self});
    Ref x = operand(self, backend_at(dev), half_to_float ? at::kFloat : self.scalar_type());
    return unwrap(own(ff_softmax(x.get(), axis_of(dim, self)), "softmax"), dev);
}

at::Tensor log_softmax(const at::Tensor &self, int64_t dim, bool half_to_float)
{
    c10::DeviceIndex dev = device_of({&self});
    Ref x = operand(self, backend_at(dev), half_to_float ? at::kFloat : self.scalar_type());
    return unwrap(own(ff_log_softmax(x.get(), axis_of(dim, self)), "log_softmax"), dev);
}

/* y (g - sum(g y)) over dim */
at::Tensor softmax_backward(const at::Tensor &grad, const at::Tensor &out, int64_t dim, at::ScalarType input_dtype)
{
    c10::DeviceIndex dev = device_of({&grad, &out});
    Ref g = wrap(grad), y = wrap(out);
    int axis = axis_of(dim, out);
    Ref gy = own(ff_mul(g.get(), y.get()), "softmax_backward");
    Ref s = own(ff_sum(gy.get(), out.dim() ? 1 : 0, &axis, true), "softmax_backward");
    Ref d = own(ff_sub(g.get(), s.get()), "softmax_backward");
    Ref r = own(ff_mul(y.get(), d.get()), "softmax_backward");
    if (ff_tensor_dtype(r.get()) != dtype_of(input_dtype)) r = own(ff_astype(r.get(), dtype_of(input_dtype)), "cast");
    return unwrap(std::move(r), dev);
}

/* g - exp(y) sum(g) over dim */
at::Tensor log_softmax_backward(const at::Tensor &grad, const at::Tensor &out, int64_t dim,
                                at::ScalarType input_dtype)
{
    c10::DeviceIndex dev = device_of({&grad, &out});
    Ref g = wrap(grad), y = wrap(out);
    int axis = axis_of(dim, out);
    Ref s = own(ff_sum(g.get(), out.dim() ? 1 : 0, &axis, true), "log_softmax_backward");
    Ref e = own(ff_exp(y.get()), "log_softmax_backward");
    Ref es = own(ff_mul(e.get(), s.get()), "log_softmax_backward");
    Ref r = own(ff_sub(g.get(), es.get()), "log_softmax_backward");
    if (ff_tensor_dtype(r.get()) != dtype_of(input_dtype)) r = own(ff_astype(r.get(), dtype_of(input_dtype)), "cast");
    return unwrap(std::move(r), dev);
}

/* ---- nll_loss ------------------------------------------------------------ */
/* What forward and backward share: targets made safe to index with (ignored ones -> 0)
 * and each sample's weight (0 where ignored), over [N, C] scores. */
struct Picked {
    Ref index; /* [N, 1] i64 */
    Ref w;     /* [N] in the scores' dtype */
};

Picked pick(ff_backend *be, const at::Tensor &self, const at::Tensor &target, const c10::optional<at::Tensor> &weight,
            int64_t ignore_index)
{
    TORCH_CHECK(target.scalar_type() == at::kLong, "expected scalar type Long but found ", target.scalar_type());
    TORCH_CHECK(self.dim() >= 1 && self.dim() <= 2, "nll_loss: input of 1 or 2 dims expected, got ", self.dim());
    int64_t n = self.dim() == 2 ? self.size(0) : 1;
    TORCH_CHECK(target.numel() == n, "nll_loss: expected target of ", n, " elements, got ", target.sizes());
    ff_dtype dt = dtype_of(self.scalar_type());
    Ref t = wrap(target);
    int64_t shape[2] = {n, 1};
    t = own(ff_reshape(t.get(), 2, shape), "nll_loss");
    Ref keep = own(ff_binary_number(FF_BINARY_NE, t.get(), ff_number_int(ignore_index)), "nll_loss");
    Ref safe = own(ff_where(keep.get(), t.get(), zero_like_dtype(be, FF_I64).get()), "nll_loss");
    Ref w = own(ff_astype(keep.get(), dt), "nll_loss");
    if (weight && weight->defined()) {
        Ref wt = operand(*weight, be, self.scalar_type());
        int64_t flat = n;
        Ref idx = own(ff_reshape(safe.get(), 1, &flat), "nll_loss");
        Ref ws = own(ff_index_select(wt.get(), 0, idx.get()), "nll_loss");
        Ref ws2 = own(ff_reshape(ws.get(), 2, shape), "nll_loss");
        w = own(ff_mul(w.get(), ws2.get()), "nll_loss");
    }
    return Picked{std::move(safe), std::move(w)};
}

Ref scores_2d(const at::Tensor &self)
{
    Ref x = wrap(self);
    if (self.dim() == 2) return x;
    int64_t shape[2] = {1, self.size(0)};
    return own(ff_reshape(x.get(), 2, shape), "nll_loss");
}

std::tuple<at::Tensor, at::Tensor> nll_loss_forward(const at::Tensor &self, const at::Tensor &target,
                                                    const c10::optional<at::Tensor> &weight, int64_t reduction,
                                                    int64_t ignore_index)
{
    c10::DeviceIndex dev = device_of({&self});
    ff_backend *be = backend_at(dev);
    Picked p = pick(be, self, target, weight, ignore_index);
    Ref x = scores_2d(self);
    Ref g = own(ff_gather(x.get(), 1, p.index.get()), "nll_loss");
    Ref l = own(ff_mul(g.get(), p.w.get()), "nll_loss");
    l = own(ff_neg(l.get()), "nll_loss");
    Ref total = own(ff_sum(p.w.get(), 0, nullptr, false), "nll_loss");
    Ref out;
    if (reduction == at::Reduction::None) {
        int64_t n = self.dim() == 2 ? self.size(0) : 0;
        out = own(ff_reshape(l.get(), self.dim() == 2 ? 1 : 0, &n), "nll_loss");
        total = own(ff_zeros_like(total.get()), "nll_loss");
    } else {
        out = own(ff_sum(l.get(), 0, nullptr, false), "nll_loss");
        if (reduction == at::Reduction::Mean) out = own(ff_div(out.get(), total.get()), "nll_loss");
    }
    return std::make_tuple(unwrap(std::move(out), dev), unwrap(std::move(total), dev));
}

at::Tensor nll_loss_backward(const at::Tensor &grad, const at::Tensor &self, const at::Tensor &target,
                             const c10::optional<at::Tensor> &weight, int64_t reduction, int64_t ignore_index,
                             const at::Tensor &total_weight)
{
    c10::DeviceIndex dev = device_of({&grad, &self});
    ff_backend *be = backend_at(dev);
    Picked p = pick(be, self, target, weight, ignore_index);
    Ref x = scores_2d(self);
    Ref g = operand(grad, be, self.scalar_type());
    int64_t shape[2] = {ff_tensor_dim(x.get(), 0), 1};
    if (reduction == at::Reduction::None) g = own(ff_reshape(g.get(), 2, shape), "nll_loss_backward");
    Ref src = own(ff_mul(p.w.get(), g.get()), "nll_loss_backward");
    src = own(ff_neg(src.get()), "nll_loss_backward");
    if (reduction == at::Reduction::Mean) {
        Ref tw = operand(total_weight, be, self.scalar_type());
        src = own(ff_div(src.get(), tw.get()), "nll_loss_backward");
    }
    src = own(ff_broadcast_to(src.get(), 2, shape), "nll_loss_backward");
    Ref zeros = own(ff_zeros_like(x.get()), "nll_loss_backward");
    Ref r = own(ff_scatter(zeros.get(), 1, p.index.get(), src.get()), "nll_loss_backward");
    if (self.dim() == 1) {
        int64_t c = self.size(0);
        r = own(ff_reshape(r.get(), 1, &c), "nll_loss_backward");
    }
    return unwrap(std::move(r), dev);
}

/* ---- indexing ------------------------------------------------------------ */
at::Tensor index_select(const at::Tensor &self, int64_t dim, const at::Tensor &index)
{
    if (self.dim() == 0) return ffd::index_select(self.reshape({1}), 0, index.reshape({-1})).reshape({});
    c10::DeviceIndex dev = device_of({&self});
    Ref x = wrap(self), i = operand(index, backend_at(dev), index.scalar_type());
    return unwrap(own(ff_index_select(x.get(), axis_of(dim, self), i.get()), "index_select"), dev);
}

at::Tensor gather(const at::Tensor &self, int64_t dim, const at::Tensor &index, bool sparse_grad)
{
    if (self.dim() == 0) /* a 0-d tensor gathers as a 1-element vector, index 0-d or [1] */
        return ffd::gather(self.reshape({1}), 0, index.reshape({-1}), sparse_grad).reshape(index.sizes());
    c10::DeviceIndex dev = device_of({&self});
    Ref x = wrap(self), i = wrap(index);
    return unwrap(own(ff_gather(x.get(), axis_of(dim, self), i.get()), "gather"), dev);
}

at::Tensor scatter_add(const at::Tensor &self, int64_t dim, const at::Tensor &index, const at::Tensor &src)
{
    if (self.dim() == 0) /* as 1-element vectors (gather's gradient of a 0-d tensor) */
        return ffd::scatter_add(self.reshape({1}), 0, index.reshape({-1}), src.reshape({-1})).reshape({});
    c10::DeviceIndex dev = device_of({&self});
    Ref x = wrap(self), i = wrap(index), s = wrap(src);
    return unwrap(own(ff_scatter_add(x.get(), axis_of(dim, self), i.get(), s.get()), "scatter_add"), dev);
}
at::Tensor &scatter_add_(at::Tensor &self, int64_t dim, const at::Tensor &index, const at::Tensor &src)
{
    return assign(self, ffd::scatter_add(self, dim, index, src));
}
at::Tensor &scatter_add_out(const at::Tensor &self, int64_t dim, const at::Tensor &index, const at::Tensor &src,
                            at::Tensor &out)
{
    return assign_out(out, ffd::scatter_add(self, dim, index, src));
}

at::Tensor scatter(const at::Tensor &self, int64_t dim, const at::Tensor &index, const at::Tensor &src)
{
    if (self.dim() == 0) /* as 1-element vectors (max()'s gradient of a 0-d tensor) */
        return ffd::scatter(self.reshape({1}), 0, index.reshape({-1}), src.reshape({-1})).reshape({});
    c10::DeviceIndex dev = device_of({&self});
    Ref x = wrap(self), i = wrap(index), s = wrap(src);
    return unwrap(own(ff_scatter(x.get(), axis_of(dim, self), i.get(), s.get()), "scatter"), dev);
}
at::Tensor &scatter_(at::Tensor &self, int64_t dim, const at::Tensor &index, const at::Tensor &src)
{
    return assign(self, ffd::scatter(self, dim, index, src));
}
at::Tensor &scatter_out(const at::Tensor &self, int64_t dim, const at::Tensor &index, const at::Tensor &src,
                        at::Tensor &out)
{
    return assign_out(out, ffd::scatter(self, dim, index, src));
}

/* self with alpha * source's slices added at index along dim (pack_padded_sequence's
 * gradient, index_add_) */
at::Tensor index_add(const at::Tensor &self, int64_t dim, const at::Tensor &index, const at::Tensor &source,
                     const at::Scalar &alpha)
{
    c10::DeviceIndex dev = device_of({&self});
    if (self.dim() == 0)
        return ffd::index_add(self.reshape({1}), 0, index.reshape({-1}), source.reshape({-1}), alpha).reshape({});
    Ref x = wrap(self), i = operand(index, backend_at(dev), index.scalar_type()),
        s = operand(source, backend_at(dev), self.scalar_type());
    return unwrap(own(ff_index_add(x.get(), axis_of(dim, self), i.get(), s.get(), alpha.toDouble()), "index_add"), dev);
}
at::Tensor &index_add_(at::Tensor &self, int64_t dim, const at::Tensor &index, const at::Tensor &source,
                       const at::Scalar &alpha)
{
    return assign(self, ffd::index_add(self, dim, index, source, alpha));
}
at::Tensor &index_add_out(const at::Tensor &self, int64_t dim, const at::Tensor &index, const at::Tensor &source,
                          const at::Scalar &alpha, at::Tensor &out)
{
    return assign_out(out, ffd::index_add(self, dim, index, source, alpha));
}

/* rows of grad added into a [num_weights, D] zero tensor at indices (padding_idx's row
 * gets nothing) */
at::Tensor embedding_dense_backward(const at::Tensor &grad, const at::Tensor &indices, c10::SymInt num_weights,
                                    int64_t padding_idx, bool scale_grad_by_freq)
{
    TORCH_CHECK(!scale_grad_by_freq, "fusionflow device: embedding with scale_grad_by_freq is not taken yet");
    c10::DeviceIndex dev = device_of({&grad});
    ff_backend *be = backend_at(dev);
    int64_t n = indices.numel(), d = grad.size(-1), rows[2] = {num_weights.expect_int(), d}, flat[2] = {n, d};
    Ref g = wrap(grad), idx = wrap(indices);
    g = own(ff_reshape(g.get(), 2, flat), "embedding_backward");
    idx = own(ff_reshape(idx.get(), 1, &n), "embedding_backward");
    if (padding_idx >= 0) {
        Ref keep = own(ff_binary_number(FF_BINARY_NE, idx.get(), ff_number_int(padding_idx)), "embedding_backward");
        int64_t col[2] = {n, 1};
        keep = own(ff_reshape(keep.get(), 2, col), "embedding_backward");
        g = own(ff_where(keep.get(), g.get(), zero_like_dtype(be, ff_tensor_dtype(g.get())).get()),
                "embedding_backward");
    }
    Ref zeros = own(ff_full_on(be, 2, rows, ff_tensor_dtype(g.get()), 0.0), "embedding_backward");
    return unwrap(own(ff_index_add(zeros.get(), 0, idx.get(), g.get(), 1.0), "embedding_backward"), dev);
}

ff_conv_opts conv_opts(at::IntArrayRef stride, at::IntArrayRef padding, at::IntArrayRef dilation,
                       at::IntArrayRef output_padding, int64_t groups, int64_t spatial)
{
    ff_conv_opts o{};
    for (int64_t i = 0; i < spatial && i < 3; i++) {
        o.stride[i] = stride.size() == 1 ? stride[0] : stride[i];
        o.padding[i] = padding.size() == 1 ? padding[0] : padding[i];
        o.dilation[i] = dilation.size() == 1 ? dilation[0] : dilation[i];
        o.output_padding[i] = output_padding.empty() ? 0 : output_padding.size() == 1 ? output_padding[0] : output_padding[i];
    }
    o.groups = groups;
    return o;
}

at::Tensor convolution(const at::Tensor &input, const at::Tensor &weight, const c10::optional<at::Tensor> &bias,
                       at::IntArrayRef stride, at::IntArrayRef padding, at::IntArrayRef dilation, bool transposed,
                       at::IntArrayRef output_padding, int64_t groups)
{
    c10::DeviceIndex dev = device_of({&input, &weight});
    ff_conv_opts o = conv_opts(stride, padding, dilation, output_padding, groups, input.dim() - 2);
    Ref x = wrap(input), w = wrap(weight), b = wrap_optional(bias);
    ff_tensor *y = transposed ? ff_conv_transpose(x.get(), w.get(), b.get(), &o) : ff_conv(x.get(), w.get(), b.get(), &o);
    return unwrap(own(y, "convolution"), dev);
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> convolution_backward(
    const at::Tensor &grad, const at::Tensor &input, const at::Tensor &weight, at::IntArrayRef stride,
    at::IntArrayRef padding, at::IntArrayRef dilation, bool transposed, at::IntArrayRef output_padding,
    int64_t groups, std::array<bool, 3> mask)
{
    ff_conv_opts o = conv_opts(stride, padding, dilation, output_padding, groups, input.dim() - 2);
    /* FusionFlow's backward entries, without the forward again (ff_conv_backward) */
    c10::DeviceIndex dev = device_of({&grad});
    ff_tensor *gx = nullptr, *gw = nullptr;
    Ref g = wrap(grad), x = wrap(input), w = wrap(weight);
    check(ff_conv_backward(g.get(), x.get(), w.get(), &o, transposed, mask[0] ? &gx : nullptr, mask[1] ? &gw : nullptr),
          "convolution_backward");
    Ref rgx(gx), rgw(gw);
    at::Tensor gi = gx ? unwrap(std::move(rgx), dev) : at::Tensor(), gwt = gw ? unwrap(std::move(rgw), dev) : at::Tensor();
    at::Tensor gb;
    if (mask[2]) { /* the bias gradient: grad summed over every dim but channels */
        std::vector<int64_t> dims{0};
        for (int64_t d = 2; d < grad.dim(); d++) dims.push_back(d);
        gb = grad.sum(dims);
    }
    return std::make_tuple(gi, gwt, gb);
}

/* F._scaled_dot_product_attention (PyTorch 1.13's SDPA) without gradients: PyTorch's CPU
 * kernel is its composed math path, which returns the attention weights whether asked for
 * or not; here the same composition runs on the device's matmul and softmax kernels. With
 * gradients PyTorch calls that composition itself. */
std::tuple<at::Tensor, at::Tensor> attention_forward(const at::Tensor &q, const at::Tensor &k, const at::Tensor &v,
                                                     const c10::optional<at::Tensor> &mask, double dropout_p,
                                                     bool need_weights, bool causal)
{
    return at::_scaled_dot_product_attention_math(q, k, v, mask, dropout_p, need_weights, causal);
}

} // namespace
} // namespace ffd

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m)
{
    m.impl("_scaled_dot_product_attention_forward", TORCH_FN(ffd::attention_forward));
    m.impl("_softmax", TORCH_FN(ffd::softmax));
    m.impl("_log_softmax", TORCH_FN(ffd::log_softmax));
    m.impl("_softmax_backward_data", TORCH_FN(ffd::softmax_backward));
    m.impl("_log_softmax_backward_data", TORCH_FN(ffd::log_softmax_backward));
    m.impl("nll_loss_forward", TORCH_FN(ffd::nll_loss_forward));
    m.impl("nll_loss_backward", TORCH_FN(ffd::nll_loss_backward));
    m.impl("index_select", TORCH_FN(ffd::index_select));
    m.impl("gather", TORCH_FN(ffd::gather));
    m.impl("scatter_add", TORCH_FN(ffd::scatter_add));
    m.impl("scatter_add_", TORCH_FN(ffd::scatter_add_));
    m.impl("scatter_add.out", TORCH_FN(ffd::scatter_add_out));
    m.impl("scatter.src", TORCH_FN(ffd::scatter));
    m.impl("scatter_.src", TORCH_FN(ffd::scatter_));
    m.impl("scatter.src_out", TORCH_FN(ffd::scatter_out));
    m.impl("index_add", TORCH_FN(ffd::index_add));
    m.impl("index_add_", TORCH_FN(ffd::index_add_));
    m.impl("index_add.out", TORCH_FN(ffd::index_add_out));
    m.impl("embedding_dense_backward", TORCH_FN(ffd::embedding_dense_backward));
    m.impl("convolution_overrideable", TORCH_FN(ffd::convolution));
    m.impl("convolution_backward_overrideable", TORCH_FN(ffd::convolution_backward));
}
