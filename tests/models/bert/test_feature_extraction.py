"""bert_features and BertFeatureExtractor, each strategy against numpy."""

import numpy as np
import pytest

from tests.layer_test_helpers import assert_allclose_nested, to_numpy
from tests.model_test_helpers import check_model
from tests.models.bert.helpers import tiny_config
from tfnlp.models import (
    FEATURE_STRATEGIES,
    BertEncoder,
    BertFeatureExtractor,
    bert_features,
)

LENGTH = 6


def make_inputs():
    rng = np.random.default_rng(0)
    mask = (np.arange(LENGTH)[None] < np.array([[6], [3]])).astype("int32")
    return {
        "input_ids": rng.integers(1, 40, size=(2, LENGTH)).astype("int32") * mask,
        "input_mask": mask,
        "segment_ids": np.zeros((2, LENGTH), "int32"),
    }


@pytest.fixture(scope="module")
def encoder():
    model = BertEncoder(tiny_config(num_layers=4, hidden_size=8))
    rng = np.random.default_rng(1)
    model.set_weights(
        [rng.normal(scale=0.3, size=w.shape).astype("float32") for w in model.weights]
    )
    return model


def manual_features(layers, strategy):
    """The features, from numpy arrays of every layer's output."""
    if strategy == "last":
        return layers[3]
    if strategy == "second_to_last":
        return layers[2]
    if strategy == "sum_last_four":
        return layers[0] + layers[1] + layers[2] + layers[3]
    if strategy == "concat_last_four":
        return np.concatenate([layers[3], layers[2], layers[1], layers[0]], axis=-1)
    raise AssertionError(strategy)


def test_the_strategies_are_the_documented_ones():
    assert FEATURE_STRATEGIES == (
        "last", "second_to_last", "sum_last_four", "concat_last_four",
    )


@pytest.mark.parametrize("strategy", FEATURE_STRATEGIES)
def test_each_strategy_matches_numpy(encoder, strategy):
    inputs = make_inputs()
    outputs = encoder(inputs)
    layers = [to_numpy(layer) for layer in outputs["encoder_outputs"]]
    assert len(layers) == 4 and len({layer.tobytes() for layer in layers}) == 4
    expected = manual_features(layers, strategy)
    width = 32 if strategy == "concat_last_four" else 8
    assert expected.shape == (2, LENGTH, width)
    # From the output dict, from the list of layers, and from the model.
    np.testing.assert_allclose(to_numpy(bert_features(outputs, strategy)), expected, atol=1e-6)
    np.testing.assert_allclose(to_numpy(bert_features(layers, strategy)), expected, atol=1e-6)
    extractor = BertFeatureExtractor(encoder, strategy)
    np.testing.assert_allclose(to_numpy(extractor(inputs)), expected, atol=1e-5)


def test_the_default_is_the_last_layer(encoder):
    outputs = encoder(make_inputs())
    assert_allclose_nested(bert_features(outputs), outputs["sequence_output"])
    assert BertFeatureExtractor(encoder).strategy == "last"


def test_extractor_config_round_trip_and_keras_save(encoder, tmp_path):
    extractor = BertFeatureExtractor(encoder, "concat_last_four")
    assert extractor.get_config()["strategy"] == "concat_last_four"
    check_model(extractor, make_inputs(), tmp_path)


def test_wrong_strategies_and_inputs_are_explained(encoder):
    layers = [np.zeros((1, 2, 3), "float32")] * 3
    with pytest.raises(ValueError, match="Unknown feature strategy 'mean'. Use one of: last"):
        bert_features(layers, "mean")
    with pytest.raises(ValueError, match="reads the last 4 layers, but the encoder has 3"):
        bert_features(layers, "sum_last_four")
    with pytest.raises(ValueError, match="has \\['pooled_output'\\]"):
        bert_features({"pooled_output": layers[0]})
    with pytest.raises(ValueError, match="Received a ndarray"):
        bert_features(layers[0])
    with pytest.raises(ValueError, match="reads the last 2 layers, but the encoder has 1"):
        BertFeatureExtractor(BertEncoder(tiny_config(num_layers=1, hidden_size=8)), "second_to_last")
