"""fusionflow.optim.lr_scheduler: PyTorch 1.13's learning-rate schedulers, with its values
step by step (its recursive get_lr forms), get_last_lr and state_dict."""
from ._base import LRScheduler, _LRScheduler, LambdaLR, MultiplicativeLR
from ._decay import (StepLR, MultiStepLR, ConstantLR, LinearLR, ExponentialLR, PolynomialLR,
                     CosineAnnealingLR)
from ._cyclic import CyclicLR, OneCycleLR, CosineAnnealingWarmRestarts
from ._compose import SequentialLR, ChainedScheduler
from ._plateau import ReduceLROnPlateau

__all__ = ["LRScheduler", "_LRScheduler", "LambdaLR", "MultiplicativeLR", "StepLR", "MultiStepLR", "ConstantLR",
           "LinearLR", "ExponentialLR", "PolynomialLR", "CosineAnnealingLR", "CyclicLR", "OneCycleLR",
           "CosineAnnealingWarmRestarts", "SequentialLR", "ChainedScheduler", "ReduceLROnPlateau"]
