"""Families of torch.nn.functional, one file each, re-exported by nn/functional.py."""
