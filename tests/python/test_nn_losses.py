"""Loss modules and functions against torch 1.13: values and input gradients for each
reduction, weights / pos_weight as buffers (state_dict keys), torch's option names."""
import numpy as np
import pytest

import fusionflow as ff
import fusionflow.nn.functional as F
from fusionflow import nn

torch = pytest.importorskip("torch")
from nn_compare import arr, compare_module, compare_fn  # noqa: E402

N, C = 6, 4
X, Y = arr((N, C), 1), arr((N, C), 2)
LABELS = np.array([0, 3, 1, 2, 3, 0])
ML_TARGET = np.array([[3, 0, -1, 1], [1, -1, 0, 0], [0, 1, 2, 3], [2, -1, 0, 0], [-1, 0, 0, 0], [1, 2, -1, 3]])
W = np.array([0.5, 1.0, 2.0, 1.5], np.float32)

CASES = [  # name, ctor kwargs, inputs
    ("BCELoss", {}, [arr((N, C), 3, "prob"), arr((N, C), 4, "binary")]),
    ("BCELoss", {"weight": torch.tensor(W)}, [arr((N, C), 3, "prob"), arr((N, C), 4, "prob")]),
    ("BCEWithLogitsLoss", {}, [X * 5, arr((N, C), 4, "prob")]),
    ("BCEWithLogitsLoss", {"pos_weight": torch.tensor(W), "weight": torch.tensor(W[::-1].copy())},
     [X * 5, arr((N, C), 4, "binary")]),
    ("SmoothL1Loss", {"beta": 0.5}, [X, Y]),
    ("SmoothL1Loss", {"beta": 0.0}, [X, Y]),
    ("HuberLoss", {"delta": 0.7}, [X, Y]),
    ("L1Loss", {}, [X, Y]),
    ("MSELoss", {}, [X, Y]),
    ("KLDivLoss", {"reduction": "batchmean"}, [np.log(arr((N, C), 3, "prob")), arr((N, C), 4, "prob")]),
    ("KLDivLoss", {"log_target": True}, [X, Y]),
    ("PoissonNLLLoss", {}, [X, arr((N, C), 5, "positive") * 3]),
    ("PoissonNLLLoss", {"log_input": False, "full": True}, [arr((N, C), 6, "positive"), arr((N, C), 5, "positive") * 3]),
    ("GaussianNLLLoss", {}, [X, Y, arr((N, C), 7, "positive")]),
    ("GaussianNLLLoss", {"full": True, "eps": 0.3}, [X, Y, arr((N, 1), 7, "positive")]),
    ("MarginRankingLoss", {"margin": 0.3}, [X[:, 0], Y[:, 0], arr((N,), 8, "sign")]),
    ("HingeEmbeddingLoss", {"margin": 0.5}, [X, arr((N, C), 8, "sign")]),
    ("SoftMarginLoss", {}, [X * 4, arr((N, C), 8, "sign")]),
    ("MultiLabelSoftMarginLoss", {}, [X, arr((N, C), 4, "binary")]),
    ("MultiLabelSoftMarginLoss", {"weight": torch.tensor(W)}, [X, arr((N, C), 4, "binary")]),
    ("MultiLabelMarginLoss", {}, [X, ML_TARGET]),
    ("MultiMarginLoss", {}, [X, LABELS]),
    ("MultiMarginLoss", {"p": 2, "margin": 0.7, "weight": torch.tensor(W)}, [X, LABELS]),
    ("CosineEmbeddingLoss", {"margin": 0.2}, [X, Y, arr((N,), 8, "sign")]),
    ("TripletMarginLoss", {"margin": 0.5}, [X, Y, arr((N, C), 9)]),
    ("TripletMarginLoss", {"p": 1.0, "swap": True}, [X, Y, arr((N, C), 9)]),
    ("TripletMarginWithDistanceLoss", {"margin": 0.5, "swap": True}, [X, Y, arr((N, C), 9)]),
    ("NLLLoss", {"weight": torch.tensor(W), "ignore_index": 3}, [X, LABELS]),
    ("CrossEntropyLoss", {"label_smoothing": 0.25}, [X, LABELS]),
]


def _ctor(kwargs, reduction):
    kw = dict(kwargs)
    if "reduction" not in kw:
        kw["reduction"] = reduction
    return kw


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("name,kwargs,inputs", CASES, ids=[c[0] + str(i) for i, c in enumerate(CASES)])
def test_loss_module_matches_torch(name, kwargs, inputs, reduction):
    inputs = [np.asarray(a) if a.dtype.kind == "f" else torch.tensor(a) for a in inputs]
    # integer targets: the same values on both sides
    ours_in = [ff.tensor(a.numpy()) if isinstance(a, torch.Tensor) else a for a in inputs]
    from nn_compare import as_pair, compare_outputs
    kw = _ctor(kwargs, reduction)
    theirs = getattr(torch.nn, name)(**kw)
    ours = getattr(nn, name)(**{k: (ff.tensor(v.numpy()) if isinstance(v, torch.Tensor) else v) for k, v in kw.items()})
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert repr(ours) == repr(theirs)
    ngrad = {"MarginRankingLoss": 2, "CosineEmbeddingLoss": 2, "TripletMarginLoss": 3,
             "TripletMarginWithDistanceLoss": 3, "GaussianNLLLoss": 3}.get(name, 1)
    pairs = [as_pair(a, i < ngrad) if isinstance(a, np.ndarray) else (o, a)
             for i, (a, o) in enumerate(zip(inputs, ours_in))]
    compare_outputs(ours(*[p[0] for p in pairs]), theirs(*[p[1] for p in pairs]), pairs, [], {}, 2e-5, True)


