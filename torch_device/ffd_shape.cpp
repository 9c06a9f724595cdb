/* Ops that assemble tensors from others: cat. (Views are PyTorch's own, ffd_memory.cpp.) */
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

} // namespace
} // namespace ffd

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m)
{
    m.impl("cat", TORCH_FN(ffd::cat));
    m.impl("cat.out", TORCH_FN(ffd::cat_out));
}
