"""The torch implementation on a CUDA device (adapter.py); `adapter` is the instance to use.

Importing this package sets CUBLAS_WORKSPACE_CONFIG (unless already set) before anything starts
CUDA, so that cuBLAS can be deterministic (§1.4); see adapter.py for the other settings.
"""

import os

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")

from elmo_conformance.adapters.cuda.adapter import CudaAdapter  # noqa: E402  (after the environment variable)
from elmo_conformance.adapters.cuda.mutants import MUTANTS  # noqa: E402

adapter = CudaAdapter()
adapter.mutants = MUTANTS  # type: ignore[attr-defined]  # the catalog mutants of §13, declared as §11 allows

__all__ = ["MUTANTS", "CudaAdapter", "adapter"]
