/* Memory of the device: tensor creation, views, resizing, and copies between the
 * device and the host, device and device. Views are PyTorch's own (a TensorImpl over
 * the same storage); only the kernels that touch bytes go to FusionFlow. */
#include <ATen/EmptyTensor.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/_reshape_alias_native.h>
#include <ATen/ops/as_strided_native.h>
#include <ATen/ops/unfold_native.h>
#include <ATen/ops/view_native.h>

#include <c10/core/DeviceGuard.h>

#include "ffd.h"

namespace ffd {

/* The casting rule of PyTorch's in-place and out= forms. */
static void check_cast(const at::Tensor &result, const at::Tensor &dst)
{
    TORCH_CHECK(at::canCast(result.scalar_type(), dst.scalar_type()), "result type ", result.scalar_type(),
                " can't be cast to the desired output type ", dst.scalar_type());
}

at::Tensor &assign(at::Tensor &self, const at::Tensor &result)
{
    check_cast(result, self);
    self.copy_(result);
    return self;
}

at::Tensor &assign_out(at::Tensor &out, const at::Tensor &result)
{
    check_cast(result, out);
    at::native::resize_output(out, result.sizes());
    out.copy_(result);
    return out;
}

std::tuple<at::Tensor &, at::Tensor &> assign_out(at::Tensor &out0, at::Tensor &out1,
                                                  const std::tuple<at::Tensor, at::Tensor> &results)
{
    assign_out(out0, std::get<0>(results));
    assign_out(out1, std::get<1>(results));
    return std::tuple<at::Tensor &, at::Tensor &>(out0, out1);
}

namespace {

c10::DeviceIndex index_of(c10::optional<at::Device> device)
{
    c10::Device d = device.value_or(c10::Device(c10::DeviceType::PrivateUse1, 0));
    TORCH_CHECK(d.type() == c10::DeviceType::PrivateUse1, "fusionflow device: empty on ", d);
    return d.has_index() ? d.index() : c10::impl::getDeviceGuardImpl(d.type())->getDevice().index();
}

const c10::DispatchKeySet device_keys(c10::DispatchKey::PrivateUse1);

at::Tensor empty(c10::SymIntArrayRef size, c10::optional<at::ScalarType> dtype, c10::optional<at::Layout> layout,
                 c10::optional<at::Device> device, c10::optional<bool> pin, c10::optional<at::MemoryFormat> fmt)
{
    TORCH_CHECK(layout.value_or(at::kStrided) == at::kStrided, "fusionflow device: only strided tensors");
    (void)pin;
    c10::DeviceGuard guard(c10::Device(c10::DeviceType::PrivateUse1, index_of(device)));
    return at::detail::empty_generic(c10::asIntArrayRefSlow(size), allocator(), device_keys,
                                     dtype.value_or(at::get_default_dtype_as_scalartype()), fmt);
}

at::Tensor empty_strided(c10::SymIntArrayRef size, c10::SymIntArrayRef stride, c10::optional<at::ScalarType> dtype,
                         c10::optional<at::Layout> layout, c10::optional<at::Device> device, c10::optional<bool> pin)
{
    TORCH_CHECK(layout.value_or(at::kStrided) == at::kStrided, "fusionflow device: only strided tensors");
    (void)pin;
    c10::DeviceGuard guard(c10::Device(c10::DeviceType::PrivateUse1, index_of(device)));
    return at::detail::empty_strided_generic(c10::asIntArrayRefSlow(size), c10::asIntArrayRefSlow(stride), allocator(),
                                             device_keys, dtype.value_or(at::get_default_dtype_as_scalartype()));
}

at::Tensor as_strided(const at::Tensor &self, c10::SymIntArrayRef size, c10::SymIntArrayRef stride,
                      c10::optional<c10::SymInt> offset)
{
    c10::optional<int64_t> o;
    if (offset) o = offset->expect_int();
    return at::native::as_strided_tensorimpl(self, c10::asIntArrayRefSlow(size), c10::asIntArrayRefSlow(stride), o);
}

at::Tensor view(const at::Tensor &self, c10::SymIntArrayRef size)
{
    return at::native::view(self, c10::asIntArrayRefSlow(size));
}

at::Tensor reshape_alias(const at::Tensor &self, c10::SymIntArrayRef size, c10::SymIntArrayRef stride)
{
    return at::native::_reshape_alias(self, c10::asIntArrayRefSlow(size), c10::asIntArrayRefSlow(stride));
}

/* A u8 view of bytes [0, n) of memory on backend be, alive for the view's lifetime. */
Ref bytes_of(ff_backend *be, void *buf, size_t nbytes, int64_t n)
{
    int64_t one = 1;
    return own(ff_tensor_from_buffer(be, buf, nbytes, FF_U8, 1, &n, &one, 0, nullptr, nullptr), "resize_");
}

const at::Tensor &resize_(const at::Tensor &self, c10::SymIntArrayRef size, c10::optional<at::MemoryFormat> fmt)
{
    at::IntArrayRef sizes = c10::asIntArrayRefSlow(size);
    c10::TensorImpl *impl = self.unsafeGetTensorImpl();
    size_t need = at::detail::computeStorageNbytesContiguous(sizes, self.dtype().itemsize(), self.storage_offset());
    c10::Storage storage = self.storage();
    if (need > storage.nbytes()) {
        TORCH_CHECK(storage.resizable(), "fusionflow device: resize_ of a storage that is not resizable");
        ff_backend *be = backend_at(self.device().index());
        c10::DataPtr grown = allocate(self.device().index(), need);
        int64_t keep = (int64_t)storage.nbytes();
        if (keep)
            check(ff_copy_(bytes_of(be, grown.get(), need, keep).get(),
                           bytes_of(be, storage.data(), storage.nbytes(), keep).get()),
                  "resize_");
        storage.set_data_ptr_noswap(std::move(grown));
        storage.set_nbytes(need);
    }
    impl->set_sizes_contiguous(sizes);
    if (fmt) impl->empty_tensor_restride(*fmt);
    return self;
}

/* Device -> device on one backend: FusionFlow's strided copy (broadcasting, casting). */
void copy_on_device(const at::Tensor &dst, const at::Tensor &src)
{
    check(ff_copy_(wrap(dst).get(), wrap(src).get()), "copy_");
}

at::Tensor &copy_(at::Tensor &self, const at::Tensor &src, bool non_blocking)
{
    (void)non_blocking; /* a FusionFlow backend orders its transfers itself */
    if (self.numel() == 0) return self;
    if (self.is_same(src)) return self;
    /* PyTorch's rule (its TensorIterator's overlap checks): no element of self written
     * twice (an expanded self, in-place ops on it included), no partial overlap with src */
    at::assert_no_internal_overlap(self);
    if (on_device(self) && on_device(src)) at::assert_no_partial_overlap(self, src);
    if (on_device(self) && on_device(src)) {
        if (self.device() == src.device() || backend_at(self.device().index()) == backend_at(src.device().index()))
            copy_on_device(self, src);
        else
            self.copy_(src.cpu());
        return self;
    }
    if (on_device(self)) { /* host -> device: one upload of a contiguous host copy in self's dtype */
        at::Tensor host = src.to(at::kCPU, self.scalar_type()).expand(self.sizes()).contiguous();
        check(ff_copy_from_host_(wrap(self).get(), host.data_ptr(), host.nbytes()), "copy_ to the device");
        return self;
    }
    /* device -> host: one download, then PyTorch's own copy for dtype and strides */
    at::Tensor host = at::empty(src.sizes(), src.options().device(at::kCPU));
    check(ff_tensor_to_host(wrap(src).get(), host.data_ptr(), host.nbytes()), "copy_ to the host");
    self.copy_(host);
    return self;
}

at::Tensor copy_from(const at::Tensor &self, const at::Tensor &dst, bool non_blocking)
{
    at::Tensor d = dst;
    copy_(d, self, non_blocking);
    return dst;
}

at::Tensor copy_from_and_resize(const at::Tensor &self, const at::Tensor &dst)
{
    at::native::resize_output(dst, self.sizes());
    at::Tensor d = dst;
    copy_(d, self, false);
    return dst;
}

/* torch.load and Tensor.set_: self views an existing storage of this device. */
at::Tensor &set_storage(at::Tensor &self, at::Storage source, c10::SymInt offset, c10::SymIntArrayRef size,
                        c10::SymIntArrayRef stride)
{
    TORCH_CHECK(source.device() == self.device(), "fusionflow device: set_ of a ", self.device(),
                " tensor to a storage on ", source.device());
    at::IntArrayRef sizes = c10::asIntArrayRefSlow(size), strides = c10::asIntArrayRefSlow(stride);
    int64_t off = offset.expect_int();
    TORCH_CHECK(off >= 0, "fusionflow device: set_ with negative storage offset ", off);
    size_t need = strides.empty() ? at::detail::computeStorageNbytesContiguous(sizes, self.dtype().itemsize(), off)
                                  : at::detail::computeStorageNbytes(sizes, strides, self.dtype().itemsize(), off);
    TORCH_CHECK(need <= source.nbytes(), "fusionflow device: set_ needs ", need, " bytes of a ", source.nbytes(),
                "-byte storage");
    c10::TensorImpl *impl = self.unsafeGetTensorImpl();
    impl->set_storage_keep_dtype(std::move(source));
    if (strides.empty())
        impl->set_sizes_contiguous(sizes), impl->set_storage_offset(off);
    else
        impl->set_sizes_and_strides(sizes, strides, off);
    return self;
}

at::Tensor &set_whole_storage(at::Tensor &self, at::Storage source)
{
    c10::SymInt n((int64_t)(source.nbytes() / self.dtype().itemsize()));
    return set_storage(self, std::move(source), c10::SymInt(0), c10::SymIntArrayRef(&n, 1), {});
}

at::Tensor &fill_tensor_(at::Tensor &self, const at::Tensor &value)
{
    TORCH_CHECK(value.dim() == 0, "fill_ only supports 0-dimension value tensor but got tensor with ", value.dim(),
                " dimensions.");
    if (self.numel() == 0) return self;
    Ref s = operand(value, backend_at(self.device().index()), self.scalar_type());
    check(ff_copy_(wrap(self).get(), s.get()), "fill_");
    return self;
}

at::Tensor &fill_(at::Tensor &self, const at::Scalar &value)
{
    if (self.numel() == 0) return self;
    if (value.isComplex()) return fill_tensor_(self, at::scalar_tensor(value, at::TensorOptions().dtype(self.scalar_type())));
    ff_backend *be = backend_at(self.device().index());
    Ref s = own(ff_number_tensor_on(be, number_of(value), dtype_of(self.scalar_type())), "fill_");
    check(ff_copy_(wrap(self).get(), s.get()), "fill_");
    return self;
}

at::Tensor &zero_(at::Tensor &self)
{
    if (self.numel()) check(ff_zero_(wrap(self).get()), "zero_");
    return self;
}

/* Whether `from`'s TensorImpl can be shallow-copied into self's: what Module.to() asks
 * before it moves a parameter in place (param.data = moved) instead of making a new
 * Parameter. PyTorch 1.13 answers yes only between dense CPU/CUDA/MPS/HIP/XPU tensors,
 * so without this an optimizer built before model.to(device) would keep the old
 * parameters. Dense strided tensors of the host and this device are compatible. */
bool compatible_shallow_copy(const at::Tensor &self, const at::Tensor &from)
{
    auto plain = [](const at::Tensor &t) {
        return t.layout() == at::kStrided && !t.is_quantized() && !t.is_nested() &&
               (t.device().is_cpu() || on_device(t));
    };
    return plain(self) && plain(from);
}

at::Scalar local_scalar_dense(const at::Tensor &self)
{
    at::Tensor host = at::empty({}, self.options().device(at::kCPU));
    check(ff_tensor_to_host(wrap(self).get(), host.data_ptr(), host.nbytes()), "item");
    return host.item();
}

} // namespace
} // namespace ffd

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m)
{
    using namespace ffd;
    m.impl("empty.memory_format", TORCH_FN(empty));
    m.impl("empty_strided", TORCH_FN(empty_strided));
    m.impl("as_strided", TORCH_FN(as_strided));
    m.impl("view", TORCH_FN(view));
    m.impl("_reshape_alias", TORCH_FN(reshape_alias));
    m.impl("unfold", TORCH_FN(at::native::unfold));
    m.impl("resize_", TORCH_FN(resize_));
    m.impl("copy_", TORCH_FN(copy_));
    m.impl("_copy_from", TORCH_FN(copy_from));
    m.impl("_copy_from_and_resize", TORCH_FN(copy_from_and_resize));
    m.impl("set_.source_Storage_storage_offset", TORCH_FN(set_storage));
    m.impl("set_.source_Storage", TORCH_FN(set_whole_storage));
    m.impl("fill_.Scalar", TORCH_FN(fill_));
    m.impl("fill_.Tensor", TORCH_FN(fill_tensor_));
    m.impl("zero_", TORCH_FN(zero_));
    m.impl("_local_scalar_dense", TORCH_FN(local_scalar_dense));
    m.impl("_has_compatible_shallow_copy_type", TORCH_FN(compatible_shallow_copy));
}

/* _has_compatible_shallow_copy_type is CompositeImplicitAutograd: with a kernel of the
 * backend's own, the autograd key needs one too (the op returns a bool, nothing to record). */
TORCH_LIBRARY_IMPL(aten, AutogradPrivateUse1, m)
{
    m.impl("_has_compatible_shallow_copy_type", TORCH_FN(ffd::compatible_shallow_copy));
}
