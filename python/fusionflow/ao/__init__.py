"""fusionflow.ao, as torch.ao: its quantization package is fusionflow.quantization."""
from . import quantization  # noqa: F401
