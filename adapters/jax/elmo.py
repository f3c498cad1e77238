"""ELMo's building blocks in JAX (spec/elmo.md, "§" below), independent of reference/ and adapters/torch.

The LSTMs are `jax.lax.scan`s over time, every gradient comes from `jax.grad` or `jax.vjp`, and
every function is pure, so the adapter can `jax.jit` it. Shapes are static under `jit`; a length
is data, so a row shorter than `T` is handled by selection, never by slicing.

Each behaviour that a catalog mutant (§13) breaks lives in one small method (`BiLM.reverse`,
`BiLM.forward_input`, `BiLM.forward_targets`, `LinearProbe.fold_back`, ...), so a mutant is a
subclass that overrides one of them.
"""

from __future__ import annotations

from collections.abc import Sequence

import jax
import jax.numpy as jnp
from jax import Array, lax

# float64 (§1.2) needs x64; without it JAX silently computes "float64" inputs in float32.
jax.config.update("jax_enable_x64", True)

Params = dict[str, Array]


def lstm(weight_ih: Array, weight_hh: Array, bias_ih: Array, bias_hh: Array, u: Array) -> Array:
    """§2.2 over every step of u [B, T, d_in] from the zero state of §2.3; returns h [B, T, d].

    An output never depends on later steps, so running on through a row's padding cannot change
    its real outputs; the caller selects those.
    """
    d = weight_hh.shape[1]
    # The input projections of all steps at once; only h @ weight_hh.T is sequential.
    z_in = u @ weight_ih.T + (bias_ih + bias_hh)

    def step(carry: tuple[Array, Array], z_t: Array) -> tuple[tuple[Array, Array], Array]:
        h, c = carry
        z = z_t + h @ weight_hh.T
        i, f = jax.nn.sigmoid(z[:, :d]), jax.nn.sigmoid(z[:, d : 2 * d])
        g, o = jnp.tanh(z[:, 2 * d : 3 * d]), jax.nn.sigmoid(z[:, 3 * d :])
        c = f * c + i * g
        h = o * jnp.tanh(c)
        return (h, c), h

    zeros = jnp.zeros((u.shape[0], d), u.dtype)
    _, h = lax.scan(step, (zeros, zeros), jnp.swapaxes(z_in, 0, 1))
    return jnp.swapaxes(h, 0, 1)


def n_layers(params: Params) -> int:
    """L, the number of `fwd.{k}.weight_ih` entries (§2.1); static under jit (dict keys are)."""
    return sum(1 for name in params if name.startswith("fwd.") and name.endswith(".weight_ih"))


