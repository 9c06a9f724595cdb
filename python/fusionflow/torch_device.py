"""FusionFlow backends as a PyTorch device (PyTorch's PrivateUse1 dispatch key).

    import torch
    import fusionflow.torch_device as ffd
    dev = ffd.device("cpu_blas")          # or "cpu", "opencl", "cuda", a plugin path
    model = model.to(dev)                 # PyTorch's own autograd, optimizers, DataLoader

PyTorch keeps everything above the kernels (autograd, views, in-place rules, complex
numbers, distributions, checkpoints); the tensors live in the backend's memory and the
ATen kernels (torch_device/, C++) run FusionFlow's C ops on them. An ATen op with no
FusionFlow kernel and no decomposition runs on PyTorch's CPU kernel through copies: it
warns once per op and is counted in fallback_counts(); strict(True) makes it an error.

On PyTorch 1.13 the device prints as privateuseone:N; where PyTorch can rename the key
(2.1 and later) it is fusionflow:N.
"""
import contextlib
import os

import torch

from . import _dlpack, _lib

__all__ = ["device", "backend_name", "fallback_counts", "reset_fallback_counts", "strict", "to_dlpack", "from_dlpack",
           "library_path"]


def _load():
    path = os.path.join(os.path.dirname(os.path.abspath(_lib.library_path)), "libfusionflow_torch.so")
    if not os.path.exists(path):
        raise ImportError("fusionflow.torch_device: %s is missing; it is built beside libfusionflow when CMake finds "
                          "libtorch (apt-get install libtorch-dev, then rebuild)" % path)
    torch.ops.load_library(path)
    rename = getattr(torch.utils, "rename_privateuse1_backend", None)
    if rename is not None:
        rename("fusionflow")
    return path


library_path = _load()
_ops = torch.ops.fusionflow
# the device type's name: "privateuseone" on 1.13, "fusionflow" where _load could rename it
_TYPE = getattr(torch._C, "_get_privateuse1_backend_name", lambda: "privateuseone")()


def _install_pickling():
    """torch.save of tensors on the device, through host memory.

    PyTorch 1.13 saves a device tensor's storage with UntypedStorage.cpu(), which knows
    CPU and CUDA storages only; for a privateuseone tensor without storage it pickles the
    values instead (as for XLA). Ours have storage, so they take that second path here:
    the values, the dtype and the device string, rebuilt by torch.load with .to(device)
    (this module imported first, its backends registered in the same order). Aliasing
    between saved views is not kept, as with XLA's tensors.
    """
    original = torch.Tensor._reduce_ex_internal

    def reduce_ex_internal(self, proto):
        if self.device.type != _TYPE:
            return original(self, proto)
        host = self.detach().cpu()
        if host.dtype == torch.bfloat16:  # NumPy has no bfloat16; the rebuild casts back
            host = host.to(torch.float32)
        return (torch._utils._rebuild_device_tensor_from_numpy,
                (host.numpy(), self.dtype, str(self.device), self.requires_grad))

    torch.Tensor._reduce_ex_internal = reduce_ex_internal


_install_pickling()


def _install_deepcopy():
    """copy.deepcopy of a tensor on the device (a model's EMA copy, a best-model snapshot).

    PyTorch 1.13 deep-copies a tensor through its storage's clone(), which knows CPU and
    CUDA storages only (it clones privateuseone tensors without storage); ours clone."""
    original = torch.Tensor.__deepcopy__

    def deepcopy(self, memo):
        if type(self) is not torch.Tensor or self.device.type != _TYPE or not self.is_leaf or id(self) in memo:
            return original(self, memo)
        with torch.no_grad():
            new = self.clone()
        new.requires_grad_(self.requires_grad)
        if self.grad is not None:
            new.grad = deepcopy(self.grad, memo)
        memo[id(self)] = new
        return new

    torch.Tensor.__deepcopy__ = deepcopy


def _install_seeding():
    """torch.manual_seed also seeds FusionFlow's generator (the device's random numbers),
    as it seeds CUDA's."""
    original = torch.manual_seed

    def manual_seed(seed):
        _ops.manual_seed(int(seed) & 0x7FFFFFFFFFFFFFFF)
        return original(seed)

    manual_seed.__doc__ = original.__doc__
    torch.manual_seed = manual_seed
    torch.random.manual_seed = manual_seed


_install_deepcopy()
_install_seeding()


def _storage_tag(storage):
    if storage.device.type == _TYPE:
        return str(storage.device)


def _storage_restore(storage, location):
    """torch.load(..., map_location=<this device>) of a checkpoint's host storages.

    PyTorch 1.13 cannot set_() a tensor to a privateuseone storage from Python (its argument
    parser knows CPU and CUDA storages), so the storage stays on the host, marked with its
    destination, and each tensor rebuilt over it is moved there (_rebuild_tensor below)."""
    if not location.startswith(_TYPE):
        return None
    storage._ffd_device = torch.device(location)
    return storage


