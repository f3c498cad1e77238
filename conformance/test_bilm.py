"""§3 The biLM: embeddings, the two stacks, padding, logits."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from elmo_conformance import reference
from elmo_conformance.conformance.case import Case
from elmo_conformance.conformance.checks import assert_bitwise, assert_close, fail
from elmo_conformance.conformance.data import random_bilm, real_mask, widen
from elmo_conformance.conformance.diagnose import check_bilm_layers
from elmo_conformance.conformance.strategies import bilm_config
from elmo_conformance.spec.protocol import ResultChecker, bind_symbols, protocol

pytestmark = pytest.mark.components("bilm")

# Three layers, so that a defect confined to layers k >= 2 (§3.2) shows.
VOCAB, D, N_LAYERS = 9, 4, 3


def changed(ids: np.ndarray, where: np.ndarray, vocab: int, rng: np.random.Generator) -> np.ndarray:
    """ids with every position in `where` set to a different valid id."""
    return np.where(where, (ids + rng.integers(1, vocab, ids.shape)) % vocab, ids)


def check_rows_alone(
    case: Case, params: dict, ids: np.ndarray, lengths: np.ndarray, layers: list, section: str
) -> None:
    """Row b run alone, as a batch of one with T = ℓ_b, gives the batch's states for row b (§3.3)."""
    for row, length in enumerate(lengths):
        alone = case.bilm_layers(params, ids[row : row + 1, :length], None)
        for k, (single, batched) in enumerate(zip(alone, layers)):
            assert_close(
                single[0],
                batched[row, :length],
                case.tol("layers"),
                f"R^{k} of row {row} (length {length}) run alone vs in the batch (lengths {lengths.tolist()})",
                (section,),
            )


@pytest.mark.spec("3.1")
def test_r0_repeats_the_embedding(case: Case) -> None:
    """R^0 = [e ; e] at real positions, exactly the embedding rows; 0 at padded positions."""
    params, ids, lengths = random_bilm(1, VOCAB, D, N_LAYERS, [5, 3, 1, 5, 2])
    params = case.cast(params)
    r0 = case.bilm_layers(params, ids, lengths)[0]
    e = params["embedding"][ids]
    mask = real_mask(lengths, ids.shape[1])[:, :, None]
    assert_bitwise(r0, np.where(mask, np.concatenate([e, e], axis=-1), 0).astype(case.dtype), "R^0", ("3.1", "3.4"))


@pytest.mark.spec("3.2")
@given(data=st.data())
def test_forward_layers_never_see_the_future(case: Case, data: st.DataObject) -> None:
    """Changing the tokens after position t leaves every f^k at positions <= t bitwise equal."""
    lengths = data.draw(st.lists(st.integers(2, 7), min_size=2, max_size=4), label="lengths")
    cut = data.draw(st.integers(0, max(lengths) - 2), label="t")
    params, ids, lengths_ = random_bilm(data.draw(st.integers(0, 2**16), label="seed"), VOCAB, D, N_LAYERS, lengths)
    params = case.cast(params)
    later = np.arange(ids.shape[1])[None, :] > cut
    other = changed(ids, np.broadcast_to(later, ids.shape), VOCAB, np.random.default_rng(cut))
    before, after = case.bilm_layers(params, ids, lengths_), case.bilm_layers(params, other, lengths_)
    for k in range(1, N_LAYERS + 1):
        assert_bitwise(
            after[k][:, : cut + 1, :D],
            before[k][:, : cut + 1, :D],
            f"f^{k} at positions <= {cut} after changing the tokens after {cut} (lengths {lengths})",
            ("3.2",),
        )


