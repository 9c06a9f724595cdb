"""fusionflow's COO sparse tensors (fusionflow/sparse/) against torch 1.13: to_sparse,
sparse_coo_tensor (duplicates, inferred size, dtype), coalesce, to_dense, sparse.mm / @ / mm
with gradients for the dense operand and the sparse values, dense + sparse, and the errors
PyTorch gives for what it refuses."""
import numpy as np
import pytest

import fusionflow as ff

torch = pytest.importorskip("torch")


def _dense(seed, shape, density=0.4):
    rng = np.random.RandomState(seed)
    return (rng.randn(*shape) * (rng.rand(*shape) < density)).astype(np.float32)


def _parts(s):
    c = s.coalesce()
    return (tuple(s.shape), s._nnz(), s.is_coalesced(), s.sparse_dim(), s.dense_dim(),
            c.indices().numpy().tolist(), c.values().detach().numpy(), s.to_dense().detach().numpy())


def _same(a, b):
    assert a[:6] == b[:6]
    np.testing.assert_allclose(a[6], b[6], rtol=1e-6)
    np.testing.assert_allclose(a[7], b[7], rtol=1e-6)


@pytest.mark.parametrize("shape", [(5, 7), (3, 4, 2), (6,)])
def test_to_sparse_matches_torch(shape):
    x = _dense(1, shape)
    x.flat[0] = 0.0  # at least one zero, whatever the draw
    got, want = ff.tensor(x).to_sparse(), torch.tensor(x).to_sparse()
    assert got.is_sparse and not ff.tensor(x).is_sparse
    _same(_parts(got), _parts(want))
    np.testing.assert_array_equal(got.indices().numpy(), want.indices().numpy())  # row-major, as torch


def test_sparse_coo_tensor_duplicates_inferred_size_and_dtype_match_torch():
    idx = np.array([[0, 3, 0, 2, 3], [1, 0, 1, 4, 0]], dtype=np.int32)  # numpy int32, as gat passes
    vals = [1.5, 2.0, -0.5, 4.0, 1.0]
    for size in [(), ((5, 6),)]:  # inferred from the indices, then given
        got = ff.sparse_coo_tensor(idx, ff.tensor(vals), *size)
        want = torch.sparse_coo_tensor(idx, torch.tensor(vals), *size)
        assert not got.is_coalesced() and got._nnz() == 5
        _same(_parts(got), _parts(want))
    got = ff.sparse_coo_tensor(idx, ff.ones(5), (4, 5), dtype=ff.int64)
    want = torch.sparse_coo_tensor(idx, torch.ones(5), (4, 5), dtype=torch.int64)
    assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1] == "int64"
    _same(_parts(got), _parts(want))
    # gat's adjacency: eye + an int64 sparse matrix is a dense float32 matrix
    d_got, d_want = ff.eye(4, 5) + got, torch.eye(4, 5) + want
    assert not d_got.is_sparse and str(d_got.dtype).split(".")[-1] == "float32"
    np.testing.assert_array_equal(d_got.numpy(), d_want.numpy())


def test_sum_of_sparse_tensors_and_scaling_match_torch():
    got = []
    for lib in (ff, torch):
        s = lib.sparse_coo_tensor([[0, 1, 1], [2, 0, 2]], lib.tensor([1.0, 2.0, 3.0]), (2, 3))
        t = lib.sparse_coo_tensor([[1], [2]], lib.tensor([10.0]), (2, 3))
        u = (s + t) * 2
        got.append((u.is_coalesced(), u.coalesce()._nnz(), u.to_dense().numpy()))
    assert got[0][:2] == got[1][:2]  # the uncoalesced sum's entries vary
    np.testing.assert_array_equal(got[0][2], got[1][2])


@pytest.mark.parametrize("how", ["sparse.mm", "matmul", "mm"])
def test_sparse_dense_product_and_its_gradients_match_torch(how):
    s_np, d_np = _dense(2, (6, 5)), np.random.RandomState(3).randn(5, 4).astype(np.float32)
    g_np = np.random.RandomState(4).randn(6, 4).astype(np.float32)
    res = {}
    for lib in (ff, torch):
        s = lib.tensor(s_np).to_sparse()
        # torch differentiates in the sparse operand through sparse.mm only
        s = lib.sparse_coo_tensor(s.indices(), s.values(), s.shape, requires_grad=how == "sparse.mm")
        d = lib.tensor(d_np, requires_grad=True)
        out = {"sparse.mm": lambda: lib.sparse.mm(s, d), "matmul": lambda: s @ d, "mm": lambda: lib.mm(s, d)}[how]()
        (out * lib.tensor(g_np)).sum().backward()
        res[lib.__name__] = (out.detach().numpy(), d.grad.numpy()) + (
            (s.grad.coalesce().to_dense().numpy(),) if how == "sparse.mm" else ())
    for got, want in zip(res["fusionflow"], res["torch"]):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(res["torch"][0], s_np @ d_np, rtol=1e-5, atol=1e-6)  # and both are right


def test_to_dense_and_to_sparse_carry_gradients_as_torch():
    x_np, w_np = _dense(5, (4, 3)), np.random.RandomState(6).randn(4, 3).astype(np.float32)
    grads = []
    for lib in (ff, torch):
        x = lib.tensor(x_np, requires_grad=True)
        y = (x * 3).to_sparse().to_dense()
        (y * lib.tensor(w_np)).sum().backward()
        grads.append(x.grad.numpy())
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-6)
    assert np.any(grads[1] == 0) and np.any(grads[1] != 0)  # the zeros' entries get none


def test_what_torch_refuses_is_refused():
    for lib in (ff, torch):
        s = lib.sparse_coo_tensor([[0, 0], [1, 1]], lib.tensor([1.0, 2.0]), (2, 2))
        with pytest.raises(RuntimeError, match="uncoalesced"):
            s.indices()
        with pytest.raises(RuntimeError, match="add\\(sparse, dense\\) is not supported"):
            s + lib.ones(2, 2)
        with pytest.raises(RuntimeError, match="size is inconsistent with indices"):
            lib.sparse_coo_tensor([[0, 2], [1, 1]], lib.tensor([1.0, 2.0]), (2, 2))
        with pytest.raises(RuntimeError):
            lib.sparse.mm(s, lib.ones(2, 2, dtype=lib.float64))  # one dtype for both operands


def test_factories_take_size_as_keyword_as_torch():
    for name in ("zeros", "ones", "empty"):
        got = getattr(ff, name)(size=(2, 3))
        assert tuple(got.shape) == tuple(getattr(torch, name)(size=(2, 3)).shape) == (2, 3)
        with pytest.raises(TypeError):
            getattr(ff, name)(2, size=(2, 3))
