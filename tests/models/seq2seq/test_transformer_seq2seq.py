import keras
import keras_hub
import numpy as np
import pytest

from tests.layer_test_helpers import to_numpy
from tests.model_test_helpers import check_model
from tests.models.seq2seq.seq2seq_batches import random_batch, teacher_forced_greedy
from tfnlp.decoding import GreedySearch
from tfnlp.models import TransformerSeq2Seq, decoder_inputs
from tfnlp.models.seq2seq import TRANSFORMER_PRESETS

VOCABULARY = 61


def tiny_model(**overrides):
    arguments = dict(vocabulary_size=VOCABULARY, num_encoder_layers=2, num_decoder_layers=2,
                     hidden_dim=16, num_heads=2, intermediate_dim=32, dropout=0.0,
                     max_sequence_length=24)
    arguments.update(overrides)
    keras.utils.set_random_seed(3)
    return TransformerSeq2Seq(**arguments)


def batch(**arguments):
    return random_batch(VOCABULARY, **arguments)


def reference_logits(model, inputs):
    """The forward pass rebuilt from keras_hub's Transformer layers with the
    model's weights (the blocks share keras_hub's weight layout)."""
    embeddings = to_numpy(model.token_embedding.embeddings)

    def embed(ids):
        tokens = embeddings[ids] * np.sqrt(model.hidden_dim)
        return tokens + to_numpy(model.positions(tokens))

    source_mask = inputs["encoder_token_ids"] != 0
    x = embed(inputs["encoder_token_ids"])
    for block in model.encoder_blocks:
        layer = keras_hub.layers.TransformerEncoder(model.intermediate_dim, model.num_heads,
                                                    normalize_first=model.norm_first)
        layer.build(x.shape)
        layer.set_weights(block.get_weights())
        x = to_numpy(layer(x, padding_mask=source_mask))
    if model.norm_first:
        x = to_numpy(model.encoder_layer_norm(x))
    y = embed(inputs["decoder_token_ids"])
    for block in model.decoder_blocks:
        layer = keras_hub.layers.TransformerDecoder(model.intermediate_dim, model.num_heads,
                                                    normalize_first=model.norm_first)
        layer.build(y.shape, x.shape)
        layer.set_weights(block.get_weights())
        y = to_numpy(layer(y, x, encoder_padding_mask=source_mask))
    if model.norm_first:
        y = to_numpy(model.decoder_layer_norm(y))
    return y @ embeddings.T


@pytest.mark.parametrize("norm_first", [False, True], ids=["post_ln", "pre_ln"])
def test_logits_match_a_keras_hub_composition_with_tied_embeddings(norm_first):
    model = tiny_model(norm_first=norm_first)
    inputs = batch()
    np.testing.assert_allclose(to_numpy(model(inputs)), reference_logits(model, inputs),
                               atol=2e-5, rtol=1e-4)


def test_model_checks_config_keras_archive_and_jax(tmp_path):
    check_model(tiny_model(position_encoding="learned", norm_first=True), batch(),
                tmp_path, jax=True)


@pytest.mark.parametrize("overrides", [{}, {"norm_first": True, "position_encoding": "learned"}],
                         ids=["post_ln_sinusoidal", "pre_ln_learned"])
def test_cached_decode_steps_equal_the_teacher_forced_pass(overrides):
    model = tiny_model(**overrides)
    inputs = batch()
    expected = to_numpy(model(inputs))
    cache = model.initial_cache(inputs["encoder_token_ids"], max_length=10)
    steps = []
    for index in range(inputs["decoder_token_ids"].shape[1]):
        logits, cache = model.decode_step(inputs["decoder_token_ids"][:, index], cache, index)
        steps.append(to_numpy(logits))
    np.testing.assert_allclose(np.stack(steps, axis=1), expected, atol=1e-5, rtol=1e-4)


# The first teacher-forced pass has one target position: Keras warns that
# its self-attention softmax is over one key.
@pytest.mark.filterwarnings("ignore:You are using a softmax over axis -1")
def test_greedy_generation_equals_greedy_choices_of_teacher_forced_passes():
    model = tiny_model()
    sources = batch()["encoder_token_ids"]
    result = model.generate(sources, GreedySearch(), max_length=6)
    np.testing.assert_array_equal(to_numpy(result["ids"])[:, 0],
                                  teacher_forced_greedy(model, sources, 6))


