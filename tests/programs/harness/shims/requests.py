"""requests is not a dependency of FusionFlow's CI; gat imports it only to download Cora, which
the driver writes beforehand (a synthetic stand-in), so any use of this module is a harness bug."""


def get(*args, **kwargs):
    raise RuntimeError("harness stand-in: no network; the driver should have written the dataset")
