"""§1 Conventions: the same call twice gives the same bits (§1.4); and a process implementation
(§15.1) exits with status 0 when its standard input ends.

Dtypes (§1.2) and unmodified inputs (§1.4) are checked on every call the suite makes (case.py).
Every array the harness gets back is a copy (protocol.ResultChecker), so an adapter that refills
one output buffer in place cannot make the two results of this test the same object.
"""

from __future__ import annotations

import subprocess

import numpy as np
import pytest

from elmo_conformance.conformance.case import Case
from elmo_conformance.conformance.checks import assert_bitwise, fail
from elmo_conformance.conformance.data import random_bilm
from elmo_conformance.conformance.raw_process import fresh_process

END_OF_INPUT_WAIT = 10.0  # seconds a process gets to exit once its standard input is closed


@pytest.mark.spec("1.4")
def test_calls_are_deterministic(case: Case) -> None:
    params, ids, lengths = random_bilm(12, 7, 3, 2, [5, 2, 4])
    params = case.cast(params)
    first, second = case.bilm_layers(params, ids, lengths), case.bilm_layers(params, ids, lengths)
    for k, (a, b) in enumerate(zip(first, second)):
        assert_bitwise(b, a, f"R^{k} of a second identical call", ("1.4",))
    for name, a, b in zip(
        ("fwd", "bwd"), case.bilm_logits(params, ids, lengths), case.bilm_logits(params, ids, lengths)
    ):
        assert_bitwise(b, a, f"{name} logits of a second identical call", ("1.4",))
    if case.bilm_loss(params, ids, lengths) != case.bilm_loss(params, ids, lengths):
        fail(("1.4",), "bilm_loss differs between two identical calls")
    s, gamma = case.cast(np.array([0.3, -0.2, 1.0])), case.cast(np.array([0.7]))
    layers = case.bilm_layers(params, ids, lengths)
    assert_bitwise(
        case.scalar_mix(s, gamma, layers),
        case.scalar_mix(s, gamma, layers),
        "scalar_mix of a second identical call",
        ("1.4",),
    )
    if "grad" not in case.impl.capabilities:
        return
    first_grad, second_grad = case.bilm_loss_grad(params, ids, lengths), case.bilm_loss_grad(params, ids, lengths)
    for name in params:
        assert_bitwise(
            second_grad[name], first_grad[name], f"bilm_loss_grad[{name!r}] of a second identical call", ("1.4",)
        )
    rng = np.random.default_rng(5)
    g_layers = case.cast([rng.standard_normal(layer.shape) for layer in layers])
    first_vjp = case.bilm_layers_vjp(params, ids, lengths, g_layers)
    second_vjp = case.bilm_layers_vjp(params, ids, lengths, g_layers)
    for name in params:
        assert_bitwise(
            second_vjp[name], first_vjp[name], f"bilm_layers_vjp[{name!r}] of a second identical call", ("1.4",)
        )
    g_out = case.cast(rng.standard_normal(layers[0].shape))
    first_mix, second_mix = case.scalar_mix_vjp(s, gamma, layers, g_out), case.scalar_mix_vjp(s, gamma, layers, g_out)
    for what, a, b in (("g_s", first_mix[0], second_mix[0]), ("g_gamma", first_mix[1], second_mix[1])):
        assert_bitwise(b, a, f"scalar_mix_vjp {what} of a second identical call", ("1.4",))
    for k, (a, b) in enumerate(zip(first_mix[2], second_mix[2])):
        assert_bitwise(b, a, f"scalar_mix_vjp g_layers[{k}] of a second identical call", ("1.4",))


@pytest.mark.spec("15.1")
def test_a_process_exits_0_at_the_end_of_its_input(case: Case) -> None:
    """A program speaking the wire protocol, started as the harness starts it, answered the
    handshake, then given end of file on its standard input, exits with status 0 (§15.1)."""
    with fresh_process(case, "15.1", served=True) as (_, connection):
        connection.process.stdin.close()  # type: ignore[union-attr]
        try:
            code = connection.process.wait(END_OF_INPUT_WAIT)
        except subprocess.TimeoutExpired:
            fail(
                ("15.1",),
                f"{case.name} was still running {END_OF_INPUT_WAIT:g} s after its standard input reached end of file: "
                "when standard input ends the process exits, with status 0",
            )
        if code != 0:
            tail = connection.stderr.tail()
            fail(
                ("15.1",),
                f"{case.name} exited with status {code} when its standard input reached end of file, after the "
                f"handshake; it must exit with status 0 (a read of 0 bytes at a frame's start is the end, not an "
                f"error){chr(10) + tail if tail else ''}",
            )
