"""The small top-level and Tensor names PyTorch programs use (issue 32): Tensor.__format__,
new_*, element_size, ndimension; inference_mode, is_tensor, manual_seed's generator,
set_num_threads / get_num_threads; each against torch 1.13 where it computes something."""
import numpy as np
import pytest

import fusionflow as ff

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("spec", ["", ".4f", ".3e", "10.2f", "g", "+.1%"])
def test_format_of_a_0d_tensor_as_torch(spec):
    for v, dt in ((2.718281828, "float32"), (-1.5, "float64"), (7, "int64")):
        if dt == "int64" and ("f" in spec or "e" in spec or "%" in spec or spec == "g"):
            continue
        a = np.array(v, dtype=dt)
        assert format(ff.tensor(a), spec) == format(torch.tensor(a), spec)
    assert f"{ff.tensor(0.5):.3f}" == "0.500"


def test_format_of_a_tensor_with_dimensions():
    t = ff.tensor([1.0, 2.0])
    assert f"{t}" == str(t)
    with pytest.raises(TypeError, match="format"):
        f"{t:.2f}"
    with pytest.raises(TypeError):
        f"{torch.tensor([1.0, 2.0]):.2f}"


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "int32", "bool", "uint8", "float16", "bfloat16"])
def test_element_size_ndimension_as_torch(dtype):
    t, tt = ff.zeros(2, 3, dtype=getattr(ff, dtype if dtype != "bool" else "bool_")), \
        torch.zeros(2, 3, dtype=getattr(torch, dtype))
    assert t.element_size() == tt.element_size() and t.ndimension() == tt.ndimension() == 2


def test_new_factories_as_torch():
    base, tbase = ff.tensor([[1, 2]], dtype=ff.float64, device="cpu_ref"), torch.tensor([[1, 2]], dtype=torch.float64)
    cases = [("new_zeros", (2, 3), {}), ("new_ones", ((4,),), {}), ("new_full", ((2, 2), 7.5), {}),
             ("new_empty", (0, 2), {}), ("new_zeros", (3,), {"dtype": "int32"}),
             ("new_ones", (2,), {"dtype": "float32", "requires_grad": True}),
             ("new_tensor", ([[1, 2], [3, 4]],), {}), ("new_tensor", ([1.5],), {"dtype": "int64"})]
    for name, args, kw in cases:
        got = getattr(base, name)(*args, **{k: (getattr(ff, v) if k == "dtype" else v) for k, v in kw.items()})
        want = getattr(tbase, name)(*args, **{k: (getattr(torch, v) if k == "dtype" else v) for k, v in kw.items()})
        assert got.shape == tuple(want.shape) and str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
        assert got.requires_grad == want.requires_grad and got.device == base.device, name
        if name != "new_empty":
            assert np.array_equal(got.detach().numpy(), want.detach().numpy()), name
    src = ff.tensor([1.0, 2.0], requires_grad=True)
    c = base.new_tensor(src)
    assert not c.requires_grad and c.dtype == ff.float64 and c.device == base.device and c.tolist() == [1.0, 2.0]
    c.add_(1.0)
    assert src.tolist() == [1.0, 2.0]  # a copy, not a view


def test_inference_mode_records_no_graph():
    x = ff.ones(2, requires_grad=True)
    with ff.inference_mode():
        y = x * 2
        with ff.inference_mode(False):
            z = x * 3
    assert not y.requires_grad and z.requires_grad and ff.is_grad_enabled()

    @ff.inference_mode()
    def f(a):
        return a * 2
    assert not f(x).requires_grad
    with torch.inference_mode():
        assert not (torch.ones(2, requires_grad=True) * 2).requires_grad


def test_is_tensor_and_manual_seed_generator():
    assert ff.is_tensor(ff.ones(1)) and not ff.is_tensor(np.ones(1)) and not ff.is_tensor([1.0])
    g = ff.manual_seed(11)
    assert g is ff.default_generator and isinstance(g, ff.Generator) and ff.initial_seed() == 11
    assert isinstance(torch.manual_seed(11), torch.Generator)
    a = ff.rand(5).numpy()
    order = list(ff.utils.data.RandomSampler(range(6), generator=g))
    ff.manual_seed(11)
    assert np.array_equal(ff.rand(5).numpy(), a)
    assert list(ff.utils.data.RandomSampler(range(6), generator=ff.default_generator)) == order
    s = ff.seed()
    assert ff.initial_seed() == s and 0 <= s < 2 ** 63


def test_num_threads():
    n = ff.get_num_threads()
    assert isinstance(n, int) and n >= 1
    ff.set_num_threads(n)  # the count it has: fine
    with pytest.raises(ValueError, match="thread count"):
        ff.set_num_threads(0)
    if "cpu_blas" in ff.loaded_backends():
        with pytest.raises(RuntimeError, match="cannot resize"):
            ff.set_num_threads(n + 1)


def test_legacy_tensor_types_as_torch():
    """gat's load_cora writes torch.FloatTensor(array) and torch.LongTensor(list)."""
    import torch
    for name in ("FloatTensor", "DoubleTensor", "LongTensor", "IntTensor", "ByteTensor", "BoolTensor"):
        ours, theirs = getattr(ff, name), getattr(torch, name)
        data = [[1, 0], [3, 1]]
        a, b = ours(data), theirs(data)
        assert a.dtype.name == str(b.dtype).replace("torch.", "") and np.array_equal(a.numpy(), b.numpy())
        assert ours(2, 3).shape == tuple(theirs(2, 3).shape) and ours(0).shape == (0,)
        assert isinstance(a, ours) and not isinstance(a.to(ff.float16), ours)
        assert ff.zeros(2).type(ours).dtype.name == str(theirs([]).dtype).replace("torch.", "")
    with pytest.raises(TypeError, match="FloatTensor"):
        ff.FloatTensor(2, 1.5)


def test_backends_submodules_import_as_torch():
    """dcgan: `import torch.backends.cudnn as cudnn` then `cudnn.benchmark = True`."""
    import importlib
    cudnn = importlib.import_module("fusionflow.backends.cudnn")
    old = cudnn.benchmark
    try:
        cudnn.benchmark = True
        assert ff.backends.cudnn.benchmark is True
    finally:
        cudnn.benchmark = old
    assert importlib.import_module("fusionflow.backends.cuda").matmul is ff.backends.cuda.matmul
