"""torch.cuda.amp: fusionflow.amp's GradScaler, and autocast with torch.cuda.amp's default
dtype, float16."""
from .. import _dtype
from .. import amp as _amp
from ..amp import GradScaler

__all__ = ["autocast", "GradScaler"]


def autocast(enabled=True, dtype=None, cache_enabled=True):
    return _amp.autocast("cuda", dtype=_dtype.float16 if dtype is None else dtype, enabled=enabled)
