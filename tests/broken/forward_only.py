"""A correct adapter without gradients: it declares no `grad` and has no gradient functions."""

from elmo_conformance import reference


class ForwardOnly:
    name = "forward-only"
    capabilities = frozenset({"float64"})
    scalar_mix = staticmethod(reference.scalar_mix)
    bilm_layers = staticmethod(reference.bilm_layers)
    bilm_logits = staticmethod(reference.bilm_logits)
    bilm_loss = staticmethod(reference.bilm_loss)
    fit_linear_probe = staticmethod(reference.fit_linear_probe)
    probe_accuracy = staticmethod(reference.probe_accuracy)


adapter = ForwardOnly
