"""nn.Module's API against torch 1.13's: the same structure built on both sides gives the same
names, state_dict keys, repr text, hook order, load_state_dict results and errors."""
import collections

import numpy as np
import pytest

import fusionflow as ff
from fusionflow import nn

torch = pytest.importorskip("torch")
tnn = torch.nn


def build(lib):
    """One structure, built from either library's nn (tied weight, buffers, containers)."""
    class Net(lib.Module):
        def __init__(self):
            super().__init__()
            self.body = lib.Sequential(lib.Linear(4, 3), lib.ReLU(), lib.Linear(3, 3, bias=False))
            self.heads = lib.ModuleDict({"b": lib.Linear(3, 2), "a": lib.Identity()})
            self.blocks = lib.ModuleList([lib.LayerNorm(3), lib.Dropout(0.25)])
            self.plist = lib.ParameterList([lib.Parameter(lib_zeros(lib, 2)), lib.Parameter(lib_zeros(lib, 1))])
            self.pdict = lib.ParameterDict({"z": lib.Parameter(lib_zeros(lib, 3)),
                                            "y": lib.Parameter(lib_zeros(lib, 1))})
            self.tied = self.body[2]  # the same module twice
            self.register_buffer("steps", lib_zeros(lib, 1))
            self.register_buffer("scratch", lib_zeros(lib, 2), persistent=False)
            self.register_parameter("nothing", None)

        def forward(self, x):
            return self.heads["b"](self.blocks[0](self.tied(self.body(x))))
    return Net()


def lib_zeros(lib, n):
    return torch.zeros(n) if lib is tnn else ff.zeros(n)


def test_names_keys_and_traversal_equal_torchs():
    ours, theirs = build(nn), build(tnn)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert "scratch" not in ours.state_dict()
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]
    assert [n for n, _ in ours.named_buffers()] == [n for n, _ in theirs.named_buffers()]
    assert [n for n, _ in ours.named_modules()] == [n for n, _ in theirs.named_modules()]
    assert [n for n, _ in ours.named_modules(remove_duplicate=False)] == \
        [n for n, _ in theirs.named_modules(remove_duplicate=False)]
    assert [n for n, _ in ours.named_modules(prefix="m")] == [n for n, _ in theirs.named_modules(prefix="m")]
    assert [n for n, _ in ours.named_children()] == [n for n, _ in theirs.named_children()]
    assert list(ours.state_dict(prefix="p.")) == list(theirs.state_dict(prefix="p."))
    kv = ours.state_dict(keep_vars=True)
    assert kv["body.0.weight"] is ours.body[0].weight and not ours.state_dict()["body.0.weight"].requires_grad
    assert ours.get_submodule("body.2") is ours.body[2] and ours.get_parameter("pdict.z") is ours.pdict["z"]
    with pytest.raises(AttributeError):
        ours.get_submodule("body.9")


def test_repr_equals_torchs():
    ours, theirs = build(nn), build(tnn)
    # ParameterList/Dict name the tensor type (torch.FloatTensor vs fusionflow.float32)
    norm = lambda s: s.replace("torch.FloatTensor", "x").replace("torch.float32", "x").replace("fusionflow.float32", "x")
    assert norm(repr(ours)) == norm(repr(theirs))
    for a, b in [(nn.GELU("tanh"), tnn.GELU("tanh")), (nn.Softmax(1), tnn.Softmax(1)),
                 (nn.BatchNorm1d(5, affine=False), tnn.BatchNorm1d(5, affine=False)),
                 (nn.Embedding(10, 3), tnn.Embedding(10, 3)), (nn.Flatten(0, 2), tnn.Flatten(0, 2))]:
        assert repr(a) == repr(b)


