"""The biLM: each adapter's bilm_loss_grad against torch's packed nn.LSTM (bench/baseline.py), and
against the reference implementation (numpy) when it is among the adapters timed.

Both sides get the same parameters, ids and lengths, in the same dtype, and compute the loss and
every gradient (§6.1). Before timing, each adapter's loss is checked against the baseline's, so
the two sides are known to do the same work.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from elmo_conformance.adapters.loading import LoadedAdapter
from elmo_conformance.reference.params import init_params

from . import baseline
from .flops import bilm_loss_grad_flops
from .timing import interleaved

BASELINE = "torch packed nn.LSTM"
REFERENCE = "numpy"  # the reference implementation: every other contender's time is also given against it


@dataclass(frozen=True)
class BiLMSize:
    batch: int = 32
    steps: int = 40
    d: int = 128
    n_layers: int = 2
    vocab: int = 5000

    def as_json(self) -> dict:
        return {"B": self.batch, "T": self.steps, "d": self.d, "L": self.n_layers, "V": self.vocab}


def make_inputs(size: BiLMSize, dtype: str, seed: int = 0) -> tuple[dict, np.ndarray, np.ndarray]:
    """Parameters drawn as PyTorch does, uniform ids, and lengths from T/2 to T with one full row:
    a padded batch, so that both sides handle lengths as §3.3 requires."""
    rng = np.random.default_rng(seed)
    params = init_params(size.vocab, size.d, size.n_layers, rng, dtype=np.dtype(dtype).type)
    ids = rng.integers(0, size.vocab, size=(size.batch, size.steps))
    lengths = rng.integers(max(2, size.steps // 2), size.steps + 1, size=size.batch)
    lengths[0] = size.steps
    return params, ids, lengths


def work(size: BiLMSize, lengths: np.ndarray) -> float:
    return bilm_loss_grad_flops(int(lengths.sum()), int((lengths - 1).sum()), size.d, size.vocab, size.n_layers)


def _usable(adapter: LoadedAdapter, dtype: str) -> str | None:
    """Why this adapter cannot be timed in this dtype, or None."""
    if getattr(adapter, "unavailable", None):
        return f"{adapter.name} cannot run here: {adapter.unavailable}"
    for needed in (dtype, "grad"):
        if needed not in adapter.capabilities:
            return f"{adapter.name} does not declare {needed!r}"
    return None


def compare(
    adapters: list[LoadedAdapter], size: BiLMSize, dtype: str, repeats: int, peak: float | None, rtol: float
) -> dict:
    """Interleaved timing of the baseline and every adapter; ratios adapter / baseline."""
    params, ids, lengths = make_inputs(size, dtype)
    model = baseline.PackedBiLM(params)
    ids_t, lengths_t = baseline.as_tensors(ids, lengths)
    expected = baseline.loss_and_grad(model, ids_t, lengths_t)
    contenders = {BASELINE: lambda: baseline.loss_and_grad(model, ids_t, lengths_t)}
    skipped, disagree = {}, {}
    for adapter in adapters:
        reason = _usable(adapter, dtype)
        if reason is None:
            reason = _check_loss(adapter, params, ids, lengths, expected, rtol)
            disagree.update({adapter.name: reason} if reason else {})
        if reason:
            skipped[adapter.name] = reason
            continue
        contenders[adapter.name] = _timed_call(adapter, params, ids, lengths)
    timings, errors = interleaved(contenders, repeats=repeats, warmup=1)
    skipped.update({name: f"raised while timed: {error}" for name, error in errors.items()})
    flops = work(size, lengths)
    if BASELINE not in timings:
        raise RuntimeError(f"the baseline failed: {errors[BASELINE]}")
    base = timings[BASELINE].median
    reference = timings.get(REFERENCE)
    rows = {}
    for name, timing in timings.items():
        rate = flops / timing.median
        rows[name] = {
            **timing.as_json(),
            "ratio_to_baseline": timing.median / base,
            "ratio_of_min_to_baseline": min(timing.times) / min(timings[BASELINE].times),
            "ratio_to_reference": timing.median / reference.median if reference else None,
            "ratio_of_min_to_reference": min(timing.times) / min(reference.times) if reference else None,
            "flops_per_s": rate,
            "fraction_of_peak": rate / peak if peak else None,
        }
    return {
        "dtype": dtype,
        "size": size.as_json(),
        "lengths": lengths.tolist(),
        "flops": flops,
        "baseline": BASELINE,
        "reference": REFERENCE if reference else None,
        "torch_threads": torch.get_num_threads(),
        "results": rows,
        "skipped": skipped,
        "loss_disagreements": disagree,
    }


def _timed_call(adapter: LoadedAdapter, params: dict, ids: np.ndarray, lengths: np.ndarray):
    fn = adapter.adapter.bilm_loss_grad
    return lambda: fn(params, ids, lengths)


def _check_loss(adapter: LoadedAdapter, params, ids, lengths, expected: float, rtol: float) -> str | None:
    """None when the adapter's loss matches the baseline's; otherwise why it is not timed."""
    try:
        got = float(adapter.adapter.bilm_loss(params, ids, lengths))
    except Exception as exc:  # a broken adapter is reported, never a crashed benchmark
        return f"bilm_loss raised {type(exc).__name__}: {exc}"
    if not np.isfinite(got) or abs(got - expected) > rtol * abs(expected):
        return f"bilm_loss gave {got!r}, the baseline {expected!r} (rtol {rtol:g}): not the same computation"
    return None
