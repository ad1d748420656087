"""BiLSTMClassifier: shapes, padding, the shared model checks, pretrained and
frozen embeddings, and training with compile/fit (XLA included)."""

import keras
import numpy as np
import pytest

from tests.layer_test_helpers import to_numpy
from tests.model_test_helpers import check_model
from tfnlp.losses import DistillationLoss
from tfnlp.models import BILSTM_PRESETS, BiLSTMClassifier

VOCABULARY = 30

# Three sentences of 5, 3 and 7 tokens.
SENTENCES = [[4, 9, 2, 17, 5], [11, 3, 8], [6, 6, 21, 14, 2, 9, 13]]


def classifier(**overrides):
    keras.utils.set_random_seed(3)
    arguments = {"vocabulary_size": VOCABULARY, "num_classes": 3, **overrides}
    return BiLSTMClassifier.from_preset("tiny", **arguments)


def padded(length, pad_id=0):
    ids = np.full((len(SENTENCES), length), pad_id, "int32")
    for row, sentence in enumerate(SENTENCES):
        ids[row, :len(sentence)] = sentence
    return ids


def with_mask(ids):
    return {"token_ids": ids, "padding_mask": ids != 0}


@pytest.mark.parametrize("pooling, embeddings", [
    ("final", dict(freeze_embeddings=True)), ("max", dict(multichannel=True))])
def test_model_checks_config_keras_archive_and_checkpoint(pooling, embeddings, tmp_path):
    model = classifier(pooling=pooling, dropout=0.1, **embeddings)
    check_model(model, with_mask(padded(8)), tmp_path, jax=pooling == "final", atol=1e-5)


@pytest.mark.parametrize("pooling", ["final", "max"])
def test_logits_shape_and_inputs_as_ids_or_dict(pooling):
    model = classifier(pooling=pooling)
    logits = model(padded(8))
    assert tuple(logits.shape) == (3, 3)
    assert keras.backend.standardize_dtype(logits.dtype) == "float32"
    np.testing.assert_array_equal(to_numpy(model(with_mask(padded(8)))), to_numpy(logits))
    # A dict without a mask derives it from the ids, as bare ids do.
    np.testing.assert_array_equal(to_numpy(model({"token_ids": padded(8)})), to_numpy(logits))
    assert tuple(model.sentence_vectors(padded(8)).shape) == (3, 2 * BILSTM_PRESETS["tiny"]["lstm_units"])


@pytest.mark.parametrize("pooling", ["final", "max"])
def test_padding_changes_nothing(pooling):
    model = classifier(pooling=pooling)
    expected = to_numpy(model(padded(7)))
    for length in (8, 12):
        np.testing.assert_allclose(to_numpy(model(padded(length))), expected, atol=1e-6, rtol=0)
    # Each row alone, without padding, gives the same logits.
    for row, sentence in enumerate(SENTENCES):
        np.testing.assert_allclose(to_numpy(model(np.array([sentence])))[0], expected[row],
                                   atol=1e-6, rtol=0)
    # The mask is what makes it so: read as real tokens, the padding of the
    # two shorter rows changes their logits.
    ids = padded(12)
    unmasked = to_numpy(model({"token_ids": ids, "padding_mask": np.ones(ids.shape, bool)}))
    assert np.abs(unmasked[:2] - expected[:2]).max() > 1e-3


def test_padding_id_and_an_explicit_mask_hide_the_padded_ids():
    model = classifier(padding_id=1)
    ids = padded(9, pad_id=1)
    expected = to_numpy(model(ids))
    # With an explicit mask, whatever the padded positions hold is not read.
    changed = ids.copy()
    changed[changed == 1] = 25
    np.testing.assert_allclose(
        to_numpy(model({"token_ids": changed, "padding_mask": ids != 1})), expected,
        atol=1e-6, rtol=0)


def test_max_pooling_takes_the_maximum_over_the_real_tokens():
    model = classifier(pooling="max")
    ids = padded(9)
    outputs = model.encoder(model.token_embedding(ids), mask=ids != 0)["sequence_output"]
    outputs = to_numpy(outputs)
    vectors = to_numpy(model.sentence_vectors(ids))
    for row, sentence in enumerate(SENTENCES):
        np.testing.assert_allclose(vectors[row], outputs[row, :len(sentence)].max(0), atol=1e-6)
    # A row of padding alone gets a zero vector, not a large negative one.
    empty = to_numpy(model.sentence_vectors(np.zeros((1, 4), "int32")))
    np.testing.assert_array_equal(empty, 0.0)


def test_pretrained_embeddings_by_argument_or_set_weights():
    vectors = np.random.default_rng(1).normal(size=(VOCABULARY, 16)).astype("float32")
    model = classifier(embedding_weights=vectors)
    np.testing.assert_array_equal(to_numpy(model.token_embedding.embeddings), vectors)
    assert "embedding_weights" not in model.get_config()
    other = classifier()
    other.token_embedding.set_weights([vectors])
    other.set_weights(model.get_weights())
    np.testing.assert_array_equal(to_numpy(other(padded(8))), to_numpy(model(padded(8))))
    with pytest.raises(ValueError, match=r"must have the shape \(vocabulary_size, "
                                         r"embedding_dim\) = \(30, 16\).*\(30, 8\)"):
        classifier(embedding_weights=vectors[:, :8])


