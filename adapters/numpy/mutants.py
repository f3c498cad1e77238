"""The catalog mutants of spec §13 (spec/mutants.json) for the numpy adapter, and three extra ones.

Each mutant is the reference with one defect. Most replace one reference function while a
protocol call runs (`Substituted`): the defect is confined to the adapter's calls, so the
conformance tests' own use of reference/ (the expected values of differential tests) stays clean,
and every protocol function that reaches the function (layers, logits, loss, gradients) sees the
same defect. `replaces` names the clean functions a mutant stands in for; the mutation runner runs
only the tests whose clean run calls one of them (spec §13.1).

The extra mutants (`x-...`, not in the catalog) each stop rejecting one kind of bad input of §8 and
change nothing else: they exercise the equivalence pre-check's bad inputs (§13.1), which must not
take them for equivalent ones. Each replaces one input check of reference/validate.py with a
lenient one that lets that input through to the computation.
"""

from __future__ import annotations

import importlib
import numbers
import sys
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import replace
from types import ModuleType
from typing import Any, ClassVar

import numpy as np

import elmo_conformance.reference.bilm
import elmo_conformance.reference.loss
import elmo_conformance.reference.probe  # noqa: F401  (reference.bilm, .loss, .probe below)
from elmo_conformance import reference
from elmo_conformance.adapters.mutant_table import mutants_in
from elmo_conformance.adapters.numpy.adapter import NumpyAdapter
from elmo_conformance.adapters.protocol import METHODS
from elmo_conformance.reference import validate

# `reference.scalar_mix` is the function (the package re-exports it), so take the module itself.
_mix = importlib.import_module("elmo_conformance.reference.scalar_mix")

# The clean functions, taken before any substitution so that a replacement can call them.
_run_bilm = reference.bilm.run_bilm
_forward_stack = reference.bilm.forward_stack
_backward_stack = reference.bilm.backward_stack
_reverse_padded = reference.bilm.reverse_padded
_targets = reference.loss.targets
_gradient_step = reference.probe.gradient_step
_check_mix = validate.check_mix
_check_bilm_inputs = validate.check_bilm_inputs
_check_fit_settings = validate.check_fit_settings
_LSTM_PARTS = ("weight_ih", "weight_hh", "bias_ih", "bias_hh")


def _holders(owner: object, name: str, original: object) -> list[object]:
    """`owner` and every reference module that imported the same function under `name`."""
    if isinstance(owner, type):
        return [owner]
    modules = [
        m for key, m in sys.modules.items() if key == reference.__name__ or key.startswith(reference.__name__ + ".")
    ]
    return [m for m in modules if isinstance(m, ModuleType) and getattr(m, name, None) is original]


@contextmanager
def substitute(owner: object, name: str, replacement: Callable) -> Iterator[None]:
    """`owner.name` is `replacement` inside the block, also where another module imported it."""
    original = owner.__dict__[name]
    holders = _holders(owner, name, original)
    for holder in holders:
        setattr(holder, name, replacement)
    try:
        yield
    finally:
        for holder in holders:
            setattr(holder, name, original)


def _under_substitution(method: str) -> Callable:
    function = getattr(NumpyAdapter, method)

    def call(self: Substituted, *args: Any, **kwargs: Any) -> Any:
        with substitute(self.owner, self.name_replaced, type(self).replacement):
            return function(*args, **kwargs)

    call.__name__ = call.__qualname__ = method
    return call


class Substituted(NumpyAdapter):
    """NumpyAdapter with `owner.<name_replaced>` swapped for `replacement` during every call."""

    owner: object
    name_replaced: str
    replacement: Callable
    replaces: ClassVar[tuple[object, ...]]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        original = cls.owner.__dict__[cls.name_replaced]
        cls.replaces = (original,)
        for method in METHODS:
            setattr(cls, method, _under_substitution(method))


