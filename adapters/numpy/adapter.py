"""§11 for the reference: each protocol function is the reference function of the same name."""

from __future__ import annotations

from elmo_conformance import reference


class NumpyAdapter:
    name = "numpy"
    capabilities = frozenset({"float64", "float32", "grad"})

    scalar_mix = staticmethod(reference.scalar_mix)
    scalar_mix_vjp = staticmethod(reference.scalar_mix_vjp)
    bilm_layers = staticmethod(reference.bilm_layers)
    bilm_logits = staticmethod(reference.bilm_logits)
    bilm_loss = staticmethod(reference.bilm_loss)
    bilm_loss_grad = staticmethod(reference.bilm_loss_grad)
    bilm_layers_vjp = staticmethod(reference.bilm_layers_vjp)
    fit_linear_probe = staticmethod(reference.fit_linear_probe)
    probe_accuracy = staticmethod(reference.probe_accuracy)
