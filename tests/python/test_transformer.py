"""nn.MultiheadAttention, F.multi_head_attention_forward and the Transformer modules against
PyTorch 1.13: the same state dict (loaded from torch into ours, and from ours into torch),
then outputs, attention weights, and the gradients of the inputs and of every parameter.

Value tests use dropout=0 in train mode, and eval() with parameters that require grad:
both keep torch 1.13 off its eval-mode fast paths (_native_multi_head_attention,
_transformer_encoder_layer_fwd), whose numerics differ slightly. One test compares with
the fast path on (eval, no_grad, batch_first, even heads), at a looser tolerance."""
import numpy as np
import pytest
import torch

import fusionflow as ff
from fusionflow import nn
import fusionflow.nn.functional as F

TOL = 1e-4
E, H = 16, 4  # embed dim, heads (head dim 4)
L, S, N = 5, 7, 3  # target length, source length, batch


def rnd(shape, seed):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def both(a, grad=True):
    """An array as (ours, torch's); float arrays require grad."""
    rg = grad and a.dtype.kind == "f"
    return ff.tensor(a, requires_grad=rg), torch.tensor(a, requires_grad=rg)


def pair(name, *args, **kwargs):
    """nn.<name>(*args, **kwargs) in both libraries, torch's weights loaded into ours."""
    theirs = getattr(torch.nn, name)(*args, **kwargs)
    ours = getattr(nn, name)(*args, **kwargs)
    assert repr(ours) == repr(theirs)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    for (k, a), b in zip(ours.state_dict().items(), theirs.state_dict().values()):
        assert tuple(a.shape) == tuple(b.shape), k
    ours.load_state_dict({k: v.detach().numpy() for k, v in theirs.state_dict().items()})
    return ours, theirs


def check(ours, theirs, y, ty, ins, tol=TOL):
    """Outputs (a tensor or a tuple with None) equal; then the gradients of sum(y * g) for
    the inputs in ins (pairs) and for every parameter."""
    ys = y if isinstance(y, tuple) else (y,)
    tys = ty if isinstance(ty, tuple) else (ty,)
    loss, tloss = 0, 0
    for i, (a, b) in enumerate(zip(ys, tys)):
        assert (a is None) == (b is None), i
        if b is None:
            continue
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=tol, atol=tol, err_msg="output %d" % i)
        g = rnd(tuple(b.shape), 90 + i)
        loss = loss + (a * ff.tensor(g)).sum()
        tloss = tloss + (b * torch.tensor(g)).sum()
    loss.backward()
    tloss.backward()
    for i, (a, b) in enumerate(ins):
        if b.requires_grad:
            np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=tol, atol=tol, err_msg="input %d" % i)
    tparams = dict(theirs.named_parameters())
    names = [k for k, _ in ours.named_parameters()]
    assert names == list(tparams)
    for k, p in ours.named_parameters():
        np.testing.assert_allclose(p.grad.numpy(), tparams[k].grad.numpy(), rtol=tol, atol=tol, err_msg=k)


def seq(t, b, e, seed, batch_first):
    return rnd((b, t, e) if batch_first else (t, b, e), seed)


# ---- MultiheadAttention ---------------------------------------------------------------

@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("need_weights,average", [(True, True), (True, False), (False, True)])
def test_mha_self_attention(batch_first, need_weights, average):
    ours, theirs = pair("MultiheadAttention", E, H, batch_first=batch_first)
    x = both(seq(L, N, E, 1, batch_first))
    y = ours(x[0], x[0], x[0], need_weights=need_weights, average_attn_weights=average)
    ty = theirs(x[1], x[1], x[1], need_weights=need_weights, average_attn_weights=average)
    check(ours, theirs, y, ty, [x])


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("kdim,vdim", [(None, None), (6, 10)])
@pytest.mark.parametrize("need_weights", [True, False])
def test_mha_cross_attention(batch_first, kdim, vdim, need_weights):
    ours, theirs = pair("MultiheadAttention", E, H, kdim=kdim, vdim=vdim, batch_first=batch_first)
    q = both(seq(L, N, E, 2, batch_first))
    k = both(seq(S, N, kdim or E, 3, batch_first))
    v = both(seq(S, N, vdim or E, 4, batch_first))
    y = ours(q[0], k[0], v[0], need_weights=need_weights)
    ty = theirs(q[1], k[1], v[1], need_weights=need_weights)
    check(ours, theirs, y, ty, [q, k, v])


