import keras
import numpy as np
import pytest

from tests.layer_test_helpers import (
    assert_allclose_nested,
    assert_changes_do_not_leak,
    check_layer,
    random_inputs,
)
from tfnlp.layers import MultiHeadAttention

BATCH, TARGET, SOURCE, FEATURES = 2, 5, 7, 16


def padding_mask(lengths, length):
    return np.arange(length)[None, :] < np.asarray(lengths)[:, None]


def keras_twin(ours, keras_layer, query, value, key=None):
    """Builds both layers and copies the Keras weights into ours."""
    keras_layer(query, value, key=key)
    ours(query, value, key=key)
    ours.set_weights(keras_layer.get_weights())


def test_variables_match_keras_in_order_names_and_shapes():
    query = random_inputs((BATCH, TARGET, FEATURES))
    value = random_inputs((BATCH, SOURCE, 12), seed=1)
    ours = MultiHeadAttention(num_heads=2, key_dim=4, value_dim=6)
    reference = keras.layers.MultiHeadAttention(num_heads=2, key_dim=4, value_dim=6)
    ours(query, value)
    reference(query, value)
    ours_layout = [(w.path.split("/", 1)[1], w.shape) for w in ours.weights]
    reference_layout = [
        (w.path.split("/", 1)[1], w.shape) for w in reference.weights
    ]
    assert ours_layout == reference_layout


@pytest.mark.parametrize(
    "case", ["self_padding", "self_causal_padding", "cross_padding", "cross_key"]
)
def test_matches_keras_multi_head_attention_after_set_weights(case):
    query = random_inputs((BATCH, TARGET, FEATURES))
    source = random_inputs((BATCH, SOURCE, FEATURES), seed=1)
    key = None
    if case.startswith("self"):
        value = query
        mask = padding_mask([TARGET, 3], TARGET)[:, None, :]
    else:
        value = source
        mask = padding_mask([SOURCE, 4], SOURCE)[:, None, :]
        if case == "cross_key":
            key = random_inputs((BATCH, SOURCE, 8), seed=2)
    mask = np.broadcast_to(mask, (BATCH, TARGET, value.shape[1]))
    causal = case == "self_causal_padding"
    ours = MultiHeadAttention(num_heads=4, key_dim=4, output_shape=10)
    reference = keras.layers.MultiHeadAttention(
        num_heads=4, key_dim=4, output_shape=10
    )
    keras_twin(ours, reference, query, value, key)
    kwargs = dict(key=key, attention_mask=mask, use_causal_mask=causal)
    # Keras takes a fused path without return_attention_scores and an
    # explicit one with it; match both.
    assert_allclose_nested(
        ours(query, value, **kwargs), reference(query, value, **kwargs)
    )
    assert_allclose_nested(
        ours(query, value, return_attention_scores=True, **kwargs),
        reference(query, value, return_attention_scores=True, **kwargs),
    )


def test_query_that_sees_no_key_gets_zero_weights_as_keras_explicit_path():
    query = random_inputs((BATCH, TARGET, FEATURES))
    lengths = padding_mask([TARGET, 3], TARGET)
    mask = lengths[:, :, None] & lengths[:, None, :]  # rows 3.. see nothing
    ours = MultiHeadAttention(num_heads=2, key_dim=8)
    reference = keras.layers.MultiHeadAttention(num_heads=2, key_dim=8)
    keras_twin(ours, reference, query, query)
    ours_outputs, ours_scores = ours(
        query, query, attention_mask=mask, return_attention_scores=True
    )
    assert np.all(np.asarray(ours_scores)[1, :, 3:] == 0.0)
    assert_allclose_nested(
        (ours_outputs, ours_scores),
        reference(query, query, attention_mask=mask, return_attention_scores=True),
    )


def test_matches_keras_with_only_a_causal_mask_and_without_bias():
    query = random_inputs((BATCH, TARGET, FEATURES))
    ours = MultiHeadAttention(num_heads=2, key_dim=8, use_bias=False)
    reference = keras.layers.MultiHeadAttention(
        num_heads=2, key_dim=8, use_bias=False
    )
    keras_twin(ours, reference, query, query)
    assert_allclose_nested(
        ours(query, query, use_causal_mask=True),
        reference(query, query, use_causal_mask=True),
    )


