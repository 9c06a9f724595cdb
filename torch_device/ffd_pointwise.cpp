/* Elementwise ATen ops on FusionFlow's unary and binary ops, with the gradient helpers
 * PyTorch's autograd formulas call (threshold_backward, sigmoid_backward, ...). Dtypes
 * follow PyTorch: the operands are cast to at::result_type first, and FusionFlow
 * computes in that dtype, as PyTorch's CPU kernels do. */
#include "ffd.h"

namespace ffd {
namespace {

/* A Python number as the CPU 0-d tensor PyTorch wraps it in. */
at::Tensor number(const at::Scalar &s)
{
    at::Tensor t = at::scalar_tensor(s, at::TensorOptions().dtype(s.isBoolean()    ? at::kBool
                                                                   : s.isIntegral(false) ? at::kLong
                                                                                         : at::kDouble));
    t.unsafeGetTensorImpl()->set_wrapped_number(true);
    return t;
}

at::ScalarType floating(at::ScalarType t)
{
    return at::isIntegralType(t, /*includeBool=*/true) ? at::typeMetaToScalarType(at::get_default_dtype()) : t;
}

/* a op alpha * b (alpha applied in the operands' dtype), in PyTorch's result dtype unless
 * compute says otherwise (true division of integers) */
at::Tensor binary(ff_binary_op op, const at::Tensor &a, const at::Tensor &b, at::ScalarType compute, const char *what,
                  const at::Scalar &alpha = 1)
{
    c10::DeviceIndex dev = device_of({&a, &b});
    ff_backend *be = backend_at(dev);
    Ref x = operand(a, be, compute), y = operand(b, be, compute);
    if (!alpha.equal(1)) y = own(ff_binary_number(FF_BINARY_MUL, y.get(), number_of(alpha)), what);
    return unwrap(own(ff_binary(op, x.get(), y.get()), what), dev);
}

at::Tensor add(const at::Tensor &a, const at::Tensor &b, const at::Scalar &alpha)
{
    return binary(FF_BINARY_ADD, a, b, at::result_type(a, b), "add", alpha);
}
at::Tensor sub(const at::Tensor &a, const at::Tensor &b, const at::Scalar &alpha)
{
    return binary(FF_BINARY_SUB, a, b, at::result_type(a, b), "sub", alpha);
}
at::Tensor mul(const at::Tensor &a, const at::Tensor &b) { return binary(FF_BINARY_MUL, a, b, at::result_type(a, b), "mul"); }
at::Tensor div(const at::Tensor &a, const at::Tensor &b)
{
    return binary(FF_BINARY_DIV, a, b, floating(at::result_type(a, b)), "div");
}
at::Tensor maximum(const at::Tensor &a, const at::Tensor &b)
{
    return binary(FF_BINARY_MAXIMUM, a, b, at::result_type(a, b), "maximum");
}
at::Tensor minimum(const at::Tensor &a, const at::Tensor &b)
{
    return binary(FF_BINARY_MINIMUM, a, b, at::result_type(a, b), "minimum");
}
at::Tensor pow_tt(const at::Tensor &a, const at::Tensor &b) { return binary(FF_BINARY_POW, a, b, at::result_type(a, b), "pow"); }
at::Tensor pow_ts(const at::Tensor &a, const at::Scalar &b) { return ffd::pow_tt(a, number(b)); }

#define FFD_COMPARE(name, OP)                                                                            \
    at::Tensor name(const at::Tensor &a, const at::Tensor &b) { return binary(OP, a, b, at::result_type(a, b), #name); } \
    at::Tensor name##_s(const at::Tensor &a, const at::Scalar &b) { return ffd::name(a, number(b)); }
FFD_COMPARE(eq, FF_BINARY_EQ)
FFD_COMPARE(ne, FF_BINARY_NE)
FFD_COMPARE(lt, FF_BINARY_LT)
FFD_COMPARE(le, FF_BINARY_LE)
FFD_COMPARE(gt, FF_BINARY_GT)
FFD_COMPARE(ge, FF_BINARY_GE)
#undef FFD_COMPARE

#define FFD_LOGICAL(name, OP)                                                                    \
    at::Tensor name(const at::Tensor &a, const at::Tensor &b) { return binary(OP, a, b, at::result_type(a, b), #name); }
FFD_LOGICAL(logical_and, FF_BINARY_LOGICAL_AND)
FFD_LOGICAL(logical_or, FF_BINARY_LOGICAL_OR)
FFD_LOGICAL(logical_xor, FF_BINARY_LOGICAL_XOR)
FFD_LOGICAL(bitwise_and, FF_BINARY_BITWISE_AND)
FFD_LOGICAL(bitwise_or, FF_BINARY_BITWISE_OR)
FFD_LOGICAL(bitwise_xor, FF_BINARY_BITWISE_XOR)
#undef FFD_LOGICAL

at::Tensor where(const at::Tensor &cond, const at::Tensor &a, const at::Tensor &b)
{
    at::ScalarType compute = at::result_type(a, b);
    c10::DeviceIndex dev = device_of({&cond, &a, &b});
    ff_backend *be = backend_at(dev);
    Ref c = operand(cond, be, at::kBool), x = operand(a, be, compute), y = operand(b, be, compute);
    return unwrap(own(ff_where(c.get(), x.get(), y.get()), "where"), dev);
}

at::Tensor unary(ff_unary_op op, const at::Tensor &a, at::ScalarType compute, const char *what)
{
    c10::DeviceIndex dev = device_of({&a});
    Ref x = operand(a, backend_at(dev), compute);
    return unwrap(own(ff_unary(op, x.get()), what), dev);
}

/* ops whose result is floating (exp of an int tensor is f32), and ops that keep the dtype */
#define FFD_UNARY_FLOAT(name, OP) \
    at::Tensor name(const at::Tensor &a) { return unary(OP, a, floating(a.scalar_type()), #name); }
#define FFD_UNARY_SAME(name, OP) \
    at::Tensor name(const at::Tensor &a) { return unary(OP, a, a.scalar_type(), #name); }
FFD_UNARY_FLOAT(exp, FF_UNARY_EXP)
FFD_UNARY_FLOAT(log, FF_UNARY_LOG)
FFD_UNARY_FLOAT(log1p, FF_UNARY_LOG1P)
FFD_UNARY_FLOAT(expm1, FF_UNARY_EXPM1)
FFD_UNARY_FLOAT(sqrt, FF_UNARY_SQRT)
FFD_UNARY_FLOAT(rsqrt, FF_UNARY_RSQRT)
FFD_UNARY_FLOAT(sin, FF_UNARY_SIN)
FFD_UNARY_FLOAT(cos, FF_UNARY_COS)
FFD_UNARY_FLOAT(tanh, FF_UNARY_TANH)
FFD_UNARY_FLOAT(sigmoid, FF_UNARY_SIGMOID)
FFD_UNARY_FLOAT(erf, FF_UNARY_ERF)
FFD_UNARY_FLOAT(reciprocal, FF_UNARY_RECIPROCAL)
FFD_UNARY_SAME(neg, FF_UNARY_NEG)
FFD_UNARY_SAME(abs, FF_UNARY_ABS)
FFD_UNARY_SAME(sign, FF_UNARY_SIGN)
FFD_UNARY_SAME(relu, FF_UNARY_RELU)
FFD_UNARY_SAME(floor, FF_UNARY_FLOOR)
FFD_UNARY_SAME(ceil, FF_UNARY_CEIL)
FFD_UNARY_SAME(round, FF_UNARY_ROUND)
FFD_UNARY_SAME(bitwise_not, FF_UNARY_BITWISE_NOT)

using Elementwise = ff_tensor *(*)(const ff_tensor *);
at::Tensor elementwise(Elementwise fn, const at::Tensor &a, const char *what)
{
    c10::DeviceIndex dev = device_of({&a});
    Ref x = operand(a, backend_at(dev), floating(a.scalar_type()));
    return unwrap(own(fn(x.get()), what), dev);
}
at::Tensor atan(const at::Tensor &a) { return elementwise(ff_atan, a, "atan"); }
at::Tensor asin(const at::Tensor &a) { return elementwise(ff_asin, a, "asin"); }
at::Tensor acos(const at::Tensor &a) { return elementwise(ff_acos, a, "acos"); }
at::Tensor lgamma(const at::Tensor &a) { return elementwise(ff_lgamma, a, "lgamma"); }
at::Tensor digamma(const at::Tensor &a) { return elementwise(ff_digamma, a, "digamma"); }
at::Tensor logical_not(const at::Tensor &a) { return unary(FF_UNARY_LOGICAL_NOT, a, a.scalar_type(), "logical_not"); }
at::Tensor isnan(const at::Tensor &a) { return unary(FF_UNARY_ISNAN, a, a.scalar_type(), "isnan"); }
#undef FFD_UNARY_FLOAT
#undef FFD_UNARY_SAME

at::Tensor clamp(const at::Tensor &self, const c10::optional<at::Scalar> &lo, const c10::optional<at::Scalar> &hi);

at::Tensor rsub(const at::Tensor &a, const at::Tensor &b, const at::Scalar &alpha)
{
    return ffd::sub(b, a, alpha); /* other - alpha * self */
}

/* rounding_mode None: true division; "trunc" and "floor" round the quotient, in the
 * operands' dtype as PyTorch does (integer quotients stay integers) */
at::Tensor div_mode(const at::Tensor &a, const at::Tensor &b, c10::optional<c10::string_view> mode)
{
    if (!mode) return ffd::div(a, b);
    TORCH_CHECK(*mode == "trunc" || *mode == "floor", "div expected rounding_mode to be one of None, 'trunc', or ",
                "'floor' but found '", *mode, "'");
    at::ScalarType t = at::result_type(a, b);
    c10::DeviceIndex dev = device_of({&a, &b});
    ff_backend *be = backend_at(dev);
    Ref x = operand(a, be, t), y = operand(b, be, t);
    if (*mode == "floor") return unwrap(own(ff_floor_divide(x.get(), y.get()), "div"), dev);
    if (at::isIntegralType(t, true)) /* C's integer division truncates */
        return unwrap(own(ff_binary(FF_BINARY_DIV, x.get(), y.get()), "div"), dev);
    Ref q = own(ff_div(x.get(), y.get()), "div");
    Ref fl = own(ff_floor(q.get()), "div"), ce = own(ff_ceil(q.get()), "div");
    Ref neg = own(ff_binary_number(FF_BINARY_LT, q.get(), ff_number_int(0)), "div");
    return unwrap(own(ff_where(neg.get(), ce.get(), fl.get()), "div"), dev);
}
at::Tensor &div_mode_(at::Tensor &a, const at::Tensor &b, c10::optional<c10::string_view> mode)
{
    return assign(a, ffd::div_mode(a, b, mode));
}
at::Tensor &div_mode_out(const at::Tensor &a, const at::Tensor &b, c10::optional<c10::string_view> mode,
                         at::Tensor &out)
{
    return assign_out(out, ffd::div_mode(a, b, mode));
}

at::Tensor remainder(const at::Tensor &a, const at::Tensor &b)
{
    at::ScalarType t = at::result_type(a, b);
    c10::DeviceIndex dev = device_of({&a, &b});
    ff_backend *be = backend_at(dev);
    Ref x = operand(a, be, t), y = operand(b, be, t);
    return unwrap(own(ff_remainder(x.get(), y.get()), "remainder"), dev);
}

at::Tensor hardtanh(const at::Tensor &self, const at::Scalar &lo, const at::Scalar &hi)
{
    return ffd::clamp(self, lo, hi);
}
at::Tensor &hardtanh_(at::Tensor &self, const at::Scalar &lo, const at::Scalar &hi)
{
    return assign(self, ffd::clamp(self, lo, hi));
}
at::Tensor &hardtanh_out(const at::Tensor &self, const at::Scalar &lo, const at::Scalar &hi, at::Tensor &out)
{
    return assign_out(out, ffd::clamp(self, lo, hi));
}
/* grad where lo < x < hi, else 0 */
at::Tensor hardtanh_backward(const at::Tensor &grad, const at::Tensor &self, const at::Scalar &lo,
                             const at::Scalar &hi)
{
    at::Tensor inside = ffd::logical_and(ffd::gt_s(self, lo), ffd::lt_s(self, hi));
    return ffd::where(inside, grad, number(0));
}

/* ---- clamp and the fused optimizer arithmetic ------------------------------ */
at::Tensor clamp(const at::Tensor &self, const c10::optional<at::Scalar> &lo, const c10::optional<at::Scalar> &hi)
{
    TORCH_CHECK(lo || hi, "torch.clamp: At least one of 'min' or 'max' must not be None");
    c10::DeviceIndex dev = device_of({&self});
    at::ScalarType t = self.scalar_type();
    if (lo) t = at::result_type(self, *lo);
    if (hi) t = at::promote_types(t, at::result_type(self, *hi));
    Ref x = operand(self, backend_at(dev), t);
    ff_number l = lo ? number_of(*lo) : ff_number{}, h = hi ? number_of(*hi) : ff_number{};
    return unwrap(own(ff_clamp_number(x.get(), lo ? &l : nullptr, hi ? &h : nullptr), "clamp"), dev);
}
at::Tensor clamp_min(const at::Tensor &self, const at::Scalar &lo) { return ffd::clamp(self, lo, c10::nullopt); }
at::Tensor clamp_max(const at::Tensor &self, const at::Scalar &hi) { return ffd::clamp(self, c10::nullopt, hi); }
at::Tensor &clamp_(at::Tensor &self, const c10::optional<at::Scalar> &lo, const c10::optional<at::Scalar> &hi)
{
    return assign(self, ffd::clamp(self, lo, hi));
}
at::Tensor &clamp_out(const at::Tensor &self, const c10::optional<at::Scalar> &lo,
                      const c10::optional<at::Scalar> &hi, at::Tensor &out)
{
    return assign_out(out, ffd::clamp(self, lo, hi));
}

/* self + value * t1 * t2 and self + value * t1 / t2 (Adam's steps) */
at::Tensor addcmul(const at::Tensor &self, const at::Tensor &t1, const at::Tensor &t2, const at::Scalar &value)
{
    return ffd::add(self, ffd::mul(t1, t2), value);
}
at::Tensor addcdiv(const at::Tensor &self, const at::Tensor &t1, const at::Tensor &t2, const at::Scalar &value)
{
    return ffd::add(self, ffd::div(t1, t2), value);
}
template <at::Tensor (*F)(const at::Tensor &, const at::Tensor &, const at::Tensor &, const at::Scalar &)>
at::Tensor &addc_(at::Tensor &self, const at::Tensor &t1, const at::Tensor &t2, const at::Scalar &value)
{
    return assign(self, F(self, t1, t2, value));
}
template <at::Tensor (*F)(const at::Tensor &, const at::Tensor &, const at::Tensor &, const at::Scalar &)>
at::Tensor &addc_out(const at::Tensor &self, const at::Tensor &t1, const at::Tensor &t2, const at::Scalar &value,
                     at::Tensor &out)
{
    return assign_out(out, F(self, t1, t2, value));
}

/* ---- gradient helpers --------------------------------------------------- */
/* grad where self > threshold, else 0 (relu's backward: threshold 0) */
at::Tensor threshold_backward(const at::Tensor &grad, const at::Tensor &self, const at::Scalar &threshold)
{
    return ffd::where(ffd::gt_s(self, threshold), grad, number(0));
}

/* grad * y * (1 - y), y = sigmoid(x) */
at::Tensor sigmoid_backward(const at::Tensor &grad, const at::Tensor &y)
{
    return ffd::mul(grad, ffd::mul(y, ffd::sub(number(1), y, 1)));
}

/* grad * (1 - y^2), y = tanh(x) */
at::Tensor tanh_backward(const at::Tensor &grad, const at::Tensor &y)
{
    return ffd::mul(grad, ffd::sub(number(1), ffd::mul(y, y), 1));
}

at::Tensor gelu(const at::Tensor &self, c10::string_view approximate)
{
    TORCH_CHECK(approximate == "none" || approximate == "tanh", "approximate argument must be either none or tanh.");
    c10::DeviceIndex dev = device_of({&self});
    Ref x = wrap(self);
    return unwrap(own(ff_gelu(x.get(), approximate == "tanh"), "gelu"), dev);
}
at::Tensor gelu_backward(const at::Tensor &grad, const at::Tensor &self, c10::string_view approximate)
{
    bool tanh_approx = approximate == "tanh";
    return vjp([&](std::vector<Ref> &l) { return ff_gelu(l[0].get(), tanh_approx); }, grad, {self}, {true},
               "gelu_backward")[0];
}
at::Tensor &gelu_(at::Tensor &self, c10::string_view approximate) { return assign(self, ffd::gelu(self, approximate)); }
at::Tensor &gelu_out(const at::Tensor &self, c10::string_view approximate, at::Tensor &out)
{
    return assign_out(out, ffd::gelu(self, approximate));
}
at::Tensor &gelu_backward_out(const at::Tensor &grad, const at::Tensor &self, c10::string_view approximate,
                              at::Tensor &out)
{
    return assign_out(out, ffd::gelu_backward(grad, self, approximate));
}

at::Tensor leaky_relu(const at::Tensor &self, const at::Scalar &slope)
{
    c10::DeviceIndex dev = device_of({&self});
    Ref x = wrap(self);
    return unwrap(own(ff_leaky_relu(x.get(), slope.toDouble()), "leaky_relu"), dev);
}
/* grad where self > 0, else grad * slope (self may be the result: same sign) */
at::Tensor leaky_relu_backward(const at::Tensor &grad, const at::Tensor &self, const at::Scalar &slope,
                               bool self_is_result)
{
    return ffd::where(ffd::gt_s(self, 0), grad, ffd::mul(grad, number(slope)));
}
at::Tensor &leaky_relu_backward_out(const at::Tensor &grad, const at::Tensor &self, const at::Scalar &slope,
                                    bool self_is_result, at::Tensor &out)
{
    return assign_out(out, ffd::leaky_relu_backward(grad, self, slope, self_is_result));
}

/* scale (x > 0 ? x : alpha (exp(x input_scale) - 1)) */
at::Tensor elu(const at::Tensor &self, const at::Scalar &alpha, const at::Scalar &scale, const at::Scalar &input_scale)
{
    at::Tensor neg = ffd::mul(ffd::sub(ffd::exp(ffd::mul(self, number(input_scale))), number(1), 1), number(alpha));
    return ffd::mul(ffd::where(ffd::gt_s(self, 0), self, neg), number(scale));
}
/* grad scale where x > 0, else grad input_scale (y + alpha scale) for the result y (or
 * grad input_scale alpha scale exp(x input_scale) from the input x) */
at::Tensor elu_backward(const at::Tensor &grad, const at::Scalar &alpha, const at::Scalar &scale,
                        const at::Scalar &input_scale, bool is_result, const at::Tensor &self_or_result)
{
    const at::Tensor &v = self_or_result;
    double a = alpha.toDouble(), s = scale.toDouble(), is = input_scale.toDouble();
    at::Tensor neg = is_result ? ffd::mul(ffd::add(v, number(a * s), 1), number(is))
                               : ffd::mul(ffd::exp(ffd::mul(v, number(is))), number(is * a * s));
    return ffd::where(ffd::gt_s(v, 0), ffd::mul(grad, number(s)), ffd::mul(grad, neg));
}
at::Tensor &elu_(at::Tensor &self, const at::Scalar &alpha, const at::Scalar &scale, const at::Scalar &input_scale)
{
    return assign(self, ffd::elu(self, alpha, scale, input_scale));
}
at::Tensor &elu_out(const at::Tensor &self, const at::Scalar &alpha, const at::Scalar &scale,
                    const at::Scalar &input_scale, at::Tensor &out)
{
    return assign_out(out, ffd::elu(self, alpha, scale, input_scale));
}
at::Tensor &elu_backward_out(const at::Tensor &grad, const at::Scalar &alpha, const at::Scalar &scale,
                             const at::Scalar &input_scale, bool is_result, const at::Tensor &v, at::Tensor &out)
{
    return assign_out(out, ffd::elu_backward(grad, alpha, scale, input_scale, is_result, v));
}

/* ---- in-place and out= forms ---------------------------------------------- */
template <at::Tensor (*F)(const at::Tensor &)>
at::Tensor &unary_(at::Tensor &self) { return assign(self, F(self)); }
template <at::Tensor (*F)(const at::Tensor &)>
at::Tensor &unary_out(const at::Tensor &self, at::Tensor &out) { return assign_out(out, F(self)); }

template <at::Tensor (*F)(const at::Tensor &, const at::Tensor &)>
at::Tensor &binary_(at::Tensor &self, const at::Tensor &other) { return assign(self, F(self, other)); }
template <at::Tensor (*F)(const at::Tensor &, const at::Tensor &)>
at::Tensor &binary_out(const at::Tensor &self, const at::Tensor &other, at::Tensor &out)
{
    return assign_out(out, F(self, other));
}

template <at::Tensor (*F)(const at::Tensor &, const at::Scalar &)>
at::Tensor &scalar_(at::Tensor &self, const at::Scalar &other) { return assign(self, F(self, other)); }
template <at::Tensor (*F)(const at::Tensor &, const at::Scalar &)>
at::Tensor &scalar_out(const at::Tensor &self, const at::Scalar &other, at::Tensor &out)
{
    return assign_out(out, F(self, other));
}

template <at::Tensor (*F)(const at::Tensor &, const at::Tensor &, const at::Scalar &)>
at::Tensor &alpha_(at::Tensor &self, const at::Tensor &other, const at::Scalar &alpha)
{
    return assign(self, F(self, other, alpha));
}
template <at::Tensor (*F)(const at::Tensor &, const at::Tensor &, const at::Scalar &)>
at::Tensor &alpha_out(const at::Tensor &self, const at::Tensor &other, const at::Scalar &alpha, at::Tensor &out)
{
    return assign_out(out, F(self, other, alpha));
}

at::Tensor &threshold_backward_out(const at::Tensor &grad, const at::Tensor &self, const at::Scalar &threshold,
                                   at::Tensor &out)
{
    return assign_out(out, ffd::threshold_backward(grad, self, threshold));
}

at::Tensor &where_out(const at::Tensor &cond, const at::Tensor &a, const at::Tensor &b, at::Tensor &out)
{
    return assign_out(out, ffd::where(cond, a, b));
}

} // namespace
} // namespace ffd

#define FFD_UNARY_FORMS(name, fn)                          \
    m.impl(#name, TORCH_FN(ffd::fn));                          \
    m.impl(#name "_", TORCH_FN(ffd::unary_<ffd::fn>));              \
    m.impl(#name ".out", TORCH_FN(ffd::unary_out<ffd::fn>))
#define FFD_BINARY_FORMS(name, ovl, fn)                    \
    m.impl(#name "." ovl, TORCH_FN(ffd::fn));                  \
    m.impl(#name "_." ovl, TORCH_FN(ffd::binary_<ffd::fn>));        \
    m.impl(#name ".out", TORCH_FN(ffd::binary_out<ffd::fn>))

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m)
{
    using namespace ffd;
    m.impl("add.Tensor", TORCH_FN(ffd::add));
    m.impl("add_.Tensor", TORCH_FN(ffd::alpha_<ffd::add>));
    m.impl("add.out", TORCH_FN(ffd::alpha_out<ffd::add>));
    m.impl("sub.Tensor", TORCH_FN(ffd::sub));
    m.impl("sub_.Tensor", TORCH_FN(ffd::alpha_<ffd::sub>));
    m.impl("sub.out", TORCH_FN(ffd::alpha_out<ffd::sub>));
    FFD_BINARY_FORMS(mul, "Tensor", mul);
    FFD_BINARY_FORMS(div, "Tensor", div);
    m.impl("maximum", TORCH_FN(ffd::maximum));
    m.impl("maximum.out", TORCH_FN(ffd::binary_out<ffd::maximum>));
    m.impl("minimum", TORCH_FN(ffd::minimum));
    m.impl("minimum.out", TORCH_FN(ffd::binary_out<ffd::minimum>));
    m.impl("pow.Tensor_Tensor", TORCH_FN(ffd::pow_tt));
    m.impl("pow_.Tensor", TORCH_FN(ffd::binary_<ffd::pow_tt>));
    m.impl("pow.Tensor_Tensor_out", TORCH_FN(ffd::binary_out<ffd::pow_tt>));
    m.impl("pow.Tensor_Scalar", TORCH_FN(ffd::pow_ts));
    m.impl("pow_.Scalar", TORCH_FN(ffd::scalar_<ffd::pow_ts>));
    m.impl("pow.Tensor_Scalar_out", TORCH_FN(ffd::scalar_out<ffd::pow_ts>));
    m.impl("eq.Tensor", TORCH_FN(ffd::eq));
    m.impl("eq_.Tensor", TORCH_FN(ffd::binary_<ffd::eq>));
    m.impl("eq.Tensor_out", TORCH_FN(ffd::binary_out<ffd::eq>));
    m.impl("eq.Scalar", TORCH_FN(ffd::eq_s));
    m.impl("eq_.Scalar", TORCH_FN(ffd::scalar_<ffd::eq_s>));
    m.impl("eq.Scalar_out", TORCH_FN(ffd::scalar_out<ffd::eq_s>));
    m.impl("ne.Tensor", TORCH_FN(ffd::ne));
    m.impl("ne_.Tensor", TORCH_FN(ffd::binary_<ffd::ne>));
    m.impl("ne.Tensor_out", TORCH_FN(ffd::binary_out<ffd::ne>));
    m.impl("ne.Scalar", TORCH_FN(ffd::ne_s));
    m.impl("ne_.Scalar", TORCH_FN(ffd::scalar_<ffd::ne_s>));
    m.impl("ne.Scalar_out", TORCH_FN(ffd::scalar_out<ffd::ne_s>));
    m.impl("lt.Tensor", TORCH_FN(ffd::lt));
    m.impl("lt_.Tensor", TORCH_FN(ffd::binary_<ffd::lt>));
    m.impl("lt.Tensor_out", TORCH_FN(ffd::binary_out<ffd::lt>));
    m.impl("lt.Scalar", TORCH_FN(ffd::lt_s));
    m.impl("lt_.Scalar", TORCH_FN(ffd::scalar_<ffd::lt_s>));
    m.impl("lt.Scalar_out", TORCH_FN(ffd::scalar_out<ffd::lt_s>));
    m.impl("le.Tensor", TORCH_FN(ffd::le));
    m.impl("le_.Tensor", TORCH_FN(ffd::binary_<ffd::le>));
    m.impl("le.Tensor_out", TORCH_FN(ffd::binary_out<ffd::le>));
    m.impl("le.Scalar", TORCH_FN(ffd::le_s));
    m.impl("le_.Scalar", TORCH_FN(ffd::scalar_<ffd::le_s>));
    m.impl("le.Scalar_out", TORCH_FN(ffd::scalar_out<ffd::le_s>));
    m.impl("gt.Tensor", TORCH_FN(ffd::gt));
    m.impl("gt_.Tensor", TORCH_FN(ffd::binary_<ffd::gt>));
    m.impl("gt.Tensor_out", TORCH_FN(ffd::binary_out<ffd::gt>));
    m.impl("gt.Scalar", TORCH_FN(ffd::gt_s));
    m.impl("gt_.Scalar", TORCH_FN(ffd::scalar_<ffd::gt_s>));
    m.impl("gt.Scalar_out", TORCH_FN(ffd::scalar_out<ffd::gt_s>));
    m.impl("ge.Tensor", TORCH_FN(ffd::ge));
    m.impl("ge_.Tensor", TORCH_FN(ffd::binary_<ffd::ge>));
    m.impl("ge.Tensor_out", TORCH_FN(ffd::binary_out<ffd::ge>));
    m.impl("ge.Scalar", TORCH_FN(ffd::ge_s));
    m.impl("ge_.Scalar", TORCH_FN(ffd::scalar_<ffd::ge_s>));
    m.impl("ge.Scalar_out", TORCH_FN(ffd::scalar_out<ffd::ge_s>));
    m.impl("logical_and", TORCH_FN(ffd::logical_and));
    m.impl("logical_and.out", TORCH_FN(ffd::binary_out<ffd::logical_and>));
    m.impl("logical_or", TORCH_FN(ffd::logical_or));
    m.impl("logical_or.out", TORCH_FN(ffd::binary_out<ffd::logical_or>));
    m.impl("logical_xor", TORCH_FN(ffd::logical_xor));
    m.impl("logical_xor.out", TORCH_FN(ffd::binary_out<ffd::logical_xor>));
    m.impl("bitwise_and.Tensor", TORCH_FN(ffd::bitwise_and));
    m.impl("bitwise_and.Tensor_out", TORCH_FN(ffd::binary_out<ffd::bitwise_and>));
    m.impl("bitwise_or.Tensor", TORCH_FN(ffd::bitwise_or));
    m.impl("bitwise_or.Tensor_out", TORCH_FN(ffd::binary_out<ffd::bitwise_or>));
    m.impl("bitwise_xor.Tensor", TORCH_FN(ffd::bitwise_xor));
    m.impl("bitwise_xor.Tensor_out", TORCH_FN(ffd::binary_out<ffd::bitwise_xor>));
    m.impl("bitwise_not", TORCH_FN(ffd::bitwise_not));
    m.impl("bitwise_not.out", TORCH_FN(ffd::unary_out<ffd::bitwise_not>));
    m.impl("logical_not", TORCH_FN(ffd::logical_not));
    m.impl("logical_not.out", TORCH_FN(ffd::unary_out<ffd::logical_not>));
    m.impl("isnan", TORCH_FN(ffd::isnan));
    m.impl("where.self", TORCH_FN(ffd::where));
    m.impl("where.self_out", TORCH_FN(ffd::where_out));
    FFD_UNARY_FORMS(exp, exp);
    FFD_UNARY_FORMS(log, log);
    FFD_UNARY_FORMS(log1p, log1p);
    FFD_UNARY_FORMS(expm1, expm1);
    FFD_UNARY_FORMS(sqrt, sqrt);
    FFD_UNARY_FORMS(rsqrt, rsqrt);
    FFD_UNARY_FORMS(sin, sin);
    FFD_UNARY_FORMS(cos, cos);
    FFD_UNARY_FORMS(tanh, tanh);
    FFD_UNARY_FORMS(sigmoid, sigmoid);
    FFD_UNARY_FORMS(erf, erf);
    FFD_UNARY_FORMS(reciprocal, reciprocal);
    FFD_UNARY_FORMS(neg, neg);
    FFD_UNARY_FORMS(abs, abs);
    FFD_UNARY_FORMS(sign, sign);
    FFD_UNARY_FORMS(floor, floor);
    FFD_UNARY_FORMS(ceil, ceil);
    FFD_UNARY_FORMS(round, round);
    m.impl("rsub.Tensor", TORCH_FN(ffd::rsub));
    m.impl("div.Tensor_mode", TORCH_FN(ffd::div_mode));
    m.impl("div_.Tensor_mode", TORCH_FN(ffd::div_mode_));
    m.impl("div.out_mode", TORCH_FN(ffd::div_mode_out));
    m.impl("remainder.Tensor", TORCH_FN(ffd::remainder));
    m.impl("remainder_.Tensor", TORCH_FN(ffd::binary_<ffd::remainder>));
    m.impl("remainder.Tensor_out", TORCH_FN(ffd::binary_out<ffd::remainder>));
    m.impl("hardtanh", TORCH_FN(ffd::hardtanh));
    m.impl("hardtanh_", TORCH_FN(ffd::hardtanh_));
    m.impl("hardtanh.out", TORCH_FN(ffd::hardtanh_out));
    m.impl("hardtanh_backward", TORCH_FN(ffd::hardtanh_backward));
    FFD_UNARY_FORMS(atan, atan);
    FFD_UNARY_FORMS(asin, asin);
    FFD_UNARY_FORMS(acos, acos);
    FFD_UNARY_FORMS(lgamma, lgamma);
    FFD_UNARY_FORMS(digamma, digamma);
    m.impl("clamp", TORCH_FN(ffd::clamp));
    m.impl("clamp_", TORCH_FN(ffd::clamp_));
    m.impl("clamp.out", TORCH_FN(ffd::clamp_out));
    m.impl("clamp_min", TORCH_FN(ffd::clamp_min));
    m.impl("clamp_max", TORCH_FN(ffd::clamp_max));
    m.impl("clamp_min_", TORCH_FN(ffd::scalar_<ffd::clamp_min>));
    m.impl("clamp_min.out", TORCH_FN(ffd::scalar_out<ffd::clamp_min>));
    m.impl("clamp_max_", TORCH_FN(ffd::scalar_<ffd::clamp_max>));
    m.impl("clamp_max.out", TORCH_FN(ffd::scalar_out<ffd::clamp_max>));
    m.impl("addcmul", TORCH_FN(ffd::addcmul));
    m.impl("addcmul_", TORCH_FN(ffd::addc_<ffd::addcmul>));
    m.impl("addcmul.out", TORCH_FN(ffd::addc_out<ffd::addcmul>));
    m.impl("addcdiv", TORCH_FN(ffd::addcdiv));
    m.impl("addcdiv_", TORCH_FN(ffd::addc_<ffd::addcdiv>));
    m.impl("addcdiv.out", TORCH_FN(ffd::addc_out<ffd::addcdiv>));
    m.impl("gelu", TORCH_FN(ffd::gelu));
    m.impl("gelu_", TORCH_FN(ffd::gelu_));
    m.impl("gelu.out", TORCH_FN(ffd::gelu_out));
    m.impl("gelu_backward", TORCH_FN(ffd::gelu_backward));
    m.impl("gelu_backward.grad_input", TORCH_FN(ffd::gelu_backward_out));
    m.impl("leaky_relu", TORCH_FN(ffd::leaky_relu));
    m.impl("leaky_relu_", TORCH_FN(ffd::scalar_<ffd::leaky_relu>));
    m.impl("leaky_relu.out", TORCH_FN(ffd::scalar_out<ffd::leaky_relu>));
    m.impl("leaky_relu_backward", TORCH_FN(ffd::leaky_relu_backward));
    m.impl("leaky_relu_backward.grad_input", TORCH_FN(ffd::leaky_relu_backward_out));
    m.impl("elu", TORCH_FN(ffd::elu));
    m.impl("elu_", TORCH_FN(ffd::elu_));
    m.impl("elu.out", TORCH_FN(ffd::elu_out));
    m.impl("elu_backward", TORCH_FN(ffd::elu_backward));
    m.impl("elu_backward.grad_input", TORCH_FN(ffd::elu_backward_out));
    m.impl("relu", TORCH_FN(ffd::relu));
    m.impl("relu_", TORCH_FN(ffd::unary_<ffd::relu>));
    m.impl("threshold_backward", TORCH_FN(ffd::threshold_backward));
    m.impl("threshold_backward.grad_input", TORCH_FN(ffd::threshold_backward_out));
    m.impl("sigmoid_backward", TORCH_FN(ffd::sigmoid_backward));
    m.impl("sigmoid_backward.grad_input", TORCH_FN(ffd::binary_out<ffd::sigmoid_backward>));
    m.impl("tanh_backward", TORCH_FN(ffd::tanh_backward));
    m.impl("tanh_backward.grad_input", TORCH_FN(ffd::binary_out<ffd::tanh_backward>));
}
