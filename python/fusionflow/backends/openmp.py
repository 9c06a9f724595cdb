"""torch.backends.openmp: cpu_blas runs its own thread pool, which plays OpenMP's part."""


def is_available():
    return True
