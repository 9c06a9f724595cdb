/* 2-d pooling. Max pooling with PyTorch's indices. The values and the index of each window's maximum
 * come from one pass per kernel tap over strided views of the (-inf padded) input:
 * a tap replaces the best so far where it is greater or NaN, which is PyTorch's rule
 * (the first maximum in scan order; the last NaN). The backward adds each gradient at
 * its index (scatter_add), so ties and overlaps follow the forward's choice. */
#include "ffd.h"

#include <limits>

namespace ffd {
namespace {

struct Pool {
    int64_t k[2], s[2], p[2], d[2], in[2], out[2];
};

int64_t pooled_size(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d, bool ceil)
{
    int64_t out = (in + 2 * p - d * (k - 1) - 1 + (ceil ? s - 1 : 0)) / s + 1;
    if (ceil && (out - 1) * s >= in + p) out--;
    return out;
}

Pool pool_of(const at::Tensor &x, at::IntArrayRef k, at::IntArrayRef s, at::IntArrayRef p, at::IntArrayRef d,
             bool ceil)
{
    TORCH_CHECK(x.dim() == 3 || x.dim() == 4, "max_pool2d: expected a 3-D or 4-D input, got ", x.dim(), "-D");
    TORCH_CHECK(k.size() == 1 || k.size() == 2, "max_pool2d: kernel_size must be one int or two");
    Pool q;
    for (int i = 0; i < 2; i++) {
        q.k[i] = k.size() == 1 ? k[0] : k[i];
        q.s[i] = s.empty() ? q.k[i] : s.size() == 1 ? s[0] : s[i];
        q.p[i] = p.size() == 1 ? p[0] : p[i];
        q.d[i] = d.size() == 1 ? d[0] : d[i];
        TORCH_CHECK(q.k[i] > 0 && q.s[i] > 0 && q.d[i] > 0, "max_pool2d: kernel, stride and dilation must be > 0");
        TORCH_CHECK(q.p[i] >= 0 && q.p[i] <= q.k[i] / 2, "pad should be at most half of effective kernel size, but got pad=",
                    q.p[i], ", kernel_size=", q.k[i]);
        q.in[i] = x.size(x.dim() - 2 + i);
        q.out[i] = pooled_size(q.in[i], q.k[i], q.s[i], q.p[i], q.d[i], ceil);
        TORCH_CHECK(q.out[i] > 0, "max_pool2d: output size is too small for input ", x.sizes());
    }
    return q;
}

std::tuple<at::Tensor, at::Tensor> max_pool2d_with_indices(const at::Tensor &self, at::IntArrayRef k,
                                                           at::IntArrayRef s, at::IntArrayRef p, at::IntArrayRef d,
                                                           bool ceil)
{
    Pool q = pool_of(self, k, s, p, d, ceil);
    at::Tensor x = self.dim() == 3 ? self.unsqueeze(0) : self;
    int64_t extra[2];
    for (int i = 0; i < 2; i++) /* the rows and columns the last window reaches past the padding */
        extra[i] = std::max<int64_t>(0, (q.out[i] - 1) * q.s[i] + q.d[i] * (q.k[i] - 1) + 1 - (q.in[i] + 2 * q.p[i]));
    at::Tensor xp = at::constant_pad_nd(x, {q.p[1], q.p[1] + extra[1], q.p[0], q.p[0] + extra[0]},
                                        -std::numeric_limits<double>::infinity());
    /* the plane index of window (oh, ow)'s first tap: (oh s - p) W + (ow s - p) */
    at::TensorOptions i64 = self.options().dtype(at::kLong);
    at::Tensor rows = at::arange(q.out[0], i64).mul(q.s[0]).sub(q.p[0]).mul(q.in[1]).unsqueeze(1);
    at::Tensor cols = at::arange(q.out[1], i64).mul(q.s[1]).sub(q.p[1]).unsqueeze(0);
    at::Tensor base = rows + cols;
    at::Tensor best, index;
    for (int64_t a = 0; a < q.k[0]; a++)
        for (int64_t b = 0; b < q.k[1]; b++) {
            at::Tensor tap = xp.slice(2, a * q.d[0], a * q.d[0] + (q.out[0] - 1) * q.s[0] + 1, q.s[0])
                                 .slice(3, b * q.d[1], b * q.d[1] + (q.out[1] - 1) * q.s[1] + 1, q.s[1]);
            at::Tensor at_tap = base + (a * q.d[0] * q.in[1] + b * q.d[1]);
            if (!best.defined()) {
                best = tap.clone();
                index = at_tap.expand(tap.sizes()).clone();
                continue;
            }
            at::Tensor take = at::logical_or(tap > best, at::isnan(tap));
            best = at::where(take, tap, best);
            index = at::where(take, at_tap, index);
        }
    if (self.dim() == 3) best = best.squeeze(0), index = index.squeeze(0);
    return std::make_tuple(best.contiguous(), index.contiguous());
}

std::tuple<at::Tensor &, at::Tensor &> max_pool2d_with_indices_out(const at::Tensor &self, at::IntArrayRef k,
                                                                   at::IntArrayRef s, at::IntArrayRef p,
                                                                   at::IntArrayRef d, bool ceil, at::Tensor &out,
                                                                   at::Tensor &indices)
{
    return assign_out(out, indices, ffd::max_pool2d_with_indices(self, k, s, p, d, ceil));
}

at::Tensor max_pool2d_with_indices_backward(const at::Tensor &grad, const at::Tensor &self, at::IntArrayRef k,
                                            at::IntArrayRef s, at::IntArrayRef p, at::IntArrayRef d, bool ceil,
                                            const at::Tensor &indices)
{
    int64_t planes = self.numel() / (self.size(-1) * self.size(-2));
    at::Tensor g = at::zeros({planes, self.size(-2) * self.size(-1)}, grad.options());
    g.scatter_add_(1, indices.reshape({planes, -1}), grad.reshape({planes, -1}));
    return g.view(self.sizes());
}

at::Tensor &max_pool2d_with_indices_backward_out(const at::Tensor &grad, const at::Tensor &self, at::IntArrayRef k,
                                                 at::IntArrayRef s, at::IntArrayRef p, at::IntArrayRef d, bool ceil,
                                                 const at::Tensor &indices, at::Tensor &out)
{
    return assign_out(out, ffd::max_pool2d_with_indices_backward(grad, self, k, s, p, d, ceil, indices));
}

/* ---- average pooling ------------------------------------------------------- */
/* Sums over one strided view per kernel tap of the zero-padded input, divided by PyTorch's
 * divisor per window: divisor_override, else the window's extent clipped to the padded
 * input (count_include_pad) or to the input itself. The backward spreads each gradient
 * back over the same views. */
struct Avg {
    Pool q;
    int64_t extra[2];
    at::Tensor divisor; /* [OH, OW] */
};

Avg avg_of(const at::Tensor &x4, at::IntArrayRef k, at::IntArrayRef s, at::IntArrayRef p, bool ceil,
           bool count_include_pad, c10::optional<int64_t> divisor_override)
{
    Avg a;
    int64_t one = 1;
    a.q = pool_of(x4, k, s, p, at::IntArrayRef(&one, 1), ceil);
    for (int i = 0; i < 2; i++)
        a.extra[i] = std::max<int64_t>(0, (a.q.out[i] - 1) * a.q.s[i] + a.q.k[i] - (a.q.in[i] + 2 * a.q.p[i]));
    if (divisor_override) {
        TORCH_CHECK(*divisor_override != 0, "divisor must be not zero");
        a.divisor = at::full({a.q.out[0], a.q.out[1]}, (double)*divisor_override, x4.options());
        return a;
    }
    /* per axis, how many of each window's taps count: those inside the input, plus the
     * padding's when count_include_pad (never the ceil_mode overhang past it) */
    at::Tensor count[2];
    for (int i = 0; i < 2; i++) {
        at::Tensor start = at::arange(a.q.out[i], x4.options()).mul(a.q.s[i]).sub(a.q.p[i]);
        at::Tensor end = at::clamp_max(start + a.q.k[i], (double)(a.q.in[i] + a.q.p[i]));
        if (!count_include_pad) {
            start = at::clamp_min(start, 0);
            end = at::clamp_max(end, (double)a.q.in[i]);
        }
        count[i] = end - start;
    }
    a.divisor = count[0].unsqueeze(1) * count[1].unsqueeze(0);
    return a;
}

at::Tensor tap(const at::Tensor &xp, const Pool &q, int64_t a, int64_t b)
{
    return xp.slice(2, a, a + (q.out[0] - 1) * q.s[0] + 1, q.s[0]).slice(3, b, b + (q.out[1] - 1) * q.s[1] + 1, q.s[1]);
}

at::Tensor avg_pool2d(const at::Tensor &self, at::IntArrayRef k, at::IntArrayRef s, at::IntArrayRef p, bool ceil,
                      bool count_include_pad, c10::optional<int64_t> divisor_override)
{
    at::Tensor x = self.dim() == 3 ? self.unsqueeze(0) : self;
    Avg a = avg_of(x, k, s, p, ceil, count_include_pad, divisor_override);
    const Pool &q = a.q;
    at::Tensor xp = at::constant_pad_nd(x, {q.p[1], q.p[1] + a.extra[1], q.p[0], q.p[0] + a.extra[0]}, 0.0);
    at::Tensor sum;
    for (int64_t i = 0; i < q.k[0]; i++)
        for (int64_t j = 0; j < q.k[1]; j++) sum = sum.defined() ? sum + tap(xp, q, i, j) : tap(xp, q, i, j).clone();
    at::Tensor y = sum / a.divisor;
    return self.dim() == 3 ? y.squeeze(0) : y;
}

at::Tensor avg_pool2d_backward(const at::Tensor &grad, const at::Tensor &self, at::IntArrayRef k, at::IntArrayRef s,
                               at::IntArrayRef p, bool ceil, bool count_include_pad,
                               c10::optional<int64_t> divisor_override)
{
    at::Tensor x = self.dim() == 3 ? self.unsqueeze(0) : self;
    at::Tensor g = grad.dim() == 3 ? grad.unsqueeze(0) : grad;
    Avg a = avg_of(x, k, s, p, ceil, count_include_pad, divisor_override);
    const Pool &q = a.q;
    at::Tensor share = g / a.divisor;
    at::Tensor gp = at::zeros({x.size(0), x.size(1), q.in[0] + 2 * q.p[0] + a.extra[0], q.in[1] + 2 * q.p[1] + a.extra[1]},
                              grad.options());
    for (int64_t i = 0; i < q.k[0]; i++)
        for (int64_t j = 0; j < q.k[1]; j++) {
            at::Tensor v = tap(gp, q, i, j);
            v.add_(share);
        }
    at::Tensor gi = gp.slice(2, q.p[0], q.p[0] + q.in[0]).slice(3, q.p[1], q.p[1] + q.in[1]).contiguous();
    return self.dim() == 3 ? gi.squeeze(0) : gi;
}

at::Tensor &avg_pool2d_out(const at::Tensor &self, at::IntArrayRef k, at::IntArrayRef s, at::IntArrayRef p, bool ceil,
                           bool cip, c10::optional<int64_t> d, at::Tensor &out)
{
    return assign_out(out, ffd::avg_pool2d(self, k, s, p, ceil, cip, d));
}
at::Tensor &avg_pool2d_backward_out(const at::Tensor &grad, const at::Tensor &self, at::IntArrayRef k,
                                    at::IntArrayRef s, at::IntArrayRef p, bool ceil, bool cip,
                                    c10::optional<int64_t> d, at::Tensor &out)
{
    return assign_out(out, ffd::avg_pool2d_backward(grad, self, k, s, p, ceil, cip, d));
}

/* ---- adaptive average pooling --------------------------------------------- */
/* Per axis, output i averages input [floor(i n / m), ceil((i + 1) n / m)): an [m, n]
 * averaging matrix, built on the host and uploaded; the pooling is A_h x A_w^T, its
 * gradient A_h^T g A_w. */
at::Tensor averaging(int64_t n, int64_t m, const at::Tensor &like)
{
    at::Tensor a = at::zeros({m, n}, like.options().device(at::kCPU).dtype(at::kDouble));
    auto acc = a.accessor<double, 2>();
    for (int64_t i = 0; i < m; i++) {
        int64_t lo = (i * n) / m, hi = ((i + 1) * n + m - 1) / m;
        for (int64_t j = lo; j < hi; j++) acc[i][j] = 1.0 / (double)(hi - lo);
    }
    return a.to(like.scalar_type()).to(like.device());
}

at::Tensor adaptive_avg_pool2d(const at::Tensor &self, c10::SymIntArrayRef output_size)
{
    at::IntArrayRef out = c10::asIntArrayRefSlow(output_size);
    TORCH_CHECK(out.size() == 2, "adaptive_avg_pool2d: output_size must be 2");
    TORCH_CHECK(self.dim() == 3 || self.dim() == 4, "adaptive_avg_pool2d: expected 3D or 4D tensor, got ", self.dim(), "D");
    TORCH_CHECK(at::isFloatingType(self.scalar_type()), "adaptive_avg_pool2d: expected a floating dtype");
    at::Tensor ah = averaging(self.size(-2), out[0], self), aw = averaging(self.size(-1), out[1], self);
    return at::matmul(at::matmul(ah, self), aw.t());
}

at::Tensor adaptive_avg_pool2d_backward(const at::Tensor &grad, const at::Tensor &self)
{
    at::Tensor ah = averaging(self.size(-2), grad.size(-2), self), aw = averaging(self.size(-1), grad.size(-1), self);
    return at::matmul(at::matmul(ah.t(), grad), aw);
}

} // namespace
} // namespace ffd

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m)
{
    m.impl("max_pool2d_with_indices", TORCH_FN(ffd::max_pool2d_with_indices));
    m.impl("max_pool2d_with_indices.out", TORCH_FN(ffd::max_pool2d_with_indices_out));
    m.impl("max_pool2d_with_indices_backward", TORCH_FN(ffd::max_pool2d_with_indices_backward));
    m.impl("max_pool2d_with_indices_backward.grad_input", TORCH_FN(ffd::max_pool2d_with_indices_backward_out));
    m.impl("_adaptive_avg_pool2d", TORCH_FN(ffd::adaptive_avg_pool2d));
    m.impl("_adaptive_avg_pool2d_backward", TORCH_FN(ffd::adaptive_avg_pool2d_backward));
    m.impl("avg_pool2d", TORCH_FN(ffd::avg_pool2d));
    m.impl("avg_pool2d.out", TORCH_FN(ffd::avg_pool2d_out));
    m.impl("avg_pool2d_backward", TORCH_FN(ffd::avg_pool2d_backward));
    m.impl("avg_pool2d_backward.grad_input", TORCH_FN(ffd::avg_pool2d_backward_out));
}
