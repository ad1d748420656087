import keras
import numpy as np
import pytest

from tests.layer_test_helpers import to_numpy
from tests.model_test_helpers import check_model
from tests.models.seq2seq.seq2seq_batches import random_batch
from tfnlp.decoding import BeamSearch, GreedySearch, RandomSampling
from tfnlp.models import RNNSeq2Seq
from tfnlp.models.seq2seq import ATTENTIONS

VOCABULARY = 53
VARIANTS = [None, *ATTENTIONS]


def tiny_model(attention="luong_general", **overrides):
    arguments = dict(vocabulary_size=VOCABULARY, attention=attention, embedding_dim=6,
                     hidden_dim=8, num_layers=2, dropout=0.0)
    arguments.update(overrides)
    keras.utils.set_random_seed(5)
    return RNNSeq2Seq(**arguments)


def batch(**arguments):
    return random_batch(VOCABULARY, **arguments)


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def lstm_step(cell, x, hidden, memory_cell):
    """Keras' LSTM cell equations (gates i, f, c, o), in NumPy."""
    kernel, recurrent_kernel, bias = (to_numpy(weight) for weight in cell.weights)
    z = x @ kernel + hidden @ recurrent_kernel + bias
    i, f, c, o = np.split(z, 4, axis=-1)
    memory_cell = sigmoid(f) * memory_cell + sigmoid(i) * np.tanh(c)
    return sigmoid(o) * np.tanh(memory_cell), memory_cell


def reference_logits(model, inputs):
    """The decoder written out step by step in NumPy, in the order of the
    papers: input feeding for Luong, attention from the previous state
    before the cell for Bahdanau, the final encoder states only for none.
    The encoder and the attention scores are the model's own layers (they
    have their own tests)."""
    memory = model.encode(inputs["encoder_token_ids"])
    values, mask = to_numpy(memory["values"]), to_numpy(memory["mask"])
    states = [[to_numpy(h), to_numpy(c)] for h, c in memory["states"]]
    embeddings = to_numpy(model.token_embedding.embeddings)
    output_kernel, output_bias = (to_numpy(weight) for weight in model.output_projection.weights)
    feed = np.zeros_like(states[-1][0])

    def attend(query):
        context, weights = model.attention_layer(query, values, mask=mask)
        return to_numpy(context), to_numpy(weights)

    def attentional(context, hidden):
        kernel = to_numpy(model.attention_projection.kernel)
        return np.tanh(np.concatenate([context, hidden], -1) @ kernel)

    logits = []
    for token_ids in inputs["decoder_token_ids"].T:
        x = embeddings[token_ids]
        if model.attention and model.attention.startswith("luong"):
            x = np.concatenate([x, feed], -1)
        elif model.attention:
            context, _ = attend(states[-1][0])
            x = np.concatenate([x, context], -1)
        for index, cell in enumerate(model.decoder_cells):
            states[index] = list(lstm_step(cell, x, *states[index]))
            x = states[index][0]
        if model.attention and model.attention.startswith("luong"):
            context, _ = attend(x)
            x = feed = attentional(context, x)
        elif model.attention:
            x = attentional(context, x)
        logits.append(x @ output_kernel + output_bias)
    return np.stack(logits, axis=1)


@pytest.mark.parametrize("attention", VARIANTS, ids=str)
def test_logits_follow_each_papers_step_order(attention):
    model = tiny_model(attention)
    inputs = batch()
    np.testing.assert_allclose(to_numpy(model(inputs)), reference_logits(model, inputs),
                               atol=2e-5, rtol=1e-4)


@pytest.mark.parametrize("attention", VARIANTS, ids=str)
def test_cached_decode_steps_equal_the_teacher_forced_pass(attention):
    model = tiny_model(attention, bidirectional=attention != "bahdanau")
    inputs = batch()
    expected_logits = to_numpy(model(inputs))
    expected_alignments = to_numpy(model.alignments(inputs))
    cache = model.initial_cache(inputs["encoder_token_ids"], max_length=9)
    steps = []
    target_length = inputs["decoder_token_ids"].shape[1]
    for index in range(target_length):
        logits, cache = model.decode_step(inputs["decoder_token_ids"][:, index], cache, index)
        steps.append(to_numpy(logits))
    np.testing.assert_allclose(np.stack(steps, axis=1), expected_logits, atol=1e-5, rtol=1e-4)
    alignments = to_numpy(cache["alignments"])
    np.testing.assert_allclose(alignments[:, :target_length], expected_alignments, atol=1e-6)
    assert not alignments[:, target_length:].any()


