/* FusionFlow backends as PyTorch devices: privateuseone:N is the N-th backend
 * registered here, with its allocator and the device guard PyTorch's dispatcher and
 * autograd engine ask for. A device index never changes meaning once given out. */
#include <c10/core/impl/DeviceGuardImplInterface.h>

#include <mutex>
#include <vector>

#include "ffd.h"

namespace ffd {
namespace {

/* PyTorch's autograd engine sizes its per-device queues by deviceCount() once, at the
 * first backward pass, so the count is the registry's capacity, not how many backends
 * are registered yet: a backend registered after that first backward still gets a queue.
 * The engine starts one (idle) thread per index. */
constexpr int kMaxDevices = 8;

std::mutex registry_mutex;
ff_backend *registry[kMaxDevices]; /* written under the mutex, once per slot */
std::atomic<int> registry_count{0};

thread_local c10::DeviceIndex current_device = 0;

void release_owner(void *owner) { ff_tensor_release(static_cast<ff_tensor *>(owner)); }

struct Allocator final : c10::Allocator {
    c10::DataPtr allocate(size_t nbytes) const override { return ffd::allocate(current_device, nbytes); }
};
Allocator the_allocator;

/* One device, one in-order queue: FusionFlow backends order their own work, so the
 * default stream is the only stream and needs no events. */
struct Guard final : c10::impl::DeviceGuardImplInterface {
    c10::DeviceType type() const override { return c10::DeviceType::PrivateUse1; }
    c10::Device exchangeDevice(c10::Device d) const override
    {
        c10::Device old = getDevice();
        setDevice(d);
        return old;
    }
    c10::Device getDevice() const override { return c10::Device(c10::DeviceType::PrivateUse1, current_device); }
    void setDevice(c10::Device d) const override
    {
        TORCH_CHECK(d.type() == c10::DeviceType::PrivateUse1, "fusionflow device guard: got a ", d.type(), " device");
        if (d.index() >= 0) current_device = d.index();
    }
    void uncheckedSetDevice(c10::Device d) const noexcept override
    {
        if (d.index() >= 0) current_device = d.index();
    }
    c10::Stream getStream(c10::Device d) const noexcept override
    {
        return c10::Stream(c10::Stream::DEFAULT, c10::Device(c10::DeviceType::PrivateUse1, d.index()));
    }
    c10::Stream exchangeStream(c10::Stream s) const noexcept override { return s; }
    c10::DeviceIndex deviceCount() const noexcept override { return (c10::DeviceIndex)kMaxDevices; }
    void synchronizeStream(const c10::Stream &s) const override
    {
        check(ff_backend_sync(backend_at(s.device_index())), "synchronize");
    }
};

} // namespace

C10_REGISTER_GUARD_IMPL(PrivateUse1, Guard);

ff_backend *backend_at(c10::DeviceIndex index)
{
    int n = registry_count.load();
    TORCH_CHECK(index >= 0 && index < n, "fusionflow device: privateuseone:", (int)index,
                " is not a FusionFlow backend (", n, " registered; use fusionflow.torch_device.device(name))");
    return registry[index];
}

c10::DeviceIndex backend_index(const std::string &name)
{
    ff_backend *be = ff_backend_load(name.c_str());
    TORCH_CHECK(be, "fusionflow device: ", ff_last_error());
    std::lock_guard<std::mutex> lock(registry_mutex);
    int n = registry_count.load();
    for (int i = 0; i < n; i++)
        if (registry[i] == be) return (c10::DeviceIndex)i;
    TORCH_CHECK(n < kMaxDevices, "fusionflow device: at most ", kMaxDevices, " backends can be devices");
    registry[n] = be;
    registry_count.store(n + 1);
    return (c10::DeviceIndex)n;
}

c10::Allocator *allocator() { return &the_allocator; }

c10::DataPtr allocate(c10::DeviceIndex index, size_t nbytes)
{
    ff_backend *be = backend_at(index);
    int64_t n = (int64_t)nbytes;
    Ref owner = own(ff_empty_on(be, 1, &n, FF_U8), "allocate");
    void *buf = ff_tensor_buffer(owner.get(), nullptr);
    return c10::DataPtr(buf, owner.release(), release_owner, c10::Device(c10::DeviceType::PrivateUse1, index));
}

} // namespace ffd

namespace {

int64_t op_backend_index(const std::string &name) { return ffd::backend_index(name); }

std::string op_backend_name(int64_t index)
{
    return ff_backend_name(ffd::backend_at((c10::DeviceIndex)index));
}

} // namespace

TORCH_LIBRARY(fusionflow, m)
{
    m.def("backend_index(str name) -> int", &op_backend_index);
    m.def("backend_name(int index) -> str", &op_backend_name);
}

/* Registered when the library loads, so that storage-level code (torch.load's
 * untyped storages, resize of a storage) allocates on the current device's backend. */
static int register_allocator = [] {
    c10::SetAllocator(c10::DeviceType::PrivateUse1, ffd::allocator());
    return 0;
}();