def test_generation_runs_up_to_max_sequence_length_and_refuses_one_more():
    # Learned positions: the last row of the table is the last position.
    model = tiny_model(position_encoding="learned", max_sequence_length=6)
    sources = batch()["encoder_token_ids"][:, :6]
    result = model.generate(sources, GreedySearch(), max_length=6)
    assert to_numpy(result["ids"]).shape == (3, 1, 6)
    assert (to_numpy(result["lengths"]) == 6).any()  # position 5 was decoded
    with pytest.raises(ValueError, match="max_length=7 is longer than the model's "
                                         "max_sequence_length=6"):
        model.generate(sources, GreedySearch(), max_length=7)


def test_source_padding_and_batch_neighbours_do_not_change_a_sentence():
    model = tiny_model()
    inputs = batch()
    alone = {name: value[1:2, :4] for name, value in inputs.items()}
    alone["decoder_token_ids"] = inputs["decoder_token_ids"][1:2]
    np.testing.assert_allclose(to_numpy(model(inputs))[1:2], to_numpy(model(alone)),
                               atol=1e-5)


def test_target_padding_positions_do_not_reach_real_positions():
    model = tiny_model()
    inputs = batch()
    changed = {name: value.copy() for name, value in inputs.items()}
    changed["decoder_token_ids"][1, 2:] = 17  # row 1 has two real target positions
    np.testing.assert_allclose(to_numpy(model(inputs))[1, :2],
                               to_numpy(model(changed))[1, :2], atol=1e-6)


def test_output_projection_is_the_token_embedding():
    model = tiny_model()
    names = [variable.path for variable in model.trainable_variables]
    assert sum("embeddings" in name for name in names) == 1
    embeddings = to_numpy(model.token_embedding.embeddings).copy()
    # Not a constant shift: LayerNorm'd outputs sum to zero and ignore one.
    embeddings[40] += np.linspace(-1.0, 1.0, model.hidden_dim)
    # Id 40 is in no input, so only its own logit can change.
    inputs = batch()
    inputs = {name: np.where(value == 40, 41, value) for name, value in inputs.items()}
    before = to_numpy(model(inputs))
    model.token_embedding.embeddings.assign(embeddings)
    after = to_numpy(model(inputs))
    changed = np.abs(after - before).max(axis=(0, 1)) > 1e-6
    assert changed.tolist() == [index == 40 for index in range(VOCABULARY)]


def test_decoder_inputs_shift_targets_behind_bos_and_keep_padding():
    targets = np.array([[11, 12, 3, 0], [14, 3, 0, 0]])
    np.testing.assert_array_equal(to_numpy(decoder_inputs(targets)),
                                  [[2, 11, 12, 0], [2, 14, 0, 0]])


def test_presets_have_the_published_sizes():
    model = TransformerSeq2Seq.from_preset("tiny", vocabulary_size=100)
    assert (model.num_encoder_layers, model.num_decoder_layers, model.hidden_dim,
            model.num_heads, model.intermediate_dim) == (4, 4, 128, 4, 256)
    assert TRANSFORMER_PRESETS["small"] == dict(  # the recipe of docs/TRANSLATION.md
        num_encoder_layers=3, num_decoder_layers=3, hidden_dim=256, num_heads=4,
        intermediate_dim=512)
    assert TRANSFORMER_PRESETS["base"] == dict(
        num_encoder_layers=6, num_decoder_layers=6, hidden_dim=512, num_heads=8,
        intermediate_dim=2048)
    with pytest.raises(ValueError, match="presets are"):
        TransformerSeq2Seq.from_preset("huge", vocabulary_size=100)


def test_logits_are_float32_under_mixed_precision():
    model = tiny_model(dtype="mixed_bfloat16")
    assert to_numpy(model(batch())).dtype == np.float32



def test_alignments_average_the_last_blocks_cross_attention_heads():
    model = tiny_model()
    inputs = batch()
    alignments = to_numpy(model.alignments(inputs))
    expected = to_numpy(model.cross_attention(inputs)[-1]).mean(axis=1)
    np.testing.assert_allclose(alignments, expected, atol=1e-6)
    np.testing.assert_allclose(alignments.sum(-1), 1.0, atol=1e-5)


def test_token_embeddings_start_at_the_scale_of_one_over_the_square_root_of_width():
    # Normal(0, width**-0.5), as fairseq's Transformer initialises its
    # (tied) embeddings.
    model = tiny_model(vocabulary_size=1000, hidden_dim=64, intermediate_dim=64)
    embeddings = to_numpy(model.token_embedding.embeddings)
    assert embeddings.shape == (1000, 64)
    assert abs(embeddings.std() - 64**-0.5) < 0.05 * 64**-0.5
