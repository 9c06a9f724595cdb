/* Reductions: sum, mean, amax/amin, argmax/argmin, max/min (with indices), var/std.
 * Integer and bool sums accumulate in i64 as PyTorch's do. */
#include "ffd.h"

#include <vector>

namespace ffd {
namespace {

std::vector<int> axes_of(at::OptionalIntArrayRef dim, int64_t ndim)
{
    std::vector<int> axes;
    if (dim)
        for (int64_t d : *dim) axes.push_back((int)c10::maybe_wrap_dim(d, ndim));
    return axes;
}

using Reduce = ff_tensor *(*)(const ff_tensor *, int, const int *, bool);

/* a == b elementwise (both on the device, PyTorch's promotion) */
at::Tensor elementwise_eq(const at::Tensor &a, const at::Tensor &b)
{
    c10::DeviceIndex dev = device_of({&a, &b});
    at::ScalarType t = at::result_type(a, b);
    Ref x = operand(a, backend_at(dev), t), y = operand(b, backend_at(dev), t);
    return unwrap(own(ff_eq(x.get(), y.get()), "equal"), dev);
}

at::Tensor reduce(Reduce fn, const at::Tensor &self, at::OptionalIntArrayRef dim, bool keepdim, at::ScalarType compute,
                  const char *what)
{
    c10::DeviceIndex dev = device_of({&self});
    Ref x = operand(self, backend_at(dev), compute);
    std::vector<int> axes = axes_of(dim, self.dim());
    if (self.dim() == 0) axes.clear(); /* dim 0 / -1 of a 0-d tensor is the tensor */
    return unwrap(own(fn(x.get(), (int)axes.size(), axes.data(), keepdim), what), dev);
}

at::ScalarType sum_type(const at::Tensor &self, c10::optional<at::ScalarType> dtype)
{
    if (dtype) return *dtype;
    return at::isIntegralType(self.scalar_type(), /*includeBool=*/true) ? at::kLong : self.scalar_type();
}

at::Tensor sum(const at::Tensor &self, at::OptionalIntArrayRef dim, bool keepdim, c10::optional<at::ScalarType> dtype)
{
    return reduce(ff_sum, self, dim, keepdim, sum_type(self, dtype), "sum");
}
at::Tensor &sum_out(const at::Tensor &self, at::OptionalIntArrayRef dim, bool keepdim,
                    c10::optional<at::ScalarType> dtype, at::Tensor &out)
{
    return assign_out(out, ffd::sum(self, dim, keepdim, dtype ? dtype : c10::optional<at::ScalarType>(out.scalar_type())));
}

at::Tensor mean(const at::Tensor &self, at::OptionalIntArrayRef dim, bool keepdim, c10::optional<at::ScalarType> dtype)
{
    at::ScalarType t = dtype.value_or(self.scalar_type());
    TORCH_CHECK(at::isFloatingType(t) || at::isComplexType(t), "mean(): could not infer output dtype. Input dtype ",
                "must be either a floating point or complex dtype. Got: ", t);
    return reduce(ff_mean, self, dim, keepdim, t, "mean");
}
at::Tensor &mean_out(const at::Tensor &self, at::OptionalIntArrayRef dim, bool keepdim,
                     c10::optional<at::ScalarType> dtype, at::Tensor &out)
{
    return assign_out(out, ffd::mean(self, dim, keepdim, dtype));
}

at::Tensor amax(const at::Tensor &self, at::IntArrayRef dim, bool keepdim)
{
    return reduce(ff_amax, self, dim, keepdim, self.scalar_type(), "amax");
}
at::Tensor &amax_out(const at::Tensor &self, at::IntArrayRef dim, bool keepdim, at::Tensor &out)
{
    return assign_out(out, ffd::amax(self, dim, keepdim));
}
at::Tensor amin(const at::Tensor &self, at::IntArrayRef dim, bool keepdim)
{
    return reduce(ff_amin, self, dim, keepdim, self.scalar_type(), "amin");
}
at::Tensor &amin_out(const at::Tensor &self, at::IntArrayRef dim, bool keepdim, at::Tensor &out)
{
    return assign_out(out, ffd::amin(self, dim, keepdim));
}
at::Tensor max_all(const at::Tensor &self)
{
    TORCH_CHECK(self.numel() > 0, "max(): Expected reduction dim to be specified for input.numel() == 0.");
    return ffd::amax(self, {}, false);
}
at::Tensor min_all(const at::Tensor &self)
{
    TORCH_CHECK(self.numel() > 0, "min(): Expected reduction dim to be specified for input.numel() == 0.");
    return ffd::amin(self, {}, false);
}

using Arg = ff_tensor *(*)(const ff_tensor *, int, bool);

at::Tensor arg(Arg fn, const at::Tensor &self, c10::optional<int64_t> dim, bool keepdim, const char *what)
{
    c10::DeviceIndex dev = device_of({&self});
    Ref x = wrap(self);
    if (!dim) { /* over the flattened tensor */
        int64_t n = self.numel();
        x = own(ff_reshape(x.get(), 1, &n), what);
        keepdim = false;
    }
    int axis = dim && self.dim() ? (int)c10::maybe_wrap_dim(*dim, self.dim()) : 0;
    if (dim && self.dim() == 0) return unwrap(own(ff_zeros_like(own(ff_astype(x.get(), FF_I64), what).get()), what), dev);
    return unwrap(own(fn(x.get(), axis, keepdim), what), dev);
}

at::Tensor argmax(const at::Tensor &self, c10::optional<int64_t> dim, bool keepdim)
{
    return arg(ff_argmax, self, dim, keepdim, "argmax");
}
at::Tensor &argmax_out(const at::Tensor &self, c10::optional<int64_t> dim, bool keepdim, at::Tensor &out)
{
    return assign_out(out, ffd::argmax(self, dim, keepdim));
}
at::Tensor argmin(const at::Tensor &self, c10::optional<int64_t> dim, bool keepdim)
{
    return arg(ff_argmin, self, dim, keepdim, "argmin");
}
at::Tensor &argmin_out(const at::Tensor &self, c10::optional<int64_t> dim, bool keepdim, at::Tensor &out)
{
    return assign_out(out, ffd::argmin(self, dim, keepdim));
}

std::tuple<at::Tensor, at::Tensor> max_dim(const at::Tensor &self, int64_t dim, bool keepdim)
{
    int64_t d = dim;
    return std::make_tuple(ffd::amax(self, at::IntArrayRef(&d, 1), keepdim), ffd::argmax(self, dim, keepdim));
}
std::tuple<at::Tensor, at::Tensor> min_dim(const at::Tensor &self, int64_t dim, bool keepdim)
{
    int64_t d = dim;
    return std::make_tuple(ffd::amin(self, at::IntArrayRef(&d, 1), keepdim), ffd::argmin(self, dim, keepdim));
}

using Spread = ff_tensor *(*)(const ff_tensor *, int, const int *, int64_t, bool);

at::Tensor spread(Spread fn, const at::Tensor &self, at::OptionalIntArrayRef dim, c10::optional<int64_t> correction,
                  bool keepdim, const char *what)
{
    c10::DeviceIndex dev = device_of({&self});
    Ref x = wrap(self);
    std::vector<int> axes = axes_of(dim, self.dim());
    return unwrap(own(fn(x.get(), (int)axes.size(), axes.data(), correction.value_or(1), keepdim), what), dev);
}
at::Tensor var(const at::Tensor &self, at::OptionalIntArrayRef dim, c10::optional<int64_t> correction, bool keepdim)
{
    return spread(ff_var, self, dim, correction, keepdim, "var");
}
at::Tensor std_(const at::Tensor &self, at::OptionalIntArrayRef dim, c10::optional<int64_t> correction, bool keepdim)
{
    return spread(ff_std, self, dim, correction, keepdim, "std");
}

at::Tensor norm(const at::Tensor &self, const c10::optional<at::Scalar> &p, at::IntArrayRef dim, bool keepdim)
{
    c10::DeviceIndex dev = device_of({&self});
    Ref x = wrap(self);
    std::vector<int> axes = axes_of(dim, self.dim());
    if (self.dim() == 0) axes.clear(); /* dim 0 / -1 of a 0-d tensor is the tensor */
    double order = p ? p->toDouble() : 2.0;
    return unwrap(own(ff_norm(x.get(), order, (int)axes.size(), axes.data(), keepdim), "norm"), dev);
}
at::Tensor &norm_out(const at::Tensor &self, const c10::optional<at::Scalar> &p, at::IntArrayRef dim, bool keepdim,
                     at::Tensor &out)
{
    return assign_out(out, ffd::norm(self, p, dim, keepdim));
}

using Logical = ff_tensor *(*)(const ff_tensor *, int, const int *, bool);

at::Tensor logical_reduce(Logical fn, const at::Tensor &self, c10::optional<int64_t> dim, bool keepdim, const char *what)
{
    c10::DeviceIndex dev = device_of({&self});
    Ref x = wrap(self);
    int axis = dim && self.dim() ? (int)c10::maybe_wrap_dim(*dim, self.dim()) : 0;
    Ref r = own(fn(x.get(), dim && self.dim() ? 1 : 0, &axis, dim ? keepdim : false), what);
    /* PyTorch: uint8 in, uint8 out; bool otherwise */
    ff_dtype want = self.scalar_type() == at::kByte ? FF_U8 : FF_BOOL;
    if (ff_tensor_dtype(r.get()) != want) r = own(ff_astype(r.get(), want), what);
    return unwrap(std::move(r), dev);
}
at::Tensor all_dim(const at::Tensor &self, int64_t dim, bool keepdim) { return logical_reduce(ff_all, self, dim, keepdim, "all"); }
at::Tensor any_dim(const at::Tensor &self, int64_t dim, bool keepdim) { return logical_reduce(ff_any, self, dim, keepdim, "any"); }
at::Tensor all_all(const at::Tensor &self) { return logical_reduce(ff_all, self, c10::nullopt, false, "all"); }
at::Tensor any_all(const at::Tensor &self) { return logical_reduce(ff_any, self, c10::nullopt, false, "any"); }
at::Tensor &all_dim_out(const at::Tensor &self, int64_t dim, bool keepdim, at::Tensor &out)
{
    return assign_out(out, ffd::all_dim(self, dim, keepdim));
}
at::Tensor &any_dim_out(const at::Tensor &self, int64_t dim, bool keepdim, at::Tensor &out)
{
    return assign_out(out, ffd::any_dim(self, dim, keepdim));
}
at::Tensor &all_all_out(const at::Tensor &self, at::Tensor &out) { return assign_out(out, ffd::all_all(self)); }
at::Tensor &any_all_out(const at::Tensor &self, at::Tensor &out) { return assign_out(out, ffd::any_all(self)); }

bool equal(const at::Tensor &a, const at::Tensor &b)
{
    if (a.sizes() != b.sizes()) return false;
    if (a.numel() == 0) return true;
    return ffd::all_all(elementwise_eq(a, b)).item<bool>();
}

using Scan = ff_tensor *(*)(const ff_tensor *, int);
at::Tensor scan(Scan fn, const at::Tensor &self, int64_t dim, c10::optional<at::ScalarType> dtype, const char *what)
{
    c10::DeviceIndex dev = device_of({&self});
    Ref x = operand(self, backend_at(dev), sum_type(self, dtype));
    int axis = self.dim() ? (int)c10::maybe_wrap_dim(dim, self.dim()) : 0;
    if (self.dim() == 0) return unwrap(std::move(x), dev, {&self}).clone();
    return unwrap(own(fn(x.get(), axis), what), dev);
}
at::Tensor cumsum(const at::Tensor &self, int64_t dim, c10::optional<at::ScalarType> dtype)
{
    return scan(ff_cumsum, self, dim, dtype, "cumsum");
}
at::Tensor cumprod(const at::Tensor &self, int64_t dim, c10::optional<at::ScalarType> dtype)
{
    return scan(ff_cumprod, self, dim, dtype, "cumprod");
}
at::Tensor &cumsum_out(const at::Tensor &self, int64_t dim, c10::optional<at::ScalarType> dtype, at::Tensor &out)
{
    return assign_out(out, ffd::cumsum(self, dim, dtype ? dtype : c10::optional<at::ScalarType>(out.scalar_type())));
}
at::Tensor &cumprod_out(const at::Tensor &self, int64_t dim, c10::optional<at::ScalarType> dtype, at::Tensor &out)
{
    return assign_out(out, ffd::cumprod(self, dim, dtype ? dtype : c10::optional<at::ScalarType>(out.scalar_type())));
}

} // namespace
} // namespace ffd

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m)
{
    m.impl("sum.dim_IntList", TORCH_FN(ffd::sum));
    m.impl("sum.IntList_out", TORCH_FN(ffd::sum_out));
    m.impl("mean.dim", TORCH_FN(ffd::mean));
    m.impl("mean.out", TORCH_FN(ffd::mean_out));
    m.impl("amax", TORCH_FN(ffd::amax));
    m.impl("amax.out", TORCH_FN(ffd::amax_out));
    m.impl("amin", TORCH_FN(ffd::amin));
    m.impl("amin.out", TORCH_FN(ffd::amin_out));
    m.impl("max", TORCH_FN(ffd::max_all));
    m.impl("min", TORCH_FN(ffd::min_all));
    m.impl("max.dim", TORCH_FN(ffd::max_dim));
    m.impl("min.dim", TORCH_FN(ffd::min_dim));
    m.impl("argmax", TORCH_FN(ffd::argmax));
    m.impl("argmax.out", TORCH_FN(ffd::argmax_out));
    m.impl("argmin", TORCH_FN(ffd::argmin));
    m.impl("argmin.out", TORCH_FN(ffd::argmin_out));
    m.impl("norm.ScalarOpt_dim", TORCH_FN(ffd::norm));
    m.impl("norm.out", TORCH_FN(ffd::norm_out));
    m.impl("all.dim", TORCH_FN(ffd::all_dim));
    m.impl("all.out", TORCH_FN(ffd::all_dim_out));
    m.impl("all", TORCH_FN(ffd::all_all));
    m.impl("all.all_out", TORCH_FN(ffd::all_all_out));
    m.impl("any.dim", TORCH_FN(ffd::any_dim));
    m.impl("any.out", TORCH_FN(ffd::any_dim_out));
    m.impl("any", TORCH_FN(ffd::any_all));
    m.impl("any.all_out", TORCH_FN(ffd::any_all_out));
    m.impl("equal", TORCH_FN(ffd::equal));
    m.impl("cumsum", TORCH_FN(ffd::cumsum));
    m.impl("cumsum.out", TORCH_FN(ffd::cumsum_out));
    m.impl("cumprod", TORCH_FN(ffd::cumprod));
    m.impl("cumprod.out", TORCH_FN(ffd::cumprod_out));
    m.impl("var.correction", TORCH_FN(ffd::var));
    m.impl("std.correction", TORCH_FN(ffd::std_));
}
