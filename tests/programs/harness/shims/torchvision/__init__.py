"""A small stand-in for torchvision, shared by both sides of the harness: torchvision is not
installed and its datasets need the internet. Written against `torch`; the FusionFlow side
imports the copy that harness/rewrite.py makes of it, so both sides run the same code."""
from . import datasets, transforms, utils, models  # noqa: F401