def _masks(kind, seed):
    """(attn_mask, key_padding_mask) as numpy arrays; no query row is fully masked (1.13
    gives NaN there, the attention op 0)."""
    rng = np.random.default_rng(seed)
    kpm = rng.random((N, S)) < 0.3
    kpm[:, 0] = False
    causal_ish = rng.random((L, S)) < 0.4
    causal_ish[:, 1] = False
    am3 = rng.random((N * H, L, S)) < 0.4
    am3[:, :, 2] = False
    return {
        "kpm_bool": (None, kpm),
        "kpm_float": (None, np.where(kpm, -1e9, 0.0).astype(np.float32) + rnd((N, S), seed)),
        "attn2_bool": (causal_ish, None),
        "attn2_float": (rnd((L, S), seed), None),
        "attn3_float": (rnd((N * H, L, S), seed), None),
        "attn3_bool_kpm_bool": (am3, kpm),
        "attn2_float_kpm_bool": (rnd((L, S), seed), kpm),
    }[kind]


def _opt(a):
    return (None, None) if a is None else (ff.tensor(a), torch.tensor(a))


MASKS = ["kpm_bool", "kpm_float", "attn2_bool", "attn2_float", "attn3_float", "attn3_bool_kpm_bool",
         "attn2_float_kpm_bool"]


@pytest.mark.parametrize("kind", MASKS)
@pytest.mark.parametrize("need_weights", [True, False])
def test_mha_masks(kind, need_weights):
    ours, theirs = pair("MultiheadAttention", E, H)
    am, kpm = (_opt(a) for a in _masks(kind, 5))
    q, kv = both(rnd((L, N, E), 6)), both(rnd((S, N, E), 7))
    y = ours(q[0], kv[0], kv[0], key_padding_mask=kpm[0], attn_mask=am[0], need_weights=need_weights)
    ty = theirs(q[1], kv[1], kv[1], key_padding_mask=kpm[1], attn_mask=am[1], need_weights=need_weights)
    check(ours, theirs, y, ty, [q, kv])


@pytest.mark.parametrize("add_bias_kv,add_zero_attn", [(True, False), (False, True), (True, True)])
@pytest.mark.parametrize("kind", ["attn3_bool_kpm_bool", "attn2_float_kpm_bool"])
@pytest.mark.parametrize("need_weights", [True, False])
def test_mha_bias_kv_zero_attn(add_bias_kv, add_zero_attn, kind, need_weights):
    ours, theirs = pair("MultiheadAttention", E, H, add_bias_kv=add_bias_kv, add_zero_attn=add_zero_attn)
    am, kpm = (_opt(a) for a in _masks(kind, 8))
    q, kv = both(rnd((L, N, E), 9)), both(rnd((S, N, E), 10))
    y = ours(q[0], kv[0], kv[0], key_padding_mask=kpm[0], attn_mask=am[0], need_weights=need_weights)
    ty = theirs(q[1], kv[1], kv[1], key_padding_mask=kpm[1], attn_mask=am[1], need_weights=need_weights)
    check(ours, theirs, y, ty, [q, kv])


@pytest.mark.parametrize("need_weights", [True, False])
def test_mha_no_bias_unbatched(need_weights):
    ours, theirs = pair("MultiheadAttention", E, H, bias=False)
    q, kv = both(rnd((L, E), 11)), both(rnd((S, E), 12))
    am = _opt(rnd((H, L, S), 13))
    y = ours(q[0], kv[0], kv[0], attn_mask=am[0], need_weights=need_weights, average_attn_weights=False)
    ty = theirs(q[1], kv[1], kv[1], attn_mask=am[1], need_weights=need_weights, average_attn_weights=False)
    check(ours, theirs, y, ty, [q, kv])


