"""fusionflow.torch_device op by op, on PyTorch's own op database (issue 51): every OpInfo of
torch.testing._internal's op_db, with its own sample inputs (shapes, strides, broadcasting,
0-d and empty tensors, keyword arguments), run on PyTorch's CPU and, in strict mode, on the
device. An op whose samples reach only FusionFlow kernels must give PyTorch's values and,
for float32, PyTorch's gradients; an op that reaches a kernel the device lacks is counted
as a fallback, not checked here (its values are PyTorch's CPU kernel's own). The number of
ops proven native may only grow: NATIVE_FLOOR is the count when this test was written.

op_db imports expecttest (PyPI) for its TestCase base only; a stand-in supplies it where
Debian's PyTorch comes without."""
import sys
import types
import unittest
import warnings

import pytest

torch = pytest.importorskip("torch")

from conftest import DEVICES, import_torch_device  # noqa: E402

ffd = import_torch_device()

if "expecttest" not in sys.modules:
    try:
        import expecttest  # noqa: F401
    except ImportError:
        stand_in = types.ModuleType("expecttest")
        stand_in.TestCase, stand_in.ACCEPT = unittest.TestCase, False
        sys.modules["expecttest"] = stand_in
from torch.testing._internal.common_methods_invocations import op_db  # noqa: E402

NATIVE_FLOOR = {torch.float32: 290, torch.float64: 305}
SAMPLES_PER_OP = 6
# values that are not functions of the inputs: random draws, uninitialised memory
NONDETERMINISTIC = {"uniform", "normal", "bernoulli", "multinomial", "empty", "empty_like", "new_empty",
                    "new_empty_strided", "rand_like", "randn_like", "randint_like", "nn.functional.dropout",
                    "nn.functional.dropout2d", "nn.functional.dropout3d", "nn.functional.alpha_dropout",
                    "nn.functional.feature_alpha_dropout", "nn.functional.rrelu", "randint", "cauchy",
                    "exponential", "geometric", "log_normal", "empty_strided", "nn.functional.gaussian_nll_loss",
                    "nn.functional._scaled_dot_product_attention"}  # its samples have dropout_p 0.5
# PyTorch 1.13's own gradient is wrong: as_strided_scatter_backward reads memory it never
# wrote (new_empty_strided), so its CPU gradient for self changes from run to run
WRONG_GRADIENT_IN_TORCH = {"as_strided_scatter"}
# refused by the device with a clear error, as PyTorch's CUDA would refuse or as documented
REFUSED = {
    "chalf": "ComplexHalf has no FusionFlow dtype",
    "tensor_split": "expected tensor_indices_or_sections to be on cpu",  # the harness moved a host-only argument
    "sparse.sampled_addmm": "Unsupported device type for SparseCsr layout",
}


def _to(x, d, grad=False):
    if torch.is_tensor(x):
        y = x.detach().to(d)
        return y.requires_grad_() if grad and y.is_floating_point() else y
    if isinstance(x, (list, tuple)):
        return type(x)(_to(v, d, grad) for v in x)
    if isinstance(x, dict):
        return {k: _to(v, d, grad) for k, v in x.items()}
    return x


def _tensors(y):
    if torch.is_tensor(y):
        return [y]
    if isinstance(y, (list, tuple)):
        return [t for v in y for t in _tensors(v)]
    return []


def _leaves(sample):
    return [t for t in _tensors([sample.input, list(sample.args), list(sample.kwargs.values())])
            if t.is_floating_point() and t.requires_grad]


def _run(op, sample, d, grad):
    x, args, kwargs = (_to(v, d, grad) for v in (sample.input, sample.args, sample.kwargs))
    out = op(x, *args, **kwargs)
    grads = None
    if grad:
        leaves = [t for t in _tensors([x, list(args), list(kwargs.values())]) if t.requires_grad]
        outs = [t for t in _tensors(out) if t.requires_grad and t.numel()]
        if leaves and outs:
            total = sum((o * torch.linspace(0.5, 1.5, o.numel(), device=o.device).reshape(o.shape)).sum()
                        for o in outs)
            grads = torch.autograd.grad(total, leaves, allow_unused=True)
    return out, grads


def _check_op(op, dtype, dev):
    """-> 'native', 'fallback' or 'skip'; raises AssertionError on a wrong value."""
    grad = dtype == torch.float32 and op.supports_autograd and op.name not in NONDETERMINISTIC
    try:
        samples = list(op.sample_inputs("cpu", dtype, requires_grad=grad))[:SAMPLES_PER_OP]
    except Exception:  # noqa: B902  (an OpInfo that cannot make samples here)
        return "skip"
    ran = False
    for s in samples:
        try:
            torch.manual_seed(0)
            ref, ref_grads = _run(op, s, "cpu", grad)
        except Exception:  # noqa: B902  (a sample PyTorch's CPU itself refuses)
            continue
        try:
            with ffd.strict():
                got, got_grads = _run(op, s, dev, grad)
        except RuntimeError as e:
            if "no FusionFlow kernel" in str(e):
                return "fallback"
            if op.name in REFUSED and REFUSED[op.name] in str(e):
                return "skip"
            raise AssertionError("%s (%s): the device failed where PyTorch's CPU did not: %s"
                                 % (op.name, dtype, str(e).splitlines()[0]))
        ran = True
        if op.name in NONDETERMINISTIC:
            continue
        for r, g in zip(_tensors(ref), _tensors(got)):
            if r.layout != torch.strided:
                continue
            torch.testing.assert_close(g.detach().cpu(), r.detach(), atol=1e-4, rtol=1e-4, equal_nan=True,
                                       check_stride=False,
                                       msg=lambda m: "%s (%s) sample %s: %s" % (op.name, dtype, s, m))
        for r, g in zip(() if op.name in WRONG_GRADIENT_IN_TORCH else ref_grads or (), got_grads or ()):
            if r is not None and g is not None:
                torch.testing.assert_close(g.cpu(), r, atol=1e-4, rtol=1e-4, equal_nan=True, check_stride=False,
                                           msg=lambda m: "%s (%s) gradient, sample %s: %s" % (op.name, dtype, s, m))
    return "native" if ran else "skip"


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("backend", [b for b in ("cpu_blas",) if b in DEVICES] or ["cpu"])
def test_op_db_on_the_device(backend, dtype):
    dev = ffd.device(backend)
    counts, wrong = {"native": [], "fallback": [], "skip": []}, []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for op in op_db:
            if dtype not in op.supported_dtypes("cpu"):
                continue
            try:
                counts[_check_op(op, dtype, dev)].append(op.name)
            except AssertionError as e:
                wrong.append(str(e)[:600])
    assert not wrong, "%d ops differ from PyTorch's CPU:\n%s" % (len(wrong), "\n".join(wrong))
    assert len(counts["native"]) >= NATIVE_FLOOR[dtype], \
        "only %d ops ran natively (floor %d)" % (len(counts["native"]), NATIVE_FLOOR[dtype])
    print("\n%s %s: %d ops native, %d fall back, %d skipped" % (backend, dtype, len(counts["native"]),
                                                                  len(counts["fallback"]), len(counts["skip"])))
