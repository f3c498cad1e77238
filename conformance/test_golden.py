"""§12.2 The golden biLM: values from PyTorch's packed nn.LSTM in float64 (§3-§6)."""

from __future__ import annotations

import numpy as np
import pytest

from elmo_conformance.conformance.case import Case
from elmo_conformance.conformance.checks import assert_close
from elmo_conformance.conformance.data import golden
from elmo_conformance.conformance.diagnose import check_bilm_layers, close, mix_hint, mix_sections

pytestmark = pytest.mark.components("bilm", "scalar_mix")


@pytest.mark.spec("3", "4", "5", "6", "12.2")
def test_golden_torch(case: Case) -> None:
    """Layers, both logits, the loss, a mix and (with `grad`) every gradient against the oracle."""
    g = golden()
    params, ids, lengths = case.cast(g["params"]), g["ids"], g["lengths"]
    layers = case.bilm_layers(params, ids, lengths)
    check_bilm_layers(case, layers, list(g["layers"]), lengths, "against the oracle", ("12.2",))
    fwd, bwd = case.bilm_logits(params, ids, lengths)
    assert_close(fwd, g["logits_fwd"], case.tol("logits"), "fwd logits", ("3.5", "12.2"))
    assert_close(bwd, g["logits_bwd"], case.tol("logits"), "bwd logits", ("3.5", "12.2"))
    loss = case.bilm_loss(params, ids, lengths)
    assert_close(np.array(loss), g["loss"], case.tol("loss"), "bilm_loss", ("4.2", "12.2"))
    s, gamma, g_out = case.cast(g["mix_s"]), case.cast(g["mix_gamma"]), case.cast(g["mix_g"])
    mix = case.scalar_mix(s, gamma, layers)
    hint = "" if close(mix, g["mix_out"], case.tol("mix")) else mix_hint(s, gamma, layers, mix)
    what = "scalar_mix of the layers" + (f" ({hint})" if hint else "")
    assert_close(mix, g["mix_out"], case.tol("mix"), what, (*mix_sections(hint), "12.2"))
    if "grad" not in case.impl.capabilities:
        return
    for name, value in case.bilm_loss_grad(params, ids, lengths).items():
        assert_close(value, g["grad_loss"][name], case.tol("loss_grad"), f"bilm_loss_grad[{name!r}]", ("6.1", "12.2"))
    # The mix objective J = Σ G ⊙ scalar_mix(s, γ, R): §6.3 for s and γ, then §6.2 with its g_layers.
    g_s, g_gamma, g_layers = case.scalar_mix_vjp(s, gamma, layers, g_out)
    assert_close(g_s, g["grad_mix_s"], case.tol("mix_vjp"), "dJ/ds", ("6.3", "12.2"))
    assert_close(g_gamma, g["grad_mix_gamma"], case.tol("mix_vjp"), "dJ/dγ", ("6.3", "12.2"))
    for name, value in case.bilm_layers_vjp(params, ids, lengths, g_layers).items():
        assert_close(value, g["grad_mix"][name], case.tol("layers_vjp"), f"dJ/d[{name!r}]", ("6.2", "12.2"))