@pytest.mark.parametrize("need_weights", [True, False])
def test_mha_is_causal_is_the_square_subsequent_mask(need_weights):
    """is_causal (PyTorch 2's argument; 1.13 has none) equals 1.13 with the causal mask."""
    ours, theirs = pair("MultiheadAttention", E, H)
    x = both(rnd((L, N, E), 14))
    kpm = _opt(_masks("kpm_bool", 15)[1][:, :L])
    y = ours(x[0], x[0], x[0], key_padding_mask=kpm[0], need_weights=need_weights, is_causal=True)
    ty = theirs(x[1], x[1], x[1], key_padding_mask=kpm[1], need_weights=need_weights,
                attn_mask=torch.nn.Transformer.generate_square_subsequent_mask(L))
    check(ours, theirs, y, ty, [x])


def test_mha_functional_matches_torch():
    """F.multi_head_attention_forward called directly, with separate projection weights."""
    ins = [both(rnd(s, 20 + i)) for i, s in enumerate([(L, N, E), (S, N, 6), (S, N, 10), (E, E), (E, 6),
                                                         (E, 10), (3 * E,), (E, E), (E,)])]
    q, k, v, wq, wk, wv, b, wo, bo = ins

    def run(lib, fn, j):
        out = fn(q[j], k[j], v[j], E, H, None, b[j], None, None, False, 0.0, wo[j], bo[j],
                 use_separate_proj_weight=True, q_proj_weight=wq[j], k_proj_weight=wk[j], v_proj_weight=wv[j])
        return out[0], out[1]
    y = run(ff, F.multi_head_attention_forward, 0)
    ty = run(torch, torch.nn.functional.multi_head_attention_forward, 1)
    empty = nn.Module(), torch.nn.Module()
    check(empty[0], empty[1], y, ty, ins)


def test_mha_need_weights_false_uses_the_attention_op(monkeypatch):
    """need_weights=False goes through F.scaled_dot_product_attention (one op, no T x T
    scores); need_weights=True computes the weights it returns without it."""
    calls = []
    real = F.scaled_dot_product_attention

    def spy(*args, **kwargs):
        calls.append(kwargs.get("attn_mask"))
        return real(*args, **kwargs)
    monkeypatch.setattr(F, "scaled_dot_product_attention", spy)
    m = nn.MultiheadAttention(E, H)
    x = ff.tensor(rnd((L, N, E), 30))
    m(x, x, x, need_weights=True)
    assert calls == []
    kpm = ff.tensor(_masks("kpm_bool", 31)[1][:, :L])
    m(x, x, x, need_weights=False, key_padding_mask=kpm)
    assert len(calls) == 1
    assert tuple(calls[0].shape) == (N, 1, L, L)
    assert calls[0].stride()[2] == 0  # the padding mask stays a broadcast [N, 1, 1, S], no [N*H, L, S] copy


def test_mha_fully_masked_query():
    """Every key of batch 0 padded: without weights the op's rule gives a zero attention
    output (so out_proj's bias); with weights, 1.13's NaN."""
    m = nn.MultiheadAttention(E, H)
    with ff.no_grad():
        m.out_proj.bias.copy_(ff.tensor(rnd((E,), 34)))
    x = ff.tensor(rnd((L, N, E), 35), requires_grad=True)
    kpm = np.zeros((N, L), bool)
    kpm[0] = True
    y, _ = m(x, x, x, key_padding_mask=ff.tensor(kpm), need_weights=False)
    y = y.detach().numpy()
    np.testing.assert_allclose(y[:, 0], np.broadcast_to(m.out_proj.bias.detach().numpy(), (L, E)), atol=1e-6)
    assert np.isfinite(y).all()
    yw, w = m(x, x, x, key_padding_mask=ff.tensor(kpm))
    assert np.isnan(w.detach().numpy()[0]).all() and np.isfinite(w.detach().numpy()[1:]).all()


