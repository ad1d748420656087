"""GPTCausalLM: causality, the tied output embedding, the key/value cache
against the full forward pass (eager and XLA), presets and the shared
model checks."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from tests.layer_test_helpers import to_numpy
from tests.model_test_helpers import check_model
from tfnlp.models.gpt import GPT_PRESETS, GPTBackbone, GPTCausalLM

VOCABULARY = 40
LENGTH = 12
# Cached and uncached logits (up to 8.2 in size) agree to 7.2e-6 eager and
# 7.1e-6 under XLA here.
CACHE_TOLERANCE = 7e-5


def sharp_model(**overrides):
    """A tiny model with weights large enough that attention is far from
    uniform, so a token read or not read changes the logits plainly."""
    arguments = dict(vocabulary_size=VOCABULARY, num_heads=4, max_sequence_length=32,
                     initializer_range=0.3)
    keras.utils.set_random_seed(1)
    return GPTCausalLM.from_preset("tiny", **{**arguments, **overrides})


def token_ids(batch_size=2, length=LENGTH, seed=0):
    return np.random.default_rng(seed).integers(1, VOCABULARY, (batch_size, length)).astype(
        "int32")


def attention_entropy(model, ids):
    """The mean entropy of the first block's attention rows, in nats."""
    backbone = model.backbone
    tokens = backbone.token_embedding(ids)
    x = tokens + backbone.position_embedding(tokens)
    block = backbone.transformer_layers[0]
    _, scores = block(x, return_attention_scores=True)
    weights = to_numpy(scores["self_attention"])[..., 4:, :]  # rows that see 5+ keys
    return float(-(weights * np.log(weights + 1e-12)).sum(-1).mean())


def test_model_checks_config_keras_archive_checkpoint_and_jax(tmp_path):
    # Every argument other than its default, so that one dropped from the
    # config (or not passed to the backbone) changes the rebuilt model.
    arguments = dict(intermediate_dim=96, dropout=0.1, attention_dropout=0.05,
                     layer_norm_epsilon=1e-3, activation="gelu", end_token_id=3)
    model = sharp_model(**arguments)
    config = model.get_config()
    assert {name: config[name] for name in arguments} == arguments
    assert model.backbone.transformer_layers[0].get_config()["layer_norm_epsilon"] == 1e-3
    check_model(model, {"token_ids": token_ids(), "padding_mask": np.ones((2, LENGTH), bool)},
                tmp_path, jax=True, atol=1e-4)


def test_a_future_token_never_changes_an_earlier_logit():
    model = sharp_model()
    ids = token_ids()
    # Attention is sharp: far below the uniform rows' log(5..12) ≈ 2.0.
    assert attention_entropy(model, ids) < 1.0
    changed = ids.copy()
    changed[:, 7] = (changed[:, 7] + 5) % VOCABULARY
    before, after = to_numpy(model(ids)), to_numpy(model(changed))
    np.testing.assert_allclose(after[:, :7], before[:, :7], atol=1e-6, rtol=0)
    assert np.abs(after[:, 7:] - before[:, 7:]).max(axis=-1).min() > 1e-2


def test_the_output_projection_is_the_token_embedding():
    model = sharp_model()
    embeddings = model.backbone.token_embedding.embeddings
    # One (vocabulary, width) matrix in the model: the token embedding.
    tables = [v for v in model.weights if tuple(v.shape) == tuple(embeddings.shape)]
    assert tables == [embeddings]
    ids = token_ids()
    hidden_states = to_numpy(model.backbone(ids))
    np.testing.assert_allclose(to_numpy(model(ids)), hidden_states @ to_numpy(embeddings).T,
                               atol=1e-4, rtol=1e-5)
    # A token absent from the inputs gets a gradient through the output
    # projection only, which a tied embedding shares with the input side.
    absent = np.setdiff1d(np.arange(VOCABULARY), ids)[0]
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(model(ids)[..., absent])
    gradient = tf.convert_to_tensor(tape.gradient(loss, embeddings))
    assert np.abs(to_numpy(gradient)[absent]).max() > 0


def step_through(model, ids, cache, start, step):
    """The logits of `step` called at each position from `start` on."""
    logits = []
    for index in range(start, ids.shape[1]):
        step_logits, cache = step(tf.constant(ids[:, index]), cache, tf.constant(index))
        logits.append(to_numpy(step_logits))
    return np.stack(logits, axis=1)


