"""Shared helpers of the BERT model and loss tests: the small config, a
pretraining batch and random outputs for it, random weights."""

import numpy as np

from tfnlp.models import BertConfig


def tiny_config(**overrides):
    """The small `BertConfig` of the model tests (1 layer of width 16, 2
    heads, a vocabulary of 61, 16 positions), with `overrides`."""
    fields = {
        "vocab_size": 61, "hidden_size": 16, "num_layers": 1, "num_heads": 2,
        "intermediate_size": 32, "max_position_embeddings": 16,
    }
    fields.update(overrides)
    return BertConfig(**fields)


VOCAB, LENGTH, PREDICTIONS = 61, 10, 4
LENGTHS = [10, 7, 4]


def make_batch(lengths=LENGTHS, seed=0):
    """A pretraining batch as tfnlp.data.pretraining_dataset yields it: the
    last example has fewer predictions (padded with position 0, weight 0)."""
    rng = np.random.default_rng(seed)
    batch = len(lengths)
    mask = (np.arange(LENGTH)[None] < np.asarray(lengths)[:, None]).astype("int32")
    positions = np.zeros((batch, PREDICTIONS), "int32")
    weights = np.zeros((batch, PREDICTIONS), "float32")
    for row, length in enumerate(lengths):
        count = min(PREDICTIONS, length - 2)
        positions[row, :count] = np.sort(rng.choice(np.arange(1, length - 1), count, False))
        weights[row, :count] = 1.0
    return {
        "input_ids": rng.integers(1, VOCAB, size=(batch, LENGTH)).astype("int32") * mask,
        "input_mask": mask,
        "segment_ids": (np.arange(LENGTH)[None] >= np.asarray(lengths)[:, None] // 2)
        .astype("int32") * mask,
        "masked_lm_positions": positions,
        "masked_lm_ids": rng.integers(1, VOCAB, size=(batch, PREDICTIONS)).astype("int32")
        * weights.astype("int32"),
        "masked_lm_weights": weights,
        "next_sentence_labels": rng.integers(0, 2, size=(batch, 1)).astype("int32"),
    }


def randomize_weights(model, seed=1, scale=0.3):
    rng = np.random.default_rng(seed)
    model.set_weights(
        [rng.normal(scale=scale, size=w.shape).astype("float32") for w in model.weights]
    )


def numpy_cross_entropy(labels, logits):
    logits = np.asarray(logits, np.float64)
    shifted = logits - logits.max(-1, keepdims=True)
    log_probabilities = shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))
    return -np.take_along_axis(log_probabilities, labels[..., None], -1)[..., 0]


def random_outputs(batch_size, seed=4):
    rng = np.random.default_rng(seed)
    return {
        "mlm_logits": rng.normal(size=(batch_size, PREDICTIONS, VOCAB)).astype("float32") * 3,
        "nsp_logits": rng.normal(size=(batch_size, 2)).astype("float32"),
    }
