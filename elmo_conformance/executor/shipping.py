"""What travels to a Dask worker and how a local worker there reads it (remote.py): the run's files
(`Shipment`), where they lie on that machine (`Relocation`), a job pickled with the caller's
functions (`Shipped`), and the local worker's end of its connection (`Unshipping`). Imported by
both the client's side (remote.py) and a local worker's start (local.py), and by neither's state.
"""

from __future__ import annotations

import io
import os
import pickle
import tarfile
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Shipment:
    """Files of this machine that the jobs need on a worker: each path (absolute, a folder with
    everything in it or a file) is unpacked at the same path under the worker's base folder."""

    paths: tuple[str, ...]

    def pack(self) -> bytes:
        data = io.BytesIO()
        with tarfile.open(fileobj=data, mode="w:gz", compresslevel=1) as tar:
            for path in dict.fromkeys(os.path.abspath(p) for p in self.paths):
                tar.add(path, arcname=path.lstrip(os.sep))
        return data.getvalue()


@dataclass(frozen=True)
class Relocation:
    """Where a shipment lies on this machine: a path P of the client's is `here(P)`, BASE/P."""

    base: str
    paths: tuple[str, ...]  # the shipment's, as the client named them

    def here(self, path: str) -> str:
        return os.path.join(self.base, os.path.abspath(path).lstrip(os.sep))

    def back(self, path: str) -> str:
        """A path under the base as the client names it; any other path as it is."""
        base = self.base.rstrip(os.sep) + os.sep
        return os.sep + path[len(base) :] if path.startswith(base) else path

    def shipped(self, path: str) -> bool:
        """Whether `path` (the client's) lies in what was shipped."""
        path = os.path.abspath(path)
        return any(path == p or path.startswith(p.rstrip(os.sep) + os.sep) for p in map(os.path.abspath, self.paths))


Localize = Callable[[Any, Relocation], Any]


@dataclass(frozen=True)
class Shipped:
    """A job as it travels to a Dask worker's local worker: pickled with the caller's functions,
    so that the Dask worker process never imports the caller's modules (the local worker does)."""

    payload: bytes  # pickle of (job, localize, delocalize)
    relocation: Relocation


class Unshipping:
    """The local worker's end of its connection on a Dask worker: a Shipped job is unpickled and
    localized as it is received, and everything the worker sends after it is delocalized."""

    def __init__(self, conn: Any) -> None:
        self.conn = conn
        self.back: tuple[Localize, Relocation] | None = None

    def recv(self) -> Any:
        value = self.conn.recv()
        if isinstance(value, Shipped):
            job, localize, delocalize = pickle.loads(value.payload)  # noqa: S301 - pickled by this run's client
            self.back = (delocalize, value.relocation)
            return localize(job, value.relocation)
        return value

    def send(self, value: Any) -> None:
        if self.back is not None:
            value = self.back[0](value, self.back[1])
        self.conn.send(value)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.conn, name)
