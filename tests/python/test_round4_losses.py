"""Losses issue 47 found wrong, item by item, against PyTorch 1.13: the target's gradient
(BCE gave none; every loss torch differentiates w.r.t. the target is checked), ctc_loss's
nan gradient for an impossible alignment and its all-empty targets, multilabel_margin_loss
with a repeated target id, multi_margin_loss and pdist off the default device, and the
arguments torch refuses (a loss weight that requires grad, ctc lengths of two kinds)."""
import numpy as np
import pytest

import fusionflow as ff
import fusionflow.nn.functional as F

torch = pytest.importorskip("torch")  # CI sets FF_REQUIRE_TORCH=1: conftest imports it first
import torch.nn.functional as TF  # noqa: E402

from conftest import DEVICES, make_close  # noqa: E402  (cpu_ref, and cpu_blas / opencl when built)

close = make_close(1e-5, equal_nan=True)


def pair(data, device, grad=False, dtype="float32"):
    """The same values as (ours on device, torch's)."""
    a = np.asarray(data, dtype=dtype)
    return (ff.tensor(a, device=device, requires_grad=grad),
            torch.tensor(a, requires_grad=grad))


def grads_of(lib_fn, *args):
    """loss = lib_fn(*args); loss.sum().backward(); (loss, [arg.grad for each arg])."""
    loss = lib_fn(*args)
    loss.sum().backward()
    return loss, [a.grad for a in args]


def same_grads(ours, theirs):
    for g, w in zip(ours, theirs):
        assert (g is None) == (w is None), (g, w)
        if w is not None:
            close(g, w)


# ---- 2. the target's gradient, in every loss torch differentiates w.r.t. its target ------------
@pytest.mark.parametrize("device", DEVICES)
def test_bce_target_gets_torchs_gradient(device):
    """The issue's case: target.grad was None, torch [0.4236, -0.2027]."""
    (x, tx), (t, tt) = pair([0.3, 0.6], device, True), pair([0.2, 0.9], device, True)
    F.binary_cross_entropy(x, t).backward()
    TF.binary_cross_entropy(tx, tt).backward()
    close(t.grad, [0.4236, -0.2027], 1e-4)
    close(t.grad, tt.grad)
    close(x.grad, tx.grad)


@pytest.mark.parametrize("device", DEVICES)
def test_bce_target_gradient_is_unclamped_at_saturated_inputs(device):
    """log(1 - p) - log(p) is +-inf at p = 0 and 1, as torch; the loss value stays finite
    (the logs there are clamped at -100) and the other entries are unharmed."""
    for reduction in ("sum", "none"):
        (x, tx), (t, tt) = pair([0.0, 1.0, 0.5, 1e-30], device, True), pair([0.5, 0.5, 0.5, 0.5], device, True)
        got, [gx, gt] = grads_of(lambda a, b: F.binary_cross_entropy(a, b, reduction=reduction), x, t)
        want, [wx, wt] = grads_of(lambda a, b: TF.binary_cross_entropy(a, b, reduction=reduction), tx, tt)
        close(got, want)
        assert np.isfinite(got.detach().numpy()).all()
        close(gt, wt)
        assert gt.numpy()[0] == np.inf and gt.numpy()[1] == -np.inf
        close(gx, wx, 1e-4)


P = [[0.3, 0.6, 0.15], [0.8, 0.45, 0.7]]
Q = [[0.2, 0.9, 0.35], [0.5, 0.05, 0.6]]
SIGN = [[1.0, -1.0, 1.0], [-1.0, -1.0, 1.0]]
W3 = [0.5, 1.0, 2.0]

