"""fusionflow.torch_device with whole models (issue 51): the same training steps on PyTorch's
CPU and on a FusionFlow backend's device, from the same weights; losses and gradients must
agree. Each model is one a PyTorch user trains: torchvision's resnet18 fed by transforms, a
Transformer encoder (nn.MultiheadAttention), a GPT on PyTorch 1.13's SDPA (1.13 has no public
F.scaled_dot_product_attention; its F._scaled_dot_product_attention is the same op), an LSTM over packed sequences, a VAE sampling through
torch.distributions, a model written with einops. Where a model needs an op the device lacks,
the op's CPU fallback is counted and reported in the failure message."""
import copy

import pytest

torch = pytest.importorskip("torch")
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from conftest import DEVICES, import_torch_device  # noqa: E402

ffd = import_torch_device()

BACKENDS = ["cpu_blas" if "cpu_blas" in DEVICES else "cpu"] + [b for b in ("opencl",) if b in DEVICES]


def train_both(make_model, batches, step, backend, steps=3, lr=0.05, tol=1e-4, optim=torch.optim.SGD):
    """make_model() twice from one seed; each side runs `steps` optimizer steps of
    step(model, batch_on_device) -> loss. Returns the two loss lists and the fallback counts."""
    dev = ffd.device(backend)
    torch.manual_seed(0)
    ref_model = make_model()
    model = copy.deepcopy(ref_model).to(dev)
    results = []
    ffd.reset_fallback_counts()
    for m, d in ((ref_model, torch.device("cpu")), (model, dev)):
        opt = optim(m.parameters(), lr=lr)
        losses = []
        for k in range(steps):
            batch = [b.to(d) if torch.is_tensor(b) else b for b in batches[k % len(batches)]]
            opt.zero_grad()
            loss = step(m, batch)
            loss.backward()
            opt.step()
            losses.append(loss.item())
        results.append((losses, [p.detach().cpu() for p in m.parameters()]))
    fallbacks = ffd.fallback_counts()
    assert not fallbacks, "ops fell back to PyTorch's CPU kernels: %s" % fallbacks
    (ref_losses, ref_params), (losses, params) = results
    assert losses == pytest.approx(ref_losses, rel=tol, abs=tol), (losses, ref_losses, fallbacks)
    for p, r in zip(params, ref_params):
        torch.testing.assert_close(p, r, atol=tol * 10, rtol=tol * 10, msg=lambda m: m + " %s" % fallbacks)
    return fallbacks


@pytest.mark.parametrize("backend", BACKENDS)
def test_resnet18_with_transforms(backend):
    """One training step's loss and gradients, compared by each tensor's norm: a ReLU whose
    input is within rounding of 0 on one side and not on the other passes that element's
    whole gradient or none (seen on opencl: 0.0 on the CPU, 2.4e-7 on the device, in
    layer2.1's first ReLU), which moves a gradient's largest-entry error to several percent
    and its norm by about 1%; a wrong kernel moves it by O(1). The head, before any ReLU,
    is compared entry by entry."""
    torchvision = pytest.importorskip("torchvision")
    from torchvision import transforms as T
    pipeline = T.Compose([T.ToPILImage(), T.Resize(72), T.CenterCrop(64), T.RandomHorizontalFlip(p=1.0),
                          T.ToTensor(), T.Normalize((0.5, 0.4, 0.3), (0.2, 0.25, 0.3))])
    g = torch.Generator().manual_seed(1)
    images = (torch.rand(4, 3, 80, 80, generator=g) * 255).to(torch.uint8)
    x = torch.stack([pipeline(im) for im in images])
    y = torch.tensor([1, 0, 3, 2])
    dev = ffd.device(backend)
    torch.manual_seed(0)
    ref = torchvision.models.resnet18(num_classes=4)
    model = copy.deepcopy(ref).to(dev)
    ffd.reset_fallback_counts()
    loss_ref = F.cross_entropy(ref(x), y)
    loss_ref.backward()
    loss = F.cross_entropy(model(x.to(dev)), y.to(dev))
    loss.backward()
    assert not ffd.fallback_counts(), "resnet18 fell back to the CPU for %s" % ffd.fallback_counts()
    assert loss.item() == pytest.approx(loss_ref.item(), rel=1e-5)
    for (name, p), q in zip(ref.named_parameters(), model.parameters()):
        err = ((q.grad.cpu() - p.grad).norm() / max(p.grad.norm().item(), 1e-12)).item()
        assert err < 3e-2, (name, err)
    torch.testing.assert_close(model.fc.weight.grad.cpu(), ref.fc.weight.grad, atol=1e-5, rtol=1e-4)
    for (name, b), c in zip(ref.named_buffers(), model.buffers()):       # running statistics
        torch.testing.assert_close(c.cpu(), b, atol=1e-5, rtol=1e-4, msg=name)


