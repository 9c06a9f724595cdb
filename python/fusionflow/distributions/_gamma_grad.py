"""Gamma(alpha, 1) draws with implicit reparameterisation gradients (Figurnov et al., 2018).

A draw x = F^-1(u; alpha) from the regularised incomplete gamma function F has, for fixed u,
dx/dalpha = -(dF/dalpha)(x; alpha) / pdf(x; alpha). The draw itself comes from NumPy's gamma
sampler (fusionflow's seeded host stream); the derivative is computed here in float64 and
attached to the graph as x + (alpha - alpha.detach()) * dx/dalpha, whose value is x and whose
gradient with respect to alpha is dx/dalpha."""
import math

import numpy as np

from .utils import host_generator, tiny

_LGAMMA = np.vectorize(math.lgamma, otypes=[np.float64])
_MAX_TERMS = 4000
_LARGE_ALPHA = 1e4  # beyond this the series needs too many terms: use Wilson-Hilferty's form


def _log_prefactor(a, x):
    return a * np.log(x) - x - _LGAMMA(a)


def _lower_series(a, x):
    """P(a, x) by its power series (converges fast for x < a + 1)."""
    term = 1.0 / a
    total = term.copy()
    ap = a.copy()
    live = np.arange(a.size)  # the entries still adding terms above the rounding level
    for _ in range(_MAX_TERMS):
        ap[live] += 1
        term[live] *= x[live] / ap[live]
        total[live] += term[live]
        live = live[np.abs(term[live]) > np.abs(total[live]) * 1e-16]
        if live.size == 0:
            break
    return total * np.exp(_log_prefactor(a, x))


def _upper_fraction(a, x):
    """Q(a, x) by its continued fraction, evaluated with Lentz's method (x >= a + 1)."""
    fpmin = 1e-300
    b = x + 1 - a
    c = np.full_like(x, 1 / fpmin)
    d = 1 / b
    h = d.copy()
    live = np.arange(a.size)
    for i in range(1, _MAX_TERMS):
        al = a[live]
        an = -i * (i - al)
        bl = b[live] + 2
        dl = an * d[live] + bl
        dl = np.where(np.abs(dl) < fpmin, fpmin, dl)
        cl = bl + an / c[live]
        cl = np.where(np.abs(cl) < fpmin, fpmin, cl)
        dl = 1 / dl
        delta = dl * cl
        b[live], c[live], d[live] = bl, cl, dl
        h[live] *= delta
        live = live[np.abs(delta - 1) > 1e-15]
        if live.size == 0:
            break
    return h * np.exp(_log_prefactor(a, x))


def _dcdf_dalpha(a, x):
    """dP(a, x)/da by a central difference of whichever of P and Q = 1 - P is the smaller
    there (the one held to full relative precision)."""
    out = np.zeros_like(x)
    step = 1e-5 * np.maximum(a, 1e-3)
    lower = x < a + 1
    if lower.any():
        al, xl, hl = a[lower], x[lower], step[lower]
        out[lower] = (_lower_series(al + hl, xl) - _lower_series(al - hl, xl)) / (2 * hl)
    upper = ~lower
    if upper.any():
        au, xu, hu = a[upper], x[upper], step[upper]
        out[upper] = -(_upper_fraction(au + hu, xu) - _upper_fraction(au - hu, xu)) / (2 * hu)
    return out


def _wilson_hilferty_grad(a, x):
    """dx/da holding z fixed in x = a (1 - 1/(9a) + z / (3 sqrt a))^3, accurate for large a."""
    c = np.cbrt(x / a)
    z = (c - 1 + 1 / (9 * a)) * 3 * np.sqrt(a)
    inner = 1 - 1 / (9 * a) + z / (3 * np.sqrt(a))
    dinner = 1 / (9 * a * a) - z / (6 * a ** 1.5)
    return inner ** 3 + 3 * a * inner ** 2 * dinner


def standard_gamma_grad(a, x):
    """dx/da for draws x of Gamma(a, 1), both float64 arrays of one shape."""
    a = np.asarray(a, np.float64)
    x = np.asarray(x, np.float64)
    grad = np.zeros_like(x)
    large = a > _LARGE_ALPHA
    small = ~large & (x > 0)
    if small.any():
        a_s, x_s = a[small], x[small]
        log_pdf = (a_s - 1) * np.log(x_s) - x_s - _LGAMMA(a_s)
        grad[small] = -_dcdf_dalpha(a_s, x_s) / np.exp(log_pdf)
    if large.any():
        grad[large] = _wilson_hilferty_grad(a[large], x[large])
    return grad


def standard_gamma(concentration):
    """Gamma(concentration, 1) draws of concentration's shape, differentiable in it."""
    import fusionflow as ff
    a = concentration.detach().to("cpu").numpy().astype(np.float64)
    x = host_generator().standard_gamma(a)
    x = np.maximum(x, tiny(concentration.dtype))
    draws = ff.tensor(x, dtype=concentration.dtype, device=concentration.device)
    if not (concentration.requires_grad and ff.is_grad_enabled()):
        return draws
    dx = ff.tensor(standard_gamma_grad(a, x), dtype=concentration.dtype, device=concentration.device)
    return draws + (concentration - concentration.detach()) * dx
