/* The FusionFlow PyTorch device (PyTorch's PrivateUse1 key): what its files share.
 *
 * A tensor on privateuseone:N lives in memory that FusionFlow backend N allocated (its
 * DataPtr's context is the FusionFlow tensor that owns the bytes). A kernel wraps each
 * ATen operand as a FusionFlow view over that same memory (wrap), runs FusionFlow's C op,
 * and hands the result back as an ATen tensor owning the FusionFlow result (unwrap).
 * PyTorch keeps everything above the kernels: autograd, views, in-place rules. */
#pragma once

#include <ATen/ATen.h>
#include <torch/library.h>

#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "ff/ff.h"

namespace ffd {

/* ---- devices (ffd_device.cpp) ------------------------------------------ */
/* The backend behind privateuseone:index (throws for an index never registered). */
ff_backend *backend_at(c10::DeviceIndex index);
/* privateuseone:N for a FusionFlow backend name or plugin path, loading it once. */
c10::DeviceIndex backend_index(const std::string &name_or_path);
c10::Allocator *allocator();
/* A DataPtr of nbytes on device index: backend memory owned by a FusionFlow u8 tensor. */
c10::DataPtr allocate(c10::DeviceIndex index, size_t nbytes);

/* ---- FusionFlow tensors in ATen's clothes (ffd_tensor.cpp) -------------- */
struct Release {
    void operator()(ff_tensor *t) const { ff_tensor_release(t); }
};
using Ref = std::unique_ptr<ff_tensor, Release>;

/* Throws PyTorch's error carrying FusionFlow's message when st is not FF_OK. */
void check(ff_status st, const char *what);
/* Takes a new reference returned by a FusionFlow op, throwing on NULL. */
Ref own(ff_tensor *t, const char *what);

ff_dtype dtype_of(at::ScalarType st);
/* A Python number (at::Scalar, real) as FusionFlow's number of the same kind: bool, all 64
 * bits of an int, or a float. */
ff_number number_of(const at::Scalar &s);
at::ScalarType scalar_type_of(ff_dtype dt);
bool on_device(const at::Tensor &t);
/* A FusionFlow view over t's memory (t on the device), keeping t's storage alive. */
Ref wrap(const at::Tensor &t);
/* wrap() of an optional tensor (a bias, a weight): an empty Ref when it is absent. */
Ref wrap_optional(const c10::optional<at::Tensor> &t);
/* An operand of a device op in dtype: t itself (cast when its dtype differs), or a CPU
 * 0-d tensor (a Python number PyTorch wrapped, or a scalar tensor) put on the backend. */
Ref operand(const at::Tensor &t, ff_backend *be, at::ScalarType dtype);
/* The ATen tensor on device dev for FusionFlow result r (consumed): it shares the
 * storage of an input when r views one, else it owns r's memory. */
at::Tensor unwrap(Ref r, c10::DeviceIndex dev, std::initializer_list<const at::Tensor *> inputs = {});
/* The device op's device: that of the first operand on the device. */
c10::DeviceIndex device_of(std::initializer_list<const at::Tensor *> ts);

/* d<f(inputs), grad>/d input for each input with want set (undefined elsewhere), by
 * FusionFlow's autograd: f runs on FusionFlow leaves over the inputs' memory, then its
 * backward kernels do the rest. For gradients FusionFlow has and PyTorch's formula would
 * rebuild from many ops (GELU); costs one more forward. */
using Forward = std::function<ff_tensor *(std::vector<Ref> &leaves)>;
std::vector<at::Tensor> vjp(const Forward &f, const at::Tensor &grad, const std::vector<at::Tensor> &inputs,
                            const std::vector<bool> &want, const char *what);

/* ---- in-place and out= forms from the functional one (ffd_memory.cpp) -- */
at::Tensor &assign(at::Tensor &self, const at::Tensor &result);
at::Tensor &assign_out(at::Tensor &out, const at::Tensor &result);
/* The out= form of an op with two results (values and indices). */
std::tuple<at::Tensor &, at::Tensor &> assign_out(at::Tensor &out0, at::Tensor &out1,
                                                  const std::tuple<at::Tensor, at::Tensor> &results);

} // namespace ffd
