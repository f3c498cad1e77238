"""An adapter that returns big-endian float64 arrays (`>f8`), otherwise the reference: a float64
in either byte order is a float64 (spec §15.3), in the harness's process and through the wire."""

from __future__ import annotations

from elmo_conformance.adapters.numpy import NumpyAdapter


class BigEndian(NumpyAdapter):
    name = "big_endian"

    def scalar_mix(self, s, gamma, layers):  # noqa: ANN001, ANN201
        out = super().scalar_mix(s, gamma, layers)
        return out.astype(out.dtype.newbyteorder(">"))


adapter = BigEndian()
