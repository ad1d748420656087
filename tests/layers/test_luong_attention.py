import warnings

import keras
import numpy as np
import pytest

from tests.layer_test_helpers import (
    assert_memory_mask_respected,
    check_layer,
    random_inputs,
    reference_masked_softmax,
    to_numpy,
)
from tfnlp.layers.luong_attention import LuongAttention

BATCH, QUERY_LENGTH, SOURCE_LENGTH = 2, 3, 5
VALUE_UNITS = 4
# "general" and "concat" compare vectors of different sizes; a query size
# unlike the value size catches a transposed kernel.
QUERY_UNITS = {"dot": VALUE_UNITS, "general": 6, "concat": 6}
SCORE_SETTINGS = [
    ("dot", False),
    ("dot", True),
    ("general", False),
    ("general", True),
    ("concat", False),
    ("concat", True),
]


def make_inputs(score, query_rank=3):
    batch_and_length = (BATCH,) if query_rank == 2 else (BATCH, QUERY_LENGTH)
    mask = np.ones((BATCH, SOURCE_LENGTH), bool)
    mask[1, 3:] = False
    return {
        "query": random_inputs(
            batch_and_length + (QUERY_UNITS[score],), seed=1
        ),
        "values": random_inputs((BATCH, SOURCE_LENGTH, VALUE_UNITS), seed=2),
        "mask": mask,
    }


def reference_scores(layer, query, values):
    """The paper's score formulas, written out in numpy."""
    if layer.score == "dot":
        scores = np.einsum("bqi,bsi->bqs", query, values)
    elif layer.score == "general":
        kernel = to_numpy(layer.attention_kernel)
        scores = np.einsum("bqi,ij,bsj->bqs", query, kernel, values)
    else:
        # W_a applied to the explicit concatenation [h_t; h̄_s] of every pair.
        kernel = np.concatenate(
            [to_numpy(layer.query_kernel), to_numpy(layer.value_kernel)], axis=0
        )
        attention_vector = to_numpy(layer.attention_vector)
        scores = np.zeros(query.shape[:2] + (values.shape[1],), "float64")
        for batch in range(query.shape[0]):
            for target in range(query.shape[1]):
                for source in range(values.shape[1]):
                    pair = np.concatenate(
                        [query[batch, target], values[batch, source]]
                    )
                    hidden = np.tanh(pair @ kernel)
                    scores[batch, target, source] = attention_vector @ hidden
    if layer.scale:
        scores = scores * to_numpy(layer.scale_weight)
    return scores


@pytest.mark.parametrize("query_rank", [2, 3])
@pytest.mark.parametrize("score,scale", SCORE_SETTINGS)
def test_passes_shared_layer_checks(score, scale, query_rank):
    inputs = make_inputs(score, query_rank)
    expected_context_shape = inputs["query"].shape[:-1] + (VALUE_UNITS,)
    check_layer(
        LuongAttention(score=score, scale=scale),
        inputs,
        expected_output_shape=expected_context_shape,
        # The unscaled "dot" score has no variables, so there is no gradient
        # to check.
        check_gradients=not (score == "dot" and not scale),
    )


@pytest.mark.parametrize("score,scale", SCORE_SETTINGS)
def test_matches_numpy_reference_of_the_score_formula(score, scale):
    inputs = make_inputs(score)
    layer = LuongAttention(score=score, scale=scale)
    layer(**inputs)
    if scale:
        # A scale other than its initial 1.0, so a forgotten scale is caught.
        layer.scale_weight.assign(1.7)
    context, attention_weights = layer(**inputs)

    expected_weights = reference_masked_softmax(
        reference_scores(layer, inputs["query"], inputs["values"]),
        inputs["mask"],
    )
    np.testing.assert_allclose(
        to_numpy(attention_weights), expected_weights, atol=1e-5
    )
    np.testing.assert_allclose(
        to_numpy(context), expected_weights @ inputs["values"], atol=1e-5
    )


@pytest.mark.parametrize("query_rank", [2, 3])
@pytest.mark.parametrize("score", ["dot", "general", "concat"])
def test_masked_positions_get_zero_weight_and_cannot_change_context(
    score, query_rank
):
    inputs = make_inputs(score, query_rank)
    layer = LuongAttention(score=score)

    assert_memory_mask_respected(layer, inputs)


