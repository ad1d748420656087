import keras
import numpy as np
import pytest

from tests.layer_test_helpers import numpy_lstm_step, to_numpy
from tests.model_test_helpers import check_model
from tests.models.seq2seq.seq2seq_batches import random_batch, teacher_forced_greedy
from tfnlp.data.translation_schema import EOS_ID
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


def make_attention_sharp(model, seed=0):
    """Sets every weight of `model` so that its attention is far from
    uniform, and so that the decoder's states before and after a step attend
    to different source tokens.

    At initial weights the encoder outputs of a tiny model are nearly equal
    and the scores nearly zero: the attention is almost uniform, and which
    decoder state attends changes the logits by about 1e-9. Here the LSTM
    gates are saturated (input and output gates open, forget gate almost
    shut, large input kernels), so each state is a pattern of about ±0.76
    set mostly by the current token, and the score weights are large.
    Luong's dot score has no weights: its scores are bounded by the LSTM
    states, so its attention is less sharp (`SHARPEST_WEIGHT`)."""
    rng = np.random.default_rng(seed)
    for variable in model.weights:
        path = variable.path
        if "/attention/" in path:
            value = rng.normal(scale=5.0, size=variable.shape)
        elif "lstm" in path or "decoder_cell" in path:
            if path.endswith("bias"):  # Keras' gate order: input, forget, cell, output.
                value = np.repeat([4.0, -4.0, 0.0, 4.0], variable.shape[0] // 4)
            elif path.endswith("recurrent_kernel"):
                value = rng.normal(scale=0.5, size=variable.shape)
            else:
                value = rng.normal(scale=3.0, size=variable.shape)
        else:
            value = rng.normal(scale=1.0 if "embeddings" in path else 0.5, size=variable.shape)
        variable.assign(value)
    if model.attention == "bahdanau_normalized":
        # The normalized score's length is its scale g, not |v_a|.
        model.attention_layer.scale.assign(20.0)
        model.attention_layer.bias.assign(np.zeros(model.attention_layer.units))


def sharp_model(attention):
    """`tiny_model` with `make_attention_sharp`'s weights, 16 units wide (the
    dot score's range grows with the width) and in float64: sharp attention
    amplifies rounding (a float32 model and its reference then differ by up
    to 1e-2), which would drown the comparison."""
    model = tiny_model(attention, hidden_dim=16, dtype="float64")
    make_attention_sharp(model)
    return model


def reference_decoder(model, inputs):
    """The decoder written out step by step in NumPy, in the order of the
    papers: input feeding and the new top state h_t attending after the
    cells for Luong; the previous top state s_{t-1} attending before the
    cells, its context read by the first cell, for Bahdanau; the final
    encoder states only for none. The encoder and the attention scores are
    the model's own layers (they have their own tests); the embedding
    lookup, the source mask and which encoder layer starts which decoder
    layer are written out here.

    Returns a dict of the `"logits"`, the `"alignments"` (zeros without
    attention) and the `"other_alignments"`: those the other paper's query
    (the new state for Bahdanau, the previous one for Luong) would give at
    the same steps."""
    embeddings = to_numpy(model.token_embedding.embeddings)
    source = inputs["encoder_token_ids"]
    mask = source != 0
    encoded = model.encoder(embeddings[source], mask=mask)
    values = to_numpy(encoded["sequence_output"])
    # Decoder layer k starts from encoder layer k's final states.
    states = [[to_numpy(h), to_numpy(c)] for h, c in encoded["final_states"]]
    output_kernel, output_bias = (to_numpy(weight) for weight in model.output_projection.weights)
    luong = model.attention is not None and model.attention.startswith("luong")
    feed = np.zeros_like(states[-1][0])

    def attend(query):
        context, weights = model.attention_layer(query, values, mask=mask)
        return to_numpy(context), to_numpy(weights)

    def attentional(context, hidden):
        kernel = to_numpy(model.attention_projection.kernel)
        return np.tanh(np.concatenate([context, hidden], -1) @ kernel)

    logits, alignments, other_alignments = [], [], []
    for token_ids in inputs["decoder_token_ids"].T:
        previous = states[-1][0]
        x = embeddings[token_ids]
        if luong:
            x = np.concatenate([x, feed], -1)
        elif model.attention:
            context, alignment = attend(previous)
            x = np.concatenate([x, context], -1)
        for index, cell in enumerate(model.decoder_cells):
            states[index] = list(numpy_lstm_step(cell, x, *states[index]))
            x = states[index][0]
        if luong:
            context, alignment = attend(x)
            other_alignments.append(attend(previous)[1])
            x = feed = attentional(context, x)
        elif model.attention:
            other_alignments.append(attend(x)[1])
            x = attentional(context, x)
        else:
            alignment = np.zeros(source.shape)
            other_alignments.append(alignment)
        alignments.append(alignment)
        logits.append(x @ output_kernel + output_bias)
    return {"logits": np.stack(logits, axis=1), "alignments": np.stack(alignments, axis=1),
            "other_alignments": np.stack(other_alignments, axis=1)}


# The weight that most rows of make_attention_sharp's alignments put on one
# source token: Luong's dot score has no weights to make it sharper.
SHARPEST_WEIGHT = {"luong_dot": 0.4, "luong_general": 0.9, "luong_concat": 0.9,
                   "bahdanau": 0.9, "bahdanau_normalized": 0.9}


@pytest.mark.parametrize("attention", VARIANTS, ids=str)
def test_logits_follow_each_papers_step_order(attention):
    model = sharp_model(attention)
    inputs = batch()
    expected = reference_decoder(model, inputs)
    # Measured: 2.4e-7 (the logits are cast to float32).
    np.testing.assert_allclose(to_numpy(model(inputs)), expected["logits"], atol=2e-6, rtol=0)
    if attention is None:
        return
    # Each paper's query: Bahdanau's step t attends with the state of step
    # t - 1, Luong's with the state step t computed. Measured: 2.9e-13.
    alignments = to_numpy(model.alignments(inputs))
    np.testing.assert_allclose(alignments, expected["alignments"], atol=3e-12, rtol=0)
    # The comparison can see the order: the attention is far from uniform
    # (in the examples of more than one source token) ...
    several_tokens = alignments[:2]
    assert (several_tokens.max(-1) > SHARPEST_WEIGHT[attention]).mean() > 0.7
    # ... and the other paper's query attends elsewhere.
    moved = np.abs(expected["other_alignments"] - expected["alignments"]).max(-1)[:2]
    assert (moved > 0.3).sum() >= 3


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
    # The logits are an affine map of the dropped-out attentional state, by
    # a (hidden_dim, vocabulary) kernel of full rank: solving for that state
    # shows which of its features each step's mask dropped (measured: the
    # dropped ones below 1e-9, the kept ones above 4e-5).
    kernel, bias = (to_numpy(weight).astype("float64")
                    for weight in model.output_projection.weights)
    states = np.linalg.lstsq(kernel.T, (trained - bias).reshape(-1, VOCABULARY).T, rcond=None)[0]
    dropped = np.abs(states.T.reshape(trained.shape[:2] + (-1,))) < 1e-7
    assert 0.3 < dropped.mean() < 0.7
    # One mask per step: no example keeps one pattern at all its steps.
    for example in dropped:
        assert (example != example[0]).any()


# Each score compiles under XLA in the attention layers' shared checks; here
# the decoder loop of each kind: no attention, Luong's (the state after the
# step attends) and Bahdanau's (the state before).
@pytest.mark.parametrize("attention", [None, "luong_concat", "bahdanau_normalized"])
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


@pytest.mark.parametrize("attention, bidirectional", [
    ("luong_concat", True), ("bahdanau_normalized", False)])
def test_model_checks_config_keras_archive_and_jax(attention, bidirectional, tmp_path):
    check_model(tiny_model(attention, bidirectional=bidirectional), batch(), tmp_path, jax=True)


def test_greedy_generation_equals_greedy_choices_of_teacher_forced_passes():
    model = tiny_model("luong_concat")
    sources = batch()["encoder_token_ids"]
    result = model.generate(sources, GreedySearch(), max_length=6)
    np.testing.assert_array_equal(to_numpy(result["ids"])[:, 0],
                                  teacher_forced_greedy(model, sources, 6))


def test_greedy_and_beam_decoding_give_a_sentence_the_same_output_alone_or_in_a_batch():
    model = tiny_model("bahdanau")
    sources = batch()["encoder_token_ids"]
    for decoder in (GreedySearch(), BeamSearch(beam_size=3)):
        together = model.generate(sources, decoder, max_length=8)
        alone = model.generate(sources[1:2, :4], decoder, max_length=8)
        np.testing.assert_array_equal(to_numpy(together["ids"])[1:2], to_numpy(alone["ids"]))
        np.testing.assert_allclose(to_numpy(together["scores"])[1:2],
                                   to_numpy(alone["scores"]), atol=1e-5)


@pytest.mark.parametrize("max_length_a, max_length_b, max_length, expected", [
    # ceil(1.5 * 5) + 1, 1.5 * 2 + 1 and 1.5 * 0 + 1 tokens.
    pytest.param(1.5, 1, 10, [9, 4, 1], id="rounded_up"),
    # ceil(0.5 * 5) + 2 = 5 capped at max_length, 0.5 * 2 + 2, 0.5 * 0 + 2.
    pytest.param(0.5, 2, 4, [4, 3, 2], id="capped_at_max_length"),
    # A bound of 0 still generates one token.
    pytest.param(0.0, 0, 4, [1, 1, 1], id="a_0_b_0"),
])
def test_each_translation_reaches_its_length_bound_a_source_length_plus_b_and_stops(
        max_length_a, max_length_b, max_length, expected):
    """fairseq's --max-len-a/b: at most ceil(a * source length + b) tokens,
    the source length without its EOS; here the sources have 5, 2 and 0
    tokens and EOS can never win, so each translation runs to its bound."""
    model = tiny_model("luong_general")
    bias = to_numpy(model.output_projection.bias).copy()
    bias[EOS_ID] = -1e4
    model.output_projection.bias.assign(bias)
    result = model.generate(batch()["encoder_token_ids"], GreedySearch(), max_length,
                            max_length_a, max_length_b)
    lengths = to_numpy(result["lengths"])[:, 0]
    ids = to_numpy(result["ids"])[:, 0]
    assert lengths.tolist() == expected
    assert ids.shape == (3, max_length)
    assert ((ids != 0) == (np.arange(max_length) < lengths[:, None])).all()


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
