"""BertPretrainingModel and its Hugging Face heads (the losses are tested in
tests/losses).

The heads are checked against a plain-numpy reference (written here, on top
of `tests/models/bert/numpy_bert_reference.py`'s encoder) on a synthetic
Hugging Face checkpoint with `cls.*` tensors, and against keras-hub's
`MaskedLMHead` computed on every position.
"""

import os
import subprocess
import sys

import keras
import keras_hub
import numpy as np
import pytest
import tensorflow as tf

from tests.conftest import REPOSITORY
from tests.layer_test_helpers import assert_allclose_nested, to_numpy
from tests.model_test_helpers import check_model
from tests.models.bert.helpers import (
    LENGTH,
    PREDICTIONS,
    VOCAB,
    make_batch,
    numpy_cross_entropy,
    random_outputs,
    randomize_weights,
    tiny_config,
)
from tests.models.bert.numpy_bert_reference import ACTIVATIONS, bert_forward, layer_norm
from tests.models.bert.test_huggingface import random_head_tensors, with_naming, write_checkpoint
from tfnlp.data import pretraining_schema
from tfnlp.data.pretraining_reader import pretraining_dataset
from tfnlp.models import (
    BertEncoder,
    BertPretrainingModel,
    gather_positions,
    pretraining_loss,
)
from tfnlp.models.bert.huggingface import (
    encoder_tensors_from_encoder,
    huggingface_config_dict,
    huggingface_head_tensors_from_model,
    load_huggingface_head_weights,
)

@pytest.fixture(scope="module")
def model():
    pretraining_model = BertPretrainingModel(BertEncoder(tiny_config()))
    randomize_weights(pretraining_model)
    return pretraining_model


# --- Outputs -----------------------------------------------------------------


def test_outputs_are_float32_logits_at_the_masked_positions(model):
    batch = make_batch()
    outputs = model(batch)
    assert set(outputs) == {"mlm_logits", "nsp_logits"}
    assert tuple(outputs["mlm_logits"].shape) == (3, PREDICTIONS, VOCAB)
    assert tuple(outputs["nsp_logits"].shape) == (3, 2)
    for logits in outputs.values():
        assert keras.backend.standardize_dtype(logits.dtype) == "float32"
    # The labels in the batch are ignored; the encoder inputs alone suffice.
    features = {
        key: batch[key]
        for key in ("input_ids", "input_mask", "segment_ids", "masked_lm_positions")
    }
    assert_allclose_nested(model(features), outputs)


def test_heads_are_the_documented_layers(model):
    config = model.config
    assert model.encoder.config is config
    assert tuple(model.masked_lm_dense.kernel.shape) == (16, 16)
    assert model.masked_lm_layer_norm.epsilon == config.layer_norm_epsilon
    assert tuple(model.masked_lm_bias.shape) == (VOCAB,)
    assert tuple(model.next_sentence_dense.kernel.shape) == (16, 2)
    # The output projection is the token embedding matrix itself: no
    # separate vocabulary kernel exists.
    assert len(model.weights) == len(model.encoder.weights) + 7
    assert not any(
        tuple(w.shape) == (16, VOCAB) for w in model.weights
    ), "a vocabulary kernel that is not tied to the embeddings"


def test_gather_positions_matches_numpy_indexing():
    rng = np.random.default_rng(3)
    sequence = rng.normal(size=(3, 6, 5)).astype("float32")
    positions = rng.integers(0, 6, size=(3, 4)).astype("int32")
    expected = sequence[np.arange(3)[:, None], positions]
    np.testing.assert_array_equal(to_numpy(gather_positions(sequence, positions)), expected)


