"""The numpy adapter: the reference implementation (reference/) behind the protocol of §11."""

from elmo_conformance.adapters.numpy.adapter import NumpyAdapter
from elmo_conformance.adapters.numpy.mutants import MUTANTS

adapter = NumpyAdapter()
adapter.mutants = MUTANTS  # type: ignore[attr-defined]  # the catalog mutants of §13, declared as §11 allows

__all__ = ["MUTANTS", "NumpyAdapter", "adapter"]