@pytest.mark.spec("3.3")
@given(data=st.data())
def test_backward_layers_never_see_the_past(case: Case, data: st.DataObject) -> None:
    """With lengths 6, 4, 2: changing the tokens before t leaves every b^k at t.. bitwise equal,
    and each row's states equal those of the row run alone, truncated to its length."""
    lengths = [6, 4, 2]
    cut = data.draw(st.integers(1, 5), label="t")
    params, ids, lengths_ = random_bilm(data.draw(st.integers(0, 2**16), label="seed"), VOCAB, D, N_LAYERS, lengths)
    params = case.cast(params)
    earlier = np.arange(ids.shape[1])[None, :] < cut
    other = changed(ids, np.broadcast_to(earlier, ids.shape), VOCAB, np.random.default_rng(cut))
    before, after = case.bilm_layers(params, ids, lengths_), case.bilm_layers(params, other, lengths_)
    for k in range(1, N_LAYERS + 1):
        assert_bitwise(
            after[k][:, cut:, D:],
            before[k][:, cut:, D:],
            f"b^{k} at positions >= {cut} after changing the tokens before {cut} (lengths {lengths})",
            ("3.3",),
        )
    check_rows_alone(case, params, ids, lengths_, before, "3.3")


@pytest.mark.spec("3.4")
@given(data=st.data())
def test_padding_never_leaks(case: Case, data: st.DataObject) -> None:
    """Padded R^k are exactly +0.0 (the sign too: -0.0 shows a multiplied mask); padding content
    changes nothing; a row alone equals it in a batch."""
    lengths = data.draw(st.lists(st.integers(1, 7), min_size=2, max_size=4), label="lengths")
    lengths = [*lengths, 7]  # at least one full row, so every shorter row has padding
    params, ids, lengths_ = random_bilm(data.draw(st.integers(0, 2**16), label="seed"), VOCAB, D, N_LAYERS, lengths)
    params = case.cast(params)
    mask = real_mask(lengths_, ids.shape[1])
    layers = case.bilm_layers(params, ids, lengths_)
    for k, layer in enumerate(layers):
        leaked = np.argwhere(layer[~mask] != 0)
        if leaked.size:
            b, t = np.argwhere(~mask)[leaked[0][0]]
            fail(("3.4",), f"R^{k} is not 0 at padded position [{b}, {t}] (lengths {lengths}): {layer[b, t].tolist()}")
        negative = np.argwhere(np.signbit(layer[~mask]))
        if negative.size:  # -0.0 == 0, so only its sign shows a value multiplied by a 0/1 mask
            b, t = np.argwhere(~mask)[negative[0][0]]
            fail(
                ("3.4",),
                f"R^{k} at padded position [{b}, {t}] (lengths {lengths}) holds -0.0: padded positions are +0.0, "
                "selected (where(real, value, 0)), not a value multiplied by a 0/1 mask, which gives -0.0 where "
                "the value is negative (and NaN where it is not finite)",
            )
    other = changed(ids, ~mask, VOCAB, np.random.default_rng(len(lengths)))
    for k, (a, b) in enumerate(zip(case.bilm_layers(params, other, lengths_), layers)):
        assert_bitwise(a, b, f"R^{k} after changing only padded tokens (lengths {lengths})", ("3.4",))
    check_rows_alone(case, params, ids, lengths_, layers, "3.4")


