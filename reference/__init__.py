"""The reference implementation of spec/elmo.md, in NumPy, written to read like the spec.

Every public function here is one function of the adapter protocol (§11); `reference.adapter`
wraps them as an adapter. Clarity comes first; gradients are written by hand (§6).
"""

from .bilm import bilm_layers, bilm_layers_vjp, bilm_logits
from .loss import bilm_loss, bilm_loss_grad
from .probe import fit_linear_probe, probe_accuracy
from .scalar_mix import scalar_mix, scalar_mix_vjp

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