TARGET_GRAD_CASES = {  # name -> (loss(lib's F, lib's tensor maker, input, target), input, target)
    "binary_cross_entropy": (lambda M, T, x, t: M.binary_cross_entropy(x, t), P, Q),
    "binary_cross_entropy_weight_sum": (lambda M, T, x, t: M.binary_cross_entropy(
        x, t, weight=T(W3), reduction="sum"), P, Q),
    "binary_cross_entropy_with_logits": (lambda M, T, x, t: M.binary_cross_entropy_with_logits(
        x, t, pos_weight=T(W3)), P, Q),
    "mse_loss": (lambda M, T, x, t: M.mse_loss(x, t), P, Q),
    "mse_loss_none": (lambda M, T, x, t: M.mse_loss(x, t, reduction="none"), P, Q),
    "l1_loss": (lambda M, T, x, t: M.l1_loss(x, t, reduction="sum"), P, Q),
    "smooth_l1_loss": (lambda M, T, x, t: M.smooth_l1_loss(x, t, beta=0.3), P, Q),
    "huber_loss": (lambda M, T, x, t: M.huber_loss(x, t, delta=0.3), P, Q),
    "kl_div": (lambda M, T, x, t: M.kl_div(x.log(), t, reduction="batchmean"), P, Q),
    "kl_div_log_target": (lambda M, T, x, t: M.kl_div(x, t, log_target=True, reduction="sum"), P, Q),
    "poisson_nll_loss": (lambda M, T, x, t: M.poisson_nll_loss(x, t), P, Q),
    "poisson_nll_loss_full": (lambda M, T, x, t: M.poisson_nll_loss(x, t * 3, log_input=False, full=True), P, Q),
    "gaussian_nll_loss": (lambda M, T, x, t: M.gaussian_nll_loss(x, t, T([[0.5], [2.0]])), P, Q),
    "multilabel_soft_margin_loss": (lambda M, T, x, t: M.multilabel_soft_margin_loss(x, t), P, Q),
    "cross_entropy_probabilities": (lambda M, T, x, t: M.cross_entropy(x, t, label_smoothing=0.2), P, Q),
    "margin_ranking_loss": (lambda M, T, x, t: M.margin_ranking_loss(x[0], x[1], t[0], margin=0.5), P, SIGN),
    "hinge_embedding_loss": (lambda M, T, x, t: M.hinge_embedding_loss(x, t), P, SIGN),  # torch: none
}


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", sorted(TARGET_GRAD_CASES))
def test_loss_gradients_reach_the_target_as_in_torch(name, device):
    loss, x_data, t_data = TARGET_GRAD_CASES[name]
    (x, tx), (t, tt) = pair(x_data, device, True), pair(t_data, device, True)
    ours = lambda T: ff.tensor(np.asarray(T, np.float32), device=device)
    theirs = lambda T: torch.tensor(np.asarray(T, np.float32))
    got, g = grads_of(lambda a, b: loss(F, ours, a, b), x, t)
    want, w = grads_of(lambda a, b: loss(TF, theirs, a, b), tx, tt)
    close(got, want)
    same_grads(g, w)


# ---- 15 (part). arguments torch has no gradient for, given requires_grad: torch refuses ------------
REFUSED = {  # name -> (call(lib's F, lib's tensor maker), function named, argument named)
    "bce_weight": (lambda M, T: M.binary_cross_entropy(T(P), T(Q), weight=T(W3, True)),
                   "binary_cross_entropy", "weight"),
    "bce_logits_weight": (lambda M, T: M.binary_cross_entropy_with_logits(T(P), T(Q), weight=T(W3, True)),
                          "binary_cross_entropy_with_logits", "weight"),
    "bce_logits_pos_weight": (lambda M, T: M.binary_cross_entropy_with_logits(T(P), T(Q), pos_weight=T(W3, True)),
                              "binary_cross_entropy_with_logits", "pos_weight"),
    "nll_loss_weight": (lambda M, T: M.nll_loss(T(P), T([0, 2], dtype="int64"), weight=T(W3, True)),
                        "nll_loss", "weight"),
    "cross_entropy_weight": (lambda M, T: M.cross_entropy(T(P), T([0, 2], dtype="int64"), weight=T(W3, True)),
                             "cross_entropy", "weight"),
    "multi_margin_loss_weight": (lambda M, T: M.multi_margin_loss(T(P), T([0, 2], dtype="int64"), weight=T(W3, True)),
                                 "multi_margin_loss", "weight"),
    "soft_margin_loss_target": (lambda M, T: M.soft_margin_loss(T(P), T(SIGN, True)), "soft_margin_loss", "target"),
}


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("case", sorted(REFUSED))
def test_argument_without_a_gradient_that_requires_grad_raises(case, device):
    fn, fname, arg = REFUSED[case]
    ours = lambda v, g=False, dtype="float32": ff.tensor(np.asarray(v, dtype), device=device, requires_grad=g)
    theirs = lambda v, g=False, dtype="float32": torch.tensor(np.asarray(v, dtype), requires_grad=g)
    with pytest.raises(RuntimeError, match="not differentiable with respect to argument"):
        fn(TF, theirs)
    with pytest.raises(RuntimeError, match="'%s' is not differentiable with respect to argument '%s'" % (fname, arg)):
        fn(F, ours)
    with torch.no_grad():  # without grad mode both accept it and agree
        want = fn(TF, theirs)
    with ff.no_grad():
        close(fn(F, ours), want)


