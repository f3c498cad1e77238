"""The catalog mutants s01-s10 (spec §13) of the JAX adapter, one overridden behaviour each.

Each mutant is a JaxAdapter whose `mix_class`, `bilm_class` or `probe_class` is a subclass of the
clean elmo.py class overriding the one method where the defect sits; the clean code carries no
mutant switches. `MUTANTS` maps the catalog id to the broken adapter's class (a zero-argument
factory, §11); each instance compiles its own functions, since jit caches are per instance.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType

import jax.numpy as jnp

from .adapter import JaxAdapter
from .elmo import Array, BiLM, LinearProbe, ScalarMix, run


class RawWeights(ScalarMix):
    """s01: the raw s as the weights, no softmax."""

    def weights(self, s: Array) -> Array:
        return s


class NoGamma(ScalarMix):
    """s02: γ is never applied."""

    def scale(self, gamma: Array, mixed: Array) -> Array:
        return mixed


class ForwardReadsBoth(BiLM):
    """s03: forward layer k >= 2 reads f^{k-1} + b^{k-1}."""

    def forward_input(self, k: int, f: Array, b: Array) -> Array:
        return f + b if k >= 1 else f


class FlipsPaddedArray(BiLM):
    """s04: the backward stack flips the whole padded array along time (and flips back)."""

    def reverse(self, x: Array, lengths: Array) -> Array:
        return jnp.flip(x, axis=1)


class BackwardLeftReversed(BiLM):
    """s05: the backward outputs are left in reversed order."""

    def reverse_back(self, x: Array, lengths: Array) -> Array:
        return x


class BackwardKeepsPadding(BiLM):
    """s06: the backward LSTMs run on through the padding after each reversed row and those
    outputs are kept, so padded positions of b^k are not 0."""

    def backward_layer(self, params: dict, k: int, x: Array, lengths: Array, mask: Array) -> Array:
        return self.reverse_back(run(params, f"bwd.{k}", self.reverse(x, lengths)), lengths)


class ForwardScoresCurrent(BiLM):
    """s07: the forward direction is scored on the current token."""

    def forward_targets(self, ids: Array, lengths: Array) -> tuple[Array, Array]:
        return ids, super().forward_targets(ids, lengths)[1]


class BackwardScoresCurrent(BiLM):
    """s08: the backward direction is scored on the current token."""

    def backward_targets(self, ids: Array, lengths: Array) -> tuple[Array, Array]:
        return ids, super().backward_targets(ids, lengths)[1]


class NoFoldBack(LinearProbe):
    """s09: the weights for standardized features are returned as they are."""

    def fold_back(self, V: Array, a: Array, mu: Array, sigma: Array) -> tuple[Array, Array]:
        return V, a


class GradientAscent(LinearProbe):
    """s10: gradient ascent instead of descent."""

    def step(self, V: Array, a: Array, Z: Array, Y: Array, l2: Array, lr: Array) -> tuple[Array, Array]:
        return super().step(V, a, Z, Y, l2, -lr)


# The broken adapters. None declares `replaces` (the clean method it stands in for): under jax.jit
# a method runs only while a new shape is traced, so which tests call it says nothing about which
# tests compute with it, and every test must be allowed to reach every mutant.


class S01RawWeights(JaxAdapter):
    """s01 (§5.1): ScalarMix uses the raw s as weights, no softmax."""

    mix_class = RawWeights


class S02NoGamma(JaxAdapter):
    """s02 (§5.2): γ is never applied."""

    mix_class = NoGamma


class S03ForwardReadsBackward(JaxAdapter):
    """s03 (§3.2): forward layer k >= 2 reads f^(k-1) + b^(k-1) instead of f^(k-1)."""

    bilm_class = ForwardReadsBoth


class S04FlipPadded(JaxAdapter):
    """s04 (§3.3): the backward stack flips the whole padded array along time and flips its
    outputs back, so a short row reads its padding first."""

    bilm_class = FlipsPaddedArray


class S05LeftReversed(JaxAdapter):
    """s05 (§3.3): the backward outputs are left in reversed order (not put back in source order)."""

    bilm_class = BackwardLeftReversed


class S06BackwardPaddingKept(JaxAdapter):
    """s06 (§3.4): the backward LSTMs run on through the padding after each reversed row and
    those outputs are kept: padded positions of b^k are not 0."""

    bilm_class = BackwardKeepsPadding


class S07ForwardScoresCurrent(JaxAdapter):
    """s07 (§4.1): the forward direction is scored on the current token x_t instead of x_{t+1}."""

    bilm_class = ForwardScoresCurrent


class S08BackwardScoresCurrent(JaxAdapter):
    """s08 (§4.1): the backward direction is scored on the current token x_t instead of x_{t-1}."""

    bilm_class = BackwardScoresCurrent


class S09NotFolded(JaxAdapter):
    """s09 (§7.4): the probe returns the weights for standardized features (no folding back)."""

    probe_class = NoFoldBack


class S10Ascent(JaxAdapter):
    """s10 (§7.3): the probe does gradient ascent (adds the gradient instead of subtracting it)."""

    probe_class = GradientAscent


MUTANTS: Mapping[str, Callable[[], JaxAdapter]] = MappingProxyType(
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
