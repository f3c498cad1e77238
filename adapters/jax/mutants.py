"""The catalog mutants s01-s10 (spec §13) of the JAX adapter, one overridden behaviour each, and
three extra ones.

Each mutant is a JaxAdapter whose `mix_class`, `bilm_class` or `probe_class` is a subclass of the
clean elmo.py class overriding the one method where the defect sits; the clean code carries no
mutant switches. `MUTANTS` maps the catalog id to the broken adapter's class (a zero-argument
factory, §11); each instance compiles its own functions, since jit caches are per instance.

The extra mutants (`x-...`, not in the catalog) each stop rejecting one kind of bad input of §8 and
change nothing else: they exercise the equivalence pre-check's bad inputs (§13.1), which must not
take them for equivalent ones. Each runs the clean adapter with one of the input checks it calls
(reference/validate.py) swapped for a lenient one that lets that input through.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import jax.numpy as jnp
import numpy as np

from elmo_conformance.adapters.jax.adapter import JaxAdapter
from elmo_conformance.adapters.jax.elmo import Array, BiLM, LinearProbe, ScalarMix, run
from elmo_conformance.adapters.mutant_table import mutants_in
from elmo_conformance.reference import validate


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


# The extra mutants: one input check made lenient (§8), nothing else changed.

_CLEAN_CHECKS = {name: getattr(validate, name) for name in ("check_bilm_inputs", "check_mix", "check_fit_settings")}


@contextmanager
def lenient(name: str, replacement: Callable) -> Iterator[None]:
    """reference/validate.py's `name` is `replacement` inside the block."""
    setattr(validate, name, replacement)
    try:
        yield
    finally:
        setattr(validate, name, _CLEAN_CHECKS[name])


def _leniently(check: str, replacement: Callable, *methods: str) -> Callable[[type], type]:
    """A class decorator: each of `methods` runs the clean one with the check swapped."""

    def wrap(cls: type) -> type:
        for method in methods:
            clean = getattr(JaxAdapter, method)

            def call(self: JaxAdapter, *args: Any, _clean: Callable = clean, **kwargs: Any) -> Any:
                with lenient(check, replacement):
                    return _clean(self, *args, **kwargs)

            call.__name__ = call.__qualname__ = method
            setattr(cls, method, call)
        return cls

    return wrap


def _real_ids_only(params: Any, ids: Any, lengths: Any) -> Any:
    """check_bilm_inputs with ids at padded positions taken as 0 when the rest is valid."""
    if validate.is_int_array(ids) and ids.ndim == 2 and 0 not in ids.shape:
        if validate.is_int_array(lengths) and lengths.shape == ids.shape[:1]:
            if lengths.min() >= 1 and lengths.max() <= ids.shape[1]:
                ids = np.where(np.arange(ids.shape[1])[None, :] < lengths[:, None], ids, 0)
    return _CLEAN_CHECKS["check_bilm_inputs"](params, ids, lengths)


def _any_s_dtype(s: Any, gamma: Any, layers: Any) -> Any:
    """check_mix with an integer s taken as a float one."""
    if validate.is_int_array(s):
        s = s.astype(np.float64)
    return _CLEAN_CHECKS["check_mix"](s, gamma, layers)


def _any_lr(n_classes: Any, steps: Any, lr: Any, l2: Any) -> None:
    """check_fit_settings without lr's range."""
    real = isinstance(lr, numbers.Real) and not isinstance(lr, bool)
    _CLEAN_CHECKS["check_fit_settings"](n_classes, steps, 0.5 if real else lr, l2)


_BILM_METHODS = ("bilm_layers", "bilm_logits", "bilm_loss", "bilm_loss_grad", "bilm_layers_vjp")


@_leniently("check_bilm_inputs", _real_ids_only, *_BILM_METHODS)
class XPaddedIdsUnchecked(JaxAdapter):
    """x-padded-ids-unchecked (§8 V03): ids are range-checked at real positions only, so an
    out-of-range id in the padding reaches the embedding lookup (which JAX clamps)."""

    description = "V03 checks ids at real positions only: an out-of-range id in the padding is accepted"


@_leniently("check_mix", _any_s_dtype, "scalar_mix", "scalar_mix_vjp")
class XIntegerSAccepted(JaxAdapter):
    """x-integer-s-accepted (§8 V13): s is not checked to be a float array, so an integer s is
    converted and mixed."""

    description = "V13 does not check the dtype of s: an integer s is converted and mixed"


@_leniently("check_fit_settings", _any_lr, "fit_linear_probe")
class XLrUnchecked(JaxAdapter):
    """x-lr-unchecked (§8 V22): lr is not checked, so 0, a negative and a NaN learning rate are used
    as given."""

    description = "V22 is not checked: a learning rate of 0, below 0 or NaN is accepted"


# Every mutant class above, by the id its docstring opens with (adapters/mutant_table.py).
MUTANTS: Mapping[str, Callable[[], JaxAdapter]] = mutants_in(globals(), JaxAdapter)
