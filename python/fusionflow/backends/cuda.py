"""torch.backends.cuda: the matmul precision flags (recorded only) and is_built."""
import types

from .. import cuda as _cuda

matmul = types.SimpleNamespace(allow_tf32=False, allow_fp16_reduced_precision_reduction=True)


def is_built():
    return _cuda.is_available()