class BiLM:
    """The biLM of §3 and its loss (§4) as pure functions of (params, ids, lengths).

    `lengths` is always an int array [B] here; the adapter fills in T for absent lengths.
    """

    def layers(self, params: Params, ids: Array, lengths: Array) -> list[Array]:
        """[R^0, ..., R^L] (§3.4), each [B, T, 2d], exactly 0 at padded positions."""
        mask = jnp.arange(ids.shape[1])[None, :] < lengths[:, None]
        e = params["embedding"][ids]
        reps = [self.select(jnp.concatenate([e, e], axis=-1), mask)]
        f = b = e
        for k in range(n_layers(params)):
            f, b = (
                self.forward_layer(params, k, self.forward_input(k, f, b), mask),
                self.backward_layer(params, k, self.backward_input(k, f, b), lengths, mask),
            )
            reps.append(jnp.concatenate([f, b], axis=-1))
        return reps

    def logits(self, params: Params, ids: Array, lengths: Array) -> tuple[Array, Array]:
        """(fwd, bwd) [B, T, V] through the one shared output layer (§3.5)."""
        return self.output(params, self.layers(params, ids, lengths)[-1])

    def output(self, params: Params, top: Array) -> tuple[Array, Array]:
        """(fwd, bwd) logits of the top layer R^L = [f^L, b^L] (§3.5)."""
        d = params["embedding"].shape[1]
        weight, bias = params["out.weight"], params["out.bias"]
        return top[..., :d] @ weight.T + bias, top[..., d:] @ weight.T + bias

    def loss(self, params: Params, ids: Array, lengths: Array) -> Array:
        """§4.2: each direction's token-level mean cross-entropy over the batch, then their average."""
        return self.loss_of_logits(*self.logits(params, ids, lengths), ids, lengths)

    def loss_of_logits(self, fwd: Array, bwd: Array, ids: Array, lengths: Array) -> Array:
        """The loss of §4.2 from the logits of §3.5."""
        return (
            mean_cross_entropy(fwd, *self.forward_targets(ids, lengths))
            + mean_cross_entropy(bwd, *self.backward_targets(ids, lengths))
        ) / 2

    # -- the stacks (§3.2, §3.3) --

    def forward_input(self, k: int, f: Array, b: Array) -> Array:
        """Forward layer k+1 reads f^k (e for k = 0) and nothing else (§3.2)."""
        return f

    def backward_input(self, k: int, f: Array, b: Array) -> Array:
        """Backward layer k+1 reads b^k (e for k = 0) and nothing else (§3.3)."""
        return b

    def forward_layer(self, params: Params, k: int, x: Array, mask: Array) -> Array:
        """f^{k+1}: fwd.k reads each row left to right (§3.2)."""
        return self.select(run(params, f"fwd.{k}", x), mask)

    def backward_layer(self, params: Params, k: int, x: Array, lengths: Array, mask: Array) -> Array:
        """b^{k+1}: bwd.k reads each row reversed inside its length; states back in source order (§3.3)."""
        states = run(params, f"bwd.{k}", self.reverse(x, lengths))
        return self.select(self.reverse_back(states, lengths), mask)

    def reverse(self, x: Array, lengths: Array) -> Array:
        """Reverse each row of x [B, T, ...] inside its own length; padded positions stay put,
        so a short row reads its real tokens first and its padding only afterwards (§3.3)."""
        t = jnp.arange(x.shape[1])[None, :]
        index = jnp.where(t < lengths[:, None], lengths[:, None] - 1 - t, t)
        return jnp.take_along_axis(x, index[:, :, None], axis=1)

    def reverse_back(self, x: Array, lengths: Array) -> Array:
        """Back to source order: reversing inside the lengths is its own inverse."""
        return self.reverse(x, lengths)

    def select(self, x: Array, mask: Array) -> Array:
        """x at real positions, 0 at padded ones, by selection so NaN or inf cannot leak (§3.4)."""
        return jnp.where(mask[..., None], x, jnp.zeros((), x.dtype))

    # -- the targets of the loss (§4.1): (target ids, scored positions), both [B, T] --

    def forward_targets(self, ids: Array, lengths: Array) -> tuple[Array, Array]:
        """x_{t+1} scored for t <= ℓ_b - 2."""
        t = jnp.arange(ids.shape[1])[None, :]
        following = jnp.concatenate([ids[:, 1:], ids[:, -1:]], axis=1)  # the last column is never scored
        return following, t <= lengths[:, None] - 2

    def backward_targets(self, ids: Array, lengths: Array) -> tuple[Array, Array]:
        """x_{t-1} scored for 1 <= t <= ℓ_b - 1."""
        t = jnp.arange(ids.shape[1])[None, :]
        preceding = jnp.concatenate([ids[:, :1], ids[:, :-1]], axis=1)  # the first column is never scored
        return preceding, (t >= 1) & (t < lengths[:, None])


def run(params: Params, prefix: str, x: Array) -> Array:
    """The LSTM `prefix` (e.g. `bwd.1`) of §2.1 over x."""
    weight_ih, weight_hh, bias_ih, bias_hh = (
        params[f"{prefix}.{part}"] for part in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")
    )
    return lstm(weight_ih, weight_hh, bias_ih, bias_hh, x)


def mean_cross_entropy(logits: Array, targets: Array, scored: Array) -> Array:
    """The mean of CE(z, y) = log Σ exp(z) - z_y (stable) over the scored positions (§4.2)."""
    picked = jnp.take_along_axis(logits, targets[..., None], axis=-1)[..., 0]
    ce = jax.nn.logsumexp(logits, axis=-1) - picked
    count = jnp.sum(scored).astype(logits.dtype)
    return jnp.sum(jnp.where(scored, ce, jnp.zeros((), ce.dtype))) / count


class ScalarMix:
    """`γ Σ_k softmax(s)_k R^k` (§5)."""

    def weights(self, s: Array) -> Array:
        """softmax(s); jax.nn.softmax subtracts the maximum first, as §5.1 and §5.4 need."""
        return jax.nn.softmax(s)

    def scale(self, gamma: Array, mixed: Array) -> Array:
        """γ times the weighted sum (§5.2)."""
        return gamma[0] * mixed

    def mix(self, s: Array, gamma: Array, layers: Sequence[Array], real: Array | None = None) -> Array:
        """With `real` [K'] (True for the real layers), the others are padding: each term
        `w_k R^k` is selected, never multiplied in, so a padded layer adds an exact 0 whatever its
        weight (the adapter gives it s_k = -inf: softmax weight 0)."""
        weights = self.weights(s)
        if real is None:
            return self.scale(gamma, jnp.tensordot(weights, jnp.stack(layers), axes=1))
        terms = weights.reshape(-1, *(1 for _ in layers[0].shape)) * jnp.stack(layers)
        kept = jnp.where(real.reshape(terms.shape[:1] + (1,) * (terms.ndim - 1)), terms, jnp.zeros((), terms.dtype))
        return self.scale(gamma, jnp.sum(kept, axis=0))


