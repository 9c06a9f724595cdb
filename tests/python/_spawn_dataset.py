"""A dataset for test_round4_dataloader's spawn test, in a module of its own: a spawned
worker imports the module that defines the dataset, and the test module imports torch and
starts every backend (PoCL's start-up alone takes seconds)."""
import fusionflow as ff
from fusionflow.utils import data as fd


class OnDevices(fd.Dataset):
    """Sample i: one tensor per device named, holding i."""

    def __init__(self, devices):
        self.devices = devices

    def __len__(self):
        return 4

    def __getitem__(self, i):
        return [ff.full((3,), float(i), device=d) for d in self.devices]
