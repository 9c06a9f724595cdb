/* Indexing ops: advanced indexing (index, index_put_), masked_fill_, masked_select,
 * nonzero, sort, topk. Index tensors
 * may live on the host, as PyTorch allows: they are uploaded once. */
#include "ffd.h"

#include <vector>

namespace ffd {
namespace {

/* t on device dev: itself, or uploaded from the host */
at::Tensor on(const at::Tensor &t, c10::DeviceIndex dev)
{
    return on_device(t) ? t : t.to(c10::Device(c10::DeviceType::PrivateUse1, dev));
}

struct Indices {
    std::vector<Ref> owned;
    std::vector<const ff_tensor *> raw;
};

Indices indices_of(const c10::List<c10::optional<at::Tensor>> &indices, c10::DeviceIndex dev)
{
    Indices ix;
    for (size_t k = 0; k < indices.size(); k++) {
        c10::optional<at::Tensor> t = indices.get(k);
        ix.owned.push_back(t && t->defined() ? wrap(on(*t, dev)) : Ref());
        ix.raw.push_back(ix.owned.back().get());
    }
    return ix;
}

at::Tensor index(const at::Tensor &self, const c10::List<c10::optional<at::Tensor>> &indices)
{
    c10::DeviceIndex dev = device_of({&self});
    Indices ix = indices_of(indices, dev);
    Ref x = wrap(self);
    return unwrap(own(ff_index(x.get(), (int)ix.raw.size(), ix.raw.data()), "index"), dev);
}

at::Tensor &index_out(const at::Tensor &self, const c10::List<c10::optional<at::Tensor>> &indices, at::Tensor &out)
{
    return assign_out(out, ffd::index(self, indices));
}

at::Tensor &index_put_(at::Tensor &self, const c10::List<c10::optional<at::Tensor>> &indices, const at::Tensor &values,
                       bool accumulate)
{
    c10::DeviceIndex dev = device_of({&self});
    Indices ix = indices_of(indices, dev);
    Ref x = wrap(self), v = operand(on_device(values) || values.dim() == 0 ? values : on(values, dev),
                                    backend_at(dev), self.scalar_type());
    check(ff_index_put_(x.get(), (int)ix.raw.size(), ix.raw.data(), v.get(), accumulate), "index_put_");
    return self;
}

at::Tensor &index_put_impl_(at::Tensor &self, const c10::List<c10::optional<at::Tensor>> &indices,
                            const at::Tensor &values, bool accumulate, bool unsafe)
{
    return ffd::index_put_(self, indices, values, accumulate);
}

at::Tensor &masked_fill_tensor_(at::Tensor &self, const at::Tensor &mask, const at::Tensor &value)
{
    TORCH_CHECK(value.dim() == 0, "masked_fill_ only supports a 0-dimensional value tensor, but got tensor with ",
                value.dim(), " dimension(s).");
    c10::DeviceIndex dev = device_of({&self});
    Ref x = wrap(self), m = wrap(on(mask, dev)), v = operand(value, backend_at(dev), self.scalar_type());
    check(ff_masked_fill_(x.get(), m.get(), v.get()), "masked_fill_");
    return self;
}

at::Tensor &masked_fill_(at::Tensor &self, const at::Tensor &mask, const at::Scalar &value)
{
    return ffd::masked_fill_tensor_(self, mask, at::scalar_tensor(value, at::TensorOptions().dtype(self.scalar_type())));
}

std::tuple<at::Tensor, at::Tensor> topk(const at::Tensor &self, int64_t k, int64_t dim, bool largest, bool sorted)
{
    c10::DeviceIndex dev = device_of({&self});
    Ref x = wrap(self);
    ff_tensor *v = nullptr, *i = nullptr;
    int axis = self.dim() ? (int)c10::maybe_wrap_dim(dim, self.dim()) : 0;
    check(ff_topk(x.get(), k, axis, largest, &v, &i), "topk");
    Ref values(v), idx(i);
    return std::make_tuple(unwrap(std::move(values), dev), unwrap(std::move(idx), dev));
}

std::tuple<at::Tensor &, at::Tensor &> topk_out(const at::Tensor &self, int64_t k, int64_t dim, bool largest,
                                                bool sorted, at::Tensor &values, at::Tensor &indices)
{
    return assign_out(values, indices, ffd::topk(self, k, dim, largest, sorted));
}

std::tuple<at::Tensor, at::Tensor> sort(const at::Tensor &self, c10::optional<bool> stable, int64_t dim, bool descending)
{
    c10::DeviceIndex dev = device_of({&self});
    if (self.dim() == 0) return std::make_tuple(self.clone(), at::zeros({}, self.options().dtype(at::kLong)));
    Ref x = wrap(self);
    ff_tensor *v = nullptr, *i = nullptr;
    check(ff_sort(x.get(), (int)c10::maybe_wrap_dim(dim, self.dim()), descending, &v, &i), "sort");
    Ref values(v), idx(i);
    return std::make_tuple(unwrap(std::move(values), dev), unwrap(std::move(idx), dev));
}
std::tuple<at::Tensor &, at::Tensor &> sort_out(const at::Tensor &self, c10::optional<bool> stable, int64_t dim,
                                                bool descending, at::Tensor &values, at::Tensor &indices)
{
    return assign_out(values, indices, ffd::sort(self, stable, dim, descending));
}

at::Tensor nonzero(const at::Tensor &self)
{
    c10::DeviceIndex dev = device_of({&self});
    Ref x = wrap(self);
    return unwrap(own(ff_nonzero(x.get()), "nonzero"), dev);
}
at::Tensor &nonzero_out(const at::Tensor &self, at::Tensor &out) { return assign_out(out, ffd::nonzero(self)); }

/* self[mask], the two broadcast together first */
at::Tensor masked_select(const at::Tensor &self, const at::Tensor &mask)
{
    std::vector<int64_t> shape = at::infer_size(self.sizes(), mask.sizes());
    if (shape.empty()) shape.push_back(1); /* the result is 1-d whatever the operands' rank */
    c10::List<c10::optional<at::Tensor>> ix;
    ix.push_back(c10::optional<at::Tensor>(on(mask, device_of({&self})).expand(shape)));
    return ffd::index(self.expand(shape), ix);
}
at::Tensor &masked_select_out(const at::Tensor &self, const at::Tensor &mask, at::Tensor &out)
{
    return assign_out(out, ffd::masked_select(self, mask));
}

} // namespace
} // namespace ffd

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m)
{
    m.impl("index.Tensor", TORCH_FN(ffd::index));
    m.impl("index.Tensor_out", TORCH_FN(ffd::index_out));
    m.impl("index_put_", TORCH_FN(ffd::index_put_));
    m.impl("_index_put_impl_", TORCH_FN(ffd::index_put_impl_));
    m.impl("masked_fill_.Scalar", TORCH_FN(ffd::masked_fill_));
    m.impl("masked_fill_.Tensor", TORCH_FN(ffd::masked_fill_tensor_));
    m.impl("sort.stable", TORCH_FN(ffd::sort));
    m.impl("sort.values_stable", TORCH_FN(ffd::sort_out));
    m.impl("nonzero", TORCH_FN(ffd::nonzero));
    m.impl("nonzero.out", TORCH_FN(ffd::nonzero_out));
    m.impl("masked_select", TORCH_FN(ffd::masked_select));
    m.impl("masked_select.out", TORCH_FN(ffd::masked_select_out));
    m.impl("topk", TORCH_FN(ffd::topk));
    m.impl("topk.values", TORCH_FN(ffd::topk_out));
}