def test_load_state_dict_missing_unexpected_and_errors_as_torch():
    ours, theirs = build(nn), build(tnn)
    sd = {k: v.detach().numpy() for k, v in theirs.state_dict().items()}
    partial = {k: v for k, v in sd.items() if not k.startswith("heads")}
    partial["bogus"] = np.zeros(1, np.float32)
    partial["body.bogus"] = np.zeros(1, np.float32)
    r1 = ours.load_state_dict(partial, strict=False)
    r2 = theirs.load_state_dict({k: torch.tensor(v) for k, v in partial.items()}, strict=False)
    assert r1.missing_keys == r2.missing_keys and r1.unexpected_keys == r2.unexpected_keys
    with pytest.raises(RuntimeError) as e1:
        ours.load_state_dict(partial)
    with pytest.raises(RuntimeError) as e2:
        theirs.load_state_dict({k: torch.tensor(v) for k, v in partial.items()})
    assert str(e1.value).split("\n")[:3] == str(e2.value).split("\n")[:3]
    assert repr(ours.load_state_dict(sd)) == repr(theirs.load_state_dict({k: torch.tensor(v) for k, v in sd.items()}))
    # weights copied from torch give torch's output
    x = np.random.default_rng(0).standard_normal((5, 4)).astype(np.float32)
    ours.eval(), theirs.eval()
    np.testing.assert_allclose(ours(ff.tensor(x)).numpy(), theirs(torch.tensor(x)).detach().numpy(),
                               rtol=1e-5, atol=1e-6)
    bad = dict(sd, **{"body.0.weight": np.zeros((2, 2), np.float32)})
    before = ours.body[0].weight.numpy().copy()
    with pytest.raises(RuntimeError, match="size mismatch for body.0.weight"):
        ours.load_state_dict(bad, strict=False)
    np.testing.assert_array_equal(ours.body[0].weight.numpy(), before)


def test_hooks_order_and_removal_as_torch():
    def run(lib, mk):
        log = []
        m = lib.Linear(2, 2)
        hs = [m.register_forward_pre_hook(lambda mod, a, i=i: log.append(("pre", i))) for i in range(2)]
        hs += [m.register_forward_hook(lambda mod, a, out, i=i: log.append(("post", i))) for i in range(2)]
        m(mk(np.ones((1, 2), np.float32)))
        hs[0].remove()
        hs[3].remove()
        m(mk(np.ones((1, 2), np.float32)))
        return log, m
    a, m = run(nn, ff.tensor)
    b, _ = run(tnn, torch.tensor)
    assert a == b
    h = m.register_forward_pre_hook(lambda mod, args: (args[0] * 0,))
    g = m.register_forward_hook(lambda mod, args, out: out + 1)
    y = m(ff.ones(1, 2))
    np.testing.assert_allclose(y.numpy(), m.bias.numpy()[None] + 1, rtol=1e-6)
    with h, g:
        pass
    np.testing.assert_allclose(m(ff.zeros(1, 2)).numpy(), m.bias.numpy()[None], rtol=1e-6)


def test_apply_casts_train_eval_requires_grad_zero_grad():
    m = build(nn)
    seen = []
    m.apply(lambda mod: seen.append(type(mod).__name__))
    t_seen = []
    build(tnn).apply(lambda mod: t_seen.append(type(mod).__name__))
    assert seen == t_seen
    tied = m.body[2].weight
    m.double()
    assert m.body[2].weight is tied and tied.dtype == ff.float64 and m.steps.dtype == ff.float64
    m.float()
    assert tied.dtype == ff.float32
    m.register_buffer("count", ff.tensor([3]))
    m.half()
    assert tied.dtype == ff.float16 and m.count.dtype == ff.int64
    m.type(ff.float32)
    assert tied.dtype == ff.float32 and m.count.dtype == ff.float32  # type() casts all, as torch
    m.eval()
    assert not any(x.training for x in m.modules())
    m.train()
    assert all(x.training for x in m.modules())
    with pytest.raises(ValueError):
        m.train("yes")
    m.requires_grad_(False)
    assert not any(p.requires_grad for p in m.parameters())
    m.requires_grad_()
    out = m(ff.ones(2, 4)).sum()
    out.backward()
    w = m.body[0].weight
    assert w.grad is not None
    m.zero_grad()  # torch 1.13: zeroes in place
    assert w.grad is not None and not w.grad.numpy().any()
    m.zero_grad(set_to_none=True)
    assert w.grad is None


