"""torch.backends.mkldnn: a flag (recorded only)."""
enabled = True


def is_available():
    return False
