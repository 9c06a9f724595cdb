"""Bad arguments to a broad set of fusionflow functions: wrong types, wrong dtypes, shapes
that do not fit, dims and indices out of range, floats where an int goes. The cases are
generated from a few tables; each runs on PyTorch too, which must refuse it (so the case
is a bad input, as PyTorch 1.13 sees it), and here it must raise an exception whose
message names the function, of a type that says "bad argument" (not an AttributeError
from deep inside, nor a C-level crash).

Not cases here, on purpose: a list or a number where PyTorch wants a Tensor (fusionflow
takes array-likes, as NumPy does), and mixed or integer dtypes that fusionflow promotes by
its documented rules where PyTorch refuses (matmul of i64 and f32, softmax of i64:
docs/semantics.md, "Type promotion")."""
import os

import numpy as np
import pytest

import fusionflow as ff
import fusionflow.nn.functional as FF

torch = pytest.importorskip("torch") if not os.environ.get("FF_REQUIRE_TORCH") else __import__("torch")
import torch.nn.functional as TF  # noqa: E402

_rng = np.random.default_rng(30)
_X = _rng.standard_normal((3, 4)).astype(np.float32)       # the 2-d input
_V = _rng.standard_normal(4).astype(np.float32)            # a vector that fits _X's last dim
_W = _rng.standard_normal(5).astype(np.float32)            # one that fits nothing
_SQ = _rng.standard_normal((3, 3)).astype(np.float32)      # square
_IMG = _rng.standard_normal((1, 2, 5, 5)).astype(np.float32)
_KER = _rng.standard_normal((3, 2, 3, 3)).astype(np.float32)
_IDX = np.array([0, 2], dtype=np.int64)


class Lib:
    """The same names over fusionflow or torch, so one lambda states a case for both."""

    def __init__(self, m, F, t):
        self.m, self.F, self.t = m, F, t

    @property
    def x(self): return self.t(_X)
    @property
    def v(self): return self.t(_V)
    @property
    def w5(self): return self.t(_W)
    @property
    def sq(self): return self.t(_SQ)
    @property
    def img(self): return self.t(_IMG)
    @property
    def ker(self): return self.t(_KER)
    @property
    def idx(self): return self.t(_IDX)
    @property
    def fidx(self): return self.t(_IDX.astype(np.float32))
    @property
    def xi(self): return self.t(np.arange(12, dtype=np.int64).reshape(3, 4))
    @property
    def mask(self): return self.t(_X > 0)


FF_LIB = Lib(ff, FF, lambda a: ff.tensor(a))
TORCH_LIB = Lib(torch, TF, lambda a: torch.from_numpy(np.ascontiguousarray(a)))

# What a tensor argument must not be: PyTorch raises TypeError for each.
_NOT_TENSORS = {"str": "abc", "None": None, "dict": {"a": 1}, "object": object()}

# ---- tables --------------------------------------------------------------------------
# f(x): torch.<name>(x) and fusionflow.<name>(x)
_UNARY = ["exp", "log", "log1p", "expm1", "sqrt", "rsqrt", "square", "reciprocal", "sin", "cos", "tanh", "sigmoid",
          "relu", "abs", "sign", "floor", "ceil", "round", "isnan", "isinf", "logical_not", "erf", "atan", "asin",
          "acos", "erfinv", "lgamma", "digamma", "tan", "sinh", "cosh", "asinh", "acosh", "atanh", "log2", "log10",
          "exp2", "trunc", "frac", "sgn", "sum", "mean", "prod", "amax", "amin", "argmax", "argmin", "var", "std",
          "any", "all", "norm", "clone", "detach", "flatten", "count_nonzero", "msort", "nonzero", "median",
          "trace", "diag"]
# F.<name>(x)
_F_UNARY = ["relu", "tanh", "sigmoid", "gelu", "silu", "softplus"]
# f(x, other) with other broadcasting against x
_BINARY = ["add", "sub", "mul", "div", "maximum", "minimum", "pow", "atan2", "fmod", "remainder", "eq", "ne", "lt",
           "le", "gt", "ge", "fmax", "fmin", "logical_and", "logical_or", "logical_xor", "isclose", "lerp_half"]