# ---- 3. ctc_loss: an impossible alignment has loss inf and a nan gradient ---------------------------
LP = np.log(np.random.RandomState(1).dirichlet(np.ones(3), size=(4, 2))).astype(np.float32)  # [T=4, N=2, C=3]
CTC_TARGETS = [[1, 1, 1], [1, 2, 0]]  # sample 0 needs 5 frames (1 _ 1 _ 1), has 3


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("zero_infinity", [False, True])
def test_ctc_impossible_alignment_has_torchs_nan_gradient(device, reduction, zero_infinity):
    """nan on the frames in use of the dead sample, 0 past its input length, the live sample
    untouched (issue: 0 where torch has nan); zero_infinity gives 0 and 0."""
    lp, tlp = pair(LP, device, True)
    kw = dict(reduction=reduction, zero_infinity=zero_infinity)
    got = F.ctc_loss(lp, ff.tensor(CTC_TARGETS, device=device), [3, 4], [3, 2], **kw)
    want = TF.ctc_loss(tlp, torch.tensor(CTC_TARGETS), [3, 4], [3, 2], **kw)
    got.sum().backward()
    want.sum().backward()
    close(got, want, 1e-4)
    close(lp.grad, tlp.grad, 1e-4)
    assert np.isnan(lp.grad.numpy()[:3, 0]).all() != zero_infinity


@pytest.mark.parametrize("device", DEVICES)
def test_ctc_impossible_alignment_single_frame(device):
    """The issue's shape: one frame, a target of two equal labels: grad [[nan, nan]]."""
    lp, tlp = pair([[[-0.5, -1.0]]], device, True)
    F.ctc_loss(lp, ff.tensor([[1, 1]], device=device), [1], [2]).backward()
    TF.ctc_loss(tlp, torch.tensor([[1, 1]]), [1], [2]).backward()
    assert np.isnan(tlp.grad.numpy()).all()
    close(lp.grad, tlp.grad)


# ---- 9. ctc_loss with every target empty --------------------------------------------------------------
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("targets", [np.zeros((2, 0), np.int64), np.zeros((2, 1), np.int64), np.zeros(0, np.int64)],
                         ids=["2d_empty", "2d_padded", "1d"])
def test_ctc_all_target_lengths_zero(device, targets):
    """IndexError before; torch [1.0986, 3.2958]: -log P(all blanks) = -T log(1/3)."""
    lp, tlp = pair(np.full((3, 2, 3), np.log(1 / 3)), device, True)
    got = F.ctc_loss(lp, ff.tensor(targets, device=device), [1, 3], [0, 0], reduction="none")
    want = TF.ctc_loss(tlp, torch.tensor(targets), [1, 3], [0, 0], reduction="none")
    close(got, want)
    close(want, [1.0986, 3.2958], 1e-4)
    got.sum().backward()
    want.sum().backward()
    close(lp.grad, tlp.grad)