def test_registration_errors_as_torch():
    m = nn.Linear(2, 2)
    for bad in [lambda: m.register_buffer("a.b", ff.zeros(1)), lambda: m.add_module("", nn.ReLU()),
                lambda: m.register_buffer("weight", ff.zeros(1))]:
        with pytest.raises(KeyError):
            bad()
    with pytest.raises(TypeError):
        m.register_parameter("p", ff.zeros(1))
    with pytest.raises(TypeError):
        m.weight = ff.zeros(2, 2)
    m.register_buffer("b", ff.zeros(1))
    m.b = ff.ones(1)
    assert "b" in dict(m.named_buffers()) and m.b.numpy()[0] == 1
    del m.b
    assert "b" not in dict(m.named_buffers())


def test_containers_behave_as_torchs():
    ours = nn.Sequential(nn.ReLU(), nn.Tanh(), nn.Sigmoid())
    theirs = tnn.Sequential(tnn.ReLU(), tnn.Tanh(), tnn.Sigmoid())
    for s in (ours, theirs):
        del s[0]
        s.insert(1, type(s[0])())
        s.append(type(s[0])())
    assert repr(ours) == repr(theirs) and repr(ours[1:]) == repr(theirs[1:])
    assert list(ours._modules) == list(theirs._modules)
    ml, tml = nn.ModuleList([nn.ReLU()] * 3), tnn.ModuleList([tnn.ReLU()] * 3)
    for x in (ml, tml):
        del x[1]
        x.insert(0, x[0])
    assert list(ml._modules) == list(tml._modules) and len(ml) == len(tml) == 3
    pl = nn.ParameterList([ff.zeros(2)])
    pl.append(ff.ones(3))
    assert isinstance(pl[1], nn.Parameter) and [n for n, _ in pl.named_parameters()] == ["0", "1"]
    pd = nn.ParameterDict({"b": ff.zeros(1), "a": ff.zeros(1)})
    assert list(pd) == list(tnn.ParameterDict({"b": torch.zeros(1), "a": torch.zeros(1)}))
    md = nn.ModuleDict(collections.OrderedDict([("x", nn.ReLU())]))
    md.update([("y", nn.Tanh())])
    assert list(md.keys()) == ["x", "y"] and "y" in md and md.pop("x").__class__ is nn.ReLU


def test_parallel_names():
    from fusionflow.nn.parallel import DataParallel, DistributedDataParallel
    import fusionflow.distributed as dist
    assert DistributedDataParallel is dist.DistributedDataParallel
    m = DataParallel(nn.Linear(2, 1))
    assert list(m.state_dict()) == list(tnn.DataParallel(tnn.Linear(2, 1)).state_dict())
    assert m(ff.ones(3, 2)).shape == (3, 1)


def test_deepcopy_keeps_parameters_and_ties():
    import copy
    m = build(nn)
    m2 = copy.deepcopy(m)
    assert all(isinstance(p, nn.Parameter) and p.requires_grad for p in m2.parameters())
    assert m2.tied.weight is m2.body[2].weight and m2.tied.weight is not m.tied.weight
    assert list(m2.state_dict()) == list(m.state_dict())
    with ff.no_grad():
        m2.body[0].weight.fill_(0.0)
    assert m.body[0].weight.numpy().any()  # its own memory


def _backward_log(lib, mk, replace=False):
    """A Linear -> Tanh -> Linear stack with full backward hooks on each layer and on the
    whole; returns the log of (name, grad_input, grad_output) values and the input grad."""
    lib_torch = lib is tnn
    if lib_torch:
        torch.manual_seed(0)
    net = lib.Sequential(lib.Linear(3, 4), lib.Tanh(), lib.Linear(4, 2))
    if not lib_torch:
        ref = tnn.Sequential(tnn.Linear(3, 4), tnn.Tanh(), tnn.Linear(4, 2))
        torch.manual_seed(0)
        ref = tnn.Sequential(tnn.Linear(3, 4), tnn.Tanh(), tnn.Linear(4, 2))
        net.load_state_dict({k: v.detach().numpy() for k, v in ref.state_dict().items()})
    log = []

    def hook(name):
        def fn(mod, gin, gout):
            log.append((name, [None if g is None else g.detach().numpy().copy() for g in gin],
                        [None if g is None else g.detach().numpy().copy() for g in gout]))
            if replace and name == "1":
                return (gin[0] * 2,)
        return fn
    handles = [net.register_full_backward_hook(hook("net"))]
    handles += [m.register_full_backward_hook(hook(str(i))) for i, m in enumerate(net)]
    x = mk(np.arange(6, dtype=np.float32).reshape(2, 3) / 5)
    x.requires_grad_(True)
    net(x).sum().backward()
    handles[2].remove()
    return log, x.grad.detach().numpy()