@pytest.mark.spec("3.4", "3.5")
def test_padding_is_selected_not_multiplied(case: Case) -> None:
    """Finite, valid parameters that make every computation at a padded position NaN: the padded
    positions read an embedding row of the dtype's largest value, whose input projection is +inf
    in the forget gates of layer 1, while those gates' recurrent projection is -inf once the state
    is positive (at real positions the other gates saturate, so every state there is tanh(1) > 0
    and the forget gate just closes). The returned layers are still exactly 0 there, the logits
    are c, and nothing differs from the same batch with ordinary padding (§3.4)."""
    lengths_list = [5, 3, 1, 5]
    params, ids, lengths = random_bilm(13, VOCAB, D, N_LAYERS, lengths_list)
    params = case.cast(params)
    huge = VOCAB - 1  # the embedding row only padded positions read
    big = np.finfo(case.dtype).max
    params["embedding"][huge] = big
    forget, others = slice(D, 2 * D), (slice(0, D), slice(2 * D, 3 * D), slice(3 * D, 4 * D))
    for direction in ("fwd", "bwd"):
        params[f"{direction}.0.weight_ih"][forget] = 2.0  # 2 · max · d: +inf at padded positions only
        params[f"{direction}.0.weight_hh"][forget] = -big  # -inf whenever the previous state is positive
        for gate in others:  # i, g, o saturate at 1: every real state is o · tanh(c) = tanh(1) > 0
            params[f"{direction}.0.bias_ih"][gate] = params[f"{direction}.0.bias_hh"][gate] = 500.0
    mask = real_mask(lengths, ids.shape[1])
    ordinary = np.where(mask, ids % huge, 0)
    overflowing = np.where(mask, ids % huge, huge)
    with np.errstate(all="ignore"):  # an in-process adapter computing at padded positions overflows, by design
        clean = case.bilm_layers(params, ordinary, lengths)
        raw = case.call("bilm_layers", ("3.4",), params, overflowing, lengths)
        if isinstance(raw, list | tuple):
            for k, layer in enumerate(raw):
                if isinstance(layer, np.ndarray) and layer.shape == clean[k].shape and not np.all(layer[~mask] == 0):
                    b, t = np.argwhere(~mask & ~np.all(layer == 0, axis=-1))[0]
                    fail(
                        ("3.4",),
                        f"R^{k} at padded position [{b}, {t}] is {layer[b, t].tolist()}, expected exactly 0 (lengths "
                        f"{lengths_list}; the embedding row read there makes the padded computation NaN): padded "
                        "positions must be selected (where), not multiplied by a mask, since NaN · 0 is NaN",
                    )
        layers = checked_result(case, "bilm_layers", raw, params, overflowing, lengths)
        for k, (got, want) in enumerate(zip(layers, clean)):
            assert_bitwise(got, want, f"R^{k} with overflowing padding vs ordinary padding", ("3.4",))
        fwd, bwd = case.bilm_logits(params, overflowing, lengths)
        for name, logits, want in zip(("fwd", "bwd"), (fwd, bwd), case.bilm_logits(params, ordinary, lengths)):
            assert_bitwise(logits, want, f"{name} logits with overflowing padding vs ordinary padding", ("3.4", "3.5"))
        loss, want_loss = case.bilm_loss(params, overflowing, lengths), case.bilm_loss(params, ordinary, lengths)
    if loss != want_loss:
        fail(("3.4", "4.2"), f"bilm_loss with overflowing padding is {loss!r}, with ordinary padding {want_loss!r}")


def checked_result(case: Case, function: str, result: object, *args: object) -> Any:
    """A result obtained with `case.call`, checked as a guarded call checks it (spec/protocol.json)."""
    spec = protocol().functions[function]
    bound = spec.bind_arguments(args, {})
    return ResultChecker(spec, bind_symbols(spec, bound), case.dtype, bound.get("params"), fail).check(result)


@pytest.mark.spec("3.3", "3.4")
def test_batch_order_does_not_matter(case: Case) -> None:
    """Permuting the rows of a batch permutes the layers and nothing else."""
    params, ids, lengths = random_bilm(2, VOCAB, D, N_LAYERS, [6, 2, 4, 6, 1, 3])
    params = case.cast(params)
    order = np.array([3, 5, 0, 4, 1, 2])
    for k, (a, b) in enumerate(
        zip(case.bilm_layers(params, ids[order], lengths[order]), case.bilm_layers(params, ids, lengths))
    ):
        assert_close(a, b[order], case.tol("layers"), f"R^{k} of a permuted batch", ("3.3", "3.4"))


@pytest.mark.spec("3.5")
def test_logits_use_the_shared_output_layer(case: Case) -> None:
    """fwd = W_out f^L + c and bwd = W_out b^L + c from the adapter's own R^L; c at padded positions."""
    params, ids, lengths = random_bilm(3, VOCAB, D, N_LAYERS, [5, 3, 1, 5])
    params = case.cast(params)
    top = widen(case.bilm_layers(params, ids, lengths)[-1])
    fwd, bwd = case.bilm_logits(params, ids, lengths)
    weight, bias = widen(params["out.weight"]), widen(params["out.bias"])
    assert_close(fwd, top[..., :D] @ weight.T + bias, case.tol("logits"), "fwd logits against W_out f^L + c", ("3.5",))
    assert_close(bwd, top[..., D:] @ weight.T + bias, case.tol("logits"), "bwd logits against W_out b^L + c", ("3.5",))


