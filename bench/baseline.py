"""What a PyTorch user would write instead: the biLM on torch's packed `nn.LSTM`, with autograd.

The same model as spec §2-§4, written for speed the way PyTorch intends it: the sequences are
packed once (so no LSTM step and no logit is computed at a padded position), the backward stack
stays in reversed order from its input to its top (so it is reversed once, not once per layer),
and the backward direction's targets (§4.1: x_{t-1}) are then the next token of the reversed row.
It is the yardstick for every adapter's `bilm_loss_grad`; `tests/test_bench.py` checks that it
computes the same loss and gradients as the reference.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.nn.utils.rnn import PackedSequence, pack_padded_sequence

IGNORE = -100  # F.cross_entropy's ignore_index: an unscored position


class PackedBiLM(nn.Module):
    """Embedding, L forward and L backward single-layer LSTMs, one shared output layer."""

    def __init__(self, params: dict[str, np.ndarray]) -> None:
        super().__init__()
        vocab, d = params["embedding"].shape
        n_layers = sum(1 for name in params if name.startswith("fwd.") and name.endswith(".weight_ih"))
        self.embedding = nn.Embedding(vocab, d)
        self.fwd = nn.ModuleList(nn.LSTM(d, d, batch_first=True) for _ in range(n_layers))
        self.bwd = nn.ModuleList(nn.LSTM(d, d, batch_first=True) for _ in range(n_layers))
        self.out = nn.Linear(d, vocab)
        self.to(torch.from_numpy(params["embedding"]).dtype)
        with torch.no_grad():
            for name, value in params.items():
                self.get_parameter(_module_name(name)).copy_(torch.from_numpy(value))

    def grads(self) -> dict[str, np.ndarray]:
        """The accumulated gradients under the canonical names of §2.1."""
        return {_canonical(name): p.grad.numpy() for name, p in self.named_parameters()}


def _module_name(canonical: str) -> str:
    if canonical == "embedding":
        return "embedding.weight"
    return canonical + "_l0" if canonical.startswith(("fwd.", "bwd.")) else canonical


def _canonical(name: str) -> str:
    return "embedding" if name == "embedding.weight" else name.removesuffix("_l0")


def reverse_within(ids: Tensor, lengths: Tensor) -> Tensor:
    """Each row reversed inside its own length (§3.3); padded positions stay put."""
    t = torch.arange(ids.shape[1])
    index = torch.where(t < lengths[:, None], lengths[:, None] - 1 - t, t)
    return ids.gather(1, index)


def next_token_targets(ids: Tensor, lengths: Tensor) -> Tensor:
    """x_{t+1} for t <= ℓ_b - 2, IGNORE elsewhere (§4.1's forward targets)."""
    t = torch.arange(ids.shape[1])
    following = F.pad(ids[:, 1:], (0, 1), value=IGNORE)
    return torch.where(t <= lengths[:, None] - 2, following, IGNORE)


def _stack_loss(model: PackedBiLM, lstms: nn.ModuleList, ids: Tensor, lengths: Tensor) -> Tensor:
    """Mean CE of one direction's next-token predictions, on the packed real positions only."""
    packed = pack_padded_sequence(ids, lengths, batch_first=True, enforce_sorted=False)
    targets = pack_padded_sequence(next_token_targets(ids, lengths), lengths, batch_first=True, enforce_sorted=False)
    states = PackedSequence(
        model.embedding(packed.data), packed.batch_sizes, packed.sorted_indices, packed.unsorted_indices
    )
    for lstm in lstms:
        states, _ = lstm(states)
    return F.cross_entropy(model.out(states.data), targets.data, ignore_index=IGNORE)


def bilm_loss(model: PackedBiLM, ids: Tensor, lengths: Tensor) -> Tensor:
    """§4.2: the two directions' token-level means, averaged. The backward stack reads the rows
    reversed inside their lengths, where its target x_{t-1} is the next token."""
    forward = _stack_loss(model, model.fwd, ids, lengths)
    backward = _stack_loss(model, model.bwd, reverse_within(ids, lengths), lengths)
    return (forward + backward) / 2


def loss_and_grad(model: PackedBiLM, ids: Tensor, lengths: Tensor) -> float:
    """One forward+backward pass: the loss, with every parameter's .grad set afresh."""
    for p in model.parameters():
        p.grad = None
    loss = bilm_loss(model, ids, lengths)
    loss.backward()
    return float(loss.detach())


def as_tensors(ids: np.ndarray, lengths: np.ndarray) -> tuple[Tensor, Tensor]:
    """ids as int64 and lengths as an int64 CPU tensor, as packing needs them."""
    return torch.as_tensor(ids, dtype=torch.int64), torch.as_tensor(lengths, dtype=torch.int64)
