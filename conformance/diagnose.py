"""Failures that point at their cause: comparisons that, when they fail, cite the section where the
defect most likely is rather than where it surfaced, and say why.

- `check_bilm_layers`: a layer that differs is localized to its stack and layer (the lowest layer
  that differs, since a defect propagates upwards), the direction (forward §3.2, backward §3.3,
  embeddings §3.1, padding §3.4) and the first differing position in that direction's reading
  order.
- `check_probe_weights`: a probe whose (W, b) differ is run again with `steps = 0` and `steps = 1`,
  which separate the zero start, the standardization (§7.1), the folding back (§7.4) and the
  update (§7.3); the message names what those runs show.
- `mix_hint`: a ScalarMix that looks layer-normalized, or that uses the raw s, says so.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from elmo_conformance import reference
from elmo_conformance.conformance.case import Case
from elmo_conformance.conformance.checks import assert_close
from elmo_conformance.conformance.data import real_mask, widen


def close(actual: object, expected: object, tol: dict[str, float]) -> bool:
    """`assert_close`'s rule (§10) as a predicate, recording nothing."""
    a, e = np.asarray(actual, dtype=np.float64), np.asarray(expected, dtype=np.float64)
    if a.shape != e.shape:
        return False
    with np.errstate(all="ignore"):
        return bool(np.all(np.abs(a - e) <= tol["atol"] + tol["rtol"] * np.abs(e)))


def _differs(actual: np.ndarray, expected: np.ndarray, tol: dict[str, float]) -> np.ndarray:
    """Elementwise: beyond the tolerance (NaN counts), over the last axis: [B, T] of booleans."""
    a, e = actual.astype(np.float64), expected.astype(np.float64)
    with np.errstate(all="ignore"):
        return np.asarray(~(np.abs(a - e) <= tol["atol"] + tol["rtol"] * np.abs(e)).all(axis=-1))


# ---------------------------------------------------------------------------------------- the biLM


def _first_in_reading_order(bad: np.ndarray, lengths: np.ndarray, backward: bool) -> tuple[int, int]:
    """The differing real position a direction reaches first: the smallest t for the forward
    stack, the one nearest its row's end for the backward stack (which reads the row reversed)."""
    rows, steps = np.nonzero(bad)
    order = (lengths[rows] - 1 - steps) if backward else steps
    i = int(np.lexsort((rows, order))[0])
    return int(rows[i]), int(steps[i])


def check_bilm_layers(
    case: Case,
    got: Sequence[np.ndarray],
    want: Sequence[np.ndarray],
    lengths: np.ndarray | None,
    context: str,
    extra: tuple[str, ...] = (),
) -> None:
    """Each R^k against the expected one (§10 `layers` tolerance). The lowest layer that differs
    fails, its heading citing the part that differs: §3.1 for R^0, §3.2 when only its forward half
    f^k differs at real positions, §3.3 when only the backward half b^k does, both when both do,
    §3.4 when only padded positions do; §2.2 first when f^1 already differs at position 0, one step
    of the cell from the zero state. `extra` sections (a fixture's) are cited too."""
    __tracebackhide__ = True
    tol = case.tol("layers")
    first = np.asarray(want[0])
    batch, steps, width = first.shape
    d = width // 2
    full = np.full(batch, steps, dtype=np.int64) if lengths is None else np.asarray(lengths, dtype=np.int64)
    mask = real_mask(full, steps)
    for k, (g, w) in enumerate(zip(got, want)):
        g, w = np.asarray(g), np.asarray(w)
        if k == 0 or g.shape != w.shape or close(g, w, tol):
            sections = ("3.1", *extra) if k == 0 else ("3.4", *extra)
            assert_close(g, w, tol, f"R^{k} {context}", sections)
            continue
        below = "R^0 agrees" if k == 1 else f"R^0 to R^{k - 1} agree"
        fwd_bad = _differs(g[..., :d], w[..., :d], tol) & mask
        bwd_bad = _differs(g[..., d:], w[..., d:], tol) & mask
        where = []
        cell = False  # f^1 at position 0 is one step of the cell (§2.2) from the zero state on e_{b,0}
        if fwd_bad.any():
            b, t = _first_in_reading_order(fwd_bad, full, backward=False)
            where.append(f"the forward state f^{k} first differs at row {b}, position {t} (reading left to right)")
            cell = k == 1 and t == 0
        if bwd_bad.any():
            b, t = _first_in_reading_order(bwd_bad, full, backward=True)
            where.append(
                f"the backward state b^{k} first differs at row {b}, position {t} (reading from the row's end "
                f"at {full[b] - 1} down)"
            )
        if fwd_bad.any() and not bwd_bad.any():
            sections, part, half = ("3.2",), f"f^{k}, the forward half of R^{k},", slice(0, d)
            where.append("the backward half agrees")
        elif bwd_bad.any() and not fwd_bad.any():
            sections, part, half = ("3.3",), f"b^{k}, the backward half of R^{k},", slice(d, width)
            where.append("the forward half agrees")
        elif fwd_bad.any():
            sections, part, half = ("3.2", "3.3"), f"R^{k}", slice(0, width)
        else:
            sections, part, half = ("3.4",), f"R^{k} (only at padded positions)", slice(0, width)
        if cell:
            sections = ("2.2", *sections)
            where.append(
                "f^1 at position 0 is a single step of the LSTM cell from the zero state on e_{b,0}, which agrees, so "
                "the cell itself differs (§2.2: the gate order i, f, g, o of the rows of weight_ih, weight_hh and the "
                "biases, σ on i, f, o and tanh on g and c)"
            )
        detail = "; ".join([below, *where])
        assert_close(g[..., half], w[..., half], tol, f"{part} {context} ({detail})", (*sections, *extra))