@pytest.mark.spec("2.1", "3.4", "3.5", "4.2")
def test_a_single_layer_bilm(case: Case) -> None:
    """L = 1 (the smallest biLM, §1.1): [R^0, R^1], both logits from R^1 and the loss, against the
    reference, with a row of length 1 and padded rows."""
    lengths_list = [4, 1, 3, 4]
    params, ids, lengths = random_bilm(14, 7, 3, 1, lengths_list)
    params = case.cast(params)
    context = f"with L = 1 (lengths {lengths_list})"
    layers = case.bilm_layers(params, ids, lengths)
    check_bilm_layers(case, layers, reference.bilm_layers(widen(params), ids, lengths), lengths, context)
    expected = reference.bilm_logits(widen(params), ids, lengths)
    for name, got, want in zip(("fwd", "bwd"), case.bilm_logits(params, ids, lengths), expected):
        assert_close(got, want, case.tol("logits"), f"{name} logits {context}", ("3.5",))
    loss = np.array(case.bilm_loss(params, ids, lengths))
    want_loss = np.array(reference.bilm_loss(widen(params), ids, lengths))
    assert_close(loss, want_loss, case.tol("loss"), f"bilm_loss {context}", ("4.2",))


@pytest.mark.spec("2.1", "3.2", "3.3", "3.4")
def test_an_eleven_layer_bilm(case: Case) -> None:
    """L = 11 (V = 3, d = 1, T = 2), so that a layer index has two decimal digits (§2.1:
    `fwd.10.*` is forward layer 11): every layer against the reference, with a padded row."""
    lengths_list = [2, 1]
    params, ids, lengths = random_bilm(15, 3, 1, 11, lengths_list)
    params = case.cast(params)
    expected = reference.bilm_layers(widen(params), ids, lengths)
    check_bilm_layers(
        case, case.bilm_layers(params, ids, lengths), expected, lengths, f"with L = 11 (lengths {lengths_list})"
    )


# The integer dtypes of the wire protocol (§15.3) other than int64, which the other tests use.
INTEGER_DTYPES = ("int32", "int16", "int8", "uint64", "uint32", "uint16", "uint8")


@pytest.mark.spec("1.1", "8", "15.3")
def test_ids_and_lengths_of_any_integer_dtype(case: Case) -> None:
    """`ids` and `lengths` are integer arrays (§1.1), and an integer array is one of a signed or
    unsigned integer dtype (§8): in each integer dtype the protocol carries (§15.3: i4, i2, i1, u8,
    u4, u2, u1), both given in that dtype, the layers and the loss equal those of the int64 call."""
    lengths_list = [4, 2, 3]
    params, ids, lengths = random_bilm(16, 7, 3, 2, lengths_list)
    params = case.cast(params)
    layers, loss = case.bilm_layers(params, ids, lengths), np.array(case.bilm_loss(params, ids, lengths))
    for name in INTEGER_DTYPES:
        dtype = np.dtype(name)
        narrow_ids, narrow_lengths = ids.astype(dtype), lengths.astype(dtype)
        context = f"with ids and lengths of dtype {name} vs int64 (lengths {lengths_list})"
        for k, (got, want) in enumerate(zip(case.bilm_layers(params, narrow_ids, narrow_lengths), layers)):
            assert_close(got, want, case.tol("layers"), f"R^{k} {context}", ("1.1", "8", "15.3"))
        got_loss = np.array(case.bilm_loss(params, narrow_ids, narrow_lengths))
        assert_close(got_loss, loss, case.tol("loss"), f"bilm_loss {context}", ("1.1", "8", "15.3"))


@pytest.mark.spec("3.1", "3.2", "3.3", "3.4", "3.5")
@given(data=st.data())
def test_layers_and_logits_match_reference(case: Case, data: st.DataObject) -> None:
    """Differential: on random configurations the adapter agrees with the reference."""
    config = bilm_config(data)
    params, ids, lengths = config.build()
    params = case.cast(params)
    expected = reference.bilm_layers(widen(params), ids, lengths)
    check_bilm_layers(case, case.bilm_layers(params, ids, lengths), expected, lengths, f"for {config}")
    for name, got, want in zip(
        ("fwd", "bwd"), case.bilm_logits(params, ids, lengths), reference.bilm_logits(widen(params), ids, lengths)
    ):
        assert_close(got, want, case.tol("logits"), f"{name} logits for {config}", ("3.5",))
