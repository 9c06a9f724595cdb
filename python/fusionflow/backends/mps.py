"""torch.backends.mps: no Apple GPU backend here."""


def is_available():
    return False


def is_built():
    return False
