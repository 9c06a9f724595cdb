"""fusionflow.nn.parallel: torch.nn.parallel's names. DistributedDataParallel is
fusionflow.distributed's (the C bucketed allreduce over MPI); DataParallel is a transparent
wrapper, since a FusionFlow process drives one device."""
from ...distributed import DistributedDataParallel
from .data_parallel import DataParallel

__all__ = ["DataParallel", "DistributedDataParallel"]
