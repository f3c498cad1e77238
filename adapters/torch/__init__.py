"""The PyTorch implementation (elmo.py) and its §11 adapter; `adapter` is the instance to use."""

from elmo_conformance.adapters.torch.adapter import TorchAdapter
from elmo_conformance.adapters.torch.mutants import MUTANTS

adapter = TorchAdapter()
adapter.mutants = MUTANTS  # type: ignore[attr-defined]  # the catalog mutants of §13, declared as §11 allows

__all__ = ["MUTANTS", "TorchAdapter", "adapter"]