# ---------------------------------------------------------------------------------------- the probe


def _one_step(X: np.ndarray, y: np.ndarray, n_classes: int, l2: float, lr: float, sigma: np.ndarray | None = None):
    """§7's first step from zero on float64 X, unfolded (V, a), with the given σ (default §7.1's)."""
    mu, sigma_ = reference.probe.standardize(X)
    sigma = sigma_ if sigma is None else sigma
    Z = (X - mu) / sigma
    Y = np.eye(n_classes)[y]
    V, a = reference.probe.gradient_step(Z, Y, np.zeros((X.shape[1], n_classes)), np.zeros(n_classes), l2, lr)
    return V, a, mu, sigma


def probe_cause(case: Case, X: np.ndarray, y: np.ndarray, n_classes: int, settings: dict) -> tuple[tuple, str]:
    """(sections, why) for a probe whose weights differ, from two short runs of the adapter: steps
    = 0 (the zero start, folded back) and steps = 1 (one update from zero), compared with what §7.1,
    §7.3 and §7.4 give for them."""
    l2, lr = float(settings.get("l2", 1e-3)), float(settings.get("lr", 0.5))
    tol = case.tol("probe_weights")
    Xw = widen(X)
    W0, b0 = case.fit_linear_probe(X, y, n_classes, l2=l2, steps=0, lr=lr)
    if np.any(W0 != 0) or np.any(b0 != 0):
        return (
            "7.3",
            "7.4",
        ), "with steps = 0 the probe does not return the zero start W = 0, b = 0 (§7.3, folded back)"
    W1, b1 = (widen(x) for x in case.fit_linear_probe(X, y, n_classes, l2=l2, steps=1, lr=lr))
    V1, a1, mu, sigma = _one_step(Xw, y, n_classes, l2, lr)
    want_W, want_b = reference.probe.fold_back(V1, a1, mu, sigma)
    constant = np.all(Xw == Xw[0], axis=0)
    if np.any(W1[constant] != 0):
        columns = np.flatnonzero(constant & np.any(W1 != 0, axis=1)).tolist()
        return ("7.1",), (
            f"after one step the constant column(s) {columns} have weights: a column whose values are all equal "
            "keeps σ = 1 and μ = its value, so its standardized column is exactly 0 (decided by equality, not by a "
            "computed σ, which can be a rounding error, e.g. for a column of 0.1s)"
        )
    if close(W1, want_W, tol) and close(b1, want_b, tol):
        return ("7.3", "7.2"), (
            "runs with steps = 0 and steps = 1 agree with §7, so the standardization (§7.1) and the folding back "
            "(§7.4) are right; the difference builds up over the later steps: the update of §7.3 (both updates from "
            "the gradient at the same (V, a), the l2 · V term) or the objective of §7.2"
        )
    if close(W1, V1, tol) and close(b1, a1, tol):
        return ("7.4",), (
            "after one step the probe returns the weights for standardized features: (V, a) were not folded back "
            "to W = V / σ, b = a - μ · W"
        )
    sample = np.where(constant, 1.0, Xw.std(axis=0, ddof=1) if len(Xw) > 1 else 1.0)
    V1s, a1s, _, _ = _one_step(Xw, y, n_classes, l2, lr, sample)
    if all(close(got, want, tol) for got, want in zip((W1, b1), reference.probe.fold_back(V1s, a1s, mu, sample))):
        return ("7.1",), (
            "after one step the probe matches a standardization by the sample standard deviation (divisor N - 1); "
            "§7.1 divides by N (the population standard deviation)"
        )
    if close(W1, want_W, tol):
        if close(b1, a1, tol):
            return ("7.4",), "after one step W is right but b is a: the bias was not folded back to b = a - μ · W"
        return ("7.3", "7.4"), "after one step W is right but b is not: the bias update (§7.3) or its folding (§7.4)"
    scale = _column_scale(W1, want_W)
    if scale is not None:
        if np.allclose(scale, scale[0], rtol=1e-6):
            return ("7.3",), (
                f"after one step W is {scale[0]:.6g} times §7's in every column: the step size (lr, or the 1/N of "
                "G = (P - Y) / N)"
            )
        return ("7.1",), (
            "after one step each row of W is off by a factor of its own, "
            f"{np.array2string(scale, precision=4)}: the scale σ_j of each column (§7.1)"
        )
    return ("7.1", "7.3", "7.4"), (
        "already one step from zero differs from §7: the standardization (§7.1), the gradient step (§7.3) or the "
        "folding back (§7.4)"
    )


