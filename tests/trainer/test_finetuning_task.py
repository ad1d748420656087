"""`trainer.tasks.finetuning.FineTuningTask`: its loss and metrics on a tiny BERT of
each kind, against NumPy, and the loss over two replicas' shares."""

import numpy as np
import pytest
import tensorflow as tf

from tfnlp.models import BertConfig, BertEncoder
from trainer.bert_models import build_model
from trainer.tasks.finetuning import FineTuningTask, batch_of

BATCH, LENGTH, CLASSES = 6, 8, 3


def tiny_model(kind):
    tf.keras.utils.set_random_seed(1)
    encoder = BertEncoder(BertConfig.preset("tiny", num_layers=1, vocab_size=30))
    return build_model(kind, encoder, CLASSES, dropout=0.0)


def features():
    rng = np.random.default_rng(0)
    lengths = rng.integers(3, LENGTH + 1, BATCH)
    mask = (np.arange(LENGTH)[None] < lengths[:, None]).astype("int32")
    return {"input_ids": rng.integers(5, 30, (BATCH, LENGTH)).astype("int32") * mask,
            "input_mask": mask, "segment_ids": np.zeros((BATCH, LENGTH), "int32")}


def cross_entropy(logits, labels):
    logits = np.asarray(logits, np.float64)
    shifted = logits - logits.max(-1, keepdims=True)
    log_probs = shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))
    return -np.take_along_axis(log_probs, labels[..., None], -1)[..., 0]


def targets(kind):
    rng = np.random.default_rng(1)
    if kind == "classification":
        return (rng.integers(0, CLASSES, BATCH).astype("int32"),)
    if kind == "token_classification":
        weights = (rng.random((BATCH, LENGTH)) < 0.5).astype("float32")
        weights[:, 0] = 0.0
        return rng.integers(0, CLASSES, (BATCH, LENGTH)).astype("int32"), weights
    return ({"start_logits": rng.integers(0, LENGTH, BATCH).astype("int32"),
             "end_logits": rng.integers(0, LENGTH, BATCH).astype("int32")},)


def expected_figures(kind, outputs, batch):
    """The loss and metrics computed in NumPy."""
    if kind == "classification":
        labels = batch["label"]
        return {"loss": cross_entropy(outputs, labels).mean(),
                "accuracy": (np.argmax(outputs, -1) == labels).mean()}
    if kind == "token_classification":
        labels, weights = batch["labels"], batch["label_weights"]
        return {"loss": (cross_entropy(outputs, labels) * weights).sum() / weights.sum(),
                "token_accuracy": ((np.argmax(outputs, -1) == labels) * weights).sum()
                / weights.sum()}
    start, end = batch["start_positions"], batch["end_positions"]
    start_right = np.argmax(outputs["start_logits"], -1) == start
    end_right = np.argmax(outputs["end_logits"], -1) == end
    return {"loss": 0.5 * (cross_entropy(outputs["start_logits"], start).mean()
                           + cross_entropy(outputs["end_logits"], end).mean()),
            "start_accuracy": start_right.mean(), "end_accuracy": end_right.mean(),
            "exact_match": (start_right & end_right).mean()}


@pytest.mark.parametrize("kind", ["classification", "token_classification", "span"])
def test_loss_and_metrics_match_numpy(kind):
    task = FineTuningTask(tiny_model(kind), kind)
    batch = batch_of(kind, features(), *targets(kind))
    outputs = task.forward(batch, training=False)
    numpy_outputs = tf.nest.map_structure(lambda tensor: tensor.numpy(), outputs)
    expected = expected_figures(kind, numpy_outputs, batch)
    loss = float(task.loss(batch, outputs, task.batch_totals(batch)))
    assert loss == pytest.approx(expected["loss"], rel=1e-5)
    sums = {name: float(value) for name, value in task.sums(batch, outputs).items()}
    assert sorted(sums) == sorted(task.sum_names)
    assert sums["tokens"] == batch["input_mask"].sum()
    results = task.results(sums)
    assert sorted(results) == sorted(expected)
    for name, value in expected.items():
        assert results[name] == pytest.approx(value, rel=1e-5), name
    assert set(task.step_record(sums)) == {"examples", *expected} - {"loss"}


@pytest.mark.parametrize("kind", ["classification", "token_classification", "span"])
def test_shares_of_two_replicas_add_up_to_the_global_loss(kind):
    # Each replica normalises by the global totals, as the loop gives them.
    task = FineTuningTask(tiny_model(kind), kind)
    batch = batch_of(kind, features(), *targets(kind))
    totals = task.batch_totals(batch)
    halves = [tf.nest.map_structure(lambda tensor, part=part: tensor[part], batch)
              for part in (slice(0, BATCH // 2), slice(BATCH // 2, BATCH))]
    shares = [float(task.loss(half, task.forward(half), totals)) for half in halves]
    whole = float(task.loss(batch, task.forward(batch), totals))
    assert sum(shares) == pytest.approx(whole, rel=1e-5)


def test_unknown_kind_is_refused():
    with pytest.raises(ValueError, match="kind must be one of"):
        FineTuningTask(None, "pretraining")
