"""ELMo's building blocks written the way a PyTorch user writes them (spec/elmo.md, "§" below).

`ScalarMix` and `BiLM` are `nn.Module`s, the biLM runs packed `nn.LSTM`s, the loss is
`F.cross_entropy` with `ignore_index`, and gradients come from autograd. This file is independent
of the suite's reference implementation.

Each behaviour that a catalog mutant (§13) breaks lives in one small method (`BiLM._reverse`,
`BiLM._forward_input`, `BiLM.forward_targets`, `LinearProbe.fold_back`, ...), so a mutant is a
subclass that overrides one of them.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

IGNORE = -100  # target of an unscored position, F.cross_entropy's default ignore_index


class ScalarMix(nn.Module):
    """`γ Σ_k softmax(s)_k R^k` over `n_layers` layers (§5), starting at s = 0, γ = 1 (§5.3)."""

    def __init__(self, n_layers: int) -> None:
        super().__init__()
        self.s = nn.Parameter(torch.zeros(n_layers))
        self.gamma = nn.Parameter(torch.ones(1))

    def weights(self) -> Tensor:
        """softmax(s) (§5.1); torch.softmax subtracts the maximum first, as §5.4 needs."""
        return torch.softmax(self.s, dim=0)

    def forward(self, layers: Sequence[Tensor]) -> Tensor:
        """The mix (§5.2), of the shape of one layer; validates as §8 rows V12-V14 say."""
        self._check(layers)
        w = self.weights()
        mix = sum((w[k] * r for k, r in enumerate(layers) if k > 0), w[0] * layers[0])
        return self.gamma[0] * mix  # gamma[0]: a [1] factor would add an axis to 0-d layers

    def _check(self, layers: Sequence[Tensor]) -> None:
        if len(layers) == 0 or not all(isinstance(r, Tensor) and r.is_floating_point() for r in layers):
            raise ValueError("layers: expected a non-empty sequence of float tensors")
        if any(r.shape != layers[0].shape or r.dtype != layers[0].dtype for r in layers):
            raise ValueError("layers: expected tensors of one shape and one dtype")
        if self.s.dim() != 1 or self.s.shape[0] != len(layers):
            raise ValueError(f"s: expected shape [{len(layers)}], one weight per layer")
        if self.gamma.shape != (1,) or not bool(torch.isfinite(self.gamma).all()):
            raise ValueError("gamma: expected one finite value, shape [1]")


def full_lengths(ids: Tensor, lengths: Tensor | None) -> Tensor:
    """The row lengths as an int64 tensor on the ids' device; absent lengths mean every row is full (§1.1)."""
    if lengths is None:
        return torch.full((ids.shape[0],), ids.shape[1], dtype=torch.int64, device=ids.device)
    return torch.as_tensor(lengths, dtype=torch.int64, device=ids.device)


def torch_name(canonical: str) -> str:
    """§2.1 name -> state_dict key: `embedding` -> `embedding.weight`, `fwd.0.bias_hh` ->
    `fwd.0.bias_hh_l0` (each LSTM is single-layer), `out.*` unchanged."""
    if canonical == "embedding":
        return "embedding.weight"
    return canonical + "_l0" if canonical.startswith(("fwd.", "bwd.")) else canonical


def canonical_name(key: str) -> str:
    """state_dict key -> §2.1 name, the inverse of `torch_name`."""
    if key == "embedding.weight":
        return "embedding"
    return key.removesuffix("_l0")


