"""FusionFlow: tensors with autograd over a C11 runtime, through ctypes.

    import fusionflow as ff
    x = ff.randn(4, 3, requires_grad=True)
    y = (x @ ff.ones(3, 2)).relu().sum()
    y.backward()
    x.grad.numpy()
"""
from ._lib import FusionFlowError, library_path
from ._dtype import (DType, float32, float64, int32, int64, uint8, bool_, float16, bfloat16, int8, int16, complex64,
                     complex128)
from ._tensor import (Tensor, tensor, as_tensor, from_numpy, zeros, ones, full, empty, eye, arange,
                      linspace, rand, randn, uniform, normal, zeros_like, ones_like, full_like, empty_like,
                      where, cat, concat, stack, split, chunk, no_grad, enable_grad, set_grad_enabled,
                      is_grad_enabled)
from ._grad_mode import inference_mode
from ._factories import rand_like, randn_like, randint_like
from ._shape import Size
from ._dlpack import from_dlpack
from ._io import save, load, save_npy, load_npy, load_metadata
from ._backend import loaded_backends, default_backend, set_default_backend
from ._device import device
from ._generator import Generator, default_generator
from ._threads import set_num_threads, get_num_threads
from ._compile import compile, graph_stats  # noqa: A001  (fusionflow.compile, as torch.compile)
from ._lib import C as _C
from ._args import named as _named
from . import amp, autograd, fft, nn, optim  # noqa: E402
from . import backends, cuda  # noqa: E402  (torch.backends' flags, torch.cuda)
from . import onnx  # noqa: E402  (torch.onnx: importable; export says it is not offered)
from . import _einops  # noqa: E402
_einops.register()  # einops takes fusionflow tensors, once it is imported (no dependency)
from . import utils  # noqa: E402  (fusionflow.utils.data)
from . import distributions  # noqa: E402  (torch.distributions: Normal, ..., kl_divergence)
from .amp import autocast  # noqa: E402  (fusionflow.autocast, as torch.autocast)
from . import _functions  # noqa: E402
from ._functions import *  # noqa: E402,F401,F403  (tan, sinh, isclose, kron, roll, ...)

from . import _sorting  # noqa: E402
from ._sorting import *  # noqa: E402,F401,F403  (sort, argsort, topk, kthvalue, median)

from . import linalg  # noqa: E402  (fusionflow.linalg, as torch.linalg)
from . import quantization  # noqa: E402  (int8: fusionflow.quantization.quantize_dynamic)
from .quantization import qint8, quint8, quantize_per_tensor, quantize_per_channel, dequantize  # noqa: E402

det, inverse, cholesky, qr, svd, solve, lstsq = (linalg.TORCH_FORMS[_n] for _n in linalg.TORCH_FUNCTIONS)
for _mod in (_functions, _sorting):
    for _n in _mod.TENSOR_METHODS:
        setattr(Tensor, _n, getattr(_mod, _n))
for _n in linalg.TENSOR_METHODS:
    setattr(Tensor, _n, linalg.TORCH_FORMS[_n])
del _n, _mod
from . import _methods  # noqa: E402  (the rest of torch.Tensor's methods, attached to Tensor)
from ._complex import view_as_real, view_as_complex, complex, polar, is_complex  # noqa: E402,A001
from ._methods import *  # noqa: E402,F401,F403  (strided; torch.hypot, addmm, quantile, ... as functions)
from ._methods_linalg import lu_unpack  # noqa: E402
from . import sparse  # noqa: E402  (torch.sparse: COO tensors, Tensor.to_sparse)
from .sparse import sparse_coo, sparse_coo_tensor, mm as spmm  # noqa: E402,F401

float = float32
double = float64
half = float16
long = int64
int = int32
short = int16
cfloat = complex64
cdouble = complex128
bool = bool_

__version__ = "0.1.0"


def manual_seed(seed):
    """Seeds the global generator used by rand/randn/dropout/init (and the host-side draws
    of samplers without a generator); returns fusionflow.default_generator, as torch."""
    return default_generator.manual_seed(seed)


def initial_seed():
    return default_generator.initial_seed()


def seed():
    """Seeds the global generator from the system's entropy; returns the seed."""
    return default_generator.seed()


def is_tensor(obj):
    return isinstance(obj, Tensor)


def result_type(a, b):
    """torch.result_type: the dtype of a op b (numbers are weak, 0-d tensors weaker than
    tensors with dimensions)."""
    from ._tensor import _operand
    from ._dtype import from_code
    if not isinstance(a, Tensor) and not isinstance(b, Tensor):
        a, b = tensor(a), tensor(b)
    ref = a if isinstance(a, Tensor) else b
    a, b = _operand(a, ref), _operand(b, ref)
    return from_code(_C.ff_result_type(a._ptr, b._ptr))


def _debug_live_tensors():
    """Number of C tensor headers alive (leak tests)."""
    return _C.ff_debug_live_tensors()


def _unary_fn(name):
    def f(x, *args, **kwargs):
        return getattr(as_tensor(x), name)(*args, **kwargs)
    f.__name__ = name
    return _named(f)


for _n in ("exp", "log", "log1p", "expm1", "sqrt", "rsqrt", "square", "reciprocal", "sin", "cos", "tanh",
           "sigmoid", "relu", "abs", "sign", "floor", "ceil", "round", "isnan", "isinf", "logical_not", "erf",
           "atan", "asin", "acos", "arctan", "arcsin", "arccos", "erfinv", "lgamma", "digamma",
           "sum", "mean", "prod", "amax", "amin", "argmax", "argmin", "var", "std", "logsumexp", "any", "all",
           "norm", "softmax", "log_softmax", "cumsum", "cumprod", "reshape", "flatten", "squeeze", "unsqueeze", "transpose",
           "permute", "clamp", "clip", "matmul", "outer", "max", "min", "maximum", "minimum", "flip", "tril",
           "triu", "gather", "index_select", "broadcast_to", "narrow", "clone", "detach", "numel", "pow",
           "add", "sub", "mul", "div", "eq", "ne", "lt", "le", "gt", "ge", "lerp", "silu", "softplus", "gelu",
           "tile", "repeat", "unbind", "scatter_add", "logical_and", "logical_or", "logical_xor", "fmod",
           "remainder", "floor_divide", "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not", "atan2",
           "arctan2"):
    globals()[_n] = _unary_fn(_n)
# errors name the function they were given to (_args.named), here as in _functions, _sorting
for _n in ("from_numpy", "zeros", "ones", "full", "empty", "eye", "arange", "linspace", "rand",
           "randn", "zeros_like", "ones_like", "full_like", "empty_like", "rand_like", "randn_like", "randint_like",
           "where", "cat", "concat", "stack", "split", "chunk"):
    globals()[_n] = _named(globals()[_n])
for _n in linalg.__all__:
    setattr(linalg, _n, _named(getattr(linalg, _n)))
del _n
from ._legacy_types import *  # noqa: E402,F401,F403  (FloatTensor, LongTensor, ...: torch's legacy types)

from . import _fastpath  # noqa: E402  (last: every method is attached by now)
from ._lib import ext_status as _ext_status_line  # noqa: E402

_fastpath.install()


def _ext_status():
    """Which front end runs: the C extension's fast paths, or ctypes alone (and why)."""
    return _ext_status_line
