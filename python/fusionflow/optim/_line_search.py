"""The strong-Wolfe line search LBFGS uses (Nocedal & Wright, algorithms 3.5 and 3.6, with
cubic interpolation), with PyTorch 1.13's constants and safeguards so its steps are the
same. Vectors are flat fusionflow tensors; scalars are Python floats."""
import math

__all__ = ["strong_wolfe"]


def cubic_min(x1, f1, g1, x2, f2, g2, bounds=None):
    """The minimiser of the cubic through (x1, f1, slope g1) and (x2, f2, slope g2), clamped
    to bounds (default: the interval); the bounds' midpoint if the cubic has no minimum."""
    lo, hi = bounds if bounds is not None else (min(x1, x2), max(x1, x2))
    d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
    disc = d1 * d1 - g1 * g2
    if disc < 0:
        return (lo + hi) / 2.0
    d2 = math.sqrt(disc)
    if x1 <= x2:
        x = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
    else:
        x = x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2))
    return min(max(x, lo), hi)


def _dot(a, b):
    return a.dot(b).item()


def strong_wolfe(evaluate, x, t, d, f, g, gtd, c1=1e-4, c2=0.9, tolerance_change=1e-9, max_ls=25):
    """Searches along d from x for a step t meeting the strong Wolfe conditions; evaluate(x,
    t, d) gives (loss, flat grad) at x + t d. Returns (loss, grad, t, evaluations)."""
    d_norm = d.abs().max().item()
    g = g.clone()
    f_new, g_new = evaluate(x, t, d)
    evals = 1
    gtd_new = _dot(g_new, d)
    t_prev, f_prev, g_prev, gtd_prev = 0, f, g, gtd
    done = False
    it = 0
    # phase 1: bracket a step that satisfies the conditions (or take one that does)
    while it < max_ls:
        if f_new > f + c1 * t * gtd or (it > 1 and f_new >= f_prev):
            br, br_f, br_g, br_gtd = [t_prev, t], [f_prev, f_new], [g_prev, g_new.clone()], [gtd_prev, gtd_new]
            break
        if abs(gtd_new) <= -c2 * gtd:  # before the slope's sign: a step that meets both is taken
            br, br_f, br_g = [t], [f_new], [g_new]
            done = True
            break
        if gtd_new >= 0:
            br, br_f, br_g, br_gtd = [t_prev, t], [f_prev, f_new], [g_prev, g_new.clone()], [gtd_prev, gtd_new]
            break
        t_next = cubic_min(t_prev, f_prev, gtd_prev, t, f_new, gtd_new, bounds=(t + 0.01 * (t - t_prev), t * 10))
        t_prev, f_prev, g_prev, gtd_prev = t, f_new, g_new.clone(), gtd_new
        t = t_next
        f_new, g_new = evaluate(x, t, d)
        evals += 1
        gtd_new = _dot(g_new, d)
        it += 1
    if it == max_ls:
        br, br_f, br_g = [0, t], [f, f_new], [g, g_new]
    # phase 2: zoom into the bracket
    insufficient = False
    lo, hi = (0, 1) if br_f[0] <= br_f[-1] else (1, 0)
    while not done and it < max_ls:
        if abs(br[1] - br[0]) * d_norm < tolerance_change:
            break
        t = cubic_min(br[0], br_f[0], br_gtd[0], br[1], br_f[1], br_gtd[1])
        # stay 10% of the bracket away from its ends, unless the last try made no progress
        eps = 0.1 * (max(br) - min(br))
        if min(max(br) - t, t - min(br)) < eps:
            if insufficient or t >= max(br) or t <= min(br):
                t = max(br) - eps if abs(t - max(br)) < abs(t - min(br)) else min(br) + eps
                insufficient = False
            else:
                insufficient = True
        else:
            insufficient = False
        f_new, g_new = evaluate(x, t, d)
        evals += 1
        gtd_new = _dot(g_new, d)
        it += 1
        if f_new > f + c1 * t * gtd or f_new >= br_f[lo]:
            br[hi], br_f[hi], br_g[hi], br_gtd[hi] = t, f_new, g_new.clone(), gtd_new
            lo, hi = (0, 1) if br_f[0] <= br_f[1] else (1, 0)
        else:
            if abs(gtd_new) <= -c2 * gtd:
                done = True
            elif gtd_new * (br[hi] - br[lo]) >= 0:
                br[hi], br_f[hi], br_g[hi], br_gtd[hi] = br[lo], br_f[lo], br_g[lo], br_gtd[lo]
            br[lo], br_f[lo], br_g[lo], br_gtd[lo] = t, f_new, g_new.clone(), gtd_new
    return br_f[lo], br_g[lo], br[lo], evals