class BiLM(nn.Module):
    """The biLM of §3: an embedding, L forward and L backward single-layer LSTMs (§2.2) and one
    output layer shared by both directions (§3.5)."""

    def __init__(self, vocab: int, d: int, n_layers: int = 2, generator: torch.Generator | None = None) -> None:
        super().__init__()
        self.embedding = nn.Embedding(vocab, d)
        self.fwd = nn.ModuleList(nn.LSTM(d, d, batch_first=True) for _ in range(n_layers))
        self.bwd = nn.ModuleList(nn.LSTM(d, d, batch_first=True) for _ in range(n_layers))
        self.out = nn.Linear(d, vocab)
        if generator is not None:  # reproducible init that leaves the global RNG alone
            bound = d**-0.5
            with torch.no_grad():
                for name, p in self.named_parameters():
                    if name == "embedding.weight":
                        p.normal_(generator=generator)
                    else:
                        p.uniform_(-bound, bound, generator=generator)

    # -- parameters under their canonical names (§2.1) --

    def load_canonical(self, params: dict[str, np.ndarray]) -> BiLM:
        """Copy `params` (every §2.1 name, nothing more) into the module, in their dtype."""
        state = {torch_name(k): torch.tensor(np.asarray(v)) for k, v in params.items()}
        self.to(state["embedding.weight"].dtype)
        self.load_state_dict(state)  # strict: a missing or extra name raises
        return self

    # -- the stacks (§3) --

    def layers(self, ids: Tensor, lengths: Tensor | None = None) -> list[Tensor]:
        """[R^0, ..., R^L] (§3.4), each [B, T, 2d], exactly 0 at padded positions."""
        lengths = full_lengths(ids, lengths)
        mask = self._mask(lengths, ids.shape[1])
        e = self.embedding(ids)
        reps = [self._select(torch.cat([e, e], dim=-1), mask)]
        f = b = e
        for k in range(len(self.fwd)):
            f, b = (
                self._forward_layer(k, self._forward_input(k, f, b), lengths, mask),
                self._backward_layer(k, self._backward_input(k, f, b), lengths, mask),
            )
            reps.append(torch.cat([f, b], dim=-1))
        return reps

    def forward(self, ids: Tensor, lengths: Tensor | None = None) -> tuple[Tensor, Tensor]:
        """(fwd, bwd) logits [B, T, V] from f^L and b^L through the shared `out` (§3.5)."""
        top = self.layers(ids, lengths)[-1]
        d = self.embedding.embedding_dim
        return self.out(top[..., :d]), self.out(top[..., d:])

    def _forward_input(self, k: int, f: Tensor, b: Tensor) -> Tensor:
        """Forward layer k+1 reads f^k (e for k = 0) and nothing else (§3.2)."""
        return f

    def _backward_input(self, k: int, f: Tensor, b: Tensor) -> Tensor:
        """Backward layer k+1 reads b^k (e for k = 0) and nothing else (§3.3)."""
        return b

    def _forward_layer(self, k: int, x: Tensor, lengths: Tensor, mask: Tensor) -> Tensor:
        """f^{k+1} (§3.2): fwd[k] reads each row left to right, up to its length."""
        return self._select(self._run(self.fwd[k], x, lengths), mask)

    def _backward_layer(self, k: int, x: Tensor, lengths: Tensor, mask: Tensor) -> Tensor:
        """b^{k+1} (§3.3): bwd[k] reads each row reversed inside its length; the states are put
        back in source order."""
        states = self._run(self.bwd[k], self._reverse(x, lengths), lengths)
        return self._select(self._reverse_back(states, lengths), mask)

    def _run(self, lstm: nn.Module, x: Tensor, lengths: Tensor) -> Tensor:
        """One LSTM over the first `lengths[b]` steps of each row, from a zero state (§2.3)."""
        # Packing wants the lengths on the CPU, wherever x is.
        packed = pack_padded_sequence(x, lengths.cpu(), batch_first=True, enforce_sorted=False)
        out, _ = lstm(packed)
        return pad_packed_sequence(out, batch_first=True, total_length=x.shape[1])[0]

    def _reverse(self, x: Tensor, lengths: Tensor) -> Tensor:
        """Reverse each row inside its own length (§3.3); padded positions stay where they are,
        so a short row never reads its padding."""
        t = torch.arange(x.shape[1], device=x.device)
        idx = torch.where(t < lengths[:, None], lengths[:, None] - 1 - t, t)
        return x.gather(1, idx[..., None].expand_as(x))

    def _reverse_back(self, x: Tensor, lengths: Tensor) -> Tensor:
        """Back to source order; reversing inside the lengths is its own inverse."""
        return self._reverse(x, lengths)

    def _mask(self, lengths: Tensor, T: int) -> Tensor:
        """[B, T] bool, True at real positions (t < ℓ_b)."""
        return torch.arange(T, device=lengths.device)[None, :] < lengths[:, None]

    def _select(self, x: Tensor, mask: Tensor) -> Tensor:
        """Zeros at padded positions by selection, so NaN or inf there cannot leak (§3.4)."""
        return torch.where(mask[..., None], x, x.new_zeros(()))

    # -- the targets of the loss (§4.1) --

    def forward_targets(self, ids: Tensor, lengths: Tensor) -> Tensor:
        """[B, T]: x_{t+1} for t ≤ ℓ_b - 2, IGNORE elsewhere."""
        t = torch.arange(ids.shape[1], device=ids.device)
        nxt = F.pad(ids[:, 1:], (0, 1), value=IGNORE)
        return torch.where(t <= lengths[:, None] - 2, nxt, IGNORE)

    def backward_targets(self, ids: Tensor, lengths: Tensor) -> Tensor:
        """[B, T]: x_{t-1} for 1 ≤ t ≤ ℓ_b - 1, IGNORE elsewhere."""
        t = torch.arange(ids.shape[1], device=ids.device)
        prev = F.pad(ids[:, :-1], (1, 0), value=IGNORE)
        return torch.where((t >= 1) & (t < lengths[:, None]), prev, IGNORE)


