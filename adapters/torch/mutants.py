"""The catalog mutants of spec §13 (spec/mutants.json) for the torch adapter.

Each mutant is a TorchAdapter whose `mix_class`, `bilm_class` or `probe_class` is a subclass of
the clean elmo.py class overriding the one small method where the defect sits. `replaces` names
the clean method it stands in for; the mutation runner runs only the tests whose clean run calls
it (spec §13.1).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType

import torch
from torch import Tensor

from .adapter import TorchAdapter
from .elmo import IGNORE, BiLM, LinearProbe, ScalarMix


class S01RawWeights(TorchAdapter):
    """s01 (§5.1): ScalarMix uses the raw s as weights, no softmax."""

    class RawWeightsMix(ScalarMix):
        def weights(self) -> Tensor:
            return self.s

    mix_class = RawWeightsMix
    replaces = (ScalarMix.weights,)


class S02NoGamma(TorchAdapter):
    """s02 (§5.2): γ is never applied. (γ is then unused, so autograd refuses its gradient.)"""

    class NoGammaMix(ScalarMix):
        def forward(self, layers: Sequence[Tensor]) -> Tensor:
            self._check(layers)
            w = self.weights()
            return sum((w[k] * r for k, r in enumerate(layers) if k > 0), w[0] * layers[0])

    mix_class = NoGammaMix
    replaces = (ScalarMix.forward,)


class S03ForwardReadsBackward(TorchAdapter):
    """s03 (§3.2): forward layer k >= 2 reads f^(k-1) + b^(k-1) instead of f^(k-1)."""

    class LeakyBiLM(BiLM):
        def _forward_input(self, k: int, f: Tensor, b: Tensor) -> Tensor:
            return f + b if k >= 1 else f

    bilm_class = LeakyBiLM
    replaces = (BiLM._forward_input,)


class S04FlipPadded(TorchAdapter):
    """s04 (§3.3): the backward stack flips the whole padded array along time, runs each backward
    LSTM over all T steps and flips its outputs back, so a short row reads its padding first."""

    class FlippingBiLM(BiLM):
        # Overriding `_reverse` alone is not this defect: `_run` packs the first ℓ_b steps, so a
        # short row would then read only its padding, never its tokens.
        def _backward_layer(self, k: int, x: Tensor, lengths: Tensor, mask: Tensor) -> Tensor:
            states = self._run(self.bwd[k], x.flip(1), torch.full_like(lengths, x.shape[1]))
            return self._select(states.flip(1), mask)

    bilm_class = FlippingBiLM
    replaces = (BiLM._backward_layer,)


class S05LeftReversed(TorchAdapter):
    """s05 (§3.3): the backward outputs are left in reversed order (not put back in source order)."""

    class ReversedBiLM(BiLM):
        def _reverse_back(self, x: Tensor, lengths: Tensor) -> Tensor:
            return x

    bilm_class = ReversedBiLM
    replaces = (BiLM._reverse_back,)


class S06BackwardPaddingKept(TorchAdapter):
    """s06 (§3.4): the backward LSTMs run without lengths, on through the padding after each
    reversed row, and those outputs are kept: padded positions of b^k are not 0."""

    class UnpackedBiLM(BiLM):
        def _backward_layer(self, k: int, x: Tensor, lengths: Tensor, mask: Tensor) -> Tensor:
            states, _ = self.bwd[k](self._reverse(x, lengths))
            return self._reverse_back(states, lengths)

    bilm_class = UnpackedBiLM
    replaces = (BiLM._backward_layer,)


class S07ForwardScoresCurrent(TorchAdapter):
    """s07 (§4.1): the forward direction is scored on the current token x_t instead of x_{t+1}."""

    class CurrentTokenBiLM(BiLM):
        def forward_targets(self, ids: Tensor, lengths: Tensor) -> Tensor:
            t = torch.arange(ids.shape[1], device=ids.device)
            return torch.where(t <= lengths[:, None] - 2, ids, IGNORE)

    bilm_class = CurrentTokenBiLM
    replaces = (BiLM.forward_targets,)


class S08BackwardScoresCurrent(TorchAdapter):
    """s08 (§4.1): the backward direction is scored on the current token x_t instead of x_{t-1}."""

    class CurrentTokenBiLM(BiLM):
        def backward_targets(self, ids: Tensor, lengths: Tensor) -> Tensor:
            t = torch.arange(ids.shape[1], device=ids.device)
            return torch.where((t >= 1) & (t < lengths[:, None]), ids, IGNORE)

    bilm_class = CurrentTokenBiLM
    replaces = (BiLM.backward_targets,)


class S09NotFolded(TorchAdapter):
    """s09 (§7.4): the probe returns the weights for standardized features (no folding back)."""

    class UnfoldedProbe(LinearProbe):
        @staticmethod
        def fold_back(V: Tensor, a: Tensor, mu: Tensor, sigma: Tensor) -> tuple[Tensor, Tensor]:
            return V, a

    probe_class = UnfoldedProbe
    replaces = (LinearProbe.fold_back,)


class S10Ascent(TorchAdapter):
    """s10 (§7.3): the probe does gradient ascent (adds the gradient instead of subtracting it)."""

    class AscendingProbe(LinearProbe):
        @staticmethod
        def step(Z: Tensor, Y: Tensor, V: Tensor, a: Tensor, l2: float, lr: float) -> tuple[Tensor, Tensor]:
            return LinearProbe.step(Z, Y, V, a, l2, -lr)

    probe_class = AscendingProbe
    replaces = (LinearProbe.step,)


MUTANTS: Mapping[str, Callable[[], TorchAdapter]] = MappingProxyType(
    {
        "s01": S01RawWeights,
        "s02": S02NoGamma,
        "s03": S03ForwardReadsBackward,
        "s04": S04FlipPadded,
        "s05": S05LeftReversed,
        "s06": S06BackwardPaddingKept,
        "s07": S07ForwardScoresCurrent,
        "s08": S08BackwardScoresCurrent,
        "s09": S09NotFolded,
        "s10": S10Ascent,
    }
)
