/* The device and other libraries: DLPack both ways, and pinned host memory.
 *
 * PyTorch 1.13's own DLPack code knows CPU and CUDA tensors only ("Cannot pack tensors on
 * privateuseone"), so the exchange goes through FusionFlow's (io/dlpack.c): a device
 * tensor is exported as the FusionFlow view over its memory, and a capsule is imported
 * onto a backend zero-copy where that backend can see the memory. The Python side
 * (fusionflow/torch_device.py) makes and consumes the capsules. */
#include "ff/io.h"

#include "ffd.h"

namespace {

/* The address of a DLManagedTensor over t's memory (kDLCPU on host backends, the backend's
 * own DLPack device otherwise); it keeps t's storage alive until its deleter runs. */
int64_t op_to_dlpack(const at::Tensor &t)
{
    TORCH_CHECK(ffd::on_device(t), "fusionflow.torch_device.to_dlpack: a tensor on ", t.device(),
                ", not on a FusionFlow device");
    ffd::Ref v = ffd::wrap(t);
    DLManagedTensor *m = ff_to_dlpack(v.get());
    TORCH_CHECK(m, "fusionflow.torch_device.to_dlpack: ", ff_last_error());
    return (int64_t)(intptr_t)m;
}

/* A tensor on privateuseone:index over the memory of DLManagedTensor m, which it then
 * owns (zero copy on a host-memory backend; an opencl backend copies and frees m at
 * once). On failure m is untouched: the caller's capsule still owns it. */
at::Tensor op_from_dlpack(int64_t m, int64_t index)
{
    TORCH_CHECK(m != 0, "fusionflow.torch_device.from_dlpack: a null DLManagedTensor");
    ff_backend *be = ffd::backend_at((c10::DeviceIndex)index);
    ff_tensor *t = ff_from_dlpack_on(be, reinterpret_cast<DLManagedTensor *>((intptr_t)m));
    TORCH_CHECK(t, "fusionflow.torch_device.from_dlpack: ", ff_last_error());
    return ffd::unwrap(ffd::Ref(t), (c10::DeviceIndex)index);
}

/* (DLPack device type, device id) of privateuseone:index's memory: (kDLCPU, 0) for a
 * host-memory backend. */
std::vector<int64_t> op_dlpack_device(int64_t index)
{
    int32_t type = 0, id = 0;
    ffd::check(ff_backend_dlpack_device(ffd::backend_at((c10::DeviceIndex)index), &type, &id), "__dlpack_device__");
    return {type, id};
}

/* Pinned memory for transfers to this device (DataLoader(pin_memory=True,
 * pin_memory_device=...), Tensor.pin_memory(device)): a backend's upload takes any host
 * memory at the same speed and returns when the copy is done, so every dense CPU tensor
 * already counts as pinned and pinning is the identity. */
bool is_pinned(const at::Tensor &self, c10::optional<at::Device> device)
{
    (void)device;
    return self.device().is_cpu() && self.layout() == at::kStrided;
}

at::Tensor pin_memory(const at::Tensor &self, c10::optional<at::Device> device)
{
    TORCH_CHECK(is_pinned(self, device), "fusionflow device: pin_memory of a ", self.device(), " ", self.layout(),
                " tensor; only dense CPU tensors can be pinned");
    return self;
}

} // namespace

TORCH_LIBRARY_FRAGMENT(fusionflow, m)
{
    m.def("to_dlpack(Tensor self) -> int", &op_to_dlpack);
    m.def("from_dlpack(int managed, int index) -> Tensor", &op_from_dlpack);
    m.def("dlpack_device(int index) -> int[]", &op_dlpack_device);
}

/* is_pinned and _pin_memory dispatch on their device argument (PyTorch's BackendSelect),
 * so a CPU tensor reaches these with device = privateuseone:N. */
TORCH_LIBRARY_IMPL(aten, PrivateUse1, m)
{
    m.impl("is_pinned", TORCH_FN(is_pinned));
    m.impl("_pin_memory", TORCH_FN(pin_memory));
}