def _install_rebuild():
    original = torch._utils._rebuild_tensor

    def rebuild_tensor(storage, storage_offset, size, stride):
        t = original(storage, storage_offset, size, stride)
        dev = getattr(storage.untyped(), "_ffd_device", None)
        return t.to(dev) if dev is not None else t

    torch._utils._rebuild_tensor = rebuild_tensor


_install_rebuild()
torch.serialization.register_package(25, _storage_tag, _storage_restore)


def device(backend="cpu_blas"):
    """The torch.device of FusionFlow backend `backend` (a name or a plugin path), loaded once."""
    if isinstance(backend, torch.device):
        return backend
    return torch.device(_TYPE, _ops.backend_index(str(backend)))


_device = device  # for functions whose argument is named device, as in PyTorch


def to_dlpack(tensor):
    """A DLPack capsule over the memory of a tensor on the device, without copying.

    PyTorch 1.13's own DLPack code knows CPU and CUDA tensors only; this module routes
    torch.utils.dlpack.to_dlpack and Tensor.__dlpack__ / __dlpack_device__ here for device
    tensors, so NumPy, FusionFlow's own front end and torch.from_dlpack take them. A host
    backend's memory is exported as kDLCPU; a backend whose memory is elsewhere exports its
    own DLPack device, or refuses."""
    if not isinstance(tensor, torch.Tensor) or tensor.device.type != _TYPE:
        raise TypeError("fusionflow.torch_device.to_dlpack: expected a tensor on a FusionFlow device, got %s"
                        % (tensor.device if isinstance(tensor, torch.Tensor) else type(tensor).__name__))
    return _dlpack.capsule_of(_ops.to_dlpack(tensor.detach()))


def from_dlpack(x, device=None):
    """A tensor on FusionFlow device `device` (default: device()) over the memory of x: a
    CPU torch tensor, a NumPy array, a FusionFlow tensor, anything with __dlpack__, or an
    unconsumed DLPack capsule. On a host-memory backend (cpu, cpu_blas) it shares x's memory
    (writes show through both ways); on opencl the values are copied once."""
    dev = _device(device if device is not None else "cpu_blas")
    if dev.type != _TYPE:
        raise ValueError("fusionflow.torch_device.from_dlpack: %s is not a FusionFlow device" % dev)
    if isinstance(x, torch.Tensor):
        capsule = to_dlpack(x) if x.device.type == _TYPE else _torch_to_dlpack(x.detach())
    elif hasattr(x, "__dlpack__"):
        capsule = x.__dlpack__()
    else:
        capsule = x
    t = _ops.from_dlpack(_dlpack.capsule_pointer(capsule), dev.index if dev.index is not None else 0)
    _dlpack.mark_consumed(capsule)  # the tensor owns the memory now; the capsule must not free it
    return t


_torch_to_dlpack = torch.utils.dlpack.to_dlpack


def _install_dlpack():
    """torch.utils.dlpack.to_dlpack, torch.to_dlpack and Tensor.__dlpack_device__ for
    tensors on the device (Tensor.__dlpack__ calls torch.to_dlpack)."""
    from torch.utils.dlpack import DLDeviceType

    def to_dlpack_any(tensor):
        if isinstance(tensor, torch.Tensor) and tensor.device.type == _TYPE:
            return to_dlpack(tensor)
        return _torch_to_dlpack(tensor)

    to_dlpack_any.__doc__ = _torch_to_dlpack.__doc__
    torch.utils.dlpack.to_dlpack = torch.to_dlpack = to_dlpack_any
    original_device = torch.Tensor.__dlpack_device__

    def dlpack_device(self):
        if type(self) is torch.Tensor and self.device.type == _TYPE:
            kind, index = _ops.dlpack_device(self.device.index)
            return (DLDeviceType(kind) if kind in DLDeviceType._value2member_map_ else kind, index)
        return original_device(self)

    torch.Tensor.__dlpack_device__ = dlpack_device


_install_dlpack()


def backend_name(dev):
    """The FusionFlow backend behind a device of this module ("cpu_blas", ...)."""
    dev = torch.device(dev)
    return _ops.backend_name(dev.index if dev.index is not None else 0)


def fallback_counts():
    """{aten op name: calls} of the ops that ran on PyTorch's CPU kernel since the last reset."""
    return dict(zip(_ops.fallback_names(), _ops.fallback_counts()))


def reset_fallback_counts():
    _ops.reset_fallback_counts()


@contextlib.contextmanager
def strict(on=True):
    """Within the block, an op with no FusionFlow kernel is an error instead of a CPU fallback."""
    before = _ops.set_strict(bool(on))
    try:
        yield
    finally:
        _ops.set_strict(before)