@pytest.mark.parametrize("backend", BACKENDS)
def test_transformer_encoder_lm(backend):
    vocab, d = 20, 16

    class LM(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(vocab, d)
            self.enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(d, 2, 32, dropout=0.0, batch_first=True), 2)
            self.head = nn.Linear(d, vocab)

        def forward(self, t):
            n = t.shape[1]
            causal = torch.triu(torch.full((n, n), float("-inf"), device=t.device), 1)
            return self.head(self.enc(self.emb(t), mask=causal))

    g = torch.Generator().manual_seed(2)
    tok = torch.randint(0, vocab, (3, 9), generator=g)
    train_both(LM, [(tok[:, :-1], tok[:, 1:])],
               lambda m, b: F.cross_entropy(m(b[0]).reshape(-1, vocab), b[1].reshape(-1)), backend, lr=0.1)
    # not Adam here: the keys' bias has an exactly-zero gradient (softmax ignores a shift), so
    # its rounding noise would be normalized into lr-sized steps on either side


class GPT(nn.Module):
    """A GPT on PyTorch 1.13's SDPA, F._scaled_dot_product_attention (causal): with gradients
    PyTorch composes it from matmul and softmax; without them it calls the op
    _scaled_dot_product_attention_forward, which the device implements."""
    vocab, d, heads, block = 24, 32, 4, 12

    def __init__(self):
        super().__init__()
        self.tok = nn.Embedding(self.vocab, self.d)
        self.pos = nn.Parameter(torch.randn(self.block, self.d) * 0.02)
        self.blocks = nn.ModuleList(nn.ModuleDict(dict(
            ln1=nn.LayerNorm(self.d), qkv=nn.Linear(self.d, 3 * self.d, bias=False), proj=nn.Linear(self.d, self.d),
            ln2=nn.LayerNorm(self.d), mlp=nn.Sequential(nn.Linear(self.d, 4 * self.d), nn.GELU(),
                                                        nn.Linear(4 * self.d, self.d)))) for _ in range(2))
        self.ln = nn.LayerNorm(self.d)
        self.head = nn.Linear(self.d, self.vocab, bias=False)

    def forward(self, idx):
        b, t = idx.shape
        x = self.tok(idx) + self.pos[:t]
        for blk in self.blocks:
            q, k, v = blk.qkv(blk.ln1(x)).split(self.d, dim=2)
            q, k, v = (z.view(b, t, self.heads, self.d // self.heads).transpose(1, 2) for z in (q, k, v))
            y, _ = F._scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + blk.proj(y.transpose(1, 2).reshape(b, t, self.d))
            x = x + blk.mlp(blk.ln2(x))
        return self.head(self.ln(x))


@pytest.mark.parametrize("backend", BACKENDS)
def test_gpt_with_sdpa_trains_and_generates(backend):
    g = torch.Generator().manual_seed(5)
    tok = torch.randint(0, GPT.vocab, (4, GPT.block + 1), generator=g)
    # AdamW: the qkv projection has no bias (a key bias's gradient is exactly zero, and Adam
    # would normalize its rounding noise into lr-sized steps)
    step = lambda m, b: F.cross_entropy(m(b[0]).reshape(-1, GPT.vocab), b[1].reshape(-1))  # noqa: E731
    train_both(GPT, [(tok[:, :-1], tok[:, 1:])], step, backend, lr=3e-3, optim=torch.optim.AdamW)
    torch.manual_seed(0)
    ref = GPT().eval()
    model = copy.deepcopy(ref).to(ffd.device(backend))
    outs = []
    with torch.no_grad(), ffd.strict():       # generation: the SDPA op itself, no fallback
        for m, d in ((ref, "cpu"), (model, ffd.device(backend))):
            idx = tok[:2, :3].to(d)
            for _ in range(6):
                logits = m(idx[:, -GPT.block:])[:, -1]
                idx = torch.cat([idx, logits.argmax(-1, keepdim=True)], 1)
            outs.append((idx.cpu(), logits.cpu()))
    assert torch.equal(outs[1][0], outs[0][0])
    torch.testing.assert_close(outs[1][1], outs[0][1], atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("backend", BACKENDS)
def test_lstm_with_packed_sequences(backend):
    from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

    class Tagger(nn.Module):
        def __init__(self):
            super().__init__()
            self.lstm = nn.LSTM(5, 8, num_layers=2, batch_first=True, bidirectional=True)
            self.out = nn.Linear(16, 3)

        def forward(self, x, lengths):
            packed = pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
            h, _ = pad_packed_sequence(self.lstm(packed)[0], batch_first=True)
            return self.out(h)

    g = torch.Generator().manual_seed(3)
    x = torch.randn(4, 6, 5, generator=g)
    lengths = torch.tensor([6, 3, 5, 2])   # lengths stay on the host, as PyTorch requires
    y = torch.randint(0, 3, (4, 6), generator=g)

    def step(m, b):
        logits = m(b[0], lengths)
        mask = (torch.arange(logits.shape[1], device=logits.device)[None, :] < lengths.to(logits.device)[:, None])
        return F.cross_entropy(logits[mask], b[1][:, :logits.shape[1]][mask])
    train_both(Tagger, [(x, y)], step, backend)


@pytest.mark.parametrize("backend", BACKENDS)
def test_vae_with_distributions(backend):
    from torch.distributions import Normal, kl_divergence

    class VAE(nn.Module):
        def __init__(self):
            super().__init__()
            self.enc = nn.Linear(12, 8)
            self.dec = nn.Sequential(nn.Linear(4, 12), nn.Sigmoid())

        def forward(self, x, eps):
            mu, log_sigma = self.enc(x).chunk(2, -1)
            q = Normal(mu, log_sigma.exp())
            z = mu + log_sigma.exp() * eps        # the reparameterised sample, noise from the batch
            recon = F.binary_cross_entropy(self.dec(z), x, reduction="sum")
            return recon + kl_divergence(q, Normal(torch.zeros_like(mu), torch.ones_like(mu))).sum() \
                - q.log_prob(z).sum() * 0.01
    g = torch.Generator().manual_seed(4)
    x = torch.rand(6, 12, generator=g)
    eps = torch.randn(6, 4, generator=g)
    train_both(VAE, [(x, eps)], lambda m, b: m(b[0], b[1]), backend, lr=0.01)
    dev = ffd.device(backend)
    s = Normal(torch.zeros(5000, device=dev), torch.full((5000,), 2.0, device=dev)).rsample()
    assert s.device == dev and abs(s.std().item() - 2.0) < 0.15     # sampling draws on the device


@pytest.mark.parametrize("backend", BACKENDS)
def test_model_written_with_einops(backend):
    pytest.importorskip("einops")
    from einops import rearrange, reduce

    class Mixer(nn.Module):
        def __init__(self):
            super().__init__()
            self.tok = nn.Linear(4, 4)
            self.ch = nn.Linear(6, 6)
            self.head = nn.Linear(6, 3)

        def forward(self, x):                       # x [b, c=6, h=4, w=4] -> patches of 2x2
            p = rearrange(x, "b c (h p1) (w p2) -> b (h w) (p1 p2 c)", p1=2, p2=2)[..., :6]
            p = p + rearrange(self.tok(rearrange(p, "b n c -> b c n")), "b c n -> b n c")
            p = p + self.ch(p)
            return self.head(reduce(p, "b n c -> b c", "mean"))
    g = torch.Generator().manual_seed(5)
    x = torch.randn(3, 6, 4, 4, generator=g)
    y = torch.tensor([0, 2, 1])
    train_both(Mixer, [(x, y)], lambda m, b: F.cross_entropy(m(b[0]), b[1]), backend)