# f(x, dim=d) for a dim
_DIM = {"sum": lambda L, d: L.m.sum(L.x, d), "mean": lambda L, d: L.m.mean(L.x, d),
        "amax": lambda L, d: L.m.amax(L.x, d), "amin": lambda L, d: L.m.amin(L.x, d),
        "argmax": lambda L, d: L.m.argmax(L.x, d), "argmin": lambda L, d: L.m.argmin(L.x, d),
        "prod": lambda L, d: L.m.prod(L.x, d), "logsumexp": lambda L, d: L.m.logsumexp(L.x, d),
        "softmax": lambda L, d: L.m.softmax(L.x, d), "log_softmax": lambda L, d: L.m.log_softmax(L.x, d),
        "cumsum": lambda L, d: L.m.cumsum(L.x, d), "cumprod": lambda L, d: L.m.cumprod(L.x, d),
        "std": lambda L, d: L.m.std(L.x, d), "var": lambda L, d: L.m.var(L.x, d),
        "unsqueeze": lambda L, d: L.m.unsqueeze(L.x, d), "squeeze": lambda L, d: L.m.squeeze(L.x, d),
        "sort": lambda L, d: L.m.sort(L.x, d), "argsort": lambda L, d: L.m.argsort(L.x, d),
        "topk": lambda L, d: L.m.topk(L.x, 1, d), "kthvalue": lambda L, d: L.m.kthvalue(L.x, 1, d),
        "median": lambda L, d: L.m.median(L.x, d), "mode": lambda L, d: L.m.mode(L.x, d),
        "narrow": lambda L, d: L.m.narrow(L.x, d, 0, 1), "select": lambda L, d: L.x.select(d, 0),
        "transpose": lambda L, d: L.m.transpose(L.x, 0, d), "flip": lambda L, d: L.m.flip(L.x, (d,)),
        "index_select": lambda L, d: L.m.index_select(L.x, d, L.idx),
        "gather": lambda L, d: L.m.gather(L.x, d, L.t(np.zeros((3, 4), np.int64))),
        "cat": lambda L, d: L.m.cat([L.x, L.x], d), "stack": lambda L, d: L.m.stack([L.x, L.x], d),
        "chunk": lambda L, d: L.m.chunk(L.x, 2, d), "split": lambda L, d: L.m.split(L.x, 2, d),
        "movedim": lambda L, d: L.m.movedim(L.x, d, 0), "roll": lambda L, d: L.m.roll(L.x, 1, d),
        "diagonal": lambda L, d: L.m.diagonal(L.x, 0, 0, d), "flatten": lambda L, d: L.m.flatten(L.x, d),
        "unbind": lambda L, d: L.m.unbind(L.x, d), "cross": lambda L, d: L.m.cross(L.sq, L.sq, d),
        "F.softmax": lambda L, d: L.F.softmax(L.x, d), "F.log_softmax": lambda L, d: L.F.log_softmax(L.x, d)}
# dims out of range of a 2-d input, and dims that are not ints
_BAD_DIMS = {"2": 2, "-3": -3, "9": 9, "1.5": 1.5, "'0'": "0"}
_VALID_DIMS = {"unsqueeze": ("2", "-3"), "stack": ("2", "-3")}  # they take a dim one past x's: not bad

