"""The JAX adapter: spec §11's NumPy protocol over the pure functions of elmo.py.

Each call checks its NumPy inputs against §8 (the reference's checks: they concern the boundary,
not the arithmetic), converts them to JAX arrays of the floating inputs' dtype (§1.2), runs one
`jax.jit`-compiled function on the CPU, and copies the result back into fresh, writable NumPy
arrays. Compilation is cached per input shape and dtype, so repeated shapes cost one compilation.

The classes are class attributes so that a mutant (mutants.py) can swap one for a subclass.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from elmo_conformance.reference import validate

from .elmo import BiLM, LinearProbe, ScalarMix

Params = dict[str, np.ndarray]

# The suite calls with many small shapes, each compiled once; at these sizes LLVM's optimizations
# cost more compile time than they save in run time.
_jit = partial(jax.jit, compiler_options={"xla_backend_optimization_level": 0})

# A compiled program holds about 50 memory mappings until its cache entry is dropped. A long
# session (a mutation run, properties with hundreds of examples) compiles thousands of shapes and
# would reach Linux's default limit (vm.max_map_count = 65530), where XLA's compiler segfaults; so
# each adapter keeps at most this many programs and then starts its caches afresh.
MAX_PROGRAMS = 256


def _to_jax(value: Any) -> Any:
    """NumPy arrays (also in dicts and lists) as JAX arrays; anything else (a static int) as it is."""
    if isinstance(value, Mapping):
        return {key: _to_jax(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_to_jax(item) for item in value]
    return jnp.asarray(value) if isinstance(value, np.ndarray) else value


def _signature(value: Any) -> Any:
    """What jit compiles for: the structure, shapes and dtypes of the arrays, and static values."""
    if isinstance(value, Mapping):
        return tuple((key, _signature(item)) for key, item in value.items())
    if isinstance(value, list | tuple):
        return tuple(_signature(item) for item in value)
    return (value.shape, value.dtype.str) if isinstance(value, np.ndarray) else value


def _to_numpy(value: Any) -> Any:
    """JAX arrays (also in dicts, lists and tuples) as writable NumPy copies."""
    if isinstance(value, Mapping):
        return {key: _to_numpy(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(_to_numpy(item) for item in value)
    return np.array(value)


class JaxAdapter:
    """The §11 protocol over `BiLM`, `ScalarMix` and `LinearProbe` of elmo.py, on the CPU."""

    name = "jax"
    capabilities = frozenset({"float64", "float32", "grad"})
    device = "cpu"
    bilm_class: type[BiLM] = BiLM
    mix_class: type[ScalarMix] = ScalarMix
    probe_class: type[LinearProbe] = LinearProbe

    def __init__(self) -> None:
        bilm, mix, probe = self.bilm_class(), self.mix_class(), self.probe_class()
        self._cpu = jax.devices("cpu")[0]

        def layers_vjp(params: dict, ids: jax.Array, lengths: jax.Array, g_layers: list) -> dict:
            _, pullback = jax.vjp(lambda p: bilm.layers(p, ids, lengths), params)
            return pullback(g_layers)[0]

        def mix_vjp(s: jax.Array, gamma: jax.Array, layers: list, g_out: jax.Array) -> tuple:
            _, pullback = jax.vjp(mix.mix, s, gamma, layers)
            return pullback(g_out)

        self._layers = _jit(bilm.layers)
        self._logits = _jit(bilm.logits)
        self._loss = _jit(bilm.loss)
        self._loss_grad = _jit(jax.grad(bilm.loss))
        self._layers_vjp = _jit(layers_vjp)
        self._mix = _jit(mix.mix)
        self._mix_vjp = _jit(mix_vjp)
        self._fit = _jit(probe.fit, static_argnums=2)  # n_classes fixes the shapes
        self._correct = _jit(probe.correct)
        self._compiled: set[tuple] = set()

    def _run(self, function: Any, *args: Any) -> Any:
        """Run a compiled function on the CPU device and bring the result back as NumPy."""
        signature = (function, _signature(args))
        if signature not in self._compiled:
            if len(self._compiled) >= MAX_PROGRAMS:
                for compiled in {f for f, _ in self._compiled}:
                    compiled.clear_cache()
                self._compiled.clear()
            self._compiled.add(signature)
        with jax.default_device(self._cpu):
            return _to_numpy(function(*_to_jax(args)))

    # -- the biLM (§3, §4, §6.1, §6.2) --

    @staticmethod
    def _bilm_inputs(params: Params, ids: np.ndarray, lengths: np.ndarray | None) -> tuple:
        """Checked (params, ids, lengths, d, L); absent lengths become T for every row."""
        _, d, n_layers, full = validate.check_bilm_inputs(params, ids, lengths)
        return dict(params), np.asarray(ids, np.int64), full, d, n_layers

    def bilm_layers(self, params: Params, ids: np.ndarray, lengths: np.ndarray | None = None) -> list[np.ndarray]:
        params, ids, full, _, _ = self._bilm_inputs(params, ids, lengths)
        return self._run(self._layers, params, ids, full)

    def bilm_logits(
        self, params: Params, ids: np.ndarray, lengths: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        params, ids, full, _, _ = self._bilm_inputs(params, ids, lengths)
        return tuple(self._run(self._logits, params, ids, full))

    def bilm_loss(self, params: Params, ids: np.ndarray, lengths: np.ndarray | None = None) -> float:
        checked, ids_, full, _, _ = self._bilm_inputs(params, ids, lengths)
        validate.check_has_targets(lengths, full)
        return float(self._run(self._loss, checked, ids_, full))

    def bilm_loss_grad(self, params: Params, ids: np.ndarray, lengths: np.ndarray | None = None) -> Params:
        checked, ids_, full, _, _ = self._bilm_inputs(params, ids, lengths)
        validate.check_has_targets(lengths, full)
        return self._run(self._loss_grad, checked, ids_, full)

    def bilm_layers_vjp(
        self, params: Params, ids: np.ndarray, lengths: np.ndarray | None, g_layers: list[np.ndarray]
    ) -> Params:
        checked, ids_, full, d, n_layers = self._bilm_inputs(params, ids, lengths)
        validate.check_g_layers(g_layers, n_layers, (*ids_.shape, 2 * d))
        dtype = params["embedding"].dtype
        return self._run(self._layers_vjp, checked, ids_, full, [np.asarray(g, dtype) for g in g_layers])

    # -- ScalarMix (§5, §6.3) --

    def scalar_mix(self, s: np.ndarray, gamma: np.ndarray, layers: list[np.ndarray]) -> np.ndarray:
        validate.check_mix(s, gamma, layers)
        dtype = layers[0].dtype
        return self._run(self._mix, np.asarray(s, dtype), np.asarray(gamma, dtype), list(layers))

    def scalar_mix_vjp(
        self, s: np.ndarray, gamma: np.ndarray, layers: list[np.ndarray], g_out: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
        validate.check_mix(s, gamma, layers)
        validate.check_g_out(g_out, layers[0].shape)
        dtype = layers[0].dtype
        args = (np.asarray(s, dtype), np.asarray(gamma, dtype), list(layers), np.asarray(g_out, dtype))
        g_s, g_gamma, g_layers = self._run(self._mix_vjp, *args)
        return g_s, g_gamma, list(g_layers)

    # -- the probe (§7) --

    def fit_linear_probe(
        self,
        features: np.ndarray,
        labels: np.ndarray,
        n_classes: int,
        l2: float = 1e-3,
        steps: int = 200,
        lr: float = 0.5,
    ) -> tuple[np.ndarray, np.ndarray]:
        X, y = validate.check_fit_inputs(features, labels, n_classes, steps, lr, l2)
        dtype = X.dtype
        settings = (np.asarray(l2, dtype), np.asarray(steps, np.int64), np.asarray(lr, dtype))
        W, b = self._run(self._fit, X, np.asarray(y, np.int64), int(n_classes), *settings)
        return W, b

    def probe_accuracy(self, W: np.ndarray, b: np.ndarray, features: np.ndarray, labels: np.ndarray) -> float:
        X = validate.check_features(features)
        n_classes = validate.check_probe_weights(W, b, X.shape[1])
        y = validate.check_labels(labels, len(X), n_classes)
        dtype = X.dtype
        correct = self._run(self._correct, np.asarray(W, dtype), np.asarray(b, dtype), X, np.asarray(y, np.int64))
        return int(correct) / len(X)
