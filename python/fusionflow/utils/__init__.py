"""fusionflow.utils: torch.utils' data loading (utils.data)."""
from . import data  # noqa: F401
