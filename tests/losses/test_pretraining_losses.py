"""The BERT pretraining losses against numpy, and their exactness over replicas."""

import numpy as np
import pytest

from tests.layer_test_helpers import assert_allclose_nested, to_numpy
from tests.models.bert.helpers import make_batch, numpy_cross_entropy, random_outputs
from tfnlp.losses import masked_lm_loss, next_sentence_loss, pretraining_loss


def test_losses_match_numpy():
    batch = make_batch([10, 7, 4, 3])
    outputs = random_outputs(4)
    weights = batch["masked_lm_weights"]
    mlm = numpy_cross_entropy(batch["masked_lm_ids"], outputs["mlm_logits"])
    expected_mlm = (mlm * weights).sum() / (weights.sum() + 1e-5)
    nsp = numpy_cross_entropy(batch["next_sentence_labels"][:, 0], outputs["nsp_logits"])
    losses = pretraining_loss(batch, outputs)
    np.testing.assert_allclose(to_numpy(losses["masked_lm_loss"]), expected_mlm, rtol=1e-5)
    np.testing.assert_allclose(to_numpy(losses["next_sentence_loss"]), nsp.mean(), rtol=1e-5)
    np.testing.assert_allclose(
        to_numpy(losses["loss"]), expected_mlm + nsp.mean(), rtol=1e-5
    )
    # Sums: denominator 1 and global_batch_size 1.
    np.testing.assert_allclose(
        to_numpy(masked_lm_loss(batch["masked_lm_ids"], outputs["mlm_logits"], weights, 1.0)),
        (mlm * weights).sum(), rtol=1e-5,
    )
    np.testing.assert_allclose(
        to_numpy(next_sentence_loss(batch["next_sentence_labels"], outputs["nsp_logits"], 1)),
        nsp.sum(), rtol=1e-5,
    )


def test_padded_predictions_do_not_count():
    batch = make_batch()
    outputs = random_outputs(3)
    padded = batch["masked_lm_weights"] == 0
    assert padded.any()
    changed = dict(outputs, mlm_logits=outputs["mlm_logits"].copy())
    changed["mlm_logits"][padded] += 50.0 * np.random.default_rng(0).normal(
        size=changed["mlm_logits"][padded].shape
    )
    assert_allclose_nested(pretraining_loss(batch, changed), pretraining_loss(batch, outputs))
    no_predictions = dict(batch, masked_lm_weights=np.zeros_like(batch["masked_lm_weights"]))
    assert float(pretraining_loss(no_predictions, outputs)["masked_lm_loss"]) == 0.0


def test_replica_losses_with_global_divisors_add_up_to_the_global_loss():
    # Two "replicas" with different numbers of predictions: with the global
    # batch size and the global weight sum, the per-replica losses add up to
    # the loss of the whole batch, as pretraining_loss documents.
    batch = make_batch([10, 9, 4, 3])
    outputs = random_outputs(4)
    global_loss = pretraining_loss(batch, outputs)
    global_weight = batch["masked_lm_weights"].sum()
    replica_losses = [
        pretraining_loss(
            {key: value[part] for key, value in batch.items()},
            {key: value[part] for key, value in outputs.items()},
            global_batch_size=4,
            masked_lm_denominator=global_weight,
        )
        for part in (slice(0, 2), slice(2, 4))
    ]
    for key in ("loss", "masked_lm_loss", "next_sentence_loss"):
        total = sum(float(losses[key]) for losses in replica_losses)
        np.testing.assert_allclose(total, float(global_loss[key]), rtol=1e-5)
    # Without them, each replica's means (google-research/bert's per-core
    # loss): the mean of the two differs here from the global weighted mean.
    local = [
        pretraining_loss(
            {key: value[part] for key, value in batch.items()},
            {key: value[part] for key, value in outputs.items()},
        )["masked_lm_loss"]
        for part in (slice(0, 2), slice(2, 4))
    ]
    assert abs(np.mean(local) - float(global_loss["masked_lm_loss"])) > 1e-3


def test_losses_explain_a_missing_key():
    with pytest.raises(ValueError, match="no 'masked_lm_weights'"):
        pretraining_loss({"masked_lm_ids": 0, "next_sentence_labels": 0}, random_outputs(1))
    with pytest.raises(ValueError, match="has no 'nsp_logits'"):
        pretraining_loss(make_batch(), {"mlm_logits": 0})