def test_functional_names_and_legacy_reduction_args():
    compare_fn("binary_cross_entropy_with_logits", [X, arr((N, C), 4, "prob")], {"reduction": "sum"})
    compare_fn("huber_loss", [X, Y], {"delta": 2.0})
    compare_fn("mse_loss", [X, Y], {"size_average": False})  # torch's deprecated args fold into reduction
    compare_fn("l1_loss", [X, Y], {"reduce": False})
    compare_fn("poisson_nll_loss", [X, arr((N, C), 5, "positive")], {"full": True}, ngrad=1)
    with pytest.raises(ValueError, match="Target size"):
        F.binary_cross_entropy_with_logits(ff.tensor(X), ff.tensor(X[:, :2]))
    with pytest.raises(ValueError, match="negative"):
        F.gaussian_nll_loss(ff.tensor(X), ff.tensor(Y), ff.tensor(-np.ones((N, C), np.float32)))
    with pytest.raises(ValueError, match="reduction"):
        F.huber_loss(ff.tensor(X), ff.tensor(Y), reduction="avg")


def test_bce_with_logits_is_finite_for_large_logits():
    x = np.array([-500.0, -50.0, 0.0, 50.0, 500.0], np.float32)
    compare_fn("binary_cross_entropy_with_logits", [x, np.array([1, 0, 1, 1, 0], np.float32)])
    # torch's soft_margin_loss is log1p(exp(-y x)), inf past x ~ 88; ours stays finite there
    sm = F.soft_margin_loss(ff.tensor(x), ff.tensor(np.array([1, -1, 1, -1, 1], np.float32)), reduction="none")
    np.testing.assert_allclose(sm.numpy(), [500, 0, np.log(2), 50, 0], rtol=1e-6, atol=1e-6)


def test_distances_and_normalize_match_torch():
    compare_fn("cosine_similarity", [X, Y])
    compare_fn("cosine_similarity", [X, Y[:1]], {"dim": 1, "eps": 1e-3})  # broadcast
    compare_fn("pairwise_distance", [X, Y], {"p": 3.0, "keepdim": True})
    compare_fn("pdist", [X])
    compare_fn("pdist", [X], {"p": 1.0})
    compare_fn("normalize", [X], {"p": 1.0, "dim": 0})
    compare_fn("normalize", [np.zeros((2, 3), np.float32)])  # eps keeps zero rows finite
    compare_module("CosineSimilarity", (), {"dim": 0}, [X, Y], check_repr=True)
    compare_module("PairwiseDistance", (1.0,), {}, [X, Y])


def test_one_hot_and_gumbel_softmax():
    t = np.array([2, 0, 1, 4])
    np.testing.assert_array_equal(F.one_hot(ff.tensor(t)).numpy(), torch.nn.functional.one_hot(torch.tensor(t)).numpy())
    ff.manual_seed(1)
    logits = ff.tensor(X, requires_grad=True)
    soft = F.gumbel_softmax(logits, tau=0.5)
    np.testing.assert_allclose(soft.numpy().sum(1), 1.0, rtol=1e-5)
    hard = F.gumbel_softmax(logits, hard=True)
    assert set(np.unique(hard.numpy())) <= {0.0, 1.0} and np.allclose(hard.numpy().sum(1), 1.0)
    (hard * ff.tensor(Y)).sum().backward()  # straight-through: the soft sample's gradient
    assert logits.grad is not None and np.abs(logits.grad.numpy()).sum() > 0
    # frequencies of the argmax follow softmax(logits)
    ff.manual_seed(2)
    lg = ff.tensor(np.log(np.array([[0.7, 0.2, 0.1]], np.float32))).expand(4000, 3)
    freq = F.gumbel_softmax(lg, hard=True).numpy().mean(0)
    np.testing.assert_allclose(freq, [0.7, 0.2, 0.1], atol=0.03)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_ctc_loss_matches_torch(reduction):
    t, n, c = 12, 4, 5
    x = arr((t, n, c), 11)
    padded = np.array([[1, 2, 2, 0], [3, 3, 3, 1], [4, 1, 0, 0], [2, 0, 0, 0]])
    tl, il = np.array([3, 2, 1, 0]), np.array([12, 9, 7, 5])
    concat = np.concatenate([padded[i, :tl[i]] for i in range(n)])
    for targets in (padded, concat):
        a, b = ff.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
        m = nn.CTCLoss(reduction=reduction)
        assert repr(m) == repr(torch.nn.CTCLoss(reduction=reduction))
        y = m(a.log_softmax(2), ff.tensor(targets), ff.tensor(il), ff.tensor(tl))
        ty = torch.nn.CTCLoss(reduction=reduction)(b.log_softmax(2), torch.tensor(targets), torch.tensor(il),
                                                     torch.tensor(tl))
        np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy(), rtol=1e-5, atol=1e-5)
        y.sum().backward()
        ty.sum().backward()
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-4, atol=1e-5)


