"""The numpy adapter: the reference implementation (reference/) behind the protocol of §11."""

from .adapter import NumpyAdapter

adapter = NumpyAdapter()

__all__ = ["NumpyAdapter", "adapter"]
