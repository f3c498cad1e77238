"""The torch implementation (adapters/torch) on a CUDA device, with cuDNN LSTMs.

`CudaAdapter` is the torch adapter with `device = "cuda"`: it builds its modules there and runs
every protocol call under `torch.device("cuda")`, so every tensor the torch code makes from NumPy
inputs lands on the GPU too, and results are copied back to NumPy. Nothing else differs, so this
checks the very code of adapters/torch on another device, with its own tolerances (§10).

Where `torch.cuda.is_available()` is false the adapter is `unavailable` ("no CUDA device") and the
harness skips every test with that reason (§11). Where a device exists, creating the adapter sets,
for the whole process, what makes CUDA results repeatable bitwise (§1.4) and float32 really
float32 (§1.2):

- `torch.backends.cuda.matmul.allow_tf32 = False` and `torch.backends.cudnn.allow_tf32 = False`:
  TF32 would round matmul and LSTM inputs to a 10-bit mantissa, far outside float32's tolerances;
- `torch.backends.cudnn.deterministic = True` and `torch.backends.cudnn.benchmark = False`: cuDNN
  picks one fixed, deterministic algorithm instead of timing candidates at run time;
- `CUBLAS_WORKSPACE_CONFIG=:4096:8` (set when the package is imported, before CUDA starts, unless
  already set): cuBLAS reductions then do not depend on stream scheduling;
- `torch.use_deterministic_algorithms(True, warn_only=True)`: deterministic kernels wherever torch
  has them; an op without one warns, naming itself, and the suite's own bitwise checks (§1.4,
  §3.2, §3.3) then decide whether its results really vary.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from elmo_conformance.adapters.protocol import METHODS
from elmo_conformance.adapters.torch.adapter import TorchAdapter


def use_deterministic_cuda() -> None:
    """The process-wide settings listed in the module docstring (except the environment variable)."""
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cudnn.deterministic = True
    torch.backends.cudnn.benchmark = False
    torch.use_deterministic_algorithms(True, warn_only=True)


class CudaAdapter(TorchAdapter):
    """The §11 protocol of adapters/torch, computed on the first CUDA device."""

    name = "cuda"
    capabilities = frozenset({"float64", "float32", "grad"})
    device = "cuda"

    def __init__(self) -> None:
        self.unavailable = None if torch.cuda.is_available() else "no CUDA device"
        if self.unavailable is None:
            use_deterministic_cuda()


def _on_device(method: str) -> Callable[..., Any]:
    def call(self: CudaAdapter, *args: Any, **kwargs: Any) -> Any:
        with torch.device(self.device):
            # super() from CudaAdapter, not TorchAdapter: a mutant's class sits between the two.
            return getattr(super(CudaAdapter, self), method)(*args, **kwargs)

    call.__name__ = call.__qualname__ = method
    call.__doc__ = f"TorchAdapter.{method} with the default device set to this adapter's."
    return call


for _method in METHODS:
    setattr(CudaAdapter, _method, _on_device(_method))