@pytest.mark.parametrize("attention", ATTENTIONS)
def test_alignments_are_distributions_over_the_real_source_tokens(attention):
    model = tiny_model(attention)
    inputs = batch()
    alignments = to_numpy(model.alignments(inputs))
    source_mask = inputs["encoder_token_ids"] != 0
    assert alignments.shape == (3, 7, 7)
    np.testing.assert_allclose(alignments.sum(-1), 1.0, atol=1e-5)
    assert not (alignments * ~source_mask[:, None, :]).any()


def test_without_attention_the_alignments_are_zeros():
    assert not to_numpy(tiny_model(None).alignments(batch())).any()


@pytest.mark.parametrize("attention", ["luong_dot", "bahdanau_normalized"])
def test_source_padding_and_batch_neighbours_do_not_change_a_sentence(attention):
    model = tiny_model(attention)
    inputs = batch()
    alone = {"encoder_token_ids": inputs["encoder_token_ids"][1:2, :4],
             "decoder_token_ids": inputs["decoder_token_ids"][1:2]}
    np.testing.assert_allclose(to_numpy(model(inputs))[1:2], to_numpy(model(alone)), atol=1e-5)


def test_dropout_acts_in_training_only_and_differs_per_step():
    model = tiny_model("luong_concat", dropout=0.5)
    inputs = batch()
    np.testing.assert_array_equal(to_numpy(model(inputs)), to_numpy(model(inputs)))
    trained = to_numpy(model(inputs, training=True))
    assert np.abs(trained - to_numpy(model(inputs))).max() > 1e-3
    assert not np.allclose(trained, to_numpy(model(inputs, training=True)))


@pytest.mark.parametrize("attention", VARIANTS)
def test_trains_under_xla_in_a_graph_of_unknown_lengths_with_dropout(attention):
    """The trainer's step is traced with batch and lengths unknown, and
    compiled with XLA under --jit_compile."""
    import tensorflow as tf

    model = tiny_model(attention, dropout=0.3)
    inputs = batch()
    spec = tf.TensorSpec((None, None), tf.int32)

    @tf.function(input_signature=[{name: spec for name in inputs}], jit_compile=True)
    def gradient_norm(graph_inputs):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(model(graph_inputs, training=True)))
        return tf.linalg.global_norm(tape.gradient(loss, model.trainable_variables))

    norm = gradient_norm({name: tf.constant(value, tf.int32) for name, value in inputs.items()})
    assert np.isfinite(norm.numpy()) and norm.numpy() > 0


@pytest.mark.parametrize("attention", ["luong_concat", "bahdanau_normalized"])
def test_model_checks_config_keras_archive_and_jax(attention, tmp_path):
    check_model(tiny_model(attention), batch(), tmp_path, jax=True)


def test_greedy_and_beam_decoding_give_a_sentence_the_same_output_alone_or_in_a_batch():
    model = tiny_model("bahdanau")
    sources = batch()["encoder_token_ids"]
    for decoder in (GreedySearch(), BeamSearch(beam_size=3)):
        together = model.generate(sources, decoder, max_length=8)
        alone = model.generate(sources[1:2, :4], decoder, max_length=8)
        np.testing.assert_array_equal(to_numpy(together["ids"])[1:2], to_numpy(alone["ids"]))
        np.testing.assert_allclose(to_numpy(together["scores"])[1:2],
                                   to_numpy(alone["scores"]), atol=1e-5)



def test_sampling_with_top_k_1_is_greedy_and_a_seed_repeats_the_samples():
    model = tiny_model("luong_dot")
    sources = batch()["encoder_token_ids"]
    greedy = model.generate(sources, GreedySearch(), max_length=8)
    top_1 = model.generate(sources, RandomSampling(top_k=1, seed=3), max_length=8)
    np.testing.assert_array_equal(to_numpy(top_1["ids"]), to_numpy(greedy["ids"]))
    samples = [to_numpy(model.generate(sources, RandomSampling(seed=3, num_return_sequences=2),
                                       max_length=8)["ids"]) for _ in range(2)]
    assert samples[0].shape == (len(sources), 2, 8)
    np.testing.assert_array_equal(samples[0], samples[1])


def test_bad_arguments_say_what_to_give():
    with pytest.raises(ValueError, match="attention must be None or one of luong_dot"):
        RNNSeq2Seq(VOCABULARY, attention="luong")
    with pytest.raises(ValueError, match="must be even with bidirectional=True"):
        RNNSeq2Seq(VOCABULARY, hidden_dim=7)
    assert RNNSeq2Seq(VOCABULARY, attention="none", hidden_dim=8, embedding_dim=4,
                      num_layers=1).attention is None


def test_presets_and_their_overrides():
    model = RNNSeq2Seq.from_preset("small", vocabulary_size=100, attention="bahdanau")
    assert (model.embedding_dim, model.hidden_dim, model.num_layers, model.attention) == (
        256, 256, 2, "bahdanau")
    with pytest.raises(ValueError, match="presets are"):
        RNNSeq2Seq.from_preset("huge", vocabulary_size=100)
