/* Matrix products: mm, bmm, addmm, baddbmm, dot, on FusionFlow's matmul (the
 * backend's GEMM: OpenBLAS/oneDNN on cpu_blas, CLBlast on opencl, cuBLAS on cuda). */
#include "ffd.h"

namespace ffd {
namespace {

void check_same_dtype(const at::Tensor &a, const at::Tensor &b, const char *what)
{
    TORCH_CHECK(a.scalar_type() == b.scalar_type(), what, ": expected ", a.scalar_type(), " and ", b.scalar_type(),
                " to be the same dtype");
}

at::Tensor product(const at::Tensor &a, const at::Tensor &b, int dims, const char *what)
{
    TORCH_CHECK(a.dim() == dims && b.dim() == dims, what, ": expected ", dims, "-D tensors, got ", a.dim(), "-D and ",
                b.dim(), "-D");
    TORCH_CHECK(a.size(-1) == b.size(-2), what, ": shapes ", a.sizes(), " and ", b.sizes(), " cannot be multiplied");
    if (dims == 3)
        TORCH_CHECK(a.size(0) == b.size(0), what, ": batch sizes ", a.size(0), " and ", b.size(0), " differ");
    check_same_dtype(a, b, what);
    c10::DeviceIndex dev = device_of({&a, &b});
    Ref x = wrap(a), y = wrap(b);
    return unwrap(own(ff_matmul(x.get(), y.get()), what), dev);
}

at::Tensor mm(const at::Tensor &a, const at::Tensor &b) { return product(a, b, 2, "mm"); }
at::Tensor bmm(const at::Tensor &a, const at::Tensor &b) { return product(a, b, 3, "bmm"); }

/* beta * self + alpha * p, with beta == 0 ignoring self (NaN in it included) */
at::Tensor scaled_sum(const at::Tensor &self, at::Tensor p, const at::Scalar &beta, const at::Scalar &alpha)
{
    c10::DeviceIndex dev = device_of({&p});
    Ref r = wrap(p);
    if (!alpha.equal(1)) r = own(ff_binary_number(FF_BINARY_MUL, r.get(), number_of(alpha)), "addmm");
    if (!beta.equal(0)) {
        Ref s = operand(self, backend_at(dev), p.scalar_type());
        if (!beta.equal(1)) s = own(ff_binary_number(FF_BINARY_MUL, s.get(), number_of(beta)), "addmm");
        r = own(ff_add(r.get(), s.get()), "addmm");
    }
    return unwrap(std::move(r), dev, {&p});
}

at::Tensor addmm(const at::Tensor &self, const at::Tensor &m1, const at::Tensor &m2, const at::Scalar &beta,
                 const at::Scalar &alpha)
{
    check_same_dtype(self, m1, "addmm");
    return scaled_sum(self, ffd::mm(m1, m2), beta, alpha);
}
at::Tensor &addmm_(at::Tensor &self, const at::Tensor &m1, const at::Tensor &m2, const at::Scalar &beta,
                   const at::Scalar &alpha)
{
    return assign(self, ffd::addmm(self, m1, m2, beta, alpha));
}
at::Tensor &addmm_out(const at::Tensor &self, const at::Tensor &m1, const at::Tensor &m2, const at::Scalar &beta,
                      const at::Scalar &alpha, at::Tensor &out)
{
    return assign_out(out, ffd::addmm(self, m1, m2, beta, alpha));
}

at::Tensor baddbmm(const at::Tensor &self, const at::Tensor &b1, const at::Tensor &b2, const at::Scalar &beta,
                   const at::Scalar &alpha)
{
    check_same_dtype(self, b1, "baddbmm");
    return scaled_sum(self, ffd::bmm(b1, b2), beta, alpha);
}
at::Tensor &baddbmm_(at::Tensor &self, const at::Tensor &b1, const at::Tensor &b2, const at::Scalar &beta,
                     const at::Scalar &alpha)
{
    return assign(self, ffd::baddbmm(self, b1, b2, beta, alpha));
}
at::Tensor &baddbmm_out(const at::Tensor &self, const at::Tensor &b1, const at::Tensor &b2, const at::Scalar &beta,
                        const at::Scalar &alpha, at::Tensor &out)
{
    return assign_out(out, ffd::baddbmm(self, b1, b2, beta, alpha));
}

at::Tensor &mm_out(const at::Tensor &a, const at::Tensor &b, at::Tensor &out) { return assign_out(out, ffd::mm(a, b)); }
at::Tensor &bmm_out(const at::Tensor &a, const at::Tensor &b, at::Tensor &out)
{
    return assign_out(out, ffd::bmm(a, b));
}

at::Tensor dot(const at::Tensor &a, const at::Tensor &b)
{
    TORCH_CHECK(a.dim() == 1 && b.dim() == 1, "1D tensors expected, but got ", a.dim(), "D and ", b.dim(),
                "D tensors");
    TORCH_CHECK(a.numel() == b.numel(), "inconsistent tensor size, expected tensor [", a.numel(),
                "] and src [", b.numel(), "] to have the same number of elements, but got ", a.numel(), " and ",
                b.numel(), " elements respectively");
    check_same_dtype(a, b, "dot");
    c10::DeviceIndex dev = device_of({&a, &b});
    Ref x = wrap(a), y = wrap(b);
    return unwrap(own(ff_matmul(x.get(), y.get()), "dot"), dev);
}

} // namespace
} // namespace ffd

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m)
{
    m.impl("mm", TORCH_FN(ffd::mm));
    m.impl("mm.out", TORCH_FN(ffd::mm_out));
    m.impl("bmm", TORCH_FN(ffd::bmm));
    m.impl("bmm.out", TORCH_FN(ffd::bmm_out));
    m.impl("addmm", TORCH_FN(ffd::addmm));
    m.impl("addmm_", TORCH_FN(ffd::addmm_));
    m.impl("addmm.out", TORCH_FN(ffd::addmm_out));
    m.impl("baddbmm", TORCH_FN(ffd::baddbmm));
    m.impl("baddbmm_", TORCH_FN(ffd::baddbmm_));
    m.impl("baddbmm.out", TORCH_FN(ffd::baddbmm_out));
    m.impl("dot", TORCH_FN(ffd::dot));
}
