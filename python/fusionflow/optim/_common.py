"""What the eager optimizers share: PyTorch's gradient preamble and its argument checks."""
import numpy as np

__all__ = ["grad_of", "nonneg", "f32"]


def grad_of(p, g, group):
    """The gradient the update uses: negated for maximize, plus weight_decay * p (L2)."""
    if group.get("maximize"):
        g = g.neg()
    wd = group.get("weight_decay", 0)
    if wd:
        g = g.clone().add_(p, alpha=wd)
    return g


def nonneg(name, **values):
    for k, v in values.items():
        if not 0.0 <= v:
            raise ValueError("%s: invalid %s value: %s" % (name, k, v))


def f32(x):
    """x rounded to float32: PyTorch keeps some scalar state (NAdam's mu_product, ASGD's eta
    and mu) in float32 0-d tensors whatever the parameters' dtype."""
    return float(np.float32(x))