def bilm_loss(model: BiLM, ids: Tensor, lengths: Tensor | None = None) -> Tensor:
    """§4: the average of the two directions' token-level mean cross-entropies over the batch.

    F.cross_entropy's mean with ignore_index divides by the number of scored positions of the
    whole batch, which is §4.2's token-level mean. Raises ValueError when there is no target
    (§4.3), naming `lengths`, or `ids` when lengths are absent.
    """
    full = full_lengths(ids, lengths)
    if int((full - 1).sum()) == 0:
        arg = "ids" if lengths is None else "lengths"
        raise ValueError(f"{arg}: the loss needs a row of length >= 2; every row has length 1")
    fwd_targets, bwd_targets = model.forward_targets(ids, full), model.backward_targets(ids, full)
    fwd, bwd = model(ids, lengths)
    vocab = fwd.shape[-1]

    def ce(logits: Tensor, targets: Tensor) -> Tensor:
        return F.cross_entropy(logits.reshape(-1, vocab), targets.reshape(-1), ignore_index=IGNORE)

    return (ce(fwd, fwd_targets) + ce(bwd, bwd_targets)) / 2


class LinearProbe:
    """Softmax regression fitted exactly as §7 says, in the features' dtype.

    The parts are static methods so that a broken probe overrides one of them.
    """

    @staticmethod
    def standardize(X: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """(Z, μ, σ) of §7.1: population std; a constant column gets μ = its value, σ = 1,
        so its Z is exactly 0 rather than a rounding error divided by another."""
        constant = (X == X[0]).all(dim=0)
        mu = torch.where(constant, X[0], X.mean(dim=0))
        sigma = torch.where(constant, 1.0, X.std(dim=0, correction=0))
        return (X - mu) / sigma, mu, sigma

    @staticmethod
    def step(Z: Tensor, Y: Tensor, V: Tensor, a: Tensor, l2: float, lr: float) -> tuple[Tensor, Tensor]:
        """One full-batch gradient-descent step on mean CE + (l2/2)‖V‖², the bias unpenalized,
        both updates from the same (V, a) (§7.3)."""
        G = (torch.softmax(Z @ V + a, dim=1) - Y) / Z.shape[0]
        return V - lr * (Z.T @ G + l2 * V), a - lr * G.sum(dim=0)

    @staticmethod
    def fold_back(V: Tensor, a: Tensor, mu: Tensor, sigma: Tensor) -> tuple[Tensor, Tensor]:
        """(W, b) on raw features (§7.4): W = V / σ row-wise, b = a - μ W."""
        W = V / sigma[:, None]
        return W, a - mu @ W

    @classmethod
    def fit(
        cls,
        features: np.ndarray,
        labels: np.ndarray,
        n_classes: int,
        l2: float = 1e-3,
        steps: int = 200,
        lr: float = 0.5,
    ) -> tuple[np.ndarray, np.ndarray]:
        """§7 from a zero start, exactly `steps` steps; NumPy in, NumPy out."""
        X = torch.tensor(features)
        Z, mu, sigma = cls.standardize(X)
        y = torch.tensor(np.asarray(labels, dtype=np.int64))
        Y = F.one_hot(y, int(n_classes)).to(X.dtype)
        V = X.new_zeros(X.shape[1], int(n_classes))
        a = X.new_zeros(int(n_classes))
        for _ in range(int(steps)):
            V, a = cls.step(Z, Y, V, a, float(l2), float(lr))
        W, b = cls.fold_back(V, a, mu, sigma)
        return W.cpu().numpy(), b.cpu().numpy()


def fit_linear_probe(
    features: np.ndarray,
    labels: np.ndarray,
    n_classes: int,
    l2: float = 1e-3,
    steps: int = 200,
    lr: float = 0.5,
) -> tuple[np.ndarray, np.ndarray]:
    """The probe of §7: (W [D, C], b [C]) for raw features, in the features' dtype."""
    return LinearProbe.fit(features, labels, n_classes, l2=l2, steps=steps, lr=lr)


def probe_accuracy(W: np.ndarray, b: np.ndarray, features: np.ndarray, labels: np.ndarray) -> float:
    """Fraction of rows whose argmax of X W + b equals the label (§7.5)."""
    X = torch.tensor(features)
    scores = X @ torch.tensor(W, dtype=X.dtype) + torch.tensor(b, dtype=X.dtype)
    # np.argmax documents first-occurrence ties (§7.5's lowest index); torch.argmax does not
    predictions = np.argmax(scores.cpu().numpy(), axis=1)
    return float(np.mean(predictions == np.asarray(labels)))
