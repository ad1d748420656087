import warnings

import numpy as np
import pytest

from tests.layer_test_helpers import (
    assert_memory_mask_respected,
    check_layer,
    random_inputs,
    reference_masked_softmax,
    to_numpy,
)
from tfnlp.layers.bahdanau_attention import BahdanauAttention

BATCH, QUERY_LENGTH, SOURCE_LENGTH = 2, 3, 5
# Three different sizes, so a kernel of the wrong shape or orientation fails.
QUERY_UNITS, VALUE_UNITS, UNITS = 6, 4, 3


def make_inputs(query_rank=3):
    batch_and_length = (BATCH,) if query_rank == 2 else (BATCH, QUERY_LENGTH)
    mask = np.ones((BATCH, SOURCE_LENGTH), bool)
    mask[1, 3:] = False
    return {
        "query": random_inputs(batch_and_length + (QUERY_UNITS,), seed=1),
        "values": random_inputs((BATCH, SOURCE_LENGTH, VALUE_UNITS), seed=2),
        "mask": mask,
    }


def reference_scores(layer, query, values):
    """v_aᵀ tanh(W₁h_t + W₂h̄_s [+ b]) for every pair, written out in numpy."""
    query_kernel = to_numpy(layer.query_kernel)
    value_kernel = to_numpy(layer.value_kernel)
    attention_vector = to_numpy(layer.attention_vector)
    bias = np.zeros(layer.units)
    if layer.normalize:
        bias = to_numpy(layer.bias)
        attention_vector = (
            to_numpy(layer.scale)
            * attention_vector
            / np.linalg.norm(attention_vector)
        )
    scores = np.zeros(query.shape[:2] + (values.shape[1],), "float64")
    for batch in range(query.shape[0]):
        for target in range(query.shape[1]):
            for source in range(values.shape[1]):
                hidden = np.tanh(
                    query[batch, target] @ query_kernel
                    + values[batch, source] @ value_kernel
                    + bias
                )
                scores[batch, target, source] = attention_vector @ hidden
    return scores


@pytest.mark.parametrize("query_rank", [2, 3])
@pytest.mark.parametrize("normalize", [False, True])
def test_passes_shared_layer_checks(normalize, query_rank):
    inputs = make_inputs(query_rank)
    check_layer(
        BahdanauAttention(units=UNITS, normalize=normalize),
        inputs,
        expected_output_shape=inputs["query"].shape[:-1] + (VALUE_UNITS,),
    )


@pytest.mark.parametrize("normalize", [False, True])
def test_matches_numpy_reference_of_the_score_formula(normalize):
    inputs = make_inputs()
    layer = BahdanauAttention(units=UNITS, normalize=normalize)
    layer(**inputs)
    if normalize:
        # Values other than the initial ones, so a forgotten scale or bias is
        # caught.
        layer.scale.assign(1.3)
        layer.bias.assign(random_inputs((UNITS,), seed=3))
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


def test_normalized_score_ignores_the_length_of_the_attention_vector():
    inputs = make_inputs()
    layer = BahdanauAttention(units=UNITS, normalize=True)
    context, attention_weights = layer(**inputs)
    layer.attention_vector.assign(3.0 * to_numpy(layer.attention_vector))
    rescaled_context, rescaled_weights = layer(**inputs)
    np.testing.assert_allclose(
        to_numpy(rescaled_context), to_numpy(context), atol=1e-6
    )
    np.testing.assert_allclose(
        to_numpy(rescaled_weights), to_numpy(attention_weights), atol=1e-6
    )


def test_normalized_scale_starts_at_sqrt_one_over_units_and_bias_at_zero():
    layer = BahdanauAttention(units=UNITS, normalize=True)
    layer(**make_inputs())
    np.testing.assert_allclose(
        to_numpy(layer.scale), np.sqrt(1.0 / UNITS), rtol=1e-6
    )
    assert np.all(to_numpy(layer.bias) == 0.0)


def test_weights_have_spelled_out_names_and_shapes():
    plain = BahdanauAttention(units=UNITS)
    plain(**make_inputs())
    assert {v.name: tuple(v.shape) for v in plain.weights} == {
        "query_kernel": (QUERY_UNITS, UNITS),
        "value_kernel": (VALUE_UNITS, UNITS),
        "attention_vector": (UNITS,),
    }
    normalized = BahdanauAttention(units=UNITS, normalize=True)
    normalized(**make_inputs())
    assert {v.name: tuple(v.shape) for v in normalized.weights} == {
        "query_kernel": (QUERY_UNITS, UNITS),
        "value_kernel": (VALUE_UNITS, UNITS),
        "attention_vector": (UNITS,),
        "scale": (),
        "bias": (UNITS,),
    }


@pytest.mark.parametrize("query_rank", [2, 3])
@pytest.mark.parametrize("normalize", [False, True])
def test_masked_positions_get_zero_weight_and_cannot_change_context(
    normalize, query_rank
):
    inputs = make_inputs(query_rank)
    layer = BahdanauAttention(units=UNITS, normalize=normalize)

    assert_memory_mask_respected(layer, inputs)


def test_source_with_every_position_masked_gives_zero_weights_not_nan():
    inputs = make_inputs()
    inputs["mask"][0] = False
    context, attention_weights = BahdanauAttention(units=UNITS)(**inputs)
    assert np.all(to_numpy(attention_weights)[0] == 0.0)
    assert np.all(to_numpy(context)[0] == 0.0)
    assert np.all(np.isfinite(to_numpy(context)))


def test_memory_mask_is_used_up_without_a_warning_or_an_output_mask():
    # The mask is over source positions and the outputs are over query
    # positions, so the mask must not be attached to them, and passing it
    # must not trigger Keras' "this layer will destroy the mask" warning.
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        outputs = BahdanauAttention(units=UNITS)(**make_inputs())
    assert not [w for w in caught if "mask" in str(w.message)]
    for output in outputs:
        assert getattr(output, "_keras_mask", None) is None


@pytest.mark.parametrize("normalize", [False, True])
def test_single_step_query_equals_sequence_query_of_length_one(normalize):
    inputs = make_inputs(query_rank=2)
    layer = BahdanauAttention(units=UNITS, normalize=normalize)
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


@pytest.mark.parametrize("units", [0, -2, 2.5, None, True])
def test_invalid_units_raises_value_error(units):
    with pytest.raises(ValueError, match="positive integer"):
        BahdanauAttention(units=units)
