"""The adapter protocol of spec/elmo.md §11, as a typing.Protocol for type checkers and docs.

The protocol's one source is spec/protocol.json (read by elmo_conformance.spec.protocol):
the constants below come from it, and tests/test_protocol.py fails when this class's methods,
their arguments or their defaults drift from it.

The harness never requires subclassing: any object with these attributes is an adapter. Three
more are optional, so they are not members here: `device` (default "cpu"), `unavailable` (default
None: a reason makes every test skip) and `mutants` (id -> factory of a broken adapter).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol, runtime_checkable

import numpy as np

from elmo_conformance.spec.protocol import protocol

Params = Mapping[str, np.ndarray]

METHODS = protocol().methods
GRAD_METHODS = protocol().grad_methods
KNOWN_CAPABILITIES = protocol().capability_names


@runtime_checkable
class Adapter(Protocol):
    name: str
    capabilities: frozenset[str]

    def scalar_mix(self, s: np.ndarray, gamma: np.ndarray, layers: Sequence[np.ndarray]) -> np.ndarray: ...

    def scalar_mix_vjp(
        self, s: np.ndarray, gamma: np.ndarray, layers: Sequence[np.ndarray], g_out: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]: ...

    def bilm_layers(self, params: Params, ids: np.ndarray, lengths: np.ndarray | None) -> list[np.ndarray]: ...

    def bilm_logits(
        self, params: Params, ids: np.ndarray, lengths: np.ndarray | None
    ) -> tuple[np.ndarray, np.ndarray]: ...

    def bilm_loss(self, params: Params, ids: np.ndarray, lengths: np.ndarray | None) -> float: ...

    def bilm_loss_grad(self, params: Params, ids: np.ndarray, lengths: np.ndarray | None) -> dict[str, np.ndarray]: ...

    def bilm_layers_vjp(
        self, params: Params, ids: np.ndarray, lengths: np.ndarray | None, g_layers: Sequence[np.ndarray]
    ) -> dict[str, np.ndarray]: ...

    def fit_linear_probe(
        self,
        features: np.ndarray,
        labels: np.ndarray,
        n_classes: int,
        l2: float = 1e-3,
        steps: int = 200,
        lr: float = 0.5,
    ) -> tuple[np.ndarray, np.ndarray]: ...

    def probe_accuracy(self, W: np.ndarray, b: np.ndarray, features: np.ndarray, labels: np.ndarray) -> float: ...