def test_mha_dropout_train_and_eval():
    m = nn.MultiheadAttention(E, H, dropout=0.5)
    ref = nn.MultiheadAttention(E, H)
    ref.load_state_dict(m.state_dict())
    x = ff.tensor(rnd((L, N, E), 32))
    m.eval()
    y, w = m(x, x, x)
    ry, rw = ref(x, x, x)
    np.testing.assert_allclose(y.detach().numpy(), ry.detach().numpy(), rtol=1e-6, atol=1e-6)
    m.train()
    y1, w1 = m(x, x, x, average_attn_weights=False)
    y2, _ = m(x, x, x, average_attn_weights=False)
    assert tuple(y1.shape) == (L, N, E) and tuple(w1.shape) == (N, H, L, L)
    assert not np.allclose(y1.detach().numpy(), y2.detach().numpy())
    w1 = w1.detach().numpy()
    frac = (w1 == 0).mean()
    assert 0.3 < frac < 0.7, frac  # about half the weights dropped
    assert abs(w1.sum(-1).mean() - 1.0) < 0.25  # the kept ones scaled by 2: rows still sum to ~1


def test_mha_bad_input_errors():
    with pytest.raises(AssertionError, match="divisible"):
        nn.MultiheadAttention(10, 3)
    m = nn.MultiheadAttention(E, H)
    x = ff.tensor(rnd((L, N, E), 33))
    with pytest.raises(RuntimeError, match="attn_mask"):
        m(x, x, x, attn_mask=ff.zeros(L, L + 1))
    with pytest.raises(AssertionError, match="key_padding_mask"):
        m(x, x, x, key_padding_mask=ff.zeros(N, L + 1, dtype=ff.bool))
    with pytest.raises(AssertionError, match="embedding dimension"):
        m(ff.zeros(L, N, E + 1), x, x)


def test_mha_init_is_pytorch():
    """xavier_uniform_ in_proj, zero biases, xavier_normal_ bias_k/bias_v."""
    ff.manual_seed(0)
    m = nn.MultiheadAttention(64, 4, add_bias_kv=True)
    w = m.in_proj_weight.detach().numpy()
    bound = np.sqrt(6.0 / (64 + 192))
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.9 * bound
    assert not m.in_proj_bias.detach().numpy().any() and not m.out_proj.bias.detach().numpy().any()
    assert m.bias_k.detach().numpy().std() > 0 and tuple(m.bias_v.shape) == (1, 1, 64)


# ---- the Transformer modules ------------------------------------------------------------

ACTS = {"relu": ("relu", "relu"), "gelu": ("gelu", "gelu"), "callable": (ff.tanh, torch.tanh)}


def _layer_pair(name, act, **kw):
    a, ta = ACTS[act]
    theirs = getattr(torch.nn, name)(E, H, dim_feedforward=24, dropout=0.0, activation=ta, **kw)
    ours = getattr(nn, name)(E, H, dim_feedforward=24, dropout=0.0, activation=a, **kw)
    assert repr(ours) == repr(theirs) and list(ours.state_dict()) == list(theirs.state_dict())
    ours.load_state_dict({k: v.detach().numpy() for k, v in theirs.state_dict().items()})
    return ours, theirs