def _column_scale(W: np.ndarray, want: np.ndarray) -> np.ndarray | None:
    """Per row j of W (a feature column), the factor W[j] / want[j] when it is one number across
    the classes for every row; None otherwise."""
    with np.errstate(all="ignore"):
        ratio = W / want
    usable = np.abs(want) > 1e-12 * max(float(np.abs(want).max()), 1e-300)
    scales = []
    for row, ok in zip(ratio, usable):
        if not ok.any():
            continue
        values = row[ok]
        if not np.all(np.isfinite(values)) or not np.allclose(values, values[0], rtol=1e-6):
            return None
        scales.append(values[0])
    return np.array(scales) if scales else None


def check_probe_weights(
    case: Case,
    X: np.ndarray,
    y: np.ndarray,
    n_classes: int,
    settings: dict,
    got: tuple[np.ndarray, np.ndarray],
    want: tuple[np.ndarray, np.ndarray],
    context: str,
    extra: tuple[str, ...] = (),
) -> None:
    """(W, b) against the expected ones (§10 `probe_weights`); on a difference, the heading cites
    the section `probe_cause` finds and the message says why."""
    __tracebackhide__ = True
    tol = case.tol("probe_weights")
    sections, why = ("7.4",), ""
    if not (close(got[0], want[0], tol) and close(got[1], want[1], tol)):
        sections, why = probe_cause(case, X, y, n_classes, settings)
        why = f" ({why})"
    assert_close(got[0], want[0], tol, f"W {context}{why}", (*sections, *extra))
    assert_close(got[1], want[1], tol, f"b {context}{why}", (*sections, *extra))


# ---------------------------------------------------------------------------------------- ScalarMix


def layer_norm(x: np.ndarray) -> np.ndarray:
    """What AllenNLP's ScalarMix(do_layer_norm=True) does to each layer before mixing: (x - mean)
    / sqrt(var + 1e-12) over all of its elements."""
    mean = x.mean()
    return (x - mean) / np.sqrt(((x - mean) ** 2).mean() + 1e-12)


def mix_hint(s: np.ndarray, gamma: np.ndarray, layers: Sequence[np.ndarray], out: np.ndarray) -> str:
    """Why a mix differs, when it matches a known mistake: layers normalized before mixing (§5.2;
    a layer of one element normalizes to 0), the raw s as weights (§5.1), or γ not applied (§5.2);
    '' otherwise. `mix_sections` gives the sections to cite."""
    s, gamma, out = widen(s), widen(gamma), widen(out)
    stacked = np.stack(widen(list(layers)))
    weights = np.exp(s - s.max()) / np.exp(s - s.max()).sum()

    def matches(expected: np.ndarray) -> bool:
        with np.errstate(all="ignore"):
            return bool(np.allclose(out, expected, rtol=1e-4, atol=1e-6))

    if matches(gamma[0] * np.tensordot(weights, np.stack([layer_norm(r) for r in stacked]), 1)):
        return (
            "the layers look layer-normalized before mixing (as AllenNLP's ScalarMix with do_layer_norm=True "
            "does); §5.2 mixes the layers as they are"
        )
    if matches(gamma[0] * np.tensordot(s, stacked, 1)):
        return "the mix uses the raw s as weights; §5.1 takes softmax(s)"
    if gamma[0] != 1 and matches(np.tensordot(weights, stacked, 1)):
        return "the mix is Σ w_k R^k without γ; §5.2 multiplies it by γ"
    return ""


def mix_sections(hint: str) -> tuple[str, ...]:
    """The section a `mix_hint` points at."""
    return ("5.1",) if "raw s" in hint else ("5.2",)
