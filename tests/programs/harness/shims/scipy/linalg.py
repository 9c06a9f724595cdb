"""scipy.linalg.lu (a = p @ l @ u, partial pivoting) over NumPy: normalizing_flows' flows.py
imports scipy.linalg for its 1x1-convolution flow."""
import numpy as np


def lu(a):
    u = np.array(a, dtype=np.float64)
    n = u.shape[0]
    perm, lower = np.arange(n), np.eye(n)
    for k in range(n - 1):
        pivot = k + int(np.argmax(np.abs(u[k:, k])))
        if pivot != k:
            u[[k, pivot]], perm[[k, pivot]] = u[[pivot, k]], perm[[pivot, k]]
            lower[[k, pivot], :k] = lower[[pivot, k], :k]
        if u[k, k] != 0:
            lower[k + 1:, k] = u[k + 1:, k] / u[k, k]
            u[k + 1:] -= np.outer(lower[k + 1:, k], u[k])
    p = np.zeros((n, n))
    p[perm, np.arange(n)] = 1.0
    return p, lower, np.triu(u)
