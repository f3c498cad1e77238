"""The suite's version: stamped into every report, the wire handshake (§15) and the mutation cache.

The one source of it (pyproject.toml reads it for the wheel); ``elmo_conformance.__version__`` is
the same value.
"""

__version__ = "1.1.0"
