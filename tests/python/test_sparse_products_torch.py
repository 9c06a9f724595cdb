"""Issue 46, part 4: sparse COO products beyond sparse @ dense: sparse @ sparse (a sparse,
coalesced result) and dense @ sparse (a dense one), as PyTorch >= 2 offers them, with
gradients to the dense operand and to the sparse values, on every backend.

PyTorch 1.13, our reference, has sparse @ sparse only as torch.sparse.mm (with a gradient for
the first operand only) and refuses dense @ sparse; where it refuses, the reference is the
same product in PyTorch on the dense form of the sparse matrix (S.to_dense()), the gradient
of a sparse operand being the dense gradient at its entries."""
import os

import numpy as np
import pytest

import fusionflow as ff
from conftest import DEVICES, make_close

torch = pytest.importorskip("torch") if not os.environ.get("FF_REQUIRE_TORCH") else __import__("torch")

close = make_close(1e-5)


def random_coo(rng, m, n, nnz):
    """(indices, values) of nnz distinct random entries of an m x n matrix."""
    flat = rng.choice(m * n, size=nnz, replace=False)
    idx = np.stack([flat // n, flat % n]).astype(np.int64)
    return idx, rng.normal(size=nnz).astype(np.float32)


def both(idx, vals, size, device):
    """The same sparse matrix in fusionflow (values a leaf) and in PyTorch, dense form."""
    s = ff.sparse_coo_tensor(ff.tensor(idx, device=device), ff.tensor(vals, device=device, requires_grad=True), size)
    dense = np.zeros(size, np.float32)
    np.add.at(dense, (idx[0], idx[1]), vals)
    return s, torch.tensor(dense, requires_grad=True)


def at_entries(grad, idx):
    return grad.detach().numpy()[idx[0], idx[1]]


@pytest.mark.parametrize("device", DEVICES)
def test_sparse_times_sparse_is_sparse_and_matches_torch(device):
    rng = np.random.default_rng(0)
    ia, va = random_coo(rng, 5, 4, 9)
    ib, vb = random_coo(rng, 4, 6, 10)
    a, ta = both(ia, va, (5, 4), device)
    b, tb = both(ib, vb, (4, 6), device)
    for product in (ff.sparse.mm(a, b), a @ b, ff.mm(a, b), ff.spmm(a, b)):
        assert isinstance(product, ff.sparse.SparseCooTensor) and product.is_coalesced()
        assert product.shape == (5, 6)
        close(product.to_dense(), ta @ tb)
    # PyTorch's own sparse product, where 1.13 has it: the same values
    tsa = torch.sparse_coo_tensor(torch.tensor(ia), torch.tensor(va), (5, 4)).requires_grad_(True)
    tsb = torch.sparse_coo_tensor(torch.tensor(ib), torch.tensor(vb), (4, 6))
    close(ff.sparse.mm(a, b).to_dense(), torch.sparse.mm(tsa, tsb).to_dense())
    # gradients to both operands' values
    w = rng.normal(size=(5, 6)).astype(np.float32)
    (ff.sparse.mm(a, b).to_dense() * ff.tensor(w, device=device)).sum().backward()
    ((ta @ tb) * torch.tensor(w)).sum().backward()
    close(a._values().grad, at_entries(ta.grad, ia))
    close(b._values().grad, at_entries(tb.grad, ib))
    (torch.sparse.mm(tsa, tsb).to_dense() * torch.tensor(w)).sum().backward()
    close(a._values().grad, tsa.grad.coalesce().to_dense().numpy()[ia[0], ia[1]])


@pytest.mark.parametrize("device", DEVICES)
def test_dense_times_sparse_is_dense_with_gradients(device):
    rng = np.random.default_rng(1)
    idx, vals = random_coo(rng, 4, 3, 6)
    s, ts = both(idx, vals, (4, 3), device)
    xv = rng.normal(size=(5, 4)).astype(np.float32)
    x, tx = ff.tensor(xv, device=device, requires_grad=True), torch.tensor(xv, requires_grad=True)
    for product in (x @ s, ff.mm(x, s), ff.matmul(x, s), ff.sparse.mm(x, s), x.mm(s)):
        assert isinstance(product, ff.Tensor) and product.is_contiguous()
        close(product, tx @ ts)
    w = rng.normal(size=(5, 3)).astype(np.float32)
    ((x @ s) * ff.tensor(w, device=device)).sum().backward()
    ((tx @ ts) * torch.tensor(w)).sum().backward()
    close(x.grad, tx.grad)
    close(s._values().grad, at_entries(ts.grad, idx))


@pytest.mark.parametrize("device", DEVICES)
def test_graph_renormalisation_d_a_d(device):
    """D^-1/2 (A + I) D^-1/2 with a sparse diagonal D and a sparse adjacency, then a layer
    spmm(adj, X W), as every GCN does; the loss's gradients reach W and A's values."""
    rng = np.random.default_rng(2)
    n = 6
    edges = np.array([[0, 1], [1, 2], [2, 3], [3, 4], [4, 5], [5, 0], [0, 3]])
    pairs = np.concatenate([edges, edges[:, ::-1], np.stack([np.arange(n)] * 2, 1)]).T.astype(np.int64)
    ones = np.ones(pairs.shape[1], np.float32)
    deg = np.bincount(pairs[0], minlength=n).astype(np.float32)
    diag = np.stack([np.arange(n)] * 2).astype(np.int64)
    a, ta = both(pairs, ones, (n, n), device)
    d = ff.sparse_coo_tensor(ff.tensor(diag, device=device), ff.tensor(deg ** -0.5, device=device), (n, n))
    td = torch.diag(torch.tensor(deg ** -0.5))
    adj = d @ a @ d
    tadj = td @ ta @ td
    assert isinstance(adj, ff.sparse.SparseCooTensor) and adj._nnz() == pairs.shape[1]
    close(adj.to_dense(), tadj)
    xv, wv = rng.normal(size=(n, 3)).astype(np.float32), rng.normal(size=(3, 2)).astype(np.float32)
    wt, twt = ff.tensor(wv, device=device, requires_grad=True), torch.tensor(wv, requires_grad=True)
    out = ff.spmm(adj, ff.tensor(xv, device=device) @ wt).relu().sum()
    tout = (tadj @ (torch.tensor(xv) @ twt)).relu().sum()
    close(out, tout)
    out.backward()
    tout.backward()
    close(wt.grad, twt.grad)
    close(a._values().grad, at_entries(ta.grad, pairs))


def test_uncoalesced_duplicates_and_empty_products():
    # duplicates in an operand are summed, as in its dense form
    a = ff.sparse_coo_tensor([[0, 0, 1], [1, 1, 0]], ff.tensor([1.0, 2.0, 3.0]), (2, 2))
    b = ff.sparse_coo_tensor([[0, 1], [0, 1]], ff.tensor([4.0, 5.0]), (2, 2))
    ta = torch.sparse_coo_tensor([[0, 0, 1], [1, 1, 0]], [1.0, 2.0, 3.0], (2, 2))
    tb = torch.sparse_coo_tensor([[0, 1], [0, 1]], [4.0, 5.0], (2, 2))
    close((a @ b).to_dense(), torch.sparse.mm(ta, tb).to_dense())
    # no meeting entries: a sparse zero matrix
    c = ff.sparse_coo_tensor([[0], [0]], ff.tensor([1.0]), (2, 2))
    e = ff.sparse_coo_tensor([[1], [1]], ff.tensor([1.0]), (2, 2))
    z = c @ e
    assert z._nnz() == 0 and z.shape == (2, 2)
    close(z.to_dense(), np.zeros((2, 2)))


def test_product_errors_name_the_shapes():
    s = ff.sparse_coo_tensor([[0], [0]], ff.tensor([1.0]), (2, 3))
    with pytest.raises(RuntimeError, match=r"sparse.mm: \(2, 3\) cannot multiply \(2, 3\)"):
        s @ s
    with pytest.raises(RuntimeError, match=r"mm\(dense, sparse\): \(4, 4\) cannot multiply \(2, 3\)"):
        ff.zeros(4, 4) @ s
    with pytest.raises(RuntimeError, match="float64.*float32|float32.*float64"):
        ff.zeros(1, 2, dtype=ff.float64) @ s
