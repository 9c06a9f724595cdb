"""What the driver installs in a library (torch or fusionflow) before the program runs, the same
on both sides, so that the two runs differ only in the library doing the arithmetic:
 - every loss passed to backward() is recorded (the 'logged losses', at full precision);
 - the k-th optimizer's parameters are saved when it is built (PyTorch side) and loaded in its
   place (FusionFlow side): same initial weights, without touching the program's model code;
 - RandomSampler (which DataLoader(shuffle=True) builds) yields a NumPy-seeded order;
 - randn/rand/randint/randperm draw from one NumPy generator: noise and labels programs draw
   during training (dcgan's z, forward-forward's negative labels) and the draws of torchvision's
   random transforms (RandomHorizontalFlip's rand(1), RandomCrop's randint) are the same on
   both sides;
 - Tensor.uniform_ draws from NumPy too once the first optimizer is built (RandomResizedCrop's
   scale and aspect ratio: torch.empty(1).uniform_(a, b));
 - nn.Dropout and Dropout1d/2d/3d modules draw their masks from a NumPy generator too, for
   programs that cannot switch dropout off through argv (mnist_rnn, torchvision's squeezenet)."""
import time

import numpy as np

SEED = 1234


class Recorder:
    def __init__(self):
        self.losses = []
        self.dtypes = []     # each loss's dtype name ('float32'): a promotion difference shows here
        self.saved = []      # PyTorch side: per optimizer, its parameters as arrays
        self.loaded = None   # FusionFlow side: the arrays to load, per optimizer
        self.optimizers = 0
        self.cpu = []        # process CPU seconds at each recorded backward: a step's cost is the
        #                      time between two (benchmarks/bench_programs.py)


def _params_of(opt):
    return [p for g in opt.param_groups for p in g["params"]]


def install_backward(lib, rec):
    orig = lib.Tensor.backward

    def backward(self, *args, **kwargs):
        if self.numel() == 1:
            rec.cpu.append(time.process_time())
            rec.losses.append(float(self.item()))
            rec.dtypes.append(str(self.dtype).rsplit(".", 1)[-1])
        return orig(self, *args, **kwargs)
    lib.Tensor.backward = backward


def install_weights(lib, rec, load):
    orig = lib.optim.Optimizer.__init__

    def __init__(self, params, defaults):
        orig(self, params, defaults)
        k = rec.optimizers
        rec.optimizers += 1
        if not load:
            rec.saved.append([p.detach().cpu().numpy().copy() for p in _params_of(self)])
            return
        want = rec.loaded[k] if rec.loaded is not None and k < len(rec.loaded) else None
        params = _params_of(self)
        if want is None or len(want) != len(params):
            raise RuntimeError("harness: optimizer %d has %d parameters here, PyTorch's had %s"
                               % (k, len(params), "none" if want is None else len(want)))
        with lib.no_grad():
            for j, (p, a) in enumerate(zip(params, want)):
                if tuple(p.shape) != a.shape:
                    raise RuntimeError("harness: optimizer %d parameter %d has shape %s here, %s in PyTorch"
                                       % (k, j, tuple(p.shape), a.shape))
                p.copy_(lib.tensor(a, dtype=p.dtype).to(p.device))
    lib.optim.Optimizer.__init__ = __init__


def install_sampler(lib):
    import importlib
    data = lib.utils.data

    class SharedOrderSampler(data.Sampler):
        """RandomSampler's signature; the order comes from NumPy, seeded per epoch."""
        def __init__(self, data_source, replacement=False, num_samples=None, generator=None):
            self.n = len(data_source)
            self.replacement = replacement
            self.num_samples = self.n if num_samples is None else int(num_samples)
            self.epoch = 0

        def __iter__(self):
            rng = np.random.RandomState(SEED + self.epoch)
            self.epoch += 1
            if not self.replacement:
                yield from (int(i) for i in rng.permutation(self.n)[:self.num_samples])
                return
            left = self.num_samples  # may be 1e10 (minGPT): drawn lazily, in chunks
            while left > 0:
                chunk = rng.randint(self.n, size=min(left, 1024))
                left -= len(chunk)
                yield from (int(i) for i in chunk)

        def __len__(self):
            return self.num_samples

    for mod in ("", ".sampler", ".dataloader"):
        m = importlib.import_module(data.__name__ + mod)
        if hasattr(m, "RandomSampler"):
            m.RandomSampler = SharedOrderSampler


def install_random(lib):
    rng = np.random.RandomState(SEED)

    def shape_of(size):
        if len(size) == 1 and isinstance(size[0], (tuple, list)):
            return tuple(size[0])
        return tuple(int(s) for s in size)

    def make(a, dtype=None, device=None, requires_grad=False, **_):
        t = lib.tensor(a)
        if dtype is not None:
            t = t.to(dtype)
        if device is not None:
            t = t.to(device)
        return t.requires_grad_(requires_grad) if requires_grad else t

    def randn(*size, generator=None, **kw):
        return make(rng.standard_normal(shape_of(size)).astype(np.float32), **kw)

    def rand(*size, generator=None, **kw):
        return make(rng.random_sample(shape_of(size)).astype(np.float32), **kw)

    def randint(*args, size=None, generator=None, **kw):
        if size is None:
            *args, size = args
        low, high = (0, args[0]) if len(args) == 1 else args
        return make(rng.randint(low, high, size=tuple(size)).astype(np.int64), **kw)

    def randperm(n, generator=None, **kw):
        return make(rng.permutation(n).astype(np.int64), **kw)

    lib.randn, lib.rand, lib.randint, lib.randperm = randn, rand, randint, randperm


def install_dropout(lib):
    """Dropout modules' masks from one NumPy generator: element-wise for Dropout, one draw per
    (sample, channel) for the DropoutNd family (torch 1.13's feature dropout; an [N, C] input
    gets an [N, C] mask, as its dropout2d does)."""
    rng = np.random.RandomState(SEED + 1)

    def forward(self, x):
        if not self.training or self.p == 0:
            return x
        per_channel = type(self).__name__ != "Dropout" and x.dim() >= 2
        shape = tuple(x.shape[:2]) + (1,) * (x.dim() - 2) if per_channel else tuple(x.shape)
        keep = (rng.random_sample(shape) >= self.p).astype(np.float64) / (1.0 - self.p) if self.p < 1 \
            else np.zeros(shape)
        return x * lib.tensor(keep).to(x.dtype).to(x.device)
    for name in ("Dropout", "Dropout1d", "Dropout2d", "Dropout3d"):
        cls = getattr(lib.nn, name, None)
        if cls is not None:
            cls.forward = forward


def install_uniform(lib):
    """Tensor.uniform_ from a NumPy generator, from the moment the first optimizer is built:
    what draws it then is the data pipeline (RandomResizedCrop), the same calls on both sides.
    Before that the library's own is kept, because weight init draws through uniform_ in one
    library and not in the other (torch's nn.init calls the method, fusionflow's fills from
    rand), which would shift a stream shared from the start; the init itself is replaced by
    PyTorch's weights anyway."""
    rng = np.random.RandomState(SEED + 2)

    def uniform_(self, a=0.0, b=1.0, generator=None):
        values = np.asarray(rng.uniform(float(a), float(b), size=tuple(self.shape)))
        with lib.no_grad():
            return self.copy_(lib.tensor(values).to(self.dtype))

    orig = lib.optim.Optimizer.__init__

    def __init__(self, *args, **kwargs):
        orig(self, *args, **kwargs)
        lib.Tensor.uniform_ = uniform_
    lib.optim.Optimizer.__init__ = __init__