@pytest.mark.parametrize("jit_compile", [False, True], ids=["eager", "xla"])
def test_cached_decoding_equals_the_full_forward_pass(jit_compile):
    model = sharp_model()
    ids = token_ids()
    full = to_numpy(model(ids))
    step = model.decode_step
    prefill = model.prefill
    if jit_compile:
        step = tf.function(model.decode_step, jit_compile=True)
        prefill = tf.function(model.prefill, jit_compile=True)
    # Step by step from the first token, in a cache longer than the text.
    cache = model.initial_cache(2, LENGTH + 4)
    np.testing.assert_allclose(step_through(model, ids, cache, 0, step), full,
                               atol=CACHE_TOLERANCE, rtol=0)
    # A prefill of the first five positions, then steps.
    prefill_logits, cache = prefill(tf.constant(ids[:, :5]), model.initial_cache(2, LENGTH))
    np.testing.assert_allclose(to_numpy(prefill_logits), full[:, :5], atol=CACHE_TOLERANCE,
                               rtol=0)
    np.testing.assert_allclose(step_through(model, ids, cache, 5, step), full[:, 5:],
                               atol=CACHE_TOLERANCE, rtol=0)


def test_the_cache_holds_each_block_s_keys_and_values_in_the_compute_dtype():
    model = sharp_model(dtype="mixed_bfloat16")
    cache = model.initial_cache(3, 10)
    assert len(cache["self_attention"]) == 2
    assert [tuple(c.shape) for c in cache["self_attention"]] == [(3, 2, 10, 4, 16)] * 2
    assert all(c.dtype == "bfloat16" for c in cache["self_attention"])
    logits, cache = model.decode_step(np.array([1, 2, 3]), cache, 0)
    assert logits.dtype == "float32" and to_numpy(model(token_ids())).dtype == np.float32


def test_a_cache_longer_than_the_position_table_is_refused():
    model = sharp_model()
    assert tuple(model.initial_cache(1, 32)["self_attention"][0].shape)[2] == 32
    with pytest.raises(ValueError, match="max_length=33 positions is longer than the "
                                         "model's max_sequence_length=32"):
        model.initial_cache(1, 33)


def test_presets_are_named_dicts_from_tests_to_gpt2_small():
    assert list(GPT_PRESETS) == ["tiny", "mini", "char", "gpt2"]
    assert GPT_PRESETS["gpt2"] == dict(vocabulary_size=50257, num_layers=12, num_heads=12,
                                       hidden_dim=768, max_sequence_length=1024, dropout=0.1)
    # nanoGPT's Shakespeare character model: about 10.7 M parameters.
    char = GPTCausalLM.from_preset("char")
    assert (char.num_layers, char.hidden_dim, char.num_heads, char.max_sequence_length,
            char.intermediate_dim, char.dropout) == (6, 384, 6, 256, 1536, 0.2)
    assert char.count_params() == 10_770_816
    tiny = GPTCausalLM.from_preset("tiny", dropout=0.3, end_token_id=3)
    assert (tiny.dropout, tiny.backbone.dropout, tiny.end_token_id) == (0.3, 0.3, 3)
    assert GPTBackbone.from_preset("mini").get_config()["num_layers"] == 4
    with pytest.raises(ValueError, match="the presets are tiny, mini, char, gpt2"):
        GPTCausalLM.from_preset("medium")


def test_dropout_is_active_in_training_only():
    model = sharp_model(dropout=0.5)
    ids = token_ids()
    np.testing.assert_array_equal(to_numpy(model(ids)), to_numpy(model(ids)))
    assert np.abs(to_numpy(model(ids, training=True)) - to_numpy(model(ids))).max() > 1e-2


SPEEDRUN_OPTIONS = dict(position_encoding="rotary", query_key_norm=True, activation="relu_squared",
                        embedding_shortcuts=True, tie_word_embeddings=False, logit_soft_cap=15.0)


def test_the_speedrun_options_pass_the_model_checks_and_cache(tmp_path):
    model = sharp_model(**SPEEDRUN_OPTIONS)
    config = model.get_config()
    assert {name: config[name] for name in SPEEDRUN_OPTIONS} == SPEEDRUN_OPTIONS
    assert model.backbone.position_embedding is None
    assert not [v for v in model.weights if "position_embedding" in v.path]
    assert [v for v in model.weights if "query_norm" in v.path]
    ids = token_ids()
    check_model(model, {"token_ids": ids, "padding_mask": np.ones((2, LENGTH), bool)},
                tmp_path, jax=True, atol=1e-4)
    cache = model.initial_cache(2, LENGTH + 4)
    np.testing.assert_allclose(step_through(model, ids, cache, 0, model.decode_step),
                               to_numpy(model(ids)), atol=CACHE_TOLERANCE, rtol=0)


