"""fusionflow.utils.data: torch.utils.data's datasets, samplers, collation and DataLoader."""
from .dataset import (Dataset, IterableDataset, TensorDataset, ConcatDataset, ChainDataset, Subset,
                      random_split)
from .sampler import (Sampler, SequentialSampler, RandomSampler, SubsetRandomSampler, WeightedRandomSampler,
                      BatchSampler)
from ._collate import default_collate, default_convert
from ._worker import WorkerInfo, get_worker_info
from .dataloader import DataLoader
from .distributed import DistributedSampler

__all__ = ["Dataset", "IterableDataset", "TensorDataset", "ConcatDataset", "ChainDataset", "Subset",
           "random_split", "Sampler", "SequentialSampler", "RandomSampler", "SubsetRandomSampler",
           "WeightedRandomSampler", "BatchSampler", "default_collate", "default_convert", "WorkerInfo",
           "get_worker_info", "DataLoader", "DistributedSampler"]