def _src_masks(t):
    kpm = np.zeros((N, t), bool)
    kpm[0, -2:] = True
    kpm[2, -1] = True
    return _opt(np.triu(np.full((t, t), -np.inf, np.float32), 1)), _opt(kpm)


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("act", ["relu", "gelu", "callable"])
@pytest.mark.parametrize("batch_first", [False, True])
def test_encoder_layer(norm_first, act, batch_first):
    ours, theirs = _layer_pair("TransformerEncoderLayer", act, norm_first=norm_first, batch_first=batch_first)
    x = both(seq(L, N, E, 40, batch_first))
    am, kpm = _src_masks(L)
    y = ours(x[0], src_mask=am[0], src_key_padding_mask=kpm[0])
    ty = theirs(x[1], src_mask=am[1], src_key_padding_mask=kpm[1])
    check(ours, theirs, y, ty, [x])


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("act", ["relu", "gelu", "callable"])
@pytest.mark.parametrize("batch_first", [False, True])
def test_decoder_layer(norm_first, act, batch_first):
    ours, theirs = _layer_pair("TransformerDecoderLayer", act, norm_first=norm_first, batch_first=batch_first)
    tgt, mem = both(seq(L, N, E, 41, batch_first)), both(seq(S, N, E, 42, batch_first))
    tm, tkpm = _src_masks(L)
    mm, mkpm = _opt(rnd((L, S), 43)), _opt(_masks("kpm_bool", 44)[1])
    y = ours(tgt[0], mem[0], tgt_mask=tm[0], memory_mask=mm[0], tgt_key_padding_mask=tkpm[0],
             memory_key_padding_mask=mkpm[0])
    ty = theirs(tgt[1], mem[1], tgt_mask=tm[1], memory_mask=mm[1], tgt_key_padding_mask=tkpm[1],
                memory_key_padding_mask=mkpm[1])
    check(ours, theirs, y, ty, [tgt, mem])


def _stack(lib, kind, norm_first):
    layer = getattr(lib.nn, kind + "Layer")(E, H, 24, 0.0, norm_first=norm_first)
    return getattr(lib.nn, kind)(layer, 2, lib.nn.LayerNorm(E))


@pytest.mark.parametrize("norm_first", [False, True])
def test_encoder_and_decoder_stacks(norm_first):
    for kind in ("TransformerEncoder", "TransformerDecoder"):
        ours, theirs = _stack(ff, kind, norm_first), _stack(torch, kind, norm_first)
        assert repr(ours) == repr(theirs)
        ours.load_state_dict({k: v.detach().numpy() for k, v in theirs.state_dict().items()})
        x, mem = both(rnd((L, N, E), 45)), both(rnd((S, N, E), 46))
        am, kpm = _src_masks(L)
        if kind == "TransformerEncoder":
            y, ty = ours(x[0], am[0], kpm[0]), theirs(x[1], am[1], kpm[1])
        else:
            y, ty = ours(x[0], mem[0], am[0], None, kpm[0]), theirs(x[1], mem[1], am[1], None, kpm[1])
        check(ours, theirs, y, ty, [x, mem] if kind == "TransformerDecoder" else [x])


@pytest.mark.parametrize("batch_first", [False, True])
def test_transformer_all_masks(batch_first):
    ours, theirs = pair("Transformer", E, H, 2, 1, 24, 0.0, batch_first=batch_first)
    src, tgt = both(seq(S, N, E, 50, batch_first)), both(seq(L, N, E, 51, batch_first))
    sm, skpm = _src_masks(S)
    tm, tkpm = _opt(nn.Transformer.generate_square_subsequent_mask(L).numpy()), _src_masks(L)[1]
    mm, mkpm = _opt(rnd((L, S), 52)), skpm
    y = ours(src[0], tgt[0], src_mask=sm[0], tgt_mask=tm[0], memory_mask=mm[0], src_key_padding_mask=skpm[0],
             tgt_key_padding_mask=tkpm[0], memory_key_padding_mask=mkpm[0])
    ty = theirs(src[1], tgt[1], src_mask=sm[1], tgt_mask=tm[1], memory_mask=mm[1], src_key_padding_mask=skpm[1],
                tgt_key_padding_mask=tkpm[1], memory_key_padding_mask=mkpm[1])
    check(ours, theirs, y, ty, [src, tgt])


