"""Loss modules."""
from .. import functional as F
from .module import Module


class _Loss(Module):
    def __init__(self, reduction="mean"):
        super().__init__()
        if reduction not in ("mean", "sum", "none"):
            raise ValueError("reduction must be 'mean', 'sum' or 'none'")
        self.reduction = reduction


class MSELoss(_Loss):
    def forward(self, input, target):
        return F.mse_loss(input, target, reduction=self.reduction)


class L1Loss(_Loss):
    def forward(self, input, target):
        return F.l1_loss(input, target, reduction=self.reduction)


class CrossEntropyLoss(_Loss):
    """logits [N, C] (or [C]) and integer class targets [N]; mean over N."""

    def forward(self, input, target):
        return F.cross_entropy(input, target, reduction=self.reduction)


class NLLLoss(_Loss):
    def forward(self, input, target):
        return F.nll_loss(input, target, reduction=self.reduction)
