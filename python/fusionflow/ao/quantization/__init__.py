"""torch.ao.quantization's names (quantize_dynamic, qint8, ...): fusionflow.quantization."""
from ...quantization import *  # noqa: F401,F403
from ...quantization import __all__  # noqa: F401
