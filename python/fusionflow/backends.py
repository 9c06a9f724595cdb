"""fusionflow.backends: torch.backends' flags, as attributes a program may read and assign.

They are recorded, not acted on: FusionFlow's cuda backend has no TF32 or cuDNN paths to
switch and its results do not depend on them (a program that sets them runs as it would on
PyTorch with the flags honoured, up to TF32's rounding). The backends themselves are
listed by fusionflow.loaded_backends() (this name held that function before)."""
import types

from . import cuda as _cuda

__all__ = ["cuda", "cudnn", "mps", "mkldnn", "mkl", "openmp", "opt_einsum"]


def _false():
    return False


def _true():
    return True


cuda = types.SimpleNamespace(
    matmul=types.SimpleNamespace(allow_tf32=False, allow_fp16_reduced_precision_reduction=True),
    is_built=_cuda.is_available,
)
cudnn = types.SimpleNamespace(enabled=True, benchmark=False, deterministic=False, allow_tf32=True,
                              is_available=_false, version=lambda: None)
mps = types.SimpleNamespace(is_available=_false, is_built=_false)
mkldnn = types.SimpleNamespace(enabled=True, is_available=_false)
mkl = types.SimpleNamespace(is_available=_false)
openmp = types.SimpleNamespace(is_available=_true)
opt_einsum = types.SimpleNamespace(enabled=False, is_available=_false)