@pytest.mark.parametrize("device", DEVICES)
def test_ctc_no_frames_and_empty_target_is_certain(device):
    """input length 0 with target length 0: loss 0 and gradient 0 (torch), not inf."""
    lp, tlp = pair(np.full((3, 2, 3), np.log(1 / 3)), device, True)
    got = F.ctc_loss(lp, ff.zeros((2, 0), dtype="int64", device=device), [0, 3], [0, 0], reduction="none")
    want = TF.ctc_loss(tlp, torch.zeros((2, 0), dtype=torch.long), [0, 3], [0, 0], reduction="none")
    close(got, want)
    got.sum().backward()
    want.sum().backward()
    close(lp.grad, tlp.grad)


# ---- 15 (part). ctc_loss lengths: both tensors or both sequences ----------------------------------------
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("mixed", ["tensor_and_tuple", "tuple_and_tensor"])
def test_ctc_mixed_length_kinds_raise_type_error(device, mixed):
    lp, tlp = pair(np.full((3, 2, 3), np.log(1 / 3)), device)
    kinds = lambda mk: (mk([3, 3]), (1, 1)) if mixed == "tensor_and_tuple" else ((3, 3), mk([1, 1]))
    with pytest.raises(TypeError):
        TF.ctc_loss(tlp, torch.ones((2, 1), dtype=torch.long), *kinds(torch.tensor))
    with pytest.raises(TypeError, match="ctc_loss.*input_lengths and target_lengths must both be tensors"):
        F.ctc_loss(lp, ff.ones((2, 1), dtype="int64", device=device), *kinds(lambda v: ff.tensor(v, device=device)))
    # both of one kind agree with torch
    close(F.ctc_loss(lp, ff.ones((2, 1), dtype="int64", device=device), ff.tensor([3, 3], device=device),
                     ff.tensor([1, 1], device=device)),
          TF.ctc_loss(tlp, torch.ones((2, 1), dtype=torch.long), torch.tensor([3, 3]), torch.tensor([1, 1])))


# ---- 4. multilabel_margin_loss: a repeated target id counts twice ------------------------------------
ML_X = [[0.1, 0.2, 0.4, 0.8], [0.5, -0.3, 0.9, 0.0], [0.3, 0.1, -0.2, 0.7]]
ML_Y = [[1, 1, 3, -1], [2, 0, 2, 2], [0, -1, 0, 0]]  # repeats; a row of one repeated id; ids after -1 ignored


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("reduction", ["mean", "none"])
def test_multilabel_margin_loss_counts_repeated_ids(device, reduction):
    (x, tx) = pair(ML_X, device, True)
    got = F.multilabel_margin_loss(x, ff.tensor(ML_Y, device=device), reduction=reduction)
    want = TF.multilabel_margin_loss(tx, torch.tensor(ML_Y), reduction=reduction)
    close(got, want)
    close(TF.multilabel_margin_loss(torch.tensor(ML_X[:1]), torch.tensor(ML_Y[:1])), 1.275)  # 0.75 before
    got.sum().backward()
    want.sum().backward()
    close(x.grad, tx.grad)


# ---- 6, 7. multi_margin_loss and pdist on every device, against torch ---------------------------------
@pytest.mark.parametrize("device", DEVICES)
def test_multi_margin_loss_on_every_device(device):
    (x, tx) = pair(ML_X, device, True)
    for kw in ({}, {"p": 2, "margin": 0.7}):
        got = F.multi_margin_loss(x, ff.tensor([3, 0, 2], device=device), weight=ff.tensor(
            [0.5, 1.0, 2.0, 1.5], device=device), **kw)
        want = TF.multi_margin_loss(tx, torch.tensor([3, 0, 2]), weight=torch.tensor([0.5, 1.0, 2.0, 1.5]), **kw)
        assert got.device == x.device
        close(got, want)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("p", [1.0, 2.0])
def test_pdist_on_every_device(device, p):
    (x, tx) = pair(ML_X, device, True)
    got, want = F.pdist(x, p), TF.pdist(tx, p)
    assert got.device == x.device
    close(got, want)
    got.sum().backward()
    want.sum().backward()
    close(x.grad, tx.grad)