def test_rotary_positions_tell_the_order_of_earlier_tokens():
    """Without positions, one block of causal attention reads tokens 0 to 2
    as a set at position 2; rotary positions tell [a, b, c] from [b, a, c]."""
    ids = token_ids(batch_size=1)
    swapped = ids.copy()
    swapped[:, [0, 1]] = swapped[:, [1, 0]]
    rotary = sharp_model(position_encoding="rotary", num_layers=1)
    change = np.abs(to_numpy(rotary(ids))[:, 2] - to_numpy(rotary(swapped))[:, 2]).max()
    assert change > 1e-2
    unpositioned = sharp_model(position_encoding="rotary", num_layers=1)
    for block in unpositioned.backbone.transformer_layers:
        block.self_attention.rotary = None
    unpositioned.set_weights(rotary.get_weights())
    np.testing.assert_allclose(to_numpy(unpositioned(ids))[:, 2],
                               to_numpy(unpositioned(swapped))[:, 2], atol=1e-5)


def test_zero_output_projections_start_every_block_as_the_identity():
    model = sharp_model(zero_output_projections=True)
    backbone = model.backbone
    ids = token_ids()
    tokens = backbone.token_embedding(ids)
    expected = backbone.layer_norm(tokens + backbone.position_embedding(tokens))
    np.testing.assert_allclose(to_numpy(backbone(ids)), to_numpy(expected), atol=1e-5)
    assert np.abs(to_numpy(sharp_model()(ids)) - to_numpy(model(ids))).max() > 1e-2


def test_embedding_shortcuts_feed_each_block_its_mix_of_input_and_embeddings():
    """With (a, b) = (0, 1) every block reads the embeddings alone, so the
    model is its last block on the embeddings; at the start (1, 0) it is the
    model without shortcuts."""
    model, plain = sharp_model(embedding_shortcuts=True), sharp_model()
    backbone = model.backbone
    ids = token_ids()
    shortcut_free = [v for v in model.weights if "embedding_shortcuts" not in v.path]
    assert [tuple(v.shape) for v in shortcut_free] == [tuple(v.shape) for v in plain.weights]
    for mine, theirs in zip(shortcut_free, plain.weights):
        mine.assign(theirs)
    np.testing.assert_allclose(to_numpy(model(ids)), to_numpy(plain(ids)), atol=1e-5)
    backbone.shortcut_weights.assign([[0.0, 1.0]] * backbone.num_layers)
    tokens = backbone.token_embedding(ids)
    embeddings = tokens + backbone.position_embedding(tokens)
    expected = backbone.layer_norm(backbone.transformer_layers[-1](embeddings))
    np.testing.assert_allclose(to_numpy(backbone(ids)), to_numpy(expected), atol=1e-5)
    assert np.abs(to_numpy(model(ids)) - to_numpy(plain(ids))).max() > 1e-2


def test_an_untied_model_projects_with_its_own_output_embedding():
    model = sharp_model(tie_word_embeddings=False)
    ids = token_ids()
    np.testing.assert_array_equal(to_numpy(model(ids)), 0.0)  # zero at the start
    table = np.random.default_rng(2).normal(size=(VOCABULARY, 64)).astype("float32")
    model.output_embedding.embeddings.assign(table)
    np.testing.assert_allclose(to_numpy(model(ids)), to_numpy(model.backbone(ids)) @ table.T,
                               atol=1e-4)


def test_logit_soft_cap_squashes_the_tied_projection():
    capped, raw = sharp_model(logit_soft_cap=2.0), sharp_model()
    ids = token_ids()
    raw_logits = to_numpy(raw(ids))
    assert np.abs(raw_logits).max() > 4.0
    np.testing.assert_allclose(to_numpy(capped(ids)), 2.0 * np.tanh(raw_logits / 2.0),
                               atol=1e-5)


def test_an_unknown_position_is_refused():
    with pytest.raises(ValueError, match="position_encoding must be one of learned, rotary"):
        sharp_model(position_encoding="sinusoidal")
