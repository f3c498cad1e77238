"""The reference's input checks (§8), for authors who wrap a library in an adapter.

About half of a hand-written adapter is input checking: every row of §8, with a ValueError that
names the argument (§1.3). A library (AllenNLP, a PyTorch module, scikit-learn) validates in its
own way, or not at all. An adapter that wraps one can run these checks instead:

    from elmo_conformance.adapters.input_checks import check_inputs, with_input_checks

    @with_input_checks            # every protocol method the class defines checks its inputs first
    class MyAdapter:
        name = "mine"
        capabilities = frozenset({"float64", "scalar_mix"})

        def scalar_mix(self, s, gamma, layers):
            return my_library.mix(s, gamma, layers)

or call `check_inputs("scalar_mix", s, gamma, layers)` at the top of a method. The checks are the
reference's own (reference/validate.py): each raises ValueError naming the argument, before
anything is computed, and returns nothing.

What that means: the validation tests of §8 (test_validation.py and the validation steps of other
tests) then check these checks, not the library's. They pass because the reference's checks
pass; they say nothing about what the library does with bad input when it is called directly.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

from elmo_conformance.reference import validate
from elmo_conformance.spec.protocol import protocol

T = TypeVar("T", bound=type)


def _bilm(params: Any, ids: Any, lengths: Any) -> tuple[int, int, Any]:
    _, d, n_layers, full = validate.check_bilm_inputs(params, ids, lengths)
    return d, n_layers, full


def _check_loss(params: Any, ids: Any, lengths: Any) -> None:
    _, _, full = _bilm(params, ids, lengths)
    validate.check_has_targets(lengths, full)


def _check_layers_vjp(params: Any, ids: Any, lengths: Any, g_layers: Any) -> None:
    d, n_layers, _ = _bilm(params, ids, lengths)
    validate.check_g_layers(g_layers, n_layers, (*ids.shape, 2 * d))


def _check_mix(s: Any, gamma: Any, layers: Any) -> None:
    validate.check_mix(s, gamma, layers)


def _check_bilm(params: Any, ids: Any, lengths: Any) -> None:
    _bilm(params, ids, lengths)


def _check_mix_vjp(s: Any, gamma: Any, layers: Any, g_out: Any) -> None:
    stacked = validate.check_mix(s, gamma, layers)
    validate.check_g_out(g_out, stacked.shape[1:])


def _check_fit(features: Any, labels: Any, n_classes: Any, l2: Any, steps: Any, lr: Any) -> None:
    validate.check_fit_inputs(features, labels, n_classes, steps, lr, l2)


def _check_accuracy(W: Any, b: Any, features: Any, labels: Any) -> None:
    X = validate.check_features(features)
    n_classes = validate.check_probe_weights(W, b, X.shape[1])
    validate.check_labels(labels, len(X), n_classes)


# One check per protocol function (spec/protocol.json), taking its arguments in protocol order.
CHECKS: dict[str, Callable[..., None]] = {
    "scalar_mix": _check_mix,
    "scalar_mix_vjp": _check_mix_vjp,
    "bilm_layers": _check_bilm,
    "bilm_logits": _check_bilm,
    "bilm_loss": _check_loss,
    "bilm_loss_grad": _check_loss,
    "bilm_layers_vjp": _check_layers_vjp,
    "fit_linear_probe": _check_fit,
    "probe_accuracy": _check_accuracy,
}


def check_inputs(function: str, *args: Any, **kwargs: Any) -> None:
    """Raise ValueError naming the argument (§1.3) when the arguments of the protocol function
    `function` break a row of §8; return None when they are valid. Arguments are passed as the
    harness passes them (positionally, the probe's settings by keyword; defaults of §11 apply)."""
    spec = protocol().functions[function]
    bound = spec.bind_arguments(args, kwargs)
    CHECKS[function](*(bound[name] for name in spec.argument_names))


def with_input_checks(cls: T) -> T:
    """A class decorator: each protocol method `cls` defines runs `check_inputs` first."""
    for name in protocol().methods:
        method = cls.__dict__.get(name)
        if method is None:
            continue
        if isinstance(method, staticmethod):
            setattr(cls, name, staticmethod(_checked(name, method.__func__)))
        else:
            setattr(cls, name, _checked(name, method, bound=True))
    return cls


def _checked(name: str, function: Callable, bound: bool = False) -> Callable:
    @functools.wraps(function)
    def call(*args: Any, **kwargs: Any) -> Any:
        check_inputs(name, *(args[1:] if bound else args), **kwargs)
        return function(*args, **kwargs)

    return call
