"""The catalog mutants of spec §13 (spec/mutants.json) for the torch adapter, and three extra ones.

Each mutant is a TorchAdapter whose `mix_class`, `bilm_class` or `probe_class` is a subclass of
the clean elmo.py class overriding the one small method where the defect sits. `replaces` names
the clean method it stands in for; the mutation runner runs only the tests whose clean run calls
it (spec §13.1).

The extra mutants (`x-...`, not in the catalog) each stop rejecting one kind of bad input of §8 and
change nothing else: they exercise the equivalence pre-check's bad inputs (§13.1), which must not
take them for equivalent ones. Each runs the clean adapter with one of its input checks
(validate.py, called from adapter.py) swapped for a lenient one that lets that input through.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np
import torch
from torch import Tensor

from elmo_conformance.adapters.mutant_table import mutants_in
from elmo_conformance.adapters.torch import adapter as adapter_module
from elmo_conformance.adapters.torch import validate
from elmo_conformance.adapters.torch.adapter import TorchAdapter
from elmo_conformance.adapters.torch.elmo import IGNORE, BiLM, LinearProbe, ScalarMix


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


@contextmanager
def lenient(name: str, replacement: Callable) -> Iterator[None]:
    """adapter.py's input check `name` is `replacement` inside the block."""
    original = getattr(adapter_module, name)
    setattr(adapter_module, name, replacement)
    try:
        yield
    finally:
        setattr(adapter_module, name, original)


def _leniently(check: str, replacement: Callable, *methods: str) -> Callable[[type], type]:
    """A class decorator: each of `methods` runs the clean one with the check swapped."""

    def wrap(cls: type) -> type:
        for method in methods:
            clean = getattr(TorchAdapter, method)

            def call(self: TorchAdapter, *args: Any, _clean: Callable = clean, **kwargs: Any) -> Any:
                with lenient(check, replacement):
                    return _clean(self, *args, **kwargs)

            call.__name__ = call.__qualname__ = method
            setattr(cls, method, call)
        cls.replaces = (getattr(validate, check),)  # type: ignore[attr-defined]
        return cls

    return wrap


def _real_ids_only(params: Any, ids: Any, lengths: Any) -> tuple[int, int, int, int, int]:
    """check_bilm with ids at padded positions taken as 0 when the rest is valid."""
    if isinstance(ids, np.ndarray) and ids.dtype.kind in "iu" and ids.ndim == 2 and 0 not in ids.shape:
        if isinstance(lengths, np.ndarray) and lengths.dtype.kind in "iu" and lengths.shape == ids.shape[:1]:
            if lengths.min() >= 1 and lengths.max() <= ids.shape[1]:
                ids = np.where(np.arange(ids.shape[1])[None, :] < lengths[:, None], ids, 0)
    return validate.check_bilm(params, ids, lengths)


def _any_s_dtype(s: Any, gamma: Any, layers: Any) -> None:
    """check_mix with an integer s taken as a float one."""
    if isinstance(s, np.ndarray) and s.dtype.kind in "iu":
        s = s.astype(np.float64)
    validate.check_mix(s, gamma, layers)


def _any_lr(features: Any, labels: Any, n_classes: Any, l2: Any, steps: Any, lr: Any) -> None:
    """check_fit without lr's range."""
    real = isinstance(lr, numbers.Real) and not isinstance(lr, bool)
    validate.check_fit(features, labels, n_classes, l2, steps, 0.5 if real else lr)


_BILM_METHODS = ("bilm_layers", "bilm_logits", "bilm_loss", "bilm_loss_grad", "bilm_layers_vjp")


@_leniently("check_bilm", _real_ids_only, *_BILM_METHODS)
class XPaddedIdsUnchecked(TorchAdapter):
    """x-padded-ids-unchecked (§8 V03): ids are range-checked at real positions only, so an
    out-of-range id in the padding reaches the embedding lookup."""

    description = "V03 checks ids at real positions only: an out-of-range id in the padding is accepted"


@_leniently("check_mix", _any_s_dtype, "scalar_mix", "scalar_mix_vjp")
class XIntegerSAccepted(TorchAdapter):
    """x-integer-s-accepted (§8 V13): s is not checked to be a float array, so an integer s is
    converted and mixed."""

    description = "V13 does not check the dtype of s: an integer s is converted and mixed"


@_leniently("check_fit", _any_lr, "fit_linear_probe")
class XLrUnchecked(TorchAdapter):
    """x-lr-unchecked (§8 V22): lr is not checked, so 0, a negative and a NaN learning rate are used
    as given."""

    description = "V22 is not checked: a learning rate of 0, below 0 or NaN is accepted"


# Every mutant class above, by the id its docstring opens with (adapters/mutant_table.py).
MUTANTS: Mapping[str, Callable[[], TorchAdapter]] = mutants_in(globals(), TorchAdapter)
