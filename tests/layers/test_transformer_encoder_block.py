import keras
import keras_hub
import numpy as np
import pytest

from tests.layer_test_helpers import (
    assert_allclose_nested,
    assert_changes_do_not_leak,
    check_layer,
    random_inputs,
)
from tfnlp.layers import TransformerEncoderBlock

BATCH, LENGTH, HIDDEN = 2, 6, 16


def padding_mask(lengths):
    return np.arange(LENGTH)[None, :] < np.asarray(lengths)[:, None]


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("activation", ["relu", "gelu"])
def test_matches_keras_hub_transformer_encoder_after_set_weights(
    norm_first, activation
):
    inputs = random_inputs((BATCH, LENGTH, HIDDEN))
    mask = padding_mask([LENGTH, 4])
    ours = TransformerEncoderBlock(
        num_heads=4, intermediate_dim=32, activation=activation,
        norm_first=norm_first,
    )
    reference = keras_hub.layers.TransformerEncoder(
        intermediate_dim=32, num_heads=4, activation=activation,
        normalize_first=norm_first,
    )
    reference(inputs, padding_mask=mask)
    ours(inputs, padding_mask=mask)
    ours.set_weights(reference.get_weights())
    assert_allclose_nested(
        ours(inputs, padding_mask=mask, return_attention_scores=True),
        reference(inputs, padding_mask=mask, return_attention_scores=True),
    )


def test_post_layer_norm_matches_a_numpy_reference():
    block = TransformerEncoderBlock(num_heads=2, intermediate_dim=8, dropout=0.0)
    inputs = random_inputs((1, 3, 4))
    outputs = np.asarray(block(inputs))
    (wq, bq, wk, bk, wv, bv, wo, bo, g1, b1, g2, b2, w1, c1, w2, c2) = (
        block.get_weights()
    )

    def layer_norm(x, gamma, beta):
        mean = x.mean(-1, keepdims=True)
        variance = x.var(-1, keepdims=True)
        return (x - mean) / np.sqrt(variance + 1e-5) * gamma + beta

    x = inputs[0]
    q = np.einsum("tc,chd->htd", x, wq) + bq[:, None, :]
    k = np.einsum("tc,chd->htd", x, wk) + bk[:, None, :]
    v = np.einsum("tc,chd->htd", x, wv) + bv[:, None, :]
    logits = q @ k.transpose(0, 2, 1) / np.sqrt(2.0)
    weights = np.exp(logits - logits.max(-1, keepdims=True))
    weights /= weights.sum(-1, keepdims=True)
    attended = np.einsum("hts,hsd->thd", weights, v)
    attention_output = np.einsum("thd,hdc->tc", attended, wo) + bo
    x = layer_norm(attention_output + x, g1, b1)
    hidden = np.maximum(x @ w1 + c1, 0.0)
    expected = layer_norm(hidden @ w2 + c2 + x, g2, b2)
    np.testing.assert_allclose(outputs[0], expected, atol=1e-5)


@pytest.mark.parametrize("norm_first", [False, True])
def test_shared_layer_checks(norm_first):
    check_layer(
        TransformerEncoderBlock(
            num_heads=2, intermediate_dim=32, activation="gelu_approximate",
            norm_first=norm_first,
        ),
        inputs={
            "inputs": random_inputs((BATCH, LENGTH, HIDDEN)),
            "padding_mask": padding_mask([LENGTH, 3]),
        },
        call_options={"return_attention_scores": True},
        expected_output_shape=(BATCH, LENGTH, HIDDEN),
    )


def test_padded_positions_never_change_real_outputs():
    block = TransformerEncoderBlock(num_heads=2, intermediate_dim=32)
    mask = padding_mask([4, 4])

    def real_outputs(tensors):
        return block(tensors["inputs"], padding_mask=mask)[:, :4]

    assert_changes_do_not_leak(
        real_outputs, {"inputs": random_inputs((BATCH, LENGTH, HIDDEN))},
        "inputs", np.s_[:, 4:],
    )


def test_attention_mask_and_padding_mask_combine():
    block = TransformerEncoderBlock(num_heads=2, intermediate_dim=32)
    inputs = random_inputs((BATCH, LENGTH, HIDDEN))
    causal = np.tril(np.ones((LENGTH, LENGTH), bool))[None]
    _, scores = block(
        inputs, padding_mask=padding_mask([LENGTH, 4]), attention_mask=causal,
        return_attention_scores=True,
    )
    scores = np.asarray(scores)
    assert np.all(scores[:, :, ~causal[0]] == 0.0)
    assert np.all(scores[1, :, :, 4:] == 0.0)


def test_exact_and_approximate_gelu_differ():
    inputs = random_inputs((BATCH, LENGTH, HIDDEN))
    exact = TransformerEncoderBlock(num_heads=2, intermediate_dim=32, activation="gelu")
    approximate = TransformerEncoderBlock(
        num_heads=2, intermediate_dim=32, activation="gelu_approximate"
    )
    exact(inputs)
    approximate(inputs)
    approximate.set_weights(exact.get_weights())
    difference = np.abs(np.asarray(exact(inputs)) - np.asarray(approximate(inputs)))
    assert difference.max() > 1e-6


def test_hidden_size_not_divisible_by_heads_is_rejected():
    with pytest.raises(ValueError, match="divisible by num_heads"):
        TransformerEncoderBlock(num_heads=3, intermediate_dim=8)(
            random_inputs((1, 2, 16))
        )


def test_unknown_activation_is_rejected_with_the_known_names():
    with pytest.raises(ValueError, match="gelu_approximate"):
        TransformerEncoderBlock(num_heads=2, intermediate_dim=8, activation="swishy")


@pytest.mark.parametrize("norm_first", [False, True])
def test_query_positions_give_the_full_output_at_those_rows(norm_first):
    block = TransformerEncoderBlock(
        num_heads=4, intermediate_dim=32, norm_first=norm_first
    )
    inputs = random_inputs((BATCH, LENGTH, HIDDEN))
    mask = padding_mask([LENGTH, 4])
    positions = np.array([[0, 5, 2], [0, 1, 1]], "int32")
    full, full_scores = block(inputs, padding_mask=mask, return_attention_scores=True)
    rows, row_scores = block(
        inputs, padding_mask=mask, return_attention_scores=True,
        query_positions=positions,
    )
    batch_index = np.arange(BATCH)[:, None]
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(rows),
        keras.ops.convert_to_numpy(full)[batch_index, positions],
        atol=1e-5,
    )
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(row_scores),
        np.stack([
            keras.ops.convert_to_numpy(full_scores)[b][:, positions[b]]
            for b in range(BATCH)
        ]),
        atol=1e-6,
    )
    # An explicit attention mask is gathered at the same rows.
    attention_mask = np.tril(np.ones((LENGTH, LENGTH), bool))[None]
    full = block(inputs, padding_mask=mask, attention_mask=attention_mask)
    rows = block(
        inputs, padding_mask=mask, attention_mask=attention_mask,
        query_positions=positions,
    )
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(rows),
        keras.ops.convert_to_numpy(full)[batch_index, positions],
        atol=1e-5,
    )
