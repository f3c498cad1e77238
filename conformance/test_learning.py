"""§9 Learning behaviour: contextual layers tell "saw" the noun from "saw" the verb."""

from __future__ import annotations

import pytest

from elmo_conformance.conformance.case import Case
from elmo_conformance.conformance.checks import fail
from elmo_conformance.conformance.data import learning
from elmo_conformance.fixtures.experiment import evaluate, train

pytestmark = pytest.mark.components("bilm", "probe")


@pytest.mark.spec("9", "9.2", "9.3")
@pytest.mark.requires("grad")
def test_contextual_layers_disambiguate(case: Case) -> None:
    """After 150 AdamW steps: loss within the reference band; probe on R^0 at the majority rate; on
    R^1 >= 0.95."""
    data = learning()
    # A Case has the protocol's function names, so every call of the experiment is guarded.
    params = train(case, data.corpus, case.cast(data.init))
    result = evaluate(case, data.corpus, params)
    bar = float(data.thresholds["final_loss"]["bar"])
    floor = float(data.thresholds["final_loss_floor"]["bar"])
    band = f"[{floor:.4f}, {bar:.4f}] (learning_thresholds.tsv: the reference runs' final losses ± their margin)"
    if not result["final_loss"] <= bar:
        fail(("9.2", "9.3"), f"after training the loss is {result['final_loss']:.4f}, above the band {band}")
    if not result["final_loss"] >= floor:
        fail(
            ("9.3", "3.2", "3.3"),
            f"after training the loss is {result['final_loss']:.4f}, below the band {band}: lower than a correct "
            "biLM reaches on this corpus, as when a direction sees the token it predicts (a forward state that "
            "reads later tokens, §3.2, or a backward state that reads earlier ones, §3.3)",
        )
    if result["acc_r0"] != result["majority"]:
        fail(
            ("9.3",),
            f"the probe on R^0 scores {result['acc_r0']:.4f}; identical features can only give the majority rate {result['majority']:.4f}",
        )
    need = float(data.thresholds["probe_r1_accuracy"]["bar"])
    if not result["acc_r1"] >= need:
        fail(("9.3",), f"the probe on R^1 scores {result['acc_r1']:.4f} on held-out occurrences, below {need}")