def test_gathering_first_equals_the_head_on_every_position_then_gathering(model):
    batch = make_batch()
    ours = to_numpy(model(batch)["mlm_logits"])
    every_position = np.tile(np.arange(LENGTH, dtype="int32"), (3, 1))
    all_logits = to_numpy(model(dict(batch, masked_lm_positions=every_position))["mlm_logits"])
    gathered = np.take_along_axis(all_logits, batch["masked_lm_positions"][..., None], axis=1)
    np.testing.assert_allclose(ours, gathered, atol=1e-5, rtol=1e-5)

    # keras-hub's MaskedLMHead with the same weights, tied to the same
    # embeddings, on every position, then gathered.
    config = model.config
    embedding = keras_hub.layers.ReversibleEmbedding(VOCAB, config.hidden_size)
    embedding.build()
    embedding.embeddings.assign(model.encoder.token_embedding.embeddings)
    head = keras_hub.layers.MaskedLMHead(
        token_embedding=embedding,
        intermediate_activation="gelu",  # keras' "gelu" is the exact one
        layer_norm_epsilon=config.layer_norm_epsilon,
    )
    sequence_output = model.encoder(
        {key: batch[key] for key in ("input_ids", "input_mask", "segment_ids")}
    )["sequence_output"]
    head(sequence_output, every_position)
    head._intermediate_dense.set_weights(model.masked_lm_dense.get_weights())
    head._intermediate_layer_norm.set_weights(model.masked_lm_layer_norm.get_weights())
    head._bias.assign(model.masked_lm_bias)
    keras_hub_logits = to_numpy(head(sequence_output, every_position))
    expected = np.take_along_axis(
        keras_hub_logits, batch["masked_lm_positions"][..., None], axis=1
    )
    np.testing.assert_allclose(ours, expected, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("num_layers", [1, 3])
def test_last_layer_on_the_read_rows_equals_the_full_encoder(num_layers):
    # The model runs the encoder's last block only at [CLS] and the masked
    # positions; the logits must equal the heads on the full encoder's
    # outputs.
    pretraining_model = BertPretrainingModel(
        BertEncoder(tiny_config(num_layers=num_layers))
    )
    randomize_weights(pretraining_model, seed=num_layers)
    batch = make_batch()
    outputs = pretraining_model(batch, training=False)
    encoder_outputs = pretraining_model.encoder(
        {key: batch[key] for key in ("input_ids", "input_mask", "segment_ids")},
        training=False,
    )
    hidden = gather_positions(
        encoder_outputs["sequence_output"], batch["masked_lm_positions"]
    )
    np.testing.assert_allclose(
        to_numpy(outputs["mlm_logits"]),
        to_numpy(pretraining_model._masked_lm_logits(hidden)),
        atol=1e-5, rtol=1e-5,
    )
    np.testing.assert_allclose(
        to_numpy(outputs["nsp_logits"]),
        to_numpy(pretraining_model.next_sentence_dense(encoder_outputs["pooled_output"])),
        atol=1e-5, rtol=1e-5,
    )


def test_mixed_precision_gives_float32_logits():
    encoder = BertEncoder(tiny_config(), dtype="mixed_bfloat16")
    model = BertPretrainingModel(encoder)
    assert model.dtype_policy.name == "mixed_bfloat16"
    assert model.masked_lm_dense.dtype_policy.name == "mixed_bfloat16"
    assert model.masked_lm_bias.dtype == "float32"
    outputs = model(make_batch())
    for logits in outputs.values():
        assert keras.backend.standardize_dtype(logits.dtype) == "float32"
        assert np.all(np.isfinite(to_numpy(logits)))


def test_every_variable_gets_a_gradient(model):
    # Through the tied projection, the token embeddings get gradients from
    # the masked-LM head as well as from the inputs.
    batch = {key: tf.constant(value) for key, value in make_batch().items()}
    with tf.GradientTape() as tape:
        losses = pretraining_loss(batch, model(batch))
    gradients = tape.gradient(losses["loss"], model.trainable_variables)
    for variable, gradient in zip(model.trainable_variables, gradients):
        assert gradient is not None, variable.path
        gradient = tf.convert_to_tensor(gradient).numpy()
        assert np.all(np.isfinite(gradient)) and np.any(gradient != 0), variable.path


def test_compiles_with_xla(model):
    batch = {key: tf.constant(value) for key, value in make_batch().items()}
    compiled = tf.function(model, jit_compile=True)
    assert_allclose_nested(compiled(batch), model(batch), atol=1e-4, rtol=1e-4)


# --- Serialization -------------------------------------------------------------


def test_config_round_trip_nests_the_encoder(model):
    config = model.get_config()
    assert config["encoder"]["registered_name"] == "tfnlp>BertEncoder"
    assert BertPretrainingModel.from_config(config).config == model.config


def test_shared_model_checks_and_jax_give_the_outputs_of_tensorflow(model, tmp_path):
    check_model(model, make_batch(), tmp_path, jax=True, atol=1e-4)


def test_a_wrong_encoder_or_batch_is_explained(model):
    with pytest.raises(ValueError, match="must be a tfnlp.models.BertEncoder"):
        BertPretrainingModel(keras_hub.models.BertBackbone(
            vocabulary_size=10, num_layers=1, num_heads=1, hidden_dim=4,
            intermediate_dim=8,
        ))
    batch = make_batch()
    del batch["masked_lm_positions"]
    with pytest.raises(ValueError, match="no 'masked_lm_positions'"):
        model(batch)


# --- compile() + fit() ------------------------------------------------------------


def write_pretraining_records(path, count=8, seed=0):
    rng = np.random.default_rng(seed)
    with tf.io.TFRecordWriter(str(path)) as writer:
        for _ in range(count):
            length = int(rng.integers(5, LENGTH + 1))
            ids = [2] + rng.integers(5, VOCAB, size=length - 2).tolist() + [3]
            count_masked = int(rng.integers(1, min(PREDICTIONS, length - 2) + 1))
            positions = sorted(rng.choice(np.arange(1, length - 1), count_masked, False))
            writer.write(pretraining_schema.serialize_instance(
                ids, [0] * length, [int(p) for p in positions],
                [ids[p] for p in positions], bool(rng.integers(0, 2)),
                LENGTH, PREDICTIONS,
            ))


def test_compile_and_fit_on_a_pretraining_dataset(tmp_path):
    write_pretraining_records(tmp_path / "shard.tfrecord")
    dataset = pretraining_dataset(
        str(tmp_path / "*.tfrecord"), batch_size=4, max_seq_length=LENGTH,
        max_predictions_per_seq=PREDICTIONS, shuffle=False,
    )
    model = BertPretrainingModel(BertEncoder(tiny_config()))
    # Eager training: tracing a train step costs more than two steps.
    model.compile(optimizer=keras.optimizers.Adam(1e-3), run_eagerly=True)
    history = model.fit(dataset, epochs=1, verbose=0)
    assert set(history.history) == {
        "loss", "masked_lm_accuracy", "masked_lm_perplexity", "next_sentence_accuracy",
    }
    assert np.all(np.isfinite(history.history["loss"]))

    # evaluate() reports the mean of pretraining_loss over the (equal)
    # batches, and the metrics over all of them.
    batches = list(dataset.as_numpy_iterator())
    losses, correct, cross_entropy, weight, nsp_correct = [], 0.0, 0.0, 0.0, 0.0
    for batch in batches:
        outputs = {key: to_numpy(value) for key, value in model(batch).items()}
        losses.append(float(pretraining_loss(batch, outputs)["loss"]))
        weights = batch["masked_lm_weights"]
        correct += ((outputs["mlm_logits"].argmax(-1) == batch["masked_lm_ids"]) * weights).sum()
        cross_entropy += (numpy_cross_entropy(batch["masked_lm_ids"], outputs["mlm_logits"])
                          * weights).sum()
        weight += weights.sum()
        nsp_correct += (outputs["nsp_logits"].argmax(-1)
                        == batch["next_sentence_labels"][:, 0]).sum()
    expected = {
        "masked_lm_accuracy": correct / weight,
        "masked_lm_perplexity": np.exp(cross_entropy / weight),
        "next_sentence_accuracy": nsp_correct / (4 * len(batches)),
    }
    model.compile(optimizer=keras.optimizers.Adam(1e-3))  # graph mode
    # The dataset's cardinality is unknown, so Keras runs one more step,
    # which fails on the exhausted iterator; the metrics must not count it
    # (Keras' own loss tracker does: it counts a batch of 4 there, whence
    # `steps` for the loss).
    results = model.evaluate(dataset, return_dict=True, verbose=0)
    for name, value in expected.items():
        np.testing.assert_allclose(results[name], value, rtol=1e-4, err_msg=name)
    results = model.evaluate(dataset, steps=len(batches), return_dict=True, verbose=0)
    np.testing.assert_allclose(results["loss"], np.mean(losses), rtol=1e-5)

    # Labels in a separate dict `y` work too.
    labels = {
        key: batches[0][key]
        for key in ("masked_lm_ids", "masked_lm_weights", "next_sentence_labels")
    }
    np.testing.assert_allclose(
        float(model.compute_loss(x=batches[0], y=labels, y_pred=model(batches[0]))),
        losses[0], rtol=1e-5,
    )


def test_fit_without_labels_is_explained(model):
    batch = make_batch()
    features = {
        key: batch[key]
        for key in ("input_ids", "input_mask", "segment_ids", "masked_lm_positions")
    }
    with pytest.raises(ValueError, match="needs the labels masked_lm_ids"):
        model.compute_loss(x=features, y=None, y_pred=model(features))


# --- Hugging Face ------------------------------------------------------------------


def numpy_pretraining_heads(tensors, hf_config, batch):
    """The numpy BERT (tests/models/bert/numpy_bert_reference.py) plus its
    pretraining heads, from Hugging Face tensors, in float64."""
    weights = {name: np.asarray(t, np.float64) for name, t in tensors.items()}
    encoded = bert_forward(
        tensors, hf_config,
        batch["input_ids"], batch["input_mask"], batch["segment_ids"],
    )
    positions = batch["masked_lm_positions"]
    hidden = encoded["sequence_output"][np.arange(len(positions))[:, None], positions]
    hidden = hidden @ weights["cls.predictions.transform.dense.weight"].T
    hidden = hidden + weights["cls.predictions.transform.dense.bias"]
    hidden = ACTIVATIONS[hf_config["hidden_act"]](hidden)
    hidden = layer_norm(
        hidden, weights["cls.predictions.transform.LayerNorm.weight"],
        weights["cls.predictions.transform.LayerNorm.bias"], hf_config["layer_norm_eps"],
    )
    mlm_logits = (
        hidden @ weights["embeddings.word_embeddings.weight"].T
        + weights["cls.predictions.bias"]
    )
    nsp_logits = (
        encoded["pooled_output"] @ weights["cls.seq_relationship.weight"].T
        + weights["cls.seq_relationship.bias"]
    )
    return {"mlm_logits": mlm_logits, "nsp_logits": nsp_logits}


def random_checkpoint_tensors(config, seed=0):
    """Canonical encoder and head tensors of a random model (tied decoder)."""
    rng = np.random.default_rng(seed)
    encoder = BertEncoder(config)
    encoder.set_weights(
        [rng.normal(scale=0.5, size=w.shape).astype("float32") for w in encoder.weights]
    )
    tensors = encoder_tensors_from_encoder(encoder)
    heads = random_head_tensors(config, rng)
    heads["cls.predictions.decoder.weight"] = tensors["embeddings.word_embeddings.weight"]
    return tensors, heads


@pytest.mark.parametrize(
    "prefix, layer_norm_names, activation, decoder",
    [
        ("bert.", "weight_bias", "gelu", "weight_and_bias"),
        ("", "gamma_beta", "gelu_approximate", "absent"),
    ],
)
def test_huggingface_heads_match_numpy(tmp_path, prefix, layer_norm_names, activation, decoder):
    config = tiny_config(num_layers=2, hidden_activation=activation)
    tensors, heads = random_checkpoint_tensors(config)
    stored_heads = dict(heads)
    if decoder == "absent":
        del stored_heads["cls.predictions.decoder.weight"]
    else:  # Hugging Face's alias of the output bias
        stored_heads["cls.predictions.decoder.bias"] = heads["cls.predictions.bias"]
    stored = with_naming({**tensors, **stored_heads}, prefix, layer_norm_names)
    path = write_checkpoint(tmp_path / "checkpoint", config, stored)

    model = BertPretrainingModel.from_huggingface(path)
    assert model.config == config
    batch = make_batch()
    outputs = model(batch)
    expected = numpy_pretraining_heads(
        {**tensors, **heads}, huggingface_config_dict(config), batch
    )
    for name in ("mlm_logits", "nsp_logits"):
        difference = np.abs(to_numpy(outputs[name]) - expected[name]).max()
        print(f"{name}: max abs difference {difference:.2e}")
        assert difference < 1e-4, name
    # And back: the model's heads are the checkpoint's.
    written = huggingface_head_tensors_from_model(model)
    for name, tensor in written.items():
        np.testing.assert_allclose(tensor, heads[name], rtol=1e-6, atol=1e-6)


def test_missing_heads_stay_fresh_and_bad_heads_are_rejected(tmp_path):
    config = tiny_config()
    tensors, heads = random_checkpoint_tensors(config)
    masked_lm_only = {k: v for k, v in heads.items() if not k.startswith("cls.seq_")}
    path = write_checkpoint(tmp_path / "masked_lm_only", config, {**tensors, **masked_lm_only})
    model = BertPretrainingModel.from_huggingface(path)
    np.testing.assert_array_equal(to_numpy(model.masked_lm_bias), heads["cls.predictions.bias"])
    # The next-sentence head keeps its initialization (a truncated normal).
    kernel = to_numpy(model.next_sentence_dense.kernel)
    assert np.abs(kernel).max() <= 2 * config.initializer_range + 1e-6

    assert load_huggingface_head_weights(model, {}) == []
    assert load_huggingface_head_weights(model, heads) == ["masked_lm", "next_sentence"]

    untied = dict(heads)
    untied["cls.predictions.decoder.weight"] = heads["cls.predictions.decoder.weight"] + 1.0
    with pytest.raises(ValueError, match="differs from the word embeddings"):
        load_huggingface_head_weights(model, untied)
    incomplete = dict(heads)
    del incomplete["cls.seq_relationship.bias"]
    with pytest.raises(ValueError, match="incomplete next_sentence head: it lacks "
                       "cls.seq_relationship.bias"):
        load_huggingface_head_weights(model, incomplete)
    with pytest.raises(ValueError, match="does not have: cls.predictions.extra"):
        load_huggingface_head_weights(model, {**heads, "cls.predictions.extra": np.zeros(1)})
    wrong_shape = dict(heads, **{"cls.predictions.bias": np.zeros(VOCAB + 1, "float32")})
    with pytest.raises(ValueError, match=r"'cls.predictions.bias' has shape \(62,\)"):
        load_huggingface_head_weights(model, wrong_shape)
    conflicting = dict(heads, **{"cls.predictions.decoder.bias": np.zeros(VOCAB, "float32")})
    with pytest.raises(ValueError, match="one tied parameter"):
        load_huggingface_head_weights(model, conflicting)


# --- Other backends and tf.distribute -------------------------------------------------

# Two logical CPUs under a MirroredStrategy, on the batch, logits and config
# saved in argv[1] and argv[2]: (1) the metrics updated in `strategy.run`,
# (2) the per-replica losses with the global divisors, SUM-reduced, and
# (3) `evaluate()` of a model built in the strategy's scope (the same
# compute_loss and compute_metrics as fit; eagerly, as tracing costs more
# than one step), with its logits on the whole batch outside the strategy;
# all saved to argv[3].
_MIRRORED_SCRIPT = """
import sys, numpy as np, tensorflow as tf
cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(
    cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
from tfnlp.metrics import MaskedLMAccuracy, MaskedLMPerplexity, NextSentenceAccuracy
from tfnlp.models import BertConfig, BertEncoder, BertPretrainingModel, pretraining_loss

strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
assert strategy.num_replicas_in_sync == 2
saved = np.load(sys.argv[1])
data = {name: saved[name] for name in saved.files}
batch_size = len(data["input_ids"])
with strategy.scope():
    metrics = [MaskedLMAccuracy(), MaskedLMPerplexity(), NextSentenceAccuracy()]

@tf.function
def step(values):
    def replica_step(values):
        for metric in metrics[:2]:
            metric.update_state(values["masked_lm_ids"], values["mlm_logits"],
                                values["masked_lm_weights"])
        metrics[2].update_state(values["next_sentence_labels"], values["nsp_logits"])
        context = tf.distribute.get_replica_context()
        global_weight = context.all_reduce("sum", tf.reduce_sum(values["masked_lm_weights"]))
        return pretraining_loss(values, values, global_batch_size=batch_size,
                                masked_lm_denominator=global_weight)["loss"]
    return strategy.reduce("sum", strategy.run(replica_step, args=(values,)), axis=None)

dataset = tf.data.Dataset.from_tensors(data)
loss = step(next(iter(strategy.experimental_distribute_dataset(dataset))))
results = {"distributed_loss": loss.numpy()}
results.update({metric.name: metric.result().numpy() for metric in metrics})

with strategy.scope():
    model = BertPretrainingModel(BertEncoder(BertConfig.from_json(sys.argv[2])))
    model.compile(optimizer="sgd", run_eagerly=True)
features = tf.data.Dataset.from_tensor_slices(data).batch(batch_size)
evaluated = model.evaluate(features, return_dict=True, verbose=0)
results.update({f"evaluate_{name}": value for name, value in evaluated.items()})
results.update({f"model_{name}": value.numpy() for name, value in model(data).items()})
np.savez(sys.argv[3], **results)
"""


def test_losses_and_metrics_under_a_two_replica_mirrored_strategy(tmp_path):
    batch = make_batch([10, 9, 4, 3])  # replica 0: 8 predictions, replica 1: 3
    outputs = random_outputs(4)
    # Some right predictions, so that no accuracy is 0 or 1.
    rows, columns = np.nonzero((np.arange(4)[:, None] + np.arange(4)) % 3 == 0)
    outputs["mlm_logits"][rows, columns, batch["masked_lm_ids"][rows, columns]] += 20.0
    nsp_labels = batch["next_sentence_labels"][:, 0]
    right = np.array([True, True, True, False])
    outputs["nsp_logits"][np.arange(4), np.where(right, nsp_labels, 1 - nsp_labels)] += 5.0
    np.savez(tmp_path / "data.npz", **batch, **outputs)
    tiny_config().to_json(tmp_path / "config.json")
    process = subprocess.run(
        [sys.executable, "-c", _MIRRORED_SCRIPT, str(tmp_path / "data.npz"),
         str(tmp_path / "config.json"), str(tmp_path / "results.npz")],
        cwd=REPOSITORY, env=dict(os.environ, KERAS_BACKEND="tensorflow"),
        capture_output=True, text=True,
    )
    assert process.returncode == 0, process.stderr[-3000:]
    results = np.load(tmp_path / "results.npz")

    def metric_values(mlm_logits, nsp_logits):
        weights = batch["masked_lm_weights"]
        correct = (mlm_logits.argmax(-1) == batch["masked_lm_ids"]) * weights
        cross_entropy = numpy_cross_entropy(batch["masked_lm_ids"], mlm_logits) * weights
        return {
            "masked_lm_accuracy": correct.sum() / weights.sum(),
            "masked_lm_perplexity": np.exp(cross_entropy.sum() / weights.sum()),
            "next_sentence_accuracy": (nsp_logits.argmax(-1) == nsp_labels).mean(),
        }

    # (1) The metrics hold the sums over both replicas.
    expected = metric_values(outputs["mlm_logits"], outputs["nsp_logits"])
    assert 0 < expected["masked_lm_accuracy"] < 1
    assert expected["next_sentence_accuracy"] == 0.75
    for name, value in expected.items():
        np.testing.assert_allclose(results[name], value, rtol=1e-5, err_msg=name)
    # (2) Per-replica losses with global divisors add up to the global loss.
    np.testing.assert_allclose(
        results["distributed_loss"], float(pretraining_loss(batch, outputs)["loss"]),
        rtol=1e-5,
    )
    # (3) evaluate() reports the mean of the replicas' own losses (so
    # compute_loss's division by the replica count is undone exactly once)
    # and the global metrics.
    model_outputs = {"mlm_logits": results["model_mlm_logits"],
                     "nsp_logits": results["model_nsp_logits"]}
    replica_losses = [
        float(pretraining_loss(
            {key: value[part] for key, value in batch.items()},
            {key: value[part] for key, value in model_outputs.items()},
        )["loss"])
        for part in (slice(0, 2), slice(2, 4))
    ]
    np.testing.assert_allclose(results["evaluate_loss"], np.mean(replica_losses), rtol=1e-5)
    for name, value in metric_values(**model_outputs).items():
        np.testing.assert_allclose(results[f"evaluate_{name}"], value, rtol=1e-5)
