"""An adapter whose methods raise when they are looked up (spec §11.1): the reference, except
that after the harness's check at load time, looking up `scalar_mix` raises RuntimeError and
looking up `scalar_mix_vjp` raises ValueError naming `s`, as a property or `__getattr__` may."""

from __future__ import annotations

from elmo_conformance.adapters.numpy import NumpyAdapter


class RaisingLookup(NumpyAdapter):
    name = "raising_lookup"

    def __init__(self) -> None:
        super().__init__()
        self.looked_up: dict[str, int] = {}

    def _count(self, name: str) -> int:
        self.looked_up[name] = self.looked_up.get(name, 0) + 1
        return self.looked_up[name]

    @property
    def scalar_mix(self):  # noqa: ANN201
        if self._count("scalar_mix") > 1:
            raise RuntimeError("scalar_mix cannot be looked up")
        return super().scalar_mix

    @property
    def scalar_mix_vjp(self):  # noqa: ANN201
        if self._count("scalar_mix_vjp") > 1:
            raise ValueError("s: looked up, refused")
        return super().scalar_mix_vjp


adapter = RaisingLookup()
