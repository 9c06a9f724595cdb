"""fusionflow.Generator: a seedable random source for the host-side draws of samplers,
random_split and DataLoader (permutations, multinomial picks).

It is NumPy's PCG64, not PyTorch's Mersenne Twister: the same seed gives the same draws on
every run here, not the numbers torch.Generator gives. Without a generator those draws take
their seed from the global generator (fusionflow.manual_seed), so seeding that makes them
reproducible too, as in PyTorch."""
import json
import random

import numpy as np

__all__ = ["Generator", "default_generator", "seed_from_global", "seed_for", "stream_of"]

_DEFAULT_SEED = 67280421310721  # torch.Generator().initial_seed()


class Generator:
    def __init__(self, device="cpu"):
        from ._device import device as device_cls
        self.device = device_cls(device)
        self.manual_seed(_DEFAULT_SEED)

    def manual_seed(self, seed):
        seed = int(seed)
        if seed < 0:  # torch accepts negative seeds as their 64-bit two's complement
            seed &= 0xFFFFFFFFFFFFFFFF
        self._seed = seed
        self._np = np.random.Generator(np.random.PCG64(seed))
        return self

    def initial_seed(self):
        return self._seed

    def seed(self):
        """Reseeds from the system's entropy and returns the new seed."""
        s = random.SystemRandom().getrandbits(63)
        self.manual_seed(s)
        return s

    def get_state(self):
        """The state as a uint8 tensor (torch's form), for set_state."""
        from ._tensor import tensor
        from ._dtype import uint8
        raw = json.dumps({"seed": self._seed, "pcg64": self._np.bit_generator.state}).encode()
        return tensor(np.frombuffer(raw, dtype=np.uint8).copy(), dtype=uint8)

    def set_state(self, state):
        try:
            st = json.loads(bytes(np.asarray(state.numpy() if hasattr(state, "numpy") else state,
                                             dtype=np.uint8)).decode())
            g = np.random.Generator(np.random.PCG64())
            g.bit_generator.state = st["pcg64"]
        except (ValueError, KeyError, TypeError) as e:
            raise ValueError("Generator.set_state: expected a state from Generator.get_state() (%s)" % e) from None
        self._seed, self._np = st["seed"], g
        return self


class _DefaultGenerator(Generator):
    """fusionflow.default_generator: seeding it seeds the C global generator (rand, randn,
    dropout, init) and its own host-side stream together, as torch.manual_seed seeds
    torch.default_generator."""

    def manual_seed(self, seed):
        super().manual_seed(seed)
        from ._lib import C
        C.ff_manual_seed(self._seed & 0xFFFFFFFFFFFFFFFF)
        return self


default_generator = _DefaultGenerator()


def stream_of(generator, fn="random"):
    """The NumPy stream of a generator= argument: None for no generator or the default one
    (the draw then takes the global stream, as in PyTorch)."""
    if generator is None or isinstance(generator, _DefaultGenerator):
        return None
    if not isinstance(generator, Generator):
        raise TypeError("%s: generator must be a fusionflow.Generator, not %s" % (fn, type(generator).__name__))
    return generator._np


def seed_for(generator, fn="random"):
    """The seed= of a random fill given generator=: None for none (or the default one), else
    a 63-bit seed drawn from the generator's stream, so that the same generator state gives
    the same tensor (on every backend: the fill is Philox from that seed) and the generator
    moves on."""
    g = stream_of(generator, fn)
    return None if g is None else int(g.integers(0, 2 ** 63))


def seed_from_global():
    """A 63-bit seed drawn from the global generator (fusionflow.manual_seed makes it repeat)."""
    from ._tensor import rand
    from ._dtype import float64
    u = rand(2, dtype=float64).numpy()
    return (int(u[0] * 2 ** 32) << 31) ^ int(u[1] * 2 ** 31)


def numpy_rng(generator):
    """The NumPy generator to draw from: generator's, or a fresh one seeded from the global one."""
    if generator is None:
        return np.random.Generator(np.random.PCG64(seed_from_global()))
    if not isinstance(generator, Generator):
        raise TypeError("expected a fusionflow.Generator, got %s" % type(generator).__name__)
    return generator._np


def op_seed():
    """The seed of one random op (dropout, attention dropout): drawn from the default
    generator's host-side stream, so fusionflow.manual_seed makes the masks repeat (as
    torch.manual_seed does), without a device round trip per call."""
    return int(default_generator._np.integers(0, 2 ** 63))