def test_ctc_loss_impossible_alignment_and_unbatched():
    x = arr((3, 4), 12)  # 3 frames cannot hold "1 1 1" (needs blanks between repeats: 5 frames)
    for zi in (False, True):
        a, b = ff.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
        y = F.ctc_loss(a.log_softmax(1), ff.tensor([1, 1, 1]), [3], [3], reduction="sum", zero_infinity=zi)
        ty = torch.nn.functional.ctc_loss(b.log_softmax(1), torch.tensor([1, 1, 1]), torch.tensor(3),
                                          torch.tensor(3), reduction="sum", zero_infinity=zi)
        assert y.item() == ty.item()  # inf, or 0 with zero_infinity
        if zi:
            y.backward()
            ty.backward()
            np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), atol=1e-6)
    compare_fn("ctc_loss", [np.log(arr((6, 4), 13, "prob")), np.array([1, 2]), (6,), (2,)], {"reduction": "none"},
               ngrad=1, tol=1e-4)
    with pytest.raises(RuntimeError, match="blank"):
        F.ctc_loss(ff.tensor(arr((6, 1, 4), 1)), ff.tensor([[0, 1]]), [6], [2])


def test_adaptive_log_softmax_with_loss_matches_torch():
    kw = dict(in_features=8, n_classes=20, cutoffs=[4, 10, 15], div_value=2.0, head_bias=True)
    t, o = torch.nn.AdaptiveLogSoftmaxWithLoss(**kw), nn.AdaptiveLogSoftmaxWithLoss(**kw)
    assert repr(o) == repr(t) and list(o.state_dict()) == list(t.state_dict())
    o.load_state_dict({k: v.detach().numpy() for k, v in t.state_dict().items()})
    x = arr((9, 8), 14)
    target = np.array([0, 3, 4, 9, 10, 14, 15, 19, 2])
    a, b = ff.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    out, loss = o(a, ff.tensor(target))
    tout, tloss = t(b, torch.tensor(target))
    np.testing.assert_allclose(out.detach().numpy(), tout.detach().numpy(), rtol=1e-5, atol=1e-6)
    loss.backward()
    tloss.backward()
    np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-4, atol=1e-6)
    for (k, p), (_, q) in zip(o.named_parameters(), t.named_parameters()):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-4, atol=1e-6, err_msg=k)
    np.testing.assert_allclose(o.log_prob(ff.tensor(x)).detach().numpy(), t.log_prob(torch.tensor(x)).detach().numpy(),
                               rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(o.predict(ff.tensor(x)).numpy(), t.predict(torch.tensor(x)).numpy())
    single, _ = o(ff.tensor(x[0]), ff.tensor(np.array(12)))
    assert single.shape == ()
    with pytest.raises(RuntimeError, match="Target values"):
        o(ff.tensor(x), ff.tensor(np.full(9, 20)))
    with pytest.raises(ValueError, match="cutoffs"):
        nn.AdaptiveLogSoftmaxWithLoss(8, 20, [10, 4])


def test_binary_cross_entropy_gradient_at_saturation_as_torch():
    """siamese_network's sigmoid saturates: torch's gradient (p - t) / max(p (1 - p), 1e-12)
    still pushes back where the clamped log's derivative is 0."""
    vals = [1.0, 0.0, 0.5, 1e-13, 0.3, 0.999]
    tgt = [0.0, 1.0, 1.0, 1.0, 0.3, 1.0]
    w = [2.0, 1.0, 0.5, 1.0, 3.0, 1.0]
    for reduction in ("mean", "sum", "none"):
        p = ff.tensor(vals, requires_grad=True)
        tp = torch.tensor(vals, requires_grad=True)
        out = F.binary_cross_entropy(p, ff.tensor(tgt), weight=ff.tensor(w), reduction=reduction)
        tout = torch.nn.functional.binary_cross_entropy(tp, torch.tensor(tgt), weight=torch.tensor(w),
                                                        reduction=reduction)
        assert np.allclose(out.detach().numpy(), tout.detach().numpy(), rtol=1e-6)
        (out.sum() if reduction == "none" else out).backward()
        (tout.sum() if reduction == "none" else tout).backward()
        assert np.allclose(p.grad.numpy(), tp.grad.numpy(), rtol=1e-6), (p.grad.numpy(), tp.grad.numpy())
