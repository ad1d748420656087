import keras_hub
import numpy as np
import pytest

from tests.layer_test_helpers import (
    assert_allclose_nested,
    assert_changes_do_not_leak,
    check_layer,
    random_inputs,
)
from tfnlp.layers import TransformerDecoderBlock

BATCH, TARGET, SOURCE, HIDDEN, HEADS = 2, 5, 7, 16, 2


def padding_mask(lengths, length):
    return np.arange(length)[None, :] < np.asarray(lengths)[:, None]


def target_and_source():
    return (
        random_inputs((BATCH, TARGET, HIDDEN)),
        random_inputs((BATCH, SOURCE, HIDDEN), seed=1),
    )


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("with_encoder", [False, True])
def test_matches_keras_hub_transformer_decoder_after_set_weights(
    norm_first, with_encoder
):
    target, source = target_and_source()
    kwargs = {"decoder_padding_mask": padding_mask([TARGET, 3], TARGET)}
    if with_encoder:
        kwargs.update(
            encoder_sequence=source,
            encoder_padding_mask=padding_mask([SOURCE, 4], SOURCE),
        )
    ours = TransformerDecoderBlock(
        num_heads=HEADS, intermediate_dim=32, norm_first=norm_first
    )
    reference = keras_hub.layers.TransformerDecoder(
        intermediate_dim=32, num_heads=HEADS, normalize_first=norm_first
    )
    reference(target, **kwargs)
    ours(target, **kwargs)
    ours.set_weights(reference.get_weights())
    assert_allclose_nested(ours(target, **kwargs), reference(target, **kwargs))


@pytest.mark.parametrize("with_encoder", [False, True])
def test_shared_layer_checks(with_encoder):
    target, source = target_and_source()
    inputs = {
        "decoder_sequence": target,
        "decoder_padding_mask": padding_mask([TARGET, 3], TARGET),
    }
    if with_encoder:
        inputs["encoder_sequence"] = source
        inputs["encoder_padding_mask"] = padding_mask([SOURCE, 4], SOURCE)
    check_layer(
        TransformerDecoderBlock(num_heads=HEADS, intermediate_dim=32),
        inputs=inputs,
        call_options={"return_attention_scores": True},
        expected_output_shape=(BATCH, TARGET, HIDDEN),
    )


def test_future_and_padded_source_positions_never_change_outputs():
    block = TransformerDecoderBlock(num_heads=HEADS, intermediate_dim=32)
    target, source = target_and_source()
    source_mask = padding_mask([4, 4], SOURCE)

    def first_three_positions(tensors):
        return block(
            tensors["target"],
            tensors["source"],
            encoder_padding_mask=source_mask,
        )[:, :3]

    inputs = {"target": target, "source": source}
    assert_changes_do_not_leak(first_three_positions, inputs, "target", np.s_[:, 3:])
    assert_changes_do_not_leak(first_three_positions, inputs, "source", np.s_[:, 4:])


def test_attention_scores_show_causal_and_source_masks():
    block = TransformerDecoderBlock(num_heads=HEADS, intermediate_dim=32)
    target, source = target_and_source()
    _, scores = block(
        target, source, encoder_padding_mask=padding_mask([SOURCE, 4], SOURCE),
        return_attention_scores=True,
    )
    self_scores = np.asarray(scores["self_attention"])
    future = ~np.tril(np.ones((TARGET, TARGET), bool))
    assert np.all(self_scores[:, :, future] == 0.0)
    assert np.all(np.asarray(scores["cross_attention"])[1, :, :, 4:] == 0.0)


@pytest.mark.parametrize("with_encoder", [False, True])
def test_cached_incremental_decoding_equals_full_causal_pass(with_encoder):
    block = TransformerDecoderBlock(num_heads=HEADS, intermediate_dim=32)
    target, source = target_and_source()
    encoder_kwargs = {"encoder_sequence": source} if with_encoder else {}
    full = np.asarray(block(target, **encoder_kwargs))

    head_dim = HIDDEN // HEADS
    self_cache = np.zeros((BATCH, 2, TARGET, HEADS, head_dim), "float32")
    cache_kwargs = {}
    if with_encoder:
        # Project the encoder once: fill the cross-attention cache at index 0.
        empty = np.zeros((BATCH, 2, SOURCE, HEADS, head_dim), "float32")
        _, _, cross_cache = block(
            target[:, :1], source,
            self_attention_cache=self_cache, self_attention_cache_update_index=0,
            cross_attention_cache=empty, cross_attention_cache_update_index=0,
        )
        cache_kwargs["cross_attention_cache"] = cross_cache
    steps = []
    for index in range(TARGET):
        output, self_cache, *_ = block(
            target[:, index : index + 1],
            self_attention_cache=self_cache,
            self_attention_cache_update_index=index,
            **cache_kwargs,
        )
        steps.append(np.asarray(output))
    np.testing.assert_allclose(np.concatenate(steps, axis=1), full, atol=1e-5)


def test_decoder_only_block_refuses_an_encoder_sequence():
    block = TransformerDecoderBlock(num_heads=HEADS, intermediate_dim=32)
    target, source = target_and_source()
    block(target)
    with pytest.raises(ValueError, match="without cross-attention"):
        block(target, source)


def test_encoder_decoder_block_requires_the_encoder_sequence():
    block = TransformerDecoderBlock(num_heads=HEADS, intermediate_dim=32)
    target, source = target_and_source()
    block(target, source)
    with pytest.raises(ValueError, match="with cross-attention"):
        block(target)
