"""The JAX adapter: spec §11's NumPy protocol over the pure functions of elmo.py.

Each call checks its NumPy inputs against §8 (the reference's checks: they concern the boundary,
not the arithmetic), converts them to JAX arrays of the floating inputs' dtype (§1.2), runs one
`jax.jit`-compiled function on the CPU, and copies the result back into fresh, writable NumPy
arrays.

`jax.jit` compiles once per input shape and dtype, and a compilation costs far more than a call at
the suite's sizes. So every input is padded up to a few shape buckets (`bucket`: powers of two with
a floor) and the outputs are sliced back, where the spec makes the padding change no result:

- biLM (§3, §4, §6.1, §6.2): extra rows of length 0 and extra columns, both padding (exactly 0 and
  selected, §3.4; every row starts from a zero state and never sees another row, §2.3); extra
  hidden units whose weights and biases are all 0, which stay exactly 0 (c = 0.5 · 0 + 0.5 · tanh 0)
  and reach no real unit (their outgoing weights are 0); extra vocabulary entries whose embedding
  and output rows are 0 and whose output bias is -inf, so that their probability is exactly 0 and
  the loss, a mean over real targets (§4.2), has nothing more to average; extra layers above R^L
  (a layer never reads a higher one, §3.2, §3.3), whose outputs are dropped, while the logits read
  R^L through a traced index.
- ScalarMix (§5, §6.3): each layer flattened and padded with zeros (the mix is elementwise), and
  extra layers, all 0, with s_k = -inf (softmax weight exactly 0) whose terms elmo.py's mix selects
  away.
- The probe (§7): extra zero feature columns (constant: μ = 0, σ = 1, so their weights stay 0),
  extra rows labelled -1, which elmo.py's probe counts as no example (§7.1, §7.2, §7.5), and extra
  classes whose bias is -inf (probability exactly 0, so their weights stay 0 and argmax never
  picks them).

A padded sum adds exact zeros, so the results agree with unpadded ones up to the order of a
reduction, well inside §10's tolerances; a bitwise check (§1.4, §3.2-§3.4) compares calls of the
same shapes, which are padded alike. One compiled function serves `bilm_layers` and `bilm_logits`,
one (a value and its gradient) `bilm_loss` and `bilm_loss_grad`.

The classes are class attributes so that a mutant (mutants.py) can swap one for a subclass.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from elmo_conformance.adapters.jax.elmo import BiLM, LinearProbe, ScalarMix
from elmo_conformance.reference import validate

Params = dict[str, np.ndarray]

# A biLM call of at least this many padded tokens (B' T') runs a program that LLVM optimizes fully.
# The suite calls with many small shapes, where LLVM's optimizations cost more compile time than
# they save in run time; a large batch is what a training loop calls again and again (§9's
# experiment: 150 steps on 72 sentences), where the optimized program runs about 5x faster.
OPTIMIZED_TOKENS = 1024


class _Program:
    """One function `jax.jit`-compiled two ways: quickly (LLVM at -O0) or fully optimized. A call
    of given shapes always takes the same way, so it always runs the same program (§1.4)."""

    def __init__(self, function: Any) -> None:
        # Any: the compiled functions' _cache_size and clear_cache are not in jax's type stubs
        self.quick: Any = jax.jit(function, compiler_options={"xla_backend_optimization_level": 0})
        self.optimized: Any = jax.jit(function)

    def __call__(self, *args: Any, optimized: bool = False) -> Any:
        return (self.optimized if optimized else self.quick)(*args)

    def _cache_size(self) -> int:
        return self.quick._cache_size() + self.optimized._cache_size()

    def clear_cache(self) -> None:
        self.quick.clear_cache()
        self.optimized.clear_cache()


# A compiled program holds about 50 memory mappings until its cache entry is dropped. A long
# session with many shape buckets would reach Linux's default limit (vm.max_map_count = 65530),
# where XLA's compiler segfaults; so each adapter keeps at most this many programs and then starts
# its caches afresh.
MAX_PROGRAMS = 256

# The floor of each padded size: every configuration the suite draws (§14: B <= 4, T <= 6, V <= 9,
# d <= 5, L <= 3; probe N <= 24, D <= 5; a mixed layer of at most 64 values) and most fixtures fit
# in the first bucket. L is padded up to its floor only (a deeper stack is compiled as it is), and
# not at all in a large batch (OPTIMIZED_TOKENS).
LEAST = {
    "batch": 8,
    "steps": 8,
    "vocab": 16,
    "d": 8,
    "layers": 3,
    "rows": 128,
    "features": 32,
    "classes": 4,
    "values": 512,
    "mixed": 4,
}


def bucket(n: int, least: int) -> int:
    """The padded size of n: the smallest power of two >= n that is >= least (itself a power of 2)."""
    size = least
    while size < n:
        size *= 2
    return size


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
    """JAX arrays (also in dicts, lists and tuples) as NumPy arrays (writable copies)."""
    if isinstance(value, Mapping):
        return {key: _to_numpy(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(_to_numpy(item) for item in value)
    return np.array(value)


def _pad(x: np.ndarray, shape: tuple[int, ...], fill: float = 0) -> np.ndarray:
    """x in the leading corner of a new array of `shape` filled with `fill`."""
    out = np.full(shape, fill, dtype=x.dtype)
    out[tuple(slice(0, n) for n in x.shape)] = x
    return out


class _BiLMPadding:
    """The padded shapes of one biLM call, and the moves between its arrays and the padded ones."""

    def __init__(self, batch: int, steps: int, vocab: int, d: int, n_layers: int) -> None:
        self.batch, self.steps, self.vocab, self.d, self.n_layers = batch, steps, vocab, d, n_layers
        self.batch_p, self.steps_p = bucket(batch, LEAST["batch"]), bucket(steps, LEAST["steps"])
        self.vocab_p, self.d_p = bucket(vocab, LEAST["vocab"]), bucket(d, LEAST["d"])
        self.large = self.batch_p * self.steps_p >= OPTIMIZED_TOKENS  # compiled fully optimized
        # A large batch gets a program of its own anyway: no layers to pad it with, as they would
        # only cost run time.
        self.n_layers_p = n_layers if self.large else max(n_layers, LEAST["layers"])

    def _gates(self, x: np.ndarray) -> np.ndarray:
        """[4d, ...] (gates i, f, g, o, §2.2) -> [4d', ...], each gate's extra units 0; columns d -> d'."""
        gates = x.reshape(4, self.d, *x.shape[1:])
        padded = _pad(gates, (4, self.d_p, *(self.d_p for _ in x.shape[1:])))
        return padded.reshape(4 * self.d_p, *padded.shape[2:])

    def _ungates(self, x: np.ndarray) -> np.ndarray:
        gates = x.reshape(4, self.d_p, *x.shape[1:])[:, : self.d]
        if x.ndim == 2:  # a weight: its input columns too
            gates = gates[..., : self.d]
        return gates.reshape(4 * self.d, *gates.shape[2:])

    def params(self, params: Params) -> Params:
        """Every parameter padded; layers L+1 .. L' added, all 0 (their outputs are never returned
        and reach nothing returned: the logits read R^L)."""
        vocab_p, d_p = self.vocab_p, self.d_p
        padded = {}
        for name, value in params.items():
            if name in ("embedding", "out.weight"):
                padded[name] = _pad(value, (vocab_p, d_p))
            elif name == "out.bias":
                padded[name] = _pad(value, (vocab_p,), -np.inf)  # probability exactly 0
            else:
                padded[name] = self._gates(value)
        dtype = params["embedding"].dtype
        for k in range(self.n_layers, self.n_layers_p):
            for direction in ("fwd", "bwd"):
                for part, shape in (("weight_ih", (4 * d_p, d_p)), ("weight_hh", (4 * d_p, d_p))):
                    padded[f"{direction}.{k}.{part}"] = np.zeros(shape, dtype)
                for part in ("bias_ih", "bias_hh"):
                    padded[f"{direction}.{k}.{part}"] = np.zeros(4 * d_p, dtype)
        return padded

    def top(self) -> np.ndarray:
        """L, the index of the top layer in the padded stack (§3.5)."""
        return np.asarray(self.n_layers, np.int64)

    def unparams(self, grads: Params, names: Params) -> Params:
        """The gradients of the parameters in `names` (the caller's), sliced back."""
        out = {}
        for name in names:
            value = grads[name]
            if name in ("embedding", "out.weight"):
                out[name] = value[: self.vocab, : self.d].copy()
            elif name == "out.bias":
                out[name] = value[: self.vocab].copy()
            else:
                out[name] = np.ascontiguousarray(self._ungates(value))
        return out

    def ids(self, ids: np.ndarray) -> np.ndarray:
        return _pad(ids, (self.batch_p, self.steps_p))

    def lengths(self, lengths: np.ndarray) -> np.ndarray:
        return _pad(np.asarray(lengths, np.int64), (self.batch_p,))  # extra rows: length 0

    def layer(self, g: np.ndarray) -> np.ndarray:
        """[B, T, 2d] -> [B', T', 2d'], each direction's half padded on its own."""
        d, d_p = self.d, self.d_p
        out = np.zeros((self.batch_p, self.steps_p, 2 * d_p), g.dtype)
        out[: self.batch, : self.steps, :d] = g[..., :d]
        out[: self.batch, : self.steps, d_p : d_p + d] = g[..., d:]
        return out

    def g_layers(self, g_layers: list[np.ndarray], dtype: np.dtype) -> list[np.ndarray]:
        """The cotangents of R^0 .. R^L padded, and 0 for the layers above L."""
        padded = [self.layer(np.asarray(g, dtype)) for g in g_layers]
        return padded + [np.zeros_like(padded[0]) for _ in range(self.n_layers, self.n_layers_p)]

    def unlayer(self, x: np.ndarray) -> np.ndarray:
        d, d_p, real = self.d, self.d_p, x[: self.batch, : self.steps]
        return np.concatenate([real[..., :d], real[..., d_p : d_p + d]], axis=-1)

    def unlogits(self, x: np.ndarray) -> np.ndarray:
        return x[: self.batch, : self.steps, : self.vocab].copy()


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

        # `top` is L, the real number of layers: the padded stack's layers above it are not the
        # biLM's, so the logits read R^top (a traced index: one compilation serves every L up to L').
        def forward(params: dict, ids: jax.Array, lengths: jax.Array, top: jax.Array) -> tuple:
            layers = bilm.layers(params, ids, lengths)
            return layers, bilm.output(params, jnp.stack(layers)[top])

        def loss(params: dict, ids: jax.Array, lengths: jax.Array, top: jax.Array) -> jax.Array:
            fwd, bwd = forward(params, ids, lengths, top)[1]
            return bilm.loss_of_logits(fwd, bwd, ids, lengths)

        def layers_vjp(params: dict, ids: jax.Array, lengths: jax.Array, g_layers: list) -> dict:
            _, pullback = jax.vjp(lambda p: bilm.layers(p, ids, lengths), params)
            return pullback(g_layers)[0]

        def mix_vjp(s: jax.Array, gamma: jax.Array, layers: list, real: jax.Array, g_out: jax.Array) -> tuple:
            _, pullback = jax.vjp(lambda s, gamma, layers: mix.mix(s, gamma, layers, real), s, gamma, layers)
            return pullback(g_out)

        self._forward = _Program(forward)
        self._loss = _Program(jax.value_and_grad(loss))
        self._layers_vjp = _Program(layers_vjp)
        self._mix = _Program(mix.mix)
        self._mix_vjp = _Program(mix_vjp)
        self._fit = _Program(probe.fit)
        self._correct = _Program(probe.correct)
        self._compiled: set[tuple] = set()

    def _run(self, function: _Program, *args: Any, optimized: bool = False) -> Any:
        """Run a compiled function on the CPU device and bring the result back as NumPy."""
        signature = (function, optimized, _signature(args))
        if signature not in self._compiled:
            if len(self._compiled) >= MAX_PROGRAMS:
                for compiled in {f for f, _, _ in self._compiled}:
                    compiled.clear_cache()
                self._compiled.clear()
            self._compiled.add(signature)
        with jax.default_device(self._cpu):
            return _to_numpy(function(*_to_jax(args), optimized=optimized))

    # -- the biLM (§3, §4, §6.1, §6.2) --

    @staticmethod
    def _bilm_inputs(params: Params, ids: np.ndarray, lengths: np.ndarray | None) -> tuple:
        """(the padding, the padded (params, ids, lengths, top), the lengths filled in: T for absent ones)."""
        vocab, d, n_layers, full = validate.check_bilm_inputs(params, ids, lengths)
        ids = np.asarray(ids, np.int64)
        padding = _BiLMPadding(ids.shape[0], ids.shape[1], vocab, d, n_layers)
        padded = (padding.params(dict(params)), padding.ids(ids), padding.lengths(full), padding.top())
        return padding, padded, full

    def _forward_call(self, params: Params, ids: np.ndarray, lengths: np.ndarray | None) -> tuple:
        padding, padded, _ = self._bilm_inputs(params, ids, lengths)
        layers, logits = self._run(self._forward, *padded, optimized=padding.large)
        unpadded = [padding.unlayer(layer) for layer in layers[: padding.n_layers + 1]]
        return unpadded, tuple(padding.unlogits(z) for z in logits)

    def bilm_layers(self, params: Params, ids: np.ndarray, lengths: np.ndarray | None = None) -> list[np.ndarray]:
        return self._forward_call(params, ids, lengths)[0]

    def bilm_logits(
        self, params: Params, ids: np.ndarray, lengths: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        return self._forward_call(params, ids, lengths)[1]

    def _loss_call(self, params: Params, ids: np.ndarray, lengths: np.ndarray | None) -> tuple[float, Params]:
        padding, padded, full = self._bilm_inputs(params, ids, lengths)
        validate.check_has_targets(lengths, full)
        loss, grads = self._run(self._loss, *padded, optimized=padding.large)
        return float(loss), padding.unparams(grads, params)

    def bilm_loss(self, params: Params, ids: np.ndarray, lengths: np.ndarray | None = None) -> float:
        return self._loss_call(params, ids, lengths)[0]

    def bilm_loss_grad(self, params: Params, ids: np.ndarray, lengths: np.ndarray | None = None) -> Params:
        return self._loss_call(params, ids, lengths)[1]

    def bilm_layers_vjp(
        self, params: Params, ids: np.ndarray, lengths: np.ndarray | None, g_layers: list[np.ndarray]
    ) -> Params:
        padding, (padded_params, padded_ids, padded_lengths, _), _ = self._bilm_inputs(params, ids, lengths)
        validate.check_g_layers(g_layers, padding.n_layers, (*ids.shape, 2 * padding.d))
        g_padded = padding.g_layers(g_layers, params["embedding"].dtype)
        args = (padded_params, padded_ids, padded_lengths, g_padded)
        grads = self._run(self._layers_vjp, *args, optimized=padding.large)
        return padding.unparams(grads, params)

    # -- ScalarMix (§5, §6.3) --

    @staticmethod
    def _flat(x: np.ndarray, dtype: np.dtype) -> np.ndarray:
        """A layer (any shape, 0-d too) as a padded vector of `dtype`."""
        flat = np.asarray(x, dtype).reshape(-1)
        return _pad(flat, (bucket(flat.size, LEAST["values"]),))

    @classmethod
    def _mix_inputs(cls, s: np.ndarray, layers: list[np.ndarray], dtype: np.dtype) -> tuple:
        """(s padded with -inf, the layers flattened and padded, with zero layers added, the mask of
        the real layers)."""
        count = bucket(len(layers), LEAST["mixed"])
        flat = [cls._flat(layer, dtype) for layer in layers]
        flat += [np.zeros_like(flat[0]) for _ in range(len(layers), count)]
        s_padded = _pad(np.asarray(s, dtype).reshape(-1), (count,), -np.inf)
        return s_padded, flat, np.arange(count) < len(layers)

    def scalar_mix(self, s: np.ndarray, gamma: np.ndarray, layers: list[np.ndarray]) -> np.ndarray:
        validate.check_mix(s, gamma, layers)
        dtype, shape = layers[0].dtype, layers[0].shape
        s_padded, flat, real = self._mix_inputs(s, layers, dtype)
        mixed = self._run(self._mix, s_padded, np.asarray(gamma, dtype), flat, real)
        return mixed[: int(np.prod(shape))].reshape(shape)

    def scalar_mix_vjp(
        self, s: np.ndarray, gamma: np.ndarray, layers: list[np.ndarray], g_out: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
        validate.check_mix(s, gamma, layers)
        validate.check_g_out(g_out, layers[0].shape)
        dtype, shape = layers[0].dtype, layers[0].shape
        size = int(np.prod(shape))
        s_padded, flat, real = self._mix_inputs(s, layers, dtype)
        args = (s_padded, np.asarray(gamma, dtype), flat, real, self._flat(g_out, dtype))
        g_s, g_gamma, g_layers = self._run(self._mix_vjp, *args)
        count = len(layers)
        return g_s[:count].reshape(np.shape(s)).copy(), g_gamma, [g[:size].reshape(shape) for g in g_layers[:count]]

    # -- the probe (§7) --

    @staticmethod
    def _probe_rows(X: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """X padded with zero rows and zero columns; y with -1 (no example) for the extra rows."""
        n, dims = X.shape
        shape = (bucket(n, LEAST["rows"]), bucket(dims, LEAST["features"]))
        return _pad(X, shape), _pad(np.asarray(y, np.int64), shape[:1], -1)

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
        X_padded, y_padded = self._probe_rows(X, y)
        classes = np.arange(bucket(int(n_classes), LEAST["classes"])) < int(n_classes)
        W, b = self._run(self._fit, X_padded, y_padded, classes, *settings)
        return W[: X.shape[1], :n_classes].copy(), b[:n_classes].copy()

    def probe_accuracy(self, W: np.ndarray, b: np.ndarray, features: np.ndarray, labels: np.ndarray) -> float:
        X = validate.check_features(features)
        n_classes = validate.check_probe_weights(W, b, X.shape[1])
        y = validate.check_labels(labels, len(X), n_classes)
        dtype = X.dtype
        X_padded, y_padded = self._probe_rows(X, y)
        classes = bucket(n_classes, LEAST["classes"])
        W_padded = _pad(np.asarray(W, dtype), (X_padded.shape[1], classes))
        b_padded = _pad(np.asarray(b, dtype), (classes,), -np.inf)  # never the argmax
        correct = self._run(self._correct, W_padded, b_padded, X_padded, y_padded)
        return int(correct) / len(X)
