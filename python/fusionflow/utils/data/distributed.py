"""torch.utils.data.distributed's DistributedSampler: fusionflow.distributed's (this rank's
share of the indices, the same seeded order on every rank, set_epoch)."""
from ...distributed import DistributedSampler

__all__ = ["DistributedSampler"]
