"""fusionflow.nn.utils against torch.nn.utils (1.13): clipping, parameter vectors, packed
sequences, weight_norm and spectral_norm (outputs, gradients, buffers step by step)."""
import math

import numpy as np
import pytest

import fusionflow as ff
import fusionflow.nn as nn
from fusionflow.nn.utils import rnn as ffrnn

torch = pytest.importorskip("torch")
tnn = torch.nn

RNG = np.random.default_rng(3)


def _grads_pair(shapes, scale=1.0):
    arrays = [RNG.standard_normal(s) * scale for s in shapes]
    out = []
    for lib in (ff, torch):
        ps = [lib.tensor(np.zeros(s), requires_grad=True) for s in shapes]
        for p, a in zip(ps, arrays):
            (p * lib.tensor(a)).sum().backward()
        out.append(ps)
    return out


@pytest.mark.parametrize("max_norm,norm_type", [(1.0, 2.0), (100.0, 2.0), (0.5, 1.0), (0.3, math.inf), (2.0, 3.0)])
def test_clip_grad_norm_matches_torch(max_norm, norm_type):
    fps, tps = _grads_pair([(3, 4), (5,)], scale=2.0)
    got = ff.nn.utils.clip_grad_norm_(fps, max_norm, norm_type)
    want = torch.nn.utils.clip_grad_norm_(tps, max_norm, norm_type)
    assert math.isclose(float(got), float(want), rel_tol=1e-6)
    for a, b in zip(fps, tps):
        assert np.allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-5, atol=1e-9)


def test_clip_grad_norm_nonfinite():
    fps, tps = _grads_pair([(2,)])
    fps[0].grad = ff.tensor([float("inf"), 1.0], dtype=ff.float64)
    with pytest.raises(RuntimeError, match="non-finite"):
        ff.nn.utils.clip_grad_norm_(fps, 1.0, error_if_nonfinite=True)
    tps[0].grad = torch.tensor([float("inf"), 1.0], dtype=torch.float64)
    g, w = ff.nn.utils.clip_grad_norm_(fps, 1.0), torch.nn.utils.clip_grad_norm_(tps, 1.0)
    assert math.isinf(float(g)) and math.isinf(float(w))
    assert np.array_equal(np.isnan(fps[0].grad.numpy()), np.isnan(tps[0].grad.numpy()))


def test_clip_grad_value_matches_torch():
    fps, tps = _grads_pair([(3, 4), (2,)], scale=3.0)
    ff.nn.utils.clip_grad_value_(fps, 1.5)
    torch.nn.utils.clip_grad_value_(tps, 1.5)
    for a, b in zip(fps, tps):
        assert np.array_equal(a.grad.numpy(), b.grad.numpy())


def test_parameters_vector_round_trip_matches_torch():
    m_ff = nn.Linear(3, 2, seed=0)
    m_t = tnn.Linear(3, 2)
    with torch.no_grad():
        m_t.weight.copy_(torch.tensor(m_ff.weight.numpy()))
        m_t.bias.copy_(torch.tensor(m_ff.bias.numpy()))
    v_ff = ff.nn.utils.parameters_to_vector(m_ff.parameters())
    v_t = torch.nn.utils.parameters_to_vector(m_t.parameters())
    assert np.array_equal(v_ff.detach().numpy(), v_t.detach().numpy())
    new = np.arange(8, dtype=np.float32)
    w_before = m_ff.weight
    ff.nn.utils.vector_to_parameters(ff.tensor(new), m_ff.parameters())
    torch.nn.utils.vector_to_parameters(torch.tensor(new), m_t.parameters())
    assert m_ff.weight is w_before and m_ff.weight.requires_grad
    assert np.array_equal(m_ff.weight.numpy(), m_t.weight.detach().numpy())
    assert np.array_equal(m_ff.bias.numpy(), m_t.bias.detach().numpy())
    with pytest.raises(ValueError):
        ff.nn.utils.vector_to_parameters(ff.zeros(3), m_ff.parameters())


def _seqs(lib, lengths, requires_grad=False):
    rs = np.random.default_rng(1)
    return [lib.tensor(rs.standard_normal((n, 2)), requires_grad=requires_grad) for n in lengths]


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("lengths,enforce", [([4, 3, 1], True), ([2, 4, 1, 3], False)])
def test_pack_pad_round_trip_matches_torch(batch_first, lengths, enforce):
    res = []
    for lib, R in ((ff, ffrnn), (torch, torch.nn.utils.rnn)):
        seqs = _seqs(lib, lengths, requires_grad=True)
        padded = R.pad_sequence(seqs, batch_first=batch_first, padding_value=-1.0)
        packed = R.pack_padded_sequence(padded, lib.tensor(lengths), batch_first=batch_first,
                                        enforce_sorted=enforce)
        out, lens = R.pad_packed_sequence(packed, batch_first=batch_first, padding_value=7.0, total_length=5)
        w = lib.tensor(np.cos(np.arange(out.numel())).reshape(tuple(out.shape)))
        (out * w).sum().backward()
        ps = R.pack_sequence(seqs, enforce_sorted=enforce)
        res.append([padded.detach().numpy(), packed.data.detach().numpy(), packed.batch_sizes.numpy(),
                    None if packed.sorted_indices is None else packed.sorted_indices.numpy(),
                    out.detach().numpy(), lens.numpy()] + [s.grad.numpy() for s in seqs] +
                   [ps.data.detach().numpy(), ps.batch_sizes.numpy()])
    for a, b in zip(*res):
        if a is None or b is None:
            assert a is None and b is None
        else:
            assert a.shape == b.shape and np.allclose(a, b), (a, b)


