"""torch.backends.opt_einsum: a flag (recorded only); einsum contracts left to right."""
enabled = False


def is_available():
    return False
