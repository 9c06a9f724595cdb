"""DataParallel: torch's single-process multi-GPU wrapper. One FusionFlow process drives one
device, so it only forwards to its module; it keeps torch's `module` child so state_dict
keys carry the "module." prefix that torch checkpoints made with it have."""
from ..modules.module import Module


class DataParallel(Module):
    def __init__(self, module, device_ids=None, output_device=None, dim=0):
        super().__init__()
        self.module = module
        self.device_ids = [] if device_ids is None else list(device_ids)
        self.output_device = output_device
        self.dim = dim

    def forward(self, *inputs, **kwargs):
        return self.module(*inputs, **kwargs)
