"""fusionflow.optim: PyTorch 1.13's optimizers, update rules and defaults, and
lr_scheduler. SGD, Adam and AdamW are graph-safe (fusionflow.compile); the others run
eagerly (optimizer.py says why and how)."""
from .optimizer import Optimizer
from .sgd import SGD
from .adam import Adam, AdamW
from .adaptive import RMSprop, Adagrad, Adadelta
from .adam_variants import Adamax, NAdam, RAdam
from .asgd import ASGD
from .rprop import Rprop
from .lbfgs import LBFGS
from . import lr_scheduler

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta", "Adamax", "NAdam", "RAdam",
           "ASGD", "Rprop", "LBFGS"]