def test_pack_padded_refuses_unsorted_lengths():
    x = ff.zeros(2, 3)
    with pytest.raises(RuntimeError, match="enforce_sorted"):
        ffrnn.pack_padded_sequence(x, [1, 3], batch_first=True)


def _copy_linear(src_t, dst_ff):
    dst_ff.weight.copy_(src_t.weight.detach().numpy())
    dst_ff.bias.copy_(src_t.bias.detach().numpy())


@pytest.mark.parametrize("dim", [0, 1, None])
def test_weight_norm_matches_torch(dim):
    torch.manual_seed(0)
    mt = tnn.Linear(4, 3).double()
    mf = nn.Linear(4, 3, seed=0)
    mf.weight.data = ff.tensor(mt.weight.detach().numpy())
    mf.bias.data = ff.tensor(mt.bias.detach().numpy())
    torch.nn.utils.weight_norm(mt, dim=dim)
    ff.nn.utils.weight_norm(mf, dim=dim)
    assert [n for n, _ in mf.named_parameters()] == [n for n, _ in mt.named_parameters()]
    assert np.allclose(mf.weight_g.numpy(), mt.weight_g.detach().numpy())
    x = np.random.default_rng(2).standard_normal((5, 4))
    for step in range(2):
        yf, yt = mf(ff.tensor(x)), mt(torch.tensor(x))
        assert np.allclose(yf.detach().numpy(), yt.detach().numpy(), atol=1e-12)
        (yf ** 2).sum().backward()
        (yt ** 2).sum().backward()
        for a, b in ((mf.weight_g, mt.weight_g), (mf.weight_v, mt.weight_v)):
            assert np.allclose(a.grad.numpy(), b.grad.numpy(), atol=1e-10)
        with torch.no_grad():
            for p in mt.parameters():
                p -= 0.1 * p.grad
                p.grad = None
        for p in mf.parameters():
            p.data = p.detach() - 0.1 * p.grad
            p.grad = None
    ff.nn.utils.remove_weight_norm(mf)
    torch.nn.utils.remove_weight_norm(mt)
    assert [n for n, _ in mf.named_parameters()] == [n for n, _ in mt.named_parameters()]
    assert np.allclose(mf.weight.numpy(), mt.weight.detach().numpy())
    assert np.allclose(mf(ff.tensor(x)).detach().numpy(), mt(torch.tensor(x)).detach().numpy())


def test_spectral_norm_matches_torch_step_by_step():
    torch.manual_seed(0)
    mt = tnn.Linear(5, 4).double()
    mf = nn.Linear(5, 4, seed=0)
    mf.weight.data = ff.tensor(mt.weight.detach().numpy())
    mf.bias.data = ff.tensor(mt.bias.detach().numpy())
    torch.nn.utils.spectral_norm(mt, n_power_iterations=2)
    ff.nn.utils.spectral_norm(mf, n_power_iterations=2)
    mf.weight_u.copy_(mt.weight_u.numpy())  # the random start vectors: torch's
    mf.weight_v.copy_(mt.weight_v.numpy())
    assert sorted(mf.state_dict()) == sorted(mt.state_dict())
    x = np.random.default_rng(4).standard_normal((3, 5))
    for step in range(3):
        yf, yt = mf(ff.tensor(x)), mt(torch.tensor(x))
        assert np.allclose(yf.detach().numpy(), yt.detach().numpy(), atol=1e-12), step
        assert np.allclose(mf.weight_u.numpy(), mt.weight_u.numpy(), atol=1e-12)
        (yf ** 2).sum().backward()
        (yt ** 2).sum().backward()
        assert np.allclose(mf.weight_orig.grad.numpy(), mt.weight_orig.grad.numpy(), atol=1e-10)
    mf.eval(), mt.eval()
    u_before = mf.weight_u.numpy().copy()
    assert np.allclose(mf(ff.tensor(x)).detach().numpy(), mt(torch.tensor(x)).detach().numpy(), atol=1e-12)
    assert np.array_equal(mf.weight_u.numpy(), u_before)  # eval: no power iteration
    ff.nn.utils.remove_spectral_norm(mf)
    torch.nn.utils.remove_spectral_norm(mt)
    assert sorted(mf.state_dict()) == sorted(mt.state_dict())
    assert np.allclose(mf.weight.numpy(), mt.weight.detach().numpy(), atol=1e-12)


def test_double_registration_and_missing_removal_raise():
    m = nn.Linear(2, 2, seed=0)
    ff.nn.utils.weight_norm(m)
    with pytest.raises(RuntimeError):
        ff.nn.utils.weight_norm(m)
    with pytest.raises(ValueError):
        ff.nn.utils.remove_spectral_norm(m)
    ff.nn.utils.remove_weight_norm(m)
    assert "forward" not in m.__dict__
    with pytest.raises(AttributeError):
        ff.nn.utils.weight_norm(m, name="nope")


def test_deepcopy_of_a_normed_module_runs_its_own_hooks():
    import copy
    m = nn.Linear(3, 2, seed=0)
    ff.nn.utils.spectral_norm(m)
    c = copy.deepcopy(m)
    u_m, u_c = m.weight_u.numpy().copy(), c.weight_u.numpy().copy()
    assert np.array_equal(u_m, u_c)
    c.weight_orig.data = c.weight_orig.detach() * 2 + 1
    c(ff.ones(1, 3))
    assert np.array_equal(m.weight_u.numpy(), u_m) and not np.array_equal(c.weight_u.numpy(), u_c)
    m(ff.ones(1, 3))
    assert not np.allclose(c.weight.detach().numpy(), m.weight.detach().numpy())  # each its own weight_orig
