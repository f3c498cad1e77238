"""The JAX implementation (elmo.py) and its §11 adapter; `adapter` is the instance to use.

Importing this package enables JAX's x64 mode for the process (float64 needs it, §1.2).
"""

from elmo_conformance.adapters.jax.adapter import JaxAdapter
from elmo_conformance.adapters.jax.mutants import MUTANTS

adapter = JaxAdapter()
adapter.mutants = MUTANTS  # type: ignore[attr-defined]  # the catalog mutants of §13, declared as §11 allows

__all__ = ["MUTANTS", "JaxAdapter", "adapter"]