def test_multichannel_trains_one_copy_of_the_vectors_and_reads_both():
    ids, labels = separable_task()
    vectors = np.random.default_rng(1).normal(size=(VOCABULARY, 16)).astype("float32")
    model = classifier(num_classes=2, embedding_weights=vectors, multichannel=True)
    assert model.encoder.recurrent_layers[0].forward_layer.cell.kernel.shape[0] == 2 * 16
    model.compile(optimizer=keras.optimizers.Adam(0.05),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    model.fit(ids, labels, batch_size=16, epochs=2, verbose=0, shuffle=False)
    np.testing.assert_array_equal(to_numpy(model.static_embedding.embeddings), vectors)
    trained = to_numpy(model.token_embedding.embeddings)
    assert np.abs(trained - vectors).max() > 1e-2
    # The LSTM reads the static channel too: changing it changes the logits.
    before = to_numpy(model(ids))
    model.static_embedding.set_weights([trained])
    assert np.abs(to_numpy(model(ids)) - before).max() > 1e-4
    with pytest.raises(ValueError, match="cannot be combined with `freeze_embeddings=True`"):
        classifier(multichannel=True, freeze_embeddings=True)


def separable_task(examples=64, length=6, seed=0):
    """Random sentences of ids 3..29 (padded to `length`); the label says
    whether token 2 occurs in them."""
    rng = np.random.default_rng(seed)
    ids = np.zeros((examples, length), "int32")
    labels = rng.integers(0, 2, examples).astype("int32")
    for row in range(examples):
        size = rng.integers(2, length + 1)
        ids[row, :size] = rng.integers(3, VOCABULARY, size)
        if labels[row]:
            ids[row, rng.integers(0, size)] = 2
    return ids, labels


def test_learns_a_separable_task_with_fit_under_xla():
    ids, labels = separable_task()
    # Frozen "pretrained" vectors: the LSTM and the classifier do the learning.
    vectors = np.random.default_rng(1).normal(size=(VOCABULARY, 16)).astype("float32")
    model = classifier(num_classes=2, embedding_weights=vectors, freeze_embeddings=True)
    model.compile(optimizer=keras.optimizers.Adam(0.05),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"], jit_compile=True)
    history = model.fit(ids, labels, batch_size=16, epochs=5, verbose=0, shuffle=False)
    assert history.history["accuracy"][-1] >= 0.95, history.history
    assert history.history["loss"][-1] < 0.5 * history.history["loss"][0]
    # The frozen embedding did not move.
    np.testing.assert_array_equal(to_numpy(model.token_embedding.embeddings), vectors)
    # The compiled forward pass agrees with the eager one.
    np.testing.assert_allclose(model.predict(ids, verbose=0), to_numpy(model(ids)), atol=1e-5)


def test_fit_on_teacher_logits_and_labels_with_a_distillation_loss():
    ids, labels = separable_task()
    teacher_logits = np.where(labels[:, None] == 1, [-2.0, 2.0], [2.0, -2.0]).astype("float32")
    model = classifier(num_classes=2)
    model.compile(optimizer=keras.optimizers.Adam(0.03),
                  loss=DistillationLoss(temperature=2.0, alpha=0.5),
                  metrics=["accuracy"], jit_compile=False)
    targets = {"teacher_logits": teacher_logits, "label": labels}
    history = model.fit(ids, targets, batch_size=16, epochs=6, verbose=0, shuffle=False)
    assert history.history["accuracy"][-1] >= 0.95, history.history
    assert history.history["loss"][-1] < 0.5 * history.history["loss"][0]
    evaluation = model.evaluate(ids, targets, verbose=0, return_dict=True)
    np.testing.assert_allclose(
        evaluation["loss"],
        float(DistillationLoss(temperature=2.0, alpha=0.5)(targets, model(ids))), rtol=1e-4)
    # Teacher logits alone (a dict without labels, or y a tensor) also
    # train; the accuracy is then the agreement with the teacher (here the
    # teacher's classes are the labels).
    model.compile(optimizer="adam", loss=DistillationLoss(temperature=2.0),
                  metrics=["accuracy"])
    without_labels = model.evaluate(ids, {"teacher_logits": teacher_logits}, verbose=0,
                                    return_dict=True)
    assert without_labels["accuracy"] == evaluation["accuracy"]
    model.compile(optimizer="adam", loss=DistillationLoss(temperature=2.0), metrics=[])
    loss = model.evaluate(ids, teacher_logits, verbose=0)
    np.testing.assert_allclose(loss, without_labels["loss"], rtol=1e-5)
    model.fit(ids, teacher_logits, batch_size=32, epochs=1, verbose=0)


@pytest.mark.parametrize("arguments, message", [
    (dict(num_classes=0), "`num_classes` must be a positive integer"),
    (dict(dropout=1.0), r"`dropout` must be a rate in \[0, 1\)"),
    (dict(pooling="mean"), "`pooling` must be one of final, max. Received: 'mean'"),
    (dict(lstm_units=0), "`lstm_units` must be a positive integer"),
    (dict(embedding_dim=2.5), "`embedding_dim` must be a positive integer"),
])
def test_invalid_arguments_are_explained(arguments, message):
    with pytest.raises(ValueError, match=message):
        classifier(**arguments)
    with pytest.raises(ValueError, match="Unknown BiLSTMClassifier preset 'base'"):
        BiLSTMClassifier.from_preset("base", vocabulary_size=10, num_classes=2)


def test_the_paper_preset_has_the_paper_s_sizes():
    model = BiLSTMClassifier.from_preset("tang2019", vocabulary_size=50, num_classes=2)
    assert (model.embedding_dim, model.lstm_units, model.hidden_dim) == (300, 150, 200)
    assert model.pooling == "final"
    assert tuple(model.sentence_vectors(np.array([[4, 5, 0]])).shape) == (1, 300)