class S01RawWeights(Substituted):
    """s01 (§5.1): ScalarMix uses the raw s as weights, no softmax."""

    owner, name_replaced = _mix, "mix_weights"

    @staticmethod
    def replacement(s: np.ndarray) -> np.ndarray:
        return s


class S02NoGamma(NumpyAdapter):
    """s02 (§5.2): γ is never applied, so the mix is Σ w_k R^k and γ gets no gradient."""

    replaces = (_mix.scalar_mix, _mix.scalar_mix_vjp)

    def scalar_mix(self, s: np.ndarray, gamma: np.ndarray, layers: list[np.ndarray]) -> np.ndarray:
        validate.check_mix(s, gamma, layers)
        return _mix.scalar_mix(s, np.ones_like(gamma), layers)

    def scalar_mix_vjp(
        self, s: np.ndarray, gamma: np.ndarray, layers: list[np.ndarray], g_out: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
        validate.check_mix(s, gamma, layers)
        g_s, g_gamma, g_layers = _mix.scalar_mix_vjp(s, np.ones_like(gamma), layers, g_out)
        return g_s, np.zeros_like(g_gamma), g_layers


class S03ForwardReadsBackward(Substituted):
    """s03 (§3.2): forward layer k >= 2 reads f^(k-1) + b^(k-1) instead of f^(k-1)."""

    owner, name_replaced = reference.bilm, "run_bilm"

    @staticmethod
    def replacement(params: dict, ids: np.ndarray, lengths: np.ndarray, n_layers: int) -> Any:
        clean = _run_bilm(params, ids, lengths, n_layers)
        f, caches, u = [], [], clean.e
        for k in range(n_layers):
            # forward_stack over a one-layer dictionary runs forward layer k alone on `u`.
            layer = {f"fwd.0.{part}": params[f"fwd.{k}.{part}"] for part in _LSTM_PARTS}
            (state,), (cache,) = _forward_stack(layer, u, 1)
            f.append(state)
            caches.append(cache)
            u = state + np.where(clean.mask[:, :, None], clean.b[k], 0.0).astype(state.dtype)
        return replace(clean, f=f, f_caches=caches)


class S04FlipPadded(Substituted):
    """s04 (§3.3): the backward stack flips the whole padded array along time (and its outputs
    back) instead of reversing each row inside its length, so short rows read their padding."""

    owner, name_replaced = reference.bilm, "reverse_padded"

    @staticmethod
    def replacement(x: np.ndarray, lengths: np.ndarray) -> np.ndarray:
        return x[:, ::-1]


class S05LeftReversed(Substituted):
    """s05 (§3.3): the backward outputs are left in reversed order (not put back in source order)."""

    owner, name_replaced = reference.bilm, "backward_stack"

    @staticmethod
    def replacement(params: dict, e: np.ndarray, lengths: np.ndarray, n_layers: int) -> tuple[list, list]:
        states, caches = _backward_stack(params, e, lengths, n_layers)
        # Reversing inside the lengths is its own inverse: this undoes the stack's reversal back.
        return [_reverse_padded(state, lengths) for state in states], caches


class S06BackwardPaddingKept(Substituted):
    """s06 (§3.4): the backward LSTMs run on through the padding after each reversed row and those
    outputs are kept: padded positions of b^k are not 0 (f^k and R^0 are still selected)."""

    owner, name_replaced = reference.bilm.BiLMPass, "layers"

    @staticmethod
    def replacement(run: reference.bilm.BiLMPass) -> list[np.ndarray]:
        mask = run.mask[:, :, None]
        r0 = np.where(mask, np.concatenate([run.e, run.e], axis=-1), 0.0).astype(run.e.dtype)
        return [r0] + [
            np.concatenate([np.where(mask, f, 0.0).astype(f.dtype), b], axis=-1) for f, b in zip(run.f, run.b)
        ]


class S07ForwardScoresCurrent(Substituted):
    """s07 (§4.1): the forward direction is scored on the current token x_t instead of x_{t+1}."""

    owner, name_replaced = reference.loss, "targets"

    @staticmethod
    def replacement(ids: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        fwd, bwd = _targets(ids, lengths)
        scored = np.arange(ids.shape[1])[None, :] <= lengths[:, None] - 2
        return np.where(scored, ids, fwd), bwd


class S08BackwardScoresCurrent(Substituted):
    """s08 (§4.1): the backward direction is scored on the current token x_t instead of x_{t-1}."""

    owner, name_replaced = reference.loss, "targets"

    @staticmethod
    def replacement(ids: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        fwd, bwd = _targets(ids, lengths)
        t = np.arange(ids.shape[1])[None, :]
        scored = (t >= 1) & (t <= lengths[:, None] - 1)
        return fwd, np.where(scored, ids, bwd)


class S09NotFolded(Substituted):
    """s09 (§7.4): the probe returns the weights for standardized features (no folding back)."""

    owner, name_replaced = reference.probe, "fold_back"

    @staticmethod
    def replacement(V: np.ndarray, a: np.ndarray, mu: np.ndarray, sigma: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return V, a


class S10Ascent(Substituted):
    """s10 (§7.3): the probe does gradient ascent (adds the gradient instead of subtracting it)."""

    owner, name_replaced = reference.probe, "gradient_step"

    @staticmethod
    def replacement(Z: np.ndarray, Y: np.ndarray, V: np.ndarray, a: np.ndarray, l2: float, lr: float) -> Any:
        return _gradient_step(Z, Y, V, a, l2, -lr)


def real_ids_only(ids: object, lengths: object) -> object:
    """ids with every padded position set to 0 when ids and lengths are otherwise valid (V01-V05),
    so that a check of ids sees the real positions only."""
    if not (validate.is_int_array(ids) and ids.ndim == 2 and 0 not in ids.shape):
        return ids
    if not (validate.is_int_array(lengths) and lengths.shape == ids.shape[:1]):
        return ids
    if lengths.min() < 1 or lengths.max() > ids.shape[1]:
        return ids
    return np.where(np.arange(ids.shape[1])[None, :] < lengths[:, None], ids, 0)


class XPaddedIdsUnchecked(Substituted):
    """x-padded-ids-unchecked (§8 V03): ids are range-checked at real positions only, so an
    out-of-range id in the padding reaches the embedding lookup."""

    description = "V03 checks ids at real positions only: an out-of-range id in the padding is accepted"

    owner, name_replaced = validate, "check_bilm_inputs"

    @staticmethod
    def replacement(params: object, ids: object, lengths: object) -> Any:
        return _check_bilm_inputs(params, real_ids_only(ids, lengths), lengths)


class XIntegerSAccepted(Substituted):
    """x-integer-s-accepted (§8 V13): s is not checked to be a float array, so an integer s is
    converted and mixed."""

    description = "V13 does not check the dtype of s: an integer s is converted and mixed"

    owner, name_replaced = validate, "check_mix"

    @staticmethod
    def replacement(s: object, gamma: object, layers: object) -> np.ndarray:
        if validate.is_int_array(s):
            s = s.astype(np.float64)
        return _check_mix(s, gamma, layers)


class XLrUnchecked(Substituted):
    """x-lr-unchecked (§8 V22): lr is not checked, so 0, a negative and a NaN learning rate are
    used as given."""

    description = "V22 is not checked: a learning rate of 0, below 0 or NaN is accepted"

    owner, name_replaced = validate, "check_fit_settings"

    @staticmethod
    def replacement(n_classes: object, steps: object, lr: object, l2: object) -> None:
        real = isinstance(lr, numbers.Real) and not isinstance(lr, bool)
        _check_fit_settings(n_classes, steps, 0.5 if real else lr, l2)


# Every mutant class above, by the id its docstring opens with (adapters/mutant_table.py).
MUTANTS: Mapping[str, Callable[[], NumpyAdapter]] = mutants_in(globals(), NumpyAdapter)