# Calls with shapes that do not fit: name -> call
_SHAPES = {
    "matmul": lambda L: L.m.matmul(L.x, L.x), "bmm": lambda L: L.m.bmm(L.x, L.x),
    "outer": lambda L: L.m.outer(L.x, L.v), "inner": lambda L: L.m.inner(L.x, L.w5),
    "cat": lambda L: L.m.cat([L.x, L.w5]), "stack": lambda L: L.m.stack([L.x, L.v]),
    "where": lambda L: L.m.where(L.mask, L.x, L.w5), "reshape": lambda L: L.m.reshape(L.x, (5, 3)),
    "broadcast_to": lambda L: L.m.broadcast_to(L.x, (3, 5)), "expand": lambda L: L.x.expand(3, 5),
    "view": lambda L: L.x.view(5, 3), "linear": lambda L: L.F.linear(L.x, L.t(np.ones((2, 5), np.float32))),
    "conv2d": lambda L: L.F.conv2d(L.img, L.t(_rng.standard_normal((3, 4, 3, 3)).astype(np.float32))),
    "conv2d_rank": lambda L: L.F.conv2d(L.x, L.ker), "max_pool2d": lambda L: L.F.max_pool2d(L.v, 2),
    "avg_pool2d": lambda L: L.F.avg_pool2d(L.v, 2), "layer_norm": lambda L: L.F.layer_norm(L.x, (5,)),
    "mse_loss": lambda L: L.F.mse_loss(L.x, L.t(np.zeros((2, 4), np.float32))),
    "cross_entropy": lambda L: L.F.cross_entropy(L.x, L.t(np.zeros(5, np.int64))),
    "nll_loss": lambda L: L.F.nll_loss(L.x, L.t(np.zeros(5, np.int64))),
    "interpolate": lambda L: L.F.interpolate(L.v, size=3), "trace": lambda L: L.m.trace(L.v),
    "kron": lambda L: L.m.kron(L.x, "abc"), "tensordot": lambda L: L.m.tensordot(L.x, L.x, ([0], [1])),
    "cross": lambda L: L.m.cross(L.x, L.x, 1), "einsum": lambda L: L.m.einsum("ij,jk->ik", L.x, L.x),
    "einsum_rank": lambda L: L.m.einsum("i,i->", L.x, L.x), "dist": lambda L: L.m.dist(L.x, L.w5),
    "masked_fill": lambda L: L.x.masked_fill(L.t(np.ones(5, bool)), 0.0),
    "index_put_": lambda L: L.x.index_put_((L.idx,), L.t(np.ones(3, np.float32))),
    "lerp": lambda L: L.m.lerp(L.x, L.w5, 0.5), "addcmul": lambda L: L.m.addcmul(L.x, L.x, L.w5),
    "take": lambda L: L.m.take(L.x, L.t(np.array([12], np.int64))), "det": lambda L: L.m.det(L.x),
    "inverse": lambda L: L.m.inverse(L.x), "matrix_power": lambda L: L.m.matrix_power(L.x, 2),
    "cholesky": lambda L: L.m.linalg.cholesky(L.x), "solve": lambda L: L.m.linalg.solve(L.sq, L.v),
    "embedding": lambda L: L.F.embedding(L.t(np.array([7], np.int64)), L.x),
    "one_hot": lambda L: L.F.one_hot(L.t(np.array([5], np.int64)), 3),
    "unflatten": lambda L: L.m.unflatten(L.x, 1, (3, 3)), "repeat": lambda L: L.x.repeat(2),
    "tile": lambda L: L.m.tile(L.x, (1.5,)), "scatter_add": lambda L: L.x.scatter_add(0, L.idx, L.x),
    "pad": lambda L: L.F.pad(L.x, (1, 1, 1)), "group_norm": lambda L: L.F.group_norm(L.img, 3),
    "batch_norm": lambda L: L.F.batch_norm(L.img, L.t(np.zeros(3, np.float32)), L.t(np.ones(3, np.float32))),
}
# Ints given as floats, or indices / sizes out of range: name -> call
_VALUES = {
    "topk_k_float": lambda L: L.m.topk(L.x, 1.5), "topk_k_big": lambda L: L.m.topk(L.x, 5),
    "topk_k_neg": lambda L: L.m.topk(L.x, -1), "kthvalue_k_float": lambda L: L.m.kthvalue(L.x, 1.5),
    "kthvalue_k_0": lambda L: L.m.kthvalue(L.x, 0), "kthvalue_k_big": lambda L: L.m.kthvalue(L.x, 5),
    "matrix_power_float": lambda L: L.m.matrix_power(L.sq, 1.5),
    "linalg.matrix_power_float": lambda L: L.m.linalg.matrix_power(L.sq, 1.5),
    "narrow_float": lambda L: L.m.narrow(L.x, 0, 0, 1.5), "narrow_past": lambda L: L.m.narrow(L.x, 0, 2, 5),
    "chunk_float": lambda L: L.m.chunk(L.x, 1.5), "chunk_0": lambda L: L.m.chunk(L.x, 0),
    "split_0": lambda L: L.m.split(L.x, 0), "split_sizes": lambda L: L.m.split(L.x, [1, 1]),
    "select_past": lambda L: L.x.select(0, 3), "select_float": lambda L: L.x.select(0, 1.5),
    "repeat_float": lambda L: L.x.repeat(1.5, 1), "roll_float": lambda L: L.m.roll(L.x, 1.5, 0),
    "tril_float": lambda L: L.m.tril(L.x, 1.5), "triu_float": lambda L: L.m.triu(L.x, 1.5),
    "one_hot_float": lambda L: L.F.one_hot(L.idx, 1.5), "randperm_float": lambda L: L.m.randperm(1.5),
    "zeros_float": lambda L: L.m.zeros(1.5), "ones_float": lambda L: L.m.ones(2, 1.5),
    "full_float": lambda L: L.m.full((1.5,), 0.0), "eye_float": lambda L: L.m.eye(1.5),
    "rand_float": lambda L: L.m.rand(1.5), "randn_neg": lambda L: L.m.randn(-1),
    "zeros_neg": lambda L: L.m.zeros(-2), "reshape_float": lambda L: L.m.reshape(L.x, (1.5, 8)),
    "view_float": lambda L: L.x.view(1.5, 8), "unsqueeze_float": lambda L: L.m.unsqueeze(L.x, 0.5),
    "pad_float": lambda L: L.F.pad(L.x, (1.5, 1)), "max_pool2d_float": lambda L: L.F.max_pool2d(L.img, 1.5),
    "max_pool2d_0": lambda L: L.F.max_pool2d(L.img, 0), "avg_pool2d_big": lambda L: L.F.avg_pool2d(L.img, 9),
    "conv2d_stride_float": lambda L: L.F.conv2d(L.img, L.ker, stride=1.5),
    "conv2d_stride_0": lambda L: L.F.conv2d(L.img, L.ker, stride=0),
    "conv2d_padding_neg": lambda L: L.F.conv2d(L.img, L.ker, padding=-1),
    "conv2d_padding_float": lambda L: L.F.conv2d(L.img, L.ker, padding=0.5),
    "interpolate_size_float": lambda L: L.F.interpolate(L.img, size=2.5),
    "interpolate_scale_0": lambda L: L.F.interpolate(L.img, scale_factor=0.0),
    "interpolate_scale_nan": lambda L: L.F.interpolate(L.img, scale_factor=float("nan")),
    "interpolate_scale_inf": lambda L: L.F.interpolate(L.img, scale_factor=float("inf")),
    "interpolate_scale_neg": lambda L: L.F.interpolate(L.img, scale_factor=-2.0),
    "interpolate_size_0": lambda L: L.F.interpolate(L.img, size=0),
    "interpolate_neither": lambda L: L.F.interpolate(L.img),
    "interpolate_mode": lambda L: L.F.interpolate(L.img, size=3, mode="bogus"),
    "index_select_past": lambda L: L.m.index_select(L.x, 0, L.t(np.array([3], np.int64))),
    "gather_past": lambda L: L.m.gather(L.x, 1, L.t(np.full((3, 4), 4, np.int64))),
    "embedding_neg": lambda L: L.F.embedding(L.t(np.array([-1], np.int64)), L.x),
    "one_hot_neg": lambda L: L.F.one_hot(L.t(np.array([-1], np.int64)), 3),
    "take_past": lambda L: L.m.take(L.x, L.t(np.array([-13], np.int64))),
    "index_past": lambda L: L.x[3], "index_float": lambda L: L.x[1.5],
    "index_tensor_past": lambda L: L.x[L.t(np.array([5], np.int64))],
    "index_setitem_past": lambda L: L.x.__setitem__(4, 1.0),
    "dropout_p": lambda L: L.F.dropout(L.x, 1.5), "dropout_neg": lambda L: L.F.dropout(L.x, -0.1),
    "arange_step_0": lambda L: L.m.arange(0, 4, 0), "linspace_neg": lambda L: L.m.linspace(0, 1, -1),
    "multinomial_0": lambda L: L.m.multinomial(L.t(np.ones(3, np.float32)), 4),
    "bincount_neg": lambda L: L.m.bincount(L.t(np.array([-1], np.int64))),
    "histc_bins_0": lambda L: L.m.histc(L.v, 0), "cumsum_float_dim": lambda L: L.m.cumsum(L.x, 0.5),
    "einsum_type": lambda L: L.m.einsum(5, L.x), "einsum_label": lambda L: L.m.einsum("i1->i", L.v),
    "einsum_count": lambda L: L.m.einsum("ij,jk->ik", L.x),
    "movedim_repeat": lambda L: L.m.movedim(L.x, (0, 0), (0, 1)),
    "permute_repeat": lambda L: L.m.permute(L.x, (0, 0)), "permute_count": lambda L: L.m.permute(L.x, (0,)),
    "transpose_float": lambda L: L.m.transpose(L.x, 0, 1.0),
    "expand_neg": lambda L: L.x.expand(-2, 4), "reshape_two_minus": lambda L: L.m.reshape(L.x, (-1, -1)),
    "clamp_none": lambda L: L.m.clamp(L.x), "norm_p": lambda L: L.m.norm(L.x, "bogus"),
    "linear_bias": lambda L: L.F.linear(L.x, L.t(np.ones((2, 4), np.float32)), L.t(np.ones(3, np.float32))),
}
# Wrong dtypes: name -> call
_DTYPES = {
    "index_select": lambda L: L.m.index_select(L.x, 0, L.fidx), "gather": lambda L: L.m.gather(L.x, 0, L.x),
    "embedding": lambda L: L.F.embedding(L.fidx, L.x), "one_hot": lambda L: L.F.one_hot(L.fidx, 3),
    "bincount": lambda L: L.m.bincount(L.v), "bitwise_and": lambda L: L.m.bitwise_and(L.x, L.x),
    "bitwise_not": lambda L: L.m.bitwise_not(L.x),
    "conv2d": lambda L: L.F.conv2d(L.t(np.zeros((1, 2, 5, 5), np.int64)), L.ker),
    "cross_entropy": lambda L: L.F.cross_entropy(L.x, L.fidx[:1].expand(3)),
    "masked_fill": lambda L: L.x.masked_fill(L.x, 0.0),
    "index_put_": lambda L: L.xi.index_put_((L.idx,), L.t(np.array([1.5], np.float32))),
    "index_put_f64": lambda L: L.x.index_put_((L.idx,), L.t(np.array([1.5], np.float64))),
    "index_put_i32": lambda L: L.xi.index_put_((L.idx,), L.t(np.array([1], np.int32))),
    "take": lambda L: L.m.take(L.x, L.fidx), "scatter_add": lambda L: L.x.scatter_add(0, L.fidx[None], L.x),
    "where": lambda L: L.m.where(L.x, L.x, L.x), "multinomial": lambda L: L.m.multinomial(L.idx, 1),
    "det": lambda L: L.m.det(L.t(np.eye(3, dtype=np.int64))),
    "inverse": lambda L: L.m.inverse(L.t(np.eye(3, dtype=np.int64))),
    "index_add": lambda L: L.x.index_add(0, L.fidx, L.x[:2]),
    "index_copy": lambda L: L.x.index_copy(0, L.fidx, L.x[:2]),
    "layer_norm": lambda L: L.F.layer_norm(L.xi, (4,)),
    "nll_loss": lambda L: L.F.nll_loss(L.x, L.fidx[:1].expand(3)),
    "max_pool2d": lambda L: L.F.max_pool2d(L.t(np.zeros((1, 1, 4, 4), np.int64)), 2),
    "interpolate": lambda L: L.F.interpolate(L.t(np.zeros((1, 1, 4, 4), np.int64)), size=2, mode="bilinear"),
}