def test_shared_layer_checks():
    check_layer(
        MultiHeadAttention(num_heads=2, key_dim=4, dropout=0.1),
        inputs={
            "query": random_inputs((BATCH, TARGET, FEATURES)),
            "value": random_inputs((BATCH, SOURCE, FEATURES), seed=1),
            "attention_mask": np.broadcast_to(
                padding_mask([SOURCE, 4], SOURCE)[:, None, :],
                (BATCH, TARGET, SOURCE),
            ).copy(),
        },
        call_options={"return_attention_scores": True},
        expected_output_shape=(BATCH, TARGET, FEATURES),
    )


def test_padded_and_future_positions_never_change_outputs():
    layer = MultiHeadAttention(num_heads=2, key_dim=4)
    inputs = {"query": random_inputs((BATCH, TARGET, FEATURES))}
    mask = padding_mask([TARGET, TARGET], TARGET)[:, None, :]
    mask[:, :, 3:] = False  # the last two positions are padding

    def attend_first_positions(tensors):
        outputs = layer(
            tensors["query"],
            tensors["query"],
            attention_mask=mask,
            use_causal_mask=True,
        )
        return outputs[:, :2]  # outputs at the first two (real) positions

    # Positions 2.. are padding or in the future of positions 0 and 1.
    assert_changes_do_not_leak(
        attend_first_positions, inputs, "query", np.s_[:, 2:]
    )


def test_attention_weights_of_masked_keys_are_exactly_zero():
    layer = MultiHeadAttention(num_heads=2, key_dim=4)
    query = random_inputs((BATCH, TARGET, FEATURES))
    mask = padding_mask([2, 4], TARGET)[:, None, :]
    _, scores = layer(
        query, query, attention_mask=mask, return_attention_scores=True
    )
    scores = np.asarray(scores)
    assert np.all(scores[0, :, :, 2:] == 0.0)
    assert np.all(scores[1, :, :, 4:] == 0.0)
    np.testing.assert_allclose(scores.sum(-1), 1.0, rtol=1e-6)


def test_cached_incremental_decoding_equals_full_causal_pass():
    layer = MultiHeadAttention(num_heads=2, key_dim=8)
    sequence = random_inputs((BATCH, TARGET, FEATURES))
    full = layer(sequence, sequence, use_causal_mask=True)
    cache = np.zeros((BATCH, 2, TARGET, 2, 8), "float32")
    steps = []
    for index in range(TARGET):
        step = sequence[:, index : index + 1]
        output, cache = layer(
            step, step, use_causal_mask=True, cache=cache, cache_update_index=index
        )
        steps.append(np.asarray(output))
    np.testing.assert_allclose(np.concatenate(steps, axis=1), full, atol=1e-5)


def test_cache_without_update_index_is_used_as_precomputed_cross_attention():
    layer = MultiHeadAttention(num_heads=2, key_dim=8)
    target = random_inputs((BATCH, TARGET, FEATURES))
    source = random_inputs((BATCH, SOURCE, FEATURES), seed=1)
    expected = layer(target, source)
    empty = np.zeros((BATCH, 2, SOURCE, 2, 8), "float32")
    _, filled = layer(target, source, cache=empty, cache_update_index=0)
    output, reused = layer(target[:, :1], None, cache=filled)
    np.testing.assert_allclose(output, np.asarray(expected)[:, :1], atol=1e-5)
    np.testing.assert_array_equal(reused, filled)


def test_cache_with_different_key_and_value_dims_is_rejected():
    layer = MultiHeadAttention(num_heads=2, key_dim=4, value_dim=6)
    query = random_inputs((BATCH, 1, FEATURES))
    with pytest.raises(ValueError, match="key_dim == value_dim"):
        layer(query, query, cache=np.zeros((BATCH, 2, 3, 2, 4), "float32"),
              cache_update_index=0)


def test_inputs_that_are_not_rank_three_are_rejected():
    with pytest.raises(ValueError, match="batch, length, features"):
        MultiHeadAttention(num_heads=2, key_dim=4)(random_inputs((2, 16)))
