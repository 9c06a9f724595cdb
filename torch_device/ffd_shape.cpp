/* Ops that assemble tensors from others: cat, roll, flip, triu/tril, arange, linspace. (Views are PyTorch's own,
 * ffd_memory.cpp.) */
#include "ffd.h"

#include <vector>

namespace ffd {
namespace {

at::Tensor cat(const at::ITensorListRef &tensors, int64_t dim)
{
    std::vector<at::Tensor> ts;
    for (const at::Tensor &t : tensors) ts.push_back(t);
    TORCH_CHECK(!ts.empty(), "torch.cat(): expected a non-empty list of Tensors");
    at::ScalarType st = ts[0].scalar_type();
    for (const at::Tensor &t : ts) st = at::promote_types(st, t.scalar_type());
    /* PyTorch's legacy rule: 1-d empty tensors are skipped, whatever the others' shape */
    std::vector<const at::Tensor *> kept;
    for (const at::Tensor &t : ts)
        if (!(t.dim() == 1 && t.numel() == 0)) kept.push_back(&t);
    if (kept.empty()) return at::empty({0}, ts[0].options().dtype(st));
    c10::DeviceIndex dev = -1;
    for (const at::Tensor &t : ts)
        if (on_device(t)) dev = t.device().index();
    TORCH_CHECK(dev >= 0, "torch.cat(): no tensor on a FusionFlow device");
    ff_backend *be = backend_at(dev);
    std::vector<Ref> parts;
    std::vector<ff_tensor *> raw;
    for (const at::Tensor *t : kept) {
        TORCH_CHECK(on_device(*t), "torch.cat(): expected all tensors on ", ff_backend_name(be), ", got one on ",
                    t->device());
        parts.push_back(operand(*t, be, st));
        raw.push_back(parts.back().get());
    }
    int axis = (int)c10::maybe_wrap_dim(dim, kept[0]->dim());
    return unwrap(own(ff_concat((int)raw.size(), raw.data(), axis), "cat"), dev);
}

at::Tensor &cat_out(const at::ITensorListRef &tensors, int64_t dim, at::Tensor &out)
{
    return assign_out(out, ffd::cat(tensors, dim));
}

/* elements shifted along dims, wrapping around: two slices swapped, per dim */
at::Tensor roll(const at::Tensor &self, at::IntArrayRef shifts, at::IntArrayRef dims)
{
    if (dims.empty()) {
        TORCH_CHECK(shifts.size() == 1, "roll: with no dims, give one shift");
        return ffd::roll(self.reshape(-1), shifts, {0}).view(self.sizes());
    }
    TORCH_CHECK(shifts.size() == dims.size(), "shifts and dimensions must align. shifts: ", shifts.size(),
                ", dims:", dims.size());
    at::Tensor r = self;
    for (size_t i = 0; i < dims.size(); i++) {
        int64_t d = c10::maybe_wrap_dim(dims[i], self.dim()), n = self.size(d);
        if (n == 0) continue;
        int64_t s = ((shifts[i] % n) + n) % n;
        if (s == 0) continue;
        r = ffd::cat({r.narrow(d, n - s, s), r.narrow(d, 0, n - s)}, d);
    }
    return r.is_same(self) ? self.clone() : r;
}

at::Tensor triu(const at::Tensor &self, int64_t diagonal)
{
    c10::DeviceIndex dev = device_of({&self});
    Ref x = wrap(self);
    return unwrap(own(ff_triu(x.get(), diagonal), "triu"), dev);
}
at::Tensor tril(const at::Tensor &self, int64_t diagonal)
{
    c10::DeviceIndex dev = device_of({&self});
    Ref x = wrap(self);
    return unwrap(own(ff_tril(x.get(), diagonal), "tril"), dev);
}
template <at::Tensor (*F)(const at::Tensor &, int64_t)>
at::Tensor &band_(at::Tensor &self, int64_t diagonal) { return assign(self, F(self, diagonal)); }
template <at::Tensor (*F)(const at::Tensor &, int64_t)>
at::Tensor &band_out(const at::Tensor &self, int64_t diagonal, at::Tensor &out)
{
    return assign_out(out, F(self, diagonal));
}

at::Tensor flip(const at::Tensor &self, at::IntArrayRef dims)
{
    c10::DeviceIndex dev = device_of({&self});
    Ref x = wrap(self);
    std::vector<int> axes;
    for (int64_t d : dims) axes.push_back((int)c10::maybe_wrap_dim(d, self.dim()));
    if (self.dim() == 0 || axes.empty()) return self.clone();
    return unwrap(own(ff_flip(x.get(), (int)axes.size(), axes.data()), "flip"), dev);
}

/* linspace into out: PyTorch's CPU values (its two-sided formula), uploaded once */
at::Tensor &linspace_out(const at::Scalar &start, const at::Scalar &end, int64_t steps, at::Tensor &out)
{
    at::Tensor host = at::empty({0}, out.options().device(at::kCPU));
    at::linspace_out(host, start, end, steps);
    return assign_out(out, host.to(out.device()));
}

/* arange into out, the values PyTorch's own CPU kernel gives (one upload) */
at::Tensor &arange_out(const at::Scalar &start, const at::Scalar &end, const at::Scalar &step, at::Tensor &out)
{
    at::Tensor host = at::empty({0}, out.options().device(at::kCPU));
    at::arange_out(host, start, end, step);
    return assign_out(out, host.to(out.device()));
}

} // namespace
} // namespace ffd

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m)
{
    m.impl("cat", TORCH_FN(ffd::cat));
    m.impl("cat.out", TORCH_FN(ffd::cat_out));
    m.impl("roll", TORCH_FN(ffd::roll));
    m.impl("triu", TORCH_FN(ffd::triu));
    m.impl("triu_", TORCH_FN(ffd::band_<ffd::triu>));
    m.impl("triu.out", TORCH_FN(ffd::band_out<ffd::triu>));
    m.impl("tril", TORCH_FN(ffd::tril));
    m.impl("tril_", TORCH_FN(ffd::band_<ffd::tril>));
    m.impl("tril.out", TORCH_FN(ffd::band_out<ffd::tril>));
    m.impl("arange.start_out", TORCH_FN(ffd::arange_out));
    m.impl("linspace.out", TORCH_FN(ffd::linspace_out));
    m.impl("flip", TORCH_FN(ffd::flip));
}
