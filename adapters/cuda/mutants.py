"""The catalog mutants (§13) of the cuda adapter: those of adapters/torch, on the CUDA device.

Each is a class deriving from CudaAdapter and from the torch mutant it wraps, so the broken
module class and its `replaces` come from adapters/torch/mutants.py, and the device from here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

from elmo_conformance.adapters.cuda.adapter import CudaAdapter
from elmo_conformance.adapters.torch.mutants import MUTANTS as TORCH_MUTANTS


def on_cuda(torch_mutant: Any) -> type[CudaAdapter]:
    """The torch mutant class `torch_mutant` computed on the CUDA device."""
    return type(
        f"Cuda{torch_mutant.__name__}",
        (CudaAdapter, torch_mutant),
        {"__doc__": torch_mutant.__doc__, "__module__": __name__},
    )


MUTANTS: Mapping[str, Callable[[], CudaAdapter]] = MappingProxyType(
    {mutant_id: on_cuda(factory) for mutant_id, factory in TORCH_MUTANTS.items()}
)
