/* ATen tensors as FusionFlow views and FusionFlow results as ATen tensors: the two
 * conversions every kernel of the device makes, sharing memory both ways. */
#include "ffd.h"

namespace ffd {
namespace {

void release_storage(void *impl) { c10::raw::intrusive_ptr::decref(static_cast<c10::StorageImpl *>(impl)); }
void release_result(void *t) { ff_tensor_release(static_cast<ff_tensor *>(t)); }

} // namespace

void check(ff_status st, const char *what)
{
    if (st != FF_OK) TORCH_CHECK(false, "fusionflow device (", what, "): ", ff_last_error());
}

Ref own(ff_tensor *t, const char *what)
{
    if (!t) TORCH_CHECK(false, "fusionflow device (", what, "): ", ff_last_error());
    return Ref(t);
}

ff_dtype dtype_of(at::ScalarType st)
{
    switch (st) {
    case at::kFloat: return FF_F32;
    case at::kDouble: return FF_F64;
    case at::kHalf: return FF_F16;
    case at::kBFloat16: return FF_BF16;
    case at::kInt: return FF_I32;
    case at::kLong: return FF_I64;
    case at::kShort: return FF_I16;
    case at::kChar: return FF_I8;
    case at::kByte: return FF_U8;
    case at::kBool: return FF_BOOL;
    case at::kComplexFloat: return FF_C64;
    case at::kComplexDouble: return FF_C128;
    default: TORCH_CHECK(false, "fusionflow device: dtype ", st, " has no FusionFlow dtype");
    }
}

at::ScalarType scalar_type_of(ff_dtype dt)
{
    switch (dt) {
    case FF_F32: return at::kFloat;
    case FF_F64: return at::kDouble;
    case FF_F16: return at::kHalf;
    case FF_BF16: return at::kBFloat16;
    case FF_I32: return at::kInt;
    case FF_I64: return at::kLong;
    case FF_I16: return at::kShort;
    case FF_I8: return at::kChar;
    case FF_U8: return at::kByte;
    case FF_BOOL: return at::kBool;
    case FF_C64: return at::kComplexFloat;
    case FF_C128: return at::kComplexDouble;
    default: TORCH_CHECK(false, "fusionflow device: FusionFlow dtype ", ff_dtype_name(dt), " has no PyTorch dtype");
    }
}

ff_number number_of(const at::Scalar &s)
{
    TORCH_CHECK(!s.isComplex(), "fusionflow device: a complex number where a real one is expected");
    return s.isBoolean() ? ff_number_bool(s.toBool())
           : s.isIntegral(false) ? ff_number_int(s.toLong())
                                 : ff_number_float(s.toDouble());
}

bool on_device(const at::Tensor &t) { return t.defined() && t.device().type() == c10::DeviceType::PrivateUse1; }

c10::DeviceIndex device_of(std::initializer_list<const at::Tensor *> ts)
{
    for (const at::Tensor *t : ts)
        if (t && on_device(*t)) return t->device().index();
    TORCH_CHECK(false, "fusionflow device: no operand is on a FusionFlow device");
}

Ref wrap(const at::Tensor &t)
{
    TORCH_CHECK(on_device(t), "fusionflow device: expected a tensor on a FusionFlow device, got one on ", t.device());
    TORCH_CHECK(t.dim() <= FF_MAX_DIMS, "fusionflow device: ", t.dim(), " dims, FusionFlow takes at most ", FF_MAX_DIMS);
    ff_backend *be = backend_at(t.device().index());
    c10::StorageImpl *s = t.storage().unsafeGetStorageImpl();
    c10::raw::intrusive_ptr::incref(s); /* the view's release drops it */
    ff_tensor *v = ff_tensor_from_buffer(be, s->data_ptr().get(), s->nbytes(), dtype_of(t.scalar_type()),
                                         (int)t.dim(), t.sizes().data(), t.strides().data(), t.storage_offset(),
                                         release_storage, s);
    if (!v) release_storage(s);
    return own(v, "wrap");
}

Ref wrap_optional(const c10::optional<at::Tensor> &t) { return t && t->defined() ? wrap(*t) : Ref(); }

Ref operand(const at::Tensor &t, ff_backend *be, at::ScalarType dtype)
{
    ff_dtype want = dtype_of(dtype);
    if (on_device(t)) {
        TORCH_CHECK(backend_at(t.device().index()) == be, "fusionflow device: operands on two FusionFlow devices (",
                    ff_backend_name(be), " and ", t.device(), ")");
        Ref v = wrap(t);
        if (t.scalar_type() == dtype) return v;
        return own(ff_astype(v.get(), want), "cast");
    }
    TORCH_CHECK(t.device().is_cpu() && t.dim() == 0, "fusionflow device: expected all tensors on the FusionFlow ",
                "device (", ff_backend_name(be), "), got a ", t.dim(), "-d tensor on ", t.device());
    if (at::isComplexType(t.scalar_type()) || at::isComplexType(dtype)) { /* its value in the op's dtype, uploaded */
        at::Tensor host = t.to(dtype).contiguous();
        return own(ff_from_data_on(be, host.data_ptr(), 0, nullptr, want), "scalar");
    }
    /* the common case, a Python number: no host tensor made (ints keep all 64 bits) */
    return own(ff_number_tensor_on(be, number_of(t.item()), want), "scalar");
}

at::Tensor unwrap(Ref r, c10::DeviceIndex dev, std::initializer_list<const at::Tensor *> inputs)
{
    ff_tensor *raw = r.get(); /* alive until return: owned by r, or by the new storage */
    size_t nbytes = 0;
    void *buf = ff_tensor_buffer(raw, &nbytes);
    at::ScalarType st = scalar_type_of(ff_tensor_dtype(raw));
    int nd = ff_tensor_ndim(raw);
    at::IntArrayRef sizes(ff_tensor_shape(raw), (size_t)nd), strides(ff_tensor_strides(raw), (size_t)nd);
    c10::Storage storage;
    for (const at::Tensor *in : inputs)
        if (in && on_device(*in) && buf && in->storage().data() == buf) storage = in->storage();
    if (!storage) {
        c10::Device d(c10::DeviceType::PrivateUse1, dev);
        storage = c10::Storage(c10::Storage::use_byte_size_t(), nbytes, c10::DataPtr(buf, raw, release_result, d),
                               allocator(), /*resizable=*/true);
        r.release(); /* the storage's DataPtr owns it now */
    }
    at::Tensor out = at::detail::make_tensor<c10::TensorImpl>(std::move(storage),
                                                              c10::DispatchKeySet(c10::DispatchKey::PrivateUse1),
                                                              c10::scalarTypeToTypeMeta(st));
    out.unsafeGetTensorImpl()->set_sizes_and_strides(sizes, strides, ff_tensor_offset(raw));
    return out;
}

std::vector<at::Tensor> vjp(const Forward &f, const at::Tensor &grad, const std::vector<at::Tensor> &inputs,
                            const std::vector<bool> &want, const char *what)
{
    c10::DeviceIndex dev = device_of({&grad});
    struct Restore { /* FusionFlow's grad mode is per thread; put it back however we leave */
        bool prev;
        ~Restore() { ff_set_grad_enabled(prev); }
    } restore{ff_set_grad_enabled(true)};
    std::vector<Ref> leaves;
    std::vector<ff_tensor *> wanted;
    for (size_t i = 0; i < inputs.size(); i++) {
        leaves.push_back(inputs[i].defined() ? wrap(inputs[i]) : Ref());
        if (want[i] && leaves.back()) {
            check(ff_set_requires_grad(leaves.back().get(), true), what);
            wanted.push_back(leaves.back().get());
        }
    }
    std::vector<at::Tensor> out(inputs.size());
    if (wanted.empty()) return out;
    Ref y = own(f(leaves), what);
    Ref g = wrap(grad);
    std::vector<ff_tensor *> grads(wanted.size(), nullptr);
    check(ff_autograd_grad(y.get(), g.get(), (int)wanted.size(), wanted.data(), grads.data(), nullptr), what);
    std::vector<Ref> owned;
    for (ff_tensor *gi : grads) owned.emplace_back(gi); /* all owned before anything can throw */
    for (size_t i = 0, k = 0; i < inputs.size(); i++)
        if (want[i] && leaves[i]) {
            Ref &gi = owned[k++];
            out[i] = gi ? unwrap(std::move(gi), dev) : at::zeros_like(inputs[i]);
        }
    return out;
}

} // namespace ffd
