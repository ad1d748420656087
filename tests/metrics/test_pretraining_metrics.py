"""The pretraining metrics against numpy, over several batches.

Their sums across tf.distribute replicas are checked in
tests/models/bert/test_bert_pretraining.py (a two-replica MirroredStrategy).
"""

import keras
import numpy as np
import pytest
import tensorflow as tf

from tfnlp.metrics import MaskedLMAccuracy, MaskedLMPerplexity, NextSentenceAccuracy

VOCAB = 7


def numpy_cross_entropy(labels, logits):
    shifted = logits - logits.max(-1, keepdims=True)
    log_probabilities = shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))
    return -np.take_along_axis(log_probabilities, labels[..., None], -1)[..., 0]


def masked_lm_batches(count=3, seed=0):
    rng = np.random.default_rng(seed)
    batches = []
    for index in range(count):
        ids = rng.integers(0, VOCAB, size=(2 + index, 3))
        logits = rng.normal(size=(2 + index, 3, VOCAB)).astype("float32")
        # About half right, so that the weights change the accuracy.
        right = rng.random(ids.shape) < 0.5
        logits[right, ids[right]] += 10.0
        weights = (rng.random(ids.shape) < 0.7).astype("float32")
        batches.append((ids.astype("int32"), logits, weights))
    return batches


def test_masked_lm_accuracy_is_the_weighted_share_over_all_batches():
    metric = MaskedLMAccuracy()
    assert float(metric.result()) == 0.0
    batches = masked_lm_batches()
    for batch in batches:
        metric.update_state(*batch)
    correct = sum(((logits.argmax(-1) == ids) * weights).sum() for ids, logits, weights in batches)
    total = sum(weights.sum() for _, _, weights in batches)
    assert 0 < correct / total < 1
    np.testing.assert_allclose(float(metric.result()), correct / total, rtol=1e-6)
    metric.reset_state()
    assert float(metric.result()) == 0.0
    ids, logits, _ = batches[0]
    metric.update_state(ids, logits)  # no weights: every prediction counts
    np.testing.assert_allclose(
        float(metric.result()), (logits.argmax(-1) == ids).mean(), rtol=1e-6
    )


def test_masked_lm_perplexity_is_exp_of_the_weighted_mean_cross_entropy():
    metric = MaskedLMPerplexity()
    assert float(metric.result()) == 1.0
    batches = masked_lm_batches(seed=1)
    for batch in batches:
        metric.update_state(*batch)
    summed = sum((numpy_cross_entropy(ids, logits) * weights).sum()
                 for ids, logits, weights in batches)
    total = sum(weights.sum() for _, _, weights in batches)
    np.testing.assert_allclose(float(metric.result()), np.exp(summed / total), rtol=1e-5)
    # bfloat16 logits are computed on in float32.
    metric.reset_state()
    ids, logits, weights = batches[0]
    metric.update_state(ids, tf.cast(logits, "bfloat16"), weights)
    rounded = tf.cast(tf.cast(logits, "bfloat16"), "float32").numpy()
    expected = np.exp((numpy_cross_entropy(ids, rounded) * weights).sum() / weights.sum())
    np.testing.assert_allclose(float(metric.result()), expected, rtol=1e-5)


def test_next_sentence_accuracy_takes_labels_of_either_shape():
    metric = NextSentenceAccuracy()
    logits = np.array([[2.0, -1.0], [0.5, 0.1], [0.0, 1.0], [1.0, 3.0]], "float32")
    metric.update_state(np.array([[0], [1], [1], [0]]), logits)
    assert float(metric.result()) == 0.5
    metric.update_state(np.array([0, 1]), logits[:2])
    np.testing.assert_allclose(float(metric.result()), 3 / 6, rtol=1e-6)
    metric.update_state(np.array([0, 0]), logits[:2], sample_weight=np.array([4.0, 0.0]))
    np.testing.assert_allclose(float(metric.result()), 7 / 10, rtol=1e-6)


def test_updates_compile_in_a_tf_function():
    metric = MaskedLMAccuracy()
    ids, logits, weights = masked_lm_batches(1)[0]

    @tf.function(jit_compile=True)
    def update(ids, logits, weights):
        metric.update_state(ids, logits, weights)

    update(ids, logits, weights)
    expected = ((logits.argmax(-1) == ids) * weights).sum() / weights.sum()
    np.testing.assert_allclose(float(metric.result()), expected, rtol=1e-6)


@pytest.mark.parametrize(
    "metric_class, name",
    [
        (MaskedLMAccuracy, "masked_lm_accuracy"),
        (MaskedLMPerplexity, "masked_lm_perplexity"),
        (NextSentenceAccuracy, "next_sentence_accuracy"),
    ],
)
def test_config_round_trip_and_registration(metric_class, name):
    metric = metric_class()
    assert metric.name == name
    config = metric.get_config()
    assert config == {"name": name, "dtype": "float32"}
    assert metric_class.from_config(config).get_config() == config
    revived = keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(metric))
    assert type(revived) is metric_class
    renamed = metric_class(name="eval_" + name)
    assert renamed.get_config()["name"] == "eval_" + name
    # Two sum-aggregated float32 variables.
    assert [variable.dtype for variable in metric.variables] == ["float32", "float32"]


def test_logits_of_the_wrong_rank_are_explained():
    with pytest.raises(ValueError, match="MaskedLMAccuracy: `mlm_logits` must have rank 3"):
        MaskedLMAccuracy().update_state(np.zeros((2, 3)), np.zeros((2, 3), "float32"))
    with pytest.raises(ValueError, match="NextSentenceAccuracy: `nsp_logits` must have rank 2"):
        NextSentenceAccuracy().update_state(np.zeros(2), np.zeros((2, 1, 2), "float32"))
