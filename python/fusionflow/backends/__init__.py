"""fusionflow.backends: torch.backends' flags, as module attributes a program may read and
assign (`torch.backends.cudnn.benchmark = True`, `import torch.backends.cudnn as cudnn`).

They are recorded, not acted on: FusionFlow's cuda backend has no TF32 or cuDNN paths to
switch and its results do not depend on them (a program that sets them runs as it would on
PyTorch with the flags honoured, up to TF32's rounding). The backends themselves are
listed by fusionflow.loaded_backends() (this name held that function before)."""
from . import cuda, cudnn, mkl, mkldnn, mps, openmp, opt_einsum  # noqa: F401

__all__ = ["cuda", "cudnn", "mps", "mkldnn", "mkl", "openmp", "opt_einsum"]
