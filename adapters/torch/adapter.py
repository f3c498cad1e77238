"""The PyTorch adapter: spec §11's protocol mapped onto the class-based API of elmo.py.

This doubles as a worked example of adapting a class-based implementation. elmo.py keeps its
parameters inside modules and gets gradients from autograd, while the protocol is functional and
NumPy-based: every call brings its own parameters and wants fresh arrays back. So each call

1. checks its NumPy inputs against every row of §8 (validate.py), before computing anything;
2. builds a module of the size the inputs imply and copies the parameters in (for the biLM, the
   §2.1 names map onto the `state_dict` keys by renaming: `BiLM.load_canonical`);
3. runs the module on tensors of the floating inputs' dtype (§1.2), under `torch.no_grad()`
   unless a gradient is asked for, which autograd then gives (§6);
4. returns NumPy arrays of that dtype, or Python floats for the scalars.

Inputs are copied into tensors, never shared, so they are never modified (§1.4). The classes are
class attributes so that a variant adapter can swap one for a subclass.
"""

from __future__ import annotations

from typing import cast

import numpy as np
import torch

from elmo_conformance.adapters.torch import elmo
from elmo_conformance.adapters.torch.elmo import BiLM, LinearProbe, ScalarMix
from elmo_conformance.adapters.torch.validate import (
    check_accuracy,
    check_bilm,
    check_fit,
    check_g_layers,
    check_g_out,
    check_has_targets,
    check_mix,
)

Params = dict[str, np.ndarray]
_TORCH_DTYPES = {np.dtype(np.float32): torch.float32, np.dtype(np.float64): torch.float64}


def _tensor(a: np.ndarray, dtype: np.dtype | type | None = None) -> torch.Tensor:
    """A copy of `a` (in `dtype` if given) as a tensor, so the caller's array stays untouched."""
    return torch.tensor(np.asarray(a, dtype=dtype))


def _numpy(t: torch.Tensor) -> np.ndarray:
    return t.detach().cpu().numpy()


class TorchAdapter:
    """The §11 protocol over `ScalarMix`, `BiLM`, `bilm_loss` and `LinearProbe` of elmo.py."""

    name = "torch"
    capabilities = frozenset({"float64", "float32", "grad"})
    device = "cpu"  # where modules live (§11); tensors made from NumPy follow the default device
    mix_class: type[ScalarMix] = ScalarMix
    bilm_class: type[BiLM] = BiLM
    probe_class: type[LinearProbe] = LinearProbe

    # -- ScalarMix (§5, §6.3) --

    def _mix(self, s: np.ndarray, gamma: np.ndarray, dtype: np.dtype) -> ScalarMix:
        """A ScalarMix holding `s` and `gamma`, in the layers' dtype."""
        mix = self.mix_class(len(s)).to(_TORCH_DTYPES[dtype])
        with torch.no_grad():
            mix.s.copy_(_tensor(s))
            mix.gamma.copy_(_tensor(gamma))
        return mix

    def scalar_mix(self, s: np.ndarray, gamma: np.ndarray, layers: list[np.ndarray]) -> np.ndarray:
        check_mix(s, gamma, layers)
        mix = self._mix(s, gamma, layers[0].dtype)
        with torch.no_grad():
            return _numpy(mix([_tensor(r) for r in layers]))

    def scalar_mix_vjp(
        self, s: np.ndarray, gamma: np.ndarray, layers: list[np.ndarray], g_out: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
        check_mix(s, gamma, layers)
        check_g_out(g_out, layers[0].shape)
        dtype = layers[0].dtype
        mix = self._mix(s, gamma, dtype)
        reps = [_tensor(r).requires_grad_() for r in layers]
        J = (mix(reps) * _tensor(g_out, dtype)).sum()
        g_s, g_gamma, *g_layers = torch.autograd.grad(J, [mix.s, mix.gamma, *reps])
        return _numpy(g_s), _numpy(g_gamma), [_numpy(g) for g in g_layers]

    # -- the biLM (§3, §4, §6.1, §6.2) --

    def _load(
        self, params: Params, ids: np.ndarray, lengths: np.ndarray | None
    ) -> tuple[BiLM, torch.Tensor, torch.Tensor | None]:
        """A BiLM holding `params` (already validated), with `ids` and `lengths` as tensors."""
        V, d = params["embedding"].shape
        n_layers = sum(name.startswith("fwd.") and name.endswith(".weight_ih") for name in params)
        # Built on the meta device: load_canonical overwrites every value, so a random init
        # would be wasted work and would advance the global RNG, a state kept between calls.
        with torch.device("meta"):
            model = self.bilm_class(V, d, n_layers)
        model = model.to_empty(device=self.device).load_canonical(params)
        lens = None if lengths is None else _tensor(lengths, np.int64)
        return model, _tensor(ids, np.int64), lens

    @staticmethod
    def _grads(model: BiLM, J: torch.Tensor) -> Params:
        """dJ/d(every parameter) under its §2.1 name; parameters J does not reach get zeros."""
        names, ps = zip(*model.named_parameters(), strict=True)
        grads = torch.autograd.grad(J, ps, allow_unused=True, materialize_grads=True)
        return {elmo.canonical_name(n): _numpy(g) for n, g in zip(names, grads, strict=True)}

    def bilm_layers(self, params: Params, ids: np.ndarray, lengths: np.ndarray | None = None) -> list[np.ndarray]:
        check_bilm(params, ids, lengths)
        model, x, lens = self._load(params, ids, lengths)
        with torch.no_grad():
            return [_numpy(r) for r in model.layers(x, lens)]

    def bilm_logits(
        self, params: Params, ids: np.ndarray, lengths: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        check_bilm(params, ids, lengths)
        model, x, lens = self._load(params, ids, lengths)
        with torch.no_grad():
            fwd, bwd = model(x, lens)
        return _numpy(fwd), _numpy(bwd)

    def bilm_loss(self, params: Params, ids: np.ndarray, lengths: np.ndarray | None = None) -> float:
        check_bilm(params, ids, lengths)
        check_has_targets(ids, lengths)
        model, x, lens = self._load(params, ids, lengths)
        with torch.no_grad():
            return float(elmo.bilm_loss(model, x, lens))

    def bilm_loss_grad(self, params: Params, ids: np.ndarray, lengths: np.ndarray | None = None) -> Params:
        check_bilm(params, ids, lengths)
        check_has_targets(ids, lengths)
        model, x, lens = self._load(params, ids, lengths)
        return self._grads(model, elmo.bilm_loss(model, x, lens))

    def bilm_layers_vjp(
        self,
        params: Params,
        ids: np.ndarray,
        lengths: np.ndarray | None,
        g_layers: list[np.ndarray],
    ) -> Params:
        _, d, n_layers, B, T = check_bilm(params, ids, lengths)
        check_g_layers(g_layers, n_layers, B, T, d)
        model, x, lens = self._load(params, ids, lengths)
        dtype = params["embedding"].dtype
        reps = model.layers(x, lens)
        J = cast(torch.Tensor, sum((r * _tensor(g, dtype)).sum() for r, g in zip(reps, g_layers, strict=True)))
        return self._grads(model, J)

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
        check_fit(features, labels, n_classes, l2, steps, lr)
        return self.probe_class.fit(features, labels, n_classes, l2=l2, steps=steps, lr=lr)

    def probe_accuracy(self, W: np.ndarray, b: np.ndarray, features: np.ndarray, labels: np.ndarray) -> float:
        check_accuracy(W, b, features, labels)
        return elmo.probe_accuracy(W, b, features, labels)