def test_state_dict_loads_into_torch():
    """Ours (our own init) into torch's: the same outputs, and the same init statistics."""
    ff.manual_seed(1)
    ours = nn.Transformer(E, H, 1, 1, 24, 0.0)
    theirs = torch.nn.Transformer(E, H, 1, 1, 24, 0.0)
    theirs.load_state_dict({k: torch.tensor(v.detach().numpy()) for k, v in ours.state_dict().items()})
    src, tgt = rnd((S, N, E), 53), rnd((L, N, E), 54)
    y = ours(ff.tensor(src), ff.tensor(tgt))
    with torch.no_grad():
        ty = theirs(torch.tensor(src), torch.tensor(tgt))
    np.testing.assert_allclose(y.detach().numpy(), ty.numpy(), rtol=TOL, atol=TOL)
    w = ours.state_dict()["encoder.layers.0.linear1.weight"].numpy()
    bound = np.sqrt(6.0 / (E + 24))  # Transformer re-inits every matrix with xavier_uniform_
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.8 * bound


def test_generate_square_subsequent_mask():
    np.testing.assert_array_equal(nn.Transformer.generate_square_subsequent_mask(6).numpy(),
                                  torch.nn.Transformer.generate_square_subsequent_mask(6).numpy())


def test_encoder_layer_eval_against_torch_fast_path():
    """torch 1.13 in eval under no_grad, batch_first, even heads: its fused fast path
    (_transformer_encoder_layer_fwd); it agrees to a looser tolerance. (With a padding mask,
    TransformerEncoder's fast path also zeroes padded positions' outputs, nested tensors
    that we do not have; that case is left out.)"""
    ours, theirs = _layer_pair("TransformerEncoderLayer", "relu", batch_first=True)
    ours.eval()
    theirs.eval()
    x = rnd((N, L, E), 55)
    with torch.no_grad():
        ty = theirs(torch.tensor(x))
    np.testing.assert_allclose(ours(ff.tensor(x)).detach().numpy(), ty.numpy(), rtol=1e-3, atol=1e-3)


def test_encoder_layer_dropout_train_vs_eval():
    ours = nn.TransformerEncoderLayer(E, H, 24, dropout=0.5)
    x = ff.tensor(rnd((L, N, E), 56))
    ours.eval()
    e1, e2 = ours(x).detach().numpy(), ours(x).detach().numpy()
    np.testing.assert_array_equal(e1, e2)  # eval: no dropout, deterministic
    ours.train()
    t1, t2 = ours(x).detach().numpy(), ours(x).detach().numpy()
    assert t1.shape == (L, N, E) and not np.allclose(t1, t2) and not np.allclose(t1, e1)
    # post-norm: every output row still comes out of norm2, mean 0 and variance 1
    np.testing.assert_allclose(t1.mean(-1), 0.0, atol=1e-5)
    np.testing.assert_allclose(t1.var(-1), 1.0, atol=1e-3)


def test_encoder_ignores_enable_nested_tensor():
    layer = nn.TransformerEncoderLayer(E, H, 24, 0.0, batch_first=True)
    a = nn.TransformerEncoder(layer, 2, enable_nested_tensor=True)
    b = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
    b.load_state_dict(a.state_dict())
    x = ff.tensor(rnd((N, L, E), 57))
    kpm = ff.tensor(_src_masks(L)[1][0].numpy())
    np.testing.assert_array_equal(a(x, src_key_padding_mask=kpm).detach().numpy(),
                                  b(x, src_key_padding_mask=kpm).detach().numpy())


def test_transformer_shape_errors():
    m = nn.Transformer(E, H, 1, 1, 24)
    with pytest.raises(RuntimeError, match="batch number"):
        m(ff.zeros(S, N, E), ff.zeros(L, N + 1, E))
    with pytest.raises(RuntimeError, match="d_model"):
        m(ff.zeros(S, N, E + 1), ff.zeros(L, N, E))
    with pytest.raises(RuntimeError, match="relu/gelu"):
        nn.TransformerEncoderLayer(E, H, activation="swish")


def test_found_where_torch_keeps_it():
    """torch.nn.modules.activation.MultiheadAttention is where programs import it from."""
    from fusionflow.nn.modules.activation import MultiheadAttention
    from fusionflow.nn.modules.transformer import TransformerEncoderLayer
    assert MultiheadAttention is nn.MultiheadAttention and TransformerEncoderLayer is nn.TransformerEncoderLayer
