"""The reference implementation of spec/elmo.md, in NumPy, written to read like the spec.

Every public function here is one function of the adapter protocol (§11); `reference.adapter`
wraps them as an adapter. Clarity comes first; gradients are written by hand (§6).
"""

from elmo_conformance.reference.bilm import bilm_layers, bilm_layers_vjp, bilm_logits
from elmo_conformance.reference.loss import bilm_loss, bilm_loss_grad
from elmo_conformance.reference.probe import fit_linear_probe, probe_accuracy
from elmo_conformance.reference.scalar_mix import scalar_mix, scalar_mix_vjp

__all__ = [
    "bilm_layers",
    "bilm_layers_vjp",
    "bilm_logits",
    "bilm_loss",
    "bilm_loss_grad",
    "fit_linear_probe",
    "probe_accuracy",
    "scalar_mix",
    "scalar_mix_vjp",
]