def _cases():
    cases = []
    for name in _UNARY:
        for kind, bad in _NOT_TENSORS.items():
            cases.append(("%s(%s)" % (name, kind), name, lambda L, n=name, b=bad: getattr(L.m, n)(b)))
    for name in _F_UNARY:
        for kind, bad in _NOT_TENSORS.items():
            cases.append(("F.%s(%s)" % (name, kind), name, lambda L, n=name, b=bad: getattr(L.F, n)(b)))
    for name in _BINARY:
        fn = name.replace("_half", "")
        call = ((lambda L, a, b, n=fn: getattr(L.m, n)(a, b, 0.5)) if name == "lerp_half"
                else (lambda L, a, b, n=fn: getattr(L.m, n)(a, b)))
        cases.append(("%s(shapes)" % name, fn, lambda L, c=call: c(L, L.x, L.w5)))
        for kind, bad in _NOT_TENSORS.items():
            if kind == "None" or fn in ("lerp",):
                continue  # None is a valid "no other" for some of PyTorch's overloads; lerp's weight
            cases.append(("%s(x, %s)" % (name, kind), fn, lambda L, c=call, b=bad: c(L, L.x, b)))
            cases.append(("%s(%s, x)" % (name, kind), fn, lambda L, c=call, b=bad: c(L, b, L.x)))
    for name, call in _DIM.items():
        for label, d in _BAD_DIMS.items():
            if label in _VALID_DIMS.get(name, ()):
                continue
            cases.append(("%s(dim=%s)" % (name, label), name.replace("F.", ""), lambda L, c=call, d=d: c(L, d)))
    for table, tag in ((_SHAPES, "shape"), (_VALUES, "value"), (_DTYPES, "dtype")):
        for case, call in table.items():
            name = case.split("_")[0] if case not in ("index_put_", "scatter_add", "max_pool2d", "avg_pool2d",
                                                      "layer_norm", "cross_entropy", "nll_loss", "mse_loss",
                                                      "index_select", "one_hot", "broadcast_to", "matrix_power",
                                                      "group_norm", "batch_norm", "index_add", "index_copy",
                                                      "bitwise_and", "bitwise_not") else case
            for pre in ("index_put_", "index_select", "one_hot", "max_pool2d", "avg_pool2d", "matrix_power",
                        "linalg.matrix_power", "conv2d", "index_put"):
                if case.startswith(pre):
                    name = pre
            name = name.replace("linalg.", "")
            cases.append(("%s[%s]" % (case, tag), name, call))
    return cases


CASES = _cases()
# What a bad argument may raise: PyTorch's kinds (its RuntimeError is our FusionFlowError).
_ARG_ERRORS = (TypeError, ValueError, IndexError, RuntimeError, NotImplementedError)


def test_enough_cases():
    assert len(CASES) >= 300, len(CASES)
    assert len({c[0] for c in CASES}) == len(CASES)  # every case has its own id


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_bad_argument(case):
    label, name, call = case
    with pytest.raises(Exception):  # noqa: B017  (the case must be bad for PyTorch as well)
        call(TORCH_LIB)
    with pytest.raises(_ARG_ERRORS) as info:
        call(FF_LIB)
    assert name in str(info.value), "%s: the message does not name %s: %s: %s" % (
        label, name, type(info.value).__name__, info.value)