@pytest.mark.parametrize("replace", [False, True])
def test_full_backward_hooks_order_values_and_replacement_as_torch(replace):
    ours, gx = _backward_log(nn, ff.tensor, replace)
    theirs, tgx = _backward_log(tnn, torch.tensor, replace)
    assert [e[0] for e in ours] == [e[0] for e in theirs] == ["2", "1", "0", "net"]
    for (name, gi, go), (_, tgi, tgo) in zip(ours, theirs):
        for a, b in zip(gi + go, tgi + tgo):
            assert (a is None) == (b is None), name
            if a is not None:
                np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6, err_msg=name)
    np.testing.assert_allclose(gx, tgx, rtol=1e-5, atol=1e-6)


def test_full_backward_hook_without_input_grad_and_removal():
    for lib, mk in ((nn, ff.tensor), (tnn, torch.tensor)):
        m = lib.Linear(3, 2)
        seen = []
        h = m.register_full_backward_hook(lambda mod, gi, go: seen.append((gi, go[0].shape)))
        m(mk(np.ones((4, 3), np.float32))).sum().backward()  # the input needs no gradient
        assert len(seen) == 1 and seen[0][0] == (None,) and tuple(seen[0][1]) == (4, 2)
        h.remove()
        m(mk(np.ones((4, 3), np.float32))).sum().backward()
        assert len(seen) == 1


def test_full_backward_hook_error_fails_backward():
    m = nn.Linear(2, 2)
    m.register_full_backward_hook(lambda mod, gi, go: (gi[0], gi[0]))  # wrong length
    x = ff.ones(1, 2, requires_grad=True)
    with pytest.raises(RuntimeError, match="hook failed"):
        m(x).sum().backward()


def test_reassigned_submodule_and_parameter_keep_their_place_as_torch():
    """siamese_network replaces resnet's fc and takes children()[:-1]: the order must be torch's."""
    ours, theirs = ff.nn.Module(), torch.nn.Module()
    for m, lib in ((ours, ff.nn), (theirs, torch.nn)):
        m.a = lib.Linear(2, 2)
        m.b = lib.Linear(2, 3)
        m.p = lib.Parameter(lib.Linear(1, 1).weight.detach())
        m.q = lib.Parameter(lib.Linear(1, 1).weight.detach())
        m.a = lib.Linear(2, 4)
        m.p = lib.Parameter(lib.Linear(1, 1).weight.detach())
    assert [n for n, _ in ours.named_children()] == [n for n, _ in theirs.named_children()] == ["a", "b"]
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert ours.a.out_features == 4


def test_module_surface_coverage():
    """At least 300 of torch 1.13's 320 module-surface names (nn.*, F.*, optim, schedulers,
    utils.data, nn.utils), each at torch's path; what is missing has a stated reason
    (tests/python/data holds a copy of shared/api/pytorch_module_surface.txt)."""
    import os
    import sys
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path.insert(0, os.path.join(here, "..", "..", "python", "tools"))
    import api_coverage
    have, missing = api_coverage.coverage(os.path.join(here, "data", "pytorch_module_surface.txt"),
                                          api_coverage.has_surface)
    assert len(have) + len(missing) == 320
    assert len(have) >= 300, missing
    assert all(api_coverage.why_missing(n) != "not yet" for n in missing), missing


def test_linear_takes_torchs_positional_order():
    """forward-forward writes nn.Linear(in, out, bias, device, dtype) positionally."""
    m = nn.Linear(3, 2, True, "cpu", ff.float64)
    assert m.weight.dtype is ff.float64 and m.bias.dtype is ff.float64
    assert nn.Linear(3, 2, False, None, None).weight.dtype is ff.float32