def test_source_with_every_position_masked_gives_zero_weights_not_nan():
    inputs = make_inputs("general")
    inputs["mask"][0] = False
    context, attention_weights = LuongAttention(score="general")(**inputs)
    assert np.all(to_numpy(attention_weights)[0] == 0.0)
    assert np.all(to_numpy(context)[0] == 0.0)
    assert np.all(np.isfinite(to_numpy(context)))


@pytest.mark.parametrize("score,scale", SCORE_SETTINGS)
def test_single_step_query_equals_sequence_query_of_length_one(score, scale):
    inputs = make_inputs(score, query_rank=2)
    layer = LuongAttention(score=score, scale=scale)
    context, attention_weights = layer(**inputs)
    sequence_inputs = dict(inputs, query=inputs["query"][:, None, :])
    sequence_context, sequence_weights = layer(**sequence_inputs)

    assert tuple(context.shape) == (BATCH, VALUE_UNITS)
    assert tuple(attention_weights.shape) == (BATCH, SOURCE_LENGTH)
    np.testing.assert_allclose(
        to_numpy(context), to_numpy(sequence_context)[:, 0], atol=1e-6
    )
    np.testing.assert_allclose(
        to_numpy(attention_weights), to_numpy(sequence_weights)[:, 0], atol=1e-6
    )


def test_dot_score_equals_keras_attention():
    inputs = make_inputs("dot")
    context, attention_weights = LuongAttention(score="dot")(**inputs)
    expected_context, expected_weights = keras.layers.Attention()(
        [inputs["query"], inputs["values"]],
        mask=[None, inputs["mask"]],
        return_attention_scores=True,
    )
    np.testing.assert_allclose(
        to_numpy(context), to_numpy(expected_context), atol=1e-5
    )
    np.testing.assert_allclose(
        to_numpy(attention_weights), to_numpy(expected_weights), atol=1e-5
    )


def test_scaled_dot_score_equals_keras_attention_with_use_scale():
    inputs = make_inputs("dot")
    layer = LuongAttention(score="dot", scale=True)
    keras_attention = keras.layers.Attention(use_scale=True)
    layer(**inputs)
    keras_attention([inputs["query"], inputs["values"]])
    layer.scale_weight.assign(1.7)
    keras_attention.scale.assign(1.7)

    context, attention_weights = layer(**inputs)
    expected_context, expected_weights = keras_attention(
        [inputs["query"], inputs["values"]],
        mask=[None, inputs["mask"]],
        return_attention_scores=True,
    )
    np.testing.assert_allclose(
        to_numpy(context), to_numpy(expected_context), atol=1e-5
    )
    np.testing.assert_allclose(
        to_numpy(attention_weights), to_numpy(expected_weights), atol=1e-5
    )


def test_scale_starts_at_one_and_is_trainable():
    layer = LuongAttention(score="general", scale=True)
    layer(**make_inputs("general"))
    assert to_numpy(layer.scale_weight) == 1.0
    assert any(
        variable is layer.scale_weight
        for variable in layer.trainable_variables
    )


def test_weights_have_spelled_out_names_and_shapes():
    general = LuongAttention(score="general")
    general(**make_inputs("general"))
    assert {v.name: tuple(v.shape) for v in general.weights} == {
        "attention_kernel": (QUERY_UNITS["general"], VALUE_UNITS)
    }
    concat = LuongAttention(score="concat", scale=True)
    concat(**make_inputs("concat"))
    assert {v.name: tuple(v.shape) for v in concat.weights} == {
        "query_kernel": (QUERY_UNITS["concat"], VALUE_UNITS),
        "value_kernel": (VALUE_UNITS, VALUE_UNITS),
        "attention_vector": (VALUE_UNITS,),
        "scale": (),
    }


def test_invalid_score_raises_value_error_listing_allowed_scores():
    with pytest.raises(ValueError, match="'dot', 'general', 'concat'"):
        LuongAttention(score="additive")


def test_dot_score_with_different_query_and_value_sizes_raises_value_error():
    inputs = make_inputs("general")
    with pytest.raises(ValueError, match="same last dimension"):
        LuongAttention(score="dot")(**inputs)


def test_memory_mask_is_used_up_without_a_warning_or_an_output_mask():
    # The mask is over source positions and the outputs are over query
    # positions, so the mask must not be attached to them, and passing it
    # must not trigger Keras' "this layer will destroy the mask" warning.
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        outputs = LuongAttention(score="general")(**make_inputs("general"))
    assert not [w for w in caught if "mask" in str(w.message)]
    for output in outputs:
        assert getattr(output, "_keras_mask", None) is None