class LinearProbe:
    """Softmax regression fitted exactly as §7 says; the step's gradient comes from jax.grad.

    A row labelled -1 is no example: the adapter pads N with such rows (zero features) so that one
    compilation serves many N. Such rows take no part in μ, σ (§7.1), the mean of §7.2 or the count
    of §7.5, and their standardized features are 0; row 0 is always an example.
    """

    def standardize(self, X: Array, rows: Array) -> tuple[Array, Array, Array]:
        """(Z, μ, σ) of §7.1 over the rows where `rows`: population std; a constant column gets
        μ = its value and σ = 1."""
        n = jnp.sum(rows).astype(X.dtype)
        real = rows[:, None]
        constant = jnp.all((X == X[0]) | ~real, axis=0)
        mean = jnp.sum(jnp.where(real, X, 0), axis=0) / n
        std = jnp.sqrt(jnp.sum(jnp.where(real, jnp.square(X - mean), 0), axis=0) / n)
        mu = jnp.where(constant, X[0], mean)
        sigma = jnp.where(constant, jnp.ones((), X.dtype), std)
        return jnp.where(real, (X - mu) / sigma, 0), mu, sigma

    def objective(self, V: Array, a: Array, Z: Array, Y: Array, l2: Array) -> Array:
        """F(V, a) of §7.2: mean CE over the examples (the rows with a label, Y's rows that are not
        all 0) plus (l2/2)‖V‖², the bias unpenalized. A class whose bias is -inf is no class: its
        probability is exactly 0 and no label names it."""
        logits = Z @ V + a
        picked = jnp.sum(jnp.where(Y != 0, Y * logits, jnp.zeros((), logits.dtype)), axis=1)
        ce = jax.nn.logsumexp(logits, axis=1) - picked
        rows = jnp.any(Y != 0, axis=1)
        mean = jnp.sum(jnp.where(rows, ce, 0)) / jnp.sum(rows).astype(ce.dtype)
        return mean + l2 / 2 * jnp.sum(V * V)

    def step(self, V: Array, a: Array, Z: Array, Y: Array, l2: Array, lr: Array) -> tuple[Array, Array]:
        """One full-batch gradient-descent step, both updates from the same (V, a) (§7.3)."""
        g_V, g_a = jax.grad(self.objective, argnums=(0, 1))(V, a, Z, Y, l2)
        return V - lr * g_V, a - lr * g_a

    def fold_back(self, V: Array, a: Array, mu: Array, sigma: Array) -> tuple[Array, Array]:
        """(W, b) on raw features (§7.4): W = V / σ row by row, b = a - μ W."""
        W = V / sigma[:, None]
        return W, a - mu @ W

    def fit(self, X: Array, labels: Array, classes: Array, l2: Array, steps: Array, lr: Array) -> tuple[Array, Array]:
        """§7 from the zero start, exactly `steps` steps (a traced count: one compilation serves all).

        `classes` [C'] is True for the C real classes, the first ones; the others are padding: their
        bias starts (and stays) -inf, so their probability is 0 and their weights stay 0."""
        Z, mu, sigma = self.standardize(X, labels >= 0)
        n_classes = classes.shape[0]
        Y = jax.nn.one_hot(labels, n_classes, dtype=X.dtype)  # all 0 for a label of -1
        bias = jnp.where(classes, jnp.zeros((), X.dtype), jnp.array(-jnp.inf, X.dtype))
        start = (jnp.zeros((X.shape[1], n_classes), X.dtype), bias)
        V, a = lax.fori_loop(0, steps, lambda _, va: self.step(va[0], va[1], Z, Y, l2, lr), start)
        return self.fold_back(V, a, mu, sigma)

    def correct(self, W: Array, b: Array, X: Array, labels: Array) -> Array:
        """The number of rows whose argmax of X W + b (the lowest index on ties) is the label (§7.5;
        a label of -1 never is); the accuracy is this count over the number of rows, divided
        exactly, not in the features' dtype (a float32 mean of 3 of 13 is not 3/13)."""
        return jnp.sum(jnp.argmax(X @ W + b, axis=1) == labels)
