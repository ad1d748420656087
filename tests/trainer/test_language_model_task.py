"""`trainer.tasks.language_model.LanguageModelTask`: the causal-LM loss and its figures."""

import math

import keras
import numpy as np
import pytest
import tensorflow as tf

from trainer.training_loop import TrainingTask
from trainer.tasks.language_model import LanguageModelTask

VOCABULARY = 7


class TableModel(keras.Model):
    """Logits that depend only on the current token: row `t` of a table."""

    def __init__(self, table):
        super().__init__()
        self.table = tf.constant(table, tf.float32)

    def call(self, token_ids, training=None):
        return tf.gather(self.table, token_ids)


def reference_nll(table, windows):
    """Summed next-token negative log-likelihood, in NumPy."""
    log_probs = table - np.log(np.exp(table).sum(-1, keepdims=True))
    return sum(-log_probs[window[i], window[i + 1]]
               for window in windows for i in range(len(window) - 1))


@pytest.fixture
def table():
    return np.random.default_rng(0).normal(size=(VOCABULARY, VOCABULARY)).astype("float32")


def test_the_task_follows_the_training_task_protocol(table):
    assert isinstance(LanguageModelTask(TableModel(table)), TrainingTask)


def test_loss_is_the_mean_next_token_nll_of_the_global_batch(table):
    windows = np.array([[1, 2, 3, 4], [6, 5, 4, 0]])
    task = LanguageModelTask(TableModel(table))
    batch = {"token_ids": tf.constant(windows)}
    outputs = task.forward(batch)
    assert outputs.shape == (2, 3, VOCABULARY)
    # This replica holds half the global batch's predicted tokens.
    loss = task.loss(batch, outputs, {"target_tokens": tf.constant(12.0)})
    assert float(loss) == pytest.approx(reference_nll(table, windows) / 12, rel=1e-5)


def test_the_model_reads_all_but_the_last_id_and_predicts_all_but_the_first(table):
    """Shifting the wrong way changes the loss: position i predicts i + 1."""
    windows = np.array([[1, 2, 3, 4]])
    task = LanguageModelTask(TableModel(table))
    batch = {"token_ids": tf.constant(windows)}
    sums = task.sums(batch, task.forward(batch))
    assert float(sums["nll_sum"]) == pytest.approx(reference_nll(table, windows), rel=1e-5)
    assert float(sums["target_tokens"]) == 3.0


def test_bits_per_character_use_the_characters_of_the_predicted_tokens(table):
    windows = np.array([[1, 2, 3], [3, 2, 1]])
    task = LanguageModelTask(TableModel(table))
    batch = {"token_ids": tf.constant(windows), "character_count": tf.constant([5, 7])}
    sums = {name: float(value) for name, value in task.sums(batch, task.forward(batch)).items()}
    results = task.results(sums)
    nll = reference_nll(table, windows)
    assert sums["characters"] == 12.0
    assert results["loss"] == pytest.approx(nll / 4, rel=1e-5)
    assert results["perplexity"] == pytest.approx(math.exp(nll / 4), rel=1e-5)
    assert results["bits_per_character"] == pytest.approx(nll / 12 / math.log(2), rel=1e-5)
    assert results["loss_per_character"] == pytest.approx(nll / 12, rel=1e-5)


def test_token_accuracy_counts_argmax_hits(table):
    windows = np.array([[1, 2]])
    task = LanguageModelTask(TableModel(table))
    batch = {"token_ids": tf.constant(windows)}
    sums = task.sums(batch, task.forward(batch))
    assert float(sums["correct"]) == float(np.argmax(table[1]) == 2)


def test_model_option_flags_reach_the_model_and_default_to_the_config(tmp_path):
    from trainer.tasks import language_model

    base = ["--train_data=data/*", f"--model_dir={tmp_path}", "--train_steps=10"]
    flags = language_model.parse_flags(base)
    assert language_model._gpt_arguments(flags) == {"dropout": 0.1}
    flags = language_model.parse_flags([
        *base, "--position_encoding=rotary", "--query_key_norm", "--activation=relu_squared",
        "--nozero_output_projections", "--embedding_shortcuts", "--notie_word_embeddings",
        "--logit_soft_cap=30"])
    arguments = language_model._gpt_arguments(flags)
    assert arguments == {"dropout": 0.1, "position_encoding": "rotary", "query_key_norm": True,
                         "activation": "relu_squared", "zero_output_projections": False,
                         "embedding_shortcuts": True, "tie_word_embeddings": False,
                         "logit_soft_cap": 30.0}
    model = language_model.GPTCausalLM.from_preset("tiny", **arguments)
    assert model.backbone.transformer_layers[0].self_attention.rotary is not None
    assert model.output_embedding is not None and model.backbone.shortcut_weights is not None
    for wrong in ("--activation=squared", "--logit_soft_cap=0"):
        with pytest.raises(SystemExit):
            language_model.parse_flags([*base, wrong])
