"""generator= on the random factories and in-place fills (torch's signature): the draws follow
the generator's own stream (same state, same tensor) and leave the global stream alone."""
import numpy as np
import pytest

import fusionflow as ff
from conftest import DEVICES

DRAWS = {
    "rand": lambda g, d: ff.rand(4, 3, generator=g, device=d),
    "randn": lambda g, d: ff.randn(5, generator=g, device=d),
    "randint": lambda g, d: ff.randint(0, 100, (6,), generator=g, device=d),
    "randperm": lambda g, d: ff.randperm(9, generator=g, device=d),
    "multinomial": lambda g, d: ff.multinomial(ff.tensor([[1.0, 0.0, 3.0, 2.0]] * 2, device=d), 2, generator=g),
    "bernoulli": lambda g, d: ff.bernoulli(ff.full((8,), 0.5, device=d), generator=g),
    "uniform_": lambda g, d: ff.empty(5, device=d).uniform_(-2, 2, generator=g),
    "normal_": lambda g, d: ff.empty(5, device=d).normal_(1, 3, generator=g),
    "random_": lambda g, d: ff.empty(5, device=d).random_(0, 50, generator=g),
    "exponential_": lambda g, d: ff.empty(5, device=d).exponential_(generator=g),
}


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", sorted(DRAWS))
def test_generator_stream_repeats_and_leaves_the_global_one(device, name):
    draw = DRAWS[name]
    ff.manual_seed(11)
    want_global = ff.rand(3).numpy()
    ff.manual_seed(11)
    g = ff.Generator().manual_seed(123)
    a, b = draw(g, device).numpy(), draw(g, device).numpy()
    np.testing.assert_array_equal(ff.rand(3).numpy(), want_global)  # the global stream did not move
    g.manual_seed(123)
    np.testing.assert_array_equal(draw(g, device).numpy(), a)  # same state, same draw
    np.testing.assert_array_equal(draw(g, device).numpy(), b)
    if name not in ("multinomial", "bernoulli"):  # few outcomes: two draws may agree
        assert not np.array_equal(a, b)  # the generator moved on


def test_default_generator_is_the_global_stream():
    ff.manual_seed(5)
    a = ff.rand(4).numpy()
    ff.manual_seed(5)
    np.testing.assert_array_equal(ff.rand(4, generator=ff.default_generator).numpy(), a)


def test_generator_must_be_a_generator():
    with pytest.raises(TypeError, match="rand: generator must be a fusionflow.Generator"):
        ff.rand(2, generator=5)
