"""The PyTorch implementation (elmo.py) and its §11 adapter; `adapter` is the instance to use."""

from .adapter import TorchAdapter

adapter = TorchAdapter()

__all__ = ["TorchAdapter", "adapter"]
