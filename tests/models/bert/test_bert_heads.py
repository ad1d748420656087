"""The fine-tuning heads: BertClassifier, BertTokenClassifier, BertSpanExtractor."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from tests.layer_test_helpers import assert_allclose_nested, to_numpy
from tests.model_test_helpers import check_model
from tests.models.bert.helpers import tiny_config
from tfnlp.models import (
    BertClassifier,
    BertEncoder,
    BertSpanExtractor,
    BertTokenClassifier,
)
from tfnlp.models.bert.bert_span_extractor import MASKED_LOGIT

LENGTH = 8
LENGTHS = [8, 5, 2]


def make_inputs(lengths=LENGTHS, seed=0):
    rng = np.random.default_rng(seed)
    mask = (np.arange(LENGTH)[None] < np.asarray(lengths)[:, None]).astype("int32")
    return {
        "input_ids": rng.integers(1, 50, size=(len(lengths), LENGTH)).astype("int32") * mask,
        "input_mask": mask,
        "segment_ids": (np.arange(LENGTH)[None] >= np.asarray(lengths)[:, None] // 2)
        .astype("int32") * mask,
    }


def random_encoder(seed=1, **overrides):
    encoder = BertEncoder(tiny_config(**overrides))
    rng = np.random.default_rng(seed)
    encoder.set_weights(
        [rng.normal(scale=0.3, size=w.shape).astype("float32") for w in encoder.weights]
    )
    return encoder


@pytest.fixture(scope="module")
def encoder():
    return random_encoder()


HEADS = {
    "classifier": lambda encoder: BertClassifier(encoder, num_classes=3, dropout=0.2),
    "mean_pooling_classifier": lambda encoder: BertClassifier(encoder, num_classes=2,
                                                              pooling="mean"),
    "token_classifier": lambda encoder: BertTokenClassifier(encoder, num_classes=4),
    "span_extractor": lambda encoder: BertSpanExtractor(encoder),
}


def dense_weights(layer):
    kernel, bias = layer.get_weights()
    return kernel, bias


# --- What each head computes -----------------------------------------------------


def test_classifier_is_a_dense_layer_on_the_pooled_output(encoder):
    classifier = BertClassifier(encoder, num_classes=3)
    inputs = make_inputs()
    logits = classifier(inputs)
    assert tuple(logits.shape) == (3, 3)
    assert keras.backend.standardize_dtype(logits.dtype) == "float32"
    kernel, bias = dense_weights(classifier.classifier_dense)
    pooled = to_numpy(encoder(inputs)["pooled_output"])
    np.testing.assert_allclose(to_numpy(logits), pooled @ kernel + bias, atol=1e-5)
    # Extra keys (a label, say) are ignored.
    assert_allclose_nested(classifier(dict(inputs, label=np.zeros(3))), logits)


def test_mean_pooling_classifier_reads_the_mean_of_the_real_tokens(encoder):
    classifier = BertClassifier(encoder, num_classes=3, pooling="mean")
    inputs = make_inputs()
    kernel, bias = dense_weights(classifier.classifier_dense)
    states = to_numpy(encoder(inputs)["sequence_output"])
    means = np.stack([states[row, :length].mean(axis=0) for row, length in enumerate(LENGTHS)])
    np.testing.assert_allclose(to_numpy(classifier(inputs)), means @ kernel + bias, atol=1e-5)
    with pytest.raises(ValueError, match="pooling"):
        BertClassifier(encoder, num_classes=3, pooling="max")


def test_token_classifier_gives_a_label_per_token(encoder):
    tagger = BertTokenClassifier(encoder, num_classes=4, dropout=0.0)
    inputs = make_inputs()
    logits = tagger(inputs)
    assert tuple(logits.shape) == (3, LENGTH, 4)
    kernel, bias = dense_weights(tagger.token_dense)
    sequence = to_numpy(encoder(inputs)["sequence_output"])
    np.testing.assert_allclose(to_numpy(logits), sequence @ kernel + bias, atol=1e-5)


def test_span_extractor_masks_padding_positions(encoder):
    reader = BertSpanExtractor(encoder)
    inputs = make_inputs()
    outputs = reader(inputs)
    assert set(outputs) == {"start_logits", "end_logits"}
    kernel, bias = dense_weights(reader.span_dense)
    sequence = to_numpy(encoder(inputs)["sequence_output"])
    expected = sequence @ kernel + bias
    mask = inputs["input_mask"].astype(bool)
    for index, name in enumerate(("start_logits", "end_logits")):
        logits = to_numpy(outputs[name])
        assert logits.shape == (3, LENGTH) and logits.dtype == np.float32
        np.testing.assert_allclose(logits[mask], expected[..., index][mask], atol=1e-5)
        assert np.all(logits[~mask] == MASKED_LOGIT)
        probabilities = to_numpy(keras.ops.softmax(outputs[name], axis=-1))
        assert np.all(probabilities[~mask] == 0.0)
        np.testing.assert_allclose(probabilities.sum(-1), 1.0, rtol=1e-6)


def test_head_dropout_is_active_only_in_training():
    encoder = random_encoder(hidden_dropout=0.0, attention_dropout=0.0)
    inputs = make_inputs()
    for head in (
        BertClassifier(encoder, num_classes=3, dropout=0.5),
        BertTokenClassifier(encoder, num_classes=3, dropout=0.5),
    ):
        assert_allclose_nested(head(inputs), head(inputs, training=False))
        difference = to_numpy(head(inputs, training=True)) - to_numpy(head(inputs))
        assert np.abs(difference).max() > 1e-3, type(head).__name__


def test_heads_start_from_the_encoder_initializer():
    encoder = BertEncoder(tiny_config(initializer_range=0.05))
    classifier = BertClassifier(encoder, num_classes=3)
    assert classifier.dtype_policy.name == "float32"
    kernel = to_numpy(classifier.classifier_dense.kernel)
    assert np.abs(kernel).max() <= 2 * 0.05 + 1e-6
    assert not np.any(to_numpy(classifier.classifier_dense.bias))


# --- Shared behaviour --------------------------------------------------------------


@pytest.mark.parametrize("head_name", sorted(HEADS))
def test_config_round_trip_and_keras_save(encoder, head_name, tmp_path):
    model = HEADS[head_name](encoder)
    assert model.get_config()["encoder"]["registered_name"] == "tfnlp>BertEncoder"
    check_model(model, make_inputs(), tmp_path)


@pytest.mark.parametrize("head_name", sorted(HEADS))
def test_every_variable_gets_a_gradient(encoder, head_name):
    model = HEADS[head_name](encoder)
    inputs = {key: tf.constant(value) for key, value in make_inputs().items()}
    with tf.GradientTape() as tape:
        outputs = model(inputs)
        loss = 0.0
        for index, leaf in enumerate(keras.tree.flatten(outputs)):
            mask = tf.cast(inputs["input_mask"], "float32")
            if head_name.endswith("classifier") and head_name != "token_classifier":
                mask = 1.0
            elif head_name == "token_classifier":
                mask = mask[..., None]
            weights = np.random.default_rng(index).normal(size=leaf.shape).astype("float32")
            loss += tf.reduce_sum(leaf * weights * mask)
    # The token-level heads and mean pooling do not read the pooled output,
    # so the encoder's pooled_dense gets no gradient from them.
    variables = [
        variable for variable in model.trainable_variables
        if head_name == "classifier" or not variable.path.startswith("pooled_dense/")
    ]
    gradients = tape.gradient(loss, variables)
    for variable, gradient in zip(variables, gradients):
        assert gradient is not None, variable.path
        gradient = tf.convert_to_tensor(gradient).numpy()
        assert np.all(np.isfinite(gradient)) and np.any(gradient != 0), variable.path


def test_mixed_precision_gives_float32_logits():
    encoder = BertEncoder(tiny_config(), dtype="mixed_bfloat16")
    for make_head in HEADS.values():
        model = make_head(encoder)
        assert model.dtype_policy.name == "mixed_bfloat16"
        for leaf in keras.tree.flatten(model(make_inputs())):
            assert keras.backend.standardize_dtype(leaf.dtype) == "float32"


def test_span_extractor_fits_with_sparse_cross_entropy_per_output():
    reader = BertSpanExtractor(random_encoder())
    inputs = make_inputs()
    positions = {
        "start_logits": np.array([1, 2, 0], "int32"),
        "end_logits": np.array([3, 4, 1], "int32"),
    }
    reader.compile(
        optimizer=keras.optimizers.SGD(0.01),
        loss={
            name: keras.losses.SparseCategoricalCrossentropy(from_logits=True)
            for name in positions
        },
        run_eagerly=True,
    )
    history = reader.fit(inputs, positions, batch_size=3, epochs=2, verbose=0)
    assert np.all(np.isfinite(history.history["loss"]))


# --- Errors ---------------------------------------------------------------------------


def test_wrong_arguments_are_explained(encoder):
    with pytest.raises(ValueError, match="`num_classes` must be a positive integer"):
        BertClassifier(encoder, num_classes=0)
    with pytest.raises(ValueError, match="`num_classes` must be a positive integer"):
        BertTokenClassifier(encoder, num_classes=2.0)
    with pytest.raises(ValueError, match=r"`dropout` must be a rate in \[0, 1\)"):
        BertClassifier(encoder, num_classes=2, dropout=1.0)
    with pytest.raises(ValueError, match="BertSpanExtractor must be a tfnlp.models.BertEncoder"):
        BertSpanExtractor(tiny_config())
    inputs = make_inputs()
    del inputs["segment_ids"]
    with pytest.raises(ValueError, match="the inputs lack segment_ids"):
        BertClassifier(encoder, num_classes=2)(inputs)
    with pytest.raises(ValueError, match="takes a dict"):
        BertClassifier(encoder, num_classes=2)(np.zeros((1, 4), "int32"))
